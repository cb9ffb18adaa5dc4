"""Agent definitions in .claude/agents/ with memory of their own (docs/reference.md#agent-memory)."""

from __future__ import annotations

import io
import json
from pathlib import Path

import pytest

from jupyter_memory.agent.definitions import find_agents, load_agent, parse_agent
from jupyter_memory.agent.loop import run_turn
from jupyter_memory.agent.session import AgentConfig, Session
from jupyter_memory.cli import app as cli
from jupyter_memory.errors import ConfigError
from jupyter_memory.localapi import ToolCall, Turn
from jupyter_memory.memdir.trust import trust_folder

REVIEWER = """\
---
name: data-reviewer
description: Reviews analysis notebooks for unit and join mistakes
tools: Read, Grep, Glob, Bash
model: inherit
memory: project
---
You review data analyses. Check units, joins and filters. Keep notes in your memory
about recurring mistakes in this project.
"""


def run(*argv: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    code = cli.main(list(argv), stdin=io.StringIO(""), stdout=out, stderr=err)
    return code, out.getvalue(), err.getvalue()


@pytest.fixture(autouse=True)
def reviewer(project: Path) -> Path:
    """Every test's project defines the agent ``data-reviewer`` (``REVIEWER``) and is
    trusted (a project's agents run only then)."""
    path = project / ".claude" / "agents" / "data-reviewer.md"
    path.parent.mkdir(parents=True)
    path.write_text(REVIEWER)
    trust_folder(project)
    return path


def test_reference_format_is_read(project: Path) -> None:
    agent = load_agent(project, "data-reviewer")
    assert agent.name == "data-reviewer" and agent.memory == "project"
    assert agent.tools == ("Read", "Grep", "Glob")  # Bash has no counterpart here
    assert agent.warnings and "Bash" in agent.warnings[0]
    assert agent.prompt.startswith("You review data analyses.")
    assert agent.memory_dir(project) == project / ".claude" / "agent-memory" / "data-reviewer"
    local = parse_agent(project / ".claude" / "agents" / "data-reviewer.md", "project")
    assert local == agent
    assert [a.name for a in find_agents(project)] == ["data-reviewer"]


def test_memory_scopes_and_bad_values(project: Path, isolated_home: Path) -> None:
    path = project / ".claude" / "agents" / "data-reviewer.md"
    path.write_text(REVIEWER.replace("memory: project", "memory: user"))
    base = isolated_home / ".claude"
    assert load_agent(project, "data-reviewer").memory_dir(project) == (
        base / "agent-memory" / "data-reviewer")
    path.write_text(REVIEWER.replace("memory: project", "memory: local"))
    assert load_agent(project, "data-reviewer").memory_dir(project) == (
        project / ".claude" / "agent-memory-local" / "data-reviewer")
    path.write_text(REVIEWER.replace("memory: project", "memory: team"))
    with pytest.raises(ConfigError, match="user, project, local"):
        load_agent(project, "data-reviewer")


def test_context_agent_raw_shows_prompt_and_memory_index(project: Path) -> None:
    memdir = project / ".claude" / "agent-memory" / "data-reviewer"
    memdir.mkdir(parents=True)
    (memdir / "MEMORY.md").write_text("- [Joins](feedback_joins.md) — left joins drop rows\n")
    code, out, err = run("context", "--agent", "data-reviewer", "--raw", "--project", str(project))
    assert code == 0, err
    body = json.loads(out)
    system = "\n".join(block["text"] for block in body["system"])
    assert "You review data analyses." in system
    assert "# Your agent memory index" in system and "(feedback_joins.md)" in system
    assert f'memory folder of your own, as the agent "data-reviewer": `{memdir}`' in system
    first = body["messages"][0]["content"][0]["text"]
    assert "MEMORY.md" not in first  # the agent's index sits in its system prompt
    assert [t["name"] for t in body["tools"]] == ["Read", "Grep", "Glob", "Write", "Edit"]
    code, _, err = run("context", "--agent", "nobody", "--project", str(project))
    assert code != 0 and "No agent named 'nobody'" in err


def test_agent_keeps_its_own_memory(project: Path, fake_api) -> None:
    agent = load_agent(project, "data-reviewer")
    main = Session(project, config=AgentConfig.from_env(max_retries=0, log_transcript=False))
    session = main.child(agent)
    memdir = agent.memory_dir(project)
    assert session.memdir == memdir and session.team_dir is None
    note = ("---\nname: left-joins\ndescription: left joins on customer id drop refunds\n"
            "type: feedback\n---\nCheck refunds after joins.\n")
    fake_api.script([
        Turn(tool_calls=[ToolCall("Write", {"file_path": str(memdir / "feedback_joins.md"),
                                            "content": note})]),
        Turn(text="Noted."),
    ])
    result = run_turn(session, "Review: revenue dropped after the join.")
    assert result.ok
    assert "(feedback_joins.md)" in (memdir / "MEMORY.md").read_text()
    # the next session of this agent starts with that index in its system prompt
    again = Session(project, config=AgentConfig.from_env(log_transcript=False)).child(agent)
    system = "\n".join(b["text"] for b in again.assemble().body["system"])
    assert "left joins on customer id drop refunds" in system


def test_auto_memory_off_means_no_agent_memory(project: Path, monkeypatch) -> None:
    monkeypatch.setenv("CLAUDE_CODE_DISABLE_AUTO_MEMORY", "1")
    main = Session(project, config=AgentConfig.from_env(log_transcript=False))
    session = main.child(load_agent(project, "data-reviewer"))
    assert session.memdir is None and session.store is None
    assert [t["name"] for t in session.assemble().body.get("tools", [])] == ["Read", "Grep", "Glob"]
