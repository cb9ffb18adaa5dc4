"""What can stop a compaction: each error leaves the conversation as it was."""

from __future__ import annotations

from jupyter_memory.errors import JupyterMemoryError

__all__ = [
    "CompactionBlocked",
    "CompactionError",
    "ContextLimitReached",
    "NothingToCompact",
    "NothingToUndo",
    "SummaryFailed",
]


class CompactionError(JupyterMemoryError):
    """A compaction could not be done; the conversation was left as it was."""


class NothingToCompact(CompactionError):
    """The conversation has nothing that a compaction could shorten."""


class CompactionBlocked(CompactionError):
    """A PreCompact lifecycle hook refused the compaction."""


class SummaryFailed(CompactionError):
    """The model did not produce a usable summary."""


class ContextLimitReached(CompactionError):
    """The next request would pass the blocking level of the model's window."""


class NothingToUndo(CompactionError):
    """No compaction of this session is left to undo."""
