"""What a ``%%agent`` cell costs the kernel beyond the model call it makes (issue 30, item 5).

Runs ``%%agent`` cells in a real IPython shell with the extension loaded, at 200 memories
in index mode, against the local Messages API server through the real SDK. Every display
the cell makes (the streamed answer, the turn record and its fallbacks) goes through a
display publisher that serialises it the way ipykernel does before it leaves the kernel
(``json_clean``, then the session's JSON packer). After each cell, a bare SDK stream call
sends the same request body to the same server (interleaved, so machine load hits both
alike). Reported: medians of CPU time (``time.process_time``: this process, where the
server runs too, for both) and wall time.

Goal (a ratio measured in this one run): the cell's CPU time at most 2x the bare call's.

    python benchmarks/bench_magic.py [--memories 200] [--turns 15] [--profile FILE] [--check]

``--profile FILE`` writes a cProfile of the cells (not the bare calls) to ``FILE``
(``python -m pstats FILE`` reads it).
"""

from __future__ import annotations

import argparse
import cProfile
import gc
import os
import statistics
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import anthropic
from bench_scan import build_memdir
from bench_turn import _bare_call, _env, _main_request, _responder, _settle_folders

from jupyter_memory.localapi import FakeAnthropic

GOAL = 2.0
#: What ``--quick --check`` fails on: a regression, not the noise of a short run.
FLOOR = 3.0


def _kernel_publisher(shell: Any) -> Any:
    """A display publisher that pays what ipykernel's does for each display: the bundle
    cleaned for JSON and packed into the message the kernel sends (nothing is sent)."""
    from ipykernel.jsonutil import encode_images, json_clean
    from IPython.core.displaypub import DisplayPublisher
    from jupyter_client.session import json_packer

    class KernelLikePublisher(DisplayPublisher):  # type: ignore[misc]
        messages = 0
        sent_bytes = 0

        def publish(self, data: dict[str, Any], metadata: dict[str, Any] | None = None, *,
                    transient: dict[str, Any] | None = None, update: bool = False,
                    **kwargs: Any) -> None:
            self._validate_data(data, metadata)
            content = {"data": encode_images(data), "metadata": metadata or {},
                       "transient": transient or {}}
            packed = json_packer({"msg_type": "update_display_data" if update else "display_data",
                                  "content": json_clean(content)})
            KernelLikePublisher.messages += 1
            KernelLikePublisher.sent_bytes += len(packed)

        def clear_output(self, wait: bool = False) -> None:
            return None

    return KernelLikePublisher(shell=shell, parent=shell)


@contextmanager
def _shell(project: Path) -> Iterator[Any]:
    """A real IPython shell in ``project``, the extension loaded, displays kernel-like."""
    from IPython.core.interactiveshell import InteractiveShell
    from traitlets.config import Config

    config = Config()
    config.HistoryManager.hist_file = ":memory:"
    shell = InteractiveShell.instance(config=config)
    saved_pub, cwd = shell.display_pub, os.getcwd()
    shell.display_pub = _kernel_publisher(shell)
    os.chdir(project)
    try:
        for line in ("%load_ext jupyter_memory", "%config Agent.extraction = False",
                     "%config Agent.session_memory = False", "%config Agent.recall_mode = 'index'"):
            _run(shell, line)
        yield shell
    finally:
        from jupyter_memory.magics.state import close_sessions

        close_sessions()
        shell.display_pub = saved_pub
        os.chdir(cwd)


def _run(shell: Any, code: str) -> None:
    result = shell.run_cell(code, store_history=True)
    if not result.success:
        raise SystemExit(f"bench_magic: the cell failed: {code!r}: "
                         f"{result.error_in_exec or result.error_before_exec}")


def run(memories: int, turns: int, profile: str | None = None) -> dict[str, Any]:
    """``turns`` timed ``%%agent`` cells (after two warm-up cells), each followed by a bare
    call with the same body; medians and the ratio."""
    samples: dict[str, list[float]] = {k: [] for k in ("cell", "cell_cpu", "bare", "bare_cpu")}
    profiler = cProfile.Profile(time.process_time) if profile else None
    with tempfile.TemporaryDirectory(prefix="bench-magic-") as tmp:
        root = Path(tmp)
        project, memdir = root / "project", root / "memory"
        project.mkdir()
        memdir.mkdir()
        build_memdir(memdir, memories)
        _settle_folders(memdir)
        with FakeAnthropic(responder=_responder) as server, _env(
            ANTHROPIC_BASE_URL=server.base_url, ANTHROPIC_API_KEY="bench",
            JUPYTER_MEMORY_DIR=str(memdir), CLAUDE_CONFIG_DIR=str(root / "claude"),
            IPYTHONDIR=str(root / "ipython"),
        ), _shell(project) as shell:
            from jupyter_memory.context.models import default_model

            model = default_model()
            bare = anthropic.Anthropic(base_url=server.base_url, api_key="bench", max_retries=0)
            gc.collect()
            for i in range(turns + 2):  # two warm-up cells
                since = len(server.requests)
                cell = f"%%agent\nQuestion {i}: how is revenue stored in the sales table?"
                if profiler is not None and i >= 2:
                    profiler.enable()
                start, cpu = time.perf_counter(), time.process_time()
                _run(shell, cell)
                elapsed, cpu = time.perf_counter() - start, time.process_time() - cpu
                if profiler is not None:
                    profiler.disable()
                request = _main_request(server, since, model)
                body = {k: v for k, v in request.body.items() if k != "stream"}
                took, took_cpu, _start = _bare_call(bare, body)
                if i >= 2:
                    for key, value in (("cell", elapsed), ("cell_cpu", cpu), ("bare", took),
                                       ("bare_cpu", took_cpu)):
                        samples[key].append(value)
            bare.close()
            publisher = shell.display_pub
            displays, sent = type(publisher).messages, type(publisher).sent_bytes
    if profiler is not None and profile:
        profiler.dump_stats(profile)
    res: dict[str, Any] = {key: statistics.median(values) for key, values in samples.items()}
    res.update(memories=memories, turns=turns, displays=displays / (turns + 2),
               sent_kb=sent / (turns + 2) / 1024,
               ratio=res["cell_cpu"] / res["bare_cpu"], ratio_wall=res["cell"] / res["bare"])
    return res


def table(res: dict[str, Any]) -> str:
    def ms(value: float) -> str:
        return f"{value * 1000:.1f} ms"

    return "\n".join([
        "| | CPU time | wall time |",
        "|---|---:|---:|",
        f"| `%%agent` cell | {ms(res['cell_cpu'])} | {ms(res['cell'])} |",
        f"| bare SDK call, same body | {ms(res['bare_cpu'])} | {ms(res['bare'])} |",
        f"| ratio | {res['ratio']:.2f}x | {res['ratio_wall']:.2f}x |",
    ])


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--memories", type=int, default=200)
    parser.add_argument("--turns", type=int, default=15, help="timed cells")
    parser.add_argument("--profile", help="write a cProfile of the cells to this file")
    parser.add_argument("--check", action="store_true", help="exit 1 when the goal is missed")
    args = parser.parse_args(argv)
    res = run(args.memories, args.turns, args.profile)
    print(table(res))
    print(f"\n{res['displays']:.1f} displays a cell, {res['sent_kb']:.1f} KB serialised a cell")
    print(f"%%agent cell at {res['memories']} memories vs bare call: {res['ratio']:.2f}x CPU, "
          f"{res['ratio_wall']:.2f}x wall (goal <= {GOAL:g}x CPU)")
    if args.check and res["ratio"] > GOAL:
        print("FAILED: the goal is missed", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
