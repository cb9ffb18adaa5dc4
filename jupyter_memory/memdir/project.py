"""Which folder is the project: the realpath of the canonical git root, or the folder itself.

Worktrees of one repository share one project (and so one memdir); submodules keep their own
(docs/reference.md#location-and-key). Trust, settings and the memdir location all start from this answer.
"""

from __future__ import annotations

import os
from pathlib import Path

from jupyter_memory.errors import InvalidPath
from jupyter_memory.memdir.gateway import Root

__all__ = ["canonical_root", "find_project_root", "git_toplevel", "start_folder"]

_MAX_META_BYTES = 64 * 1024  # a .git file or commondir is one short line


def _read_first_line(path: Path) -> str | None:
    """The first line of a small git metadata file (a ``.git`` file, ``commondir``)."""
    folder = Root.declare("given", path.parent, links="any", label="the git metadata folder")
    try:
        text = folder.text(path, errors="surrogateescape", limit=_MAX_META_BYTES)
    except (OSError, InvalidPath):
        return None
    return text.split("\n", 1)[0].strip()


def _resolve_from(base: Path, value: str) -> Path:
    return Path(os.path.realpath(os.path.join(base, value)))


def canonical_root(top: Path) -> Path:
    """Map a worktree checkout to its main repository; everything else stays itself.

    A worktree's ``.git`` file names a gitdir under ``<common>/worktrees/``, and that
    gitdir's ``commondir`` leads back to the main ``.git``. A submodule's ``.git`` file
    points into the superproject's ``.git/modules/`` with no ``commondir``, so it keeps
    its own root. The gitdir's back-link must name this checkout, so a ``.git`` file
    planted in a downloaded folder cannot borrow another project's memdir.
    """
    dot_git = top / ".git"
    if not dot_git.is_file():
        return top
    line = _read_first_line(dot_git)
    if not line or not line.startswith("gitdir:"):
        return top
    gitdir = _resolve_from(top, line[len("gitdir:") :].strip())
    commondir = _read_first_line(gitdir / "commondir")
    if not commondir:
        return top
    common = _resolve_from(gitdir, commondir)
    if gitdir.parent != common / "worktrees":
        return top
    backlink = _read_first_line(gitdir / "gitdir")
    if not backlink or _resolve_from(gitdir, backlink) != Path(os.path.realpath(dot_git)):
        return top
    # A bare repository's common dir is the repository itself.
    return common.parent if common.name == ".git" else common


def git_toplevel(start: Path) -> Path | None:
    """The nearest folder at or above *start* holding a ``.git`` entry (folder or file)."""
    for folder in (start, *start.parents):
        if os.path.lexists(folder / ".git"):
            return folder
    return None


def start_folder(start: Path) -> Path:
    real = Path(os.path.realpath(start))
    return real.parent if real.is_file() else real


def find_project_root(start: Path) -> Path:
    """The folder whose memdir *start* uses: the realpath of its canonical git root.

    Worktrees resolve to the main repository, submodules to themselves; outside git
    the (real) folder itself. A file is taken to mean its folder (a notebook's folder).
    """
    folder = start_folder(start)
    top = git_toplevel(folder)
    return folder if top is None else canonical_root(top)
