"""Budget gauges: how much of each memory and context budget is spent.

Five meters: ``MEMORY.md`` lines (of 200) and characters (of 25,000), prefetched memory
bytes this turn (of 20 KB) and this session (of 60 KB), and the tokens left before
automatic compaction. Each writes its numbers and level in words beside the bar.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import ipywidgets as widgets

from jupyter_memory.context.assemble import ContextReport
from jupyter_memory.widgets._base import fallback_bundle
from jupyter_memory.widgets.data import Gauge, budget_gauges
from jupyter_memory.widgets.html import gauges_html, gauges_text
from jupyter_memory.widgets.safe import escape as esc

__all__ = ["BudgetGauges"]

_BAR_STYLE = {"ok": "info", "near": "warning", "over": "danger"}
_WORDS = {"ok": "", "near": " — near the limit", "over": " — over the limit"}


class BudgetGauges(widgets.VBox):  # type: ignore[misc]  # ipywidgets ships no type information
    """One labelled progress bar per :class:`~jupyter_memory.widgets.data.Gauge`."""

    def __init__(self, gauges: Sequence[Gauge], **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.gauges: list[Gauge] = list(gauges)
        self.bars: dict[str, widgets.FloatProgress] = {}
        rows: list[widgets.Widget] = [widgets.HTML("<b>Budgets</b>")]
        for g in self.gauges:
            # A row wraps rather than cuts: label, bar and numbers each have a minimum
            # width and grow to share the line, and a narrow output stacks them.
            bar = widgets.FloatProgress(
                value=min(100.0, 100.0 * g.fraction), min=0.0, max=100.0,
                bar_style=_BAR_STYLE[g.level],
                layout=widgets.Layout(flex="1 1 140px", min_width="120px", max_width="260px",
                                      width="auto"),
            )
            self.bars[g.key] = bar
            words = widgets.HTML(
                f"<span class='jm-gauge-words'>{g.value:,} / {g.limit:,} {esc(g.unit)} "
                f"({100 * g.fraction:.1f}%){_WORDS[g.level]}"
                + (f" <i>{esc(g.note)}</i>" if g.note else "") + "</span>",
                layout=widgets.Layout(flex="1 1 14em", min_width="10em", width="auto"),
            )
            label = widgets.HTML(
                f"<span class='jm-gauge-label'>{esc(g.label)}</span>",
                layout=widgets.Layout(flex="0 1 18em", min_width="10em", width="auto"))
            rows.append(widgets.HBox([label, bar, words], layout=widgets.Layout(
                flex_flow="row wrap", align_items="center", grid_gap="2px 8px")))
        self.children = rows

    @classmethod
    def for_report(cls, report: ContextReport,
                   messages: Sequence[Mapping[str, Any]] = ()) -> BudgetGauges:
        """The gauges of a context report and the conversation it was made from."""
        return cls(budget_gauges(report, messages))

    def gauge(self, key: str) -> Gauge:
        for g in self.gauges:
            if g.key == key:
                return g
        raise KeyError(f"no gauge {key!r}; the gauges are {', '.join(g.key for g in self.gauges)}")

    def static_html(self) -> str:
        return gauges_html(self.gauges)

    def static_text(self) -> str:
        return gauges_text(self.gauges)

    def _repr_mimebundle_(self, **kwargs: Any) -> dict[str, Any]:
        return fallback_bundle(self, self.static_html(), self.static_text(), **kwargs)
