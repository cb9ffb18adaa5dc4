"""A recorded notebook, executed by nbclient in a real kernel: replayed twice, the outputs
are identical (and equal to the recorded run's); a changed prompt fails the cell clearly.

The recording is made by executing the same notebook once against the local Messages API
server of this test process (the kernel inherits ``ANTHROPIC_BASE_URL``). Replays run
with no ``ANTHROPIC_*`` variable at all.
"""

from __future__ import annotations

import copy
import os
import shutil
import sys
from pathlib import Path

import nbformat
import pytest
from nbclient import NotebookClient
from nbclient.exceptions import CellExecutionError

from jupyter_memory.localapi import ToolCall, Turn

pytestmark = pytest.mark.kernel

CELLS = [
    "import sys\nsys.executable",
    "%load_ext jupyter_memory",
    "%agent MODE demo.recording.json",
    '%%remember -t project -n revenue-in-cents -d "sales.revenue is stored in cents"\n'
    "The revenue column holds integer cents.\n\n**Why:** the billing export writes cents.",
    "%%agent\nHello! What do you remember about this project?",
    "rows = [3, 5, 8]\nsum(rows)",
    "%%agent\nHow is revenue stored? Check the memory file itself.",
]
AGENT_CELLS = (3, 4, 6)  # the remember cell and both agent cells: same in every run


def notebook(mode: str, *, last_prompt: str | None = None) -> nbformat.NotebookNode:
    nb = nbformat.v4.new_notebook()
    for source in CELLS:
        nb.cells.append(nbformat.v4.new_code_cell(source.replace("MODE", mode)))
    if last_prompt is not None:
        nb.cells[-1].source = f"%%agent\n{last_prompt}"
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    return nb


def execute(nb: nbformat.NotebookNode, folder: Path, env: dict[str, str]) -> nbformat.NotebookNode:
    """Run ``nb`` in a fresh folder at ``folder`` (same absolute path every run)."""
    if folder.exists():
        shutil.rmtree(folder)
    folder.mkdir(parents=True)
    recording = folder.parent / "demo.recording.json"
    if recording.exists():
        shutil.copy(recording, folder / "demo.recording.json")
    env = dict(env, JUPYTER_MEMORY_DIR=str(folder / "memory"))
    client = NotebookClient(nb, timeout=90, kernel_name="python3",
                            resources={"metadata": {"path": str(folder)}})
    try:
        client.execute(env=env)
    finally:
        nbformat.write(nb, str(folder / "demo.ipynb"))
    return nb


def outputs(nb: nbformat.NotebookNode) -> list[list[dict]]:
    """Each cell's outputs without execution counts (which nbformat keeps per run)."""
    out = []
    for cell in nb.cells:
        cell_outputs = []
        for output in cell.get("outputs", []):
            item = copy.deepcopy(dict(output))
            item.pop("execution_count", None)
            cell_outputs.append(item)
        out.append(cell_outputs)
    return out


def text_of(cell_outputs: list[dict]) -> str:
    return "".join(o.get("text", "") + str(o.get("data", {}).get("text/plain", "")) for o in cell_outputs)


@pytest.fixture
def kernel_env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("ANTHROPIC_")}
    env.pop("JPY_SESSION_NAME", None)
    return env


def test_replayed_notebook_gives_identical_outputs_and_refuses_a_changed_prompt(
    tmp_path: Path, fake_api, kernel_env: dict[str, str]
) -> None:
    work = tmp_path / "work"

    def respond(body: dict) -> Turn:
        last = body["messages"][-1]["content"]
        if any(b.get("type") == "tool_result" for b in last):
            return Turn(text="It is stored in **integer cents**: divide by 100 for dollars.")
        text = " ".join(b.get("text", "") for b in last if b.get("type") == "text")
        if "Check the memory file" in text:
            topic = next(p for p in sorted((work / "memory").glob("*.md")) if p.name != "MEMORY.md")
            return Turn(text="Let me read it.", tool_calls=[ToolCall("Read", {"file_path": str(topic)})])
        return Turn(text="I remember that sales.revenue is stored in cents.")

    fake_api.responder = respond
    live_env = dict(kernel_env, ANTHROPIC_BASE_URL=fake_api.base_url, ANTHROPIC_API_KEY="test-key")
    recorded = execute(notebook("record"), work, live_env)
    assert len(fake_api.requests) == 3
    shutil.copy(work / "demo.recording.json", tmp_path / "demo.recording.json")
    rec_outputs = outputs(recorded)
    assert rec_outputs[0][0]["data"]["text/plain"] == repr(sys.executable)  # the venv's python
    assert "Recording every model exchange" in text_of(rec_outputs[2])
    assert "integer cents" in str(rec_outputs[6])

    first = outputs(execute(notebook("replay"), work, kernel_env))
    second = outputs(execute(notebook("replay"), work, kernel_env))
    assert len(fake_api.requests) == 3  # replays never reached the server
    assert "Replaying 3 recorded model exchanges" in text_of(first[2])
    assert first == second
    for index in AGENT_CELLS:
        assert first[index] == rec_outputs[index], f"cell {index} differs from the recorded run"

    changed = notebook("replay", last_prompt="How is profit stored? Check the memory file itself.")
    with pytest.raises(CellExecutionError) as failure:
        execute(changed, work, kernel_env)
    message = str(failure.value)
    assert "ReplayMismatch: Replay: this request is not in the recording" in message
    assert "First difference at messages[" in message
    assert '"How is revenue stored?' in message and '"How is profit stored?' in message
    assert "Traceback" not in message  # the message, not a dump
