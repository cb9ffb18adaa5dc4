"""The same saved notebook in Notebook 7: trusted and untrusted, new kernel, no widget state.

Notebook 7 runs JupyterLab's notebook and render-mime machinery, so our lab extension's
view renderer applies there too. The notebook is written here (its widget outputs as
JupyterLab saves them) and signed with the server's key for the trusted case; a changed
copy is untrusted. Skips when the ``notebook`` package (Notebook 7) is not installed.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import nbformat
import pytest
from conftest import CHROMIUM, CHROMIUM_ARGS, Lab, _labextension_installed, _unavailable
from nbformat.sign import NotebookNotary

pytestmark = pytest.mark.browser

VIEW = ".jp-MemoryView"


def _saved_notebook(memdir: Path, folder: Path) -> nbformat.NotebookNode:
    """``%context`` and ``%memory`` executed and saved without widget state."""
    from nbclient import NotebookClient

    from jupyter_memory.demo import kernel_env
    from jupyter_memory.memdir.store import MemoryStore

    MemoryStore(memdir).create("revenue in cents", "The sales.revenue column is stored in "
                               "cents", "project", "Divide by 100.\n")
    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_code_cell(s)
                for s in ("%load_ext jupyter_memory", "%context", "%memory")]
    env = kernel_env(folder / "kernel-home", extra={"JUPYTER_MEMORY_DIR": str(memdir)})
    NotebookClient(nb, timeout=120, kernel_name="python3", store_widget_state=False,
                   resources={"metadata": {"path": str(folder)}}).execute(env=env)
    return nb


@pytest.fixture(scope="module")
def notebook7(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Lab]:
    try:
        import notebook  # noqa: F401
    except ImportError:
        pytest.skip("Notebook 7 is not installed (pip install 'notebook>=7')")
    if not CHROMIUM.exists():
        _unavailable(f"{CHROMIUM} not found")
    if not _labextension_installed():
        _unavailable("the jupyter-memory labextension is not installed (run `make setup`)")
    server = Lab(tmp_path_factory.mktemp("nb7"))
    server.root.mkdir()
    data = server.home / ".local" / "share" / "jupyter"
    data.mkdir(parents=True)
    nb = _saved_notebook(server.memdir, server.root)
    nbformat.write(nb, str(server.root / "trusted.ipynb"))
    NotebookNotary(data_dir=str(data)).sign(nb)
    nb.cells.append(nbformat.v4.new_markdown_cell("A copy someone sent."))
    nbformat.write(nb, str(server.root / "untrusted.ipynb"))
    env = dict(os.environ, HOME=str(server.home), JUPYTER_DATA_DIR=str(data),
               JUPYTER_CONFIG_DIR=str(server.home / ".jupyter"),
               JUPYTER_RUNTIME_DIR=str(server.home / "runtime"),
               JUPYTER_MEMORY_DIR=str(server.memdir))
    log = (server.home / "notebook.log").open("wb")
    server.process = subprocess.Popen(
        [sys.executable, "-m", "notebook", "--no-browser", "--allow-root", "--ip=127.0.0.1",
         f"--port={server.port}", "--ServerApp.port_retries=0",
         f"--IdentityProvider.token={server.token}", f"--ServerApp.root_dir={server.root}"],
        cwd=server.root, env=env, stdout=log, stderr=subprocess.STDOUT)
    process = server.process
    try:
        deadline = time.monotonic() + 120
        while True:
            try:
                urllib.request.urlopen(f"{server.url}/api/status?token={server.token}", timeout=2)
                break
            except OSError:
                if process.poll() is not None or time.monotonic() > deadline:
                    raise RuntimeError("Notebook 7 did not start") from None
                time.sleep(0.5)
        yield server
    finally:
        server.stop()  # terminate, and kill when it does not exit in time


@pytest.mark.parametrize("name", ["trusted", "untrusted"])
def test_notebook7_shows_the_static_copies(notebook7: Lab, name: str, artifacts: Path) -> None:
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_ARGS,
                                             headless=True)
        try:
            page: Any = browser.new_page(viewport={"width": 1280, "height": 1400})
            page.set_default_timeout(120_000)
            page.goto(f"{notebook7.url}/notebooks/{name}.ipynb?token={notebook7.token}")
            page.locator(VIEW).nth(1).wait_for(state="visible")
            if name == "trusted":
                # The hidden widget layer has looked for the models and found none.
                page.wait_for_function(
                    "sel => [...document.querySelectorAll(sel)].every("
                    "v => v.textContent.includes('model not found'))", arg=VIEW)
            assert page.get_by_text("Error displaying widget").filter(visible=True).count() == 0
            views = page.locator(VIEW)
            assert views.count() == 2
            for i in range(2):
                assert "jp-MemoryView-static" in (views.nth(i).get_attribute("class") or "")
            views.nth(0).get_by_text("% of window").wait_for(state="visible")
            views.nth(1).get_by_text("stored in cents").wait_for(state="visible")
            page.screenshot(path=str(artifacts / f"notebook7-{name}.png"))
        finally:
            browser.close()
