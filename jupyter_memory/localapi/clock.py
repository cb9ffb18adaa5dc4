"""A clock for the local server that tests move by hand."""

from __future__ import annotations

import threading

__all__ = ["ManualClock"]


class ManualClock:
    """A clock that only moves when told to, so tests can expire cache entries instantly."""

    def __init__(self, start: float = 0.0) -> None:
        self._now = start
        self._lock = threading.Lock()

    def __call__(self) -> float:
        with self._lock:
            return self._now

    def advance(self, seconds: float) -> None:
        """Move the clock forward by ``seconds``."""
        if seconds < 0:
            raise ValueError("a clock cannot go backwards")
        with self._lock:
            self._now += seconds
