"""The context view: the next request's window as one bar, and every part of it readable.

The bar shows each category's share of the window with the warning, autocompact and
blocking levels marked. Below it, one accordion pane per category lists its items; picking
an item shows the exact text that is sent, capped for display with a "show all" toggle.
Recalled memories carry their age, staleness reminder, truncation and recall decision.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

import ipywidgets as widgets

from jupyter_memory.context.assemble import AssembledRequest, ContextReport
from jupyter_memory.widgets import style
from jupyter_memory.widgets._base import fallback_bundle
from jupyter_memory.widgets.data import (
    PREVIEW_CHARS,
    CategoryView,
    ContextState,
    ItemView,
    Marker,
    Segment,
    context_state,
)
from jupyter_memory.widgets.html import (
    bar_html,
    context_facts,
    context_header,
    context_html,
    context_text,
    decisions_html,
    legend_html,
    unitemized_words,
)
from jupyter_memory.widgets.safe import escape as esc

__all__ = ["CategoryPanel", "ContextView", "ItemPanel"]


class ItemPanel(widgets.VBox):  # type: ignore[misc]  # ipywidgets ships no type information
    """One item: its facts, then its text (the first characters, or all of it on demand)."""

    def __init__(self, item: ItemView | None = None, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.header = widgets.HTML()
        self.body = widgets.HTML()
        self.show_all = widgets.ToggleButton(
            value=False, description="Show all", icon="expand",
            tooltip="Show the whole text instead of the first characters",
            layout=widgets.Layout(width="auto"),
        )
        self.show_all.observe(self._render_body, names="value")
        self.item: ItemView | None = None
        self.children = [self.header, self.body]
        if item is not None:
            self.set_item(item)

    def set_item(self, item: ItemView) -> None:
        self.item = item
        self.show_all.value = False
        badges = "".join(f"<span class='jm-badge'>{esc(n)}</span>" for n in item.notes())
        stale = (f"<div style='color:{style.FONT_MUTED};font-size:11px'>Sent with this "
                 f"reminder: {esc(item.staleness)}</div>") if item.staleness else ""
        self.header.value = (f"<div class='jm-root'><b>{esc(item.label)}</b> · "
                             f"{item.tokens:,} tokens · {len(item.text):,} characters"
                             f"{badges}{stale}</div>")
        self.show_all.description = f"Show all {len(item.text):,} characters"
        self.children = ([self.header, self.body, self.show_all] if item.capped
                         else [self.header, self.body])
        self._render_body()

    @property
    def shown_text(self) -> str:
        """The text on screen now: all of it, or the first :data:`PREVIEW_CHARS`."""
        if self.item is None:
            return ""
        return self.item.text if self.show_all.value else self.item.preview

    def _render_body(self, _change: Any = None) -> None:
        if self.item is None:
            return
        cut = ""
        if self.item.capped and not self.show_all.value:
            cut = (f"<div style='color:{style.FONT_MUTED};font-size:11px'>First "
                   f"{PREVIEW_CHARS:,} of {len(self.item.text):,} characters.</div>")
        self.body.value = f"<div class='jm-root'><pre>{esc(self.shown_text)}</pre>{cut}</div>"
        self.show_all.icon = "compress" if self.show_all.value else "expand"


class CategoryPanel(widgets.VBox):  # type: ignore[misc]  # ipywidgets ships no type information
    """A category: a table of its items, a picker, and the picked item's text."""

    def __init__(self, category: CategoryView, decisions: Iterable[Mapping[str, Any]] = (),
                 source: str = "estimate", **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.category = category
        rows = "".join(
            f"<tr><td style='padding:1px 8px'>{esc(it.label)}</td>"
            f"<td style='padding:1px 8px;text-align:right'>{it.tokens:,}</td>"
            f"<td style='padding:1px 8px'>{esc('; '.join(it.notes()))}</td></tr>"
            for it in category.items
        )
        if category.unitemized:
            # The total is a real count and the rows are estimates: show the difference,
            # so the rows add up to the total in the title.
            rows += (f"<tr><td style='padding:1px 8px'><i>difference</i></td>"
                     f"<td style='padding:1px 8px;text-align:right'>{category.unitemized:+,}</td>"
                     f"<td style='padding:1px 8px'>{esc(unitemized_words(category, source))}"
                     f"</td></tr>")
        table = (f"<table style='font-size:12px;border-collapse:collapse'><thead><tr>"
                 f"<th style='text-align:left;padding:1px 8px'>item</th>"
                 f"<th style='text-align:right;padding:1px 8px'>tokens</th>"
                 f"<th style='text-align:left;padding:1px 8px'>notes</th></tr></thead>"
                 f"<tbody>{rows}</tbody></table>") if rows else ""
        decided = decisions_html(list(decisions)) if category.name == "memories" else ""
        self.summary = widgets.HTML(f"<div class='jm-root'>{table}{decided}</div>")
        self.picker = widgets.Dropdown(
            options=[(f"{it.label} ({it.tokens:,} tokens)", i)
                     for i, it in enumerate(category.items)],
            description="Show:", layout=widgets.Layout(width="95%"),
        )
        self.item_panel = ItemPanel()
        self.picker.observe(self._pick, names="value")
        parts: list[widgets.Widget] = [self.summary]
        if len(category.items) > 1:
            parts.append(self.picker)
        if category.items:
            parts.append(self.item_panel)
            self.item_panel.set_item(category.items[0])
        self.children = parts

    def select(self, index: int) -> ItemView:
        """Show item ``index`` (as picking it in the dropdown does) and return it."""
        self.picker.value = index
        self.item_panel.set_item(self.category.items[index])
        return self.category.items[index]

    def _pick(self, change: Mapping[str, Any]) -> None:
        if change["new"] is not None:
            self.item_panel.set_item(self.category.items[change["new"]])


class ContextView(widgets.VBox):  # type: ignore[misc]  # ipywidgets ships no type information
    """What the next request holds, by category, against the model's window.

    Built from a :class:`~jupyter_memory.context.assemble.ContextReport`; ``decisions`` are the
    last turn's recall decisions, ``assembled`` the request the report describes (it
    places the cache breakpoints on their items). The state is plain data:
    :attr:`categories`, :attr:`bar_segments`, :attr:`markers`.
    """

    def __init__(
        self,
        report: ContextReport,
        *,
        decisions: Iterable[Mapping[str, Any]] | None = None,
        assembled: AssembledRequest | None = None,
        **kwargs: Any,
    ) -> None:
        super().__init__(**kwargs)
        self.report = report
        self.state: ContextState = context_state(report, decisions=decisions, assembled=assembled)
        state = self.state
        facts = "".join(f"<div>{esc(line)}</div>" for line in context_facts(state))
        self.overview = widgets.HTML(
            style.CSS + "<div class='jm-root'>" + context_header(state) + bar_html(state)
            + legend_html(state)
            + f"<div style='color:{style.FONT_MUTED};font-size:12px'>{facts}</div></div>"
        )
        shown = [c for c in state.categories
                 if c.items or (c.name == "memories" and state.decisions)]
        self.panels = {c.name: CategoryPanel(c, state.decisions, state.source) for c in shown}
        self.accordion = widgets.Accordion(
            children=list(self.panels.values()),
            titles=tuple(f"[{style.swatch(c.name).tag}] {c.name} — {c.tokens:,} tokens "
                         f"({c.percent:.1f}%)" for c in shown),
        )
        self.accordion.selected_index = None
        self.children = [self.overview, self.accordion]
        self.add_class("jm-root")

    # ------------------------------------------------------------------ state

    @property
    def categories(self) -> tuple[CategoryView, ...]:
        return self.state.categories

    @property
    def bar_segments(self) -> tuple[Segment, ...]:
        return self.state.bar_segments

    @property
    def markers(self) -> tuple[Marker, ...]:
        return self.state.markers

    def open_category(self, category: str) -> CategoryPanel:
        """Open the pane of ``category`` and return it."""
        names = list(self.panels)
        if category not in names:
            raise KeyError(f"category {category!r} has nothing to show; open one of "
                           f"{', '.join(names)}")
        self.accordion.selected_index = names.index(category)
        return self.panels[category]

    # ------------------------------------------------------------------ display

    def static_html(self) -> str:
        return context_html(self.state)

    def static_text(self) -> str:
        return context_text(self.report)

    def _repr_mimebundle_(self, **kwargs: Any) -> dict[str, Any]:
        return fallback_bundle(self, self.static_html(), self.static_text(), **kwargs)
