"""``%agent`` in a real kernel run by nbclient: options, help and the prompt as typed.

The kernel talks to this process's local Messages API server (``fake_api``), which keeps
every request it received: a cell refused for its options, or one that asked for help,
must leave it with none, and a prompt must reach it exactly as the person typed it.
"""

from __future__ import annotations

import os
from pathlib import Path

import nbformat
import pytest
from nbclient import NotebookClient
from nbclient.exceptions import CellExecutionError

from jupyter_memory.localapi import Turn

pytestmark = pytest.mark.kernel

SETUP = "%load_ext jupyter_memory\n%config Agent.extraction = False\n" \
        "%config Agent.session_memory = False"


def run_notebook(folder: Path, *sources: str) -> nbformat.NotebookNode:
    """Execute cells in a fresh kernel in ``folder``; raises at the first failed cell."""
    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_code_cell(s) for s in (SETUP, *sources)]
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3",
                                 "language": "python"}
    folder.mkdir(parents=True, exist_ok=True)
    env = {k: v for k, v in os.environ.items() if k != "JPY_SESSION_NAME"}
    env["JUPYTER_MEMORY_DIR"] = str(folder / "memory")
    NotebookClient(nb, timeout=120, kernel_name="python3",
                   resources={"metadata": {"path": str(folder)}}).execute(env=env)
    return nb


def stdout_of(cell: nbformat.NotebookNode) -> str:
    return "".join(o.get("text", "") for o in cell.outputs if o.get("name") == "stdout")


def test_an_unknown_option_fails_the_cell_and_calls_no_model(tmp_path: Path, fake_api) -> None:
    fake_api.script([Turn(text="This must not be sent.")])
    with pytest.raises(CellExecutionError) as failed:
        run_notebook(tmp_path / "work", "%%agent --agnet reviewer\nReview the join above.",
                     "after = 'ran'")
    message = str(failed.value)
    assert "UsageError: %agent: unrecognized arguments: --agnet (did you mean --agent?)" \
        in message
    assert "Traceback" not in message
    assert fake_api.requests == []  # no model call, not even to count tokens


def test_help_shows_the_usage_and_calls_no_model(tmp_path: Path, fake_api) -> None:
    done = run_notebook(tmp_path / "work", "%agent -h", "%agent replay -h", "after = 'ran'")
    shown = stdout_of(done.cells[1])
    assert shown.startswith("usage: %agent [-h] [--agent NAME] [PROMPT ...]")
    assert "--agent NAME" in shown and "%agent replay [--strict] [FILE|off]" in shown
    assert stdout_of(done.cells[2]).startswith("usage: %agent replay [-h] [--strict]")
    assert done.cells[3].execution_count is not None  # the notebook went on
    assert fake_api.requests == []


def test_the_prompt_reaches_the_model_as_typed(tmp_path: Path, fake_api) -> None:
    typed = """what's the "mean" of --x?"""
    cell = 'Is C:\\new\\table "quoted" -- or --not?\n  Keep this indent.'
    fake_api.script([Turn(text="The mean."), Turn(text="Kept.")])
    run_notebook(tmp_path / "work", f"%agent {typed}", f"%%agent\n{cell}")
    first, second = fake_api.requests
    for request, prompt in ((first, typed), (second, cell)):
        last = request.body["messages"][-1]
        assert last["role"] == "user"
        texts = [b["text"] for b in last["content"] if b.get("type") == "text"]
        assert texts[-1] == prompt
