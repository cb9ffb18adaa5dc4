"""Scanning a memdir: every topic file's frontmatter, newest first (docs/reference.md#path-b-relevance-prefetch).

A scan lists the files with ``stat`` only, sorts them by modification time, keeps the
newest ``limit`` and reads the first 30 lines of just those. A :class:`ScanCache` keeps
each parsed head keyed on path, ``mtime_ns`` and size, so scanning an unchanged memdir
again (every turn of the agent, every ``%memory``) costs one ``stat`` per file and no
reads. A cache made with ``trust_folders=True`` (the one recall uses every turn) also
keeps the walk itself while no folder of the memdir changed (``mtime_ns`` of each
folder), so a turn on an unchanged memdir costs a ``stat`` per folder, not per file;
results derived from a scan (recall explanations) are kept with :meth:`ScanCache.memo`
until the walk or ``MEMORY.md`` changes. Nothing here raises for a bad file: an
unreadable file is listed with an ``error`` and bytes that are not UTF-8 are shown as
U+FFFD (``doctor`` reports them), because a memory that silently vanishes from the list
is worse.
"""

from __future__ import annotations

import os
import stat as stat_mod
import threading
import time
from collections.abc import Callable, Hashable, Iterable
from dataclasses import replace
from pathlib import Path
from typing import Any, TypeVar

from jupyter_memory.errors import InvalidPath
from jupyter_memory.memdir.clock import iso_utc
from jupyter_memory.memdir.freshness import age_days
from jupyter_memory.memdir.frontmatter import Document, parse
from jupyter_memory.memdir.gateway import Root
from jupyter_memory.memdir.index import INDEX_NAME, Index, normalize_file, parse_index
from jupyter_memory.memdir.record import Memory

__all__ = [
    "HEAD_LINES",
    "SCAN_LIMIT",
    "FileStat",
    "ScanCache",
    "describe",
    "list_files",
    "manifest",
    "manifest_line",
    "read_document",
    "read_index",
    "scan",
]

HEAD_LINES = 30
_TEAM_INDEX = "team/" + INDEX_NAME  # the nested team folder's own index is no memory either
"""Lines read from each file: enough for any real frontmatter."""
SCAN_LIMIT = 200
"""Most files a scan returns (the newest), as the reference's relevance selector sees."""
RACY_SECONDS = 2.0
"""A folder changed this recently may change again within the same timestamp tick, so a
walk that saw it is not trusted (the next scan walks again), as git treats a racy index."""

T = TypeVar("T")


class FileStat:
    """A topic file found by the walk: its memdir-relative name, absolute path and ``stat``.

    Plain strings, not ``Path`` objects: building thousands of ``Path`` objects would cost
    more than the ``stat`` calls themselves.
    """

    __slots__ = ("abspath", "file", "listed", "root", "stat")

    def __init__(self, file: str, abspath: str, stat: os.stat_result, root: Root,
                 listed: bool = False) -> None:
        self.file = file
        self.abspath = abspath
        self.stat = stat
        self.root = root  # the memdir the walk found it in, which its read goes through
        self.listed = listed  # a regular file (not a link) the walk listed itself

    @property
    def path(self) -> Path:
        return Path(self.abspath)

    def __repr__(self) -> str:
        return f"FileStat({self.file!r})"


def _clone(template: Memory, mtime: float, age: int, size: int, indexed: bool) -> Memory:
    """A copy of a cached record with the per-scan fields set (several times cheaper than
    ``dataclasses.replace``, which matters on warm scans of thousands of files)."""
    state = getattr(template, "__dict__", None)
    if state is None:  # a slotted record: take the slow, general way
        return replace(template, mtime=mtime, age_days=age, bytes=size, indexed=indexed)
    fields = state.copy()
    fields["mtime"] = mtime
    fields["age_days"] = age
    fields["bytes"] = size
    fields["indexed"] = indexed
    memory = object.__new__(Memory)
    memory.__dict__ = fields
    return memory


