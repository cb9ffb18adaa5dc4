"""Retention of session logs: delete old ones, never a memory (``cleanupPeriodDays``)."""

from __future__ import annotations

import stat
import time
from pathlib import Path

from jupyter_memory.memdir.gateway import Root

__all__ = ["RETENTION_DAYS", "cleanup_old_transcripts"]

RETENTION_DAYS = 30
"""Default ``cleanupPeriodDays``: session logs older than this are deleted."""


def cleanup_old_transcripts(
    projects_dir: Path, days: int = RETENTION_DAYS, now: float | None = None
) -> list[Path]:
    """Delete session logs (``<key>/<session>.jsonl``) not modified for ``days`` days,
    with the old files of their ``<session>/`` folders (subagent logs and the like).

    Memories are never touched: nothing under a ``memory/`` folder and no ``.md`` file is
    deleted, symlinks are neither followed nor removed, and a file in a session folder
    goes only if it is old itself. Returns the files and emptied folders removed.
    """
    if isinstance(days, bool) or not isinstance(days, int) or days < 0:
        raise ValueError(f"retention must be a whole number of days >= 0, not {days!r}")
    cutoff = (time.time() if now is None else now) - days * 86400
    projects_dir = Path(projects_dir)
    removed: list[Path] = []
    if not projects_dir.is_dir():
        return removed
    root = Root.declare("projects", projects_dir)
    for name in root.listdir():
        key_dir = projects_dir / name
        if key_dir.is_symlink() or not key_dir.is_dir() or key_dir.name == "memory":
            continue
        for log in root.matching("*.jsonl", key_dir):
            if _old_regular_file(log, cutoff):
                root.remove(log)
                removed.append(log)
                folder = key_dir / log.stem
                if folder.name != "memory" and folder.is_dir() and not folder.is_symlink():
                    removed.extend(_prune_session_folder(root, folder, cutoff))
    return removed


def _old_regular_file(path: Path, cutoff: float) -> bool:
    try:
        info = path.lstat()
    except FileNotFoundError:
        return False
    return stat.S_ISREG(info.st_mode) and info.st_mtime < cutoff


def _prune_session_folder(root: Root, folder: Path, cutoff: float) -> list[Path]:
    removed: list[Path] = []
    for here, dirs, files in root.walk(folder):
        dirs[:] = [d for d in dirs if d != "memory"]
        for name in files:
            path = Path(here) / name
            if not name.lower().endswith(".md") and _old_regular_file(path, cutoff):
                root.remove(path)
                removed.append(path)
    for here, _dirs, _files in reversed(list(root.walk(folder))):
        path = Path(here)
        if "memory" in path.relative_to(root.locate(folder)).parts or path.is_symlink():
            continue
        try:
            root.remove_folder(path)  # only succeeds when empty
        except OSError:
            continue
        removed.append(path)
    return removed
