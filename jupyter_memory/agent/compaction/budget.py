"""How big the next request is, and which compaction level (docs/reference.md#compaction) that puts it at.

The count follows the reference: the real usage of the last response (which covers
everything up to and including the last assistant message) plus an offline estimate of
the messages appended since. Without usage (a new session, or right after a compaction,
whose stored usage describes a context that no longer exists) the whole request is
estimated offline.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from jupyter_memory.context.models import ModelInfo, Thresholds, model_info, thresholds
from jupyter_memory.context.tokens import estimate_messages

if TYPE_CHECKING:
    from jupyter_memory.agent.host import SessionHost


def session_thresholds(session: SessionHost) -> Thresholds:
    """The levels of the session's main model: the same numbers ``%context`` shows."""
    return thresholds(session_model_info(session))


def session_model_info(session: SessionHost) -> ModelInfo:
    """The main model's limits, with the window ``Agent.context_window`` may set."""
    config = session.config
    return model_info(config.model, int(config.context_window or 0))


def fixed_tokens(session: SessionHost) -> int:
    """Estimated cost of everything in a request that is not the conversation."""
    assembled = session.assemble([])
    return sum(part.tokens for part in assembled.parts)


def _last_assistant(messages: Sequence[dict[str, Any]]) -> int | None:
    for i in range(len(messages) - 1, -1, -1):
        if messages[i].get("role") == "assistant":
            return i
    return None


def estimate_next_request(session: SessionHost) -> int:
    """Tokens the next request of ``session`` will take as input, best known value."""
    messages = session.messages
    usage = session.conversation.last_usage
    if usage is not None and usage.total_input > 0:
        last = _last_assistant(messages)
        if last is not None:
            context_tokens: int = usage.context_tokens
            return context_tokens + estimate_messages(messages[last + 1 :])
    return fixed_tokens(session) + estimate_messages(messages)


def percent(tokens: int, window: int) -> float:
    return round(100.0 * tokens / window, 1) if window else 0.0
