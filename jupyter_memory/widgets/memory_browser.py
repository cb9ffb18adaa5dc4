"""The memory browser: find a memory, read it, edit it, forget it, repair the index.

Every change goes through :class:`~jupyter_memory.memdir.store.MemoryStore` (the credential
guard, the lock, atomic writes and index upkeep all apply) and every check through
:mod:`jupyter_memory.memdir.doctor`. Nothing here writes a file itself. The methods the
buttons call (:meth:`save`, :meth:`request_forget`, :meth:`confirm_forget`,
:meth:`repair`, :meth:`refresh`) are public, so scripts and tests drive it the same way.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import ipywidgets as widgets

from jupyter_memory.errors import JupyterMemoryError
from jupyter_memory.memdir import frontmatter
from jupyter_memory.memdir.doctor import Finding, doctor, repair
from jupyter_memory.memdir.freshness import age_text
from jupyter_memory.memdir.record import MEMORY_TYPES, Memory
from jupyter_memory.memdir.store import MemoryChanges, MemoryStore
from jupyter_memory.widgets import style
from jupyter_memory.widgets._base import fallback_bundle
from jupyter_memory.widgets.html import findings_html, memories_html, memories_text
from jupyter_memory.widgets.safe import escape as esc

__all__ = ["MemoryBrowser"]

_OTHER = "other"


def _row_label(m: Memory) -> str:
    size = f"{m.bytes:,} B" if m.bytes < 10_240 else f"{m.bytes / 1024:.1f} KB"
    desc = (m.description or "").replace("\n", " ")
    return (f"{(m.type or '—')[:9]:<9} {m.name[:24]:<24} {desc[:44]:<44} "
            f"{age_text(m.age_days):>11} {size:>8}  {'yes' if m.indexed else 'NO'}")


_HEADER = f"{'type':<9} {'name':<24} {'description':<44} {'age':>11} {'size':>8}  indexed"


class MemoryBrowser(widgets.VBox):  # type: ignore[misc]  # ipywidgets ships no type information
    """A filterable table of a memdir's memories with an editor and the doctor's findings.

    ``env`` and ``check_projects`` are passed to :func:`~jupyter_memory.memdir.doctor.doctor`
    (``check_projects=False`` skips looking for orphaned project memdirs).
    """

    def __init__(
        self,
        store: MemoryStore,
        *,
        env: Mapping[str, str] | None = None,
        check_projects: bool = True,
        **kwargs: Any,
    ) -> None:
        super().__init__(**kwargs)
        self.store = store
        self.env = env
        self.check_projects = check_projects
        self.memories: list[Memory] = []
        self.findings: list[Finding] = []
        self.selected: Memory | None = None
        self.status_text = ""
        self._body = ""
        self._syncing = False
        self._build()
        self.refresh()

    # ------------------------------------------------------------------ layout

    def _build(self) -> None:
        full = widgets.Layout(width="98%")
        self.type_filter = widgets.Dropdown(
            options=[("all types", ""), *((t, t) for t in MEMORY_TYPES), ("other / none", _OTHER)],
            value="", description="Type:", layout=widgets.Layout(width="220px"),
        )
        self.text_filter = widgets.Text(
            value="", placeholder="name, description or file", description="Filter:",
            continuous_update=True, layout=widgets.Layout(width="340px"),
        )
        self.refresh_button = widgets.Button(description="Refresh", icon="refresh",
                                             tooltip="Read the memdir and run the doctor again")
        self.count = widgets.Label()
        self.table_header = widgets.HTML(f"<pre style='margin:0;font-family:{style.MONO};"
                                         f"font-size:12px'>{esc(_HEADER)}</pre>")
        self.table = widgets.Select(options=[], rows=10, layout=full)
        self.table.add_class("jm-mono")
        self.detail_header = widgets.HTML()
        self.description = widgets.Text(description="Description:", layout=full,
                                        style={"description_width": "initial"})
        self.editor = widgets.Textarea(layout=widgets.Layout(width="98%", height="16em"))
        self.editor.add_class("jm-mono")
        self.save_button = widgets.Button(description="Save", icon="save", button_style="primary",
                                          tooltip="Write the description and text back")
        self.forget_button = widgets.Button(description="Forget…", icon="trash",
                                            tooltip="Delete this memory and its index line")
        self.confirm_text = widgets.HTML()
        self.confirm_button = widgets.Button(description="Yes, forget it", icon="trash",
                                             button_style="danger")
        self.cancel_button = widgets.Button(description="Keep it")
        self.confirm_box = widgets.HBox(
            [self.confirm_text, self.confirm_button, self.cancel_button],
            layout=widgets.Layout(display="none"),
        )
        self.detail = widgets.VBox(
            [self.detail_header, self.description, self.editor,
             widgets.HBox([self.save_button, self.forget_button]), self.confirm_box],
            layout=widgets.Layout(display="none"),
        )
        self.findings_view = widgets.HTML()
        self.repair_button = widgets.Button(
            description="Repair", icon="wrench",
            tooltip="Fix index problems that are safe to fix; no memory file is deleted")
        self.status = widgets.HTML()

        self.type_filter.observe(self._filter_changed, names="value")
        self.text_filter.observe(self._filter_changed, names="value")
        self.table.observe(self._picked, names="value")
        self.refresh_button.on_click(lambda _b: self.refresh())
        self.save_button.on_click(lambda _b: self.save())
        self.forget_button.on_click(lambda _b: self.request_forget())
        self.confirm_button.on_click(lambda _b: self.confirm_forget())
        self.cancel_button.on_click(lambda _b: self.cancel_forget())
        self.repair_button.on_click(lambda _b: self.repair())

        self.children = [
            widgets.HTML(style.CSS + f"<div class='jm-root'><b>Memories</b> · "
                         f"<code>{esc(self.store.memdir)}</code></div>"),
            widgets.HBox([self.type_filter, self.text_filter, self.refresh_button, self.count]),
            self.table_header, self.table, self.detail,
            widgets.HTML("<b>Doctor</b>"), self.findings_view, self.repair_button, self.status,
        ]

    # ------------------------------------------------------------------ state

    @property
    def rows(self) -> list[Memory]:
        """The memories that pass the type and text filters, newest first."""
        kind = self.type_filter.value
        needle = self.text_filter.value.strip().casefold()
        out = []
        for m in self.memories:
            if kind == _OTHER and m.type_known:
                continue
            if kind and kind != _OTHER and m.type != kind:
                continue
            if needle and needle not in f"{m.name}\n{m.description or ''}\n{m.file}".casefold():
                continue
            out.append(m)
        return out

    def set_filter(self, type: str | None = None, text: str | None = None) -> list[Memory]:
        """Set the filters (as typing in them does) and return the rows that remain."""
        if type is not None:
            self.type_filter.value = type
        if text is not None:
            self.text_filter.value = text
        return self.rows

    def refresh(self) -> None:
        """Re-read the memdir and re-run the doctor; keeps the selection when it still exists."""
        self.memories = self.store.list()
        self.findings = doctor(self.store, env=self.env, check_projects=self.check_projects)
        if self.selected is not None:
            fresh = next((m for m in self.memories if m.file == self.selected.file), None)
            if fresh is None:
                self._clear_selection()
            else:
                self.selected = fresh
                self._show_header(fresh)
        self._fill_table()
        self._show_findings()

    def select(self, file: str) -> Memory:
        """Open memory ``file`` in the editor (as clicking its row does)."""
        memory = next((m for m in self.memories if m.file == file), None)
        if memory is None:
            raise JupyterMemoryError(f"{file} is not among the memories listed; refresh the "
                                     "browser if it was just created.")
        self._load(memory)
        self._fill_table()
        return memory

    # ------------------------------------------------------------------ actions

    def save(self) -> bool:
        """Write the edited description and text through ``store.update``; True if written."""
        memory = self.selected
        if memory is None:
            self._say("Select a memory first.", "warning")
            return False
        changes: MemoryChanges = {}
        if self.editor.value != self._body:
            changes["body"] = self.editor.value
        if self.description.value.strip() != (memory.description or ""):
            changes["description"] = self.description.value
        if not changes:
            self._say(f"Nothing changed in {memory.file}.", "info")
            return False
        try:
            result = self.store.update(memory.file, **changes)
        except JupyterMemoryError as exc:
            self._say(f"Not saved: {exc}", "error")
            return False
        self.refresh()
        self.select(memory.file)
        notes = " ".join(result.messages)
        self._say(f"Saved {result.file}." + (f" {notes}" if notes else ""), "info")
        return True

    def request_forget(self) -> None:
        """Ask for confirmation before forgetting the selected memory."""
        memory = self.selected
        if memory is None:
            self._say("Select a memory first.", "warning")
            return
        self.confirm_text.value = (f"Forget <code>{esc(memory.file)}</code>? The file and its "
                                   "line in MEMORY.md are deleted.")
        self.confirm_box.layout.display = "flex"

    @property
    def confirming(self) -> bool:
        display: object = self.confirm_box.layout.display
        return display != "none"

    def confirm_forget(self) -> bool:
        """Forget the selected memory through ``store.forget``, once :meth:`request_forget`
        has asked for confirmation; True when it was forgotten."""
        memory = self.selected
        if memory is None or not self.confirming:
            self._say("Press Forget… first, then confirm.", "warning")
            return False
        self.confirm_box.layout.display = "none"
        try:
            self.store.forget(memory.file)
        except JupyterMemoryError as exc:
            self._say(f"Not forgotten: {exc}", "error")
            return False
        self._clear_selection()
        self.refresh()
        self._say(f"Forgot {memory.file}.", "info")
        return True

    def cancel_forget(self) -> None:
        self.confirm_box.layout.display = "none"
        self._say("Kept.", "info")

    def repair(self) -> list[str]:
        """Run :func:`~jupyter_memory.memdir.doctor.repair`; returns what it fixed."""
        try:
            report = repair(self.store, env=self.env)
        except JupyterMemoryError as exc:
            self._say(f"Repair stopped: {exc}", "error")
            return []
        self.refresh()
        done = list(report.fixed) or ["nothing needed fixing"]
        left = len(self.findings)
        self._say("Repair: " + "; ".join(done) + f". {left} finding(s) left.", "info")
        return list(report.fixed)

    # ------------------------------------------------------------------ internals

    def _filter_changed(self, _change: Any) -> None:
        self._fill_table()

    def _fill_table(self) -> None:
        rows = self.rows
        self._syncing = True
        try:
            self.table.options = [(_row_label(m), m.file) for m in rows]
            files = {m.file for m in rows}
            self.table.value = (self.selected.file if self.selected is not None
                                and self.selected.file in files else None)
        finally:
            self._syncing = False
        total = len(self.memories)
        self.count.value = (f"{len(rows)} of {total} memories" if len(rows) != total
                            else f"{total} memories")

    def _picked(self, change: Mapping[str, Any]) -> None:
        if self._syncing or change["new"] is None:
            return
        if self.selected is not None and change["new"] == self.selected.file:
            return
        memory = next((m for m in self.memories if m.file == change["new"]), None)
        if memory is not None:
            self._load(memory)

    def _load(self, memory: Memory) -> None:
        try:
            text = self.store.read(memory.file)
        except JupyterMemoryError as exc:
            self._say(f"Could not open {memory.file}: {exc}", "error")
            return
        self.selected = memory
        self._body = frontmatter.parse(text).body
        self.editor.value = self._body
        self.description.value = memory.description or ""
        self._show_header(memory)
        self.confirm_box.layout.display = "none"
        self.detail.layout.display = "flex"

    def _show_header(self, m: Memory) -> None:
        facts = [f"type {m.type or 'none'}", f"written {age_text(m.age_days)}",
                 f"{m.bytes:,} bytes",
                 "in MEMORY.md" if m.indexed else "NOT in MEMORY.md (index recall cannot see it)"]
        if m.provenance:
            facts.append(f"written by {m.provenance}")
        if m.error:
            facts.append(f"header problem: {m.error}")
        self.detail_header.value = (
            f"<div class='jm-root'><b>{esc(m.name)}</b> · <code>{esc(m.file)}</code><br>"
            f"{esc(' · '.join(facts))}</div>"
        )

    def _clear_selection(self) -> None:
        self.selected = None
        self._body = ""
        self.editor.value = ""
        self.description.value = ""
        self.detail.layout.display = "none"
        self.confirm_box.layout.display = "none"

    def _show_findings(self) -> None:
        self.findings_view.value = f"<div class='jm-root'>{findings_html(self.findings)}</div>"
        self.repair_button.disabled = not any(f.fixable for f in self.findings)

    def _say(self, text: str, level: str) -> None:
        self.status_text = text
        ink = {"error": style.ERROR, "warning": style.WARN}.get(level, style.FONT)
        word = {"error": "Error: ", "warning": "Note: "}.get(level, "")
        self.status.value = f"<div class='jm-root' style='color:{ink}'>{esc(word + text)}</div>"

    # ------------------------------------------------------------------ display

    def static_html(self) -> str:
        return memories_html(self.memories, self.findings)

    def static_text(self) -> str:
        return memories_text(self.memories, self.findings)

    def _repr_mimebundle_(self, **kwargs: Any) -> dict[str, Any]:
        return fallback_bundle(self, self.static_html(), self.static_text(), **kwargs)
