"""``%compact``: summarise the conversation now, clear old tool outputs, or undo.

The output marks the compaction boundary with the size before and after, folds the
summary into a ``<details>`` element, and says how to undo. The earlier conversation is
not lost either way: every agent cell's output keeps its turn record and the session
log keeps every message.
"""

from __future__ import annotations

import html
import json
import re
from typing import Any

from IPython.core.error import UsageError
from IPython.core.magic import Magics, line_cell_magic, magics_class
from IPython.display import display

from jupyter_memory.agent.compaction import (
    CompactionResult,
    compact,
    estimate_next_request,
    microcompact,
    status,
    undo,
)
from jupyter_memory.agent.compaction.budget import fixed_tokens
from jupyter_memory.context.tokens import estimate_tokens
from jupyter_memory.errors import JupyterMemoryError
from jupyter_memory.magics.render import markdown_to_html

COMPACTION_MIME = "application/vnd.jupyter-memory.compaction+json"
FLAGS = ("--micro", "--undo", "--status", "--json")
_LEADING_FLAG = re.compile(r"^\s*(--[A-Za-z-]+)(?=\s|$)")


def parse_line(line: str) -> tuple[set[str], str]:
    """Leading ``--flags`` and the free-text instructions after them (kept verbatim)."""
    flags: set[str] = set()
    rest = line
    while (match := _LEADING_FLAG.match(rest)) is not None:
        flag = match.group(1)
        if flag not in FLAGS:
            raise ValueError(f"unknown option {flag}; use one of {', '.join(FLAGS)}")
        flags.add(flag)
        rest = rest[match.end():]
    return flags, rest.strip()


def _method_words(data: dict[str, Any]) -> str:
    return "from the session notes" if data.get("method") == "session_memory" else (
        "by the main model")


def compaction_breakdown(data: dict[str, Any]) -> list[str]:
    """Why the size changed as it did, in sentences: what stays, what replaced what.

    A compaction replaces only the conversation. The system prompt, tools, instructions
    and memory index are sent either way, and the summary, the re-attached files and any
    messages kept word for word take the conversation's place, so a short conversation
    can come out the same size or bigger. ``fixed_tokens`` (the part that is always sent)
    is in the records ``%compact`` displays; records without it get the rest.
    """
    pre, post = int(data.get("pre_tokens") or 0), int(data.get("post_tokens") or 0)
    summary = estimate_tokens(str(data.get("summary") or ""))
    files = data.get("files") or []
    file_tokens = sum(int(f.get("tokens") or 0) for f in files)
    kept = int(data.get("kept_messages") or 0)
    lines = []
    if post >= pre:
        lines.append(
            "The request did not shrink: the conversation was already shorter than what "
            "replaces it. Compaction pays off on a long conversation; %compact --undo puts "
            "this one back.")
    fixed = data.get("fixed_tokens")
    if isinstance(fixed, int) and 0 < fixed <= max(pre, post):
        lines.append(
            f"Only the conversation is replaced: about {max(pre - fixed, 0):,} → "
            f"{max(post - fixed, 0):,} tokens. The system prompt, tools, instructions and "
            f"memory index (about {fixed:,} tokens) are sent either way.")
    now = [f"the summary (about {summary:,} tokens)"]
    if files:
        now.append(f"{len(files)} re-attached file{'s' if len(files) != 1 else ''} "
                   f"({file_tokens:,} tokens)")
    if kept:
        now.append(f"the {kept} most recent message{'s' if kept != 1 else ''} word for word")
    lines.append("In the conversation's place: " + ", ".join(now) + ".")
    return lines


def compaction_text(data: dict[str, Any]) -> str:
    """Plain-text view of a compaction record (``CompactionResult.to_json()``)."""
    lines = [
        f"──── Conversation compacted ({data.get('trigger', 'manual')}, summary "
        f"{_method_words(data)}): {data.get('pre_tokens', 0):,} → "
        f"{data.get('post_tokens', 0):,} tokens ────",
    ]
    lines += compaction_breakdown(data)
    files = data.get("files") or []
    if files:
        lines.append("Re-attached files: " + ", ".join(f["path"] for f in files))
    if data.get("kept_messages"):
        lines.append(f"Kept word for word: the {data['kept_messages']} most recent messages")
    for text in data.get("post_hook_output") or []:
        lines.append(f"PostCompact hook: {text}")
    for text in data.get("warnings") or []:
        lines.append(f"Warning: {text}")
    lines += ["", "Summary:", data.get("summary", ""), "",
              "Undo with %compact --undo (the earlier conversation is in the cell outputs "
              "above and in the session log)."]
    return "\n".join(lines)


