"""The agent loop against the local Messages API server, through the real SDK."""

from __future__ import annotations

import os
import threading
import time
from pathlib import Path

import pytest
from sessions import make_session

from jupyter_memory.agent.client import make_client
from jupyter_memory.agent.loop import TurnEvents, run_turn
from jupyter_memory.agent.session import AgentConfig
from jupyter_memory.context.assemble import MAX_BREAKPOINTS, count_breakpoints, digest
from jupyter_memory.context.request_parts import record_parts, request_body
from jupyter_memory.localapi import Fault, ToolCall, Turn

OLD = time.time() - 5 * 86_400


# Every session here works on the test's memdir (the `memdir` fixture, tests/conftest.py).
pytestmark = pytest.mark.usefixtures("memdir")


def check_consistent(messages: list[dict]) -> None:
    """Every tool_use has its tool_result in the next message, and roles alternate."""
    for i, message in enumerate(messages):
        uses = [b["id"] for b in message["content"] if b.get("type") == "tool_use"]
        if uses:
            assert i + 1 < len(messages), "dangling tool_use at the end"
            results = {
                b["tool_use_id"]
                for b in messages[i + 1]["content"]
                if b.get("type") == "tool_result"
            }
            assert set(uses) <= results


def test_plain_answer_streams_and_records(fake_api, project):
    fake_api.script([Turn(text="The answer is 42.")])
    session = make_session(project)
    chunks: list[str] = []
    result = run_turn(session, "What is six times seven?", events=TurnEvents(on_text=chunks.append))
    assert result.ok and result.answer == "The answer is 42."
    assert "".join(chunks) == "The answer is 42."
    assert len(chunks) > 1  # it streamed
    assert [m["role"] for m in session.messages] == ["user", "assistant"]
    record = result.record
    assert record["prompt"] == "What is six times seven?"
    body = request_body(record["requests"][0], record_parts(record))
    assert body["messages"][0]["content"][-1]["text"].startswith("What is six")
    assert digest(body) == record["requests"][0]["digest"]
    assert record["usage"]["output_tokens"] > 0
    req = fake_api.requests[0]
    assert req.body["stream"] is True


def test_read_memory_gets_staleness_reminder(fake_api, project):
    session = make_session(project)
    store = session.store
    store.create(
        "revenue-in-cents",
        "sales.revenue is stored in cents",
        "project",
        "The revenue column holds integer cents.",
    )
    path = session.memdir / store.get("revenue-in-cents").file
    os.utime(path, (OLD, OLD))
    fake_api.script(
        [
            Turn(tool_calls=[ToolCall("Read", {"file_path": str(path)})]),
            Turn(text="Revenue is in cents."),
        ]
    )
    result = run_turn(session, "How is revenue stored?")
    assert result.ok
    second = fake_api.requests[1].body
    results = [
        b for m in second["messages"] for b in m["content"] if b.get("type") == "tool_result"
    ]
    assert len(results) == 1
    text = (
        results[0]["content"]
        if isinstance(results[0]["content"], str)
        else results[0]["content"][0]["text"]
    )
    assert "<system-reminder>" in text and "5 days" in text
    assert "integer cents" in text
    check_consistent(session.messages)


def test_write_memory_through_write_tool_updates_index(fake_api, project):
    session = make_session(project, maintain_index=True)
    memdir = session.memdir
    content = (
        "---\nname: no-full-frames\ndescription: never print whole data frames\n"
        "type: feedback\n---\nShow .head() and the shape.\n\n**Why:** frames are huge.\n"
        "**How to apply:** every time a frame is shown.\n"
    )
    fake_api.script(
        [
            Turn(
                tool_calls=[
                    ToolCall(
                        "Write",
                        {
                            "file_path": str(memdir / "feedback_no_full_frames.md"),
                            "content": content,
                        },
                    )
                ]
            ),
            Turn(text="Saved."),
        ]
    )
    result = run_turn(session, "Remember: never print whole frames.")
    assert result.ok
    written = (memdir / "feedback_no_full_frames.md").read_text()
    assert written.startswith(
        "---\nname: no-full-frames\ndescription: never print whole data frames"
    )
    assert "origin: agent" in written and written.endswith(content.split("---\n", 2)[2])
    assert "feedback_no_full_frames.md" in (memdir / "MEMORY.md").read_text()
    assert result.record["memories_written"] == [
        {"file": "feedback_no_full_frames.md", "by": "agent"}
    ]


