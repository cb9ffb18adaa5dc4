"""Request assembly time against the number of memories and the length of the conversation.

For each number of memories (each with its pointer line in ``MEMORY.md``, as a maintained
index has) and each conversation length, three things are timed, interleaved so machine
load hits all alike:

* ``assemble`` - building the next request body of a running session
  (``Session.assemble``: the session keeps its snapshot of instructions and index, so
  this is the per-model-call cost);
* ``start`` - what a new session (or a compaction, or a memory change made through a
  front end) pays once: re-reading the instruction files and the index, then assembling;
* ``prefetch scan`` - the per-turn scan that prefetch recall makes (a ``stat`` of every
  file, the 200 newest heads, from a warm cache).

Goal: per-call assembly is flat in memories beyond the 200-file cap: at the largest N
within 1.5x of N = 200 (CPU time, one-turn conversation). ``--check`` exits 1 on a miss.

    python benchmarks/bench_assembly.py [--counts 0,200,1000,5000] [--turns 1,10,50]
        [--repeat 15] [--check]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from bench_cost_curve import build_memdir, make_session

from jupyter_memory.memdir.scan import ScanCache, scan

GOAL = 1.5
BASE = 200


def conversation(turns: int) -> list[dict[str, Any]]:
    """``turns`` exchanges; every third one runs a tool, as a notebook session does."""
    messages: list[dict[str, Any]] = []
    for t in range(turns):
        messages.append({"role": "user", "content": [{"type": "text", "text": (
            f"Question {t}: plot monthly revenue by region and tell me what changed.")}]})
        if t % 3 == 2:
            messages.append({"role": "assistant", "content": [
                {"type": "text", "text": "Let me look at the data first."},
                {"type": "tool_use", "id": f"toolu_{t:06d}", "name": "RunPython",
                 "input": {"code": "df.groupby('region').revenue.sum()"}}]})
            messages.append({"role": "user", "content": [
                {"type": "tool_result", "tool_use_id": f"toolu_{t:06d}",
                 "content": "region\nnorth 123400\nsouth 98700\n" * 20}]})
        messages.append({"role": "assistant", "content": [{"type": "text", "text": (
            "Revenue is stored in cents, so I divided by 100 before plotting. North grew "
            "3.2% over the quarter while south fell 1.1%. ") * 4}]})
    return messages


def _timed(runs: dict[str, Callable[[], object]], repeat: int) -> dict[str, float]:
    """Median CPU seconds of each run, the runs interleaved."""
    samples: dict[str, list[float]] = {name: [] for name in runs}
    for _ in range(repeat):
        for name, fn in runs.items():
            start = time.process_time()
            fn()
            samples[name].append(time.process_time() - start)
    return {name: statistics.median(values) for name, values in samples.items()}


def run(counts: tuple[int, ...] = (0, 200, 1000, 5000), turns: tuple[int, ...] = (1, 10, 50),
        repeat: int = 15) -> dict[str, Any]:
    runs: dict[str, Callable[[], object]] = {}
    with tempfile.TemporaryDirectory(prefix="bench-assembly-") as tmp:
        for count in counts:
            project = Path(tmp) / f"project{count}"
            project.mkdir()
            (project / "CLAUDE.md").write_text("Use polars, not pandas. Money is in cents.\n")
            memdir = Path(tmp) / f"memory{count}"
            build_memdir(memdir, count)
            for t in turns:
                session = make_session(project, memdir, "index")
                session.messages = conversation(t)
                session.assemble()  # take the snapshot, as the first call of a session does
                runs[f"assemble:{count}:{t}"] = session.assemble
            starter = make_session(project, memdir, "index")
            starter.messages = conversation(turns[0])

            def start(s=starter) -> None:
                s.refresh_context()
                s.assemble()

            runs[f"start:{count}"] = start
            cache = ScanCache()
            scan(memdir, cache=cache)
            runs[f"scan:{count}"] = lambda m=memdir, c=cache: scan(m, cache=c)
        medians = _timed(runs, repeat)
    first = turns[0]
    base_count = BASE if BASE in counts else min(counts)
    top = max(counts)
    ratio = medians[f"assemble:{top}:{first}"] / medians[f"assemble:{base_count}:{first}"]
    return {
        "counts": counts,
        "turns": turns,
        "ms": {key: value * 1000 for key, value in medians.items()},
        "flat_ratio": ratio,
        "base": base_count,
        "top": top,
    }


def table(result: dict[str, Any]) -> str:
    ms = result["ms"]
    turns = result["turns"]
    head = " | ".join(f"assemble, {t} turn{'s' if t != 1 else ''}" for t in turns)
    lines = [f"| memories | {head} | session start | prefetch scan |",
             "|---:|" + "---:|" * (len(turns) + 2)]
    for count in result["counts"]:
        cells = " | ".join(f"{ms[f'assemble:{count}:{t}']:.2f} ms" for t in turns)
        lines.append(f"| {count:,} | {cells} | {ms[f'start:{count}']:.2f} ms "
                     f"| {ms[f'scan:{count}']:.2f} ms |")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--counts", default="0,200,1000,5000")
    parser.add_argument("--turns", default="1,10,50")
    parser.add_argument("--repeat", type=int, default=15)
    parser.add_argument("--check", action="store_true", help="exit 1 if the goal is missed")
    args = parser.parse_args(argv)
    result = run(tuple(int(c) for c in args.counts.split(",")),
                 tuple(int(t) for t in args.turns.split(",")), args.repeat)
    print("CPU time, medians of interleaved runs\n")
    print(table(result))
    print(f"\nassembly with {result['top']:,} memories vs {result['base']:,}: "
          f"{result['flat_ratio']:.2f}x (goal <= {GOAL}x)")
    if result["flat_ratio"] > GOAL:
        print("MISSED: assembly grows with the number of memories")
        return 1 if args.check else 0
    print("goal met")
    return 0


if __name__ == "__main__":
    sys.exit(main())