class ScanCache:
    """Parsed heads of topic files, valid while path, ``mtime_ns`` and size are unchanged.

    ``files_read`` counts the files actually opened, so callers (and tests) can see that
    a warm scan read nothing. Safe to share between threads.

    With ``trust_folders`` the walk is reused while every folder keeps its ``mtime_ns``:
    files added, removed or renamed (every write through ``fsutil.atomic_write``) change
    it, but a file rewritten in place by another program does not, so such an edit shows
    at the next change of its folder. Without it (the default) every scan walks again.
    ``walks`` counts the walks done.
    """

    def __init__(self, *, trust_folders: bool = False) -> None:
        self.trust_folders = trust_folders
        self._entries: dict[str, tuple[int, int, Memory]] = {}
        self._index: tuple[str, int, int, Index, frozenset[str]] | None = None
        self._listing: _Listing | None = None
        self._memo: dict[str, tuple[Hashable, Any, float]] = {}
        self._lock = threading.Lock()
        self.files_read = 0
        self.walks = 0

    def __len__(self) -> int:
        return len(self._entries)

    def memory(self, entry: FileStat, pointed: frozenset[str] | set[str], now: float) -> Memory:
        """The record for ``entry``; the file is read only if it changed since last time."""
        return self.memories([entry], pointed, now)[0]

    def memories(
        self, entries: list[FileStat], pointed: frozenset[str] | set[str], now: float
    ) -> list[Memory]:
        """Records for ``entries`` in order, reading only files that changed.

        Each caller gets fresh records, so nothing it does to them can leak into the
        cache. This loop is the whole cost of a warm scan besides the ``stat`` calls.
        """
        cached = self._entries
        out: list[Memory] = []
        for entry in entries:
            st = entry.stat
            hit = cached.get(entry.abspath)  # a dict read is atomic; writes take the lock
            if hit is None or hit[0] != st.st_mtime_ns or hit[1] != st.st_size:
                template = self._load(entry, now)
            else:
                template = hit[2]
            mtime = st.st_mtime
            out.append(
                _clone(template, mtime, age_days(mtime, now), st.st_size, entry.file in pointed)
            )
        return out

    def _load(self, entry: FileStat, now: float) -> Memory:
        st = entry.stat
        doc = read_document(entry.abspath, entry.root, listed=entry.listed)
        template = Memory.from_document(entry.file, entry.abspath, doc, st, False, now=now)
        with self._lock:
            self.files_read += 1
            self._entries[entry.abspath] = (st.st_mtime_ns, st.st_size, template)
        return template

    def index(self, memdir: Path) -> Index:
        """The parsed ``MEMORY.md`` of ``memdir`` (empty when missing), cached the same way."""
        return self._index_entry(memdir)[0]

    def pointed(self, memdir: Path) -> frozenset[str]:
        """Normalised files the index has a pointer line for."""
        return self._index_entry(memdir)[1]

    def _index_entry(self, memdir: Path) -> tuple[Index, frozenset[str]]:
        path = str(Path(memdir) / INDEX_NAME)
        try:
            st = os.stat(path)
        except OSError:
            return parse_index(""), frozenset()
        with self._lock:
            hit = self._index
        if hit is not None and hit[:3] == (path, st.st_mtime_ns, st.st_size):
            return hit[3], hit[4]
        index = read_index(Path(memdir))
        files = frozenset(index.files())
        with self._lock:
            self._index = (path, st.st_mtime_ns, st.st_size, index, files)
        return index, files

    def files(self, memdir: Path) -> list[FileStat]:
        """Every topic file of ``memdir``, newest first (ties by name); do not modify."""
        return self._walk(memdir).files

    def state(self, memdir: Path) -> Hashable:
        """A token that changes whenever the walk or ``MEMORY.md`` of ``memdir`` changes."""
        listing = self._walk(memdir)
        path = os.path.join(os.fspath(memdir), INDEX_NAME)
        try:
            st = os.stat(path)
            index_key: tuple[int, int] | None = (st.st_mtime_ns, st.st_size)
        except OSError:
            index_key = None
        return (listing.serial, index_key)

    def memo(self, memdir: Path, name: str, extra: Hashable,
             build: Callable[[], tuple[T, float]]) -> T:
        """``build()``'s value, kept while the memdir's :meth:`state` and ``extra`` hold.

        ``build`` returns ``(value, expires)``: the value is also rebuilt once the clock
        passes ``expires`` (a time from ``time.time()``; ages in days change with it).
        """
        key = (self.state(memdir), extra)
        with self._lock:
            hit = self._memo.get(name)
        if hit is not None and hit[0] == key and time.time() < hit[2]:
            return hit[1]  # type: ignore[no-any-return]
        value, expires = build()
        with self._lock:
            self._memo[name] = (key, value, expires)
        return value

    def _walk(self, memdir: Path) -> _Listing:
        root = os.fspath(memdir)
        with self._lock:
            listing = self._listing
        if self.trust_folders and listing is not None and listing.root == root \
                and listing.trusted and _unchanged(listing.folders):
            return listing
        files, folders = _list(memdir)
        files.sort(key=lambda f: (-f.stat.st_mtime_ns, f.file))
        newest = max((t for _, t in folders if t is not None), default=0)
        trusted = time.time_ns() - newest > RACY_SECONDS * 1e9
        with self._lock:
            serial = (self._listing.serial + 1) if self._listing is not None else 1
            listing = _Listing(root, tuple(folders), files, trusted, serial)
            self._listing = listing
            self.walks += 1
        return listing

    def forget_missing(self, seen: Iterable[str], count: int | None = None) -> None:
        """Drop entries for files that no longer exist, so the cache cannot grow forever.

        With ``count`` (how many files exist) nothing is done while the cache is no larger,
        which is the common case of an unchanged memdir.
        """
        if count is not None and len(self._entries) <= count:
            return
        keep = set(seen)
        with self._lock:
            for key in [k for k in self._entries if k not in keep]:
                del self._entries[key]

    def clear(self) -> None:
        with self._lock:
            self._entries.clear()
            self._index = None
            self._listing = None
            self._memo.clear()


