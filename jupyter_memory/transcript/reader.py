"""Reading the JSONL session log fast, from its last compaction boundary (docs/reference.md#the-transcript).

Blank, corrupt and unknown lines are skipped and counted, never fatal. A large log is
read from its last ``compact_boundary`` without parsing anything before it: the boundary
is found by searching the file backwards for its bytes.
"""

from __future__ import annotations

import json
import os
import re
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any

from jupyter_memory.errors import PathRefused
from jupyter_memory.memdir.gateway import Root, person_root
from jupyter_memory.transcript.entries import KNOWN_TYPES, is_boundary, is_valid, last_boundary

__all__ = ["FAST_PATH_BYTES", "EntryList", "ReadStats", "find_session_log", "read_entries"]

FAST_PATH_BYTES = 5 * 1024 * 1024
"""Logs larger than this are read from their last compaction boundary without parsing
(or holding) anything before it."""

SCAN_BLOCK_BYTES = 1024 * 1024
"""Block size of the backwards search for the last boundary."""

_BOUNDARY_BYTES = b'"compact_boundary"'


@dataclass
class ReadStats:
    """What :func:`read_entries` did: where it started and what it skipped."""

    path: Path
    file_bytes: int = 0
    fast_path: bool = False
    """True when the file was large enough for the backwards boundary search."""
    boundary_found: bool = False
    start_offset: int = 0
    """Byte offset parsing started at (the boundary's line on the fast path)."""
    bytes_scanned_backwards: int = 0
    lines_read: int = 0
    lines_parsed: int = 0
    """Lines handed to the JSON parser (on the fast path: only the boundary onwards)."""
    blank_lines: int = 0
    corrupt_lines: int = 0
    invalid_entries: int = 0
    """Known types with an unusable shape (e.g. a user entry without a message)."""
    duplicate_entries: int = 0
    skipped_types: dict[str, int] = field(default_factory=dict)
    entries_before_boundary: int = 0
    """Entries parsed then dropped because they precede the boundary (small files)."""


class EntryList(list[dict[str, Any]]):
    """The entries of a log, in file order, with the :class:`ReadStats` of the read."""

    def __init__(self, entries: Iterable[dict[str, Any]], stats: ReadStats) -> None:
        super().__init__(entries)
        self.stats = stats


def read_entries(path: Path, *, from_last_boundary: bool = True,
                 root: Root | None = None) -> EntryList:
    """Read a session log, skipping blank, corrupt and unknown lines without failing.

    With ``from_last_boundary`` the result starts at the last ``compact_boundary`` entry
    (included). For files over :data:`FAST_PATH_BYTES` that boundary is found by
    searching the file backwards for its byte pattern, and nothing before it is parsed or
    kept in memory. Entries of types other than user, assistant and system (progress,
    file-history snapshots, ...) are dropped and spliced out of the ``parentUuid`` chain:
    a child of a dropped entry is re-pointed at that entry's own parent. The log is read
    through ``root`` (default: its own folder, as a path the person gave).
    """
    path = Path(path)
    stats = ReadStats(path=path)
    with (root or person_root(path)).reader(path) as handle:
        size = os.fstat(handle.fileno()).st_size
        stats.file_bytes = size
        start = 0
        if from_last_boundary and size > FAST_PATH_BYTES:
            stats.fast_path = True
            found = _find_last_boundary(handle, size, stats)
            if found is not None:
                start = found
                stats.boundary_found = True
        handle.seek(start)
        stats.start_offset = start
        entries = _parse(handle, stats)
    if from_last_boundary and not stats.fast_path:
        last = last_boundary(entries)
        if last is not None:
            stats.boundary_found = True
            stats.entries_before_boundary = last
            entries = entries[last:]
    return EntryList(entries, stats)



