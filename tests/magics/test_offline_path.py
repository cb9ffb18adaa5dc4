"""The offline path as a new user finds it: the documented echo server
(``python -m jupyter_memory.localapi --echo``) and ``%sandbox echo``.

- ``%%remember`` with a model that files nothing fails the cell with one line saying how
  to save the memory, and never prints the filing prompt; under ``%sandbox echo`` it
  files by fixed rules.
- The echo answers a forced tool call with the emptiest input the tool's schema accepts,
  so prefetch mode works against it and selects nothing.
- A selector call that fails is told once, as a notice.
"""

from __future__ import annotations

import os
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anthropic
import jsonschema
import pytest
from IPython.core.error import UsageError
from IPython.core.interactiveshell import InteractiveShell
from IPython.utils.capture import capture_output
from sessions import make_session
from shell_helpers import MakeIp, run

from jupyter_memory.agent.loop import TURN_MIME, TurnEvents, run_turn
from jupyter_memory.agent.remember import REMEMBER_SYSTEM
from jupyter_memory.agent.tools import default_registry
from jupyter_memory.context.request_parts import readable
from jupyter_memory.localapi import Fault, Turn, echo_responder
from jupyter_memory.localapi.echo import ECHO_PREFIX, minimal_input
from jupyter_memory.recall import SELECTOR_TOOL, last_prefetch

SELECTOR = SELECTOR_TOOL["name"]


@pytest.fixture(scope="module")
def echo_server() -> Iterator[str]:
    """``python -m jupyter_memory.localapi --port 0 --echo``, as docs/connecting.md says
    to start it; its base URL."""
    proc = subprocess.Popen(
        [sys.executable, "-m", "jupyter_memory.localapi", "--port", "0", "--echo"],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        env={**os.environ, "PYTHONUNBUFFERED": "1"})
    try:
        assert proc.stdout is not None
        first = proc.stdout.readline()  # printed once the server listens
        assert first.startswith("fake_api listening on http://127.0.0.1:"), (
            first + (proc.stderr.read() if proc.stderr else ""))
        yield first.split()[3]
    finally:
        proc.terminate()
        proc.wait(timeout=30)


@pytest.fixture
def echo_env(echo_server: str, monkeypatch: pytest.MonkeyPatch) -> str:
    monkeypatch.setenv("ANTHROPIC_BASE_URL", echo_server)
    monkeypatch.setenv("ANTHROPIC_API_KEY", "test-key")
    return echo_server


def memory_files(memdir: Path) -> list[str]:
    return sorted(p.name for p in memdir.rglob("*.md")) if memdir.exists() else []


def failing_cell(shell: InteractiveShell, code: str) -> tuple[str, str]:
    """Run a cell that must fail with one UsageError line; its message and its output."""
    with capture_output() as cap:
        result = shell.run_cell(code, store_history=True)
    error = result.error_in_exec
    assert isinstance(error, UsageError), f"the cell did not fail with a UsageError: {error!r}"
    return str(error), cap.stdout + cap.stderr


# ----------------------------------------------------------------------------- the echo


