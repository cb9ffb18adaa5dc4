"""From a notebook path in a request to the project's memory, safely.

The front end names a notebook by its path relative to the server root. These
helpers turn that into the notebook's folder (refusing anything that would leave
the root), describe where the memory lives in the JSON shape of
``jupyter-memory path --json``, and compute the cheap change stamp the panel polls.
Nothing here knows about tornado, so it is tested directly.
"""

from __future__ import annotations

import hashlib
import os
import re
from pathlib import Path, PurePosixPath
from typing import Any

from jupyter_memory.errors import JupyterMemoryError
from jupyter_memory.memdir.index import INDEX_NAME
from jupyter_memory.memdir.location import MemoryLocation
from jupyter_memory.memdir.scan import list_files

__all__ = [
    "NotebookPathError",
    "location_json",
    "memdir_stamp",
    "notebook_folder",
    "server_relative",
]

_WINDOWS_DRIVE = re.compile(r"^[A-Za-z]:")


class NotebookPathError(JupyterMemoryError, ValueError):
    """A notebook path that is malformed (``http_status`` 400), outside the root (403) or
    missing (404)."""

    def __init__(self, message: str, status: int) -> None:
        super().__init__(message)
        self.http_status = status


def _inside(path: str, root: str) -> bool:
    return path == root or path.startswith(root.rstrip(os.sep) + os.sep)


def notebook_folder(root_dir: str | os.PathLike[str], path: str) -> Path:
    """The real folder of the notebook at ``path`` (relative to ``root_dir``).

    ``path`` may name a notebook (its folder is used), a folder, or be empty (the
    root itself). Absolute paths, ``..`` that climbs out, and symlinks that lead
    out of the root are refused, the way the contents API refuses them.
    """
    if "\x00" in path or any(ord(ch) < 32 for ch in path):
        raise NotebookPathError(
            f"The notebook path {path!r} contains a control character; send the path "
            "shown in the file browser.",
            400,
        )
    if path.startswith(("/", "\\")) or _WINDOWS_DRIVE.match(path):
        raise NotebookPathError(
            f"The notebook path {path!r} is absolute; send it relative to the server root.",
            403,
        )
    root = os.path.realpath(root_dir)
    target = os.path.realpath(os.path.join(root, *PurePosixPath(path).parts))
    if not _inside(target, root):
        raise NotebookPathError(
            f"The notebook path {path!r} leads outside the server root; only notebooks "
            "under the root have a project here.",
            403,
        )
    folder = target if os.path.isdir(target) else os.path.dirname(target)
    if not os.path.isdir(folder):
        raise NotebookPathError(
            f"The folder of the notebook {path!r} does not exist under the server root.",
            404,
        )
    return Path(folder)


def server_relative(
    memdir: Path, root_dir: str | os.PathLike[str], *, allow_hidden: bool = False
) -> str | None:
    """The memdir as a path relative to the server root, or None if the root cannot reach it.

    With hidden files disallowed (the contents manager's default), a memdir under a
    dot-folder such as ``~/.claude`` cannot be opened through the file browser, so
    None is returned and the front end shows memories read-only instead.
    """
    root = os.path.realpath(root_dir)
    real = os.path.realpath(memdir)
    if not _inside(real, root):
        return None
    rel = os.path.relpath(real, root)
    if rel == ".":
        return ""
    parts = PurePosixPath(rel.replace(os.sep, "/")).parts
    if not allow_hidden and any(part.startswith(".") for part in parts):
        return None
    return "/".join(parts)


def location_json(
    location: MemoryLocation, root_dir: str | os.PathLike[str], *, allow_hidden: bool = False
) -> dict[str, Any]:
    """The ``jupyter-memory path --json`` record, plus ``server_path`` for the front end."""
    return {
        **location.to_json(),
        "server_path": server_relative(location.memdir, root_dir, allow_hidden=allow_hidden),
    }


def memdir_stamp(memdir: Path) -> str:
    """A short digest of every memory file's name, mtime and size, and of ``MEMORY.md``.

    It changes whenever a memory is added, removed, renamed or rewritten, and costs
    one directory walk with no file reads, so the panel can poll it every few seconds.
    """
    digest = hashlib.sha256()
    if not memdir.is_dir():
        digest.update(b"missing")
        return digest.hexdigest()[:20]
    entries = sorted((f.file, f.stat.st_mtime_ns, f.stat.st_size) for f in list_files(memdir))
    try:
        st = (memdir / INDEX_NAME).stat()
        entries.append((INDEX_NAME, st.st_mtime_ns, st.st_size))
    except OSError:
        entries.append((INDEX_NAME, -1, -1))
    for file, mtime, size in entries:
        digest.update(f"{file}\0{mtime}\0{size}\n".encode("utf-8", "surrogatepass"))
    return digest.hexdigest()[:20]
