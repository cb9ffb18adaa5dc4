"""The team folder of each memdir this process has opened, and each team folder's scan cache.

Readers that know only a memdir (recall, the attachment of a ``team/…`` file) find its
team folder here; :class:`~jupyter_memory.memdir.team.store.ScopedStore` registers it.
"""

from __future__ import annotations

import os
import threading
from pathlib import Path

from jupyter_memory.memdir.scan import ScanCache
from jupyter_memory.memdir.scopes import TEAM_DIRNAME, TEAM_PREFIX

__all__ = ["folder_of", "register", "scan_cache", "team_path"]

_TEAM_DIRS: dict[str, Path] = {}
_CACHES: dict[str, ScanCache] = {}
_REGISTRY_LOCK = threading.Lock()


def register(memdir: Path, folder: Path) -> None:
    """Remember the team folder of ``memdir`` for readers that only know the memdir."""
    with _REGISTRY_LOCK:
        _TEAM_DIRS[os.path.realpath(memdir)] = Path(folder)


def folder_of(memdir: Path) -> Path:
    """The team folder registered for ``memdir`` (default ``<memdir>/team``)."""
    with _REGISTRY_LOCK:
        return _TEAM_DIRS.get(os.path.realpath(memdir), Path(memdir) / TEAM_DIRNAME)


def scan_cache(folder: Path) -> ScanCache:
    """The one scan cache of a team folder, shared by every store and scan of it."""
    key = os.path.realpath(folder)
    with _REGISTRY_LOCK:
        return _CACHES.setdefault(key, ScanCache())


def team_path(memdir: Path, file: str) -> Path:
    """The absolute path of a memory named memdir-style (``team/x.md`` → the team folder)."""
    if file.startswith(TEAM_PREFIX):
        return folder_of(memdir) / file[len(TEAM_PREFIX):]
    return Path(memdir) / file
