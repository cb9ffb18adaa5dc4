"""What the credential guard costs on a realistic memdir: ``find_secrets`` on 100 KB.

The text is the recall evaluation's memories (tests/recall_eval/memories) and the
reference-shaped memories (tests/fixtures/memdir-reference-shapes), repeated to 100 KB:
prose, tables, code and file names, with no secret in it, which is what the guard sees
on every write. Times are CPU time, medians of interleaved runs, and every result is a
ratio within this run, so machine speed cancels out:

* **guard / one pattern** - a whole scan against one pass of a single token pattern on
  Python's ``re`` over the same text (the guard of f3b55de, 45 patterns on ``re`` and
  ``detect-secrets``, measured 42 such passes);
* **rules without / with the keyword pre-filter** - the vendor rules run on every text
  against only those whose keyword occurs.

Goals: the whole guard, hundreds of rules and the decoding included, costs at most 30
single-pattern passes (cheaper than the 45-pattern guard before it); the pre-filter
makes the rules at least 3x cheaper. ``--check`` exits with status 1 when a goal is missed.

    python benchmarks/bench_guard.py [--size 100000] [--repeat 15] [--check]
"""

from __future__ import annotations

import argparse
import gc
import re
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path

from jupyter_memory.memdir.guard import find_secrets, warm_up
from jupyter_memory.memdir.guard.rules import RULES
from jupyter_memory.memdir.guard.vendor import rule_hits

ROOT = Path(__file__).resolve().parent.parent
GUARD_GOAL = 30.0  # single-pattern passes
PREFILTER_GOAL = 3.0
#: One token pattern as the guard before this one ran each of its 45 (the Slack token).
ONE_PATTERN = re.compile(r"(?<![A-Za-z0-9_-])xox[baprs]-[A-Za-z0-9-]{10,}(?![A-Za-z0-9_-])")


def memdir_text(size: int) -> str:
    """``size`` characters of realistic memories (no secret among them)."""
    folders = (ROOT / "tests/recall_eval/memories", ROOT / "tests/fixtures/memdir-reference-shapes")
    parts = [path.read_text(encoding="utf-8") for folder in folders
             for path in sorted(folder.rglob("*.md"))]
    text = "\n".join(parts)
    return (text * (size // len(text) + 1))[:size]


def interleaved(repeat: int, runs: dict[str, Callable[[], object]]) -> dict[str, float]:
    """Median CPU time of each variant, run in turn so machine load hits all alike."""
    cpu: dict[str, list[float]] = {name: [] for name in runs}
    for _ in range(repeat):
        for name, run in runs.items():
            gc.collect()
            start = time.process_time()
            run()
            cpu[name].append(time.process_time() - start)
    return {name: statistics.median(times) for name, times in cpu.items()}


def run(size: int, repeat: int) -> dict[str, float]:
    text = memdir_text(size)
    warm_up()
    assert find_secrets(text) == [], "the benchmark text must hold no secret"
    times = interleaved(repeat, {
        "guard": lambda: find_secrets(text),
        "one pattern": lambda: list(ONE_PATTERN.finditer(text)),
        "rules, pre-filtered": lambda: list(rule_hits(text)),
        "rules, all": lambda: list(rule_hits(text, prefilter=False)),
    })
    return {
        **times,
        "passes": times["guard"] / times["one pattern"],
        "prefilter": times["rules, all"] / times["rules, pre-filtered"],
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--size", type=int, default=100_000)
    parser.add_argument("--repeat", type=int, default=15)
    parser.add_argument("--check", action="store_true")
    args = parser.parse_args(argv)
    res = run(args.size, args.repeat)
    print(f"find_secrets on {args.size:,} characters of memories, {len(RULES)} vendor rules; "
          f"CPU time, medians of {args.repeat} interleaved runs")
    for name in ("guard", "one pattern", "rules, pre-filtered", "rules, all"):
        print(f"  {name:<20} {res[name] * 1000:8.2f} ms")
    passes_met = res["passes"] <= GUARD_GOAL
    prefilter_met = res["prefilter"] >= PREFILTER_GOAL
    print(f"guard = {res['passes']:.1f} single-pattern passes (goal <= {GUARD_GOAL:g}): "
          f"{'met' if passes_met else 'MISSED'}")
    print(f"pre-filter: rules {res['prefilter']:.1f}x cheaper (goal >= {PREFILTER_GOAL:g}x): "
          f"{'met' if prefilter_met else 'MISSED'}")
    return 1 if args.check and not (passes_met and prefilter_met) else 0


if __name__ == "__main__":
    sys.exit(main())
