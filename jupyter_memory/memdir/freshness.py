"""How old a memory is, and the caveat that goes with an old one.

Ages are whole days because models judge "47 days old" far better than a timestamp.
A memory two or more days old reaches the model behind a reminder that it is a
point-in-time note, not live state (docs/reference.md#freshness, "Freshness caveat").
"""

from __future__ import annotations

import math
import time

__all__ = ["SECONDS_PER_DAY", "STALE_AFTER_DAYS", "age_days", "age_text", "staleness_reminder"]

SECONDS_PER_DAY = 86_400
STALE_AFTER_DAYS = 2
"""Memories at least this many days old get :func:`staleness_reminder`."""


def age_days(mtime: float, now: float | None = None) -> int:
    """Whole days since ``mtime`` (floor), never negative; a future mtime counts as today."""
    current = time.time() if now is None else now
    elapsed = current - mtime
    if not math.isfinite(elapsed) or elapsed <= 0:  # clock skew, NaN or a bogus mtime
        return 0
    return int(elapsed // SECONDS_PER_DAY)


def age_text(days: int) -> str:
    """``today``, ``yesterday`` or ``N days ago``."""
    if days <= 0:
        return "today"
    if days == 1:
        return "yesterday"
    return f"{days} days ago"


def staleness_reminder(days: int) -> str | None:
    """A ``<system-reminder>`` caveat for a memory ``days`` old, or ``None`` if it is fresh."""
    if days < STALE_AFTER_DAYS:
        return None
    return (
        f"<system-reminder>This memory was last written {days} days ago. It is a note of what "
        "was true at that moment, not a view of the current state: anything it says about "
        "code, files, data or people may have changed since. Verify those claims against the "
        "current state before relying on them, and if they no longer hold, update or remove "
        "the memory.</system-reminder>"
    )
