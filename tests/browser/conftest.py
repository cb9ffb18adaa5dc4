"""Shared setup of the browser tests: a JupyterLab (or Notebook 7) subprocess and chromium.

Each test module gets its own JupyterLab server (root, HOME, config and memdir all under
tmp) and fills it through its ``seed_lab`` fixture before the server starts. Locally the
tests skip with the reason when chromium, Playwright or the built extension is missing;
in CI (``CI=true``) they fail instead, so a broken setup cannot pass as green. The browser
console and the server log of every test go to ``test-artifacts/``.
"""

from __future__ import annotations

import json
import os
import secrets
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

REPO = Path(__file__).resolve().parents[2]
ARTIFACTS = REPO / "test-artifacts"
CHROMIUM = Path("/usr/bin/chromium")
CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
]
# Variables of the test runner's environment that must not reach the server or its
# kernels: a real model key, or a memdir or model chosen outside the test.
_SCRUB_PREFIXES = ("ANTHROPIC_", "JUPYTER_MEMORY_", "CLAUDE_")
_SCRUB = ("JPY_SESSION_NAME",)


def _unavailable(reason: str) -> None:
    """Skip locally, but fail in CI, where a missing browser means a broken setup."""
    if os.environ.get("CI", "").lower() == "true":
        pytest.fail(f"browser test cannot run in CI: {reason}", pytrace=False)
    pytest.skip(reason)


def _labextension_installed() -> bool:
    from jupyter_core.paths import jupyter_path

    return any(
        (Path(folder) / "jupyter-memory" / "package.json").is_file()
        for folder in jupyter_path("labextensions")
    )


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


#: The front ends a module can run its server as (its ``app`` fixture): JupyterLab 4, or
#: Notebook 7, which runs JupyterLab's notebook and render-mime machinery in its own shell.
APPS = ("lab", "notebook")


class Lab:
    """A running JupyterLab (or Notebook 7) subprocess and what the tests need to reach it.

    ``env`` holds extra environment variables for the server and its kernels; a module's
    ``seed_lab`` may add to it before the server starts.
    """

    def __init__(self, base: Path, app: str = "lab") -> None:
        if app not in APPS:
            raise ValueError(f"unknown front end {app!r}; use one of {', '.join(APPS)}")
        self.app = app
        self.root = base / "root"
        self.memdir = base / "memdir"
        self.home = base / "home"
        self.log_path = base / "lab.log"
        self.port = _free_port()
        self.token = secrets.token_hex(16)
        self.url = f"http://127.0.0.1:{self.port}"
        self.env: dict[str, str] = {}
        self.process: subprocess.Popen[bytes] | None = None

    def start(self) -> None:
        config = self.home / ".jupyter"
        (config / "labconfig").mkdir(parents=True)
        # No announcements or news prompts: nothing may reach outside this machine.
        (config / "labconfig" / "page_config.json").write_text(
            json.dumps(
                {"disabledExtensions": {"@jupyterlab/apputils-extension:announcements": True}}
            ),
            encoding="utf-8",
        )
        env = {
            k: v
            for k, v in os.environ.items()
            if k not in _SCRUB and not k.startswith(_SCRUB_PREFIXES)
        }
        env.update(
            HOME=str(self.home),
            JUPYTER_CONFIG_DIR=str(config),
            JUPYTER_DATA_DIR=str(self.home / ".local" / "share" / "jupyter"),
            JUPYTER_RUNTIME_DIR=str(self.home / "runtime"),
            JUPYTER_MEMORY_DIR=str(self.memdir),
            CLAUDE_CONFIG_DIR=str(self.home / ".claude"),
            # No background model calls after a turn (the tests script every model reply).
            JUPYTER_MEMORY_EXTRACTION="0",
            JUPYTER_MEMORY_SESSION_MEMORY="0",
            # The kernels are this interpreter's: `python` in a kernelspec resolves here.
            PATH=os.pathsep.join([str(Path(sys.executable).parent), env.get("PATH", "")]),
        )
        env.update(self.env)
        command = [
            sys.executable,
            "-m",
            "jupyterlab" if self.app == "lab" else "notebook",
            "--no-browser",
            "--allow-root",
            "--ip=127.0.0.1",
            f"--port={self.port}",
            "--ServerApp.port_retries=0",
            f"--IdentityProvider.token={self.token}",
            f"--ServerApp.root_dir={self.root}",
        ]
        if self.app == "lab":
            command += [
                "--LabApp.news_url=None",
                "--LabApp.check_for_updates_class=jupyterlab.NeverCheckForUpdate",
                "--LabApp.expose_app_in_browser=True",
                "--LabApp.extension_manager=readonly",
            ]
        else:
            command += ["--JupyterNotebookApp.expose_app_in_browser=True"]
        log = self.log_path.open("wb")
        self.process = subprocess.Popen(
            command, cwd=self.root, env=env, stdout=log, stderr=subprocess.STDOUT
        )
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise RuntimeError(f"{self.app} exited early:\n{self.log_tail()}")
            try:
                with urllib.request.urlopen(
                    f"{self.url}/api/status?token={self.token}", timeout=2
                ) as reply:
                    if reply.status == 200:
                        return
            except OSError:
                time.sleep(0.5)
        raise RuntimeError(f"{self.app} did not answer within 120 s:\n{self.log_tail()}")

    def stop(self) -> None:
        if self.process is None or self.process.poll() is not None:
            return
        self.process.terminate()
        try:
            self.process.wait(timeout=20)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait(timeout=10)

    def log_tail(self, lines: int = 60) -> str:
        try:
            text = self.log_path.read_text(encoding="utf-8", errors="replace")
        except OSError:
            return "(no log)"
        return "\n".join(text.splitlines()[-lines:])

    def page_url(self, path: str) -> str:
        if self.app == "notebook":
            return f"{self.url}/notebooks/{path}?token={self.token}"
        return f"{self.url}/lab/tree/{path}?token={self.token}&reset"

    def home_url(self) -> str:
        """The lab with nothing open (the launcher), its workspace reset."""
        return f"{self.url}/lab?token={self.token}&reset"


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]) -> Any:
    """Keep each phase's report on the test, so ``page`` can tell whether it failed."""
    report = yield
    setattr(item, f"report_{report.when}", report)
    return report