def test_write_outside_memdir_is_refused(fake_api, project, tmp_path):
    session = make_session(project, permission_mode="deny")
    target = tmp_path / "elsewhere.txt"
    fake_api.script(
        [
            Turn(tool_calls=[ToolCall("Write", {"file_path": str(target), "content": "x"})]),
            Turn(text="I could not write it."),
        ]
    )
    result = run_turn(session, "write a file outside")
    assert result.ok and not target.exists()
    tool_result = fake_api.requests[1].body["messages"][-1]["content"][0]
    assert tool_result["type"] == "tool_result" and tool_result["is_error"] is True


def test_run_python_denied_without_permission(fake_api, project):
    session = make_session(project, permission_mode="deny")
    from jupyter_memory.agent.tools import DictNamespace

    ns: dict = {}
    session.tool_context(namespace=DictNamespace(ns))
    fake_api.script(
        [
            Turn(tool_calls=[ToolCall("RunPython", {"code": "x = 1"})]),
            Turn(text="Not allowed."),
        ]
    )
    result = run_turn(session, "set x")
    assert result.ok and "x" not in ns
    tool_result = fake_api.requests[1].body["messages"][-1]["content"][0]
    assert tool_result["is_error"] is True and "Permission denied" in str(tool_result["content"])


@pytest.mark.parametrize(
    ("fault", "words"),
    [
        ("rate_limit", "Rate limited"),
        ("overloaded", "overloaded"),
        ("api_error", "error (500)"),
        ("authentication", "credentials"),
        ("prompt_too_long", "%compact"),
        ("drop", "connection"),
        ("garbage", "not valid JSON"),
    ],
)
def test_faults_give_clear_message_and_roll_back(fake_api, project, fault, words):
    session = make_session(project)
    fake_api.script([Turn(text="never seen")])
    fake_api.fail_next(fault)
    result = run_turn(session, "hello")
    assert result.status == "error"
    assert words.lower() in result.error.lower()
    assert session.messages == []  # nothing reached the model: the turn is rolled back


def test_sdk_retries_transient_errors(fake_api, project):
    session = make_session(project)
    session.config = AgentConfig.from_env(max_retries=2)
    fake_api.script([Turn(text="fine after retry")])
    fake_api.fail_next(Fault("overloaded"))
    result = run_turn(session, "hello")
    assert result.ok and result.answer == "fine after retry"


def test_fault_after_a_tool_round_keeps_conversation_consistent(fake_api, project):
    session = make_session(project)
    fake_api.script([Turn(tool_calls=[ToolCall("Glob", {"pattern": "*.md"})])])
    # the second call finds no scripted turn: a 500
    result = run_turn(session, "list files")
    assert result.status == "error"
    check_consistent(session.messages)
    assert session.messages[-1]["role"] == "user"


def test_interrupted_stream_leaves_conversation_consistent(fake_api, project):
    session = make_session(project)
    fake_api.script([Turn(text="one two three four five six seven eight nine ten", delay=0.05)])
    main = threading.get_ident()
    seen: list[str] = []

    def on_text(chunk: str) -> None:
        seen.append(chunk)
        if len(seen) == 2 and threading.get_ident() == main:
            raise KeyboardInterrupt

    result = run_turn(session, "count", events=TurnEvents(on_text=on_text))
    assert result.status == "interrupted"
    assert [m["role"] for m in session.messages] == ["user", "assistant"]
    assert "interrupted" in session.messages[-1]["content"][0]["text"]
    # the next turn works and the server accepts the conversation
    fake_api.script([Turn(text="ok")])
    assert run_turn(session, "again").ok


