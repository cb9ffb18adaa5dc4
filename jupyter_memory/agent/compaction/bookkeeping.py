"""Per-session compaction bookkeeping: the failure count, the breaker, and undo.

One :class:`CompactionState` is a declared field of each session (``session.compaction``),
so the turn hook, ``compact`` and the ``%compact`` magic all see the same state.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Protocol

__all__ = ["MAX_FAILURES", "UNDO_DEPTH", "CompactionState", "UndoEntry", "state_of"]

#: Consecutive failed automatic compactions after which no more are attempted.
MAX_FAILURES = 3
#: Compactions that can be undone, newest last; older ones drop off.
UNDO_DEPTH = 10


@dataclass
class UndoEntry:
    """What one compaction (or microcompact) replaced, to put it back on request.

    ``before`` is the conversation just before; ``after`` the conversation it left.
    Messages appended since then are the ones in the session that are not in ``after``.
    References to ``after`` are kept so identity checks stay valid.
    """

    kind: str  # "compact" | "micro"
    before: list[dict[str, Any]]
    after: list[dict[str, Any]]
    description: str
    result: Any = None


@dataclass
class CompactionState:
    """What the session remembers about its compactions."""

    consecutive_failures: int = 0
    breaker_open: bool = False
    last_answer_at: float | None = None
    undo: list[UndoEntry] = field(default_factory=list)
    results: list[Any] = field(default_factory=list)
    last_error: str | None = None

    def failed(self, reason: str) -> bool:
        """Count an automatic failure; True when this one opened the breaker."""
        self.consecutive_failures += 1
        self.last_error = reason
        if self.consecutive_failures >= MAX_FAILURES and not self.breaker_open:
            self.breaker_open = True
            return True
        return False

    def succeeded(self) -> None:
        self.consecutive_failures = 0
        self.breaker_open = False
        self.last_error = None

    def push(self, entry: UndoEntry) -> None:
        self.undo.append(entry)
        del self.undo[:-UNDO_DEPTH]


class HasCompactionState(Protocol):
    @property
    def compaction(self) -> CompactionState: ...


def state_of(session: HasCompactionState) -> CompactionState:
    """The compaction state of ``session`` (its ``compaction`` field)."""
    return session.compaction
