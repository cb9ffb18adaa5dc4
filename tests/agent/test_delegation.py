"""Delegation: the main agent hands a task to a defined agent through its Agent tool
(docs/reference.md#delegation), which runs as a child session with its own prompt, tools,
model and memory."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
from sessions import make_session

from jupyter_memory.agent.delegation import AGENT_TOOL, agent_id
from jupyter_memory.agent.loop import run_turn
from jupyter_memory.agent.session import Session
from jupyter_memory.agent.tools import PermissionRequest
from jupyter_memory.localapi import ToolCall, Turn
from jupyter_memory.memdir.trust import trust_folder

REVIEWER = """\
---
name: data-reviewer
description: Reviews analysis notebooks for unit and join mistakes
tools: Read, Grep, Glob
model: haiku
memory: project
---
You review data analyses. Check units, joins and filters.
"""
NOTE = ("---\nname: refunds-join\ndescription: the orders-refunds join on customer id drops "
        "refunds without an order\ntype: project\n---\nJoin on order id instead.\n"
        "**Why:** found while reviewing the revenue notebook.\n")
ANSWER = "The join on customer_id drops refunds without an order. I saved project_refunds_join.md."


@pytest.fixture
def reviewer_project(project: Path, memdir: Path) -> Path:
    """A trusted project that defines ``data-reviewer`` and has a CLAUDE.md; its memdir
    holds one memory of the main agent's."""
    agents = project / ".claude" / "agents"
    agents.mkdir(parents=True)
    (agents / "data-reviewer.md").write_text(REVIEWER, encoding="utf-8")
    (project / "CLAUDE.md").write_text("Amounts in this project are integer cents.\n",
                                       encoding="utf-8")
    memdir.mkdir()
    (memdir / "MEMORY.md").write_text("- [Main only](user_role.md) — the person is an analyst\n",
                                      encoding="utf-8")
    trust_folder(project)
    return project


def delegate(task: str = "Review the orders-refunds join in revenue.py.") -> ToolCall:
    return ToolCall(AGENT_TOOL, {"subagent_type": "data-reviewer",
                                 "description": "Review the join", "prompt": task})


def script_delegation(fake_api: Any, agent_memdir: Path) -> None:
    fake_api.script([
        Turn(text="I'll ask the reviewer.", tool_calls=[delegate()]),
        Turn(tool_calls=[ToolCall("Write", {"file_path": str(agent_memdir / "project_refunds_join.md"),
                                            "content": NOTE})]),
        Turn(text=ANSWER),
        Turn(text="The reviewer found that the join drops refunds."),
    ])


def system_text(body: dict[str, Any]) -> str:
    return "\n".join(block["text"] for block in body["system"])