def test_interrupt_during_tool_closes_every_tool_use(fake_api, project):
    session = make_session(project)
    fake_api.script(
        [
            Turn(
                tool_calls=[
                    ToolCall("Glob", {"pattern": "*"}),
                    ToolCall("Glob", {"pattern": "*.py"}),
                ]
            )
        ]
    )
    calls = []

    def on_tool_start(use):
        calls.append(use)
        if len(calls) == 2:
            raise KeyboardInterrupt

    result = run_turn(session, "go", events=TurnEvents(on_tool_start=on_tool_start))
    assert result.status == "interrupted"
    check_consistent(session.messages)
    from jupyter_memory.agent.loop import INTERRUPTED_TOOL

    assert session.messages[-1]["role"] == "assistant"  # the interruption is noted
    results = [r for r in session.messages[-2]["content"] if r["type"] == "tool_result"]
    assert len(results) == 2
    assert not results[0].get("is_error")
    assert results[1]["is_error"] is True and results[1]["content"] == INTERRUPTED_TOOL
    fake_api.script([Turn(text="ok")])
    assert run_turn(session, "again").ok


def test_every_request_has_at_most_four_breakpoints(fake_api, project):
    session = make_session(project)
    fake_api.script(
        [
            Turn(tool_calls=[ToolCall("Glob", {"pattern": "*"})]),
            Turn(text="a"),
            Turn(text="b"),
            Turn(tool_calls=[ToolCall("Grep", {"pattern": "x"})]),
            Turn(text="c"),
        ]
    )
    for prompt in ("one", "two", "three"):
        assert run_turn(session, prompt).ok
    assert len(fake_api.requests) == 5
    for req in fake_api.requests:
        assert count_breakpoints(req.body) <= MAX_BREAKPOINTS


def test_cache_reads_dominate_a_long_session(fake_api, project):
    session = make_session(project)
    fake_api.script([Turn(text=f"answer {i} " + "detail " * 30) for i in range(10)])
    results = [run_turn(session, f"question {i}") for i in range(10)]
    assert all(r.ok for r in results)
    total = sum(r.usage.total_input for r in results)
    read = sum(r.usage.cache_read_input_tokens for r in results)
    assert read / total > 0.75
    assert results[0].usage.cache_read_input_tokens == 0


def test_no_model_configured_explains_how_to_connect(project, monkeypatch):
    from jupyter_memory.agent.client import NoModelConfigured

    with pytest.raises(NoModelConfigured, match="ANTHROPIC_API_KEY"):
        make_client({})


def test_turns_are_mirrored_to_the_jsonl_log(fake_api, project):
    from jupyter_memory.transcript.reader import read_entries
    from jupyter_memory.transcript.rebuild import rebuild_conversation

    session = make_session(project)
    fake_api.script([
        Turn(tool_calls=[ToolCall("Glob", {"pattern": "*"})]),
        Turn(text="No files yet."),
        Turn(text="Second answer."),
    ])
    assert run_turn(session, "what files are there?").ok
    assert run_turn(session, "and now?").ok
    path = session.log.path
    assert path.is_file() and (path.stat().st_mode & 0o777) == 0o600
    assert path.parent.parent.name == "projects"
    entries = read_entries(path)
    assert [e["type"] for e in entries] == ["user", "assistant", "user", "assistant", "user",
                                             "assistant"]
    assert entries[1]["message"]["usage"]["output_tokens"] >= 0
    rebuilt = rebuild_conversation(entries)
    strip = [{"role": m["role"], "content": m["content"]} for m in session.messages]
    assert [{"role": m["role"], "content": m["content"]} for m in rebuilt] == strip


