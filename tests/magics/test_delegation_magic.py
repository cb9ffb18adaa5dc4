"""Delegation in a notebook: the main agent hands a task to a defined agent, which keeps
its own memory and logs a sidechain; the turn is recorded and replays the same
(docs/reference.md#delegation)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest
from IPython.core.interactiveshell import InteractiveShell
from IPython.utils.capture import capture_output
from shell_helpers import MakeIp

from jupyter_memory.agent.delegation import AGENT_TOOL
from jupyter_memory.agent.loop import TURN_MIME
from jupyter_memory.localapi import ToolCall, Turn
from jupyter_memory.magics import load_ipython_extension
from jupyter_memory.magics.state import forget_state, state_for
from jupyter_memory.memdir.trust import trust_folder

REVIEWER = """\
---
name: data-reviewer
description: Reviews analysis notebooks for unit and join mistakes
tools: Read, Grep, Glob
model: sonnet
memory: project
---
You review data analyses. Check units, joins and filters.
"""
TASK = "Review the orders-refunds join in revenue.py and note what keeps going wrong."
NOTE = ("---\nname: refunds-join\ndescription: joining refunds on customer id drops refunds "
        "without an order\ntype: project\n---\nJoin on order id.\n")
ANSWER = "The join drops refunds without an order; I saved project_refunds_join.md."
CELL = "%%agent\nIs the refunds join in revenue.py right?"


@pytest.fixture
def reviewer_ip(make_ip: MakeIp, project: Path, memdir: Path) -> InteractiveShell:
    """A trusted project that defines data-reviewer, with a CLAUDE.md."""
    agents = project / ".claude" / "agents"
    agents.mkdir(parents=True)
    (agents / "data-reviewer.md").write_text(REVIEWER, encoding="utf-8")
    (project / "CLAUDE.md").write_text("Amounts are integer cents.\n", encoding="utf-8")
    (project / "revenue.py").write_text("orders.merge(refunds, on='customer_id')\n",
                                        encoding="utf-8")
    trust_folder(project)
    return make_ip(project, memdir=memdir)


def run(shell: InteractiveShell, code: str) -> tuple[Any, Any]:
    with capture_output() as cap:
        result = shell.run_cell(code, store_history=True)
    return cap, result


def record_of(cap: Any) -> dict[str, Any]:
    [record] = [o.data[TURN_MIME] for o in cap.outputs if TURN_MIME in o.data]
    return dict(record)


def offline(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("ANTHROPIC_API_KEY", "ANTHROPIC_BASE_URL", "ANTHROPIC_AUTH_TOKEN"):
        monkeypatch.delenv(name, raising=False)


def test_a_delegated_turn_is_recorded_and_replays_the_same(reviewer_ip, project, fake_api,
                                                           monkeypatch) -> None:
    agent_memdir = project / ".claude" / "agent-memory" / "data-reviewer"
    fake_api.script([
        Turn(text="Let me ask the reviewer.", tool_calls=[ToolCall(AGENT_TOOL, {
            "subagent_type": "data-reviewer", "description": "Review the join",
            "prompt": TASK})]),
        Turn(tool_calls=[ToolCall("Read", {"file_path": "revenue.py"})]),
        Turn(tool_calls=[ToolCall("Write", {
            "file_path": str(agent_memdir / "project_refunds_join.md"), "content": NOTE})]),
        Turn(text=ANSWER),
        Turn(text="The reviewer says the join drops refunds without an order."),
    ])
    run(reviewer_ip, "%agent record delegation.recording.json")
    cap, result = run(reviewer_ip, CELL)
    assert result.error_in_exec is None, cap.stdout
    recorded = record_of(cap)
    session = state_for(reviewer_ip).session

    # the main turn called the agent; its answer came back as the tool result
    [call] = recorded["tool_calls"]
    assert call["name"] == AGENT_TOOL and call["result"] == ANSWER
    [run_] = recorded["delegations"]
    assert run_["agent"] == "data-reviewer" and run_["model"] == "claude-sonnet-5-5"
    assert [c["name"] for c in run_["tool_calls"]] == ["Read", "Write"]
    assert run_["memories_written"] == [{"file": "project_refunds_join.md", "by": "agent"}]
    # the agent wrote its own memory, with an ignore file for its lock
    assert "(project_refunds_join.md)" in (agent_memdir / "MEMORY.md").read_text()
    assert ".lock" in (agent_memdir / ".gitignore").read_text().splitlines()
    # the sidechain: its own file, every entry isSidechain
    side = Path(run_["transcript"])
    assert side.parent == session.log.path.with_suffix("") / "subagents"
    entries = [json.loads(line) for line in side.read_text().splitlines()]
    assert len(entries) == 6 and all(e["isSidechain"] for e in entries)
    # the view shows the delegation; %context --agent shows the agent's request
    markdown = next(o.data["text/markdown"] for o in cap.outputs if TURN_MIME in o.data)
    assert "Delegated to <code>data-reviewer</code>" in markdown
    assert "saved project\\_refunds\\_join.md in its own memory" in markdown
    cap, _ = run(reviewer_ip, "%context --agent data-reviewer --raw")
    body = json.loads(cap.stdout)
    assert body["model"] == "claude-sonnet-5-5"
    assert body["messages"][0]["content"][1]["text"] == TASK
    assert AGENT_TOOL not in [t["name"] for t in body["tools"]]
    # the cost of the agent's calls, with the rest
    cap, _ = run(reviewer_ip, "%context --cost")
    assert "delegated agents" in cap.stdout
    run(reviewer_ip, "%agent record off")

    # a fresh kernel replays the recording offline, strictly, from the same start
    shutil.rmtree(agent_memdir)
    offline(monkeypatch)
    forget_state(reviewer_ip)
    load_ipython_extension(reviewer_ip)
    cap, _ = run(reviewer_ip, "%agent replay --strict delegation.recording.json")
    assert "Replaying 5 recorded model exchanges" in cap.stdout
    cap, result = run(reviewer_ip, CELL)
    assert result.error_in_exec is None, cap.stdout
    replayed = record_of(cap)
    assert replayed == recorded
    assert "(project_refunds_join.md)" in (agent_memdir / "MEMORY.md").read_text()
    replay_sides = list(session.log.path.with_suffix("").glob("replays/*/subagents/*.jsonl"))
    assert [p.name for p in replay_sides] == [side.name]
