"""What recall keeps between turns, per process: one scan cache per memdir. Below both
prefetch and explain, so neither imports the other's module for it. (Each session's latest
prefetch is a field of the session, ``last_prefetch``.)"""

from __future__ import annotations

import threading
from pathlib import Path

from jupyter_memory.memdir.scan import ScanCache

__all__ = ["scan_cache"]

_CACHES: dict[str, ScanCache] = {}
_LOCK = threading.Lock()


def scan_cache(memdir: Path) -> ScanCache:
    """One :class:`ScanCache` per memdir, so every turn's scan re-reads only changed files
    and walks the memdir again only when one of its folders changed."""
    key = str(memdir)
    with _LOCK:
        cache = _CACHES.get(key)
        if cache is None:
            cache = _CACHES[key] = ScanCache(trust_folders=True)
        return cache
