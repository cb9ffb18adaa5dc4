"""The platform layer: file locks on POSIX (for real, across processes) and on Windows (the
same logic driven through a stand-in for ``msvcrt``), and a package that imports without
``fcntl``."""

from __future__ import annotations

import errno
import os
import subprocess
import sys
import types
from pathlib import Path

import pytest

from jupyter_memory.memdir.locking import LOCKS, posix_locks, windows_locks

HOLD = """
import os, sys, time
from jupyter_memory.memdir.locking import LOCKS
fd = os.open(sys.argv[1], os.O_RDWR | os.O_CREAT, 0o600)
assert LOCKS.try_lock(fd)
print("LOCKED", flush=True)
sys.stdin.readline()
"""


@pytest.mark.skipif(os.name == "nt", reason="POSIX flock")
def test_a_lock_held_by_another_process_is_busy_until_released(tmp_path: Path) -> None:
    path = tmp_path / ".lock"
    holder = subprocess.Popen([sys.executable, "-c", HOLD, str(path)], stdin=subprocess.PIPE,
                              stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "LOCKED"
        fd = os.open(path, os.O_RDWR)
        try:
            assert LOCKS.try_lock(fd) is False
            holder.communicate("\n", timeout=30)  # the holder exits: the OS drops its lock
            assert LOCKS.try_lock(fd) is True
            LOCKS.unlock(fd)
        finally:
            os.close(fd)
    finally:
        if holder.poll() is None:
            holder.kill()
            holder.wait()


class FakeMsvcrt(types.ModuleType):
    LK_NBLCK, LK_UNLCK = 2, 0

    def __init__(self, busy_errno: int | None = None) -> None:
        super().__init__("msvcrt")
        self.calls: list[tuple[int, int, int, int]] = []
        self.busy_errno = busy_errno

    def locking(self, fd: int, mode: int, nbytes: int) -> None:
        self.calls.append((fd, mode, nbytes, os.lseek(fd, 0, os.SEEK_CUR)))
        if mode == self.LK_NBLCK and self.busy_errno is not None:
            raise OSError(self.busy_errno, "locked")


def test_windows_locks_byte_zero_and_reports_busy(tmp_path: Path) -> None:
    fd = os.open(tmp_path / ".lock", os.O_RDWR | os.O_CREAT)
    try:
        os.write(fd, b"12345")  # the position moves; locking must seek back to byte 0
        fake = FakeMsvcrt()
        ops = windows_locks(fake)
        assert ops.try_lock(fd) is True
        ops.unlock(fd)
        assert fake.calls == [(fd, fake.LK_NBLCK, 1, 0), (fd, fake.LK_UNLCK, 1, 0)]
        assert windows_locks(FakeMsvcrt(busy_errno=errno.EACCES)).try_lock(fd) is False
        with pytest.raises(OSError):
            windows_locks(FakeMsvcrt(busy_errno=errno.EBADF)).try_lock(fd)
    finally:
        os.close(fd)


def test_posix_lock_errors_other_than_busy_are_raised() -> None:
    class Fcntl(types.ModuleType):
        LOCK_EX, LOCK_NB, LOCK_UN = 2, 4, 8

        def flock(self, fd: int, op: int) -> None:
            raise OSError(errno.EBADF, "bad fd")

    with pytest.raises(OSError):
        posix_locks(Fcntl("fcntl")).try_lock(3)


def test_the_package_and_the_store_import_without_fcntl(tmp_path: Path) -> None:
    code = (
        "import sys, os, types, tempfile, shutil, pathlib, subprocess, json\n"
        "sys.modules['fcntl'] = None\n"  # importing fcntl now fails, as on Windows
        "fake = types.ModuleType('msvcrt'); fake.LK_NBLCK, fake.LK_UNLCK = 2, 0\n"
        "fake.locking = lambda fd, mode, n: None\n"
        "sys.modules['msvcrt'] = fake\n"
        "os.name = 'nt'\n"  # only while the platform layer picks its locks
        "import jupyter_memory.memdir.locking as locking\n"
        "os.name = 'posix'\n"
        "assert locking.LOCKS.try_lock.__qualname__.startswith('windows_locks')\n"
        "import jupyter_memory, jupyter_memory.memdir.store as s, jupyter_memory.cli.app\n"
        f"store = s.MemoryStore(__import__('pathlib').Path({str(tmp_path / 'mem')!r}))\n"
        "store.create('x', 'a memory written through the Windows lock path', 'user', 'body')\n"
        "print('OK', [m.file for m in store.list()])\n"
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert "OK ['user_x.md']" in proc.stdout
