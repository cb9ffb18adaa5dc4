"""Safe file primitives: atomic writes, the memdir lock, and bounded reads.

Every write to a memdir goes through :func:`atomic_write` so a crash, a full disk or a
Ctrl-C in the middle of a write leaves either the old file or the new one, never half of
each. Writers hold :func:`memdir_lock` so two kernels (or two threads of one kernel)
cannot interleave a read-modify-write of the same index.
"""

from __future__ import annotations

import codecs
import contextlib
import errno
import os
import stat
import tempfile
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO

from jupyter_memory.errors import LockTimeout, SymlinkRefused
from jupyter_memory.memdir.locking import LOCKS, NOFOLLOW

__all__ = [
    "LOCK_NAME",
    "TEMP_SUFFIX",
    "atomic_write",
    "is_temp_file",
    "memdir_lock",
    "read_head",
    "read_no_follow",
    "refuse_symlink",
]

LOCK_NAME = ".lock"
"""Name of the lock file inside a memdir (never a memory: it does not end in ``.md``)."""

TEMP_SUFFIX = ".tmp"
"""Suffix of the temporary files :func:`atomic_write` creates (``.<name>.<random>.tmp``)."""

_DEFAULT_FILE_MODE = 0o666
_O_CLOEXEC = getattr(os, "O_CLOEXEC", 0)


# --------------------------------------------------------------------------- links


def _symlink_error(path: str | os.PathLike[str], what: str | None) -> SymlinkRefused:
    try:
        target = os.readlink(path)
    except OSError:
        target = "?"
    name = what or os.fspath(path)
    return SymlinkRefused(
        f"{name} ({os.fspath(path)}) is a symbolic link to {target}; the memory store does not "
        "read or write through links, because a link there could expose or overwrite any "
        f"file on disk. Remove the link (rm {os.fspath(path)!r}); if you meant to keep that "
        "file's content, copy it into a regular file in its place first. `jupyter-memory "
        "doctor` lists such links."
    )


def refuse_symlink(path: str | os.PathLike[str], what: str | None = None) -> None:
    """Raise :class:`~jupyter_memory.errors.SymlinkRefused` if ``path`` itself is a symlink.

    The one path check for files the store owns (``MEMORY.md``, ``.lock``, import
    targets): their last component must not be a link, dangling or not. Folders above
    them may be links (a memdir kept on another disk is fine).
    """
    if os.path.islink(path):
        raise _symlink_error(path, what)


def read_no_follow(path: str | os.PathLike[str], what: str | None = None) -> bytes:
    """The bytes of a regular file, refusing a symlink (``O_NOFOLLOW``) or a special file.

    Opening with ``O_NOFOLLOW`` leaves no gap between a check and the read in which a
    link could be swapped in. ``FileNotFoundError`` passes through (a missing index is
    an empty one to most callers).
    """
    try:
        fd = os.open(path, os.O_RDONLY | NOFOLLOW | _O_CLOEXEC | getattr(os, "O_NONBLOCK", 0))
    except OSError as exc:
        if exc.errno == errno.ELOOP or (exc.errno != errno.ENOENT and os.path.islink(path)):
            raise _symlink_error(path, what) from None
        raise
    with os.fdopen(fd, "rb") as handle:
        if not stat.S_ISREG(os.fstat(handle.fileno()).st_mode):
            raise SymlinkRefused(
                f"{what or os.fspath(path)} ({os.fspath(path)}) is not a regular file; remove "
                "it and let the store create it again."
            )
        return handle.read()


# --------------------------------------------------------------------------- writes


def atomic_write(
    path: str | os.PathLike[str],
    data: str | bytes,
    *,
    mode: int | None = None,
    follow_symlinks: bool = True,
) -> None:
    """Replace ``path`` with ``data`` so readers see the old file or the new one, never a mix.

    The data goes to a temporary file in the same folder, is flushed and fsynced, renamed
    over ``path`` and the folder is fsynced so the rename itself survives a power cut.
    ``str`` data is encoded as UTF-8. With ``mode=None`` an existing file keeps its
    permission bits and a new file gets the usual ``0o666 & ~umask``. Missing parent
    folders are created. A symlink at ``path`` is followed, so the file it points to is
    replaced and the link stays a link — unless ``follow_symlinks=False``, which the store
    passes for the files it owns: then a link at ``path`` is refused with
    :class:`~jupyter_memory.errors.SymlinkRefused` and nothing is written. (The rename
    itself never follows a link that appears later: it would replace the link.) On any
    failure, including ``KeyboardInterrupt``, the temporary file is removed and ``path``
    is left untouched.
    """
    if not follow_symlinks:
        refuse_symlink(path)
    target = Path(os.path.realpath(path)) if os.path.islink(path) else Path(path)
    payload = data.encode("utf-8") if isinstance(data, str) else bytes(data)
    directory = target.parent
    created = _make_dirs(directory)

    if mode is None:
        try:
            mode = stat.S_IMODE(os.stat(target).st_mode)
        except FileNotFoundError:
            mode = _DEFAULT_FILE_MODE & ~_current_umask()

    tmp: str | None = None
    try:
        fd, tmp = tempfile.mkstemp(prefix=f".{target.name}.", suffix=TEMP_SUFFIX, dir=directory)
        with os.fdopen(fd, "wb") as handle:
            handle.write(payload)
            handle.flush()
            os.fsync(handle.fileno())
        os.chmod(tmp, mode)
        os.replace(tmp, target)
        tmp = None
    finally:
        if tmp is not None:
            with contextlib.suppress(OSError):
                os.unlink(tmp)

    _fsync_dir(directory)
    for folder in created:  # new folders must be recorded in their parents too
        _fsync_dir(folder.parent)


