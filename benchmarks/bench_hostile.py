"""Scanners of untrusted text against hostile input: is each one linear (issue 26, item 9)?

Text others hand us (a cloned project's ``CLAUDE.md`` and rules, memory files and their
frontmatter, ``MEMORY.md``, session logs and notebooks) is read by our own scanners. A
scanner that looks ahead from every opening backtick, retries a lazy regex over every
blank, or rescans a log line for every hit is quadratic: a 768 KB ``CLAUDE.md`` of
unclosed backticks once took 14-20 s to assemble, about 10 minutes at the 5 MB cap.

For each scanner and hostile pattern this times the scan at a small size and at 100 times
that size (50 KB and 5 MB; ``--quick``: 10 KB and 1 MB), on CPU time from cold caches (each
small run follows a write over 64 MB; the large input never fits in the caches): the best
of several runs at the small size, and at the large size the best of up to three runs in
a fresh process, fewer when a run is long. A case past the goal is measured twice more
and judged on its best times (in CI, past the floor), so one noisy run does not fail it. Goal:
the large one takes at most 120 times the small one, or is refused by a documented cap with
a message (the refusal is shown). The large run stops once it has used three times what
the goal allows one run, so a quadratic case costs seconds, not hours.

    python benchmarks/bench_hostile.py [--quick] [--check] [--only SUBSTRING]
"""

from __future__ import annotations

import argparse
import datetime as dt
import gc
import json
import multiprocessing
import os
import sys
import tempfile
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from jupyter_memory.agent.remember import find_relative_dates
from jupyter_memory.commands.transcript import question_text
from jupyter_memory.context.instructions import (
    MAX_FILE_BYTES,
    MAX_PATH_CHARS,
    InstructionFile,
    InstructionSet,
    compact_instructions,
    find_imports,
    load_instructions,
    match_glob,
    strip_html_comments,
)
from jupyter_memory.memdir import dates as date_engine
from jupyter_memory.memdir import frontmatter
from jupyter_memory.memdir.gateway import Root
from jupyter_memory.memdir.index import load_for_model, parse_index
from jupyter_memory.memdir.markdown import code_spans, fence_flags
from jupyter_memory.memdir.scan import read_document
from jupyter_memory.recall import dates, offline
from jupyter_memory.sessions.recording.matching import conversation_view
from jupyter_memory.sessions.resume import conversation_from_notebook
from jupyter_memory.transcript.reader import read_entries
from jupyter_memory.transcript.rebuild import rebuild_conversation

SIZES = (50_000, 5_000_000)
QUICK_SIZES = (10_000, 1_000_000)
GOAL = 120.0
"""Most the large input may take, as a multiple of the small one (100x the size)."""
FLOOR = 200.0
"""What ``run_all.py --quick --check`` (CI) fails on: a linear scan lands near 100x, a
quadratic one near 10,000x; the goal's 20% margin is thinner than the noise of a short run
on a busy machine (the caches hold a 10 KB input and its objects, not a 1 MB one)."""
CHEAP_NS = 10.0
"""A large run cheaper than this per character passes whatever its ratio: such a scan is
a few passes in C over the text, whose cost per byte jumps once its buffers outgrow the
caches and come from fresh pages (a 20 KB scan of 20 us is timed at its best, the 2 MB one
of 2 ms pays the page faults), and no quadratic scan of megabytes is this cheap."""
STOP_SECONDS = (120.0, 600.0)
"""A large run is stopped after this long on the clock (quick, full), however busy the
machine; it is stopped sooner once its CPU time is past what the goal allows."""
BATCH_SECONDS = 0.1
"""The small size is run about this long in all (at least three runs)."""
SMALL_RUNS = 30
"""Most runs of the small size."""
EVICT_BYTES = 64 * 1024 * 1024
"""Memory written before each small run, more than a CPU's caches hold. Both sizes are
timed from cold caches: a 10 KB input and the objects a scan makes of it stay in the
caches between runs, a 1 MB one does not, and the difference (up to twice the time per
byte for a scan that walks Python objects) is the machine's, not the scan's."""
AGAIN_SECONDS = (1.0, 5.0)
"""A large run shorter than this is timed again (three runs at most), and the best counts
(quick, full): the small size counts its best of several runs, and a single large run would
be judged on its first, which pays for fresh memory the small runs reuse."""
ATTEMPTS = 3
"""A case past the goal is measured again, this many times in all; the best small time and
the best large time count (noise on a shared machine only ever adds time, so the best of
a few runs is the estimate; a quadratic scan stays past the goal however often it runs)."""