def test_rolled_back_turn_leaves_no_log(fake_api, project):
    session = make_session(project)
    fake_api.fail_next("api_error")
    assert run_turn(session, "hello").status == "error"
    assert not session.log.path.exists()


def test_slow_stream_still_completes(fake_api, project):
    session = make_session(project)
    fake_api.script([Turn(text="slow but sure")])
    fake_api.fail_next(Fault("slow", delay=0.02))
    result = run_turn(session, "take your time")
    assert result.ok and result.answer == "slow but sure"


def test_reference_mode_agent_writes_topic_file_then_index(fake_api, project):
    """With maintain_index off (the reference), the agent does both steps itself."""
    session = make_session(project)
    memdir = session.memdir
    topic = ("---\nname: fiscal-year\ndescription: the fiscal year starts on 1 April\n"
             "type: project\n---\nFiscal year starts 1 April.\n")
    fake_api.script([
        Turn(tool_calls=[ToolCall("Write", {"file_path": str(memdir / "project_fiscal_year.md"),
                                             "content": topic})]),
        Turn(tool_calls=[ToolCall("Write", {
            "file_path": str(memdir / "MEMORY.md"),
            "content": "- [Fiscal year](project_fiscal_year.md) — starts 1 April\n"})]),
        Turn(text="Saved."),
    ])
    assert run_turn(session, "Remember the fiscal year starts in April.").ok
    assert (memdir / "MEMORY.md").read_text().startswith("- [Fiscal year](project_fiscal_year.md)")
    assert session.store.get("fiscal-year").indexed


def test_orphan_stays_invisible_in_reference_mode(fake_api, project):
    """Step 2 forgotten: the topic file exists but the index never mentions it."""
    session = make_session(project)
    memdir = session.memdir
    fake_api.script([
        Turn(tool_calls=[ToolCall("Write", {
            "file_path": str(memdir / "project_ghost.md"),
            "content": "---\nname: ghost\ndescription: a ghost memory\ntype: project\n---\nBoo.\n"})]),
        Turn(text="Saved."),
    ])
    assert run_turn(session, "remember boo").ok
    assert not session.store.get("ghost").indexed
    session.refresh_context()
    context = session.assemble().body["messages"][0]["content"][0]["text"]
    assert "MEMORY.md" in context and "project_ghost.md" not in context


def test_messages0_holds_instruction_tree_in_scope_order(project, tmp_path, monkeypatch):
    home = Path(os.environ["CLAUDE_CONFIG_DIR"])
    home.mkdir(parents=True, exist_ok=True)
    (home / "CLAUDE.md").write_text("USER-RULE\n")
    parent = project.parent
    (parent / "CLAUDE.md").write_text("ANCESTOR-RULE\n")
    (project / "CLAUDE.md").write_text("PROJECT-RULE\n@./extra.md\n@./missing.md\n")
    (project / "extra.md").write_text("IMPORTED-RULE\n@./CLAUDE.md\n")
    (project / "CLAUDE.local.md").write_text("LOCAL-RULE\n<!-- hidden -->\n")
    rules = project / ".claude" / "rules"
    rules.mkdir(parents=True)
    (rules / "style.md").write_text("RULE-ALWAYS\n")
    (rules / "sql.md").write_text("---\npaths: ['**/*.sql']\n---\nRULE-SQL\n")
    session = make_session(project)
    context = session.assemble().body["messages"][0]["content"][0]["text"]
    order = [context.index(w) for w in ("USER-RULE", "ANCESTOR-RULE", "PROJECT-RULE",
                                        "IMPORTED-RULE", "LOCAL-RULE", "RULE-ALWAYS")]
    assert order == sorted(order)
    assert "RULE-SQL" not in context and "hidden" not in context
    assert context.count("PROJECT-RULE") == 1  # the import cycle did not repeat it
    assert f"Contents of {home / 'CLAUDE.md'}" in context
    assert str(project / "CLAUDE.local.md") in context