def test_the_documented_echo_server_answers_a_forced_tool_call_validly(echo_server: str):
    client = anthropic.Anthropic(base_url=echo_server, api_key="test-key", max_retries=0)
    reply = client.messages.create(
        model="claude-sonnet-5-5", max_tokens=256, tools=[SELECTOR_TOOL],
        tool_choice={"type": "tool", "name": SELECTOR},
        messages=[{"role": "user", "content": "Which memories fit?"}])
    [call] = reply.content
    assert call.type == "tool_use" and call.name == SELECTOR
    assert call.input == {"selected_memories": []}
    assert reply.stop_reason == "tool_use"

    # Any other forced tool gets the emptiest input its own schema accepts.
    tool = {"name": "plan", "description": "A plan.", "input_schema": {
        "type": "object", "required": ["steps", "title", "level", "mode", "owner"],
        "properties": {
            "steps": {"type": "array", "items": {"type": "string"}, "minItems": 1},
            "title": {"type": "string", "minLength": 2},
            "level": {"type": "integer", "minimum": 3, "maximum": 9},
            "mode": {"enum": ["quick", "full"]},
            "owner": {"$ref": "#/$defs/person"},
            "notes": {"type": "string"}},
        "$defs": {"person": {"type": "object", "required": ["name"],
                             "properties": {"name": {"type": ["string", "null"]}}}}}}
    reply = client.messages.create(
        model="claude-sonnet-5-5", max_tokens=256, tools=[SELECTOR_TOOL, tool],
        tool_choice={"type": "tool", "name": "plan"},
        messages=[{"role": "user", "content": "Plan it."}])
    [call] = reply.content
    assert call.name == "plan"
    assert call.input == {"steps": [""], "title": "xx", "level": 3, "mode": "quick",
                          "owner": {"name": None}}
    jsonschema.validate(call.input, tool["input_schema"])

    # Free answers echo the person's words.
    reply = client.messages.create(model="claude-sonnet-5-5", max_tokens=64,
                                   messages=[{"role": "user", "content": "ping me back"}])
    assert reply.content[0].text == f"{ECHO_PREFIX}ping me back"


def test_every_tool_of_the_agent_gets_a_valid_forced_answer():
    for tool in default_registry().definitions():
        turn = echo_responder({"tools": [tool], "tool_choice": {"type": "tool", "name": tool["name"]},
                               "messages": [{"role": "user", "content": "go"}]})
        [call] = turn.tool_calls
        assert call.name == tool["name"]
        jsonschema.validate(call.input, tool["input_schema"])
    assert minimal_input(SELECTOR_TOOL["input_schema"]) == {"selected_memories": []}
    # tool_choice "any" forces some tool too: the first one.
    turn = echo_responder({"tools": [SELECTOR_TOOL], "tool_choice": {"type": "any"},
                           "messages": [{"role": "user", "content": "go"}]})
    assert [(c.name, c.input) for c in turn.tool_calls] == [(SELECTOR, {"selected_memories": []})]


def test_the_echo_leaves_out_harness_context_and_tool_results():
    request = {"messages": [
        {"role": "user", "content": [
            {"type": "text", "text": "<system-reminder>\ncells you ran\n</system-reminder>"},
            {"type": "text", "text": "Count the test orders"}]},
        {"role": "assistant", "content": [{"type": "tool_use", "id": "t1", "name": "Glob",
                                           "input": {"pattern": "*"}}]},
        {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t1",
                                      "content": "a.py"}]}]}
    assert echo_responder(request).text == f"{ECHO_PREFIX}Count the test orders"


# ----------------------------------------------------------------------------- %%remember


def test_remember_against_the_echo_server_fails_the_cell_and_saves_nothing(
    echo_env: str, make_ip: MakeIp, tmp_path: Path
):
    ip = make_ip()
    message, output = failing_cell(ip, "%%remember\nThe revenue column holds integer cents.")
    assert message.startswith("%%remember: the memory was not saved: the model (")
    assert "answered without filing it." in message
    assert '%%remember --type TYPE --name NAME --description "…"' in message
    assert "--offline" in message and "%sandbox echo" in message
    assert "\n" not in message
    # Neither the filing prompt nor its instructions reach the person.
    for shown in (message, output):
        assert "Store the text" not in shown and REMEMBER_SYSTEM[:40] not in shown
        assert ECHO_PREFIX not in shown
    assert output == f"UsageError: {message}\n"  # the one line is all the cell shows
    assert memory_files(tmp_path / "mem") == []

    # Run All stops at that cell.
    cells = "%%remember\nA fact.\n", "print('after')"
    with capture_output() as cap:
        for code in cells:
            result = ip.run_cell(code, store_history=True)
            if not result.success:
                break
    assert "after" not in cap.stdout

    # Saved by hand, as the message says, it needs no model.
    out = run(ip, '%%remember --type project --name revenue-in-cents --description '
                  '"sales.revenue is in cents"\nThe revenue column holds integer cents.').stdout
    assert out.startswith("Saved project_revenue_in_cents.md (new)")
    assert memory_files(tmp_path / "mem") == ["MEMORY.md", "project_revenue_in_cents.md"]


