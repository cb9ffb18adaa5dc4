"""The notebook widgets in a real JupyterLab: ``%context`` and ``%memory`` as live views.

A new notebook is opened from the launcher with the Python kernel of this environment
and its cells are typed and run as a user would. One agent turn is answered by the local
fake Messages API, so the context holds messages and a recalled memory. The tests check
that the ipywidgets views render (not their static HTML fallback) with the expected
categories and rows, that opening a category or a memory shows its text, and save
screenshots of the views (cropped to them), light and dark, to ``test-artifacts/``.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from lab_helpers import new_notebook as _new_notebook
from lab_helpers import output as _output
from lab_helpers import run_cell as _run_cell
from lab_helpers import set_theme as _set_theme
from lab_helpers import shot as _shot

import jupyter_memory
from jupyter_memory.localapi import FakeAnthropic, Turn
from jupyter_memory.memdir.store import MemoryStore

pytestmark = pytest.mark.browser

CATEGORIES = [
    "system",
    "tools",
    "instructions",
    "index",
    "memories",
    "messages",
    "autocompact buffer",
    "free",
]
MEMORIES = {
    "revenue-in-cents": (
        "The sales.revenue column is stored in cents",
        "project",
        "Divide sales.revenue by 100 before any sum or mean.\n",
    ),
    "ana-role": ("Ana is a data scientist on the growth team", "user", "She owns churn.\n"),
    "label-axes": ("Label every axis of every plot", "feedback", "Units included.\n"),
    "warehouse": ("Where the warehouse dashboards live", "reference", "See the wiki.\n"),
}
QUESTION = "How is the revenue column stored?"
ANSWER = "The revenue column is in **cents**: divide by 100 before summing."
# The kernel must run this very package, from the same installation as the test.
WHICH_CELL = "import jupyter_memory\nprint('PACKAGE=' + jupyter_memory.__file__)"
SETUP_CELL = (
    "%load_ext jupyter_memory\n"
    "%config Agent.recall_mode = 'prefetch'\n"
    "%config Agent.recall_selector = 'offline'\n"
    "%config Agent.wait_for_prefetch = True"
)
WIDGET = ".jp-OutputArea-output .widget-vbox"


@pytest.fixture(scope="module")
def fake_model() -> Iterator[FakeAnthropic]:
    """The Messages API for the kernel's agent: one scripted answer, on 127.0.0.1."""
    with FakeAnthropic() as server:
        server.push(Turn(text=ANSWER, expect_user_contains="revenue"))
        yield server


@pytest.fixture(scope="module")
def seed_lab(fake_model: FakeAnthropic) -> Callable[[Any], None]:
    def seed(lab: Any) -> None:
        store = MemoryStore(lab.memdir)
        for name, (description, kind, body) in MEMORIES.items():
            store.create(name, description, kind, body)
        (lab.root / "CLAUDE.md").write_text(
            "# Analysis conventions\n\nMoney is reported in dollars with two decimals.\n",
            encoding="utf-8",
        )
        lab.env.update(
            ANTHROPIC_BASE_URL=fake_model.base_url,
            ANTHROPIC_API_KEY="test-key",
            JUPYTER_MEMORY_MODEL="claude-sonnet-4-5",
        )

    return seed


@pytest.fixture(scope="module")
def viewport() -> dict[str, int]:
    # Tall enough that the views fit whole on screen, so their screenshots are complete.
    return {"width": 1280, "height": 1600}


# --------------------------------------------------------------------------- helpers


def _legend_names(view: Any) -> list[str]:
    legend = view.locator("table").filter(has=view.page.locator("th", has_text="category"))
    return [name.strip() for name in legend.locator("tbody tr td:nth-child(2)").all_inner_texts()]


# --------------------------------------------------------------------------- tests


def test_context_view_renders_every_category(
    page: Any, lab: Any, fake_model: FakeAnthropic, artifacts: Path
) -> None:
    _new_notebook(page, lab)
    which = _run_cell(page, 0, WHICH_CELL)
    assert f"PACKAGE={jupyter_memory.__file__}" in _output(which).inner_text()
    _run_cell(page, 1, SETUP_CELL)
    turn = _run_cell(page, 2, f"%%agent\n{QUESTION}")
    _output(turn).get_by_text("divide by 100 before summing").wait_for(state="visible")
    assert fake_model.remaining == 0 and fake_model.failures == []

    cell = _run_cell(page, 3, "%context")
    view = _output(cell).locator(WIDGET).first
    view.wait_for(state="visible")
    assert _legend_names(view) == CATEGORIES
    text = view.inner_text()
    assert "claude-sonnet-4-5" in text
    assert "autocompact" in text
    # Categories with something in them have a pane; opening one shows the text sent.
    memories = view.get_by_text("[M] memories", exact=False)
    memories.click()
    pane = view.locator(".widget-vbox", has_text="project_revenue_in_cents.md").last
    pane.get_by_text("Divide sales.revenue by 100").wait_for(state="visible")
    assert "injected" in pane.inner_text()
    view.get_by_text("[I] instructions", exact=False).click()
    view.get_by_text("Money is reported in dollars").wait_for(state="visible")
    view.get_by_text("[M] memories", exact=False).click()
    view.get_by_text("Divide sales.revenue by 100").wait_for(state="visible")
    _shot(view, artifacts, "context-view")
    _shot(page, artifacts, "context-notebook")

    _set_theme(page, "JupyterLab Dark")
    try:
        view.get_by_text("Divide sales.revenue by 100").wait_for(state="visible")
        _shot(view, artifacts, "context-view-dark")
    finally:
        _set_theme(page, "JupyterLab Light")


def test_memory_browser_lists_and_opens_memories(page: Any, lab: Any, artifacts: Path) -> None:
    _new_notebook(page, lab)
    _run_cell(page, 0, "%load_ext jupyter_memory")
    cell = _run_cell(page, 1, "%memory")
    view = _output(cell).locator(WIDGET).first
    view.wait_for(state="visible")
    table = view.locator(".widget-select.jm-mono select")
    rows = table.locator("option").all_inner_texts()
    assert len(rows) == len(MEMORIES), rows
    for name, (_description, kind, _body) in MEMORIES.items():
        assert any(name in row and kind in row for row in rows), (name, rows)
    _shot(view, artifacts, "memory-browser-table")

    label = next(row for row in rows if "revenue-in-cents" in row)
    table.select_option(label=label)
    editor = view.locator("textarea").first
    editor.wait_for(state="visible")
    page.wait_for_function(
        "el => el.value.includes('Divide sales.revenue by 100')", arg=editor.element_handle()
    )
    assert "stored in cents" in view.locator("input[type=text]").last.input_value()
    _shot(view, artifacts, "memory-browser")