def test_the_main_agent_delegates_and_the_agent_keeps_its_own_memory(
        reviewer_project: Path, memdir: Path, fake_api) -> None:
    session = make_session(reviewer_project)
    agent_memdir = reviewer_project / ".claude" / "agent-memory" / "data-reviewer"
    script_delegation(fake_api, agent_memdir)

    result = run_turn(session, "Is the refunds join right?")

    assert result.ok, result.error
    assert result.answer == "I'll ask the reviewer.\n\nThe reviewer found that the join drops refunds."
    main_first, child_first, child_second, main_second = (r.body for r in fake_api.requests)
    # the main agent's tools end with Agent, which lists the agent and takes its name only
    tool = main_first["tools"][-1]
    assert tool["name"] == AGENT_TOOL and "- data-reviewer: Reviews analysis notebooks" in tool["description"]
    assert tool["input_schema"]["properties"]["subagent_type"]["enum"] == ["data-reviewer"]
    # the agent's request: its own prompt, model and tools (no Agent: it cannot delegate)
    assert child_first["model"] == "claude-haiku-4-5"
    assert "You review data analyses." in system_text(child_first)
    assert [t["name"] for t in child_first["tools"]] == ["Read", "Grep", "Glob", "Write", "Edit"]
    assert f"`{agent_memdir}`" in system_text(child_first)
    # its own context: the CLAUDE.md that applies and the task, not the main memory
    context = child_first["messages"][0]["content"][0]["text"]
    assert "integer cents" in context and "Main only" not in context
    assert str(memdir) not in json.dumps(child_first)
    assert child_first["messages"][-1]["content"][-1]["text"] == delegate().input["prompt"]
    assert "Is the refunds join right?" not in json.dumps(child_first)
    # its final message is the main agent's tool result
    [tool_result] = [b for b in main_second["messages"][-1]["content"] if b["type"] == "tool_result"]
    assert tool_result["content"] == ANSWER and not tool_result.get("is_error")
    assert json.dumps(child_second).count("refunds without an order") == 1  # its Write, once

    # the agent's memory: the file, its index line, and an ignore file for the lock
    assert (agent_memdir / "project_refunds_join.md").read_text(encoding="utf-8").startswith("---")
    assert "(project_refunds_join.md)" in (agent_memdir / "MEMORY.md").read_text(encoding="utf-8")
    assert ".lock" in (agent_memdir / ".gitignore").read_text(encoding="utf-8").splitlines()
    assert not (memdir / "project_refunds_join.md").exists()

    # the turn record shows what the agent did
    [run] = result.record["delegations"]
    assert run["agent"] == "data-reviewer" and run["status"] == "ok" and run["answer"] == ANSWER
    assert run["description"] == "Review the join" and run["model"] == "claude-haiku-4-5"
    assert run["tool_use_id"] == result.record["tool_calls"][0]["id"]
    assert [c["name"] for c in run["tool_calls"]] == ["Write"]
    assert run["memories_written"] == [{"file": "project_refunds_join.md", "by": "agent"}]
    assert run["memdir"] == str(agent_memdir) and len(run["requests"]) == 2
    assert run["usage"]["output_tokens"] > 0
    assert result.record["memories_written"] == []  # nothing in the main memory
    assert [c["name"] for c in result.record["tool_calls"]] == [AGENT_TOOL]

    # its messages are a sidechain in a file of their own
    assert run["agent_id"] == agent_id(session.session_id, 1, 1)
    side = Path(run["transcript"])
    assert side == session.log.path.with_suffix("") / "subagents" / f"agent-{run['agent_id']}.jsonl"
    entries = [json.loads(line) for line in side.read_text(encoding="utf-8").splitlines()]
    assert [e["type"] for e in entries] == ["user", "assistant", "user", "assistant"]
    assert all(e["isSidechain"] and e["agentId"] == run["agent_id"] for e in entries)
    assert all(e["sessionId"] == session.session_id for e in entries)
    assert entries[0]["parentUuid"] is None
    assert entries[0]["message"]["content"][-1]["text"] == delegate().input["prompt"]
    assert entries[-1]["message"]["model"] == "claude-haiku-4-5"
    main_log = session.log.path.read_text(encoding="utf-8")
    assert '"isSidechain":true' not in main_log and "Join on order id instead" not in main_log

    # its calls are charged to the shared ledger as delegated
    rows = {row["kind"]: row for row in session.cost_ledger.to_json()}
    assert rows["delegated"]["calls"] == 2 and rows["delegated"]["model"] == "claude-haiku-4-5"
    assert rows["main"]["calls"] == 2
    assert session.delegated["data-reviewer"].delegated_id == run["agent_id"]


def test_the_agents_calls_are_noted_as_its_own(reviewer_project: Path, fake_api) -> None:
    """%request --kind delegated finds the agent's calls, labelled with its name; the turn
    record carries them beside the main agent's own rounds."""
    from jupyter_memory.sessions.request_view import live_calls, select_calls

    session = make_session(reviewer_project)
    script_delegation(fake_api, reviewer_project / ".claude" / "agent-memory" / "data-reviewer")

    result = run_turn(session, "Is the refunds join right?")

    assert result.ok, result.error
    noted = [(c.kind, c.agent) for c in session.calls.calls if c.kind in ("main", "delegated")]
    assert noted == [("main", None), ("delegated", "data-reviewer"),
                     ("delegated", "data-reviewer"), ("main", None)]
    assert [(c["kind"], c["agent"]) for c in result.record["calls"]
            if c["kind"] == "delegated"] == [("delegated", "data-reviewer")] * 2
    turn, views = select_calls(live_calls(session), kind="delegated")
    assert turn == 1
    assert [v.label for v in views] == ["agent data-reviewer"] * 2
    assert [v.body["model"] for v in views] == ["claude-haiku-4-5"] * 2
    assert [v.body for v in views] == [{k: v for k, v in r.body.items() if k != "stream"}
                                       for r in fake_api.requests[1:3]]


