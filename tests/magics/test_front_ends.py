"""The magics as people meet them: in a kernel run by nbclient, and in terminal IPython.

- A failed turn, and a magic given bad arguments, fail the cell with one line and no
  traceback, so execution stops there (issue 15, deliverable 3).
- Terminal IPython prints the answer once, a tool call and an error as one line each, and
  no HTML or dict reprs (deliverable 4); a notebook's agent cell leaves no empty output.
- The next turn's request holds the cells run since the last turn as typed, with their
  outputs: text capped, HTML and images named (deliverable 5).

Everything talks to this process's local Messages API server (``fake_api``) through the
real SDK; the kernels and the terminal inherit ``ANTHROPIC_BASE_URL`` from it.
"""

from __future__ import annotations

import base64
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import nbformat
import pytest
from nbclient import NotebookClient
from nbclient.exceptions import CellExecutionError

from jupyter_memory.localapi import Fault, ToolCall, Turn

pytestmark = pytest.mark.kernel

TURN_MIME = "application/vnd.jupyter-memory.turn+json"
#: A 1×1 PNG, for a cell that shows an image.
PNG = base64.b64decode(
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg=="
)
QUIET = "%load_ext jupyter_memory\n%config Agent.extraction = False\n%config Agent.session_memory = False"


def notebook(*sources: str) -> nbformat.NotebookNode:
    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_code_cell(s) for s in sources]
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    return nb


def execute(nb: nbformat.NotebookNode, folder: Path) -> nbformat.NotebookNode:
    folder.mkdir(parents=True, exist_ok=True)
    env = {k: v for k, v in os.environ.items() if k != "JPY_SESSION_NAME"}
    env["JUPYTER_MEMORY_DIR"] = str(folder / "memory")
    client = NotebookClient(nb, timeout=120, kernel_name="python3",
                            resources={"metadata": {"path": str(folder)}})
    client.execute(env=env)
    return nb


def user_text(body: dict[str, Any]) -> str:
    first = body["messages"][0]["content"]
    return "\n".join(b.get("text", "") for b in first if isinstance(b, dict))


# --------------------------------------------------------------------------- nbclient


def test_the_agent_sees_cells_as_typed_with_their_outputs(tmp_path: Path, fake_api) -> None:
    fake_api.script([Turn(text="You printed the rows and saved a memory.")])
    nb = notebook(
        QUIET,
        'print("rows: 3")\nx = 41 + 1\nx',
        '%%remember --type project --name cents -d "revenue is stored in cents"\n'
        "Revenue holds integer cents.",
        "from IPython.display import HTML, Image, display\n"
        'display(HTML("<table><tr><td>secret-html</td></tr></table>"))\n'
        f"display(Image(data={PNG!r}))",
        '"y" * 5000',
        "%%agent\nWhat did I just do?",
        "1 + 1",
    )
    done = execute(nb, tmp_path / "work")
    (request,) = fake_api.requests
    text = user_text(request.body)
    assert "The person ran these notebook cells since your last turn:" in text
    assert 'print("rows: 3")' in text and "rows: 3" in text and "\n42" in text
    assert "%%remember --type project --name cents" in text  # as typed
    assert "run_cell_magic" not in text and "get_ipython()" not in text
    assert "Saved project_cents.md (new)" in text
    assert "[HTML output]" in text and text.count("secret-html") == 1  # in the source only
    assert "[image image/png" in text and "iVBOR" not in text
    assert "more characters of output]" in text and "y" * 2500 not in text
    assert "What did I just do?" not in text.split("since your last turn:")[1].split("</system")[0]
    agent_outputs = done.cells[5].outputs
    assert len(agent_outputs) == 1 and TURN_MIME in agent_outputs[0]["data"]  # no empty one


def test_a_failed_turn_stops_the_notebook_with_one_line(tmp_path: Path, fake_api) -> None:
    fake_api.fail_next(Fault("api_error", should_retry=False), times=10)
    nb = notebook(QUIET, "before = 'ran'", "%%agent\nHello?", "after = 'ran'")
    with pytest.raises(CellExecutionError) as failed:
        execute(nb, tmp_path / "work")
    message = str(failed.value)
    assert "Traceback" not in message
    assert "ModelCallFailed: The model endpoint answered with an error (500)" in message
    assert nb.cells[3].outputs == [] and nb.cells[3].execution_count is None  # never ran
    (error,) = [o for o in nb.cells[2].outputs if o["output_type"] == "error"]
    assert (error["ename"], error["traceback"]) == ("ModelCallFailed", [  # one line
        f"ModelCallFailed: {error['evalue']}"])
    assert not [o for o in nb.cells[2].outputs if o.get("name") == "stderr"]


@pytest.mark.parametrize("source, says", [
    ("%memory frobnicate", "unknown subcommand 'frobnicate'"),
    ("%%remember --type opinion\nx", "%%remember: argument --type/-t: invalid choice"),
    ("%context --bogus", "%context: unrecognized arguments: --bogus"),
    ("%compact --bogus", "%compact: unrecognized arguments: --bogus"),
    ("%agent", "Write a message for the agent"),
    ("%agent replay missing.recording.json", "No recording at missing.recording.json"),
])
def test_a_magic_given_bad_arguments_stops_the_notebook(
        tmp_path: Path, fake_api, source: str, says: str) -> None:
    nb = notebook(QUIET, source, "after = 'ran'")
    with pytest.raises(CellExecutionError) as failed:
        execute(nb, tmp_path / "work")
    message = str(failed.value)
    assert "UsageError" in message and says in message and "Traceback" not in message
    assert nb.cells[2].execution_count is None


