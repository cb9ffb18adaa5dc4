"""The context bar, its level labels and the budget gauges at every width from 400 px.

One notebook in a real JupyterLab runs an agent turn (answered by the local fake Messages
API) and ``%context``; then the window is narrowed to 1400, 800, 630, 440 and 400 px and,
at each width, the bounding boxes of what is drawn are checked: no level label overlaps
another, no label or gauge is cut by its box or leaves the output, and a gauge row's parts
do not overlap. The fills' contrast is measured on the page as well, in the light and the
dark theme, against the colours the lab actually applied.
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

from jupyter_memory.localapi import FakeAnthropic, Turn
from jupyter_memory.memdir.store import MemoryStore
from jupyter_memory.widgets import palette

pytestmark = pytest.mark.browser

WIDTHS = (1400, 800, 630, 440, 400)
SETUP_CELL = (
    "%load_ext jupyter_memory\n"
    "%config Agent.recall_mode = 'prefetch'\n"
    "%config Agent.recall_selector = 'offline'\n"
    "%config Agent.wait_for_prefetch = True"
)
WIDGET = ".jp-OutputArea-output .widget-vbox"

#: Bounding-box checks run in the page: returns a list of problems, empty when none.
_CHECK = """
root => {
  const problems = [];
  const area = root.getBoundingClientRect();
  const box = el => el.getBoundingClientRect();
  const textBox = el => {
    const range = document.createRange();
    range.selectNodeContents(el);
    return range.getBoundingClientRect();
  };
  const overlap = (a, b) =>
    a.left < b.right - 0.5 && b.left < a.right - 0.5 &&
    a.top < b.bottom - 0.5 && b.top < a.bottom - 0.5;
  const inside = r => r.left >= area.left - 0.5 && r.right <= area.right + 0.5;
  const levels = [...root.querySelectorAll('.jm-level-label')];
  levels.forEach((el, i) => {
    const r = textBox(el);
    if (!inside(r)) problems.push(`level label "${el.textContent}" leaves the output`);
    levels.slice(0, i).forEach(other => {
      if (overlap(r, textBox(other)))
        problems.push(`level labels "${el.textContent}" and "${other.textContent}" overlap`);
    });
  });
  for (const seg of root.querySelectorAll('[class^="jm-cat-"]')) {
    if (seg.textContent && seg.scrollWidth > seg.clientWidth + 1)
      problems.push(`segment label "${seg.textContent}" is cut`);
  }
  const rows = [...root.querySelectorAll('.widget-hbox')].filter(
    row => row.querySelector('.jm-gauge-label'));
  if (root.querySelector('.jm-gauge-label') && rows.length === 0)
    problems.push('no gauge rows found');
  for (const row of rows) {
    const parts = [...row.children];
    parts.forEach((part, i) => {
      const r = box(part);
      if (!inside(r)) problems.push(`gauge part ${i} of "${row.textContent}" leaves the output`);
      if (part.scrollWidth > part.clientWidth + 1)
        problems.push(`gauge part ${i} of "${row.textContent}" is cut`);
      parts.slice(0, i).forEach(other => {
        if (overlap(r, box(other))) problems.push(`gauge parts overlap in "${row.textContent}"`);
      });
    });
  }
  return problems;
}
"""

#: The applied fills of the bar's segments, in order, and the track's colour.
_FILLS = """
root => {
  const bar = root.querySelector('.jm-bar-track');
  if (!bar) return null;
  const hex = c => '#' + c.match(/\\d+/g).slice(0, 3)
    .map(n => Number(n).toString(16).padStart(2, '0')).join('');
  return {
    track: hex(getComputedStyle(bar).backgroundColor),
    fills: [...bar.children].filter(s => /jm-cat-/.test(s.className)).map(s => [s.className, hex(getComputedStyle(s).backgroundColor)])
  };
}
"""


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


def _resize(page: Any, width: int) -> None:
    page.set_viewport_size({"width": width, "height": 1600})
    page.wait_for_function(f"() => window.innerWidth === {width}")
    # Two frames: the lab's layout has run after the resize event.
    page.evaluate("() => new Promise(r => requestAnimationFrame(() => requestAnimationFrame(r)))")


def test_context_and_gauges_fit_every_width(
    page: Any, lab: Any, fake_model: FakeAnthropic, artifacts: Path
) -> None:
    _new_notebook(page, lab)
    _run_cell(page, 0, SETUP_CELL)
    turn = _run_cell(page, 1, "%%agent\nHow is the revenue column stored?")
    _output(turn).locator(".jp-MemoryTurn-answer").get_by_text("In cents").wait_for(state="visible")
    assert fake_model.failures == []
    cell = _run_cell(page, 2, "%context")
    view = _output(cell).locator(WIDGET).first
    view.wait_for(state="visible")
    view.locator(".jm-level-label").first.wait_for(state="visible")
    view.locator(".jm-gauge-label").first.wait_for(state="visible")
    turn_view = _output(turn)
    # The whole window for the notebook, as on a narrow screen: no side panel open.
    page.evaluate("() => { const s = window.jupyterapp.shell; s.collapseLeft(); "
                  "s.collapseRight(); }")
    page.wait_for_function("() => window.jupyterapp.shell.leftCollapsed && window.jupyterapp.shell.rightCollapsed")

    found: dict[int, list[str]] = {}
    for width in WIDTHS:
        _resize(page, width)
        found[width] = (view.evaluate(_CHECK)
                        + [f"turn: {p}" for p in turn_view.evaluate(_CHECK)])
        _shot(view, artifacts, f"context-{width}px")
    assert found == {w: [] for w in WIDTHS}

    _resize(page, 1400)
    for theme, name in (("light", "JupyterLab Light"), ("dark", "JupyterLab Dark")):
        _set_theme(page, name)
        try:
            bars = [b for b in (view.evaluate(_FILLS), turn_view.evaluate(_FILLS)) if b]
            assert bars, "no context bar on the page"
            for applied in bars:
                assert applied["track"] == palette.TRACK[theme], (theme, applied)
                for cls, fill in applied["fills"]:
                    name_ = next(c for c in cls.split() if c.startswith("jm-cat-"))
                    expected = next(c.fill(theme) for c in palette.CATEGORIES
                                    if palette.category_class(c.name) == name_)
                    assert fill == expected, (theme, cls, fill)
                    if name_ != "jm-cat-free":
                        assert palette.contrast(fill, applied["track"]) >= 3.0, (theme, cls)
        finally:
            _set_theme(page, "JupyterLab Light")