def test_an_untrusted_folder_offers_none_of_its_own_agents(project: Path, memdir: Path,
                                                            isolated_home: Path) -> None:
    agents = project / ".claude" / "agents"
    agents.mkdir(parents=True)
    (agents / "data-reviewer.md").write_text(REVIEWER, encoding="utf-8")
    session = make_session(project)
    assert AGENT_TOOL not in session.tools.names()
    assert "data-reviewer" not in json.dumps(session.assemble().body)
    [notice] = [n for n in session.trust_notices() if "data-reviewer" in n]
    assert "not offered for delegation" in notice and "jupyter-memory trust" in notice
    # the person's own agents are offered all the same; a project agent of the same name
    # does not hide the person's own
    own = isolated_home / ".claude" / "agents"
    own.mkdir(parents=True)
    (own / "data-reviewer.md").write_text(REVIEWER.replace("memory: project", "memory: user"),
                                          encoding="utf-8")
    (own / "summariser.md").write_text(REVIEWER.replace("data-reviewer", "summariser"),
                                       encoding="utf-8")
    again = make_session(project)
    assert [(a.name, a.scope, a.memory) for a in again.offered.agents] == [
        ("data-reviewer", "user", "user"), ("summariser", "user", "project")]
    trust_folder(project)
    trusted = make_session(project)
    assert [(a.name, a.scope) for a in trusted.offered.agents] == [
        ("data-reviewer", "project"), ("summariser", "user")]
    assert not any("not offered" in n for n in trusted.trust_notices())


def test_the_agents_offered_are_fixed_when_the_session_starts(reviewer_project: Path) -> None:
    session = make_session(reviewer_project)
    before = session.assemble().body["tools"]
    (reviewer_project / ".claude" / "agents" / "late.md").write_text(
        REVIEWER.replace("data-reviewer", "late"), encoding="utf-8")
    assert session.assemble().body["tools"] == before  # the cached prefix stays put
    assert [a.name for a in make_session(reviewer_project).offered.agents] == ["data-reviewer", "late"]


def test_a_delegated_agent_cannot_delegate_further(reviewer_project: Path, fake_api) -> None:
    path = reviewer_project / ".claude" / "agents" / "data-reviewer.md"
    path.write_text(REVIEWER.replace("tools: Read, Grep, Glob", "tools: Read, Agent"),
                    encoding="utf-8")
    session = make_session(reviewer_project)
    [agent] = session.offered.agents
    assert agent.tools == ("Read",) and "only the main agent delegates" in agent.warnings[0]
    fake_api.script([
        Turn(tool_calls=[delegate()]),
        Turn(tool_calls=[delegate("Ask another reviewer.")]),  # the agent tries anyway
        Turn(text="I could not hand it on."),
        Turn(text="Done."),
    ])
    result = run_turn(session, "Review it.")
    assert result.ok
    child_request = fake_api.requests[1].body
    assert AGENT_TOOL not in [t["name"] for t in child_request["tools"]]
    [run] = result.record["delegations"]
    [call] = run["tool_calls"]
    assert call["name"] == AGENT_TOOL and call["is_error"]
    assert "There is no tool named 'Agent'" in call["result"]
    # an agent with every tool does not get Agent either
    child = session.child(replace(agent, tools=None), delegated_id="a1")
    assert AGENT_TOOL not in child.tools.names() and "RunPython" in child.tools.names()
    assert child.offered.agents == ()


@pytest.mark.parametrize(("given", "model"), [
    ("sonnet", "claude-sonnet-5-5"), ("opus", "claude-opus-5-5"), ("haiku", "claude-haiku-4-5"),
    ("Haiku", "claude-haiku-4-5"), ("inherit", "claude-main-1"), (None, "claude-main-1"),
    ("claude-sonnet-4-5-20250929", "claude-sonnet-4-5-20250929"),
])
def test_an_agent_model_resolves(reviewer_project: Path, given: str | None, model: str) -> None:
    path = reviewer_project / ".claude" / "agents" / "data-reviewer.md"
    text = REVIEWER.replace("model: haiku\n", "" if given is None else f"model: {given}\n")
    path.write_text(text, encoding="utf-8")
    main = make_session(reviewer_project, model="claude-main-1")
    [agent] = main.offered.agents
    for child in (main.child(agent), main.child(agent, delegated_id="a1")):
        assert child.config.model == model
        assert child.assemble().body["model"] == model


