"""Private and team memories as one listing, each named as the person sees it."""

from __future__ import annotations

import time
from dataclasses import replace
from pathlib import Path

from jupyter_memory.memdir.record import Memory
from jupyter_memory.memdir.scan import FileStat, ScanCache, scan
from jupyter_memory.memdir.scopes import TEAM_PREFIX
from jupyter_memory.memdir.team.checks import shown
from jupyter_memory.memdir.team.registry import folder_of, scan_cache

__all__ = ["as_team", "scan_all"]


def as_team(memory: Memory) -> Memory:
    """A team folder's record renamed into the shared namespace (``team/<file>``)."""
    return replace(memory, file=TEAM_PREFIX + memory.file, scope="team")


def scan_all(
    memdir: Path,
    *,
    limit: int | None = 200,
    cache: ScanCache | None = None,
    folder: Path | None = None,
) -> list[Memory]:
    """Private and team memories together, newest first, each with its ``scope``.

    The private scan skips the nested ``team/`` folder; the team folder is scanned on its
    own (against its own index) wherever it lives, and its files are named ``team/…``.
    Conflict copies and held-back team files stay out (:mod:`.checks`): what is listed
    here is what recall may send to the model.
    """
    team_folder = folder_of(memdir) if folder is None else folder
    if limit is None:
        private = [m for m in scan(memdir, limit=None, cache=cache)
                   if not m.file.startswith(TEAM_PREFIX)]
        team_cache = scan_cache(team_folder)
        every_team = shown(team_folder, team_cache.files(team_folder))
        shared = [as_team(m) for m in team_cache.memories(
            every_team, team_cache.pointed(team_folder), time.time())]
        return sorted(private + shared, key=lambda m: (-m.mtime, m.file))
    # Choose the newest ``limit`` files from the two sorted listings first, then build records
    # for those only: a turn's manifest costs the same at 200 memories as at 10,000.
    cache = cache if cache is not None else ScanCache()
    team_cache = scan_cache(team_folder)
    every, every_team = cache.files(memdir), team_cache.files(team_folder)
    private_files = _newest(every, limit, skip=TEAM_PREFIX)
    team_files = shown(team_folder, every_team, max(limit, 0))
    cache.forget_missing((e.abspath for e in every), len(every))
    team_cache.forget_missing((e.abspath for e in every_team), len(every_team))
    now = time.time()
    private = cache.memories(private_files, cache.pointed(Path(memdir)), now)
    shared = [as_team(m) for m in
              team_cache.memories(team_files, team_cache.pointed(team_folder), now)]
    merged = sorted(private + shared, key=lambda m: (-m.mtime, m.file))
    return merged[: max(limit, 0)]


def _newest(files: list[FileStat], limit: int, *, skip: str | None = None) -> list[FileStat]:
    """The first ``limit`` of ``files`` (already newest first), leaving out names under
    ``skip``; stops as soon as it has them."""
    if skip is None:
        return files[: max(limit, 0)]
    out: list[FileStat] = []
    for entry in files:
        if len(out) >= limit:
            break
        if not entry.file.startswith(skip):
            out.append(entry)
    return out
