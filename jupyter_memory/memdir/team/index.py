"""The team folder's ``MEMORY.md``: kept by people, merged by sync and repair.

The team index is curated like a private one: titles, hooks, ``##`` groups and notes are
written by people and stay as written. Two operations keep it right, and both ``team
sync`` and ``repair --scope team`` use them:

* :func:`reconcile` brings an index in step with the files: the line of every file that
  still exists is kept as it is (under any reading of its link), a line is added for a
  new file, the line of a removed file is dropped, and so is any second line for one
  file, the line of a conflict copy and of a held-back file
  (:mod:`~jupyter_memory.memdir.team.checks`). It never adds a heading of its own; the
  heading and preamble older versions generated are removed, once.
* :func:`merge3` merges two people's edits of the index against the version they both
  started from, line by line: an edit made on one side is taken, and when both changed
  the line of one file, the line of the newer commit wins and the merge says so.
"""

from __future__ import annotations

import difflib
import os
import stat
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from jupyter_memory.errors import InvalidPath
from jupyter_memory.memdir.gateway import Root
from jupyter_memory.memdir.index import (
    INDEX_NAME,
    edit_entries,
    load_for_model,
    parse_index,
    readings,
)
from jupyter_memory.memdir.record import Memory
from jupyter_memory.memdir.scan import FileStat, list_files
from jupyter_memory.memdir.team.checks import file_reasons, held_back, is_conflict_copy
from jupyter_memory.memdir.team.state import recorded_links

__all__ = [
    "LEGACY_HEADING",
    "LEGACY_PREAMBLE",
    "Contest",
    "IndexMerge",
    "exists_in",
    "folder_memories",
    "index_text",
    "is_legacy",
    "load_index",
    "merge3",
    "reconcile",
    "undo_legacy_rewrite",
    "visible_text",
    "write_index",
]

LEGACY_HEADING = "# Team memory"
LEGACY_PREAMBLE = "Shared by everyone who syncs this folder; rebuilt from the files on every sync."
"""What versions before this one wrote at the top of every team index they rebuilt."""


@dataclass(frozen=True)
class Contest:
    """Both sides changed the line of one file: which line was kept, and why."""

    file: str
    kept: str
    dropped: str
    kept_side: str  # "mine" | "theirs"

    def to_json(self) -> dict[str, str]:
        return {"file": self.file, "kept": self.kept, "dropped": self.dropped,
                "kept_side": self.kept_side}


@dataclass
class IndexMerge:
    """What :func:`reconcile` did to an index."""

    before: str
    text: str
    added: list[str] = field(default_factory=list)
    dropped: list[tuple[str, str]] = field(default_factory=list)  # (file, why)
    legacy_removed: bool = False

    @property
    def changed(self) -> bool:
        return self.text != self.before

    def notes(self) -> list[str]:
        """What was done, for people (one line each)."""
        out = [f"added a line for {file}" for file in self.added]
        out += [f"dropped the line of {file}: {why}" for file, why in self.dropped]
        if self.legacy_removed:
            out.append("removed the heading and preamble older versions wrote at the top of "
                       "the team index (the request already has a heading of its own)")
        return out


def index_text(folder: Path) -> str:
    """The raw team ``MEMORY.md`` ('' when there is none, or when it is a link, which is
    never read: it could pull any file on disk into every teammate's request)."""
    try:
        raw = Root.declare("team", folder).read(
            INDEX_NAME, follow=False, what=f"The team memory index {INDEX_NAME}")
    except (OSError, InvalidPath):
        return ""
    return raw.decode("utf-8", errors="surrogateescape")


def visible_text(folder: Path, text: str | None = None) -> str:
    """The team index as it may be shown: without the lines of conflict copies and
    held-back files, and without the heading older versions wrote into it (the request
    gives the team index a heading of its own; until the next sync removes it, the model
    would see that heading twice)."""
    text = index_text(folder) if text is None else text
    lines = text.split("\n")
    drop = _legacy_lines(lines)
    index = parse_index(text)
    links = recorded_links(folder) if index.entries else {}
    for entry in index.entries:  # only the files the index names are checked
        names = readings(entry.file)
        if any(is_conflict_copy(name) or name in links or _held(folder, name)
               for name in names):
            drop.add(entry.line - 1)
    if not drop:
        return text
    return "\n".join(line for i, line in enumerate(lines) if i not in drop)


def _held(folder: Path, rel: str) -> bool:
    path = Path(folder) / rel
    try:
        st = os.stat(path)
    except OSError:
        return False
    return stat.S_ISREG(st.st_mode) and bool(file_reasons(FileStat(rel, str(path), st, Root.declare("team", folder))))


def load_index(folder: Path) -> Any:
    """The team index as the model receives it: what may be shown, cut at the same
    200-line / 25,000-character limits as a private one."""
    return load_for_model(visible_text(folder).encode("utf-8", "surrogateescape")
                          .decode("utf-8", "replace"))


