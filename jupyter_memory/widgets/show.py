"""What the magics call: build a view for a session, display it, hand it back.

``show_context`` backs ``%context`` and ``show_memories`` backs ``%memory`` in a
notebook; ``show_turn`` shows one agent turn. Each displays its view (unless
``display=False``) and returns it, so a caller can keep a handle to it.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

import ipywidgets as widgets

from jupyter_memory.context.assemble import ContextReport
from jupyter_memory.widgets._base import fallback_bundle
from jupyter_memory.widgets.context_view import ContextView
from jupyter_memory.widgets.gauges import BudgetGauges
from jupyter_memory.widgets.memory_browser import MemoryBrowser
from jupyter_memory.widgets.safe import escape as esc
from jupyter_memory.widgets.turn_view import TurnView, UndoCallback

if TYPE_CHECKING:
    from jupyter_memory.agent.session import Session

__all__ = ["ContextPanel", "MemoryOff", "show_context", "show_memories", "show_turn"]


class ContextPanel(widgets.VBox):  # type: ignore[misc]  # ipywidgets ships no type information
    """The context view and the budget gauges of one session, shown together."""

    def __init__(self, context: ContextView, gauges: BudgetGauges, **kwargs: Any) -> None:
        super().__init__(children=[context, gauges], **kwargs)
        self.context = context
        self.gauges = gauges

    @property
    def report(self) -> ContextReport:
        return self.context.report

    def static_html(self) -> str:
        return self.context.static_html() + self.gauges.static_html()

    def static_text(self) -> str:
        return self.context.static_text() + "\n\n" + self.gauges.static_text()

    def _repr_mimebundle_(self, **kwargs: Any) -> dict[str, Any]:
        return fallback_bundle(self, self.static_html(), self.static_text(), **kwargs)


class MemoryOff(widgets.HTML):  # type: ignore[misc]  # ipywidgets ships no type information
    """Shown instead of the browser when memory is off for the session, saying why."""

    def __init__(self, reason: str, **kwargs: Any) -> None:
        self.message = (f"Memory is off for this project ({reason}). Switch it on for this "
                        "session with %memory on.")
        super().__init__(value=f"<div>{esc(self.message)}</div>", **kwargs)

    def _repr_mimebundle_(self, **kwargs: Any) -> dict[str, Any]:
        return fallback_bundle(self, f"<div>{esc(self.message)}</div>", self.message, **kwargs)


def _display(view: Any) -> None:
    from IPython.display import display as ipy_display

    ipy_display(view)


def show_context(
    session: Session,
    *,
    counted_tokens: int | None = None,
    decisions: Iterable[Mapping[str, Any]] | None = None,
    display: bool = True,
) -> ContextPanel:
    """The context view and gauges of ``session``'s next request.

    ``counted_tokens`` is an exact count from the count-tokens endpoint (``%context
    --count``); ``decisions`` are the recall decisions of the last turn, when known.
    """
    report = session.context_report(counted_tokens=counted_tokens)
    view = ContextView(report, decisions=decisions, assembled=session.assemble())
    panel = ContextPanel(view, BudgetGauges.for_report(report, session.messages))
    if display:
        _display(panel)
    return panel


def show_memories(
    session: Session,
    *,
    env: Mapping[str, str] | None = None,
    display: bool = True,
) -> MemoryBrowser | MemoryOff:
    """The memory browser of ``session``'s memdir, or a note saying memory is off."""
    store = session.store
    view: MemoryBrowser | MemoryOff
    if store is None:
        view = MemoryOff(str(session.location.enabled_reason))
    else:
        view = MemoryBrowser(store, env=session.env if env is None else env)
    if display:
        _display(view)
    return view


def show_turn(
    record: Mapping[str, Any],
    *,
    written: Iterable[str] | None = None,
    on_undo: UndoCallback | None = None,
    memdir: Path | str | None = None,
    display: bool = True,
) -> TurnView:
    """One turn record as a :class:`TurnView` (see its parameters)."""
    view = TurnView(record, written=written, on_undo=on_undo, memdir=memdir)
    if display:
        _display(view)
    return view