def test_remember_under_the_echo_sandbox_files_by_fixed_rules(make_ip: MakeIp, tmp_path: Path):
    ip = make_ip()
    run(ip, "%sandbox echo")
    out = run(ip, "%%remember\nThe revenue column holds integer cents.").stdout
    assert out.startswith("Saved ")
    assert "The echo sandbox has no model to file it. Derived without a model: type " in out
    [memory] = [f for f in memory_files(tmp_path / "mem") if f != "MEMORY.md"]
    assert "integer cents" in (tmp_path / "mem" / memory).read_text(encoding="utf-8")


def test_remember_whose_model_only_answers_fails_the_same_way(fake_api, make_ip: MakeIp,
                                                             tmp_path: Path):
    ip = make_ip()
    fake_api.script([Turn(text="That is task progress, not worth keeping.")])
    message, output = failing_cell(ip, "%%remember\nWorking on the chart.")
    assert message.startswith("%%remember: the memory was not saved: the model (")
    assert "task progress" not in message + output
    assert memory_files(tmp_path / "mem") == []


# ----------------------------------------------------------------------------- prefetch


def test_prefetch_against_the_echo_server_selects_nothing_and_raises_nothing(
    echo_env: str, tmp_path: Path
):
    session = make_session(tmp_path / "proj", memdir=tmp_path / "mem", recall_mode="prefetch",
                           wait_for_prefetch=True)
    cents = session.store.create("revenue-in-cents", "sales.revenue is stored in cents",
                                 "project", "Cents.").file
    notices: list[str] = []
    result = run_turn(session, "How is revenue stored?",
                      events=TurnEvents(on_notice=lambda text, _payload: notices.append(text)))
    assert result.ok and result.answer == f"{ECHO_PREFIX}How is revenue stored?"
    prefetch = last_prefetch(session)
    assert prefetch is not None and prefetch.status == "done"
    assert prefetch.answer == {"selected_memories": []} and prefetch.selected == []
    [decision] = [d for d in result.record["recall"]["decisions"] if d["file"] == cents]
    assert decision["decision"] == "not_selected"
    assert decision["reason"] == "the model selector (claude-sonnet-5-5) did not pick it"
    assert notices == [] and result.record["events"] == []


def test_prefetch_in_a_notebook_under_the_echo_sandbox(make_ip: MakeIp):
    ip = make_ip(config=["Agent.recall_mode = 'prefetch'", "Agent.wait_for_prefetch = True"])
    run(ip, '%%remember -t project -n revenue-in-cents -d "sales.revenue is in cents"\nCents.')
    run(ip, "%sandbox echo")
    cap = run(ip, "%%agent\nHow is revenue stored?")
    [record] = [o.data[TURN_MIME] for o in cap.outputs if TURN_MIME in o.data]
    assert record["answer"] == f"{ECHO_PREFIX}How is revenue stored?"
    assert record["recall"]["mode"] == "prefetch"
    assert {d["decision"] for d in record["recall"]["decisions"]} == {"not_selected"}
    assert not any("notice+json" in key for o in cap.outputs for key in o.data)


# ----------------------------------------------------------------------------- failures


class FailingSelector:
    """Fails every selector call with ``fault`` and answers the main model."""

    def __init__(self, fault: Fault) -> None:
        self.fault = fault

    def __call__(self, body: dict[str, Any]) -> Turn:
        if (body.get("tool_choice") or {}).get("name") == SELECTOR:
            return Turn(fault=self.fault)
        return Turn(text="Answered without memories.")