def write_index(folder: Path, text: str) -> None:
    """Write the team ``MEMORY.md``. A link in its place (a remote can commit one) is
    removed first, so the index is never written through it."""
    team = Root.declare("team", folder)
    if os.path.islink(Path(folder) / INDEX_NAME):
        team.remove(INDEX_NAME)
    team.write(INDEX_NAME, text.encode("utf-8", errors="surrogateescape"))


# --------------------------------------------------------------------------- reconcile


def _legacy_lines(lines: Sequence[str]) -> set[int]:
    """Line numbers (0-based) of the generated heading, its preamble and the blank line
    after each."""
    found: set[int] = set()
    first = next((i for i, line in enumerate(lines) if line.strip()), None)
    for i, line in enumerate(lines):
        text = line.strip()
        if text == LEGACY_PREAMBLE or (text == LEGACY_HEADING and i == first):
            found.add(i)
            if i + 1 < len(lines) and not lines[i + 1].strip():
                found.add(i + 1)
    return found


def reconcile(
    text: str,
    memories: Mapping[str, Memory],
    *,
    hidden: Mapping[str, str] | None = None,
    exists: Callable[[str], bool] | None = None,
) -> IndexMerge:
    """Bring ``text`` in step with the files.

    ``memories`` are the team folder's memories by file (those that may be in the index);
    ``hidden`` names the files that exist but stay out (conflict copies, held back) with
    why; ``exists`` says whether another file exists (a pointer to one is kept, never
    called dangling). Kept lines stay byte for byte.
    """
    hidden = hidden or {}
    merge = IndexMerge(before=text, text=text)
    lines = text.split("\n")
    drop: set[int] = set()
    claimed: set[str] = set()
    for entry in parse_index(text).entries:
        names = readings(entry.file)
        known = next((n for n in names if n in memories), None)
        hid = next((n for n in names if n in hidden), None)
        if known is None and hid is not None:
            drop.add(entry.line - 1)
            merge.dropped.append((hid, hidden[hid]))
        elif known is None:
            if exists is not None and any(exists(n) for n in names):
                continue  # a file that exists is never dropped
            drop.add(entry.line - 1)
            merge.dropped.append((entry.file, "the file no longer exists"))
        elif known in claimed:
            drop.add(entry.line - 1)
            merge.dropped.append((known, "a second line for the same file"))
        else:
            claimed.add(known)
    legacy = _legacy_lines(lines) - drop
    merge.legacy_removed = bool(legacy)
    drop |= legacy
    kept = "\n".join(line for i, line in enumerate(lines) if i not in drop) if drop else text
    if legacy:
        kept = kept.lstrip("\n")
    add = [(file, memories[file].name, memories[file].description or "")
           for file in sorted(memories) if file not in claimed]
    merge.added = [file for file, _, _ in add]
    merge.text = edit_entries(kept, add=add) if add else kept
    return merge


def folder_memories(folder: Path, memories: Sequence[Memory]) -> tuple[dict[str, Memory],
                                                                       dict[str, str]]:
    """Split a team folder's memories into those that may be indexed and the hidden ones."""
    hidden_reasons = held_back(folder)
    shown: dict[str, Memory] = {}
    hidden: dict[str, str] = {}
    for memory in memories:
        if is_conflict_copy(memory.file):
            hidden[memory.file] = "a conflict copy waits to be merged"
        elif memory.file in hidden_reasons:
            hidden[memory.file] = "held back: " + "; ".join(hidden_reasons[memory.file])
        else:
            shown[memory.file] = memory
    for file, reasons in hidden_reasons.items():
        hidden.setdefault(file, "held back: " + "; ".join(reasons))
    return shown, hidden


def exists_in(folder: Path) -> Callable[[str], bool]:
    """Whether a file (relative to ``folder``) exists there, as a regular file."""
    listed = {entry.file for entry in list_files(folder)}
    root = Path(folder)

    def exists(rel: str) -> bool:
        return rel in listed or (root / rel).is_file()

    return exists


# --------------------------------------------------------------------------- three-way merge


def _key(line: str) -> str | None:
    """The file a pointer line points at, in canonical form (None for other lines)."""
    entries = parse_index(line.rstrip("\r\n")).entries
    if not entries:
        return None
    names = readings(entries[0].file)
    return names[-1] if names else None


def _regions(base: list[str], mine: list[str], theirs: list[str]) -> Iterator[tuple[Any, ...]]:
    """diff3's regions: ``("same", lines)`` where both sides agree, ``("one", lines)`` where
    only one side changed, ``("both", base, mine, theirs)`` where both did."""
    def blocks(other: list[str]) -> list[tuple[int, int, int]]:
        matcher = difflib.SequenceMatcher(None, base, other, autojunk=False)
        return [(m.a, m.b, m.size) for m in matcher.get_matching_blocks()]

    ours, others = blocks(mine), blocks(theirs)
    syncs: list[tuple[int, int, int, int, int, int]] = []
    i = j = 0
    while i < len(ours) and j < len(others):
        a_base, a_at, a_len = ours[i]
        b_base, b_at, b_len = others[j]
        start, end = max(a_base, b_base), min(a_base + a_len, b_base + b_len)
        if start < end:
            syncs.append((start, end, a_at + start - a_base, a_at + end - a_base,
                          b_at + start - b_base, b_at + end - b_base))
        if a_base + a_len < b_base + b_len:
            i += 1
        else:
            j += 1
    syncs.append((len(base), len(base), len(mine), len(mine), len(theirs), len(theirs)))
    at_base = at_mine = at_theirs = 0
    for z0, z1, m0, m1, t0, t1 in syncs:
        z, m, t = base[at_base:z0], mine[at_mine:m0], theirs[at_theirs:t0]
        if m or t:
            if m == t:
                yield ("same", m)
            elif z == m:
                yield ("one", t)
            elif z == t:
                yield ("one", m)
            else:
                yield ("both", z, m, t)
        if z1 > z0:
            yield ("same", base[z0:z1])
        at_base, at_mine, at_theirs = z1, m1, t1


