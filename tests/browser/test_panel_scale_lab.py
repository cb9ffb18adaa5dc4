"""Issue 31: the Memory panel at 300 memories, by keyboard alone, checked with axe-core.

One JupyterLab serves a notebook in ``work/`` whose project memory holds 300 memories,
some with long names that differ only at their end. The search box and the count stay
on top while the list scrolls; the list is one tab stop whose arrow keys walk the rows;
Enter opens, Delete asks to forget with Cancel focused; a failing server (the notebook's
folder gone, so the REST handler answers 404) leaves the list shown, marked stale.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import nbformat
import pytest
from lab_helpers import axe_violations, set_theme, shot
from nbformat.v4 import new_code_cell, new_notebook

from jupyter_memory.memdir.store import MemoryStore

pytestmark = pytest.mark.browser

PANEL_TAB = '.jp-SideBar [data-id="jupyter-memory-panel"]'
COUNT = 300
TYPES = ("user", "feedback", "project", "reference")
# Similar long names that differ only at their end, as dated or numbered reports do.
LONG = "quarterly-revenue-report-for-the-northern-sales-region-{:03d}"
ROWS_SHOWN = (
    f"() => document.querySelectorAll('#jupyter-memory-panel .jp-MemoryPanel-item')"
    f".length === {COUNT}"
)


def _name(i: int) -> str:
    return LONG.format(i) if i % 10 == 0 else f"memory-{i:03d}"


@pytest.fixture(scope="module")
def seed_lab() -> Callable[[Any], None]:
    def seed(lab: Any) -> None:
        store = MemoryStore(lab.memdir)
        for i in range(COUNT):
            store.create(
                _name(i), f"Fact number {i} about the sales data", TYPES[i % 4], f"Body {i}.\n"
            )
        notebook = new_notebook(cells=[new_code_cell("1 + 1")])
        notebook.metadata["kernelspec"] = {
            "name": "python3",
            "display_name": "Python 3",
            "language": "python",
        }
        (lab.root / "work").mkdir()
        nbformat.write(notebook, lab.root / "work" / "analysis.ipynb")

    return seed


def _open(page: Any, lab: Any) -> Any:
    """The notebook in work/ and the panel beside it, all 300 memories listed."""
    page.goto(lab.page_url("work/analysis.ipynb"))
    page.wait_for_selector(".jp-NotebookPanel .jp-Cell", state="visible")
    page.locator(PANEL_TAB).click()
    panel = page.locator("#jupyter-memory-panel")
    panel.wait_for(state="visible")
    page.wait_for_function(ROWS_SHOWN)
    return panel


def _unobscured(locator: Any) -> bool:
    """Whether the element shows inside the panel and nothing covers its middle."""
    return bool(
        locator.evaluate(
            """el => {
              const box = el.getBoundingClientRect();
              const panel = document.getElementById('jupyter-memory-panel')
                .getBoundingClientRect();
              if (box.top < panel.top || box.bottom > panel.bottom) return false;
              const hit = document.elementFromPoint(
                box.left + Math.min(box.width / 2, 20), box.top + box.height / 2);
              return !!hit && (el === hit || el.contains(hit));
            }"""
        )
    )


def _focused(page: Any) -> str:
    """The focused element, as "<file> open|forget" in the list or its role/label outside."""
    return str(
        page.evaluate(
            """() => {
              const a = document.activeElement;
              const row = a && a.closest('.jp-MemoryPanel-item');
              if (row) {
                const cell = a.classList.contains('jp-MemoryPanel-forget') ? 'forget' : 'open';
                return row.dataset.file + ' ' + cell;
              }
              const label = a.labels && a.labels.length ? a.labels[0].textContent : '';
              return (a.getAttribute('aria-label') || label || a.textContent || a.tagName).trim();
            }"""
        )
    )


def _files(page: Any) -> list[str]:
    return list(
        page.evaluate(
            "() => Array.from(document.querySelectorAll("
            "'#jupyter-memory-panel .jp-MemoryPanel-item')).map(r => r.dataset.file)"
        )
    )


def test_search_and_count_stay_on_top_while_300_memories_scroll(
    page: Any, lab: Any, artifacts: Path
) -> None:
    panel = _open(page, lab)
    search = panel.get_by_label("Search memories")
    status = panel.locator(".jp-MemoryPanel-status")
    assert status.inner_text() == f"{COUNT} memories."
    panel.evaluate("el => { el.scrollTop = el.scrollHeight; }")
    page.wait_for_function(
        "() => { const p = document.getElementById('jupyter-memory-panel');"
        " return p.scrollTop > 0 && p.scrollTop + p.clientHeight >= p.scrollHeight - 1; }"
    )
    last = panel.locator(".jp-MemoryPanel-item").last
    assert _unobscured(last)
    assert _unobscured(search) and _unobscured(status)
    shot(panel, artifacts, "panel-300-scrolled")

    # Searching from down there filters at once, the count still in view.
    search.fill("northern 290")
    page.wait_for_function(
        "() => document.querySelectorAll('#jupyter-memory-panel .jp-MemoryPanel-item')"
        ".length === 1"
    )
    assert status.inner_text() == f"1 of {COUNT} memories match."
    assert _unobscured(status)


def test_long_names_are_cut_in_the_middle_and_whole_on_demand(
    page: Any, lab: Any, artifacts: Path
) -> None:
    panel = _open(page, lab)
    full = LONG.format(10)
    open_button = panel.get_by_role("button", name=f"Open {full}", exact=True)
    # The end, where these names differ, shows; the whole name is the title and label.
    tail = open_button.locator(".jp-MemoryPanel-nameTail")
    assert tail.inner_text().endswith("-010")
    # Scrolled to the middle of the panel, clear of the search box on top.
    open_button.evaluate("el => el.scrollIntoView({block: 'center'})")
    assert _unobscured(tail)
    head = open_button.locator(".jp-MemoryPanel-nameHead")
    assert head.evaluate("el => el.scrollWidth > el.clientWidth"), "the head is not cut"
    assert open_button.get_attribute("title").startswith(full)
    shot(panel, artifacts, "panel-300-long-names")


def test_keyboard_only_walk_of_the_300(page: Any, lab: Any, artifacts: Path) -> None:
    panel = _open(page, lab)
    files = _files(page)
    panel.locator(".jp-MemoryPanel-iconButton[aria-label='Refresh memories']").focus()
    # Refresh → search → the list: one tab stop for all 300 rows.
    page.keyboard.press("Tab")
    assert _focused(page) == "Search memories"
    page.keyboard.press("Tab")
    assert _focused(page) == f"{files[0]} open"
    for _ in range(5):
        page.keyboard.press("ArrowDown")
    assert _focused(page) == f"{files[5]} open"
    page.keyboard.press("End")
    assert _focused(page) == f"{files[-1]} open"
    row = panel.locator(f'.jp-MemoryPanel-item[data-file="{files[-1]}"]')
    assert _unobscured(row.locator(".jp-MemoryPanel-open"))
    page.keyboard.press("Home")
    assert _focused(page) == f"{files[0]} open"
    # Back at the top after scrolling: the first row shows below the search box.
    assert _unobscured(panel.locator(".jp-MemoryPanel-open").first)
    page.keyboard.press("PageDown")
    page.keyboard.press("ArrowUp")
    assert _focused(page) == f"{files[9]} open"
    assert _unobscured(
        panel.locator(f'.jp-MemoryPanel-item[data-file="{files[9]}"] .jp-MemoryPanel-open')
    )

    # Tab leaves the list; Shift+Tab comes back to the same row.
    page.keyboard.press("Tab")
    assert not page.evaluate(
        "() => !!document.activeElement.closest('.jp-MemoryPanel-list')"
    ), _focused(page)
    page.keyboard.press("Shift+Tab")
    assert _focused(page) == f"{files[9]} open"

    # The row's second cell: Forget. Its dialog focuses Cancel, so Enter keeps the memory.
    page.keyboard.press("ArrowRight")
    assert _focused(page) == f"{files[9]} forget"
    page.keyboard.press("Enter")
    dialog = page.locator(".jp-Dialog")
    dialog.wait_for(state="visible")
    assert page.evaluate("() => document.activeElement.textContent.trim()") == "Cancel"
    shot(page, artifacts, "panel-300-forget-dialog")
    page.keyboard.press("Enter")
    dialog.wait_for(state="detached")
    assert (lab.memdir / files[9]).is_file()
    assert _focused(page) == f"{files[9]} forget"

    # Delete asks too, for the focused row; Escape keeps it.
    page.keyboard.press("ArrowLeft")
    page.keyboard.press("ArrowDown")
    page.keyboard.press("Delete")
    dialog.wait_for(state="visible")
    assert files[10] in dialog.inner_text()
    assert page.evaluate("() => document.activeElement.textContent.trim()") == "Cancel"
    page.keyboard.press("Escape")
    dialog.wait_for(state="detached")
    assert (lab.memdir / files[10]).is_file()

    # Enter on the open cell opens the memory (read-only: the memdir is outside the root).
    assert _focused(page) == f"{files[10]} open"
    page.keyboard.press("Enter")
    view = page.locator(".jp-MemoryView")
    view.wait_for(state="visible")
    assert "Body" in view.locator(".jp-MemoryView-text").inner_text()


def test_a_server_error_keeps_the_300_marked_stale(page: Any, lab: Any, artifacts: Path) -> None:
    panel = _open(page, lab)
    work = lab.root / "work"
    moved = lab.root / "work-moved"
    # The notebook's folder goes away: every REST call for it now fails with a 404.
    work.rename(moved)
    try:
        panel.locator(".jp-MemoryPanel-list.jp-mod-stale").wait_for(state="visible")
        status = panel.locator(".jp-MemoryPanel-status")
        text = status.inner_text()
        assert "Could not reload the memories:" in text
        assert "does not exist under the server root" in text
        assert "stale since" in text and "retrying" in text
        assert len(_files(page)) == COUNT
        # The stale list still works by keyboard.
        panel.locator(".jp-MemoryPanel-open").first.focus()
        page.keyboard.press("ArrowDown")
        assert _focused(page) == f"{_files(page)[1]} open"
        shot(panel, artifacts, "panel-300-stale")
    finally:
        moved.rename(work)
    panel.get_by_role("button", name="Refresh memories").click()
    page.locator(".jp-MemoryPanel-list:not(.jp-mod-stale)").wait_for(state="attached")
    page.wait_for_function(
        "() => document.querySelector('#jupyter-memory-panel .jp-MemoryPanel-status')"
        f".textContent === '{COUNT} memories.'"
    )


@pytest.mark.parametrize("theme", ["JupyterLab Light", "JupyterLab Dark"])
def test_axe_finds_nothing_serious_in_the_panel(
    page: Any, lab: Any, axe_script: Path, artifacts: Path, theme: str
) -> None:
    panel = _open(page, lab)
    set_theme(page, theme)
    # A focused row too: its highlight and outline must keep their contrast.
    panel.locator(".jp-MemoryPanel-open").first.focus()
    page.keyboard.press("ArrowDown")
    assert axe_violations(page, axe_script, "#jupyter-memory-panel") == []
    shot(panel, artifacts, f"panel-300-{theme.split()[-1].lower()}")