def test_papermill_stops_at_a_failed_turn_and_replays_a_recording(tmp_path: Path, fake_api) -> None:
    """papermill runs the same kernels: a recorded notebook replays with nothing set, and
    a failed turn stops the run with our message."""
    papermill = pytest.importorskip("papermill")
    work = tmp_path / "work"
    work.mkdir()
    fake_api.script([Turn(text="Recorded hello.")])
    source = notebook(QUIET, "%agent record pm.recording.json", "%%agent\nSay hello",
                      "%agent record off")
    nbformat.write(source, str(work / "pm.ipynb"))
    env = {"JUPYTER_MEMORY_DIR": str(work / "memory")}
    with pytest.MonkeyPatch.context() as mp:
        for key, value in env.items():
            mp.setenv(key, value)
        papermill.execute_notebook(str(work / "pm.ipynb"), str(work / "recorded.ipynb"),
                                   kernel_name="python3", cwd=str(work), progress_bar=False)
        replay = notebook(QUIET, "%agent replay pm.recording.json", "%%agent\nSay hello")
        nbformat.write(replay, str(work / "pm.ipynb"))
        mp.delenv("ANTHROPIC_BASE_URL")
        mp.delenv("ANTHROPIC_API_KEY")
        done = papermill.execute_notebook(str(work / "pm.ipynb"), str(work / "replayed.ipynb"),
                                          kernel_name="python3", cwd=str(work),
                                          progress_bar=False)
        assert "Recorded hello." in str(done.cells[2].outputs)
        assert len(fake_api.requests) == 1  # the replay never reached the server
        failing = notebook(QUIET, "%agent replay pm.recording.json",
                           "%%agent\nSay hello differently", "after = 'ran'")
        nbformat.write(failing, str(work / "pm.ipynb"))
        with pytest.raises(papermill.PapermillExecutionError) as failed:
            papermill.execute_notebook(str(work / "pm.ipynb"), str(work / "failed.ipynb"),
                                       kernel_name="python3", cwd=str(work), progress_bar=False)
    reason = "ReplayMismatch: Replay: this request is not in the recording pm.recording.json"
    assert 'Exception encountered at "In [3]"' in str(failed.value)  # stopped at the turn
    assert reason in str(failed.value)  # and says why
    stopped = nbformat.read(str(work / "failed.ipynb"), as_version=4)
    code = [c for c in stopped.cells if c.cell_type == "code"]  # papermill adds a banner
    shown = "".join("\n".join(o.get("traceback", [])) for o in code[2].outputs)
    assert reason in shown and "Traceback" not in shown
    assert code[3].get("execution_count") is None  # the cell after it never ran


# --------------------------------------------------------------------------- terminal IPython


def terminal(cells: list[str], folder: Path) -> subprocess.CompletedProcess[str]:
    """Terminal IPython fed ``cells`` on stdin (``--simple-prompt``: no prompt_toolkit)."""
    folder.mkdir(parents=True, exist_ok=True)
    env = {k: v for k, v in os.environ.items() if k != "JPY_SESSION_NAME"}
    env.update(JUPYTER_MEMORY_DIR=str(folder / "memory"), IPYTHONDIR=str(folder / "ipython"),
               PYTHONUNBUFFERED="1")
    return subprocess.run(
        [sys.executable, "-m", "IPython", "--simple-prompt", "--no-banner", "--colors=NoColor",
         "--HistoryManager.hist_file=:memory:"],
        input="\n".join(cells) + "\nexit\n", text=True, capture_output=True, cwd=folder,
        env=env, timeout=120, check=False,
    )


def test_terminal_ipython_streams_the_answer_once(tmp_path: Path, fake_api) -> None:
    memdir = tmp_path / "work" / "memory"
    fake_api.script([
        Turn(text="Let me look.", tool_calls=[ToolCall("Glob", {"pattern": "*.md",
                                                                "path": str(memdir)})]),
        Turn(text="The memory folder is EMPTY-FOLDER-ANSWER right now."),
    ])
    done = terminal([
        "%load_ext jupyter_memory",
        "%config Agent.extraction = False",
        "%config Agent.session_memory = False",
        "%agent What is in the memory folder?",
        "%memory frobnicate",
        "print('still alive')",
    ], tmp_path / "work")
    out = done.stdout + done.stderr
    assert out.count("EMPTY-FOLDER-ANSWER") == 1, out
    assert out.count("Let me look.") == 1, out
    tool_lines = [line for line in out.splitlines() if "[tool] Glob" in line]
    assert len(tool_lines) == 1 and '"pattern": "*.md"' in tool_lines[0]
    assert "<div" not in out and "<sub>" not in out and "{'" not in out and "Traceback" not in out
    assert "UsageError: %memory: unknown subcommand 'frobnicate'" in out
    assert "still alive" in out


def test_terminal_ipython_shows_a_failed_turn_as_one_line(tmp_path: Path, fake_api) -> None:
    fake_api.fail_next(Fault("api_error", should_retry=False), times=10)
    done = terminal([
        "%load_ext jupyter_memory",
        "%agent Hello?",
        "print('still alive')",
    ], tmp_path / "work")
    out = done.stdout + done.stderr
    errors = [line for line in out.splitlines() if "ModelCallFailed" in line]
    assert len(errors) == 1 and "The model endpoint answered with an error (500)" in errors[0]
    assert "(no answer)" not in out and "{'" not in out and "Traceback" not in out
    assert "still alive" in out
