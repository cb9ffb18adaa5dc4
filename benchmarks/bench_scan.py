"""How much the scan cache saves: cold, warm and naive scans of 2,000 topic files.

* cold  - ``scan`` with a new :class:`ScanCache` (reads every head, fills the cache);
* warm  - ``scan`` again with the same cache on the unchanged memdir (reads nothing);
* naive - the same walk and parsing, reading the head of every file every time.

Goals: warm at least 10x faster than naive, cold at most 1.5x naive, judged on CPU time
(this process's, so other programs on a busy machine do not skew the ratios; wall time is
printed too). ``--check`` exits with status 1 when a goal is missed. Every scan covers all
files (``limit=None``) so the three do the same work apart from the cache.

    python benchmarks/bench_scan.py [--files 2000] [--repeat 9] [--check]
"""

from __future__ import annotations

import argparse
import gc
import os
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from jupyter_memory.memdir.frontmatter import parse
from jupyter_memory.memdir.fsutil import read_head
from jupyter_memory.memdir.index import format_entry
from jupyter_memory.memdir.record import Memory
from jupyter_memory.memdir.scan import HEAD_LINES, ScanCache, list_files, read_index, scan

TYPES = ("user", "feedback", "project", "reference")
WARM_GOAL = 10.0
COLD_GOAL = 1.5


def build_memdir(root: Path, count: int) -> None:
    """``count`` realistic topic files (a third in subfolders, some multi-byte) plus an index."""
    lines = []
    now = time.time()
    for i in range(count):
        kind = TYPES[i % 4]
        folder = "" if i % 3 else f"team{i % 7}/"
        file = f"{folder}{kind}_note_{i}.md"
        path = root / file
        path.parent.mkdir(parents=True, exist_ok=True)
        lang = "数据口径以分为单位" if i % 5 == 0 else "revenue is stored in cents"
        body = "\n".join(
            f"Line {n} of memory {i}: {lang}, checked against the billing export."
            for n in range(40)
        )
        path.write_text(
            f"---\nname: note-{i}\ndescription: Memory {i} about {lang}\ntype: {kind}\n"
            f"originSessionId: 0000-{i:04d}\n---\n**Why:** {lang}\n**How to apply:** x\n{body}\n",
            encoding="utf-8",
        )
        os.utime(path, (now - i * 60, now - i * 60))
        if i % 10:
            lines.append(format_entry(f"note-{i}", file, f"Memory {i} about {lang}"))
    (root / "MEMORY.md").write_text("\n".join(lines) + "\n", encoding="utf-8")


def naive_scan(memdir: Path) -> list[Memory]:
    """What a scan costs without a cache: same walk, same parsing, every head read."""
    files = list_files(memdir)
    files.sort(key=lambda f: (-f.stat.st_mtime_ns, f.file))
    pointed = read_index(memdir).files()
    return [
        Memory.from_document(
            f.file, f.abspath, parse(read_head(f.abspath, HEAD_LINES)), f.stat, f.file in pointed
        )
        for f in files
    ]


def interleaved(
    repeat: int, runs: dict[str, Callable[[], object]]
) -> dict[str, tuple[float, float]]:
    """Median (wall, CPU) time of each variant, run in turn so machine load hits all alike.

    CPU time (``process_time``: this process's user and system time) is what the goals
    are judged on: it does not count time spent waiting for a core that another program
    holds, so the ratios stay meaningful on a busy machine. Wall time is shown too.
    """
    wall: dict[str, list[float]] = {name: [] for name in runs}
    cpu: dict[str, list[float]] = {name: [] for name in runs}
    for _ in range(repeat):
        for name, run in runs.items():
            start_wall, start_cpu = time.perf_counter(), time.process_time()
            run()
            cpu[name].append(time.process_time() - start_cpu)
            wall[name].append(time.perf_counter() - start_wall)
    return {name: (statistics.median(wall[name]), statistics.median(cpu[name])) for name in runs}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--files", type=int, default=2000)
    parser.add_argument("--repeat", type=int, default=9)
    parser.add_argument("--check", action="store_true", help="exit 1 if a goal is missed")
    args = parser.parse_args(argv)

    with tempfile.TemporaryDirectory(prefix="bench-scan-") as tmp:
        memdir = Path(tmp) / "memory"
        memdir.mkdir()
        build_memdir(memdir, args.files)
        gc.collect()
        naive_scan(memdir)  # warm the OS page cache so every variant reads from memory

        warm_cache = ScanCache()
        first = scan(memdir, limit=None, cache=warm_cache)
        assert len(first) == args.files, (len(first), args.files)
        assert [m.file for m in first] == [m.file for m in naive_scan(memdir)]

        reads_before = warm_cache.files_read
        result = interleaved(
            args.repeat,
            {
                "cold": lambda: scan(memdir, limit=None, cache=ScanCache()),
                "warm": lambda: scan(memdir, limit=None, cache=warm_cache),
                "naive": lambda: naive_scan(memdir),
            },
        )
        warm_reads = warm_cache.files_read - reads_before

    (cold_wall, cold), (warm_wall, warm), (naive_wall, naive) = (
        result["cold"],
        result["warm"],
        result["naive"],
    )
    warm_speedup = naive / warm
    cold_ratio = cold / naive
    print(f"files: {args.files}, repeats: {args.repeat} (medians, variants interleaved)")
    print("                          CPU time    wall time")
    print(f"cold scan  (new cache):  {cold * 1000:8.1f} ms  {cold_wall * 1000:8.1f} ms")
    print(f"warm scan  (same cache): {warm * 1000:8.1f} ms  {warm_wall * 1000:8.1f} ms")
    print(f"naive scan (no cache):   {naive * 1000:8.1f} ms  {naive_wall * 1000:8.1f} ms")
    print(f"files read by warm scans: {warm_reads}")
    print(
        f"warm is {warm_speedup:.1f}x faster than naive (goal >= {WARM_GOAL:g}x; "
        f"wall time {naive_wall / warm_wall:.1f}x)"
    )
    print(
        f"cold is {cold_ratio:.2f}x naive (goal <= {COLD_GOAL:g}x; "
        f"wall time {cold_wall / naive_wall:.2f}x)"
    )
    missed = []
    if warm_speedup < WARM_GOAL:
        missed.append("warm speed-up")
    if cold_ratio > COLD_GOAL:
        missed.append("cold overhead")
    if warm_reads:
        missed.append("warm scans read files")
    if missed:
        print("MISSED: " + ", ".join(missed))
        return 1 if args.check else 0
    print("all goals met")
    return 0


if __name__ == "__main__":
    sys.exit(main())
