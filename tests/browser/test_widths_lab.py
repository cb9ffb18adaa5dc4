"""The context bar, its level labels and the budget gauges at every width from 400 px.

One notebook in a real JupyterLab runs an agent turn (answered by the local fake Messages
API) and ``%context``; then the window is narrowed to 1400, 800, 630, 440 and 400 px and,
at each width, the bounding boxes of what is drawn are checked: no level label overlaps
another, no label or gauge is cut by its box or leaves the output, and a gauge row's parts
do not overlap. The fills' contrast is measured on the page as well, in the light, dark
and dark high-contrast themes, against the colours the lab actually applied. The checks
live in ``lab_helpers`` (``test_notebook7.py`` runs them in Notebook 7).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from lab_helpers import (
    AGENT_SETUP,
    THEMES,
    WIDGET,
    WIDTHS,
    contrast_problems,
    layout_problems,
    new_notebook,
    output,
    resize,
    run_cell,
    set_theme,
    shot,
)

from jupyter_memory.localapi import FakeAnthropic, Turn
from jupyter_memory.memdir.store import MemoryStore

pytestmark = pytest.mark.browser


@pytest.fixture(scope="module")
def fake_model() -> Iterator[FakeAnthropic]:
    with FakeAnthropic() as server:
        server.push(Turn(text="In **cents**.", expect_user_contains="revenue"))
        yield server


@pytest.fixture(scope="module")
def seed_lab(fake_model: FakeAnthropic) -> Callable[[Any], None]:
    def seed(lab: Any) -> None:
        store = MemoryStore(lab.memdir)
        store.create("revenue-in-cents", "The sales.revenue column is stored in cents",
                     "project", "Divide sales.revenue by 100 before any sum.\n")
        store.create("label-axes", "Label every axis of every plot", "feedback", "Units.\n")
        (lab.root / "CLAUDE.md").write_text("# Conventions\n\nMoney in dollars.\n",
                                            encoding="utf-8")
        lab.env.update(ANTHROPIC_BASE_URL=fake_model.base_url, ANTHROPIC_API_KEY="test-key",
                       JUPYTER_MEMORY_MODEL="claude-sonnet-4-5")

    return seed


def test_context_and_gauges_fit_every_width(
    page: Any, lab: Any, fake_model: FakeAnthropic, artifacts: Path
) -> None:
    new_notebook(page, lab)
    run_cell(page, 0, AGENT_SETUP)
    turn = run_cell(page, 1, "%%agent\nHow is the revenue column stored?")
    output(turn).locator(".jp-MemoryTurn-answer").get_by_text("In cents").wait_for(state="visible")
    assert fake_model.failures == []
    cell = run_cell(page, 2, "%context")
    view = output(cell).locator(WIDGET).first
    view.wait_for(state="visible")
    view.locator(".jm-level-label").first.wait_for(state="visible")
    view.locator(".jm-gauge-label").first.wait_for(state="visible")
    turn_view = output(turn)
    # The whole window for the notebook, as on a narrow screen: no side panel open.
    page.evaluate("() => { const s = window.jupyterapp.shell; s.collapseLeft(); "
                  "s.collapseRight(); }")
    page.wait_for_function("() => window.jupyterapp.shell.leftCollapsed && window.jupyterapp.shell.rightCollapsed")

    found: dict[int, list[str]] = {}
    for width in WIDTHS:
        resize(page, width)
        found[width] = layout_problems({"context": view, "turn": turn_view})
        shot(view, artifacts, f"context-{width}px")
    assert found == {w: [] for w in WIDTHS}

    resize(page, 1400)
    contrast: dict[str, list[str]] = {}
    try:
        for theme, name in THEMES.items():
            set_theme(page, name)
            contrast[theme] = contrast_problems({"context": view, "turn": turn_view}, theme)
    finally:
        set_theme(page, THEMES["light"])
    assert contrast == {theme: [] for theme in THEMES}
