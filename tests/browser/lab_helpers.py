"""Steps the browser tests share: open a notebook, type and run a cell, take a screenshot."""

from __future__ import annotations

from pathlib import Path
from typing import Any


def new_notebook(page: Any, lab: Any) -> None:
    """Open the launcher and start a new notebook with the Python kernel."""
    page.goto(lab.home_url())
    page.locator('.jp-LauncherCard[data-category="Notebook"]').first.click()
    page.locator(".jp-NotebookPanel .jp-Cell").first.wait_for(state="visible")
    # Typed cells run only once the kernel is connected; until then Shift+Enter just moves on.
    page.wait_for_function(
        "() => { const w = window.jupyterapp.shell.currentWidget;"
        " const k = w && w.sessionContext && w.sessionContext.session"
        " && w.sessionContext.session.kernel;"
        " return !!k && k.connectionStatus === 'connected' && k.status === 'idle'; }"
    )


def run_cell(page: Any, index: int, source: str) -> Any:
    """Type ``source`` into cell ``index``, run it, wait until it ran; return the cell."""
    cell = page.locator(".jp-Notebook .jp-Cell").nth(index)
    cell.locator(".cm-content").click()
    page.keyboard.insert_text(source)
    page.keyboard.press("Shift+Enter")
    # The prompt reads "[*]:" while the cell runs and "[N]:" once it is done.
    page.wait_for_function(
        "el => /^\\[\\d+\\]:$/.test(el.textContent.trim())",
        arg=cell.locator(".jp-InputArea-prompt").element_handle(),
    )
    return cell


def shot(target: Any, artifacts: Path, name: str) -> None:
    """A screenshot of a page or of one element (cropped to it) in test-artifacts."""
    target.screenshot(path=str(artifacts / f"{name}.png"))


def output(cell: Any) -> Any:
    return cell.locator(".jp-OutputArea")
