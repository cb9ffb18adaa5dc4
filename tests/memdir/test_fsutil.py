"""fsutil: atomic writes that never leave half a file, the memdir lock, bounded reads."""

from __future__ import annotations

import os
import stat
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from jupyter_memory.errors import LockTimeout
from jupyter_memory.memdir import fsutil
from jupyter_memory.memdir.fsutil import atomic_write, is_temp_file, memdir_lock, read_head

# --------------------------------------------------------------------------- atomic_write


def _mode(path: Path) -> int:
    return stat.S_IMODE(os.stat(path).st_mode)


def test_atomic_write_str_is_utf8_and_bytes_verbatim(tmp_path: Path) -> None:
    target = tmp_path / "m.md"
    atomic_write(target, "café — 生产库\n")
    assert target.read_bytes() == "café — 生产库\n".encode()
    atomic_write(target, b"\x00\xff raw")
    assert target.read_bytes() == b"\x00\xff raw"


def test_atomic_write_creates_missing_folders(tmp_path: Path) -> None:
    target = tmp_path / "memory" / "team" / "db.md"
    atomic_write(target, "x")
    assert target.read_text() == "x"


def test_new_file_gets_umask_mode_and_existing_file_keeps_its_mode(tmp_path: Path) -> None:
    umask = os.umask(0o022)
    os.umask(umask)
    fresh = tmp_path / "fresh.md"
    atomic_write(fresh, "a")
    assert _mode(fresh) == 0o666 & ~umask

    kept = tmp_path / "kept.md"
    kept.write_text("old")
    os.chmod(kept, 0o640)
    atomic_write(kept, "new")
    assert kept.read_text() == "new"
    assert _mode(kept) == 0o640


def test_explicit_mode_wins(tmp_path: Path) -> None:
    target = tmp_path / "log.jsonl"
    target.write_text("old")
    os.chmod(target, 0o644)
    atomic_write(target, "new", mode=0o600)
    assert _mode(target) == 0o600


def test_symlink_is_followed_and_kept(tmp_path: Path) -> None:
    real = tmp_path / "real.md"
    real.write_text("old")
    link = tmp_path / "link.md"
    link.symlink_to(real)
    atomic_write(link, "new")
    assert link.is_symlink()
    assert real.read_text() == "new"


@pytest.mark.parametrize("failure", [KeyboardInterrupt, OSError])
def test_failed_write_leaves_old_file_and_no_temp(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, failure: type[BaseException]
) -> None:
    target = tmp_path / "m.md"
    target.write_text("precious")

    def broken_replace(src: str, dst: object) -> None:
        raise failure("interrupted")

    monkeypatch.setattr(fsutil.os, "replace", broken_replace)
    with pytest.raises(failure):
        atomic_write(target, "half-written")
    assert target.read_text() == "precious"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["m.md"]


