"""The turn view: one agent turn as it reads best live.

The answer first-class (Markdown), each tool call folded with its input and result, the
memories the turn recalled, read and wrote, and, when the extraction agent saved
memories after the turn, a notice with an Undo button. Undo is the caller's callback:
this view never deletes anything itself.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from typing import Any

import ipywidgets as widgets

from jupyter_memory.context.request_parts import expand_request, readable, record_lookup
from jupyter_memory.errors import JupyterMemoryError
from jupyter_memory.widgets import style
from jupyter_memory.widgets._base import fallback_bundle
from jupyter_memory.widgets.data import TurnMemories, turn_memories
from jupyter_memory.widgets.html import turn_html, turn_memories_html, turn_text
from jupyter_memory.widgets.render import usage_words
from jupyter_memory.widgets.safe import escape as esc
from jupyter_memory.widgets.safe import markdown_html

__all__ = ["TurnView"]

UndoCallback = Callable[[list[str]], Any]


def _footer(record: Mapping[str, Any]) -> str:
    usage = record.get("usage") or {}
    ctx = record.get("context") or {}
    bits = [f"turn {record.get('turn', '?')}", str(record.get("model") or "")]
    if usage:
        bits.append(usage_words(record))
    if ctx.get("window"):
        bits.append(f"context {ctx.get('used', 0):,} / {ctx['window']:,}")
    return " · ".join(b for b in bits if b)


class TurnView(widgets.VBox):  # type: ignore[misc]  # ipywidgets ships no type information
    """One turn record (docs/architecture.md, "The turn record") as a widget.

    The texts the record keeps as parts are put back from the record and the live
    sessions of this kernel (``self.record`` is that readable copy). ``written`` lists the memory files the extraction agent saved after this turn (by
    default the record's ``memories_written`` entries whose ``by`` is ``extraction``);
    ``on_undo(files)`` is called by the Undo button. ``memdir`` lets the view tell which
    Read calls opened memories.
    """

    def __init__(
        self,
        record: Mapping[str, Any],
        *,
        written: Iterable[str] | None = None,
        on_undo: UndoCallback | None = None,
        memdir: Path | str | None = None,
        **kwargs: Any,
    ) -> None:
        super().__init__(**kwargs)
        self.record = readable(record)
        self.memdir = memdir
        self.memories: TurnMemories = turn_memories(self.record, memdir)
        if written is None:
            written = [str(w.get("file")) for w in self.record.get("memories_written") or []
                       if w.get("by") == "extraction"]
        self.written: list[str] = list(written)
        self.on_undo = on_undo
        self.undone = False
        self.status_text = ""

        calls = self.record.get("tool_calls") or []
        self.tools = widgets.Accordion(
            children=[widgets.HTML(self._call_html(c)) for c in calls],
            titles=tuple(f"{'⚠ ' if c.get('is_error') else ''}{c.get('name', '?')} "
                         f"{self._short(c.get('input'))}" for c in calls),
        )
        self.tools.selected_index = None
        self.answer = widgets.HTML(
            "<div class='jm-root'>" + markdown_html(self.record.get("answer") or "_(no answer)_")
            + "</div>")
        events = "".join(f"<blockquote><b>{esc(e.get('kind', ''))}</b>: {esc(e.get('text', ''))}"
                         "</blockquote>" for e in self.record.get("events") or [])
        self.events = widgets.HTML(f"<div class='jm-root'>{events}</div>")
        self.memory_notes = widgets.HTML(turn_memories_html(self.record, memdir))
        self.notice = widgets.HTML()
        self.undo_button = widgets.Button(description="Undo", icon="undo",
                                          tooltip="Remove the memories saved after this turn")
        self.undo_button.on_click(lambda _b: self.undo())
        self.notice_box = widgets.HBox([self.notice, self.undo_button])
        self.footer = widgets.HTML(f"<div class='jm-root' style='color:{style.FONT_MUTED};"
                                   f"font-size:11px'>{esc(_footer(self.record))}</div>")
        children: list[widgets.Widget] = [widgets.HTML(style.CSS)]
        if calls:
            children.append(self.tools)
        self.requests = self._requests_view()
        children += [self.answer, self.events, self.memory_notes]
        if self.written:
            self._show_notice()
            children.append(self.notice_box)
        if self.record.get("requests"):
            children.append(self.requests)
        children.append(self.footer)
        self.children = children

    def _requests_view(self) -> widgets.Accordion:
        """The turn's model requests, each rebuilt exactly when its fold is opened."""
        entries = list(self.record.get("requests") or [])
        view = widgets.Accordion(
            children=[widgets.HTML() for _ in entries],
            titles=tuple(f"Model request {e.get('round', i)} · {str(e.get('digest', ''))[:19]}…"
                         for i, e in enumerate(entries)),
        )
        view.selected_index = None

        def show(change: Mapping[str, Any]) -> None:
            index = change.get("new")
            if index is not None and not view.children[index].value:
                view.children[index].value = self.request_html(index)

        view.observe(show, names="selected_index")
        return view

    def request_html(self, index: int) -> str:
        """Request ``index`` of the turn, rebuilt from its record and this kernel's parts."""
        entry = (self.record.get("requests") or [])[index]
        version = self.record.get("version")
        try:
            body = expand_request(entry, record_lookup(self.record),
                                  version=version if isinstance(version, int) else 1)
        except JupyterMemoryError as exc:
            return f"<div class='jm-root'>{esc(str(exc))}</div>"
        pretty = json.dumps(body, ensure_ascii=False, indent=2)
        return f"<div class='jm-root'><pre>{esc(pretty)}</pre></div>"

    @staticmethod
    def _short(data: Any, limit: int = 80) -> str:
        text = json.dumps(data, ensure_ascii=False)
        return text if len(text) <= limit else text[: limit - 1] + "…"

    @staticmethod
    def _call_html(call: Mapping[str, Any]) -> str:
        flag = "<div><b>The tool reported an error.</b></div>" if call.get("is_error") else ""
        pretty = json.dumps(call.get("input"), ensure_ascii=False, indent=2)
        return (f"<div class='jm-root'>{flag}<div>Input</div><pre>{esc(pretty)}</pre>"
                f"<div>Result</div><pre>{esc(call.get('result', ''))}</pre></div>")

    def _show_notice(self) -> None:
        files = ", ".join(f"<code>{esc(f)}</code>" for f in self.written)
        if self.undone:
            self.notice.value = f"<div class='jm-root'>Undone: removed {files}.</div>"
        else:
            count = len(self.written)
            self.notice.value = (f"<div class='jm-root'>The extraction agent saved {count} "
                                 f"memor{'y' if count == 1 else 'ies'} after this turn: "
                                 f"{files}.</div>")
        self.undo_button.disabled = self.undone or self.on_undo is None
        if self.on_undo is None:
            self.undo_button.tooltip = "Undo is not available here"

    def undo(self) -> bool:
        """Call ``on_undo`` with the written files once; True when it succeeded."""
        if self.undone or not self.written:
            return False
        if self.on_undo is None:
            self.status_text = "Undo is not available: no undo callback was given."
            return False
        try:
            self.on_undo(list(self.written))
        except Exception as exc:  # shown to the person: a button callback has nowhere to raise
            logging.getLogger(__name__).error("undo from the turn view failed", exc_info=True)
            self.status_text = f"Undo failed: {exc}"
            self.notice.value = (f"<div class='jm-root' style='color:{style.ERROR}'>"
                                 f"{esc(self.status_text)}</div>")
            return False
        self.undone = True
        self.status_text = "Undone."
        self._show_notice()
        return True

    # ------------------------------------------------------------------ display

    def static_html(self) -> str:
        return turn_html(self.record, self.memdir, undone=self.undone)

    def static_text(self) -> str:
        return turn_text(self.record)

    def _repr_mimebundle_(self, **kwargs: Any) -> dict[str, Any]:
        return fallback_bundle(self, self.static_html(), self.static_text(), **kwargs)
