"""The team folder's ``MEMORY.md``: read as the model receives it, rebuilt from the files.

The team index is rebuilt on every sync (and marked ``merge=union``), so it never holds
conflict markers.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from jupyter_memory.memdir.gateway import Root
from jupyter_memory.memdir.index import INDEX_NAME, load_for_model
from jupyter_memory.memdir.scan import ScanCache, scan

__all__ = ["index_text", "load_index", "rebuild_index"]


def index_text(folder: Path) -> str:
    """The raw team ``MEMORY.md`` ('' when there is none or it cannot be read).

    Never through a link, as the private index: a ``MEMORY.md`` link a teammate (or a
    hostile remote) committed would put the file it names into every request. A link
    raises :class:`~jupyter_memory.errors.SymlinkRefused`.
    """
    try:
        raw = Root.declare("team", folder).read(
            INDEX_NAME, follow=False, what=f"The team memory index {INDEX_NAME}")
    except OSError:
        return ""
    return raw.decode("utf-8", errors="replace")


def load_index(folder: Path) -> Any:
    """The team index as the model receives it: the same 200-line / 25,000-character limits."""
    return load_for_model(index_text(folder))


def rebuild_index(folder: Path) -> bool:
    """Write the team ``MEMORY.md`` afresh from the files; True when it changed.

    One line per memory, sorted by file, so two people who rebuild from the same files
    get the same bytes and the index never needs a merge.
    """
    memories = sorted(scan(folder, limit=None, cache=ScanCache()), key=lambda m: m.file)
    lines = ["# Team memory", "",
             "Shared by everyone who syncs this folder; rebuilt from the files on every sync.", ""]
    for memory in memories:
        hook = " ".join((memory.description or "").split()) or "(no description)"
        title = " ".join(memory.name.split()).replace("[", "(").replace("]", ")")
        lines.append(f"- [{title}]({memory.file}) — {hook}"[:300])
    text = "\n".join(lines) + "\n"
    path = folder / INDEX_NAME
    old = index_text(folder) if path.exists() else None
    if old == text:
        return False
    Root.declare("team", folder).write(INDEX_NAME, text)  # never through a link
    return True
