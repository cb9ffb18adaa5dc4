"""The conversation of a session: its messages and what its turns left behind."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from jupyter_memory.context.tokens import Usage

__all__ = ["Conversation"]


@dataclass(slots=True)
class Conversation:
    """Messages as Messages API dicts (a private ``_meta`` dict on a message is stripped
    before sending), the turns taken, the usage of the last response and of them all, and
    the record of the last finished turn (what ``%context`` shows recall decisions from).

    The list ``messages`` is the one every part of the session reads and changes in place
    (compaction replaces its contents, a resume fills it); it is never swapped for another.
    """

    messages: list[dict[str, Any]] = field(default_factory=list)
    turn_count: int = 0
    last_usage: Usage | None = None
    total_usage: Usage = field(default_factory=Usage)
    last_record: dict[str, Any] | None = None