class _Listing:
    """One walk of a memdir: its files sorted newest first and the folder times it saw."""

    __slots__ = ("files", "folders", "root", "serial", "trusted")

    def __init__(self, root: str, folders: tuple[tuple[str, int | None], ...],
                 files: list[FileStat], trusted: bool, serial: int) -> None:
        self.root = root
        self.folders = folders
        self.files = files
        self.trusted = trusted
        self.serial = serial


def _unchanged(folders: Iterable[tuple[str, int | None]]) -> bool:
    for path, mtime in folders:
        try:
            now = os.stat(path).st_mtime_ns
        except OSError:
            now = None
        if now != mtime:
            return False
    return True


def read_document(path: str | os.PathLike[str], root: Root, *, listed: bool = False) -> Document:
    """Parse the first :data:`HEAD_LINES` lines of ``path`` (read through ``root``; ``listed``
    for a regular file the walk found, see ``Root.head``); an unreadable file gets an error."""
    try:
        head = root.head(path, HEAD_LINES, listed=listed)
    except OSError as exc:
        reason = exc.strerror or type(exc).__name__
        return Document({}, "", None, "none", f"could not read the file: {reason}")
    except InvalidPath as exc:
        return Document({}, "", None, "none", f"could not read the file: {exc}")
    return parse(head)


def read_index(memdir: Path) -> Index:
    """Parse ``<memdir>/MEMORY.md``; a missing or unreadable index is an empty one."""
    try:  # never through a link: it could pull any file on disk into every request
        raw = Root.declare("memdir", memdir).read(INDEX_NAME, follow=False)
    except (OSError, InvalidPath):
        return parse_index("")
    return parse_index(raw.decode("utf-8", errors="replace"))


def _inside(real: str, root: str) -> bool:
    return real == root or real.startswith(root.rstrip(os.sep) + os.sep)


def list_files(memdir: Path) -> list[FileStat]:
    """Every topic file under ``memdir``, unsorted.

    Included: regular ``*.md`` files at any depth, except the top-level ``MEMORY.md``.
    Skipped: names starting with ``.`` (hidden files and folders, the lock, temporary
    files of interrupted writes), symlinked folders (no loops, no double listing) and
    symlinks that lead outside the memdir.
    """
    return _list(memdir)[0]