def test_failed_fsync_cleans_up(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    target = tmp_path / "m.md"

    def broken_fsync(fd: int) -> None:
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(fsutil.os, "fsync", broken_fsync)
    with pytest.raises(OSError, match="No space"):
        atomic_write(target, "data")
    assert list(tmp_path.iterdir()) == []


def test_temp_names_are_recognisable_and_not_markdown(tmp_path: Path) -> None:
    assert is_temp_file(".MEMORY.md.abc123.tmp")
    assert not is_temp_file("MEMORY.md")
    assert not is_temp_file(".hidden.md")
    assert not fsutil.TEMP_SUFFIX.endswith(".md")


# --------------------------------------------------------------------------- memdir_lock


def test_lock_creates_memdir_and_lock_file(tmp_path: Path) -> None:
    memdir = tmp_path / "projects" / "k" / "memory"
    with memdir_lock(memdir) as lock_path:
        assert lock_path == memdir / ".lock"
        assert lock_path.exists()


def test_lock_is_reentrant_in_one_thread(tmp_path: Path) -> None:
    with memdir_lock(tmp_path, timeout=0), memdir_lock(tmp_path, timeout=0):
        atomic_write(tmp_path / "a.md", "x")
    # fully released afterwards: another thread can take it at once
    taken: list[bool] = []
    worker = threading.Thread(target=lambda: taken.append(_try_lock(tmp_path)))
    worker.start()
    worker.join()
    assert taken == [True]


def _try_lock(memdir: Path) -> bool:
    try:
        with memdir_lock(memdir, timeout=0):
            return True
    except LockTimeout:
        return False


def test_other_thread_is_excluded_while_held(tmp_path: Path) -> None:
    results: list[bool] = []
    with memdir_lock(tmp_path):
        worker = threading.Thread(target=lambda: results.append(_try_lock(tmp_path)))
        worker.start()
        worker.join()
    assert results == [False]
    assert _try_lock(tmp_path)


def test_thread_timeout_message_explains(tmp_path: Path) -> None:
    errors: list[str] = []

    def attempt() -> None:
        try:
            with memdir_lock(tmp_path, timeout=0):
                pass
        except LockTimeout as exc:
            errors.append(str(exc))

    with memdir_lock(tmp_path):
        worker = threading.Thread(target=attempt)
        worker.start()
        worker.join()
    assert len(errors) == 1
    assert str(tmp_path / ".lock") in errors[0]
    assert "retry" in errors[0]


def test_threads_never_lose_an_increment(tmp_path: Path) -> None:
    counter = tmp_path / "count.txt"
    atomic_write(counter, "0")

    def bump() -> None:
        for _ in range(25):
            with memdir_lock(tmp_path):
                value = int(counter.read_text())
                atomic_write(counter, str(value + 1))

    workers = [threading.Thread(target=bump) for _ in range(4)]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join()
    assert counter.read_text() == "100"


_HOLDER = """
import sys, time
from jupyter_memory.memdir.fsutil import memdir_lock
with memdir_lock(sys.argv[1]):
    print("held", flush=True)
    sys.stdin.readline()
"""

_BUMPER = """
import sys
from pathlib import Path
from jupyter_memory.memdir.fsutil import atomic_write, memdir_lock
counter = Path(sys.argv[1]) / "count.txt"
for _ in range(40):
    with memdir_lock(sys.argv[1]):
        atomic_write(counter, str(int(counter.read_text()) + 1))
"""


def test_other_process_is_excluded_and_named(tmp_path: Path) -> None:
    holder = subprocess.Popen(
        [sys.executable, "-c", _HOLDER, str(tmp_path)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert holder.stdout is not None and holder.stdin is not None
        assert holder.stdout.readline().strip() == "held"
        with pytest.raises(LockTimeout) as caught, memdir_lock(tmp_path, timeout=0.05):
            pass
        assert f"process {holder.pid}" in str(caught.value)
        holder.stdin.write("\n")
        holder.stdin.flush()
        assert holder.wait(timeout=120) == 0
    finally:
        if holder.poll() is None:
            holder.kill()
            holder.wait()
    assert _try_lock(tmp_path)


def test_processes_never_lose_an_increment(tmp_path: Path) -> None:
    (tmp_path / "count.txt").write_text("0")
    procs = [subprocess.Popen([sys.executable, "-c", _BUMPER, str(tmp_path)]) for _ in range(2)]
    codes = [proc.wait(timeout=120) for proc in procs]
    assert codes == [0, 0]
    assert (tmp_path / "count.txt").read_text() == "80"


# --------------------------------------------------------------------------- read_head


def test_read_head_returns_first_lines_with_endings(tmp_path: Path) -> None:
    target = tmp_path / "m.md"
    target.write_bytes(b"".join(f"line {i}\r\n".encode() for i in range(100)))
    head = read_head(target, max_lines=3)
    assert head == "line 0\r\nline 1\r\nline 2\r\n"
    assert read_head(target, max_lines=0) == ""


def test_read_head_short_file_and_no_final_newline(tmp_path: Path) -> None:
    target = tmp_path / "m.md"
    target.write_text("a\nb")
    assert read_head(target) == "a\nb"


def test_read_head_is_bounded_in_bytes(tmp_path: Path) -> None:
    target = tmp_path / "big.md"
    target.write_bytes(b"x" * 1_000_000)  # one enormous line
    head = read_head(target, max_lines=30, max_bytes=4096)
    assert head == "x" * 4096


def test_read_head_drops_a_character_cut_by_the_byte_limit(tmp_path: Path) -> None:
    target = tmp_path / "ko.md"
    target.write_text("한국어" * 100)  # 3 bytes per character
    head = read_head(target, max_bytes=10)
    assert head == "한국어"  # 9 bytes; the 10th byte starts a character that was cut
    assert "\ufffd" not in head


def test_read_head_replaces_invalid_utf8(tmp_path: Path) -> None:
    target = tmp_path / "latin1.md"
    target.write_bytes(b"name: caf\xe9\n")
    assert read_head(target) == "name: caf\ufffd\n"


def test_read_head_missing_file_raises(tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError):
        read_head(tmp_path / "nope.md")