@pytest.fixture(scope="session")
def axe_script() -> Path:
    """axe-core's browser bundle, a devDependency of the lab extension (``make setup``)."""
    path = REPO / "labextension" / "node_modules" / "axe-core" / "axe.min.js"
    if not path.is_file():
        _unavailable(
            f"{path} is missing (run `make setup`, which installs the lab extension's "
            "devDependencies, axe-core among them)"
        )
    return path


@pytest.fixture(scope="module")
def seed_lab() -> Callable[[Lab], None]:
    """What a module puts in the root, memdir and ``env`` before the server starts.

    Modules override this fixture; the default leaves the root and memdir empty.
    """
    return lambda lab: None


@pytest.fixture(scope="module")
def app() -> str:
    """The module's front end, one of :data:`APPS`; Notebook 7 modules override it."""
    return "lab"


@pytest.fixture(scope="module")
def viewport() -> dict[str, int]:
    """The browser window of every page in a module; modules may override it."""
    return {"width": 1400, "height": 900}


@pytest.fixture(scope="session")
def artifacts() -> Path:
    """Where screenshots and logs go (kept by CI as test artifacts)."""
    ARTIFACTS.mkdir(exist_ok=True)
    return ARTIFACTS


@pytest.fixture(scope="module")
def lab(
    tmp_path_factory: pytest.TempPathFactory, seed_lab: Callable[[Lab], None], app: str
) -> Iterator[Lab]:
    if app == "notebook":
        try:
            import notebook  # noqa: F401
        except ImportError:
            _unavailable("Notebook 7 is not installed (pip install 'notebook>=7')")
    if not CHROMIUM.exists():
        _unavailable(f"{CHROMIUM} not found (install it with: apt-get install -y chromium)")
    try:
        import playwright.sync_api  # noqa: F401
    except ImportError:
        _unavailable("Python Playwright is not installed (pip install playwright)")
    if not _labextension_installed():
        _unavailable(
            "the jupyter-memory labextension is not installed in this environment "
            "(run `make setup`, which builds and links it)"
        )
    lab = Lab(tmp_path_factory.mktemp(app), app)
    lab.root.mkdir()
    lab.memdir.mkdir()
    seed_lab(lab)
    try:
        lab.start()
        yield lab
    finally:
        lab.stop()


@pytest.fixture(scope="module")
def browser(lab: Lab) -> Iterator[Any]:
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(
            executable_path=str(CHROMIUM), args=CHROMIUM_ARGS, headless=True
        )
        try:
            yield browser
        finally:
            browser.close()


@pytest.fixture
def page(
    browser: Any, lab: Lab, viewport: dict[str, int], request: pytest.FixtureRequest
) -> Iterator[Any]:
    """A fresh browser context; its console log, the server log and, when the test
    failed, a screenshot land in test-artifacts."""
    context = browser.new_context(viewport=viewport)
    page = context.new_page()
    page.set_default_timeout(60_000)
    messages: list[str] = []
    page.on("console", lambda msg: messages.append(f"{msg.type}: {msg.text}"))
    try:
        yield page
    finally:
        ARTIFACTS.mkdir(exist_ok=True)
        outcome = getattr(request.node, "report_call", None)
        if outcome is not None and outcome.failed:
            # What the page looked like when the test failed, for the CI artifacts.
            page.screenshot(path=str(ARTIFACTS / f"failed-{request.node.name}.png"))
        (ARTIFACTS / f"console-{request.node.name}.log").write_text(
            "\n".join(messages) + "\n", encoding="utf-8"
        )
        module = request.module.__name__.rsplit(".", 1)[-1]
        (ARTIFACTS / f"lab-{module}.log").write_text(lab.log_tail(400) + "\n", encoding="utf-8")
        context.close()
