"""``jupyter-memory request`` on a saved notebook: every call of a turn, from the file.

A real kernel run by nbclient makes a turn with a tool round and a selector call, the
extraction agent's call after it, ``%%remember``'s filing calls and a second turn (whose
record carries what ran after the first). Recording makes the kernel's background work run
at the loop's fixed points, so the extraction call is made before the next cell. The saved
notebook is then read back with the command line and the magic: the bodies equal what the
local server received, and both print the same text.
"""

from __future__ import annotations

import io
import json
import os
from pathlib import Path
from typing import Any

import nbformat
import pytest
from extraction_router import is_extraction
from nbclient import NotebookClient
from shell_helpers import run

from jupyter_memory.cli.app import main
from jupyter_memory.context.request_parts import content_digest
from jupyter_memory.localapi import ToolCall, Turn

pytestmark = pytest.mark.kernel

SETUP = ("%load_ext jupyter_memory\n%config Agent.session_memory = False\n"
         "%memory mode prefetch\n%memory extraction on\n%agent record run.recording.json")


def cli(*argv: str) -> tuple[int, str]:
    out, err = io.StringIO(), io.StringIO()
    code = main(list(argv), stdout=out, stderr=err)
    return code, out.getvalue() + err.getvalue()


def saved_notebook(folder: Path, fake_api: Any) -> tuple[Path, list[dict[str, Any]]]:
    memdir = folder / "memory"
    memdir.mkdir(parents=True)
    (memdir / "project_cents.md").write_text(
        "---\nname: cents\ndescription: revenue is stored in integer cents\ntype: project\n"
        "---\nDivide by 100.\n")
    (memdir / "MEMORY.md").write_text("- [cents](project_cents.md) — revenue in cents\n")
    (folder / "notes.txt").write_text("the total is 42\n")
    filed = ("---\nname: dark\ndescription: charts in dark mode\ntype: feedback\n---\n"
             "Charts in dark mode.\n")
    main_queue = [Turn(tool_calls=[ToolCall("Read", {"file_path": str(folder / "notes.txt")})]),
                  Turn(text="It is 42."),
                  Turn(tool_calls=[ToolCall("Write", {"file_path": str(memdir / "feedback_dark.md"),
                                                      "content": filed})]),
                  Turn(text="Filed."),
                  Turn(text="Still 42.")]

    def responder(body: dict[str, Any]) -> Turn | None:
        if body.get("tool_choice"):
            return Turn(tool_calls=[ToolCall("select_memories",
                                             {"selected_memories": ["project_cents.md"]})])
        if is_extraction(body):
            return Turn(text="Nothing worth keeping.")
        return main_queue.pop(0) if main_queue else None

    fake_api.responder = responder
    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_code_cell(s) for s in (
        SETUP,
        "%%agent\nWhat is the revenue total in notes.txt?",
        "%%remember\nI want charts in dark mode.",
        "%%agent\nAnd now?",
    )]
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3",
                                 "language": "python"}
    env = {k: v for k, v in os.environ.items() if k != "JPY_SESSION_NAME"}
    env["JUPYTER_MEMORY_DIR"] = str(memdir)
    NotebookClient(nb, timeout=120, kernel_name="python3",
                   resources={"metadata": {"path": str(folder)}}).execute(env=env)
    path = folder / "saved.ipynb"
    nbformat.write(nb, str(path))
    sent = [{k: v for k, v in r.body.items() if k != "stream"}
            for r in fake_api.requests if r.path == "/v1/messages"]
    return path, sent


def test_a_saved_notebook_shows_every_call_and_the_magic_prints_the_same(
        tmp_path: Path, fake_api: Any, ip: Any) -> None:
    path, sent = saved_notebook(tmp_path / "work", fake_api)
    assert fake_api.failures == []

    code, data = cli("request", str(path), "--turn", "1", "--json")
    assert code == 0, data
    calls = json.loads(data)["calls"]
    kinds = [(c["kind"], c["after_turn"]) for c in calls]
    assert kinds == [("selector", False), ("main", False), ("main", False),
                     ("extraction", True), ("remember", True), ("remember", True)]
    assert [c["body"] for c in calls] == [b for b in sent if b in [c["body"] for c in calls]]
    for call in calls:
        assert call["body"] in sent and call["digest"] == content_digest(call["body"])
    # turn 2: its selector, its one round, and the extraction after it, which no later
    # record carries (the view says so)
    assert len(sent) == len(calls) + 3 and is_extraction(sent[-1])

    code, text = cli("request", str(path), "--turn", "1")
    assert code == 0 and "Turn 1 of" in text and "6 model calls" in text
    for label in ("recall selector", "main agent, round 2", "extraction agent, after the turn",
                  "%%remember filing, after the turn"):
        assert label in text
    assert run(ip, f"%request {path} --turn 1").stdout.rstrip("\n") == text.rstrip("\n")

    code, last = cli("request", str(path), "--kind", "main", "--diff")
    assert code == 0 and "Turn 2" in last and "unchanged since turn 1" in last
    assert "Calls made after the last turn" in last
    code, body = cli("request", str(path), "--turn", "2", "--kind", "main", "--json")
    assert json.loads(body) == sent[-2]
