"""The public names and the ``%agent status`` line the course notebooks use instead of the
package's modules (issue 29): the selector call, the recall budget, the compaction record,
the offline selector, where memory lives, and the hooks a session loaded."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from shell_helpers import run

from jupyter_memory import (
    last_compaction,
    last_selection,
    memory_location,
    memory_settings,
    model_calls,
    read_memories,
    recall_budget,
    select_offline,
)
from jupyter_memory.errors import ConfigError
from jupyter_memory.localapi import ToolCall, Turn

QUIET = ("Agent.extraction = False", "Agent.session_memory = False")
SUMMARY = ("<analysis>private notes</analysis>\n<summary>\n1. Primary request and intent: "
           "count the **rows**.\n</summary>")


def _memory(memdir: Path, name: str, description: str, body: str) -> None:
    memdir.mkdir(parents=True, exist_ok=True)
    (memdir / f"project_{name}.md").write_text(
        f"---\nname: {name}\ndescription: {description}\ntype: project\n---\n{body}\n",
        encoding="utf-8")


def _selector_turns(body: dict) -> Turn:
    if body.get("tool_choice"):  # the selector's forced tool call
        return Turn(tool_calls=[ToolCall("select_memories",
                                         {"selected_memories": ["project_cents.md"]})])
    return Turn(text="In cents.")


def test_selection_and_budget_of_a_prefetch_turn(make_ip, project, memdir, fake_api) -> None:
    _memory(memdir, "cents", "revenue is stored in integer cents", "Divide by 100.")
    _memory(memdir, "fiscal", "the fiscal year starts in February", "February.")
    ip = make_ip(project, memdir=memdir, config=[*QUIET, "Agent.wait_for_prefetch = True"])
    run(ip, "%memory mode prefetch")
    assert last_selection() is None
    assert recall_budget() == {"memories": 0, "used": 0, "limit": 61_440, "spent": False}

    fake_api.responder = _selector_turns
    run(ip, "%agent how is revenue stored in the ledger table?")
    selection = last_selection()
    assert selection is not None and selection["status"] == "done"
    assert selection["selector"] == "model" and selection["selected"] == ["project_cents.md"]
    assert selection["answer"] == {"selected_memories": ["project_cents.md"]}
    [sent] = [r.body for r in fake_api.requests if r.body.get("tool_choice")]
    assert selection["request"] == {k: v for k, v in sent.items() if k != "stream"}
    [call] = [c for c in model_calls().calls if c.kind == "selector"]
    assert call.body == selection["request"]

    budget = recall_budget()
    assert budget["memories"] == 1 and budget["limit"] == 61_440 and not budget["spent"]
    body = (memdir / "project_cents.md").read_bytes()
    assert len(b"Divide by 100.") <= budget["used"] <= len(body)


def test_last_compaction_is_the_record_compact_showed(make_ip, fake_api) -> None:
    ip = make_ip(config=["Agent.model = 'claude-haiku-4-5'", *QUIET])
    assert last_compaction() is None
    fake_api.script([Turn(text="There are 3 rows."), Turn(text=SUMMARY)])
    run(ip, "%agent how many rows?")
    run(ip, "%compact keep the user's numbers")
    record = last_compaction()
    assert record is not None and record["instructions"] == "keep the user's numbers"
    assert record["summary"] == "1. Primary request and intent: count the **rows**."
    assert record["requests"][-1]["answer"] == SUMMARY
    [summary_call] = [c for c in model_calls().calls if c.kind == "summary"]
    assert "keep the user's numbers" in json.dumps(summary_call.body["messages"][-1])


def test_the_offline_selector_without_a_session(tmp_path) -> None:
    memdir = tmp_path / "memory"
    _memory(memdir, "cents", "revenue is stored in integer cents, not euros", "Divide by 100.")
    _memory(memdir, "fiscal", "the fiscal year starts in February", "February.")
    memories = read_memories(memdir)
    assert sorted(m.file for m in memories) == ["project_cents.md", "project_fiscal.md"]

    choice = select_offline("Is revenue stored in cents or euros?", memories, semantic=False)
    assert choice.files == ["project_cents.md"] and choice.mode == "lexical"
    assert "matched revenu, store, cent" in choice.reason("project_cents.md")
    assert "nothing in the message matches" in choice.reason("project_fiscal.md")
    assert select_offline("Is revenue stored in cents or euros?", str(memdir),
                          semantic=False).files == choice.files
    assert select_offline("What is the capital of Australia?", memdir,
                          semantic=False).files == []

    with pytest.raises(ConfigError, match="is not a folder"):
        read_memories(tmp_path / "missing")


def test_where_memory_lives_for_any_folder_and_environment(tmp_path) -> None:
    project = tmp_path / "sales.v2"
    (project / ".claude").mkdir(parents=True)
    base = tmp_path / "base"
    env = {"HOME": str(tmp_path / "home"), "CLAUDE_CONFIG_DIR": str(base)}
    where = memory_location(project, env)
    key = "".join(c if c.isascii() and c.isalnum() else "-" for c in str(project.resolve()))
    assert where.project_dir == base / "projects" / key
    assert where.memdir == base / "projects" / key / "memory" and where.enabled
    assert not memory_location(project, {**env, "CLAUDE_CODE_DISABLE_AUTO_MEMORY": "1"}).enabled

    hook = {"SessionStart": [{"hooks": [{"type": "command", "command": "echo hi"}]}]}
    (project / ".claude" / "settings.json").write_text(json.dumps(
        {"cleanupPeriodDays": 7, "hooks": hook}))
    found = memory_settings(where.project_root, env)
    assert found.cleanup_period_days == 7 and not found.trusted
    assert not found.source_trusted("project")
    assert "not trusted" in (found.skipped_notice() or "")


def test_agent_status_names_the_hooks_and_their_settings_file(make_ip, project) -> None:
    base = Path(os.environ["CLAUDE_CONFIG_DIR"])
    base.mkdir(parents=True, exist_ok=True)
    ip = make_ip(project, config=QUIET)
    assert "Hooks: none" in run(ip, "%agent status").stdout.splitlines()

    run(ip, "%agent new")
    hooks = {event: [{"hooks": [{"type": "command", "command": "echo hi"}]}]
             for event in ("SessionStart", "Stop")}
    (base / "settings.json").write_text(json.dumps({"hooks": hooks}))
    run(ip, "%agent new")
    lines = run(ip, "%agent status").stdout.splitlines()
    assert "Hooks: SessionStart (user settings), Stop (user settings)" in lines
