"""Regenerate the examples' recordings, executed notebooks and HTML copies.

    .venv/bin/python examples/make_recordings.py              # every example
    .venv/bin/python examples/make_recordings.py 01 04        # the ones whose name starts so

For each ``NN-*.ipynb`` this:

1. copies the notebook into a work folder outside the repository
   (``/tmp/jupyter-memory-XXXXXXXX/NN-…``) and executes it headless against the local
   scripted Messages API server (``jupyter_memory.localapi``), whose answers come
   from ``scripts/NN-*.py``. With ``JUPYTER_MEMORY_EXAMPLES=record`` the notebook's mode
   cell runs ``%agent record``, so every model exchange lands in ``NN-*.recording.json``;
2. copies the recordings back beside the notebook;
3. executes the notebook again in a fresh copy of the work folder, this time with no model
   variable at all, so it replays the recording — exactly what a reader, the demo and
   ``tests/examples/test_examples.py`` do — and saves that run as the committed notebook (outputs
   included, widget views reduced to their static HTML) and as ``html/NN-*.html``.

No key and no network are used: the model is the script. A script module defines
``respond(req: Request) -> Turn | None`` (``Request`` is below: what kind of call it is,
the person's last prompt, the tool results it answers), and may define ``seed(folder)``
(files to lay out in the work folder before recording) and ``RECORD_FIRST``: notebooks in
the example's companion folder (``NN-name/``) that are recorded instead of the example
itself, which then only replays — ``13-sharing`` packs such a recorded project.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import re
import shutil
import sys
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from types import ModuleType
from typing import Any

import nbformat

from jupyter_memory.demo import (
    RECORD_ENV,
    execute_notebook,
    folder_files,
    kernel_env,
    prepare_work,
    scratch_folder,
    static_outputs,
    write_html,
    written_outside_run,
)
from jupyter_memory.localapi import FakeAnthropic, Turn

EXAMPLES = Path(__file__).resolve().parent
SCRIPTS = EXAMPLES / "scripts"
HTML = EXAMPLES / "html"

#: The memory folder a system prompt names: the main agent's, or a defined agent's own.
_MEMDIR = re.compile(r"(?:persistent, file-based memory in|persistent memory folder of your "
                     r"own, as the agent \"[^\"]+\":) `([^`]+)`")
_EXTRACTION = "You are now the memory extraction agent"
_REMEMBER = "You file memories for a data scientist"
_NOTES = "You keep the running notes of a working session"
_SUMMARY = "Write a summary of this conversation so far."
_CELLS = "The person ran these notebook cells since your last turn:"


def _blocks(message: dict[str, Any]) -> list[dict[str, Any]]:
    content = message.get("content")
    if isinstance(content, str):
        return [{"type": "text", "text": content}]
    return [b for b in content or [] if isinstance(b, dict)]


def _system_text(body: dict[str, Any]) -> str:
    system = body.get("system") or ""
    if isinstance(system, str):
        return system
    return "\n".join(str(b.get("text", "")) for b in system if isinstance(b, dict))


def _result_text(block: dict[str, Any]) -> str:
    content = block.get("content")
    if isinstance(content, str):
        return content
    return "".join(str(b.get("text", "")) for b in content or [] if isinstance(b, dict))


@dataclass
class Request:
    """One request to the scripted model, read the way a script needs it."""

    body: dict[str, Any]
    kind: str = field(init=False)
    """``main`` (the agent), ``selector`` (recall prefetch), ``extraction``, ``remember``
    (``%%remember`` filed by the model), ``notes`` (session memory) or ``summary``
    (compaction)."""

    def __post_init__(self) -> None:
        messages = self.body.get("messages") or []
        system = _system_text(self.body)
        everything = json.dumps(messages, ensure_ascii=False)
        if any(t.get("name") == "select_memories" for t in self.body.get("tools") or []):
            self.kind = "selector"
        elif system.startswith(_REMEMBER):
            self.kind = "remember"
        elif system.startswith(_NOTES):
            self.kind = "notes"
        elif _EXTRACTION in everything:
            self.kind = "extraction"
        elif self.last_user_text.startswith(_SUMMARY):
            self.kind = "summary"
        else:
            self.kind = "main"

    @property
    def messages(self) -> list[dict[str, Any]]:
        return list(self.body.get("messages") or [])

    @property
    def last_user_text(self) -> str:
        """The text blocks of the last message, joined (empty after a tool round)."""
        last = self.messages[-1] if self.messages else {}
        return "\n".join(str(b.get("text", "")) for b in _blocks(last) if b.get("type") == "text")

    @property
    def prompt(self) -> str:
        """The person's latest words: the last text that is not a reminder or a cell list."""
        for message in reversed(self.messages):
            if message.get("role") != "user":
                continue
            texts = [str(b.get("text", "")) for b in _blocks(message) if b.get("type") == "text"]
            words = [t for t in texts if not t.lstrip().startswith(("<system-reminder>", _CELLS))]
            if words:
                return words[-1]
        return ""

    @property
    def tool_results(self) -> list[tuple[str, str]]:
        """``(tool name, result text)`` for each tool result in the last message."""
        names: dict[str, str] = {}
        for message in self.messages:
            for block in _blocks(message):
                if block.get("type") == "tool_use":
                    names[str(block.get("id"))] = str(block.get("name"))
        last = self.messages[-1] if self.messages else {}
        return [(names.get(str(b.get("tool_use_id")), "?"), _result_text(b))
                for b in _blocks(last) if b.get("type") == "tool_result"]

    @property
    def after_tools(self) -> bool:
        return bool(self.tool_results)

    @property
    def rounds(self) -> int:
        """How many tool rounds this turn has had (assistant messages since the prompt)."""
        count = 0
        for message in reversed(self.messages):
            if message.get("role") == "assistant":
                count += 1
            elif not any(b.get("type") == "tool_result" for b in _blocks(message)):
                break
        return count

    @property
    def memdir(self) -> Path:
        """The memory folder named in the system prompt (or the sandbox's first message)."""
        found = _MEMDIR.search(_system_text(self.body))
        if found is None:
            raise LookupError("this request names no memory folder")
        return Path(found.group(1))

    def mentions(self, text: str) -> bool:
        return text.lower() in self.prompt.lower()