def test_a_failing_selector_is_told_once_as_a_notice(fake_api, tmp_path: Path):
    session = make_session(tmp_path / "proj", memdir=tmp_path / "mem", recall_mode="prefetch",
                           wait_for_prefetch=True)
    session.store.create("revenue-in-cents", "sales.revenue is stored in cents", "project",
                         "Cents.")
    fake_api.responder = FailingSelector(Fault("api_error", should_retry=False))
    told: list[tuple[str, dict[str, Any]]] = []
    events = TurnEvents(on_notice=lambda text, payload: told.append((text, payload)))
    for question in ("How is revenue stored?", "And in which currency?"):
        result = run_turn(session, question, events=events)
        assert result.ok and result.answer == "Answered without memories."
        decisions = readable(result.record)["recall"]["decisions"]
        assert decisions and all(d["reason"].startswith("selector failed: InternalServerError (500)")
                                 for d in decisions)
    [(text, payload)] = told  # the second failure of the same kind is not told again
    assert text.startswith("🧠 Recall attached no memories to this message: the selector "
                           "(claude-sonnet-5-5) failed (InternalServerError (500)")
    assert "recall_selector = 'offline'" in text and "%memory why" in text
    assert "forced tool call" not in text  # a server error says nothing of tool_choice
    assert payload["kind"] == "recall" and payload["status"] == "failed"

    # Another kind of failure is told too.
    fake_api.responder = FailingSelector(Fault("authentication", should_retry=False))
    run_turn(session, "Which table holds it?", events=events)
    assert len(told) == 2 and "AuthenticationError (401)" in told[1][0]


def test_a_notebook_shows_the_failure_beside_the_answer(fake_api, make_ip: MakeIp):
    ip = make_ip(config=["Agent.recall_mode = 'prefetch'"])
    run(ip, '%%remember -t project -n revenue-in-cents -d "sales.revenue is in cents"\nCents.')
    arrived = threading.Event()
    failing = FailingSelector(Fault("api_error", should_retry=False))

    def answer(body: dict[str, Any]) -> Turn:
        turn = failing(body)
        if turn.fault is None:  # the main model answers once the selector has failed
            prefetch = last_prefetch(ip.magics_manager.registry["Agent"].session())
            assert prefetch is not None and prefetch.wait(timeout=60)
            arrived.set()
        return turn

    fake_api.responder = answer
    cap = run(ip, "%%agent\nHow is revenue stored?")
    assert arrived.is_set()
    notices = [o.data for o in cap.outputs
               if "application/vnd.jupyter-memory.notice+json" in o.data]
    assert len(notices) == 1
    assert notices[0]["text/plain"].startswith("🧠 Recall attached no memories")
    [record] = [o.data[TURN_MIME] for o in cap.outputs if TURN_MIME in o.data]
    assert record["answer"] == "Answered without memories."


def test_the_selector_of_an_unanswered_tool_choice_is_reported(fake_api, tmp_path: Path):
    """An endpoint that ignores ``tool_choice`` and answers in words fails the selector:
    it is reported, not swallowed."""
    session = make_session(tmp_path / "proj", memdir=tmp_path / "mem", recall_mode="prefetch",
                           wait_for_prefetch=True)
    session.store.create("revenue-in-cents", "sales.revenue is stored in cents", "project",
                         "Cents.")

    def words_only(body: dict[str, Any]) -> Turn:
        return Turn(text="I think the cents one.")

    fake_api.responder = words_only
    told: list[str] = []
    run_turn(session, "How is revenue stored?",
             events=TurnEvents(on_notice=lambda text, _payload: told.append(text)))
    [text] = told
    assert "SelectorError: the response held no select_memories call (it held text)" in text
    assert "Prefetch needs an endpoint that answers a forced tool call" in text


def test_the_no_model_message_shows_the_offline_way_to_try_the_agent(make_ip: MakeIp):
    ip = make_ip()
    message, _ = failing_cell(ip, "%%agent\nHow is revenue stored?")
    assert "No model is connected. To try the agent offline, run %sandbox echo" in message
    run(ip, "%sandbox echo")  # and that way works, with nothing else set
    cap = run(ip, "%%agent\nHow is revenue stored?")
    [record] = [o.data[TURN_MIME] for o in cap.outputs if TURN_MIME in o.data]
    assert record["answer"] == f"{ECHO_PREFIX}How is revenue stored?"
