"""The static HTML of a saved ``%%agent`` turn, as nbconvert shows it with no kernel and no
scripts: the prompt, the recalled-memories table, the context bar and the model requests
(issue 31 item 1), with model and memory text inert."""

from __future__ import annotations

import html
import subprocess
import sys
from pathlib import Path
from typing import Any

import nbformat
import pytest
from sessions import make_session

from jupyter_memory.agent.loop import run_turn
from jupyter_memory.agent.session import Session
from jupyter_memory.localapi import ToolCall, Turn
from jupyter_memory.widgets.render import turn_bundle
from jupyter_memory.widgets.turn_static import (
    PROMPT_CHARS,
    request_command,
    turn_inputs_html,
    turn_requests_html,
)

HOSTILE = "<img src=x onerror=alert(1)><script>alert('p')</script>"
NOTEBOOK = "two turns.ipynb"


@pytest.fixture
def session(project: Path, memdir: Path) -> Session:
    sess = make_session(project)
    sess.store.create("revenue in cents", f"revenue is in cents {HOSTILE}", "project",
                      f"Divide by 100. {HOSTILE}")
    return sess


@pytest.fixture
def records(session: Session, fake_api: Any) -> list[dict[str, Any]]:
    path = session.memdir / "project_revenue_in_cents.md"
    fake_api.script([
        Turn(tool_calls=[ToolCall("Read", {"file_path": str(path)})]),
        Turn(text="Revenue is stored in **cents**."),
        Turn(text=f"Still cents. {HOSTILE}"),
    ])
    out = []
    for prompt in ("How is revenue stored?", f"And now? {HOSTILE}"):
        result = run_turn(session, prompt)
        assert result.ok, result.error
        out.append(result.record)
    return out


def _nbconvert(tmp_path: Path, records: list[dict[str, Any]], *options: str) -> str:
    nb = nbformat.v4.new_notebook()
    for record in records:
        cell = nbformat.v4.new_code_cell(f"%%agent\n{record['prompt']}")
        cell.outputs = [nbformat.v4.new_output("display_data",
                                               data=turn_bundle(record, NOTEBOOK))]
        nb.cells.append(cell)
    path = tmp_path / NOTEBOOK
    nbformat.write(nb, str(path))
    subprocess.run([sys.executable, "-m", "jupyter", "nbconvert", "--to", "html",
                    "--HTMLExporter.exclude_input=True", *options, str(path)],
                   check=True, capture_output=True, timeout=120)
    return path.with_suffix(".html").read_text(encoding="utf-8")


@pytest.mark.parametrize("sanitize", [False, True], ids=["plain", "sanitized"])
def test_nbconvert_html_shows_what_the_model_saw(
        tmp_path: Path, records: list[dict[str, Any]], sanitize: bool) -> None:
    options = ("--HTMLExporter.sanitize_html=True",) if sanitize else ()
    page = _nbconvert(tmp_path, records, *options)
    assert page.count("Recalled memories") == 2
    assert page.count("Model requests") == 2
    assert "How is revenue stored?" in page
    assert "project_revenue_in_cents.md" in page
    # The context bar's data, in the %context order: used, free, then the buffer.
    context = page[page.index("Context: "):]
    assert context.index("messages ") < context.index("free ") < context.index(
        "autocompact buffer ")
    # The turn's requests: the second turn's first call adds only the new prompt.
    assert "unchanged since an earlier turn" in page
    assert "jupyter-memory request 'two turns.ipynb' --turn 2 --call 1" in html.unescape(page)
    # Prompt, memory and answer text stays text.
    assert "onerror=alert" not in page.replace("&lt;img src=x onerror=alert", "")
    assert "<script>alert" not in page
    assert "&lt;script&gt;alert" in page


def test_each_request_shows_what_it_adds(records: list[dict[str, Any]]) -> None:
    from jupyter_memory.context.request_parts import readable

    first = turn_requests_html(readable(records[0]), NOTEBOOK)
    assert first.count("<details>") == 2  # the Read round and the answer round
    second_call = first[first.index("Call 2"):]
    assert "unchanged since turn 1 (call 1)" in second_call
    added = html.unescape(second_call)
    assert "the first 1 as in turn 1 call 1; new from message 2" in added
    assert "tool_use Read" in added
    # The Read's output is in the turn's tool-call fold: the request names it instead.
    output = readable(records[0])["tool_calls"][0]["result"]
    assert (f"tool_result [cache mark]: the output of Read shown above ({len(output):,} "
            "characters)") in added
    assert "description: revenue is in cents" not in added
    page = turn_bundle(records[0], NOTEBOOK)["text/html"]
    assert html.unescape(page).count("description: revenue is in cents") == 1
    assert "<img" not in page and "&lt;img src=x" in page
    # A result that is not the one the fold shows (cleared, say) is still printed.
    cleared = readable(records[0])
    cleared["tool_calls"][0]["result"] = "something else"
    again = html.unescape(turn_requests_html(cleared, NOTEBOOK))
    assert "description: revenue is in cents" in again
    assert "more characters not shown" in again  # cut at CALL_CHARS, the cut counted
    assert request_command(NOTEBOOK, 1, 2) == "jupyter-memory request 'two turns.ipynb' --turn 1 --call 2"
    assert request_command(None, 3, 1) == "jupyter-memory request NOTEBOOK --turn 3 --call 1"


def test_long_texts_are_cut_and_counted(records: list[dict[str, Any]]) -> None:
    from jupyter_memory.context.request_parts import readable

    record = {**readable(records[0]), "prompt": "x" * (PROMPT_CHARS + 1234)}
    shown = turn_inputs_html(record)
    assert "1,234 more characters not shown" in shown
    assert "x" * (PROMPT_CHARS + 1) not in shown
    bundle = turn_bundle(records[1], NOTEBOOK)
    assert len(bundle["text/html"]) < 8_000
