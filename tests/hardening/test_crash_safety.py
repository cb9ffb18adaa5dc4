"""Crash safety: a writer killed with SIGKILL at random moments never corrupts the memdir.

A child process (``crash_child.py``) writes memories through ``MemoryStore.create``,
``update`` and ``write_file`` (each also rewrites ``MEMORY.md``) and appends to a JSONL
session log, acknowledging each call after it returns. The parent kills it after a
random, seeded delay and then checks, against the same deterministic plan:

* every acknowledged memory exists, parses, and holds exactly what was written (the one
  operation in flight at the kill may have happened entirely or not at all — never half);
* every acknowledged memory has its index line; no file is half-written; nothing but
  memories, the index, the lock and hidden temporary files is left in the memdir;
* the log parses line by line except torn lines of operations in flight, which the
  reader skips, and every acknowledged message is there with its exact text;
* after ``repair``, ``doctor`` finds nothing.

Rounds share a memdir and a log (a few at a time), so each child also starts on the
debris of the previous kill. ~20 kills run by default; 200 with ``--run-slow``.
"""

from __future__ import annotations

import json
import os
import random
import signal
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from jupyter_memory.memdir import frontmatter
from jupyter_memory.memdir.doctor import doctor, repair
from jupyter_memory.memdir.fsutil import LOCK_NAME, is_temp_file
from jupyter_memory.memdir.index import INDEX_NAME, parse_index
from jupyter_memory.memdir.scan import scan
from jupyter_memory.memdir.store import MemoryStore
from jupyter_memory.transcript.reader import read_entries

from .crash_child import Op, plan

CHILD = Path(__file__).with_name("crash_child.py")
ROUNDS_PER_MEMDIR = 4
READY_TIMEOUT = 60.0


@dataclass
class World:
    """The expected state of one memdir and log across the rounds that shared them."""

    memdir: Path
    log: Path
    files: dict[str, Op] = field(default_factory=dict)  # settled content of each file
    messages: dict[str, Op] = field(default_factory=dict)  # acknowledged log entries
    in_flight_logs: int = 0  # log appends that were running at a kill (may be torn)


