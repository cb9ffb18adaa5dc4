"""What a turn costs the kernel beyond the model's own time, as the memdir grows.

Runs the real agent loop (``run_turn`` plus the cell output it renders, serialised to
JSON as the kernel sends it) against the local
Messages API server through the real SDK, at several memdir sizes in index and prefetch
mode (prefetch with the model selector, so each turn also makes a side call), and a bare
SDK stream call with the same request body to the same server, interleaved with the turns
so machine load hits both alike. Reported, medians per size and mode:

* the turn's wall time, and the kernel's overhead (turn minus the bare call);
* the time from the start of the cell to the first byte of its request at the server;
* connections each session opened, with a delay charged for each new connection (as a
  TLS handshake to a distant endpoint would): a session that reused its connection pays
  it once, one that did not pays it every turn.

Goals (ratios measured in this one run): a turn at 200 memories at most 5x the bare call;
at the largest size at most 1.3x a turn at 200; one connection per session in index mode
(prefetch makes two calls at once, so two); the first request byte within 5 ms of the
cell's start at 200 memories.

    python benchmarks/bench_turn.py [--sizes 0,200,2000,10000] [--turns 15] [--check]
"""

from __future__ import annotations

import argparse
import contextlib
import gc
import json
import os
import statistics
import sys
import tempfile
import time
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import anthropic
from bench_scan import build_memdir

from jupyter_memory.agent.client import make_client
from jupyter_memory.agent.loop import run_turn
from jupyter_memory.agent.session import AgentConfig, Session
from jupyter_memory.localapi import FakeAnthropic, ToolCall, Turn
from jupyter_memory.widgets.render import turn_bundle

BARE_GOAL = 5.0
GROWTH_GOAL = 1.3
FIRST_BYTE_GOAL_MS = 5.0
#: Charged by the server for each new connection in the connection count runs.
CONNECTION_DELAY = 0.05


def _responder(body: dict[str, Any]) -> Turn:
    """The selector's side call (a forced tool) picks nothing; everything else gets a short
    answer."""
    choice = body.get("tool_choice") or {}
    if choice.get("type") == "tool":
        return Turn(tool_calls=[ToolCall(choice["name"], {"selected_memories": []})])
    return Turn(text="Revenue is stored in integer cents; divide by 100 for display.")


@contextlib.contextmanager
def _env(**values: str) -> Iterator[None]:
    saved = dict(os.environ)
    os.environ.update(values)
    try:
        yield
    finally:
        os.environ.clear()
        os.environ.update(saved)


def _bare_call(client: Any, body: dict[str, Any]) -> tuple[float, float, float]:
    """Wall time, CPU time and start (``perf_counter``) of one streamed call with ``body``,
    read to the end as a turn reads it."""
    start, cpu = time.perf_counter(), time.process_time()
    with client.messages.stream(**body) as stream:
        for _ in stream:
            pass
        stream.get_final_message()
    return time.perf_counter() - start, time.process_time() - cpu, start


def _settle(session: Session) -> None:
    """Let the turn's prefetch finish, as it does while a person reads the answer."""
    from jupyter_memory.recall import last_prefetch

    prefetch = last_prefetch(session)
    if prefetch is not None:
        prefetch.wait(timeout=30)


def _main_request(server: FakeAnthropic, since: int, model: str) -> Any:
    for request in server.requests[since:]:
        if isinstance(request.body, dict) and request.body.get("model") == model:
            return request
    raise RuntimeError("the turn sent no request for the main model")


