"""``%compact``: summarise the conversation now, clear old tool outputs, or undo.

The output marks the compaction boundary with the size before and after, folds the
summary into a ``<details>`` element, and says how to undo. The earlier conversation is
not lost either way: every agent cell's output keeps its turn record and the session
log keeps every message.
"""

from __future__ import annotations

import json
import sys
from typing import TYPE_CHECKING, Any

from IPython.core.magic import Magics, line_cell_magic, magics_class, no_var_expand
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
from jupyter_memory.commands import MAGIC, HelpShown, parse_prompt
from jupyter_memory.commands.compact import COMPACT, CompactArgs
from jupyter_memory.errors import JupyterMemoryError
from jupyter_memory.magics.commands import magic_doc, usage_error
from jupyter_memory.widgets.compaction import compaction_bundle
from jupyter_memory.widgets.roots import bundle_on_page, on_page
from jupyter_memory.widgets.safe import escape

if TYPE_CHECKING:
    from jupyter_memory.agent.session import Session

PROG = COMPACT.spelling(MAGIC)


@magics_class
class CompactMagics(Magics):
    def __init__(self, shell: Any = None, agent: Any = None, **kwargs: Any) -> None:
        super().__init__(shell=shell, **kwargs)
        self.agent = agent

    @no_var_expand  # the instructions are sent as typed
    @line_cell_magic
    def compact(self, line: str = "", cell: str | None = None) -> None:
        # The docstring is generated from the declaration (magic_doc, after the class).
        try:
            args = parse_prompt(COMPACT, line, cell=cell, stdout=sys.stdout, stderr=sys.stderr)
        except HelpShown:
            return
        except JupyterMemoryError as exc:
            raise usage_error(exc, PROG) from None
        assert isinstance(args, CompactArgs)
        session = self.agent.session()
        try:
            if args.status:
                self._status(session, as_json=args.json)
            elif args.undo:
                self._undo(session)
            elif args.micro:
                self._micro(session)
            else:
                result = compact(session, instructions=args.instructions or None,
                                 trigger="manual")
                self._show(result, session)
        except JupyterMemoryError as exc:
            raise usage_error(exc, PROG) from None

    # ------------------------------------------------------------------ actions

    def _show(self, result: CompactionResult, session: Session) -> None:
        data = result.to_json()
        # What every request carries besides the conversation, so the output can say how
        # much of the size a compaction can change at all.
        data["fixed_tokens"] = fixed_tokens(session)
        display(bundle_on_page(compaction_bundle(data)), raw=True)

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
        print(on_page("\n".join(lines)))


CompactMagics.compact.__doc__ = magic_doc("%compact", """
Compact the agent's conversation so it fits the context window again.

The summary has nine sections (request, concepts, files and code, errors, problem
solving, every user message, pending tasks, current work, next step); "Compact
Instructions" sections in CLAUDE.md files and PreCompact hooks steer it too. The
instructions are the rest of the line, then the cell body (%%compact), exactly as typed.
Automatic compaction happens before a request that would pass the autocompact level;
%context shows the levels.
""", """
%compact                      # summarise now (session notes first, else the model)
%compact keep the plotting code and every number we computed
%%compact                     # the cell body is the instructions
%compact --micro              # only clear old tool outputs (no model call)
%compact --undo               # restore the conversation before the last compaction
%compact --status             # levels, current size, breaker, session notes
%compact --status --json
""")