def is_temp_file(name: str) -> bool:
    """Whether a file name looks like a temporary file left behind by a crashed write."""
    return name.startswith(".") and name.endswith(TEMP_SUFFIX)


def _make_dirs(directory: Path) -> list[Path]:
    """Create ``directory`` and missing parents; return the ones created, outermost first."""
    missing: list[Path] = []
    probe = directory
    while not probe.exists() and probe != probe.parent:
        missing.append(probe)
        probe = probe.parent
    directory.mkdir(parents=True, exist_ok=True)
    return list(reversed(missing))


def _fsync_dir(directory: Path) -> None:
    try:
        fd = os.open(directory, os.O_RDONLY | getattr(os, "O_DIRECTORY", 0))
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError as exc:  # some file systems cannot fsync a directory
        if exc.errno not in (errno.EINVAL, errno.ENOTSUP, errno.EBADF):
            raise
    finally:
        os.close(fd)


_umask_lock = threading.Lock()


def _current_umask() -> int:
    """The process umask, read without changing it where the OS allows that."""
    try:
        with open("/proc/self/status", encoding="ascii", errors="replace") as status:
            for line in status:
                if line.startswith("Umask:"):
                    return int(line.split()[1], 8)
    except (OSError, ValueError, IndexError):
        pass
    with _umask_lock:  # the portable way briefly sets it; keep other writers of ours out
        current = os.umask(0o022)
        os.umask(current)
    return current


# --------------------------------------------------------------------------- locking


@dataclass
class _LockState:
    """Per-memdir state shared by the threads of one process."""

    rlock: threading.RLock = field(default_factory=threading.RLock)
    depth: int = 0
    fd: int | None = None


_states: dict[str, _LockState] = {}
_states_guard = threading.Lock()


def _reset_after_fork() -> None:
    # A forked child holds no flock of its own and must not inherit our thread locks.
    global _states, _states_guard
    _states = {}
    _states_guard = threading.Lock()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_reset_after_fork)


def _state_for(key: str) -> _LockState:
    with _states_guard:
        state = _states.get(key)
        if state is None:
            state = _states[key] = _LockState()
        return state


@contextlib.contextmanager
def memdir_lock(memdir: str | os.PathLike[str], timeout: float | None = 30.0) -> Iterator[Path]:
    """Hold the exclusive write lock of a memdir; yields the lock file's path.

    Excludes other processes (an OS file lock on ``<memdir>/.lock``, see :mod:`.locking`) and other threads of
    this process. Re-entrant within one thread, so a store method that holds the lock may
    call another that takes it again. The memdir is created if missing. ``timeout`` is in
    seconds (``None`` waits forever, ``0`` tries once); when it runs out
    :class:`~jupyter_memory.errors.LockTimeout` says who holds the lock. The kernel drops
    a flock when its holder exits, so a crashed writer never leaves the memdir locked.
    """
    directory = Path(memdir)
    directory.mkdir(parents=True, exist_ok=True)
    lock_path = directory / LOCK_NAME
    state = _state_for(os.path.realpath(directory))
    deadline = None if timeout is None else time.monotonic() + max(timeout, 0.0)

    if not state.rlock.acquire(timeout=_remaining(deadline)):
        raise LockTimeout(
            f"Timed out after {timeout:g}s waiting for the memory lock {lock_path}: another "
            "thread of this process is still writing to this memdir. Wait for that operation "
            "to finish, then retry."
        )
    try:
        if state.depth == 0:
            state.fd = _flock(lock_path, deadline, timeout)
        state.depth += 1
        try:
            yield lock_path
        finally:
            state.depth -= 1
            if state.depth == 0 and state.fd is not None:
                fd, state.fd = state.fd, None
                try:
                    LOCKS.unlock(fd)
                finally:
                    os.close(fd)
    finally:
        state.rlock.release()


