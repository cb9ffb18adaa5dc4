"""The cost curve: tokens of one request against the number of memories, per recall mode.

For N = 0, 50, 200 and 1,000 realistic memories, the same question is put to a fresh
session and the request it would send is measured with the offline estimates of
``Session.context_report`` (no model needed):

* index mode - ``MEMORY.md`` rides in every request; it grows with the memories until
  its load limits (200 lines, 25,000 characters) cut it;
* prefetch mode - no index; the offline selector (``jupyter_memory.recall.offline``) picks at
  most 5 of the 200 newest memories by their descriptions and each is attached, cut at
  4,096 bytes (the attachment is built by ``jupyter_memory.recall`` when it is there).

Goals (deterministic: estimates, not timings): the index part at N = 1,000 is no more
than 1.1x the index at N = 200 (the cap holds), and prefetch never attaches more than 5
files or 5 x 4,096 bytes. ``--check`` exits 1 when either is missed.

    python benchmarks/bench_cost_curve.py [--counts 0,50,200,1000] [--check]
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from jupyter_memory.agent.loop import user_message
from jupyter_memory.agent.session import AgentConfig, Session
from jupyter_memory.context.assemble import META_KEY
from jupyter_memory.memdir.index import format_entry
from jupyter_memory.memdir.scan import SCAN_LIMIT, scan

QUESTION = "Which unit is the revenue column of the sales table in, and how should I plot it?"
MAX_ATTACHED = 5
MAX_FILE_BYTES = 4_096
INDEX_CAP_GOAL = 1.1

TOPICS = [
    ("project", "revenue-in-cents", "The sales.revenue column is stored in integer cents"),
    ("feedback", "no-full-frames", "Never print a whole data frame; show head() and shape"),
    ("user", "role", "Senior analyst, fluent in SQL, new to polars"),
    ("feedback", "plot-style", "Plots use the house style: no gridlines, labelled axes"),
    ("project", "churn-definition", "Churn means no order for 60 days since March 2026"),
    ("reference", "sales-dashboard", "Weekly sales dashboard lives in Looker, folder Finance"),
    ("project", "fiscal-year", "The fiscal year starts on 1 February"),
    ("feedback", "polars-not-pandas", "Use polars for new code, not pandas"),
    ("reference", "warehouse-tables", "Warehouse tables are documented in the data catalog"),
    ("project", "region-codes", "Region codes changed in 2025: EMEA split into EU and MEA"),
]


def memory_text(kind: str, name: str, description: str, i: int) -> str:
    """A topic file like the ones people keep: frontmatter, the fact, Why and How to apply."""
    body = (
        f"{description} (note {i}).\n\n"
        f"**Why:** decided in the review of week {i % 52 + 1}; earlier reports were wrong "
        "because nobody knew.\n"
        "**How to apply:** check this before any aggregate, chart or export that touches "
        "the affected tables, and say so in the answer.\n"
    )
    return f"---\nname: {name}-{i}\ndescription: {description} (note {i})\ntype: {kind}\n---\n{body}"


def build_memdir(memdir: Path, count: int) -> None:
    """``count`` memories cycling over ten topics, newest last, with a full index."""
    memdir.mkdir(parents=True, exist_ok=True)
    now = time.time()
    lines = []
    for i in range(count):
        kind, name, description = TOPICS[i % len(TOPICS)]
        file = f"{kind}_{name.replace('-', '_')}_{i}.md"
        path = memdir / file
        path.write_text(memory_text(kind, name, description, i), encoding="utf-8")
        os.utime(path, (now - (count - i) * 60, now - (count - i) * 60))
        lines.append(format_entry(f"{name} {i}", file, f"{description} (note {i})"))
    (memdir / "MEMORY.md").write_text("\n".join(lines) + ("\n" if lines else ""), encoding="utf-8")


def make_session(project: Path, memdir: Path, mode: str) -> Session:
    env = {"JUPYTER_MEMORY_DIR": str(memdir), "CLAUDE_CONFIG_DIR": str(project / ".home")}
    config = AgentConfig.from_env(env, recall_mode=mode, log_transcript=False, extraction=False)
    return Session(project, config=config, env=env)


def _attachment(memdir: Path, file: str) -> dict[str, Any]:
    """The recalled-memory message, from jupyter_memory.recall when it is importable."""
    try:
        from jupyter_memory.recall import attachment_message
    except ImportError:  # recall not installed: the same cut, a plain meta message
        data = (memdir / file).read_bytes()[:MAX_FILE_BYTES]
        text = f"<system-reminder>\nMemory {file}:\n{data.decode('utf-8', 'replace')}\n</system-reminder>"
        return {"role": "user", "content": [{"type": "text", "text": text}],
                META_KEY: {"kind": "recall", "file": file, "bytes": len(data)}}
    return attachment_message(memdir, file)


def selector_label() -> str:
    try:
        from jupyter_memory.recall import offline as selector
    except ImportError:
        return "none (no attachments)"
    return selector.LABEL


def measure(project: Path, memdir: Path) -> dict[str, Any]:
    """Both modes for the memdir as it is now."""
    index_session = make_session(project, memdir, "index")
    index_session.messages = [user_message(QUESTION)]
    index_report = index_session.context_report().to_json()
    cats = {c["name"]: c["tokens"] for c in index_report["categories"]}

    prefetch = make_session(project, memdir, "prefetch")
    candidates = scan(memdir, limit=SCAN_LIMIT)
    try:
        from jupyter_memory.recall.offline import select

        chosen = select(QUESTION, candidates).files[:MAX_ATTACHED]
    except ImportError:
        chosen = []
    attachments = [_attachment(memdir, file) for file in chosen]
    prefetch.messages = [user_message(QUESTION), *attachments]
    pre_report = prefetch.context_report().to_json()
    pre_cats = {c["name"]: c["tokens"] for c in pre_report["categories"]}
    attached_bytes = sum(int(m[META_KEY].get("bytes", 0)) for m in attachments)
    return {
        "index_total": index_report["used"],
        "index_tokens": cats.get("index", 0),
        "prefetch_total": pre_report["used"],
        "prefetch_memory_tokens": pre_cats.get("memories", 0),
        "attached": len(attachments),
        "attached_bytes": attached_bytes,
        "candidates": len(candidates),
        "index_truncated_by": (index_report.get("index") or {}).get("truncated_by"),
    }


def run(counts: tuple[int, ...] = (0, 50, 200, 1000)) -> dict[str, Any]:
    rows = []
    with tempfile.TemporaryDirectory(prefix="bench-cost-") as tmp:
        for count in counts:
            project = Path(tmp) / f"project{count}"
            project.mkdir()
            memdir = Path(tmp) / f"memory{count}"
            build_memdir(memdir, count)
            rows.append({"memories": count, **measure(project, memdir)})
    by_count = {row["memories"]: row for row in rows}
    base, top = by_count.get(200), by_count.get(max(counts))
    cap_ratio = (top["index_tokens"] / base["index_tokens"]
                 if base and top and base["index_tokens"] else None)
    return {
        "rows": rows,
        "selector": selector_label(),
        "index_cap_ratio": cap_ratio,
        "max_attached": max((r["attached"] for r in rows), default=0),
        "max_attached_bytes": max((r["attached_bytes"] for r in rows), default=0),
    }


def missed(result: dict[str, Any]) -> list[str]:
    out = []
    ratio = result["index_cap_ratio"]
    if ratio is not None and ratio > INDEX_CAP_GOAL:
        out.append(f"index at the largest N is {ratio:.2f}x the index at 200 memories")
    if result["max_attached"] > MAX_ATTACHED:
        out.append(f"prefetch attached {result['max_attached']} files")
    if result["max_attached_bytes"] > MAX_ATTACHED * MAX_FILE_BYTES:
        out.append(f"prefetch attached {result['max_attached_bytes']} bytes")
    return out


def table(result: dict[str, Any]) -> str:
    lines = [
        "| memories | index mode: request | of which index | prefetch mode: request "
        "| of which memories | files attached |",
        "|---:|---:|---:|---:|---:|---:|",
    ]
    for r in result["rows"]:
        cut = f" (cut by {r['index_truncated_by']})" if r["index_truncated_by"] else ""
        lines.append(
            f"| {r['memories']:,} | {r['index_total']:,} | {r['index_tokens']:,}{cut} "
            f"| {r['prefetch_total']:,} | {r['prefetch_memory_tokens']:,} | {r['attached']} |"
        )
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--counts", default="0,50,200,1000",
                        help="comma-separated numbers of memories")
    parser.add_argument("--check", action="store_true", help="exit 1 if a goal is missed")
    args = parser.parse_args(argv)
    counts = tuple(int(c) for c in args.counts.split(","))
    result = run(counts)
    print(f"question: {QUESTION}")
    print(f"selector: {result['selector']}; tokens are offline estimates\n")
    print(table(result))
    if result["index_cap_ratio"] is not None:
        print(f"\nindex at N={max(counts)} vs N=200: {result['index_cap_ratio']:.2f}x "
              f"(goal <= {INDEX_CAP_GOAL}x)")
    print(f"most files attached: {result['max_attached']} (goal <= {MAX_ATTACHED}), "
          f"{result['max_attached_bytes']:,} bytes (goal <= {MAX_ATTACHED * MAX_FILE_BYTES:,})")
    problems = missed(result)
    if problems:
        print("MISSED: " + "; ".join(problems))
        return 1 if args.check else 0
    print("all goals met")
    return 0


if __name__ == "__main__":
    sys.exit(main())