def _run_child(world: World, seed: int, round_id: int, delay: float, first_acks: int) -> list[int]:
    """Start the writer; once it has acknowledged ``first_acks`` writes, kill it ``delay``
    seconds later (waiting for acks, not for time, so a loaded machine changes nothing)."""
    proc = subprocess.Popen(
        [sys.executable, str(CHILD), str(world.memdir), str(world.log), str(seed), str(round_id)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        bufsize=0,  # unbuffered: readline must not swallow acks that communicate() then misses
        env={**os.environ, "PYTHONUNBUFFERED": "1"},
    )
    try:
        assert proc.stdout is not None
        ready = proc.stdout.readline()
        if ready.strip() != b"READY":
            proc.kill()
            err = proc.communicate(timeout=READY_TIMEOUT)[1].decode(errors="replace")
            pytest.fail(f"the crash child did not start (round {round_id}): {err[-2000:]}")
        seen = b""
        for _ in range(first_acks):
            line = proc.stdout.readline()
            if not line:
                break
            seen += line
        time.sleep(delay)
        proc.send_signal(signal.SIGKILL)
        out, err = proc.communicate(timeout=READY_TIMEOUT)
        out = seen + out
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    if proc.returncode != -signal.SIGKILL:  # it stopped by itself: an error in the child
        pytest.fail(f"crash child exited with {proc.returncode}: {err.decode(errors='replace')}")
    acks = [int(line.split()[1]) for line in out.decode().split("\n")[:-1] if line.startswith("ACK ")]
    assert acks == list(range(len(acks))), f"acks out of order: {acks[:20]}"
    return acks


def _read_memory(path: Path) -> frontmatter.Document:
    raw = path.read_bytes()
    text = raw.decode("utf-8")  # a half-written multi-byte character would fail here
    doc = frontmatter.parse(text)
    assert doc.error is None, f"{path.name}: {doc.error}"
    return doc


def _matches(doc: frontmatter.Document, op: Op) -> bool:
    return (
        doc.get("name") == op.name
        and doc.get("description") == op.description
        and doc.get("type") == op.type
        and doc.get("origin") == op.origin
        and doc.body == op.body
    )


def _check_round(world: World, seed: int, round_id: int, acked: int) -> None:
    """Compare the disk with the plan after ``acked`` acknowledged operations of a round."""
    ops = plan(seed, round_id, acked + 1)
    done, pending = ops[:acked], ops[acked]
    expected: dict[str, Op] = dict(world.files)
    for op in done:
        if op.kind == "log":
            world.messages[op.uuid] = op
        else:
            expected[op.file] = op
    alternatives: dict[str, Op] = {}
    if pending.kind != "log":
        alternatives[pending.file] = pending

    # The memdir holds memories, the index, the lock and maybe hidden temp files: no debris.
    on_disk: set[str] = set()
    for path in world.memdir.rglob("*"):
        rel = path.relative_to(world.memdir).as_posix()
        if path.name in (INDEX_NAME, LOCK_NAME) and path.parent == world.memdir:
            continue
        if is_temp_file(path.name):
            continue  # an interrupted atomic write: hidden, never listed as a memory
        assert rel.endswith(".md"), f"unexpected file left in the memdir: {rel}"
        on_disk.add(rel)

    for rel in sorted(on_disk | set(expected)):
        path = world.memdir / rel
        settled, flying = expected.get(rel), alternatives.get(rel)
        if not path.exists():
            assert settled is None, f"acknowledged memory {rel} is missing (seed {seed})"
            continue
        doc = _read_memory(path)
        if settled is not None and _matches(doc, settled):
            continue
        if flying is not None and _matches(doc, flying):
            expected[rel] = flying  # the in-flight write landed completely
            continue
        pytest.fail(
            f"{rel} holds neither the acknowledged version nor the in-flight one (seed {seed}, "
            f"round {round_id}, step {acked}): name={doc.get('name')!r} "
            f"description={doc.get('description')!r} body starts {doc.body[:60]!r}"
        )

    # Every acknowledged memory has its pointer line (the store writes it before returning).
    index_path = world.memdir / INDEX_NAME
    index = parse_index(index_path.read_bytes().decode("utf-8") if index_path.exists() else "")
    pointed = index.files()
    settled_files = {op.file for op in done if op.kind != "log"} | set(world.files)
    missing = sorted(settled_files - pointed)
    assert not missing, f"acknowledged memories without an index line: {missing}"
    world.files = expected

    # Scanning lists every memory on disk and never a temp file.
    listed = {m.file for m in scan(world.memdir, limit=None)}
    assert listed == on_disk == set(world.files), (listed ^ on_disk, on_disk ^ set(world.files))

    _check_log(world, pending, seed)


def _check_log(world: World, pending: Op, seed: int) -> None:
    if pending.kind == "log":
        world.in_flight_logs += 1
    if not world.log.exists():
        assert not world.messages, "acknowledged messages but no log file"
        return
    corrupt = 0
    for line in world.log.read_bytes().split(b"\n"):
        if not line.strip():
            continue
        try:
            json.loads(line)
        except ValueError:
            corrupt += 1
    # Only an append cut short by the kill may leave a torn line.
    assert corrupt <= world.in_flight_logs, (corrupt, world.in_flight_logs)
    entries = read_entries(world.log)
    assert entries.stats.corrupt_lines == corrupt
    texts = {e["uuid"]: e["message"]["content"][0]["text"] for e in entries}
    for uid, op in world.messages.items():
        assert uid in texts, f"acknowledged message {uid} missing from the log (seed {seed})"
        assert texts[uid] == op.text
    if pending.kind == "log" and pending.uuid in texts:
        world.messages[pending.uuid] = pending  # it landed; later rounds must keep it


def _repair_then_doctor(world: World) -> None:
    store = MemoryStore(world.memdir, maintain_index=True)
    report = repair(store)
    assert report.left == [], [f.to_json() for f in report.left]
    assert doctor(store, check_projects=False) == []
    # repair only adds pointers; every memory is still there, byte for byte
    for rel, op in world.files.items():
        assert _matches(_read_memory(world.memdir / rel), op)


def run_kills(tmp_path: Path, kills: int, seed: int) -> dict[str, int]:
    rng = random.Random(seed)
    stats = {"kills": 0, "acked": 0}
    world: World | None = None
    for round_id in range(kills):
        if world is None or round_id % ROUNDS_PER_MEMDIR == 0:
            base = tmp_path / f"batch{round_id // ROUNDS_PER_MEMDIR}"
            world = World(base / "memory", base / "session.jsonl")
        delay = rng.uniform(0.0, 0.05)
        acks = _run_child(world, seed, round_id, delay, first_acks=rng.randint(2, 8))
        _check_round(world, seed, round_id, len(acks))
        _repair_then_doctor(world)
        stats["kills"] += 1
        stats["acked"] += len(acks)
    return stats


def test_kills_during_writes_lose_nothing_acknowledged(tmp_path: Path) -> None:
    stats = run_kills(tmp_path, kills=20, seed=20260301)
    assert stats["kills"] == 20
    assert stats["acked"] > 20  # the children really wrote between the kills


def test_leftover_temp_file_is_invisible_and_harmless(tmp_path: Path) -> None:
    """What a kill inside ``atomic_write`` leaves: a hidden ``.tmp`` that nothing lists."""
    memdir = tmp_path / "memory"
    store = MemoryStore(memdir)
    store.create("kept", "a memory that must stay", "user", "Kept.\n")
    torn = memdir / ".user_kept.md.k1ll3d.tmp"
    torn.write_bytes(b"---\nname: kept\ndescrip")  # half of a new version
    assert is_temp_file(torn.name)
    assert [m.file for m in store.list()] == ["user_kept.md"]
    assert doctor(store, check_projects=False) == []
    assert repair(store).left == []
    assert store.read("user_kept.md").endswith("Kept.\n")
    store.update("user_kept.md", body="Still kept.\n")  # a later write is not disturbed
    assert store.read("user_kept.md").endswith("Still kept.\n")
    assert torn.exists()  # left alone: it may belong to a writer that is still running