Prepared = Callable[[], "str | None"]
"""A scan ready to time; returns the refusal message when a size cap refused the input."""

@dataclass(frozen=True)
class Case:
    """One scanner fed one hostile pattern; ``build(size)`` prepares the input outside
    the timing and returns the scan to time."""

    scanner: str
    pattern: str
    build: Callable[[int, Path], Prepared]


def fill(unit: str, size: int) -> str:
    """``unit`` repeated to exactly ``size`` characters."""
    return (unit * (size // len(unit) + 1))[:size]


def growing_runs(size: int) -> str:
    """Backtick runs of length 1, 2, 3, ... each followed by a word: every run is unclosed."""
    out, width, total = [], 1, 0
    while total < size:
        piece = "`" * width + " x "
        out.append(piece)
        total += len(piece)
        width += 1
    return "".join(out)[:size]


def _nothing(_: object) -> None:
    return None


def text_case(scanner: str, pattern: str, make: Callable[[int], str],
              scan: Callable[[str], object]) -> Case:
    """A case whose scan is a function of the hostile text alone."""

    def build(size: int, _tmp: Path) -> Prepared:
        text = make(size)
        return lambda: _nothing(scan(text))

    return Case(scanner, pattern, build)


# --------------------------------------------------------------------------- instructions


def _instructions(text: str, tmp: Path) -> Prepared:
    project = tmp / f"project-{uuid.uuid4().hex}"
    (project / ".git").mkdir(parents=True)
    (project / "CLAUDE.md").write_text(text, encoding="utf-8")
    env = {"HOME": str(tmp), "CLAUDE_CONFIG_DIR": str(tmp / "config")}

    def run() -> str | None:
        loaded = load_instructions(project, project_root=project, env=env,
                                   external_imports=True)
        refused = [n for n in loaded.notes
                   if "larger than" in n or "a file may import at most" in n]
        return refused[0] if refused else None

    return run


def _compact(text: str) -> None:
    path = Path("/project/CLAUDE.md")
    files = [InstructionFile(path, "project", text, None, "benchmark")]
    compact_instructions(InstructionSet(cwd=path.parent, project_root=path.parent, files=files))


def _rule_header(size: int, _tmp: Path) -> Prepared:
    header = "paths:\n" + fill('  - "src/**/*.py"\n', size)
    text = f"---\n{header}\n---\nQualify every table.\n"

    def run() -> str | None:
        parts = frontmatter.split(text)
        assert parts is not None
        try:
            frontmatter.load_yaml(parts.header, where="rule.md: frontmatter")
        except frontmatter.FrontmatterError as exc:
            return str(exc)
        return None

    return run


def _glob(size: int, _tmp: Path) -> Prepared:
    pattern = "*a" * 12 + "b"
    path = "a" * size

    def run() -> str | None:
        match_glob(pattern, path)
        if len(path) > MAX_PATH_CHARS:
            return (f"a path of {len(path):,} characters matches no rule: longer than "
                    f"{MAX_PATH_CHARS:,} (PATH_MAX)")
        return None

    return run


# --------------------------------------------------------------------------- memdir


def _fence_lines(size: int, _tmp: Path) -> Prepared:
    """The scanner takes lines, as its callers hold them: splitting is ``str.splitlines``
    (C, linear), whose first use of a million fresh strings costs page faults, not scan."""
    lines = fill("```x\n~~~\n", size).splitlines()
    return lambda: _nothing(fence_flags(lines))


def _header(text: str) -> Prepared:
    def run() -> str | None:
        doc = frontmatter.parse(text)
        return doc.error if doc.error and "longer than" in doc.error else None

    return run


def _memory_file(size: int, tmp: Path) -> Prepared:
    path = tmp / f"memory-{uuid.uuid4().hex}.md"
    path.write_text("---\nname: x\ndescription: " + fill("long line ", size) + "\n---\nbody\n",
                    encoding="utf-8")

    root = Root.declare("memdir", tmp)

    def run() -> str | None:
        read_document(path, root)
        return None

    return run


# --------------------------------------------------------------------------- recall


def _tokenize(text: str) -> None:
    offline._tokens.cache_clear()  # the same text again would be a cache hit
    offline.tokenize(text)


def _date_parse(text: str) -> None:
    dates._parse.cache_clear()  # the same text again would be a cache hit
    date_engine.find_dates.cache_clear()
    dates.parse(text, dt.datetime(2026, 3, 1, tzinfo=dt.timezone.utc))


def _relative_dates(text: str) -> None:
    date_engine.find_dates.cache_clear()
    find_relative_dates(text)


# --------------------------------------------------------------------------- sessions


def _entry(kind: str, parent: str | None, content: Any) -> dict[str, Any]:
    return {"type": kind, "uuid": str(uuid.uuid4()), "parentUuid": parent,
            "sessionId": "s", "message": {"role": kind, "content": content}}


def _consecutive_users(size: int, _tmp: Path) -> Prepared:
    entries, parent = [], None
    for _ in range(max(size // 200, 1)):  # about 200 bytes of log per entry
        entry = _entry("user", parent, [{"type": "text", "text": "x"}])
        entries.append(entry)
        parent = entry["uuid"]
    return lambda: _nothing(rebuild_conversation(entries))


def _boundary_hits(size: int, tmp: Path) -> Prepared:
    """A log past the fast-path size whose last line names the boundary again and again."""
    path = tmp / f"log-{uuid.uuid4().hex}.jsonl"
    padding = json.dumps(_entry("user", None, "x" * 5_300_000)) + "\n"
    words = ",".join(['"compact_boundary"'] * max(size // 19, 1))
    last = json.dumps(_entry("user", None, "y"))[:-2] + ',"tags":[' + words + "]}}\n"
    path.write_text(padding + last, encoding="utf-8")
    return lambda: _nothing(read_entries(path))


def _replay_view(text: str) -> None:
    conversation_view({"messages": [{"role": "user", "content": [{"type": "text",
                                                                   "text": text}]}]})


def _notebook(size: int, tmp: Path) -> Prepared:
    """A saved notebook whose turn record holds many user messages in a row."""
    path = tmp / f"nb-{uuid.uuid4().hex}.ipynb"
    messages = [{"role": "user", "content": [{"type": "text", "text": "x"}]}
                for _ in range(max(size // 60, 1))]  # about 60 bytes of notebook each
    record = {"version": 2, "session_id": "s", "turn": 1, "messages": messages}
    cell = {"cell_type": "code", "execution_count": 1, "id": "c1", "metadata": {},
            "source": "%%agent go", "outputs": [{
                "output_type": "display_data", "metadata": {},
                "data": {"application/vnd.jupyter-memory.turn+json": record,
                         "text/plain": "turn"}}]}
    notebook = {"cells": [cell], "metadata": {}, "nbformat": 4, "nbformat_minor": 5}
    path.write_text(json.dumps(notebook), encoding="utf-8")
    return lambda: _nothing(conversation_from_notebook(path))


CASES: list[Case] = [
    # context/instructions.py: @ imports outside code, comments, sections, rules
    Case("load_instructions (CLAUDE.md)", "unclosed backticks",
         lambda n, tmp: _instructions(fill("`a ", n), tmp)),
    Case("load_instructions (CLAUDE.md)", "one @ import of a missing file, repeated",
         lambda n, tmp: _instructions(fill("@a.md ", n), tmp)),
    Case("load_instructions (CLAUDE.md)", "@ imports of distinct missing files",
         lambda n, tmp: _instructions("".join(f"@notes/section-{i:07d}.md "
                                              for i in range(n // 26 + 1))[:n], tmp)),
    Case("load_instructions (CLAUDE.md)", "a file over the 5,000,000-byte cap at the large size",
         lambda n, tmp: _instructions(fill("text ", n if n < 1_000_000 else MAX_FILE_BYTES + 1),
                                      tmp)),
    # each with an import at the end, or there is nothing to look for
    text_case("find_imports", "unclosed backticks", lambda n: fill("`a ", n - 6) + " @a.md",
              find_imports),
    text_case("find_imports", "backtick runs of growing length",
              lambda n: growing_runs(n - 6) + " @a.md", find_imports),
    text_case("find_imports", "~~~ fences never closed", lambda n: fill("~~~\n@a\n", n),
              find_imports),
    text_case("find_imports", "@ tokens", lambda n: fill("@a ", n), find_imports),
    text_case("find_imports", "CJK and combining characters",
              lambda n: fill("数据\u0301`表 @文件.md ", n), find_imports),
    # a closing --> first, or the scan knows at once that nothing can close
    text_case("strip_html_comments", "<!-- never closed", lambda n: "-->\n" + fill("<!-- x\n", n),
              strip_html_comments),
    text_case("strip_html_comments", "one 5 MB line", lambda n: "<!-- " + fill("x", n),
              strip_html_comments),
    text_case("compact_instructions", "heading of blanks", lambda n: "# a" + " " * n + "b",
              _compact),
    text_case("compact_instructions", "closing # runs", lambda n: "## a" + fill(" #", n) + "x",
              _compact),
    Case("rule frontmatter (paths:)", "long header", _rule_header),
    Case("match_glob (rule paths:)", "*a*a*...*b on a long name", _glob),
    # memdir: markdown, frontmatter, index, scan
    Case("fence_flags", "fences never closed", _fence_lines),
    text_case("code_spans", "backtick runs of growing length", growing_runs,
              lambda t: list(code_spans(t))),
    Case("frontmatter.parse", "value of blanks",
         lambda n, tmp: _header("---\nname: a" + " " * n + "b\n---\nbody\n")),
    Case("frontmatter.parse", "--- lines", lambda n, tmp: _header("---\n" + fill("--- x\n", n))),
    Case("frontmatter.parse", "long quoted scalar",
         lambda n, tmp: _header('---\nname: "' + fill('ab\\"', n) + '\n---\n')),
    Case("frontmatter.parse", "deep nesting", lambda n, tmp: _header("---\n" + fill("[", n)
                                                                   + "\n---\n")),
    text_case("frontmatter.update", "key of blanks",
              lambda n: "---\na" + " " * n + "\n---\nbody\n",
              lambda t: frontmatter.update(t, {"name": "x"})),
    text_case("parse_index (MEMORY.md)", "pointer hook of blanks",
              lambda n: "- [a](b.md) x" + " " * n + "y", parse_index),
    text_case("parse_index (MEMORY.md)", "heading of blanks", lambda n: "## a" + " " * n + "b",
              parse_index),
    text_case("parse_index (MEMORY.md)", "unclosed links", lambda n: fill("- [a](", n),
              parse_index),
    text_case("parse_index (MEMORY.md)", "[ runs", lambda n: fill("[", n), parse_index),
    text_case("load_for_model (MEMORY.md)", "one long line", lambda n: fill("- [a](b.md) ", n),
              load_for_model),
    Case("read_document (memory file)", "one long description line", _memory_file),
    # recall: the offline selector's text handling
    text_case("tokenize (offline selector)", "CJK and combining characters",
              lambda n: fill("数据框的收入\u0301 camelCaseWord ", n), _tokenize),
    text_case("tokenize (offline selector)", "hyphens and spaces, no cut between words",
              lambda n: fill("- ", n), _tokenize),
    text_case("has_negation", "contractions", lambda n: fill("don't isn't ", n),
              offline.has_negation),
    text_case("has_negation", "words, none a negation", lambda n: fill("plain words here ", n),
              offline.has_negation),
    text_case("dates.parse (offline selector)", "yesterday, repeated",
              lambda n: fill("yesterday ", n), _date_parse),
    text_case("find_relative_dates (memory body)", "yesterday, repeated",
              lambda n: fill("yesterday ", n), _relative_dates),
    # transcripts and notebooks
    text_case("question_text (transcript list)", "<command-name> never closed",
              lambda n: fill("<command-name>", n), question_text),
    text_case("question_text (transcript list)", "<system-reminder> never closed",
              lambda n: fill("<system-reminder>", n), question_text),
    Case("rebuild_conversation (JSONL log)", "user entries in a row", _consecutive_users,
),
    Case("read_entries (JSONL log)", "boundary words in the last line", _boundary_hits,
),
    Case("conversation_from_notebook", "user messages in a row", _notebook),
    text_case("conversation_view (replay matching)", "<system-reminder> never closed",
              lambda n: "</system-reminder>" + fill("<system-reminder>", n), _replay_view),
]


# --------------------------------------------------------------------------- timing


@dataclass
class Result:
    case: Case
    size: int  # the large size
    small: float
    large: float
    stopped: bool = False  # the large run was stopped past the goal
    refused: str | None = None

    @property
    def ratio(self) -> float:
        return self.large / self.small if self.small > 0 else float("inf")

    @property
    def cheap(self) -> bool:
        return not self.stopped and self.large < CHEAP_NS * 1e-9 * self.size

    def within(self, limit: float) -> bool:
        """Refused by a cap, too cheap to be quadratic, or at most ``limit`` times the small."""
        return self.refused is not None or self.cheap or (
            not self.stopped and self.ratio <= limit)

    @property
    def linear(self) -> bool:
        return self.within(GOAL)


def _cpu(call: Prepared, cold: bool = False) -> tuple[float, str | None]:
    gc.collect()
    gc.disable()
    try:
        if cold:  # after the collection, which visits every object
            _evict()
        start = time.process_time()
        refused = call()
        return time.process_time() - start, refused
    finally:
        gc.enable()


def _child(call: Prepared, limit: float, again: float, pipe: Any) -> None:
    """Time ``call``; while a run is cheap, run it again (three runs at most) as long as the
    runs together stay within twice ``limit``, what one run may take (the child is stopped
    at three times it). The first run in a fresh process pays for the pages it shares with
    the parent and for fresh memory; the best run counts."""
    seconds, refused = _cpu(call)
    spent, runs = seconds, 1
    while seconds < again and runs < 3 and spent + seconds < 2 * limit:
        again = _cpu(call)[0]
        seconds, spent, runs = min(seconds, again), spent + again, runs + 1
    pipe.send((seconds, refused))


_SCRATCH = bytearray(EVICT_BYTES)
_LINE = 64  # bytes in a cache line


def _evict() -> None:
    """Write a byte of every cache line of more memory than the CPU's caches hold, so the
    next run starts cold."""
    _SCRATCH[::_LINE] = bytes(EVICT_BYTES // _LINE)


def _small(call: Prepared, repeat: int) -> float:
    """CPU time of one call from cold caches: the best of at least ``repeat`` runs (more
    when a run is short, up to :data:`SMALL_RUNS`), each timed on its own after
    :func:`_evict`, as the large input is never in the caches either."""
    first = _cpu(call)[0]
    runs = max(repeat, min(SMALL_RUNS, int(BATCH_SECONDS / max(first, 1e-6))))
    best = float("inf")
    for _ in range(runs):
        best = min(best, _cpu(call, cold=True)[0])
    return best


def _child_cpu(pid: int) -> float | None:
    """CPU seconds a child has used so far (Linux), or None where that cannot be read."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except (OSError, IndexError):
        return None
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def _large(call: Prepared, budget: float, stop: float,
           again: float = AGAIN_SECONDS[0]) -> tuple[float, str | None, bool]:
    """CPU time of ``call`` in a child process (the best of its runs, :func:`_child`),
    stopped once its CPU time is past three times what the goal allows one run (``budget``,
    at least a second), or after ``stop`` seconds of wall time.

    The child is judged on its CPU time, not the clock, so a busy machine slows it without
    stopping it. Objects that exist before the fork are frozen out of the collector, so
    the child does not copy the parent's pages by visiting them.
    """
    context = multiprocessing.get_context("fork")
    receive, send = context.Pipe(duplex=False)
    limit = max(budget, 1.0)  # what one run may take
    child = context.Process(target=_child, args=(call, limit, again, send), daemon=True)
    gc.freeze()
    try:
        child.start()
    finally:
        gc.unfreeze()
    send.close()
    started = time.perf_counter()
    while not receive.poll(0.05):
        if not child.is_alive() and not receive.poll(0):
            raise RuntimeError(f"the large run failed in its process (exit {child.exitcode})")
        used = _child_cpu(child.pid or 0)
        waited = time.perf_counter() - started
        if (used is not None and used > 3 * limit) or waited > stop:
            child.kill()
            child.join()
            return (used if used is not None else waited), None, True
    seconds, refused = receive.recv()
    child.join()
    return seconds, refused, False


def _attempt(case: Case, sizes: tuple[int, int], quick: bool, repeat: int) -> Result:
    small_size, large_size = sizes
    with tempfile.TemporaryDirectory(prefix="bench-hostile-") as tmp:
        call = case.build(small_size, Path(tmp))
        small = _small(call, repeat)
        call = case.build(large_size, Path(tmp))
        # in CI (quick) a run may go on to the floor it is judged on, not stop at the goal
        large, refused, stopped = _large(call, (FLOOR if quick else GOAL) * small,
                                         STOP_SECONDS[not quick], AGAIN_SECONDS[not quick])
    return Result(case, large_size, small, large, stopped, refused)


def measure(case: Case, sizes: tuple[int, int], quick: bool, repeat: int = 3) -> Result:
    """The case's ratio; past the goal (in CI, ``quick``: past the floor it is judged on),
    measured again (:data:`ATTEMPTS` in all) with the best small and large times counting."""
    result = _attempt(case, sizes, quick, repeat)
    for _ in range(ATTEMPTS - 1):
        if result.within(FLOOR if quick else GOAL):
            break
        again = _attempt(case, sizes, quick, repeat)
        finished = [r for r in (result, again) if not r.stopped]
        large = (min(finished, key=lambda r: r.large) if finished
                 else max(result, again, key=lambda r: r.large))
        result = Result(case, result.size, min(result.small, again.small), large.large,
                        large.stopped, large.refused)
    return result


def run(quick: bool = False, only: str | None = None) -> list[Result]:
    sizes = QUICK_SIZES if quick else SIZES
    chosen = [c for c in CASES if not only or only.lower() in f"{c.scanner} {c.pattern}".lower()]
    return [measure(case, sizes, quick) for case in chosen]


def size_text(count: int) -> str:
    return f"{count / 1e6:g} MB" if count >= 1_000_000 else f"{count / 1e3:g} KB"


def _ms(seconds: float) -> str:
    return f"{seconds * 1000:,.1f} ms" if seconds < 10 else f"{seconds:,.1f} s"


def table(results: list[Result], sizes: tuple[int, int]) -> str:
    small, large = (size_text(s) for s in sizes)
    lines = [f"| scanner | hostile pattern | {small} | {large} | ratio | verdict |",
             "|---|---|---:|---:|---:|---|"]
    for r in results:
        if r.stopped:
            large_text, ratio_text = f"> {_ms(r.large)} (stopped)", f"> {r.ratio:,.0f}x"
        else:
            large_text, ratio_text = _ms(r.large), f"{r.ratio:,.1f}x"
        if r.refused is not None:
            verdict = f"refused: {r.refused}"
        elif r.linear:
            verdict = "linear" if not r.cheap or r.ratio <= GOAL else \
                f"linear (under {CHEAP_NS:g} ns a character)"
        else:
            verdict = "**super-linear**"
        lines.append(f"| {r.case.scanner} | {r.case.pattern} | {_ms(r.small)} | {large_text} "
                     f"| {ratio_text} | {verdict} |")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="10 KB and 1 MB (CI sizes)")
    parser.add_argument("--check", action="store_true", help="exit 1 if a scanner is not linear")
    parser.add_argument("--only", help="run the cases whose scanner or pattern contains this")
    args = parser.parse_args(argv)
    results = run(args.quick, args.only)
    print(table(results, QUICK_SIZES if args.quick else SIZES))
    failed = [r for r in results if not r.linear]
    if failed:
        print("NOT LINEAR: " + "; ".join(f"{r.case.scanner}, {r.case.pattern}" for r in failed))
        return 1 if args.check else 0
    return 0


if __name__ == "__main__":
    sys.exit(main())
