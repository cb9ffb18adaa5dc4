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
settings.register_profile("ci", derandomize=True, database=None, print_blob=True)
settings.register_profile("explore", derandomize=False)
settings.load_profile("ci")


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption("--run-slow", action="store_true", help="run tests marked slow")


def pytest_configure(config: pytest.Config) -> None:
    if config.getoption("--run-slow") and not config.getoption("--hypothesis-profile", None):
        settings.load_profile("explore")


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    if config.getoption("--run-slow"):
        return
    skip = pytest.mark.skip(reason="slow: pass --run-slow")
    for item in items:
        if "slow" in item.keywords:
            item.add_marker(skip)


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
    # tests that script the model switch it on explicitly (tests/test_extraction.py).
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
def make_ip(shell: InteractiveShell, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
            ) -> Iterator[MakeIp]:
    """Make the real IPython shell ready: the extension loaded and fresh agent state.

    ``make_ip(project=None, *, memdir=None, config=())``: the kernel's working folder is
    ``project`` (default ``tmp_path/proj``, created if missing); ``JUPYTER_MEMORY_DIR`` is
    ``memdir`` (default ``tmp_path/mem``); each line of ``config`` is run as ``%config``
    after loading. The agent state is forgotten before loading and again at teardown,
    when the shell's ``Agent`` settings are put back as they were (``%config`` writes into
    the one shell every test shares). A module whose shell needs more (another magic, a setting, a clean-up) builds its own
    ``ip`` on this one.
    """
    from jupyter_memory.magics import load_ipython_extension
    from jupyter_memory.magics.state import forget_state

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
    yield make
    shell.config.Agent = type(shell.config)(saved)
    forget_state(shell)


@pytest.fixture
def ip(make_ip: MakeIp) -> InteractiveShell:
    """The real IPython shell with the extension loaded and fresh agent state, in
    ``tmp_path/proj`` with the memdir ``tmp_path/mem`` (see :func:`make_ip`)."""
    return make_ip()


FIXTURES = Path(__file__).resolve().parent / "fixtures"


@pytest.fixture
def fixtures_dir() -> Path:
    """The real-data fixtures in the repository (read-only; copy before modifying).

    ``fixtures/transcripts`` holds real sessions of the reference tool (MIT, see its LICENSE).
    """
    return FIXTURES
