"""What ``team status`` shows: where the team folder syncs to and what is not synced yet."""

from __future__ import annotations

import fnmatch
import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path, PurePath
from typing import Any

from jupyter_memory.memdir.gateway import Root
from jupyter_memory.memdir.team.git import git_toplevel
from jupyter_memory.memdir.team.repo import Git, path_in_repo, uncommitted, upstream

__all__ = ["CONFLICT_MARK", "TeamStatus", "status"]

CONFLICT_MARK = ".conflict-"
"""Marks the copy a sync keeps of a memory changed on both sides (``db.conflict-ana.md``)."""


@dataclass
class TeamStatus:
    """What ``team status`` shows: where the folder syncs to and what is not synced yet."""

    folder: Path
    repository: Path | None
    remote: str | None
    branch: str | None
    changed: list[str]
    ahead: int
    conflicts: list[str]

    def to_json(self) -> dict[str, Any]:
        return {
            "folder": str(self.folder),
            "repository": None if self.repository is None else str(self.repository),
            "remote": self.remote,
            "branch": self.branch,
            "unsynced_changes": self.changed,
            "unpushed_commits": self.ahead,
            "conflict_copies": self.conflicts,
        }

    def text(self) -> str:
        if self.repository is None:
            return (f"Team folder {self.folder} is not in a git repository: it is not shared. "
                    "Run `jupyter-memory team clone URL` to share it through a git remote.")
        lines = [f"Team folder {self.folder}",
                 f"  repository: {self.repository}" + ("" if self.repository == self.folder
                                                        else " (the project's own repository)"),
                 f"  remote: {self.remote or '(none: sync commits locally only)'}"
                 + (f", branch {self.branch}" if self.branch else "")]
        if self.changed:
            lines.append(f"  {len(self.changed)} change(s) not synced yet: " + ", ".join(self.changed))
        if self.ahead:
            lines.append(f"  {self.ahead} commit(s) not pushed yet")
        if not self.changed and not self.ahead:
            lines.append("  nothing to sync (as of the last fetch)")
        if self.conflicts:
            lines.append("  conflict copies to resolve: " + ", ".join(self.conflicts))
        return "\n".join(lines)


def _conflict_copies(folder: Path) -> list[str]:
    team = Root.declare("team", folder)
    found = []
    for here, dirs, files in team.walk():
        dirs[:] = [d for d in dirs if not d.startswith(".")]
        found += [os.path.relpath(os.path.join(here, f), team.real).replace(os.sep, "/")
                  for f in files if fnmatch.fnmatchcase(f, f"*{CONFLICT_MARK}*.md")
                  and not f.startswith(".")]
    return sorted(found)


def status(folder: Path, env: Mapping[str, str] | None = None) -> TeamStatus:
    """The sync state of the team folder, from what git knows locally (no network)."""
    folder = Path(folder)
    repo = git_toplevel(folder) if folder.is_dir() else None
    if repo is None:
        return TeamStatus(folder, None, None, None, [], 0, [])
    git = Git(repo, env)
    spec = path_in_repo(repo, folder)
    remote, branch = upstream(git)
    changed = [p for _, p in uncommitted(git, spec) if not PurePath(p).name.startswith(".")]
    ahead = 0
    if remote and branch:
        tracking = git.run("rev-parse", "--verify", "--quiet", f"{remote}/{branch}", check=False)
        if tracking.returncode == 0:
            ahead = int(git.out("rev-list", "--count", f"{remote}/{branch}..HEAD") or 0)
        else:
            ahead = int(git.run("rev-list", "--count", "HEAD", check=False).stdout.strip() or 0)
    return TeamStatus(folder, repo, remote, branch, changed, ahead, _conflict_copies(folder))
