"""What ``team status`` shows: how the team folder is shared and what is not synced yet.

A team folder is shared in one of two ways: through **git** (a clone of the team's
repository, or a folder inside the project's repository) or **on disk** (a folder
everyone writes, on a hub's shared volume or a group-writable folder). Status says
which, and lists what a person must look at: changes not sent yet (and those a sync
would refuse), commits waiting for the remote, conflict copies to merge and files held
back from the index and recall. Files are named as everywhere (``team/x.md``). It never
touches the network.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from typing import Any

from jupyter_memory.memdir import trust_table
from jupyter_memory.memdir.scan import list_files
from jupyter_memory.memdir.scopes import TEAM_PREFIX
from jupyter_memory.memdir.team.checks import (
    CONFLICT_MARK,
    held_back,
    is_conflict_copy,
    problems_in,
)
from jupyter_memory.memdir.team.git import git_toplevel
from jupyter_memory.memdir.team.repo import Git, path_in_repo, uncommitted, upstream

__all__ = ["CONFLICT_MARK", "TeamStatus", "shared_on_disk", "status"]


@dataclass
class TeamStatus:
    """What ``team status`` shows."""

    folder: Path
    repository: Path | None
    remote: str | None
    branch: str | None
    changed: list[str]
    ahead: int
    conflicts: list[str]
    shared: str | None = None  # "git" | "disk" | None (only this account can write it)
    shared_reason: str = ""
    held: dict[str, str] = field(default_factory=dict)
    refused: dict[str, str] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        return {
            "folder": str(self.folder),
            "shared": self.shared,
            "shared_reason": self.shared_reason,
            "repository": None if self.repository is None else str(self.repository),
            "remote": self.remote,
            "branch": self.branch,
            "unsynced_changes": self.changed,
            "unpushed_commits": self.ahead,
            "conflict_copies": self.conflicts,
            "held_back": [{"file": f, "reason": r} for f, r in sorted(self.held.items())],
            "not_sent": [{"file": f, "reason": r} for f, r in sorted(self.refused.items())],
        }

    def text(self) -> str:
        lines = [f"Team folder {self.folder}"]
        if self.repository is None:
            if self.shared == "disk":
                lines.append(f"  shared on disk: {self.shared_reason}; teammates who write it "
                             "see each other's memories at once, no sync needed")
            else:
                lines.append(f"  not shared: {self.shared_reason}. Run `jupyter-memory team "
                             "clone URL` to share it through a git remote, or point everyone's "
                             "teamMemoryDirectory at one folder on a shared disk")
        else:
            lines += [f"  repository: {self.repository}"
                      + ("" if self.repository == self.folder
                         else " (the project's own repository)"),
                      f"  remote: {self.remote or '(none: sync commits locally only)'}"
                      + (f", branch {self.branch}" if self.branch else "")]
            if self.changed:
                lines.append(f"  {len(self.changed)} change(s) not synced yet: "
                             + ", ".join(self.changed))
            if self.ahead:
                lines.append(f"  {self.ahead} commit(s) not pushed yet")
            if not self.changed and not self.ahead:
                lines.append("  nothing to sync (as of the last fetch)")
        for file, reason in sorted(self.refused.items()):
            lines.append(f"  a sync will not send {file}: {reason}")
        if self.conflicts:
            lines.append("  conflict copies to resolve: " + ", ".join(self.conflicts))
        for file, reason in sorted(self.held.items()):
            lines.append(f"  held back from the index and recall: {file}: {reason}")
        return "\n".join(lines)


def shared_on_disk(folder: Path, env: Mapping[str, str] | None = None) -> tuple[bool, str]:
    """Whether a team folder that is no git checkout is shared on disk, and why it counts.

    It is when others can write it (group- or world-writable, or set-group-ID, as
    docs/team.md tells a hub to set it up), when it belongs to another account, or when a
    JupyterHub user keeps it outside their home (a shared volume).
    """
    environ = os.environ if env is None else env
    try:
        st = os.stat(folder)
    except OSError:
        return False, "the folder does not exist yet"
    if st.st_mode & (stat.S_IWGRP | stat.S_IWOTH):
        return True, "the folder is writable by its group or by everyone"
    if st.st_mode & stat.S_ISGID:
        return True, "the folder has the set-group-ID bit, so its files belong to its group"
    if hasattr(os, "getuid") and st.st_uid != os.getuid():
        return True, "the folder belongs to another account"
    home = trust_table.env("HOME", environ)
    if trust_table.env("JUPYTERHUB_USER", environ) and home:
        real, top = os.path.realpath(folder), os.path.realpath(home)
        if not (real == top or real.startswith(top.rstrip(os.sep) + os.sep)):
            return True, "it is outside your home on a JupyterHub (a shared volume)"
    return False, "only your account can write it and it is no git checkout"


def _conflict_copies(folder: Path) -> list[str]:
    return sorted(TEAM_PREFIX + entry.file for entry in list_files(folder)
                  if is_conflict_copy(entry.file))


def status(folder: Path, env: Mapping[str, str] | None = None) -> TeamStatus:
    """The sharing state of the team folder, from what is on disk and what git knows
    locally (no network)."""
    folder = Path(folder)
    held = ({TEAM_PREFIX + f: "; ".join(r) for f, r in held_back(folder).items()}
            if folder.is_dir() else {})
    repo = git_toplevel(folder) if folder.is_dir() else None
    if repo is None:
        disk, why = shared_on_disk(folder, env)
        copies = _conflict_copies(folder) if folder.is_dir() else []
        return TeamStatus(folder, None, None, None, [], 0, copies, "disk" if disk else None,
                          why, held)
    git = Git(repo, env)
    spec = path_in_repo(repo, folder)
    prefix = "" if spec == "." else spec.rstrip("/") + "/"
    remote, branch = upstream(git)
    changed, refused = [], {}
    for _code, path in uncommitted(git, spec):
        rel = path[len(prefix):] if prefix and path.startswith(prefix) else path
        if any(p.startswith(".") for p in PurePosixPath(rel).parts) and rel not in (
                ".gitignore", ".gitattributes"):
            continue
        changed.append(TEAM_PREFIX + rel)
        full = repo / path
        if full.is_symlink() or full.exists():
            reasons = problems_in(full, rel)
            if reasons:
                refused[TEAM_PREFIX + rel] = "; ".join(reasons)
    ahead = 0
    if remote and branch:
        tracking = git.run("rev-parse", "--verify", "--quiet", f"{remote}/{branch}", check=False)
        if tracking.returncode == 0:
            ahead = int(git.out("rev-list", "--count", f"{remote}/{branch}..HEAD") or 0)
        else:
            ahead = int(git.run("rev-list", "--count", "HEAD", check=False).stdout.strip() or 0)
    held = {f: r for f, r in held.items() if f not in refused}
    return TeamStatus(folder, repo, remote, branch, changed, ahead, _conflict_copies(folder),
                      "git", "a git repository", held, refused)
