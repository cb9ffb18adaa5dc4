"""Render time of the widgets over a memdir of 200 memories.

Times, as medians of interleaved runs (CPU time):

* the memory browser (``MemoryBrowser``): building it, which lists the memories, runs the
  doctor and fills the table; ``refresh()`` after a change; its static HTML fallback;
* ``memories_html``, the HTML table alone (what a notebook saved without widget state shows);
* the context view (``ContextView``) of an index-mode session whose index points at all
  200 memories.

Goal: the browser is ready in under 1 s of CPU time for 200 memories (an interactive
budget, generous on purpose so a busy machine does not fail it). ``--check`` exits 1 on
a miss.

    python benchmarks/bench_widgets.py [--memories 200] [--repeat 7] [--check]
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

from jupyter_memory.memdir.doctor import doctor
from jupyter_memory.memdir.store import MemoryStore

GOAL_S = 1.0


def _median_cpu(runs: dict[str, Callable[[], object]], repeat: int) -> dict[str, float]:
    samples: dict[str, list[float]] = {name: [] for name in runs}
    for _ in range(repeat):
        for name, fn in runs.items():
            start = time.process_time()
            fn()
            samples[name].append(time.process_time() - start)
    return {name: statistics.median(values) for name, values in samples.items()}


def run(memories: int = 200, repeat: int = 7) -> dict[str, Any]:
    from jupyter_memory.widgets import ContextView, MemoryBrowser, memories_html

    with tempfile.TemporaryDirectory(prefix="bench-widgets-") as tmp:
        memdir = Path(tmp) / "memory"
        build_memdir(memdir, memories)
        project = Path(tmp) / "project"
        project.mkdir()
        store = MemoryStore(memdir)
        browser = MemoryBrowser(store, check_projects=False)
        listed = store.list()
        findings = doctor(store, check_projects=False)
        session = make_session(project, memdir, "index")
        assembled = session.assemble()
        report = session.context_report()
        html_bytes = len(memories_html(listed, findings).encode())
        runs: dict[str, Callable[[], object]] = {
            "browser build": lambda: MemoryBrowser(store, check_projects=False),
            "browser refresh": browser.refresh,
            "browser static HTML": browser.static_html,
            "memories_html": lambda: memories_html(store.list(), findings),
            "context view": lambda: ContextView(report, assembled=assembled),
        }
        medians = _median_cpu(runs, repeat)
        rows = len(browser.table.options)
    return {
        "memories": memories,
        "rows": rows,
        "html_kb": html_bytes / 1024,
        "ms": {name: value * 1000 for name, value in medians.items()},
        "build_s": medians["browser build"],
    }


def table(result: dict[str, Any]) -> str:
    lines = ["| widget | CPU time |", "|---|---:|"]
    lines += [f"| {name} | {ms:.1f} ms |" for name, ms in result["ms"].items()]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--memories", type=int, default=200)
    parser.add_argument("--repeat", type=int, default=7)
    parser.add_argument("--check", action="store_true", help="exit 1 if the goal is missed")
    args = parser.parse_args(argv)
    res = run(args.memories, args.repeat)
    print(f"{res['memories']} memories, {res['rows']} rows in the browser, "
          f"static table {res['html_kb']:.0f} KB\n")
    print(table(res))
    print(f"\nbrowser ready in {res['build_s'] * 1000:.0f} ms (goal < {GOAL_S * 1000:.0f} ms)")
    if res["build_s"] >= GOAL_S:
        print("MISSED: the browser is too slow to open")
        return 1 if args.check else 0
    print("goal met")
    return 0


if __name__ == "__main__":
    sys.exit(main())
