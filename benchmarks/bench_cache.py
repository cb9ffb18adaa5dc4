"""The prompt cache over every model call of a session, by kind of call.

A fixed workload runs the real agent loop against the local Messages API server (real
SDK, real sockets) with every background call on: the extraction fork after each turn,
the session notes, and in prefetch mode the recall selector. 30 turns; every third reads
an 80-line file, every fifth greps; 12 memories; the simulated clock moves 30 seconds
between turns (a second row: 5 minutes). The server answers by kind of call (main,
extraction, selector, notes, summary) and bills each one as the API does (the model's
minimum cacheable length, the lookback, lifetimes), so the share of input read from the
cache is measured over the whole session, not only its main turns.

    python benchmarks/bench_cache.py [--turns 30] [--gap 30] [--mode index|prefetch|both]
                                     [--cache-ttl 5m|1h] [--min-cache-tokens N] [--check]
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import threading
from collections import deque
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from jupyter_memory.agent.compaction.prompt import SUMMARY_REQUEST_HEAD
from jupyter_memory.agent.loop import run_turn
from jupyter_memory.agent.session import AgentConfig, Session
from jupyter_memory.agent.session_notes import SECTIONS
from jupyter_memory.context.assemble import MAX_BREAKPOINTS, count_breakpoints
from jupyter_memory.localapi import FakeAnthropic, ManualClock, ToolCall, Turn
from jupyter_memory.recall.model_selector import SELECTOR_TOOL_NAME

#: Share of all input tokens, over every call of the session, read from the cache.
GOALS = {"index": 0.96, "prefetch": 0.90}
#: What CI's check fails below. The share is exact for this workload (token counts on a
#: simulated clock, no noise), so the floor is the goal itself: a change that makes any
#: call send more uncached input shows at once.
FLOORS = {"index": 0.96, "prefetch": 0.90}
KINDS = ("main", "extraction", "selector", "notes", "summary")
TURNS = 30
GAP_SECONDS = 30.0
#: The second row: a person who takes five minutes between prompts.
SLOW_GAP_SECONDS = 300.0
MEMORIES = 12
#: Words that start the extraction fork's own instruction (agent/extraction.py).
_EXTRACTION_HEAD = "You are now the memory extraction agent"
_NOTES_SYSTEM_HEAD = "You keep the running notes"


def kind_of(body: Mapping[str, Any]) -> str:
    """Which part of the session sent ``body``: the server sees only the request."""
    choice = body.get("tool_choice")
    if isinstance(choice, Mapping) and choice.get("name") == SELECTOR_TOOL_NAME:
        return "selector"
    system = body.get("system")
    if isinstance(system, str) and system.startswith(_NOTES_SYSTEM_HEAD):
        return "notes"
    texts = [str(block.get("text", ""))
             for message in body.get("messages") or [] if message.get("role") == "user"
             for block in _blocks(message) if block.get("type") == "text"]
    if any(text.startswith(_EXTRACTION_HEAD) for text in texts):
        return "extraction"
    if texts and texts[-1].startswith(SUMMARY_REQUEST_HEAD):
        return "summary"
    return "main"


def _blocks(message: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    content = message.get("content")
    if isinstance(content, str):
        return [{"type": "text", "text": content}]
    return [b for b in content or [] if isinstance(b, Mapping)]


def scripted_turns(turns: int, data_file: Path) -> list[Turn]:
    """Every third turn reads a file, every fifth greps; the others answer directly."""
    script: list[Turn] = []
    for i in range(turns):
        if i % 3 == 1:
            script.append(Turn(tool_calls=[ToolCall("Read", {"file_path": str(data_file)})]))
        elif i % 5 == 4:
            script.append(Turn(tool_calls=[ToolCall("Grep", {"pattern": "revenue"})]))
        script.append(Turn(text=f"Answer {i}: the numbers look consistent with last month. "
                                "Revenue is up 3.2% and churn is flat."))
    return script


def _notes_text(update: int) -> str:
    body = "\n\n".join(f"# {name}\n{hint.rstrip('.')} (update {update})."
                       for name, hint in SECTIONS)
    return f"<notes>\n{body}\n</notes>"


@dataclass
class Router:
    """The scripted model: each kind of call gets its own replies."""

    main: deque[Turn]
    memory_files: list[str]
    calls: dict[str, int] = field(default_factory=lambda: dict.fromkeys(KINDS, 0))
    # The notes and the fork may call at once, each from a thread of the server.
    lock: threading.Lock = field(default_factory=threading.Lock)

    def __call__(self, body: dict[str, Any]) -> Turn | None:
        kind = kind_of(body)
        with self.lock:
            self.calls[kind] += 1
            n = self.calls[kind]
            if kind == "main":
                return self.main.popleft() if self.main else None
        if kind == "extraction":
            return Turn(text="Nothing to save.")
        if kind == "selector":
            # Every third question has one memory that fits; the others none.
            chosen = [self.memory_files[n % len(self.memory_files)]] if n % 3 == 0 else []
            return Turn(tool_calls=[ToolCall(SELECTOR_TOOL_NAME, {"selected_memories": chosen})])
        if kind == "notes":
            return Turn(text=_notes_text(n))
        return Turn(text="<summary>The person reviewed the sales data; revenue is up "
                         "3.2% and churn is flat.</summary>")


@dataclass
class KindShare:
    calls: int = 0
    input: int = 0
    read: int = 0
    written: int = 0
    written_1h: int = 0

    @property
    def share(self) -> float:
        return self.read / self.input if self.input else 0.0

    @property
    def write_share(self) -> float:
        return self.written / self.input if self.input else 0.0


@dataclass
class Result:
    mode: str
    turns: int
    gap: float
    kinds: dict[str, KindShare]
    max_breakpoints: int
    output: int

    @property
    def total(self) -> KindShare:
        out = KindShare()
        for k in self.kinds.values():
            out.calls += k.calls
            out.input += k.input
            out.read += k.read
            out.written += k.written
            out.written_1h += k.written_1h
        return out

    @property
    def cost_ratio(self) -> float:
        """What the input cost, as a multiple of the same tokens billed with no cache (1.0):
        reads at 0.1x, 5-minute writes at 1.25x, 1-hour writes at 2x."""
        t = self.total
        fresh = t.input - t.read - t.written
        cost = fresh + 0.1 * t.read + 1.25 * (t.written - t.written_1h) + 2.0 * t.written_1h
        return cost / t.input if t.input else 0.0


def run(turns: int = TURNS, *, mode: str = "index", gap: float = GAP_SECONDS,
        min_cache_tokens: int | None = None, cache_ttl: str = "5m") -> Result:
    """One session of ``turns`` turns in ``mode``; ``min_cache_tokens`` overrides the
    model's minimum cacheable length (0: the old billing, which cached any prefix);
    ``cache_ttl`` is the ``Agent.cache_ttl`` setting."""
    saved = dict(os.environ)
    try:
        with tempfile.TemporaryDirectory(prefix="bench-cache-") as tmp:
            return _run(Path(tmp), turns, mode, gap, min_cache_tokens, cache_ttl)
    finally:
        os.environ.clear()
        os.environ.update(saved)


def _run(tmp: Path, turns: int, mode: str, gap: float, min_cache_tokens: int | None,
         cache_ttl: str) -> Result:
    project = tmp / "project"
    project.mkdir()
    data_file = project / "notes.md"
    data_file.write_text("\n".join(f"row {i}: revenue {i * 17} cents" for i in range(80)))
    (project / "CLAUDE.md").write_text("Use polars, not pandas. Money is in cents.\n")
    os.environ["JUPYTER_MEMORY_DIR"] = str(tmp / "memory")
    os.environ["CLAUDE_CONFIG_DIR"] = str(tmp / "claude")
    for switch in ("JUPYTER_MEMORY_EXTRACTION", "JUPYTER_MEMORY_SESSION_MEMORY"):
        os.environ.pop(switch, None)
    clock = ManualClock()
    server = FakeAnthropic(clock=clock, min_cache_tokens=min_cache_tokens)
    with server:
        os.environ["ANTHROPIC_BASE_URL"] = server.base_url
        os.environ["ANTHROPIC_API_KEY"] = "bench"
        session = Session(project, config=AgentConfig.from_env(
            max_retries=0, recall_mode=mode, recall_selector="model", extraction=True,
            session_memory=True, cache_ttl=cache_ttl,
            # Prefetched memories land before the turn's first call, not whenever the
            # selector's thread finishes: the same requests, so the same numbers, every run.
            wait_for_prefetch=True))
        store = session.store
        assert store is not None
        files = [store.create(f"fact-{k}", f"a project fact number {k} about revenue", "project",
                              f"Fact {k} about the sales data.").file for k in range(MEMORIES)]
        router = Router(deque(scripted_turns(turns, data_file)), [str(f) for f in files])
        server.responder = router
        extraction = session.extraction
        try:
            for i in range(turns):
                result = run_turn(session, f"Question {i}: how does the revenue data look?")
                if not result.ok:
                    raise SystemExit(f"turn {i} failed: {result.error}")
                # Background calls finish before the person's next prompt.
                extraction.wait(60)
                session.notes.wait(60)
                clock.advance(gap)
        finally:
            session.close()
        if server.failures:
            raise SystemExit(f"the local server refused a request: {server.failures[0]}")
        kinds = {kind: KindShare() for kind in KINDS}
        output = 0
        for record in server.requests:
            if record.usage is None or not isinstance(record.body, dict):
                continue
            share = kinds[kind_of(record.body)]
            usage = record.usage
            share.calls += 1
            share.input += usage.total
            share.read += usage.cache_read_input_tokens
            share.written += usage.cache_creation_input_tokens
            share.written_1h += usage.ephemeral_1h_input_tokens
            output += record.output_tokens
        max_bp = max((count_breakpoints(r.body) for r in server.requests
                      if isinstance(r.body, dict)), default=0)
    return Result(mode, turns, gap, kinds, max_bp, output)


def table(results: list[tuple[str, Result]]) -> str:
    """One row per run: the share read over every call, then by kind of call."""
    lines = [
        "| run | calls | input tokens | read, every call | written | main | extraction "
        "| selector | notes | summary | input cost vs no cache |",
        "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for label, res in results:
        total = res.total
        cells = []
        for kind in KINDS:
            k = res.kinds[kind]
            cells.append(f"{k.share:.1%} ({k.calls})" if k.calls else "—")
        lines.append(f"| {label} | {total.calls} | {total.input:,} | **{total.share:.1%}** | "
                     f"{total.write_share:.1%} | " + " | ".join(cells)
                     + f" | {res.cost_ratio:.2f}x |")
    lines += ["", "Each kind's cell: the share of its input read from the cache (its calls)."]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--turns", type=int, default=TURNS)
    parser.add_argument("--gap", type=float, default=GAP_SECONDS,
                        help="simulated seconds between turns")
    parser.add_argument("--mode", choices=("index", "prefetch", "both"), default="both")
    parser.add_argument("--min-cache-tokens", type=int, default=None,
                        help="override the model's minimum cacheable length (0: cache any prefix)")
    parser.add_argument("--cache-ttl", choices=("5m", "1h"), default="5m",
                        help="the Agent.cache_ttl setting")
    parser.add_argument("--check", action="store_true", help="exit 1 below the floor")
    args = parser.parse_args(argv)
    modes = ("index", "prefetch") if args.mode == "both" else (args.mode,)
    results = [(f"{mode}, {args.gap:g} s gaps, cache_ttl {args.cache_ttl}",
                run(args.turns, mode=mode, gap=args.gap, min_cache_tokens=args.min_cache_tokens,
                    cache_ttl=args.cache_ttl))
               for mode in modes]
    print(table(results))
    failed = False
    for label, res in results:
        goal, floor = GOALS[res.mode], FLOORS[res.mode]
        within = res.max_breakpoints <= MAX_BREAKPOINTS
        met = res.total.share >= goal and within
        print(f"{label}: {res.total.share:.1%} read over every call (goal >= {goal:.0%}, "
              f"floor {floor:.0%}); most breakpoints in one request {res.max_breakpoints} "
              f"(limit {MAX_BREAKPOINTS})" + ("" if met else "  MISSED"))
        failed |= not (res.total.share >= floor and within)
    if args.check and failed:
        print("FAILED: below the goal", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
