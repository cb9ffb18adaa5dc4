"""The one place that knows the operating system: file locks and open flags.

Everything else in the package is portable Python. POSIX takes an advisory ``flock`` on the
whole lock file; Windows locks its first byte with ``msvcrt.locking``. Both are dropped by
the operating system when the holder exits, so a crashed writer never leaves a memdir locked.
"""

from __future__ import annotations

import errno
import os
from collections.abc import Callable
from dataclasses import dataclass
from types import ModuleType

__all__ = ["LOCKS", "NOFOLLOW", "LockOps", "posix_locks", "windows_locks"]

#: Open flag that refuses a symlink at the last path component (0 where there is none).
NOFOLLOW: int = getattr(os, "O_NOFOLLOW", 0)

_BUSY = (errno.EWOULDBLOCK, errno.EAGAIN, errno.EACCES, errno.EDEADLK)


@dataclass(frozen=True)
class LockOps:
    """Non-blocking exclusive lock of an open file descriptor, and its release."""

    try_lock: Callable[[int], bool]
    """Take the lock; ``False`` when another process holds it (other errors raise)."""
    unlock: Callable[[int], None]


def posix_locks(fcntl: ModuleType) -> LockOps:
    def try_lock(fd: int) -> bool:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError as exc:
            if exc.errno in _BUSY:
                return False
            raise
        return True

    def unlock(fd: int) -> None:
        fcntl.flock(fd, fcntl.LOCK_UN)

    return LockOps(try_lock, unlock)


def windows_locks(msvcrt: ModuleType) -> LockOps:
    """Byte 0 of the lock file stands for the whole memdir (the file may be empty:
    Windows lets a process lock past the end of a file)."""

    def try_lock(fd: int) -> bool:
        os.lseek(fd, 0, os.SEEK_SET)
        try:
            msvcrt.locking(fd, msvcrt.LK_NBLCK, 1)
        except OSError as exc:
            if exc.errno in _BUSY:
                return False
            raise
        return True

    def unlock(fd: int) -> None:
        os.lseek(fd, 0, os.SEEK_SET)
        msvcrt.locking(fd, msvcrt.LK_UNLCK, 1)

    return LockOps(try_lock, unlock)


def _native() -> LockOps:
    if os.name == "nt":  # pragma: no cover - exercised on Windows; logic tested with a fake
        import msvcrt

        return windows_locks(msvcrt)
    import fcntl

    return posix_locks(fcntl)


#: The lock operations of this machine.
LOCKS: LockOps = _native()
