"""Test-wide isolation: no test may touch the real home directory.

Every test gets a fresh fake HOME and CLAUDE_CONFIG_DIR, and the variables that
would point at a real model or a real memdir are removed.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING

import pytest
from hypothesis import settings

if TYPE_CHECKING:
    from IPython.core.interactiveshell import InteractiveShell
    from shell_helpers import MakeIp

pytest_plugins = ["jupyter_memory.localapi.pytest_plugin"]

_SCRUB = (
    "ANTHROPIC_API_KEY",
    "ANTHROPIC_AUTH_TOKEN",
    "ANTHROPIC_BASE_URL",
    "JUPYTER_MEMORY_DIR",
    "JUPYTER_MEMORY_MODEL",
    "JUPYTER_MEMORY_SMALL_MODEL",
    "JUPYTER_MEMORY_PROVENANCE",
    "CLAUDE_CODE_DISABLE_AUTO_MEMORY",
    "CLAUDE_CONFIG_DIR",
    "JPY_SESSION_NAME",
    "JUPYTER_MEMORY_UNTRUSTED",
    "JPY_PARENT_PID",  # a run from a notebook's `!`: the command line asks nobody then
)


# Property tests are deterministic by default, so `make test` passes or fails the same
# way on every run and machine: the examples derive from each test's name, and no
# example database carries a failure from one run into the next. `--run-slow` (or
# `--hypothesis-profile=explore`, with `--hypothesis-seed=N` to vary it) explores new
# random examples and remembers failures in `.hypothesis/`.
settings.register_profile("ci", derandomize=True, database=None, print_blob=True,
                          deadline=None)  # a busy machine is slow, not wrong
settings.register_profile("explore", derandomize=False)
settings.load_profile("ci")


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption("--run-slow", action="store_true",
                     help="explore new random property-test examples (hypothesis)")


def pytest_configure(config: pytest.Config) -> None:
    if config.getoption("--run-slow") and not config.getoption("--hypothesis-profile", None):
        settings.load_profile("explore")


@pytest.fixture(autouse=True)
def isolated_home(tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A fresh HOME and CLAUDE_CONFIG_DIR for every test."""
    home = tmp_path_factory.mktemp("home")
    for name in _SCRUB:
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("CLAUDE_CONFIG_DIR", str(home / ".claude"))
    monkeypatch.setenv("GIT_CONFIG_NOSYSTEM", "1")
    # The background extraction agent sends its own model request after eligible turns;
    # a test that scripts the model for it asks for the `extraction_on` fixture.
    monkeypatch.setenv("JUPYTER_MEMORY_EXTRACTION", "0")
    # Likewise the session-memory notes, refreshed by the small model in the background.
    monkeypatch.setenv("JUPYTER_MEMORY_SESSION_MEMORY", "0")
    monkeypatch.setenv("GIT_AUTHOR_NAME", "test")
    monkeypatch.setenv("GIT_AUTHOR_EMAIL", "test@example.invalid")
    monkeypatch.setenv("GIT_COMMITTER_NAME", "test")
    monkeypatch.setenv("GIT_COMMITTER_EMAIL", "test@example.invalid")
    assert not str(home).startswith(os.path.expanduser("~") + os.sep + ".claude")
    return home


@pytest.fixture(scope="session")
def shell(tmp_path_factory: pytest.TempPathFactory):
    """The process's one real IPython shell, with history in memory (no file in any home).

    ``InteractiveShell.instance()`` is a singleton, so every test module shares it; the
    ``ip`` fixture (built with ``make_ip``) loads the extension and resets the agent state
    around a test.
    """
    from IPython.core.interactiveshell import InteractiveShell
    from traitlets.config import Config

    os.environ["IPYTHONDIR"] = str(tmp_path_factory.mktemp("ipython"))
    config = Config()
    config.HistoryManager.hist_file = ":memory:"
    return InteractiveShell.instance(config=config)


