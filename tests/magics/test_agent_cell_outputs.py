"""An ``%%agent`` cell keeps exactly the outputs it needs (issue 31, item 10).

Extraction runs in the background and may still run when the cell ends. What it reports
then joins the turn's own output, as an event of the turn; when it has nothing to say the
cell holds the turn alone, with no empty output left to be saved in the notebook. The
extraction's reply is held back until the cell has ended, so its notice comes late.
"""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Any

import pytest
from extraction_router import Router
from IPython.utils.capture import capture_output
from shell_helpers import MakeIp

from jupyter_memory.agent.loop import TURN_MIME
from jupyter_memory.localapi import ToolCall, Turn

pytestmark = pytest.mark.usefixtures("extraction_on")

NOTICE_MIME = "application/vnd.jupyter-memory.notice+json"
FEEDBACK = """\
---
name: no-full-frames
description: Show df.head() and the shape, never a whole data frame
type: feedback
---
Never print a whole data frame.
"""


def _held(gate: threading.Event, reply: Turn) -> Any:
    """An extraction reply sent only once the cell has ended."""
    def answer(_body: dict[str, Any]) -> Turn:
        assert gate.wait(60), "the cell did not end"
        return reply
    return answer


def _run_cell_then_background(ip: Any, gate: threading.Event, code: str) -> list[Any]:
    """Every display the cell and its late background work sent, in order."""
    session = ip.magics_manager.registry["Agent"].session()
    with capture_output() as cap:
        result = ip.run_cell(code, store_history=True)
        result.raise_error()
        gate.set()
        assert session.extraction.wait(120)
    return cap.outputs


def test_a_late_notice_joins_the_turn_output(make_ip: MakeIp, fake_api: Any, tmp_path: Path):
    memdir = tmp_path / "mem"
    ip = make_ip(memdir=memdir)
    router = Router(fake_api)
    gate = threading.Event()
    router.main.append(Turn(text="Understood: only .head() from now on."))
    router.extract.extend([
        _held(gate, Turn(tool_calls=[ToolCall(
            "Write", {"file_path": str(memdir / "feedback_no_full_frames.md"),
                      "content": FEEDBACK})])),
        Turn(text="Saved feedback_no_full_frames.md."),
    ])
    outputs = _run_cell_then_background(
        ip, gate, "%%agent\nPlease never print a whole data frame for me.")
    assert fake_api.failures == []
    assert [o for o in outputs if o.data == {"text/plain": ""}] == []
    assert [o for o in outputs if NOTICE_MIME in o.data] == []
    # One output (the streamed answer, then the turn), drawn again with the notice among
    # the turn's events.
    assert [o for o in outputs if not o.update] == outputs[:1]
    turns = [o for o in outputs if TURN_MIME in o.data]
    assert len(turns) == 2
    last = outputs[-1]
    assert last is turns[-1]
    assert last.update and TURN_MIME in last.data
    [event] = [e for e in last.data[TURN_MIME]["events"] if e["kind"] == "memory"]
    assert event["text"].startswith("🧠 Saved 1 memory: `feedback_no_full_frames.md` (new)")
    assert event["notice"]["files"] == ["feedback_no_full_frames.md"]
    for fallback in ("text/markdown", "text/html"):
        assert "Saved 1 memory" in last.data[fallback], fallback
    # The record shown as the cell ended is not changed by the later redraw.
    assert all(e["kind"] != "memory" for e in turns[0].data[TURN_MIME]["events"])


def test_background_work_with_nothing_to_say_leaves_the_turn_alone(
        make_ip: MakeIp, fake_api: Any):
    ip = make_ip()
    router = Router(fake_api)
    gate = threading.Event()
    router.main.append(Turn(text="Revenue is in cents."))
    router.extract.append(_held(gate, Turn(text="Nothing to save.")))
    outputs = _run_cell_then_background(ip, gate, "%%agent\nHow is revenue stored?")
    assert fake_api.failures == []
    assert len(router.extract_bodies) == 1  # extraction ran, after the cell
    # The streamed answer, then the turn in its place: one output in the notebook.
    assert [o for o in outputs if not o.update] == outputs[:1]
    assert [TURN_MIME in o.data for o in outputs][-1:] == [True]
    assert sum(TURN_MIME in o.data for o in outputs) == 1
