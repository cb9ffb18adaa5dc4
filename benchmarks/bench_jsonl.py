"""JSONL session-log appends: does an append cost more late in a long session?

A long session log is built by appending ``--messages`` (default 10,000) realistic
messages through :class:`jupyter_memory.transcript.writer.TranscriptWriter`. Then batches of
appends are timed in turn on two logs: a fresh one just past message 10, and the long one
past message 10,000. Each append is one ``os.write`` to a file opened with ``O_APPEND``,
so the cost must not grow with the file. Goal: late appends within 1.5x of early ones,
judged on CPU time (medians of interleaved batches). ``--check`` exits 1 on a miss.

    python benchmarks/bench_jsonl.py [--messages 10000] [--batch 100] [--repeat 9] [--check]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
import uuid
from pathlib import Path
from typing import Any

from jupyter_memory.transcript.reader import read_entries
from jupyter_memory.transcript.writer import TranscriptWriter

GOAL = 1.5
EARLY_AT = 10


def message(i: int) -> tuple[str, dict[str, Any]]:
    """Message ``i`` of a notebook session: questions, answers, tool calls and results."""
    if i % 2 == 0:
        if i % 6 == 2:
            content = [{"type": "tool_result", "tool_use_id": f"toolu_{i - 1:08d}",
                        "content": "region,revenue\n" + "north,123400\nsouth,98700\n" * 12}]
        else:
            content = [{"type": "text", "text": f"Question {i}: how did revenue move by region "
                        "last quarter, and is the churn definition still 60 days?"}]
        return "user", {"role": "user", "content": content}
    blocks: list[dict[str, Any]] = [{"type": "text", "text": (
        f"Answer {i}: revenue is stored in cents, so I divided by 100. North grew 3.2% "
        "and south fell 1.1%; churn still uses the 60-day rule. ") * 3}]
    if i % 6 == 1:
        blocks.append({"type": "tool_use", "id": f"toolu_{i:08d}", "name": "RunPython",
                       "input": {"code": "df.groupby('region').revenue.sum() / 100"}})
    return "assistant", {"role": "assistant", "content": blocks,
                         "usage": {"input_tokens": 1200, "output_tokens": 180}}


def writer(path: Path) -> TranscriptWriter:
    return TranscriptWriter(path, session_id=str(uuid.uuid4()), cwd="/home/ds/analysis",
                            version="0.1.0", git_branch="main")


def _append(log: TranscriptWriter, i: int) -> None:
    role, body = message(i)
    log.append_message(role, body)


def run(messages: int = 10_000, batch: int = 100, repeat: int = 9) -> dict[str, Any]:
    with tempfile.TemporaryDirectory(prefix="bench-jsonl-") as tmp:
        long_path = Path(tmp) / "long.jsonl"
        long_log = writer(long_path)
        start = time.perf_counter()
        for i in range(messages):
            _append(long_log, i)
        build_s = time.perf_counter() - start
        position = messages

        early_cpu: list[float] = []
        late_cpu: list[float] = []
        early_wall: list[float] = []
        late_wall: list[float] = []
        for r in range(repeat):
            short = writer(Path(tmp) / f"short{r}.jsonl")
            for i in range(EARLY_AT):  # untimed: the log now holds 10 messages
                _append(short, i)
            for log, first, cpu, wall in ((short, EARLY_AT, early_cpu, early_wall),
                                          (long_log, position, late_cpu, late_wall)):
                c0, w0 = time.process_time(), time.perf_counter()
                for i in range(first, first + batch):
                    _append(log, i)
                cpu.append((time.process_time() - c0) / batch)
                wall.append((time.perf_counter() - w0) / batch)
            position += batch
        size = long_path.stat().st_size
        entries = read_entries(long_path)
        assert len(entries) == messages + repeat * batch, len(entries)

    early, late = statistics.median(early_cpu), statistics.median(late_cpu)
    return {
        "messages": messages,
        "log_mb": size / 1e6,
        "build_s": build_s,
        "early_us": early * 1e6,
        "late_us": late * 1e6,
        "early_wall_us": statistics.median(early_wall) * 1e6,
        "late_wall_us": statistics.median(late_wall) * 1e6,
        "ratio": late / early if early else float("inf"),
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--messages", type=int, default=10_000)
    parser.add_argument("--batch", type=int, default=100)
    parser.add_argument("--repeat", type=int, default=9)
    parser.add_argument("--check", action="store_true", help="exit 1 if the goal is missed")
    args = parser.parse_args(argv)
    res = run(args.messages, args.batch, args.repeat)
    print(f"log of {res['messages']:,} messages, {res['log_mb']:.1f} MB "
          f"(built in {res['build_s']:.1f} s)")
    print(f"append at message {EARLY_AT}:      {res['early_us']:7.1f} us CPU "
          f"({res['early_wall_us']:.1f} us wall)")
    print(f"append at message {res['messages']:,}: {res['late_us']:7.1f} us CPU "
          f"({res['late_wall_us']:.1f} us wall)")
    print(f"late / early: {res['ratio']:.2f}x (goal <= {GOAL}x)")
    if res["ratio"] > GOAL:
        print("MISSED: appends slow down as the log grows")
        return 1 if args.check else 0
    print("goal met")
    return 0


if __name__ == "__main__":
    sys.exit(main())