def _remaining(deadline: float | None) -> float:
    if deadline is None:
        return -1  # threading's "wait forever"
    return max(deadline - time.monotonic(), 0.0)


def _flock(lock_path: Path, deadline: float | None, timeout: float | None) -> int:
    """Open ``lock_path`` and take an exclusive flock on it, polling until ``deadline``."""
    try:  # O_NOFOLLOW: a linked .lock must not let ftruncate empty the file it points to
        fd = os.open(lock_path, os.O_RDWR | os.O_CREAT | NOFOLLOW | _O_CLOEXEC, 0o600)
    except PermissionError:
        # A shared folder (a team memory on a shared disk) whose lock file another user
        # created: a lock works on a read-only descriptor too, so it still excludes.
        fd = os.open(lock_path, os.O_RDONLY | NOFOLLOW | _O_CLOEXEC)
    except OSError as exc:
        if exc.errno == errno.ELOOP or os.path.islink(lock_path):
            raise _symlink_error(lock_path, "The memory lock") from None
        raise
    if not stat.S_ISREG(os.fstat(fd).st_mode):
        os.close(fd)
        raise SymlinkRefused(
            f"The memory lock {lock_path} is not a regular file; remove it and retry."
        )
    delay = 0.002
    try:
        while True:
            if LOCKS.try_lock(fd):
                break
            if deadline is not None and time.monotonic() >= deadline:
                holder = _read_holder(lock_path)
                who = f"process {holder}" if holder else "another process"
                raise LockTimeout(
                    f"Timed out after {timeout:g}s waiting for the memory lock {lock_path}: "
                    f"{who} (another kernel, CLI or server) is writing to this memdir. Retry "
                    "when it has finished; if that process is hung, stop it — the lock is "
                    "released as soon as its holder exits."
                )
            pause = delay if deadline is None else min(delay, _remaining(deadline))
            time.sleep(pause)
            delay = min(delay * 2, 0.05)
        _write_holder(fd)
    except BaseException:
        os.close(fd)
        raise
    return fd


def _write_holder(fd: int) -> None:
    """Record our pid in the lock file: only used to name the holder in a timeout message."""
    with contextlib.suppress(OSError):
        os.ftruncate(fd, 0)
        os.pwrite(fd, f"{os.getpid()}\n".encode("ascii"), 0)


def _read_holder(lock_path: Path) -> int | None:
    try:
        text = read_no_follow(lock_path).decode("ascii", errors="replace").strip()
    except (OSError, SymlinkRefused):
        return None
    return int(text) if text.isdigit() else None


# --------------------------------------------------------------------------- reads


def read_head(
    path: str | os.PathLike[str] | IO[bytes], max_lines: int = 30, *, max_bytes: int = 64 * 1024
) -> str:
    """The first ``max_lines`` lines of a file, reading at most ``max_bytes`` bytes.

    Scanning a memdir only needs each file's frontmatter, so this never reads a whole
    (possibly huge) file. Line endings are kept. Bytes that are not UTF-8 become U+FFFD,
    and a multi-byte character cut by the byte limit is dropped rather than mangled.
    ``path`` may be a file already open for reading in binary (the gateway's). Raises
    ``OSError`` (e.g. ``FileNotFoundError``) when the file cannot be read.
    """
    if max_lines <= 0 or max_bytes <= 0:
        return ""
    if not isinstance(path, (str, os.PathLike)):
        return _head_of(path, max_lines, max_bytes)
    with open(path, "rb") as handle:
        return _head_of(handle, max_lines, max_bytes)


def _head_of(handle: IO[bytes], max_lines: int, max_bytes: int) -> str:
    chunks: list[bytes] = []
    size = newlines = 0
    while size < max_bytes and newlines < max_lines:
        chunk = handle.read(min(8192, max_bytes - size))
        if not chunk:
            break
        chunks.append(chunk)
        size += len(chunk)
        newlines += chunk.count(b"\n")
    raw = b"".join(chunks)
    if newlines >= max_lines:
        cut = -1
        for _ in range(max_lines):
            cut = raw.index(b"\n", cut + 1)
        raw = raw[: cut + 1]
        return raw.decode("utf-8", errors="replace")
    decoder = codecs.getincrementaldecoder("utf-8")(errors="replace")
    final = size < max_bytes  # stopped at end of file: nothing was cut
    return decoder.decode(raw, final=final)
