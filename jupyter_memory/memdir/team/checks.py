"""What may reach the team's index and recall: conflict copies and held-back files.

Everything in the team folder is sent to every teammate's model, and some of it arrives
from others (a sync, a shared disk), past the store's own checks. So a file stays out
of the team index and of recall while it is

* a **conflict copy** (``x.conflict-bob.md``): a second version waiting for someone to
  merge it, named by :data:`CONFLICT_MARK`;
* **held back**: it holds what the credential guard refuses, it is a ``user`` memory
  (which describes one person and is always private), or it is a symbolic link (a real
  one, or one the repository records and git checked out as a plain file). It stays on
  disk for a person to fix, is listed by ``team status`` and ``doctor``, and comes back
  as soon as it is fixed: the check runs again whenever the file changes.

The content checks are cached per file on its ``mtime`` and size, so a turn on an
unchanged team folder reads nothing; the links git records come from the sync's state.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Iterable, Mapping
from pathlib import Path

from jupyter_memory.errors import InvalidPath
from jupyter_memory.memdir import frontmatter
from jupyter_memory.memdir.gateway import Root
from jupyter_memory.memdir.guard import find_secrets
from jupyter_memory.memdir.scan import FileStat, list_files
from jupyter_memory.memdir.team.state import recorded_links

__all__ = [
    "CONFLICT_MARK",
    "file_reasons",
    "held_back",
    "is_conflict_copy",
    "problems_in",
    "shown",
    "text_problems",
]

CONFLICT_MARK = ".conflict-"
"""Marks the copy a sync keeps of a memory changed on both sides (``db.conflict-ana.md``)."""

_CACHE: dict[str, tuple[int, int, tuple[str, ...]]] = {}
_LOCK = threading.Lock()


def is_conflict_copy(file: str) -> bool:
    """Whether ``file`` is a conflict copy a sync kept beside the shared version."""
    return CONFLICT_MARK in file[file.rfind("/") + 1:]


def text_problems(text: str, rel: str) -> list[str]:
    """Why the text of team file ``rel`` must not be shared or recalled ([] when it may).

    A credential is named by its kind and line, never repeated.
    """
    from jupyter_memory.memdir.store import name_pieces

    reasons = []
    findings = find_secrets(text)
    if findings:
        where = ", ".join(f"{f.kind} on line {f.line}" for f in findings[:3])
        more = f" and {len(findings) - 3} more" if len(findings) > 3 else ""
        reasons.append(f"it holds what looks like a credential ({where}{more})")
    if find_secrets(name_pieces(rel)):
        reasons.append("its file name holds what looks like a credential")
    if rel.endswith(".md"):
        kind = frontmatter.parse(text).get("type")
        if str(kind or "").strip().lower() == "user":
            reasons.append("it is a 'user' memory, which describes one person and is always "
                           "private")
    return reasons


def problems_in(path: Path, rel: str) -> list[str]:
    """Why the file at ``path`` (``rel`` in the team folder) must not be shared or recalled."""
    if os.path.islink(path):
        try:
            target = os.readlink(path)
        except OSError:
            target = "?"
        return [f"it is a symbolic link (to {target}); team memory never follows or shares "
                "links"]
    try:
        data = Root.declare("team", Path(path).parent).read(Path(path).name, follow=False)
    except (OSError, InvalidPath):
        return []  # gone, or unreadable: doctor reports an unreadable file on its own
    return text_problems(data.decode("utf-8", errors="replace"), rel)


def file_reasons(entry: FileStat) -> tuple[str, ...]:
    """Why a team file found by a walk is held back (() when it is not), checked again only
    when its ``mtime`` or size changed."""
    st = entry.stat
    hit = _CACHE.get(entry.abspath)
    if hit is not None and hit[0] == st.st_mtime_ns and hit[1] == st.st_size:
        return hit[2]
    reasons = tuple(problems_in(Path(entry.abspath), entry.file))
    with _LOCK:
        _CACHE[entry.abspath] = (st.st_mtime_ns, st.st_size, reasons)
    return reasons


def link_reason(target: str) -> str:
    return (f"the repository records it as a symbolic link (to {target}); git checked it out "
            "as a plain file holding that path, and it is never followed")


def held_back(folder: Path, files: Iterable[FileStat] | None = None) -> Mapping[str, tuple[str, ...]]:
    """The team folder's held-back files, each with its reasons (``files``: the walk, when
    the caller has one; else the folder is listed)."""
    folder = Path(folder)
    out: dict[str, tuple[str, ...]] = {
        rel: (link_reason(target),) for rel, target in recorded_links(folder).items()}
    for entry in list_files(folder) if files is None else files:
        if entry.file not in out:
            reasons = file_reasons(entry)
            if reasons:
                out[entry.file] = reasons
    return out


def shown(folder: Path, files: Iterable[FileStat], limit: int | None = None) -> list[FileStat]:
    """``files`` (a walk, newest first) without conflict copies and held-back files; with
    ``limit``, the first ``limit`` of them, checking no further than needed."""
    links = recorded_links(folder)
    out: list[FileStat] = []
    for entry in files:
        if limit is not None and len(out) >= limit:
            break
        if is_conflict_copy(entry.file) or entry.file in links or file_reasons(entry):
            continue
        out.append(entry)
    return out