@pytest.fixture
def project(tmp_path: Path) -> Path:
    """The test's project folder (the kernel's working folder): ``tmp_path/proj``, created
    and empty. It does not choose a memdir; ask for ``memdir`` too when the test needs one."""
    root = tmp_path / "proj"
    root.mkdir(exist_ok=True)
    return root


@pytest.fixture
def memdir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The test's memdir: ``tmp_path/mem``, named by ``JUPYTER_MEMORY_DIR`` so that every
    session, magic and command of the test uses it. Not created: the first write makes it,
    as in real use (create it yourself to put files in it first).

    A module whose every test wants it, without naming it, says
    ``pytestmark = pytest.mark.usefixtures("memdir")``.
    """
    path = tmp_path / "mem"
    monkeypatch.setenv("JUPYTER_MEMORY_DIR", str(path))
    return path


@pytest.fixture
def extraction_on(monkeypatch: pytest.MonkeyPatch) -> None:
    """The background extraction agent runs after eligible turns, as it does by default
    (``isolated_home`` switches it off for every other test)."""
    monkeypatch.delenv("JUPYTER_MEMORY_EXTRACTION", raising=False)


@pytest.fixture
def make_ip(shell: InteractiveShell, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
            ) -> Iterator[MakeIp]:
    """Make the real IPython shell ready: the extension loaded and fresh agent state.

    ``make_ip(project=None, *, memdir=None, config=())``: the kernel's working folder is
    ``project`` (default ``tmp_path/proj``, created if missing); ``JUPYTER_MEMORY_DIR`` is
    ``memdir`` (default ``tmp_path/mem``); each line of ``config`` is run as ``%config``
    after loading. The defaults are the ``project`` and ``memdir`` fixtures' folders.
    At teardown the background work the session started (extraction, session notes) is
    waited for, a ``%sandbox`` server stopped, the agent state forgotten, the trust
    prompter the extension registered put back, and the shell's ``Agent`` settings put back
    as they were (``%config`` writes into the one shell every test shares), so nothing of
    one test runs into the next. A module whose shell needs more (another magic, a setting,
    a clean-up) builds its own fixture on this one.
    """
    from jupyter_memory.magics import load_ipython_extension
    from jupyter_memory.magics.state import forget_state, state_for
    from jupyter_memory.memdir.trust import set_prompter
    from jupyter_memory.sessions.sandbox import stop_sandbox

    def make(project: Path | None = None, *, memdir: Path | None = None,
             config: Iterable[str] = ()) -> InteractiveShell:
        project = tmp_path / "proj" if project is None else project
        project.mkdir(parents=True, exist_ok=True)
        monkeypatch.setenv("JUPYTER_MEMORY_DIR", str(tmp_path / "mem" if memdir is None else memdir))
        monkeypatch.chdir(project)
        forget_state(shell)
        load_ipython_extension(shell)
        for line in config:
            shell.run_line_magic("config", line)
        return shell

    saved = dict(shell.config.get("Agent", {}))
    prompter = set_prompter(None)
    yield make
    shell.config.Agent = type(shell.config)(saved)
    session = state_for(shell).session
    if session is not None:  # the turn's background work ends before the next test starts
        session.extraction.wait(120)
        session.notes.wait(120)
        stop_sandbox(session)
    forget_state(shell)
    set_prompter(prompter)


@pytest.fixture
def ip(make_ip: MakeIp, project: Path, memdir: Path) -> InteractiveShell:
    """The real IPython shell with the extension loaded and fresh agent state, working in
    ``project`` with ``memdir`` (see :func:`make_ip`)."""
    return make_ip(project, memdir=memdir)


FIXTURES = Path(__file__).resolve().parent / "fixtures"


@pytest.fixture
def fixtures_dir() -> Path:
    """The real-data fixtures in the repository (read-only; copy before modifying).

    ``fixtures/transcripts`` holds real sessions of the reference tool (MIT, see its LICENSE).
    """
    return FIXTURES
