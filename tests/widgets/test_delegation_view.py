"""The turn view shows what a delegated agent did (agent/delegation.py), as text: the
agent's name, task and answer are model output and never become live markup."""

from __future__ import annotations

from typing import Any

from jupyter_memory.widgets.render import delegation_facts, turn_html, turn_markdown

HOSTILE = "<img src=x onerror=alert(1)>"


def record() -> dict[str, Any]:
    return {
        "answer": "The reviewer found the join drops refunds.",
        "tool_calls": [{"id": "toolu_1", "name": "Agent", "input": {"subagent_type": "r"},
                        "result": "ok"}],
        "delegations": [{
            "agent": f"reviewer{HOSTILE}", "agent_id": "a1", "description": f"Check {HOSTILE}",
            "prompt": f"Review {HOSTILE}", "model": "claude-haiku-4-5", "status": "ok",
            "answer": f"Found it {HOSTILE}", "tool_use_id": "toolu_1",
            "tool_calls": [{"id": "toolu_2", "name": "Read", "input": {"file_path": "a.py"},
                            "result": "x"}],
            "usage": {"input_tokens": 10, "output_tokens": 5, "cache_read_input_tokens": 0,
                      "cache_creation_input_tokens": 0},
            "requests": [], "memdir": None,
            "memories_written": [{"file": "project_join.md", "by": "agent"}],
            "transcript": "/tmp/s/subagents/agent-a1.jsonl",
        }],
    }


def test_the_facts_of_a_delegation() -> None:
    facts = delegation_facts(record()["delegations"][0])
    assert facts[:2] == ["ok", "1 tool call (Read)"]
    assert facts[-1] == "saved project_join.md in its own memory"
    failed = delegation_facts({"status": "error", "error": "overloaded", "tool_calls": []})
    assert failed == ["error", "overloaded", "0 tool calls"]


def test_the_views_show_a_delegation_and_keep_its_text_inert() -> None:
    html = turn_html(record())
    assert "jupyter-memory-delegation" in html and "agent-a1.jsonl" in html
    assert HOSTILE not in html and "&lt;img src=x onerror=alert(1)&gt;" in html
    markdown = turn_markdown(record())
    assert "**Delegated to <code>reviewer" in markdown
    assert HOSTILE not in markdown
    assert "saved project\\_join.md in its own memory" in markdown