def load_script(notebook: Path) -> ModuleType:
    """The script module of ``notebook`` (``scripts/<stem>.py``)."""
    path = SCRIPTS / f"{notebook.stem}.py"
    if not path.is_file():
        raise SystemExit(f"{notebook.name} has no script of model answers at {path}.")
    spec = importlib.util.spec_from_file_location(f"example_script_{notebook.stem.split('-', 1)[0]}", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def responder(script: ModuleType, log: list[str]) -> Callable[[dict[str, Any]], Turn]:
    """The fake server's responder: the script's answer, or a clear refusal."""

    def respond(body: dict[str, Any]) -> Turn:
        req = Request(body)
        turn = script.respond(req)
        if turn is None and req.kind == "extraction" and not req.after_tools:
            turn = Turn(text="Nothing to save.")
        if turn is None:
            problem = (f"{script.__file__}: no answer for a {req.kind} request; the person's "
                       f"last words were {req.prompt[:200]!r}")
            log.append(problem)
            return Turn(text="", fault={"kind": "api_error", "message": problem,
                                        "should_retry": False})
        log.append(f"{req.kind}: {req.prompt[:60]!r} -> "
                   f"{(turn.text if isinstance(turn.text, str) else ''.join(turn.text))[:60]!r}"
                   f"{' + ' + ', '.join(c.name for c in turn.tool_calls) if turn.tool_calls else ''}")
        return turn

    return respond


def record(notebook: Path, script: ModuleType, work: Path) -> Any:
    """Execute a copy of ``notebook`` in ``work`` against the scripted server, copy the
    recordings it wrote back beside ``notebook``, and return the executed notebook."""
    copy = prepare_work(notebook, work)
    for old in work.glob(f"{notebook.stem}*.recording.json"):
        old.unlink()
    if hasattr(script, "seed"):
        script.seed(work)
    before = folder_files(work)
    log: list[str] = []
    with FakeAnthropic(responder=responder(script, log)) as server:
        env = kernel_env(work / "home", extra={
            "ANTHROPIC_BASE_URL": server.base_url, "ANTHROPIC_API_KEY": "test-key",
            RECORD_ENV: "record"})
        try:
            nb = execute_notebook(copy, env=env)
        finally:
            print(f"  {notebook.name}: {len(server.requests)} model calls")
            for line in log:
                print(f"    {line}")
        if server.failures:
            raise SystemExit(f"{notebook.name}: the scripted server refused requests:\n"
                             + "\n".join(server.failures))
    if notebook.parent == EXAMPLES:  # a project one packs keeps its memory beside it
        recordings = tuple(p.name for p in work.glob(f"{notebook.stem}*.recording.json"))
        _check_run_folder(work, before, notebook, also=recordings)
    written = sorted(work.glob(f"{notebook.stem}*.recording.json"))
    if not written:
        raise SystemExit(f"{notebook.name} wrote no recording: does its mode cell run "
                         f"%agent record when {RECORD_ENV}=record?")
    for rec in written:
        shutil.copy2(rec, notebook.parent / rec.name)
    return nb


def replay(notebook: Path, work: Path, html: Path | None) -> None:
    """Execute a copy of ``notebook`` with no model and save it over the committed one."""
    copy = prepare_work(notebook, work)
    before = folder_files(work)
    nb = execute_notebook(copy, env=kernel_env(work / "home"))
    _check_run_folder(work, before, notebook)
    # tests/examples/test_examples.py replaces this folder by its own when comparing outputs.
    nb.metadata["jupyter_memory"] = {"executed_in": str(work)}
    nbformat.write(static_outputs(nb), str(notebook))
    if html is not None:
        write_html(nb, html / f"{notebook.stem}.html", links_from=notebook.parent)


def _check_run_folder(work: Path, before: set[str], notebook: Path,
                      also: tuple[str, ...] = ()) -> None:
    """Stop when the run wrote outside ``.run/<notebook>/`` (``also``: its recordings)."""
    strays = written_outside_run(work, before, notebook.stem, also=also)
    if strays:
        raise SystemExit(f"{notebook.name} wrote outside .run/{notebook.stem}/, which a run in "
                         "place would leave in examples/: " + ", ".join(strays[:20]))


def make(notebook: Path, work_root: Path) -> None:
    """Record and replay one example, after recording the notebooks it packs."""
    print(f"{notebook.name}")
    script = load_script(notebook)
    inner_notebooks = getattr(script, "RECORD_FIRST", ())
    for inner in inner_notebooks:
        # A project the example shares: its committed copy is the recorded run itself,
        # which is what a bundle carries.
        inner_nb = notebook.with_suffix("") / inner
        nb = record(inner_nb, script, work_root / f"{notebook.stem}-{inner_nb.stem}")
        nbformat.write(static_outputs(nb), str(inner_nb))
    if not inner_notebooks:
        record(notebook, script, work_root / notebook.stem)
    replay(notebook, work_root / notebook.stem, HTML)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("only", nargs="*", help="examples whose file name starts with these")
    parser.add_argument("--keep", action="store_true", help="keep the work folder afterwards")
    args = parser.parse_args(argv)
    notebooks = sorted(EXAMPLES.glob("[0-9][0-9]*-*.ipynb"))
    if args.only:
        notebooks = [nb for nb in notebooks if nb.name.startswith(tuple(args.only))]
    if not notebooks:
        print("No example matches.", file=sys.stderr)
        return 2
    work = scratch_folder()
    try:
        for notebook in notebooks:
            make(notebook, work)
    finally:
        if args.keep:
            print(f"The work folder is {work}")
        else:
            shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
