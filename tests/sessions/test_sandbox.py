"""Sandbox mode: one call points a session at the local server (echo or a script) or live."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest
from sessions import make_session
from shell_helpers import fails, run

from jupyter_memory.agent.loop import TURN_MIME, run_turn
from jupyter_memory.agent.session import Session
from jupyter_memory.context.pricing import report
from jupyter_memory.sessions.sandbox import SandboxError, sandbox_of, stop_sandbox, use_sandbox


@pytest.fixture
def session(project: Path, memdir: Path) -> Iterator[Session]:
    """A session with no model configured (tests/conftest.py removes every ANTHROPIC_
    variable), its sandbox stopped at the end."""
    s = make_session(project)
    yield s
    stop_sandbox(s)


def test_echo_answers_without_any_key_and_is_priced_as_simulated(session):
    box = use_sandbox(session, "echo")
    result = run_turn(session, "How many rows does the orders table have?")
    assert result.ok, result.error
    assert result.answer == "(echo) How many rows does the orders table have?"
    assert box.server.requests and "echo" in box.describe()
    rows = report(session.cost_ledger, "live").rows
    assert [r.kind for r in rows] == ["main"] and rows[0].simulated


def test_script_answers_first_then_echoes(session, tmp_path):
    script = tmp_path / "answers.json"
    script.write_text(json.dumps([{"text": "The median order is 41.50 euros."}]), encoding="utf-8")
    box = use_sandbox(session, "script", script)
    assert "1 scripted turn(s) left" in box.describe()
    first = run_turn(session, "What is the typical order?")
    second = run_turn(session, "And for the pro plan?")
    assert first.answer == "The median order is 41.50 euros."
    assert second.answer == "(echo) And for the pro plan?"
    assert box.server.remaining == 0


def test_switching_stops_the_old_server_and_live_needs_a_model(session, monkeypatch):
    first = use_sandbox(session, "echo")
    with pytest.raises(SandboxError, match="No model is connected"):
        use_sandbox(session, "live")
    assert sandbox_of(session) is first  # a refused switch changes nothing
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-test-not-used")
    box = use_sandbox(session, "live")
    assert box.mode == "live" and session.endpoint is box and box.server is None
    with pytest.raises(RuntimeError, match="not running"):
        first.server.base_url  # noqa: B018 - the old local server was stopped


def test_bad_requests_say_what_to_do(session, tmp_path):
    with pytest.raises(SandboxError, match="unknown sandbox mode 'loud'"):
        use_sandbox(session, "loud")
    with pytest.raises(SandboxError, match="needs a script file"):
        use_sandbox(session, "script")
    with pytest.raises(SandboxError, match="cannot read the script"):
        use_sandbox(session, "script", tmp_path / "missing.json")
    bad = tmp_path / "bad.json"
    bad.write_text('{"text": "not a list"}', encoding="utf-8")
    with pytest.raises(SandboxError, match="is not a fake_api script"):
        use_sandbox(session, "script", bad)
    assert sandbox_of(session) is None


def test_sandbox_magic_switches_in_one_line(ip):
    assert "No sandbox" in run(ip, "%sandbox").stdout
    assert "echo: the local scripted server" in run(ip, "%sandbox echo").stdout
    cap = run(ip, "%%agent\nPlot revenue by region")
    records = [o.data[TURN_MIME] for o in cap.outputs if TURN_MIME in o.data]
    assert records[-1]["answer"] == "(echo) Plot revenue by region"
    assert "echo:" in run(ip, "%sandbox").stdout
    assert fails(ip, "%sandbox loud").startswith(
        "%sandbox: argument MODE: invalid choice: 'loud'")
    assert fails(ip, "%sandbox echo now").startswith("%sandbox: echo takes no FILE")


def test_a_new_agent_session_keeps_the_sandbox(ip):
    run(ip, "%sandbox echo")
    out = run(ip, "%agent new").stdout
    assert "the echo sandbox carries over" in out
    cap = run(ip, "%%agent\nStill answered locally?")
    records = [o.data[TURN_MIME] for o in cap.outputs if TURN_MIME in o.data]
    assert records[-1]["answer"] == "(echo) Still answered locally?"


def test_switching_a_replayed_session_stops_the_replay(session, tmp_path):
    from jupyter_memory.sessions import recording

    use_sandbox(session, "echo")
    recorder = recording.start_recording(session, tmp_path / "nb.recording.json")
    assert run_turn(session, "Recorded question").ok
    recorder.stop()
    replayer = recording.start_replay(session, tmp_path / "nb.recording.json")
    assert recording.controller(session) is replayer
    box = use_sandbox(session, "echo")
    assert box.stopped == "replay" and recording.controller(session) is None
    assert "replay this session was under was stopped" in box.describe()
    result = run_turn(session, "A question the recording never saw")
    assert result.ok and result.answer == "(echo) A question the recording never saw"
