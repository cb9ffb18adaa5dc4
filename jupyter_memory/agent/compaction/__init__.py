"""Compaction: keep the conversation inside the model's context window (docs/reference.md#compaction).

- :func:`microcompact` clears old tool outputs (all but the newest 5), model-free.
- :func:`compact` replaces the conversation with a summary (session notes first, else
  the main model), then re-attaches recently read files and re-reads the instruction file.
- :class:`CompactionHook` does both automatically before model calls, warns near the
  limit and refuses at the blocking level; :func:`undo` restores what was replaced.

See ``docs/compaction.md`` for the thresholds and a worked example.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from jupyter_memory.agent.compaction.bookkeeping import (
    MAX_FAILURES,
    CompactionState,
    UndoEntry,
    state_of,
)
from jupyter_memory.agent.compaction.budget import (
    estimate_next_request,
    session_model_info,
    session_thresholds,
)
from jupyter_memory.agent.compaction.core import (
    INSERTED_KINDS,
    MAX_TOO_LONG_RETRIES,
    SUMMARY_KIND,
    CompactionResult,
    compact,
    drop_point,
    undo,
)
from jupyter_memory.agent.compaction.errors import (
    CompactionBlocked,
    CompactionError,
    ContextLimitReached,
    NothingToCompact,
    NothingToUndo,
    SummaryFailed,
)
from jupyter_memory.agent.compaction.hook import IDLE_MINUTES, CompactionHook
from jupyter_memory.agent.compaction.micro import (
    CLEARED_MARKER,
    COMPACTABLE_TOOLS,
    KEEP_RECENT,
    microcompact,
)
from jupyter_memory.agent.compaction.prompt import (
    SUMMARY_REQUEST_HEAD,
    extract_summary,
    summary_prompt,
)
from jupyter_memory.agent.compaction.restore import FILE_KIND, FILE_TOKENS, MAX_FILES, TOTAL_TOKENS
from jupyter_memory.agent.compaction.sections import SUMMARY_SECTIONS, summary_sections

if TYPE_CHECKING:
    from jupyter_memory.agent.compaction.host import CompactingSession

__all__ = [
    "CLEARED_MARKER",
    "COMPACTABLE_TOOLS",
    "FILE_KIND",
    "FILE_TOKENS",
    "IDLE_MINUTES",
    "INSERTED_KINDS",
    "KEEP_RECENT",
    "MAX_FAILURES",
    "MAX_FILES",
    "MAX_TOO_LONG_RETRIES",
    "SUMMARY_KIND",
    "SUMMARY_REQUEST_HEAD",
    "SUMMARY_SECTIONS",
    "TOTAL_TOKENS",
    "CompactionBlocked",
    "CompactionError",
    "CompactionHook",
    "CompactionResult",
    "CompactionState",
    "ContextLimitReached",
    "NothingToCompact",
    "NothingToUndo",
    "SummaryFailed",
    "UndoEntry",
    "compact",
    "drop_point",
    "estimate_next_request",
    "extract_summary",
    "microcompact",
    "session_thresholds",
    "state_of",
    "status",
    "summary_prompt",
    "summary_sections",
    "undo",
]


def status(session: CompactingSession) -> dict[str, Any]:
    """Levels, current size, breaker and notes of ``session``: what ``%compact --status`` shows."""
    th = session_thresholds(session)
    tokens = estimate_next_request(session)
    state = session.compaction
    memory = session.notes
    notes = memory.read()
    return {
        "model": session.config.model,
        "tokens": tokens,
        "level": th.level(tokens),
        "thresholds": th.to_json(),
        "model_window": session_model_info(session).model_window,
        "consecutive_failures": state.consecutive_failures,
        "breaker_open": state.breaker_open,
        "last_error": state.last_error,
        "compactions": len(state.results),
        "undo_available": len(state.undo),
        "session_memory": {
            "enabled": memory.enabled,
            "path": str(memory.path),
            "exists": notes is not None,
            "updates": memory.updates,
            "running": memory.running,
            "last_error": memory.last_error,
        },
    }