def measure(size: int, mode: str, turns: int, root: Path, memdir: Path) -> dict[str, Any]:
    """Turns of one session at ``size`` memories in ``mode``, with bare calls between."""
    with FakeAnthropic(responder=_responder) as server, _env(
        ANTHROPIC_BASE_URL=server.base_url, ANTHROPIC_API_KEY="bench",
        JUPYTER_MEMORY_DIR=str(memdir), CLAUDE_CONFIG_DIR=str(root / "claude"),
    ):
        bare = anthropic.Anthropic(base_url=server.base_url, api_key="bench", max_retries=0)
        config = AgentConfig.from_env(max_retries=0, recall_mode=mode, extraction=False,
                                      session_memory=False)
        session = Session(root / "project", config=config)
        samples: dict[str, list[float]] = {k: [] for k in (
            "turn", "turn_cpu", "bare", "bare_cpu", "first_byte", "bare_first_byte")}
        gc.collect()
        for i in range(turns + 2):  # two warm-up turns
            since = len(server.requests)
            prompt = f"Question {i}: how is revenue stored in the sales table?"
            start, cpu = time.perf_counter(), time.process_time()
            result = run_turn(session, prompt)
            json.dumps(turn_bundle(result.record))  # the output bundle, serialised as displayed
            elapsed, cpu = time.perf_counter() - start, time.process_time() - cpu
            if not result.ok:
                raise SystemExit(f"bench_turn: a turn failed: {result.error}")
            _settle(session)
            turn_requests = server.requests[since:]
            request = _main_request(server, since, config.model)
            body = {k: v for k, v in request.body.items() if k != "stream"}
            since = len(server.requests)
            took, took_cpu, bare_start = _bare_call(bare, body)
            if i >= 2:
                for key, value in (("turn", elapsed), ("turn_cpu", cpu), ("bare", took),
                                   ("bare_cpu", took_cpu),
                                   ("first_byte", min(r.received for r in turn_requests) - start),
                                   ("bare_first_byte", server.requests[since].received - bare_start)):
                    samples[key].append(value)
        session.close()
        bare.close()
    row: dict[str, Any] = {"size": size, "mode": mode}
    row.update({key: statistics.median(values) for key, values in samples.items()})
    row["overhead"] = row["turn"] - row["bare"]
    row["overhead_cpu"] = row["turn_cpu"] - row["bare_cpu"]
    return row


def connections(mode: str, turns: int, root: Path, memdir: Path, *,
                per_turn_client: bool = False) -> dict[str, Any]:
    """Connections one session opens over ``turns`` turns when each new one costs a delay
    (``per_turn_client``: a new SDK client for every turn, as before issue 20)."""
    with FakeAnthropic(responder=_responder, connection_delay=CONNECTION_DELAY) as server, _env(
        ANTHROPIC_BASE_URL=server.base_url, ANTHROPIC_API_KEY="bench",
        JUPYTER_MEMORY_DIR=str(memdir), CLAUDE_CONFIG_DIR=str(root / "claude"),
    ):
        config = AgentConfig.from_env(max_retries=0, recall_mode=mode, extraction=False,
                                      session_memory=False)
        session = Session(root / "project", config=config)
        times = []
        for i in range(turns):
            start = time.perf_counter()
            client = make_client(max_retries=0) if per_turn_client else None
            result = run_turn(session, f"Question {i}: how is revenue stored in the sales table?",
                              client=client)
            times.append(time.perf_counter() - start)
            if not result.ok:
                raise SystemExit(f"bench_turn: a turn failed: {result.error}")
            _settle(session)
            if client is not None:
                client.close()
        opened = server.connections_opened
        session.close()
    return {"mode": mode, "client": "new per turn" if per_turn_client else "shared (session)",
            "turns": turns, "opened": opened, "first": times[0],
            "later": statistics.median(times[1:]) if len(times) > 1 else times[0]}


def _settle_folders(memdir: Path) -> None:
    """Date the memdir's folders a minute back, as a memdir that was not written in the last
    moments: a folder changed within ``scan.RACY_SECONDS`` is walked again on every scan (it
    may still change within the same timestamp tick), which is right, but is not the steady
    cost of a turn that this benchmark measures."""
    past = time.time() - 60
    for folder in [memdir, *(p for p in memdir.rglob("*") if p.is_dir())]:
        os.utime(folder, (past, past))