def _list(memdir: Path) -> tuple[list[FileStat], list[tuple[str, int | None]]]:
    """The files of :func:`list_files` and each folder walked with its ``mtime_ns``
    (taken before the folder is read, so a change during the walk shows next time; a
    memdir that does not exist is recorded as ``None`` so its creation shows too)."""
    gateway = Root.declare("memdir", memdir)
    root = str(gateway.real)
    found: list[FileStat] = []
    folders: list[tuple[str, int | None]] = []
    top = os.fspath(memdir).rstrip("/") or "/"
    stack: list[tuple[str, str]] = [(top, "")]
    while stack:
        folder, prefix = stack.pop()
        # stat through a folder descriptor: no path walk per file
        with gateway.listing(folder) as listing:
            if listing is None:
                if folder == top:
                    folders.append((folder, None))
                continue
            folders.append((folder, listing.mtime_ns))
            _list_folder(listing.entries, folder, prefix, gateway, root, found, stack)
    return found, folders


def _list_folder(
    entries: list[os.DirEntry[str]],
    folder: str,
    prefix: str,
    gateway: Root,
    root: str,
    found: list[FileStat],
    stack: list[tuple[str, str]],
) -> None:
    for entry in entries:
        name = entry.name
        if name.startswith("."):
            continue
        path = f"{folder}/{name}"
        try:
            if not name.endswith(".md"):
                if entry.is_dir(follow_symlinks=False):  # symlinked folders stay closed
                    stack.append((path, f"{prefix}{name}/"))
                continue
            link = entry.is_symlink()
            if link and not _inside(os.path.realpath(path), root):
                continue
            st = entry.stat()  # follows a link that stays inside
        except OSError:
            continue
        rel = prefix + name
        if stat_mod.S_ISREG(st.st_mode):
            if rel not in (INDEX_NAME, _TEAM_INDEX):
                found.append(FileStat(rel, path, st, gateway, listed=not link))
        elif stat_mod.S_ISDIR(st.st_mode) and not link:  # a folder named like "x.md"
            stack.append((path, rel + "/"))


def scan(
    memdir: Path,
    *,
    limit: int | None = SCAN_LIMIT,
    cache: ScanCache | None = None,
    now: float | None = None,
) -> list[Memory]:
    """The memdir's topic files as :class:`Memory` records, newest first.

    At most ``limit`` files (``None`` for all); only those are read, and only their first
    30 lines. Ties in modification time are ordered by file name so output is stable.
    ``indexed`` tells whether ``MEMORY.md`` has a pointer line for the file.
    """
    cache = cache if cache is not None else ScanCache()
    clock = time.time() if now is None else now
    files = cache.files(memdir)
    chosen = files if limit is None else files[: max(limit, 0)]
    pointed = cache.pointed(Path(memdir))
    memories = cache.memories(chosen, pointed, clock)
    cache.forget_missing((entry.abspath for entry in files), len(files))
    return memories


def describe(
    memdir: Path,
    file: str,
    *,
    cache: ScanCache | None = None,
    now: float | None = None,
) -> Memory | None:
    """One topic file's record by its memdir-relative name, or ``None`` when it is absent."""
    rel = normalize_file(file)
    path = os.path.join(os.fspath(memdir), rel)
    try:
        st = os.stat(path)
    except OSError:
        return None
    if not stat_mod.S_ISREG(st.st_mode):
        return None
    cache = cache if cache is not None else ScanCache()
    clock = time.time() if now is None else now
    return cache.memory(FileStat(rel, path, st, Root.declare("memdir", memdir)),
                        cache.pointed(Path(memdir)), clock)


def manifest_line(memory: Memory) -> str:
    """``- [type] file (ISO-timestamp): description``, parts omitted when absent."""
    kind = f"[{memory.type}] " if memory.type_known else ""
    description = " ".join((memory.description or "").split())
    tail = f": {description}" if description else ""
    return f"- {kind}{memory.file} ({iso_utc(memory.mtime)}){tail}"


def manifest(memories: Iterable[Memory]) -> str:
    """The list of memories the relevance selector and the extraction agent are shown."""
    return "\n".join(manifest_line(memory) for memory in memories)
