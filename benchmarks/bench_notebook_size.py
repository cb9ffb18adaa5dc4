"""Notebook bytes over a scripted agent session: do turn records scale with the turn?

Runs the real agent loop against the local Messages API server (real SDK, real sockets)
with the same scripted model as ``bench_cache.py`` (answers, file reads, greps), puts
each turn's output bundle (the turn record and its Markdown, HTML and text fallbacks)
in a notebook cell as ``%%agent`` would, and reports the size of the saved notebook
after 10, 30 and 100 turns, and the bytes the 10th and the last turn added. The script
repeats every 15 turns, so turns 10, 40, 70 and 100 are the same kind of turn (a grep):
compare the last turn with the 10th only at one of those.

Each record stores only what is new in its turn and refers to request parts (system
prompt, tools, earlier messages) that an earlier output of the notebook already holds,
so a notebook grows linearly with its turns rather than with their square. Goals: 30
turns within 40% of the 1.7 MB that 30 turns took when every record repeated its whole
request, and the last turn adding at most 1.5 times what the 10th added.

    python benchmarks/bench_notebook_size.py [--turns 10 30 100] [--check]
    python benchmarks/bench_notebook_size.py --notebook examples/07-compaction-under-pressure.ipynb

``--notebook`` stores the turn records of a saved notebook again in the shape this package
writes (each request rebuilt from the notebook's parts and compacted again, texts and
recall decisions as parts, the fallbacks rendered again) and reports its bytes before and
after: what re-recording it would weigh, when its recording no longer replays.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
from pathlib import Path
from typing import Any

import nbformat
from bench_cache import scripted_turns

from jupyter_memory.agent.loop import TURN_MIME, run_turn
from jupyter_memory.agent.session import AgentConfig, Session
from jupyter_memory.context.part_refs import resolve
from jupyter_memory.context.request_parts import (
    JSON_PARTS,
    RECORD_VERSION,
    PartStore,
    expand_request,
    notebook_parts,
    stored_parts,
)
from jupyter_memory.localapi import FakeAnthropic
from jupyter_memory.widgets.render import turn_bundle

#: 30 turns of this kind of session made a 1.7 MB notebook with whole requests in records.
BEFORE_30_TURNS = 1_700_000
SIZE_GOAL = 0.40
#: Issue 30's one budget, static turn views of issue 31 included: 30 scripted turns, and
#: the course notebook with the most tool output (07-compaction-under-pressure).
BUDGET_30_TURNS = 400_000
BUDGET_COURSE = 500_000
GROWTH_GOAL = 1.5


def _notebook_bytes(records: list[dict[str, Any]]) -> int:
    nb = nbformat.v4.new_notebook()
    for i, record in enumerate(records):
        cell = nbformat.v4.new_code_cell(f"%%agent\nQuestion {i}: how does the data look?")
        cell.outputs = [nbformat.v4.new_output("display_data", data=turn_bundle(record))]
        nb.cells.append(cell)
    return len(nbformat.writes(nb).encode("utf-8"))


def run(checkpoints: list[int]) -> dict[str, Any]:
    """Run ``max(checkpoints)`` turns; notebook bytes at each checkpoint and per turn."""
    turns = max(checkpoints)
    saved = dict(os.environ)
    try:
        with tempfile.TemporaryDirectory() as tmp:
            tmp_path = Path(tmp)
            project = tmp_path / "project"
            project.mkdir()
            data_file = project / "notes.md"
            data_file.write_text("\n".join(f"row {i}: revenue {i * 17} cents" for i in range(80)))
            (project / "CLAUDE.md").write_text("Use polars, not pandas. Money is in cents.\n")
            os.environ["JUPYTER_MEMORY_DIR"] = str(tmp_path / "memory")
            os.environ["JUPYTER_MEMORY_EXTRACTION"] = "0"
            os.environ["JUPYTER_MEMORY_SESSION_MEMORY"] = "0"
            os.environ["CLAUDE_CONFIG_DIR"] = str(tmp_path / "claude")
            with FakeAnthropic() as server:
                os.environ["ANTHROPIC_BASE_URL"] = server.base_url
                os.environ["ANTHROPIC_API_KEY"] = "bench"
                server.script(scripted_turns(turns, data_file))
                session = Session(project, config=AgentConfig.from_env(max_retries=0))
                for k in range(12):
                    session.store.create(f"fact-{k}", f"a project fact number {k}", "project",
                                         f"Fact {k} about the sales data.")
                records = []
                for i in range(turns):
                    result = run_turn(session, f"Question {i}: how does the data look?")
                    if not result.ok:
                        raise SystemExit(f"turn {i + 1} failed: {result.error}")
                    records.append(result.record)
    finally:
        os.environ.clear()
        os.environ.update(saved)
    sizes = {n: _notebook_bytes(records[:n]) for n in sorted(set(checkpoints) | {9, 10, turns - 1})}
    added_10 = sizes[10] - sizes[9]
    added_last = sizes[turns] - sizes[turns - 1]
    return {"turns": turns, "sizes": {n: sizes[n] for n in checkpoints},
            "added_10": added_10, "added_last": added_last,
            "growth": added_last / added_10 if added_10 else float("inf")}


def goals_met(res: dict[str, Any]) -> tuple[bool, bool]:
    """(30 turns within the size goal, last turn's bytes within the growth goal)."""
    size_30 = res["sizes"].get(30)
    return (size_30 is not None and size_30 <= SIZE_GOAL * BEFORE_30_TURNS,
            res["growth"] <= GROWTH_GOAL)


def _missing(digest: str) -> Any:
    raise SystemExit(f"bench_notebook_size: the notebook lacks the part {digest}")


#: The keys of a request entry that its reference form replaces.
_REFERENCE_KEYS = ("params", "system", "tools", "conversation", "cache_marks", "body")


def restore_notebook(path: Path) -> tuple[int, int, nbformat.NotebookNode]:
    """``(bytes before, bytes after, the notebook)`` with every turn record of ``path``
    stored again as :data:`RECORD_VERSION` (one part store per session, as in a kernel)."""
    nb = nbformat.read(str(path), as_version=4)
    before = len(nbformat.writes(nb).encode("utf-8"))
    outputs = [o for c in nb.cells for o in c.get("outputs", [])
               if TURN_MIME in (o.get("data") or {})]
    records = [o["data"][TURN_MIME] for o in outputs]
    parts = notebook_parts(records)
    stores: dict[str, PartStore] = {}
    def whole(value: Any) -> Any:  # a version-3 record's texts are references
        return resolve(value, parts.get, _missing)

    for output, record in zip(outputs, records, strict=True):
        version = record.get("version", 1)
        store = stores.setdefault(str(record.get("session_id")), PartStore())
        # Every record of a saved notebook is on its page, a failed turn's too (the magic
        # adopts its parts), so each batch is kept.
        with store.batch() as batch:
            requests = [{**{k: v for k, v in e.items() if k not in _REFERENCE_KEYS},
                         **batch.request(expand_request(e, parts, version=version))}
                        for e in record.get("requests") or []]
            calls = [{**{k: v for k, v in c.items() if k not in _REFERENCE_KEYS},
                      **batch.request(expand_request(c, parts, version=version))}
                     for c in record.get("calls") or []]
            if calls:
                record = {**record, "calls": calls}
            new = {**record, "version": RECORD_VERSION, "requests": requests,
                   "messages": batch.texts(whole(record.get("messages") or [])),
                   "tool_calls": batch.texts(whole(record.get("tool_calls") or []))}
            recall = record.get("recall")
            if isinstance(recall, dict) and recall.get("decisions") is not None:
                new["recall"] = {**recall, "decisions": batch.value(
                    "decisions", whole(recall["decisions"]))}
        new.pop(JSON_PARTS, None)
        new.update(stored_parts(batch.new))
        output["data"] = {**output["data"], **turn_bundle(new)}
    return before, len(nbformat.writes(nb).encode("utf-8")), nb


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--turns", type=int, nargs="+", default=[10, 30, 100])
    parser.add_argument("--check", action="store_true", help="exit 1 when a goal is missed")
    parser.add_argument("--notebook", type=Path,
                        help="store this notebook's turn records again and report its bytes")
    args = parser.parse_args(argv)
    if args.notebook is not None:
        before, after, _nb = restore_notebook(args.notebook)
        print(f"{args.notebook.name}: {before:,} bytes as saved, {after:,} bytes with "
              f"version-{RECORD_VERSION} turn records")
        return 0
    if max(args.turns) < 11:
        parser.error("--turns: the largest count must be at least 11 (growth is judged "
                     "against the 10th turn)")
    res = run(args.turns)
    for n, size in res["sizes"].items():
        print(f"{n:>4} turns: {size:>12,} bytes")
    print(f"bytes added by turn 10: {res['added_10']:,}; by turn {res['turns']}: "
          f"{res['added_last']:,} ({res['growth']:.2f}x, goal <= {GROWTH_GOAL}x)")
    size_ok, growth_ok = goals_met(res)
    if args.check and not (size_ok and growth_ok):
        print("FAILED: a goal is missed", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
