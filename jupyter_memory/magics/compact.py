"""``%compact``: summarise the conversation now, clear old tool outputs, or undo.

The output marks the compaction boundary with the size before and after, folds the
summary into a ``<details>`` element, and says how to undo. The earlier conversation is
not lost either way: every agent cell's output keeps its turn record and the session
log keeps every message.
"""

from __future__ import annotations

import json
import re
from typing import TYPE_CHECKING, Any

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
from jupyter_memory.errors import JupyterMemoryError
from jupyter_memory.widgets.compaction import compaction_bundle
from jupyter_memory.widgets.safe import escape

if TYPE_CHECKING:
    from jupyter_memory.agent.session import Session

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

    def _show(self, result: CompactionResult, session: Session) -> None:
        data = result.to_json()
        # What every request carries besides the conversation, so the output can say how
        # much of the size a compaction can change at all.
        data["fixed_tokens"] = fixed_tokens(session)
        display(compaction_bundle(data), raw=True)

    def _micro(self, session: Session) -> None:
        before = estimate_next_request(session)
        cleared = microcompact(session)
        if not cleared:
            print("Nothing to clear: at most the 5 newest tool outputs are in the conversation "
                  "(or older ones were cleared already).")
            return
        after = estimate_next_request(session)
        text = (f"Cleared {cleared} old tool output{'s' if cleared != 1 else ''}: "
                f"{before:,} → {after:,} tokens. Undo with %compact --undo.")
        display({"text/plain": text, "text/html": f"<p>{escape(text)}</p>"}, raw=True)

    def _undo(self, session: Session) -> None:
        entry = undo(session)
        tokens = estimate_next_request(session)
        text = (f"Restored the conversation from before the {entry.description}: "
                f"{len(session.messages)} messages, about {tokens:,} tokens.")
        display({"text/plain": text, "text/html": f"<p>{escape(text)}</p>"}, raw=True)

    def _status(self, session: Session, *, as_json: bool) -> None:
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
        ]
        if data.get("model_window"):
            lines.append(f"The window of {th['window']:,} is set by Agent.context_window "
                         f"({data['model']}'s own is {data['model_window']:,}).")
        lines += [
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