def _settle(base: list[str], mine: list[str], theirs: list[str], mine_newer: bool,
            contests: list[Contest]) -> list[str]:
    """Lines both sides changed: decided line by line against ``base``.

    Each pointer line is keyed by its file, any other line by its text. A line only one
    side changed (or removed) takes that side's change; when both changed the line of
    one file differently, the newer side's wins and is recorded as a :class:`Contest`.
    The result follows the newer side's order, then what only the older side has.
    """
    def keyed(lines: list[str]) -> dict[Any, str]:
        out: dict[Any, str] = {}
        for line in lines:
            out.setdefault(_key(line) or ("text", line.rstrip("\r\n")), line)
        return out

    def same(a: str, b: str) -> bool:
        return a.rstrip("\r\n") == b.rstrip("\r\n")

    old, newer, older = keyed(base), *((keyed(mine), keyed(theirs)) if mine_newer
                                       else (keyed(theirs), keyed(mine)))

    def choose(k: Any) -> str | None:
        a, b, o = newer.get(k), older.get(k), old.get(k)
        if a is not None and b is not None:
            if same(a, b) or (o is not None and same(b, o)):
                return a
            if o is not None and same(a, o):
                return b
            contests.append(Contest(str(k), a.rstrip("\r\n"), b.rstrip("\r\n"),
                                    "mine" if mine_newer else "theirs"))
            return a
        present = a if a is not None else b
        if present is None or (o is not None and same(present, o)):
            return None  # removed on one side, untouched on the other
        return present

    out: list[str] = []
    done: set[Any] = set()
    for side, lines in ((0, mine if mine_newer else theirs), (1, theirs if mine_newer else mine)):
        for line in lines:
            if not line.strip():
                if side == 0:
                    out.append(line)
                continue
            k = _key(line) or ("text", line.rstrip("\r\n"))
            if k in done:
                continue
            done.add(k)
            chosen = choose(k)
            if chosen is not None:
                out.append(chosen)
    return out


def merge3(base: str, mine: str, theirs: str, *, mine_newer: bool) -> tuple[str, list[Contest]]:
    """Merge two edits (``mine``, ``theirs``) of the index ``base``, line by line.

    A change made on one side only is taken as it is. Where both changed the same lines,
    the line of each file comes from the newer side (``mine_newer``) and every such
    file is returned as a :class:`Contest`; lines only one side has are all kept.
    """
    contests: list[Contest] = []
    b, m, t = (x.splitlines(keepends=True) for x in (base, mine, theirs))
    out: list[str] = []
    for region in _regions(b, m, t):
        if region[0] in ("same", "one"):
            out += region[1]
        else:
            out += _settle(region[1], region[2], region[3], mine_newer, contests)
    for i, line in enumerate(out[:-1]):  # a side's last line may lack its newline
        if not line.endswith("\n"):
            out[i] = line + "\n"
    return "".join(out), contests


def undo_legacy_rewrite(base: str, theirs: str) -> str:
    """``theirs`` as if an older version had not rewritten the whole index.

    Such a rewrite sorts every line, replaces titles and hooks and adds a heading; what it
    means is only which files were added and removed. So the result is ``base`` without
    the lines of files ``theirs`` dropped, plus ``theirs``'s lines for new files, and its
    merge with this side's edits loses none of them.
    """
    theirs_lines = {k: line for line in theirs.splitlines(keepends=True)
                    if (k := _key(line)) is not None}
    lines = base.splitlines(keepends=True)
    legacy = _legacy_lines([line.rstrip("\r\n") for line in lines])
    out: list[str] = []
    seen: set[str] = set()
    for i, line in enumerate(lines):
        k = _key(line)
        if i in legacy or (k is not None and k not in theirs_lines):
            continue
        if k is not None:
            seen.add(k)
        out.append(line)
    new = [line if line.endswith("\n") else line + "\n"
           for k, line in theirs_lines.items() if k not in seen]
    if out and new and not out[-1].endswith("\n"):
        out[-1] += "\n"
    return "".join(out + new)


def is_legacy(text: str) -> bool:
    """Whether ``text`` was rebuilt by a version before this one."""
    return any(line.strip() == LEGACY_PREAMBLE for line in text.splitlines())
