"""Timestamps, one way: ISO 8601 in UTC with a ``Z``, as the reference writes them.

Milliseconds where the reference writes them (transcripts, manifests, turn records); whole
seconds for people-facing stamps (pending items, bundle manifests, compaction notes).
"""

from __future__ import annotations

from datetime import datetime, timezone

__all__ = ["iso_utc", "now_iso"]


def iso_utc(timestamp: float) -> str:
    """A POSIX timestamp as ISO 8601 UTC with milliseconds and ``Z``, like JavaScript's
    ``Date.toISOString()`` that the reference writes in its manifests."""
    moment = datetime.fromtimestamp(timestamp, tz=timezone.utc)
    return moment.strftime("%Y-%m-%dT%H:%M:%S.") + f"{moment.microsecond // 1000:03d}Z"


def now_iso(timespec: str = "milliseconds") -> str:
    """The current UTC time, ``timespec`` as in ``datetime.isoformat`` (``seconds`` or
    ``milliseconds``), ending in ``Z``."""
    return datetime.now(timezone.utc).isoformat(timespec=timespec).replace("+00:00", "Z")