def _parse(handle: IO[bytes], stats: ReadStats) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    seen: set[str] = set()
    spliced: dict[str, Any] = {}  # uuid of a dropped entry -> its (resolved) parent
    skipped: Counter[str] = Counter()
    for raw in handle:
        stats.lines_read += 1
        if not raw.strip():
            stats.blank_lines += 1
            continue
        stats.lines_parsed += 1
        try:
            entry = json.loads(raw)
        except ValueError:  # includes UnicodeDecodeError
            stats.corrupt_lines += 1
            continue
        if not isinstance(entry, dict):
            stats.corrupt_lines += 1
            continue
        uid = entry.get("uuid")
        parent = entry.get("parentUuid")
        if isinstance(parent, str) and parent in spliced:
            parent = spliced[parent]
        kind = entry.get("type")
        if kind not in KNOWN_TYPES or not is_valid(entry):
            if kind in KNOWN_TYPES:
                stats.invalid_entries += 1
            else:
                skipped[kind if isinstance(kind, str) else "(no type)"] += 1
            if isinstance(uid, str):
                spliced[uid] = parent
            continue
        if isinstance(uid, str):
            if uid in seen:
                stats.duplicate_entries += 1
                continue
            seen.add(uid)
        if parent != entry.get("parentUuid"):
            entry["parentUuid"] = parent
        out.append(entry)
    stats.skipped_types = dict(skipped)
    return out


def _find_last_boundary(handle: IO[bytes], size: int, stats: ReadStats) -> int | None:
    """Byte offset of the line holding the last real compaction boundary, or None.

    Blocks are read from the end towards the start; each hit of the pattern is
    confirmed by parsing its line (the words may also appear in data, e.g. a tool input).
    A line is parsed once: hits further back in a line already found not to be a boundary
    are skipped, so a long line that names the boundary again and again (a tool result
    quoting a log) costs one parse, not one per hit.
    """
    keep = len(_BOUNDARY_BYTES) - 1  # overlap so a hit across two blocks is still found
    high = size
    carry = b""
    checked = size  # the lines from this offset on are not boundaries
    while high > 0:
        low = max(0, high - SCAN_BLOCK_BYTES)
        handle.seek(low)
        block = handle.read(high - low)
        stats.bytes_scanned_backwards += len(block)
        data = block + carry
        end = min(len(block), checked - low) + keep  # hits that start before `checked`
        hit = data.rfind(_BOUNDARY_BYTES, 0, end) if end > keep else -1
        while hit != -1:
            line_start = _line_start(handle, data, low, hit)
            handle.seek(line_start)
            if _is_boundary_line(handle.readline()):
                return line_start
            checked = line_start
            end = checked - low + keep
            hit = data.rfind(_BOUNDARY_BYTES, 0, end) if end > keep else -1
        carry = data[:keep]
        high = low
    return None


def _line_start(handle: IO[bytes], data: bytes, low: int, hit: int) -> int:
    newline = data.rfind(b"\n", 0, hit)
    if newline != -1:
        return low + newline + 1
    position = low  # the line began before this block: keep walking back
    while position > 0:
        earlier = max(0, position - SCAN_BLOCK_BYTES)
        handle.seek(earlier)
        chunk = handle.read(position - earlier)
        newline = chunk.rfind(b"\n")
        if newline != -1:
            return earlier + newline + 1
        position = earlier
    return 0


def _is_boundary_line(line: bytes) -> bool:
    try:
        entry = json.loads(line)
    except ValueError:
        return False
    return isinstance(entry, dict) and is_boundary(entry)


#: A session id as this package and the reference write them (uuids); anything else, read
#: from a file someone else wrote, is never made into a path.
_SESSION_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9_-]{0,99}")


def find_session_log(session_id: str, projects: Path) -> Path | None:
    """The log ``<projects>/<key>/<session id>.jsonl`` of the session, whatever folder it
    ran in, or None (no such log, or an id that is not one). Read through the gateway:
    a folder or log that is a symbolic link is passed over."""
    if not isinstance(session_id, str) or not _SESSION_ID.fullmatch(session_id):
        return None
    root = Root.declare("config", projects, label="the session logs folder")
    try:
        folders = sorted(e.name for e in root.scandir()
                         if e.is_dir(follow_symlinks=False))
    except (OSError, PathRefused):
        return None
    for folder in folders:
        name = f"{folder}/{session_id}.jsonl"
        if root.is_file(name):
            return root.locate(name)
    return None
