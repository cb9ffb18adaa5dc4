"""What recall keeps between turns, per process: one scan cache per memdir, each
session's latest prefetch and the selector failures it was told of. Below both prefetch
and explain, so neither imports the other's module for it."""

from __future__ import annotations

import threading
from collections import OrderedDict
from pathlib import Path
from typing import TYPE_CHECKING

from jupyter_memory.memdir.scan import ScanCache
from jupyter_memory.recall.session_view import RecallSession

if TYPE_CHECKING:
    from jupyter_memory.recall.prefetch import Prefetch

__all__ = ["first_failure", "last_prefetch", "remember_prefetch", "scan_cache"]

_CACHES: dict[str, ScanCache] = {}
_LAST: OrderedDict[str, Prefetch] = OrderedDict()
_LAST_CAP = 16
_TOLD: OrderedDict[str, set[str]] = OrderedDict()
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


def remember_prefetch(session: RecallSession, prefetch: Prefetch) -> None:
    """Keep ``prefetch`` as the session's latest (a few sessions at most)."""
    key = str(getattr(session, "session_id", id(session)))
    with _LOCK:
        _LAST[key] = prefetch
        _LAST.move_to_end(key)
        while len(_LAST) > _LAST_CAP:
            _LAST.popitem(last=False)


def last_prefetch(session: RecallSession) -> Prefetch | None:
    """The most recent prefetch started for ``session`` (for ``%memory why``)."""
    key = str(getattr(session, "session_id", id(session)))
    with _LOCK:
        found = _LAST.get(key)
    if found is None or found._session() is not session:
        return None
    return found


def first_failure(session: RecallSession, kind: str) -> bool:
    """True the first time ``session`` meets a selector failure of ``kind`` (so it is told
    once), False after that."""
    key = str(getattr(session, "session_id", id(session)))
    with _LOCK:
        told = _TOLD.setdefault(key, set())
        _TOLD.move_to_end(key)
        while len(_TOLD) > _LAST_CAP:
            _TOLD.popitem(last=False)
        if kind in told:
            return False
        told.add(kind)
        return True
