"""The turn hook that watches the context before every model call (docs/reference.md#compaction).

Before each call: after an idle gap (the prompt cache has expired anyway) old tool
outputs are cleared; past the autocompact level the conversation is compacted; past
the warning level a warning is shown once per turn; at the blocking level the request
is refused with a clear error (the agent loop reports it and keeps the conversation
consistent). Three automatic failures in a row open a breaker for the session.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any

from jupyter_memory.agent.compaction.bookkeeping import MAX_FAILURES
from jupyter_memory.agent.compaction.budget import (
    estimate_next_request,
    percent,
    session_thresholds,
)
from jupyter_memory.agent.compaction.core import INSERTED_KINDS, compact, kind_of
from jupyter_memory.agent.compaction.errors import ContextLimitReached
from jupyter_memory.agent.compaction.micro import microcompact
from jupyter_memory.agent.failures import describe_background_failure
from jupyter_memory.agent.hooks import TurnHook, TurnInProgress, TurnOutcome

if TYPE_CHECKING:
    from jupyter_memory.agent.compaction.host import CompactingSession

#: Minutes without an answer after which old tool outputs are cleared (the reference's
#: trigger: by then the 5-minute prompt cache has long expired).
IDLE_MINUTES = 60.0


class CompactionHook(TurnHook):
    """Keep every request under the model's window (``session.compactor``).

    ``auto`` and ``idle_minutes`` default to the session config's ``auto_compact`` (True)
    and ``microcompact_idle_minutes`` (60; 0 turns the idle trigger off). ``clock``
    gives seconds (``time.time``), replaceable in tests.
    """

    def __init__(
        self,
        session: CompactingSession,
        *,
        auto: bool | None = None,
        idle_minutes: float | None = None,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self.session = session
        self._auto = auto
        self._idle = idle_minutes
        self.clock = clock

    @property
    def auto(self) -> bool:
        if self._auto is not None:
            return self._auto
        return bool(self.session.config.auto_compact)

    @property
    def idle_minutes(self) -> float:
        if self._idle is not None:
            return self._idle
        return float(self.session.config.microcompact_idle_minutes or 0)

    # ------------------------------------------------------------------ turn hooks

    def before_call(self, turn: TurnInProgress, round_index: int) -> None:
        session = self.session
        if round_index == 0:
            self._idle_microcompact(turn)
        th = session_thresholds(session)
        tokens = estimate_next_request(session)
        if self.auto and tokens >= th.autocompact:
            tokens = self._make_room(turn, tokens)
        if tokens >= th.blocking:
            raise ContextLimitReached(
                f"The next request would need about {tokens:,} tokens, past the blocking "
                f"level of {th.blocking:,} for {session.config.model} (window "
                f"{th.window:,}). Run %compact to summarise the conversation (or "
                "%compact --micro to clear old tool outputs), then run the cell again."
            )
        if tokens >= th.warning and not turn.extra.get("context_warned"):
            turn.extra["context_warned"] = True
            then = (f"automatic compaction starts at {th.autocompact:,}" if self.auto else
                    f"automatic compaction is off, and requests are refused from "
                    f"{th.blocking:,}")
            turn.note(
                "warning",
                f"Context is at {tokens:,} tokens ({percent(tokens, th.window)}% of "
                f"{th.window:,}); {then}.",
            )

    def record_fields(self, turn: TurnInProgress) -> Mapping[str, Any] | None:
        made = turn.extra.get("compactions")
        return {"compactions": [r.to_json() for r in made]} if made else None

    def after_turn(self, turn: TurnInProgress, result: TurnOutcome) -> None:
        if turn.got_response:
            self.session.compaction.last_answer_at = self.clock()

    # ------------------------------------------------------------------ actions

    def _idle_microcompact(self, turn: TurnInProgress) -> None:
        last = self.session.compaction.last_answer_at
        minutes = self.idle_minutes
        if not minutes or last is None:
            return
        idle = (self.clock() - last) / 60.0
        if idle < minutes:
            return
        cleared = microcompact(self.session, trigger="idle")
        if cleared:
            turn.note(
                "compaction",
                f"Cleared {cleared} old tool output{'s' if cleared != 1 else ''} after "
                f"{idle:.0f} minutes idle (the prompt cache had expired anyway). "
                "%compact --undo brings them back.",
            )

    def _make_room(self, turn: TurnInProgress, tokens: int) -> int:
        """Compact (then clear old tool outputs if still needed); return the new size."""
        session = self.session
        state = session.compaction
        th = session_thresholds(session)
        owned = {id(m) for m in turn.added}
        first = next((i for i, m in enumerate(session.messages) if id(m) in owned),
                     len(session.messages))
        history = session.messages[:first]
        worth_it = any(kind_of(m) not in INSERTED_KINDS for m in history)
        if state.breaker_open:
            if not turn.extra.get("breaker_noted"):
                turn.extra["breaker_noted"] = True
                turn.note("warning", _BREAKER_TEXT)
        elif worth_it:
            try:
                result = compact(session, trigger="auto", client=turn.client,
                                 keep_tail=turn.added)
            except Exception as exc:  # any failure: count it, keep the turn going
                reason = describe_background_failure(exc, "compacting the conversation")
                opened = state.failed(reason)
                turn.note("warning", f"Automatic compaction failed: {reason}")
                if opened:
                    turn.extra["breaker_noted"] = True  # said once per turn
                    turn.note("warning", _BREAKER_TEXT)
            else:
                turn.extra.setdefault("compactions", []).append(result)
                how = "from the session notes" if result.method == "session_memory" else (
                    "with the main model")
                turn.note(
                    "compaction",
                    f"Conversation compacted automatically {how}: {result.pre_tokens:,} → "
                    f"{result.post_tokens:,} tokens. %compact --undo restores it.",
                )
            tokens = estimate_next_request(session)
        if tokens >= th.autocompact:
            cleared = microcompact(session, trigger="auto")
            if cleared:
                tokens = estimate_next_request(session)
                turn.note(
                    "compaction",
                    f"Cleared {cleared} old tool output{'s' if cleared != 1 else ''} to stay "
                    f"under the window: now about {tokens:,} tokens.",
                )
        return tokens


_BREAKER_TEXT = (
    f"Automatic compaction failed {MAX_FAILURES} times in a row, so it is off for the rest "
    "of this session. Run %compact by hand (a success turns it back on)."
)
