"""What an entry of the session log is: its types, the compaction boundary, a valid message.

Shared by the reader, which keeps only entries of these types and starts at the last
boundary, and by the rebuild, which works from the same boundary.
"""

from __future__ import annotations

from typing import Any

__all__ = ["KNOWN_TYPES", "MESSAGE_TYPES", "is_boundary", "is_valid", "last_boundary"]

MESSAGE_TYPES = ("user", "assistant")
KNOWN_TYPES = frozenset({"user", "assistant", "system"})
"""Entry types :func:`~jupyter_memory.transcript.reader.read_entries` returns; every other
type is skipped and counted."""


def is_boundary(entry: dict[str, Any]) -> bool:
    """Whether ``entry`` is a compaction boundary (readers start after the last one)."""
    return entry.get("type") == "system" and entry.get("subtype") == "compact_boundary"


def is_valid(entry: dict[str, Any]) -> bool:
    """False for a message entry without a usable message (content) or uuid."""
    if entry["type"] not in MESSAGE_TYPES:
        return True
    message = entry.get("message")
    return (
        isinstance(message, dict)
        and isinstance(message.get("content"), str | list)
        and isinstance(entry.get("uuid"), str)
    )


def last_boundary(entries: list[dict[str, Any]]) -> int | None:
    """Index of the last compaction boundary of the main conversation (None if none).

    A subagent's entries (``isSidechain``) may sit in the main log; its boundary does not
    cut the main conversation, unless the log holds nothing else (a subagent's own log).
    """
    main = any(not e.get("isSidechain") for e in entries if e.get("type") in MESSAGE_TYPES)
    for i in range(len(entries) - 1, -1, -1):
        if is_boundary(entries[i]) and not (main and entries[i].get("isSidechain")):
            return i
    return None