def run(sizes: Sequence[int], turns: int, modes: Sequence[str] = ("index", "prefetch")) -> dict[str, Any]:
    """Every measurement of the report, in one process."""
    rows: list[dict[str, Any]] = []
    conns: list[dict[str, Any]] = []
    with tempfile.TemporaryDirectory(prefix="bench-turn-") as tmp:
        root = Path(tmp)
        (root / "project").mkdir()
        for size in sizes:
            memdir = root / f"memory-{size}"
            memdir.mkdir()
            if size:
                build_memdir(memdir, size)
                _settle_folders(memdir)
            for mode in modes:
                rows.append(measure(size, mode, turns, root, memdir))
        memdir = root / f"memory-{200 if 200 in sizes else sizes[0]}"
        for mode in modes:
            conns.append(connections(mode, 5, root, memdir))
        conns.append(connections("index", 5, root, memdir, per_turn_client=True))
    by = {(r["size"], r["mode"]): r for r in rows}
    base_size = 200 if 200 in sizes else sizes[0]
    top = max(sizes)
    index_200 = by[(base_size, "index")]
    growth = max(by[(top, m)]["turn_cpu"] / by[(base_size, m)]["turn_cpu"] for m in modes)
    return {
        "rows": rows,
        "connections": conns,
        "base_size": base_size,
        "top": top,
        "bare_ratio": index_200["turn_cpu"] / index_200["bare_cpu"],
        "bare_ratio_wall": index_200["turn"] / index_200["bare"],
        "growth": growth,
        "growth_wall": max(by[(top, m)]["turn"] / by[(base_size, m)]["turn"] for m in modes),
        "first_byte_ms": index_200["first_byte"] * 1000,
        "bare_first_byte_ms": index_200["bare_first_byte"] * 1000,
        "connections_ok": all(c["opened"] <= (1 if c["mode"] == "index" else 2)
                              for c in conns if c["client"].startswith("shared")),
        "first_byte_floor_ok": index_200["first_byte"] <= index_200["bare_first_byte"]
        + FIRST_BYTE_GOAL_MS / 1000,
    }


def _ms(value: float) -> str:
    return f"{value * 1000:.1f} ms"


def table(res: dict[str, Any]) -> str:
    lines = ["| memories | mode | turn (CPU / wall) | bare SDK call (CPU / wall) | kernel overhead "
             "(CPU / wall) | first request byte: turn / bare call |",
             "|---:|---|---:|---:|---:|---:|"]
    for r in res["rows"]:
        lines.append(f"| {r['size']:,} | {r['mode']} | {_ms(r['turn_cpu'])} / {_ms(r['turn'])} | "
                     f"{_ms(r['bare_cpu'])} / {_ms(r['bare'])} | "
                     f"{_ms(r['overhead_cpu'])} / {_ms(r['overhead'])} | "
                     f"{r['first_byte'] * 1000:.2f} ms / {r['bare_first_byte'] * 1000:.2f} ms |")
    lines += ["", f"Connections, with {CONNECTION_DELAY * 1000:.0f} ms charged per new connection:",
              "", "| mode | SDK client | turns | connections opened | first turn | later turns |",
              "|---|---|---:|---:|---:|---:|"]
    for c in res["connections"]:
        lines.append(f"| {c['mode']} | {c['client']} | {c['turns']} | {c['opened']} | "
                     f"{c['first'] * 1000:.1f} ms | {c['later'] * 1000:.1f} ms |")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="0,200,2000,10000",
                        help="memdir sizes, comma-separated (default 0,200,2000,10000)")
    parser.add_argument("--turns", type=int, default=15, help="timed turns per size and mode")
    parser.add_argument("--check", action="store_true", help="exit 1 when a goal is missed")
    args = parser.parse_args(argv)
    sizes = [int(s) for s in args.sizes.split(",") if s.strip()]
    res = run(sizes, args.turns)
    print(table(res))
    print()
    print(f"turn at {res['base_size']} memories vs bare call: {res['bare_ratio']:.2f}x CPU, "
          f"{res['bare_ratio_wall']:.2f}x wall (goal <= {BARE_GOAL:g}x)")
    print(f"turn at {res['top']:,} vs {res['base_size']} memories: {res['growth']:.2f}x CPU, "
          f"{res['growth_wall']:.2f}x wall (goal <= {GROWTH_GOAL:g}x)")
    print(f"first request byte at {res['base_size']} memories: {res['first_byte_ms']:.2f} ms "
          f"(bare call: {res['bare_first_byte_ms']:.2f} ms; goal <= {FIRST_BYTE_GOAL_MS:g} ms)")
    print(f"connections per session: {'ok' if res['connections_ok'] else 'too many'}")
    missed = (res["bare_ratio"] > BARE_GOAL or res["growth"] > GROWTH_GOAL
              or res["first_byte_ms"] > FIRST_BYTE_GOAL_MS or not res["connections_ok"])
    if args.check and missed:
        print("FAILED: a goal was missed", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