def compaction_html(data: dict[str, Any]) -> str:
    """HTML view: the boundary line, the summary folded, the way back."""
    esc = html.escape
    head = (
        f"Conversation compacted ({esc(str(data.get('trigger', 'manual')))}, summary "
        f"{_method_words(data)}): <b>{data.get('pre_tokens', 0):,}</b> → "
        f"<b>{data.get('post_tokens', 0):,}</b> tokens"
    )
    parts = [
        "<div class='jupyter-memory-compaction'>",
        "<div style='border-top:2px dashed #999;border-bottom:2px dashed #999;padding:4px 0;"
        f"margin:6px 0;text-align:center'>{head}</div>",
        "".join(f"<p style='margin:2px 0'>{esc(line)}</p>" for line in compaction_breakdown(data)),
        "<details><summary>Summary (click to open)</summary>"
        f"{markdown_to_html(str(data.get('summary', '')))}</details>",
    ]
    files = data.get("files") or []
    if files:
        items = "".join(
            f"<li><code>{esc(f['path'])}</code> ({f.get('tokens', 0):,} tokens"
            f"{', cut' if f.get('truncated') else ''})</li>" for f in files)
        parts.append(f"<details><summary>Re-attached files ({len(files)})</summary>"
                     f"<ul>{items}</ul></details>")
    if data.get("kept_messages"):
        parts.append(f"<p>Kept word for word: the {data['kept_messages']} most recent "
                     "messages.</p>")
    for text in data.get("post_hook_output") or []:
        parts.append(f"<blockquote><b>PostCompact hook</b>: {esc(text)}</blockquote>")
    for text in data.get("warnings") or []:
        parts.append(f"<blockquote><b>warning</b>: {esc(text)}</blockquote>")
    log = data.get("transcript_path")
    where = f" and in the session log <code>{esc(log)}</code>" if log else ""
    parts.append(
        "<p><sub>Undo with <code>%compact --undo</code>. The earlier conversation is kept in "
        f"the cell outputs above{where}.</sub></p></div>"
    )
    return "".join(parts)


def compaction_bundle(data: dict[str, Any]) -> dict[str, Any]:
    """Output bundle of a compaction: the record, HTML and plain text."""
    return {
        COMPACTION_MIME: data,
        "text/html": compaction_html(data),
        "text/plain": compaction_text(data),
    }


@magics_class
class CompactMagics(Magics):
    def __init__(self, shell: Any = None, agent: Any = None, **kwargs: Any) -> None:
        super().__init__(shell=shell, **kwargs)
        self.agent = agent

    @line_cell_magic
    def compact(self, line: str = "", cell: str | None = None) -> None:
        """Compact the agent's conversation so it fits the context window again.

        Usage::

            %compact                      # summarise now (session notes first, else the model)
            %compact keep the plotting code and every number we computed
            %%compact                     # the cell body is the instructions
            %compact --micro              # only clear old tool outputs (no model call)
            %compact --undo               # restore the conversation before the last compaction
            %compact --status             # levels, current size, breaker, session notes
            %compact --status --json

        The summary has nine sections (request, concepts, files and code, errors, problem
        solving, every user message, pending tasks, current work, next step); "Compact
        Instructions" sections in CLAUDE.md files and PreCompact hooks steer it too.
        Automatic compaction happens before a request that would pass the autocompact
        level; ``%context`` shows the levels.
        """
        try:
            flags, text = parse_line(line)
        except ValueError as exc:
            raise UsageError(f"%compact: {exc}") from None
        if cell is not None and cell.strip():
            text = f"{text}\n{cell.strip()}".strip()
        session = self.agent.session()
        try:
            if "--status" in flags:
                self._status(session, as_json="--json" in flags)
            elif "--undo" in flags:
                self._undo(session)
            elif "--micro" in flags:
                self._micro(session)
            else:
                result = compact(session, instructions=text or None, trigger="manual")
                self._show(result, session)
        except JupyterMemoryError as exc:
            raise UsageError(f"%compact: {exc}") from None

    # ------------------------------------------------------------------ actions

    def _show(self, result: CompactionResult, session: Any) -> None:
        data = result.to_json()
        # What every request carries besides the conversation, so the output can say how
        # much of the size a compaction can change at all.
        data["fixed_tokens"] = fixed_tokens(session)
        display(compaction_bundle(data), raw=True)

    def _micro(self, session: Any) -> None:
        before = estimate_next_request(session)
        cleared = microcompact(session)
        if not cleared:
            print("Nothing to clear: at most the 5 newest tool outputs are in the conversation "
                  "(or older ones were cleared already).")
            return
        after = estimate_next_request(session)
        text = (f"Cleared {cleared} old tool output{'s' if cleared != 1 else ''}: "
                f"{before:,} → {after:,} tokens. Undo with %compact --undo.")
        display({"text/plain": text, "text/html": f"<p>{html.escape(text)}</p>"}, raw=True)

    def _undo(self, session: Any) -> None:
        entry = undo(session)
        tokens = estimate_next_request(session)
        text = (f"Restored the conversation from before the {entry.description}: "
                f"{len(session.messages)} messages, about {tokens:,} tokens.")
        display({"text/plain": text, "text/html": f"<p>{html.escape(text)}</p>"}, raw=True)

    def _status(self, session: Any, *, as_json: bool) -> None:
        data = status(session)
        if as_json:
            print(json.dumps(data, indent=2))
            return
        th = data["thresholds"]
        lines = [
            f"Model {data['model']}: about {data['tokens']:,} tokens now ({data['level']}).",
            f"Levels: warning {th['warning']:,} · autocompact {th['autocompact']:,} · "
            f"blocking {th['blocking']:,} (effective window {th['effective']:,} of "
            f"{th['window']:,}).",
            f"Compactions this session: {data['compactions']}; undo available: "
            f"{data['undo_available']}.",
        ]
        if data["breaker_open"]:
            lines.append("Automatic compaction is OFF after repeated failures "
                         f"(last: {data['last_error']}); %compact by hand turns it back on.")
        elif data["consecutive_failures"]:
            lines.append(f"Automatic compaction failed {data['consecutive_failures']} time(s) "
                         "in a row.")
        notes = data["session_memory"]
        if notes is not None:
            lines.append(
                f"Session notes: {'on' if notes['enabled'] else 'off'}, "
                f"{'written' if notes['exists'] else 'not written yet'} ({notes['path']})."
            )
        print("\n".join(lines))