def test_omit_claude_md_drops_the_instruction_files(reviewer_project: Path, fake_api) -> None:
    path = reviewer_project / ".claude" / "agents" / "data-reviewer.md"
    path.write_text(REVIEWER.replace("memory: project", "memory: project\nomitClaudeMd: true"),
                    encoding="utf-8")
    (reviewer_project / "sub").mkdir()
    (reviewer_project / "sub" / "CLAUDE.md").write_text("Sub-folder rule.\n", encoding="utf-8")
    (reviewer_project / "sub" / "data.py").write_text("x = 1\n", encoding="utf-8")
    session = make_session(reviewer_project)
    [agent] = session.offered.agents
    assert agent.omit_claude_md
    fake_api.script([
        Turn(tool_calls=[delegate()]),
        Turn(tool_calls=[ToolCall("Read", {"file_path": "sub/data.py"})]),
        Turn(text="Read it."),
        Turn(text="Done."),
    ])
    assert run_turn(session, "Review it.").ok
    child_first, child_second = fake_api.requests[1].body, fake_api.requests[2].body
    assert "integer cents" not in json.dumps(child_first)
    assert "Sub-folder rule" not in json.dumps(child_second)  # nothing activates on a Read
    assert "integer cents" in json.dumps(fake_api.requests[0].body)  # the main agent's stay


def test_the_agents_questions_reach_the_person_with_its_name(reviewer_project: Path,
                                                              fake_api) -> None:
    session = make_session(reviewer_project)
    asked: list[PermissionRequest] = []
    session.tool_context().permission.prompt = lambda request: asked.append(request) or "n"
    fake_api.script([
        Turn(tool_calls=[delegate()]),
        Turn(tool_calls=[ToolCall("Write", {"file_path": "notes.md", "content": "x\n"})]),
        Turn(text="Not allowed to write notes.md."),
        Turn(text="Done."),
    ])
    result = run_turn(session, "Review it.")
    [question] = asked
    assert question.tool == "Write by the agent data-reviewer"
    assert not (reviewer_project / "notes.md").exists()
    [call] = result.record["delegations"][0]["tool_calls"]
    assert call["is_error"] and "declined" in call["result"]


def test_a_failed_agent_call_is_a_tool_error_for_the_main_agent(reviewer_project: Path,
                                                                 fake_api) -> None:
    from jupyter_memory.localapi import Fault

    session = make_session(reviewer_project)
    fake_api.script([
        Turn(tool_calls=[delegate()]),
        Turn(fault=Fault("overloaded", should_retry=False)),
        Turn(text="The reviewer is unavailable."),
    ])
    result = run_turn(session, "Review it.")
    assert result.ok
    [run] = result.record["delegations"]
    assert run["status"] == "error" and run["error"]
    [call] = result.record["tool_calls"]
    assert call["is_error"] and call["result"].startswith("The agent data-reviewer failed:")
    assert result.answer == "The reviewer is unavailable."


def test_context_agent_shows_the_last_delegated_request(reviewer_project: Path,
                                                        fake_api) -> None:
    session = make_session(reviewer_project)
    script_delegation(fake_api, reviewer_project / ".claude" / "agent-memory" / "data-reviewer")
    assert run_turn(session, "Is the refunds join right?").ok
    child: Session = session.delegated["data-reviewer"]
    body = child.assemble().body
    assert body["messages"][0]["content"][1]["text"] == delegate().input["prompt"]
    assert "(project_refunds_join.md)" not in system_text(body)  # read once, at its start


def test_the_agent_tool_works_only_during_a_turn(reviewer_project: Path, fake_api) -> None:
    session = make_session(reviewer_project)
    fake_api.script([Turn(text="Nothing to hand over.")])
    assert run_turn(session, "Hello.").ok
    result = session.tools.run(AGENT_TOOL, delegate().input, session.tool_context())
    assert result.is_error and "only the main agent, during its turn" in result.content
    assert session.delegated == {} and len(fake_api.requests) == 1


def test_the_record_of_a_delegation_matches_the_schema_and_rebuilds_its_requests(
        reviewer_project: Path, fake_api) -> None:
    import jsonschema

    from jupyter_memory.context.request_parts import (
        record_parts,
        request_body,
        turn_record_schema,
    )

    session = make_session(reviewer_project)
    script_delegation(fake_api, reviewer_project / ".claude" / "agent-memory" / "data-reviewer")
    record = json.loads(json.dumps(run_turn(session, "Is the refunds join right?").record))
    validator = jsonschema.Draft7Validator(turn_record_schema())
    assert [f"{list(e.absolute_path)}: {e.message}" for e in validator.iter_errors(record)] == []
    [run] = record["delegations"]
    sent = [{k: v for k, v in r.body.items() if k != "stream"} for r in fake_api.requests]
    # the agent's requests (the 2nd and 3rd sent) rebuild exactly from the turn's parts
    parts = record_parts(record)
    assert [request_body(entry, parts) for entry in run["requests"]] == sent[1:3]
    assert [request_body(entry, parts) for entry in record["requests"]] == [
        sent[0], sent[3]]
