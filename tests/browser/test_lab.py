"""End to end in a real browser: JupyterLab with the extension, driven by Playwright.

One JupyterLab server (root, HOME, config and memdir all under tmp) serves every test
here; Debian's chromium is the browser. The server and browser fixtures, and when they
skip or fail, are in ``conftest.py``. Screenshots go to ``test-artifacts/``.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

import nbformat
import pytest
from nbformat.v4 import new_code_cell, new_markdown_cell, new_notebook, new_output

from jupyter_memory.memdir.store import MemoryStore

pytestmark = pytest.mark.browser

REPO = Path(__file__).resolve().parents[2]
ARTIFACTS = REPO / "test-artifacts"
TURN_MIME = "application/vnd.jupyter-memory.turn+json"
PANEL_TAB = '.jp-SideBar [data-id="jupyter-memory-panel"]'
PATH_CELL = (
    "from jupyter_memory.notebook_path import current_notebook_path\n"
    "print('NOTEBOOK=' + str(current_notebook_path()))"
)


# --------------------------------------------------------------------------- data


def _seed_memdir(memdir: Path) -> None:
    store = MemoryStore(memdir)
    store.create(
        "revenue-in-cents",
        "The sales.revenue column is stored in cents",
        "project",
        "Divide by 100 before any aggregate.\n",
    )
    store.create("ana-role", "Ana is a data scientist on the growth team", "user", "Role.\n")
    store.create("warehouse", "Where the warehouse dashboards live", "reference", "Wiki.\n")
    # A memory the index does not point at: doctor reports it as an orphan.
    (memdir / "feedback_plots.md").write_text(
        "---\nname: plots\ndescription: Label every axis\ntype: feedback\n---\nAlways.\n",
        encoding="utf-8",
    )


def _turn_record() -> dict[str, Any]:
    return {
        "version": 1,
        "session_id": "0b7c2a64-3f7e-4c59-9a59-0c1f1c2d3e4f",
        "turn": 3,
        "model": "claude-test",
        "prompt": "What was revenue last week?",
        "answer": "Revenue was **$12,345** (the column is in cents, so I divided by 100).",
        "tool_calls": [
            {
                "id": "toolu_1",
                "name": "Read",
                "input": {"file_path": "sales.csv"},
                "result": "day,revenue\nmon,1234500",
                "is_error": False,
            },
            {
                "id": "toolu_2",
                "name": "Bash",
                "input": {"command": "exit 1"},
                "result": "permission denied",
                "is_error": True,
            },
        ],
        "recall": {
            "mode": "prefetch",
            "decisions": [
                {
                    "file": "project_revenue_in_cents.md",
                    "decision": "injected",
                    "reason": "selected as relevant",
                    "path": "B",
                    "age_days": 3,
                    "bytes": 812,
                },
                {
                    "file": "user_ana_role.md",
                    "decision": "not_selected",
                    "reason": "not relevant to the question",
                    "age_days": 40,
                    "bytes": 200,
                },
            ],
        },
        "context": {
            "window": 200000,
            "used": 15000,
            "categories": [
                {"name": "system", "tokens": 3000},
                {"name": "memory", "tokens": 2000},
                {"name": "messages", "tokens": 10000},
            ],
            "thresholds": {"autocompact": 167000},
        },
        "usage": {"input_tokens": 15000, "output_tokens": 420},
        "memories_written": [{"file": "project_revenue_in_cents.md", "by": "agent"}],
        "events": [{"kind": "warning", "text": "index near its limit"}],
        "future_key_nobody_knows": {"ignored": True},
    }


def _write_notebooks(root: Path) -> None:
    work = root / "work"
    work.mkdir(parents=True)
    analysis = new_notebook(cells=[new_code_cell(PATH_CELL)])
    analysis.metadata["kernelspec"] = {
        "name": "python3",
        "display_name": "Python 3",
        "language": "python",
    }
    nbformat.write(analysis, work / "analysis.ipynb")

    def turn_cell(source: str, record: dict[str, Any], count: int) -> Any:
        output = new_output(
            "display_data",
            data={TURN_MIME: record, "text/plain": f"agent turn ({len(record)} keys)"},
        )
        return new_code_cell(source, execution_count=count, outputs=[output])

    turns = new_notebook(
        cells=[
            new_markdown_cell("Saved agent turns"),
            turn_cell("%%agent\nWhat was revenue last week?", _turn_record(), 1),
            turn_cell(
                "%%agent\nshort",
                {"version": 1, "answer": "Just this answer.", "status": "interrupted"},
                2,
            ),
            turn_cell("%%agent\nempty", {}, 3),
        ]
    )
    nbformat.validate(turns)
    nbformat.write(turns, work / "turns.ipynb")


@pytest.fixture(scope="module")
def seed_lab() -> Callable[[Any], None]:
    def seed(lab: Any) -> None:
        _seed_memdir(lab.memdir)
        _write_notebooks(lab.root)

    return seed


def _shot(page: Any, name: str) -> None:
    ARTIFACTS.mkdir(exist_ok=True)
    page.screenshot(path=str(ARTIFACTS / f"{name}.png"))


def _open_notebook(page: Any, lab: Any, path: str) -> None:
    page.goto(lab.page_url(path))
    page.wait_for_selector(".jp-NotebookPanel .jp-Cell", state="visible")


def _open_panel(page: Any) -> Any:
    page.locator(PANEL_TAB).click()
    panel = page.locator("#jupyter-memory-panel")
    panel.wait_for(state="visible")
    return panel


# --------------------------------------------------------------------------- tests


def test_panel_lists_searches_and_forgets(page: Any, lab: Any) -> None:
    _open_notebook(page, lab, "work/analysis.ipynb")
    panel = _open_panel(page)
    items = panel.locator(".jp-MemoryPanel-item")
    page.wait_for_function(
        "() => document.querySelectorAll('#jupyter-memory-panel .jp-MemoryPanel-item').length === 4"
    )
    headings = panel.locator(".jp-MemoryPanel-groupTitle").all_inner_texts()
    assert {"User (1)", "Feedback (1)", "Project (1)", "Reference (1)"} <= set(headings), headings
    assert "Ana is a data scientist" in panel.inner_text()
    doctor = panel.locator(".jp-MemoryPanel-doctor")
    assert "feedback_plots.md" in doctor.inner_text()
    _shot(page, "panel")

    panel.get_by_label("Search memories").fill("revenue cents")
    page.wait_for_function(
        "() => document.querySelectorAll('#jupyter-memory-panel .jp-MemoryPanel-item').length === 1"
    )
    assert "revenue-in-cents" in items.first.inner_text()
    panel.get_by_label("Search memories").fill("")

    target = MemoryStore(lab.memdir).get("revenue-in-cents").path
    assert target.exists()
    panel.get_by_role("button", name="Forget revenue-in-cents").click()
    dialog = page.locator(".jp-Dialog")
    dialog.wait_for(state="visible")
    assert "revenue-in-cents" in dialog.inner_text()
    _shot(page, "forget-dialog")
    dialog.get_by_role("button", name="Forget").click()
    page.wait_for_function(
        "() => document.querySelectorAll('#jupyter-memory-panel .jp-MemoryPanel-item').length === 3"
    )
    assert not target.exists()
    assert target.name not in (lab.memdir / "MEMORY.md").read_text(encoding="utf-8")


def test_panel_refreshes_when_the_memdir_changes(page: Any, lab: Any) -> None:
    _open_notebook(page, lab, "work/analysis.ipynb")
    panel = _open_panel(page)
    panel.locator(".jp-MemoryPanel-item").first.wait_for(state="visible")
    MemoryStore(lab.memdir).create("from-the-cli", "Written behind the panel's back", "user", "x\n")
    panel.get_by_text("from-the-cli").wait_for(state="visible")


def test_memory_outside_the_root_opens_read_only(page: Any, lab: Any) -> None:
    _open_notebook(page, lab, "work/analysis.ipynb")
    panel = _open_panel(page)
    panel.get_by_role("button", name="Open ana-role").click()
    view = page.locator(".jp-MemoryView")
    view.wait_for(state="visible")
    assert "Role." in view.locator(".jp-MemoryView-text").inner_text()
    assert "read-only" in view.inner_text()
    _shot(page, "memory-view")


def test_kernel_learns_the_notebook_path_and_its_renames(page: Any, lab: Any) -> None:
    _open_notebook(page, lab, "work/analysis.ipynb")
    page.wait_for_function(
        "() => window.jupyterapp && document.querySelector('.jp-Notebook-ExecutionIndicator')"
        " && document.querySelector('.jp-Notebook-ExecutionIndicator').dataset.status === 'idle'"
    )
    renamed = lab.root / "work" / "renamed.ipynb"
    page.evaluate(
        "() => window.jupyterapp.serviceManager.contents.rename("
        "'work/analysis.ipynb', 'work/renamed.ipynb')"
    )
    page.locator(".lm-TabBar-tab", has_text="renamed.ipynb").wait_for(state="visible")
    assert renamed.exists()
    expected = f"NOTEBOOK={os.path.realpath(renamed)}"
    output = page.locator(".jp-OutputArea-output")
    for _attempt in range(10):
        page.locator(".jp-Cell").first.click()
        page.keyboard.press("Control+Enter")
        output.first.wait_for(state="visible")
        page.wait_for_function(
            "() => document.querySelector('.jp-Notebook-ExecutionIndicator').dataset.status"
            " === 'idle'"
        )
        if expected in output.first.inner_text():
            break
        page.wait_for_timeout(500)
    assert expected in output.first.inner_text(), output.first.inner_text()
    # The page served the lab with the extension's own plugins, not a stale build.
    plugins = page.evaluate("() => window.jupyterapp.hasPlugin('jupyter-memory:kernel-path')")
    assert plugins is True
    page.evaluate(
        "() => window.jupyterapp.serviceManager.contents.rename("
        "'work/renamed.ipynb', 'work/analysis.ipynb')"
    )


def test_saved_turns_render_without_a_kernel(page: Any, lab: Any) -> None:
    page.goto(lab.page_url("work/turns.ipynb"))
    # The notebook names no kernel: JupyterLab asks which to start; choose none.
    select = page.locator(".jp-Dialog")
    select.wait_for(state="visible")
    _shot(page, "turns-kernel-dialog")
    select.get_by_role("button", name="No Kernel").click()
    select.wait_for(state="detached")
    turn = page.locator(".jp-MemoryTurn")
    page.wait_for_function("() => document.querySelectorAll('.jp-MemoryTurn').length === 3")
    first = turn.nth(0)
    text = first.inner_text()
    assert "Revenue was" in text and "$12,345" in text
    assert first.locator("strong", has_text="$12,345").count() == 1  # markdown rendered
    assert "Tool calls (2, 1 failed)" in text
    assert "Recalled memories (1 of 2 injected, prefetch mode)" in text
    assert "Context: 15.0k of 200.0k tokens" in text
    assert first.locator(".jp-MemoryTurn-segment").count() == 3
    first.get_by_text("Tool calls (2, 1 failed)").click()
    first.get_by_text("Bash — error").click()
    assert "permission denied" in first.inner_text()
    first.get_by_text("Recalled memories").click()
    rows = first.locator(".jp-MemoryTurn-decision")
    assert rows.count() == 2
    assert "not selected" in rows.nth(1).inner_text()
    assert "Just this answer." in turn.nth(1).inner_text()
    assert turn.nth(1).locator(".jp-MemoryTurn-status").inner_text() == "interrupted"
    assert first.locator(".jp-MemoryTurn-status").count() == 0
    assert "No answer was recorded" in turn.nth(2).inner_text()
    kernel = page.locator(".jp-Toolbar-kernelName").first.inner_text()
    assert "No Kernel" in kernel, kernel
    _shot(page, "turns")
    page.evaluate(
        "() => window.jupyterapp.commands.execute('apputils:change-theme',"
        " {theme: 'JupyterLab Dark'})"
    )
    page.wait_for_function("() => document.body.dataset.jpThemeLight === 'false'")
    _open_panel(page).locator(".jp-MemoryPanel-item").first.wait_for(state="visible")
    _shot(page, "turns-dark")
