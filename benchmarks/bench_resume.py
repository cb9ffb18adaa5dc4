"""Resume speed on a large session log: the boundary fast path against parsing every line.

Generates a log of about ``--size-mb`` megabytes (default 50) in a temporary folder, with
a compaction boundary near the end, then times :func:`jupyter_memory.transcript.reader.read_entries`
(which searches backwards for the last boundary and parses only what follows it) and a
naive reader that parses every line and then looks for the boundary. Both must return the
same entries. Prints the two timings and their ratio; with ``--check`` exits 1 when the
ratio is under the goal (5x).

    python benchmarks/bench_resume.py [--size-mb 50] [--check]
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

from jupyter_memory.transcript.reader import read_entries
from jupyter_memory.transcript.rebuild import rebuild_conversation
from jupyter_memory.transcript.writer import TranscriptWriter

T = TypeVar("T")
GOAL = 5.0
SESSION = "0b3f6c1e-5d2a-4c89-9e41-7a0d2f6b8c13"


def _head(parent: str | None, kind: str) -> dict:
    return {
        "parentUuid": parent,
        "isSidechain": False,
        "userType": "external",
        "cwd": "/home/ds/analysis",
        "sessionId": SESSION,
        "version": "0.1.0",
        "gitBranch": "main",
        "type": kind,
    }


def generate(path: Path, size_mb: int) -> int:
    """Write a realistic log of roughly ``size_mb`` MB; returns its number of lines."""
    target = size_mb * 1024 * 1024
    cell = "df.groupby('region').agg({'sales': 'sum', 'units': 'mean'})\n" * 20
    parent: str | None = None
    count = 0
    with open(path, "w", encoding="utf-8") as out:
        while out.tell() < target:
            tool_id = f"toolu_{count:020d}"
            a = _head(parent, "assistant")
            a["message"] = {
                "id": f"msg_{count:020d}",
                "type": "message",
                "role": "assistant",
                "model": "claude-test",
                "content": [
                    {"type": "text", "text": "Running the next cell."},
                    {
                        "type": "tool_use",
                        "id": tool_id,
                        "name": "run_cell",
                        "input": {"code": cell},
                    },
                ],
                "usage": {"input_tokens": 1200, "output_tokens": 300},
            }
            a["uuid"] = parent = str(uuid.uuid4())
            a["timestamp"] = "2026-01-01T00:00:00.000Z"
            u = _head(parent, "user")
            u["message"] = {
                "role": "user",
                "content": [{"type": "tool_result", "tool_use_id": tool_id, "content": cell * 2}],
            }
            u["uuid"] = parent = str(uuid.uuid4())
            u["timestamp"] = "2026-01-01T00:00:01.000Z"
            p = _head(parent, "progress")
            p["data"] = {"type": "hook_progress", "hookEvent": "PostToolUse"}
            p["uuid"] = parent = str(uuid.uuid4())
            for entry in (a, u, p):
                out.write(json.dumps(entry, separators=(",", ":")) + "\n")
            count += 3
    writer = TranscriptWriter(
        path, session_id=SESSION, cwd="/home/ds/analysis", version="0.1.0", git_branch="main",
        leaf_uuid=parent,
    )  # fmt: skip
    writer.append_compact_boundary("auto", 167_000)
    writer.append_summary("1. Primary Request and Intent: build the regional sales report")
    for i in range(100):
        writer.append_message("user", {"role": "user", "content": f"next step {i}"})
        writer.append_message(
            "assistant",
            {
                "role": "assistant",
                "id": f"msg_tail_{i}",
                "content": [{"type": "text", "text": "Done."}],
            },
        )
    return count + 202


def first_append(path: Path, leaf: str | None) -> str:
    """A fresh writer resuming the log: its first append reads the uuids already there."""
    writer = TranscriptWriter(
        path, session_id=SESSION, cwd="/home/ds/analysis", version="0.1.0", git_branch="main",
        leaf_uuid=leaf,
    )  # fmt: skip
    return writer.append_message("user", {"role": "user", "content": "resumed"})


def naive_read(path: Path) -> list[dict]:
    """Parse every line, then keep what follows the last boundary."""
    entries = []
    with open(path, "rb") as handle:
        for line in handle:
            if line.strip():
                entries.append(json.loads(line))
    last = max(
        i
        for i, e in enumerate(entries)
        if e.get("type") == "system" and e.get("subtype") == "compact_boundary"
    )
    return [e for e in entries[last:] if e.get("type") in ("user", "assistant", "system")]


def best_of(runs: int, fn: Callable[..., T], *args: Any) -> tuple[float, T]:
    best = float("inf")
    for _ in range(runs):
        start = time.perf_counter()
        result = fn(*args)
        best = min(best, time.perf_counter() - start)
    return best, result


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--size-mb", type=int, default=50)
    parser.add_argument(
        "--check", action="store_true", help=f"exit 1 if the speed-up is under {GOAL}x"
    )
    args = parser.parse_args(argv)

    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / f"{SESSION}.jsonl"
        start = time.perf_counter()
        lines = generate(path, args.size_mb)
        size = path.stat().st_size
        print(
            f"log: {size / 1e6:.1f} MB, {lines} lines (generated in {time.perf_counter() - start:.1f} s)"
        )

        fast_s, fast = best_of(3, read_entries, path)
        naive_s, naive = best_of(2, naive_read, path)
        rebuild_s, conv = best_of(3, rebuild_conversation, fast)
        append_s, _ = best_of(1, first_append, path, conv.leaf_uuid)
        if list(fast) != naive:
            print("MISMATCH: the fast path returned different entries than the naive reader")
            return 2

    ratio = naive_s / fast_s if fast_s else float("inf")
    print(
        f"read_entries (boundary fast path): {fast_s * 1000:9.1f} ms  "
        f"parsed {fast.stats.lines_parsed} lines, scanned {fast.stats.bytes_scanned_backwards} bytes backwards"
    )
    print(f"naive parse of every line:         {naive_s * 1000:9.1f} ms  parsed {lines} lines")
    print(f"rebuild_conversation:              {rebuild_s * 1000:9.1f} ms  -> {len(conv)} messages")
    print(
        f"first append to the existing log:  {append_s * 1000:9.1f} ms  (loads its uuids for dedupe)"
    )
    print(f"speed-up: {ratio:.1f}x (goal >= {GOAL:.0f}x)")
    if args.check and ratio < GOAL:
        print("FAIL: below the goal")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
