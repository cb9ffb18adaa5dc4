"""Compaction against the local Messages API server: levels, microcompact, summaries, undo."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from sessions import make_session as shared_session

from jupyter_memory.agent.compaction import (
    CLEARED_MARKER,
    FILE_KIND,
    FILE_TOKENS,
    MAX_FILES,
    SUMMARY_KIND,
    SUMMARY_REQUEST_HEAD,
    SUMMARY_SECTIONS,
    CompactionHook,
    NothingToCompact,
    NothingToUndo,
    SummaryFailed,
    compact,
    drop_point,
    estimate_next_request,
    extract_summary,
    microcompact,
    session_thresholds,
    state_of,
    undo,
)
from jupyter_memory.agent.compaction.restore import restore_files
from jupyter_memory.agent.loop import run_turn
from jupyter_memory.agent.session import AgentConfig, Session
from jupyter_memory.localapi import ToolCall, Turn
from jupyter_memory.memdir.gateway import Root, Roots
from jupyter_memory.recall.conversation import budget_used

MODEL = "claude-haiku-4-5"  # a 200K window
SUMMARY = (
    "<analysis>Scratch thoughts that must not survive.</analysis>\n"
    "<summary>\n1. Primary request and intent: read the big files.\n"
    "9. Optional next step: none.\n</summary>"
)


# Every session here works on the test's memdir (the `memdir` fixture, tests/conftest.py).
pytestmark = pytest.mark.usefixtures("memdir")


class NoCompaction(CompactionHook):
    """A compactor that never acts: compaction only when the test calls it."""

    def before_call(self, turn, round_index):  # type: ignore[no-untyped-def]
        return None


def make_session(project: Path, hook: bool = True, **hook_args) -> Session:
    session = shared_session(project, model=MODEL)
    # The session's compactor is a field: swap it for one configured by the test.
    session.compactor = CompactionHook(session, **hook_args) if hook else NoCompaction(session)
    return session


def last_user_text(body: dict) -> str:
    message = body["messages"][-1]
    return "".join(b.get("text", "") for b in message["content"] if b.get("type") == "text")


def is_summary_request(body: dict) -> bool:
    return SUMMARY_REQUEST_HEAD in last_user_text(body)


def summary_turn(text: str = SUMMARY) -> Turn:
    return Turn(text=text, expect=is_summary_request)


def not_summary(body: dict) -> bool:
    return not is_summary_request(body)


def body_text(body: dict) -> str:
    return json.dumps(body["messages"], ensure_ascii=False)


def big_file(folder: Path, name: str, lines: int = 800) -> Path:
    path = folder / name
    row = f"{name} " + "x" * (91 - len(name))
    path.write_text("\n".join(f"{row}{i:06d}" for i in range(lines)) + "\n")
    return path


def usage(total: int) -> dict[str, int]:
    """A reply whose prompt cost exactly ``total`` tokens."""
    return {"input_tokens": total, "cache_read_input_tokens": 0, "cache_creation_input_tokens": 0,
            "output_tokens": 10}


def read_pair(i: int, name: str, content: str, tool: str = "Read") -> list[dict]:
    uid = f"toolu_{i:04d}"
    return [
        {"role": "assistant", "content": [
            {"type": "tool_use", "id": uid, "name": tool, "input": {"file_path": name}}]},
        {"role": "user", "content": [
            {"type": "tool_result", "tool_use_id": uid, "content": content}]},
    ]


# ------------------------------------------------------------------------- levels


def test_thresholds_of_a_200k_model(project):
    th = session_thresholds(make_session(project, hook=False))
    assert (th.window, th.effective, th.autocompact, th.warning, th.blocking) == (
        200_000, 180_000, 167_000, 147_000, 177_000)
    assert th.autocompact_buffer == 33_000
    assert th.level(150_000) == "warning" and th.level(170_000) == "autocompact"


def test_context_window_setting_gives_a_small_window_its_levels(project):
    from jupyter_memory.context.assemble import render_text
    from jupyter_memory.errors import ConfigError

    config = AgentConfig.from_env(model=MODEL, context_window=60_000)
    session = Session(project, config=config)
    th = session_thresholds(session)
    # The same formula as for 200K: E = 60,000 - min(64,000, 20,000).
    assert (th.window, th.effective, th.warning, th.autocompact, th.blocking) == (
        60_000, 40_000, 7_000, 27_000, 37_000)
    report = session.context_report()
    assert report.window == 60_000 and report.thresholds == th
    assert report.to_json()["model_window"] == 200_000
    assert "set by Agent.context_window (claude-haiku-4-5's own is 200,000)" in render_text(report)
    # Only a smaller window counts: the endpoint refuses what the model cannot hold.
    bigger = Session(project, config=AgentConfig.from_env(model=MODEL, context_window=500_000))
    assert session_thresholds(bigger).window == 200_000
    assert "model_window" not in bigger.context_report().to_json()
    with pytest.raises(ConfigError, match="at least 60,000"):
        AgentConfig.from_env(model=MODEL, context_window=20_000)


def test_estimate_uses_last_usage_plus_new_messages(fake_api, project):
    session = make_session(project, hook=False)
    fake_api.script([Turn(text="hi", usage=usage(50_000))])
    run_turn(session, "hello")
    assert estimate_next_request(session) == 50_010
    session.messages.append({"role": "user", "content": [{"type": "text", "text": "y" * 4000}]})
    assert estimate_next_request(session) == 50_010 + 4 + 1000


# ------------------------------------------------------------------------- automatic


def test_large_tool_results_compact_automatically_and_the_session_continues(fake_api, project):
    files = [big_file(project, f"big_{i}.txt") for i in range(8)]
    session = make_session(project)
    fake_api.script([
        Turn(tool_calls=[ToolCall("Read", {"file_path": str(p)}) for p in files[:7]]),
        Turn(text="Read seven files."),
        Turn(tool_calls=[ToolCall("Read", {"file_path": str(files[7])})]),
        summary_turn(),
        Turn(text="Done with all eight.", expect=not_summary),
        Turn(text="Still here.", expect=not_summary),
    ])
    first = run_turn(session, "Read the first seven files.")
    assert first.ok
    assert any(e["kind"] == "warning" for e in first.record["events"])  # past 147K, under 167K
    assert not state_of(session).results

    second = run_turn(session, "Now read the eighth.")
    assert second.ok and second.answer == "Done with all eight."
    [made] = second.record["compactions"]
    assert made["trigger"] == "auto" and made["method"] == "model"
    assert made["pre_tokens"] >= 167_000 > made["post_tokens"]
    assert any(e["kind"] == "compaction" for e in second.record["events"])

    after = fake_api.requests[4].body  # the call right after the summary
    text = body_text(after)
    assert "Primary request and intent: read the big files." in text
    assert "Scratch thoughts" not in text
    assert "Read the first seven files." not in text  # turn 1 is gone...
    assert "Now read the eighth." in text  # ...the turn in progress stays verbatim
    reattached = [m for m in session.messages if (m.get("_meta") or {}).get("kind") == FILE_KIND]
    assert [Path(m["_meta"]["path"]).name for m in reattached] == [
        "big_6.txt", "big_5.txt", "big_4.txt", "big_3.txt", "big_2.txt"]
    assert all(m["_meta"]["truncated"] for m in reattached)

    entries = [json.loads(x) for x in session.log.path.read_text().splitlines()]
    at = next(i for i, e in enumerate(entries) if e.get("subtype") == "compact_boundary")
    after = [e for e in entries[at + 1 :] if e["type"] == "user"]
    assert after[0].get("isCompactSummary")  # the log mirrors the live conversation:
    files = [e for e in after[1:] if e.get("isMeta")]  # the re-attached files, as sent
    assert len(files) == len(reattached) and "big_6.txt" in json.dumps(files[0]["message"])
    prompt = next(e for e in after[1:] if not e.get("isMeta"))
    assert prompt["message"]["content"][-1]["text"] == "Now read the eighth."

    third = run_turn(session, "Are you still there?")
    assert third.ok and third.answer == "Still here."
    assert fake_api.remaining == 0 and fake_api.failures == []


def test_request_after_compaction_is_boundary_summary_and_files(fake_api, project):
    (project / "a.txt").write_text("alpha\n")
    (project / "b.txt").write_text("beta\n")
    session = make_session(project)
    fake_api.script([
        Turn(tool_calls=[ToolCall("Read", {"file_path": "a.txt"}),
                         ToolCall("Read", {"file_path": "b.txt"})]),
        Turn(text="Both read.", usage=usage(170_000)),
        summary_turn(),
        Turn(text="Answer after compaction.", expect=not_summary),
    ])
    run_turn(session, "Read a and b.")
    result = run_turn(session, "What next?")
    assert result.ok and result.record["compactions"][0]["trigger"] == "auto"
    body = fake_api.requests[-1].body
    assert len(body["messages"]) == 1  # everything is one user message now
    blocks = body["messages"][0]["content"]
    assert len(blocks) == 5
    assert blocks[0]["text"].startswith("<system-reminder>")  # instructions, index, date
    assert blocks[1]["text"].startswith("This session continues an earlier conversation")
    assert "read the big files" in blocks[1]["text"]
    assert "b.txt" in blocks[2]["text"] and "beta" in blocks[2]["text"]  # most recent first
    assert "a.txt" in blocks[3]["text"] and "alpha" in blocks[3]["text"]
    assert blocks[4]["text"] == "What next?"
    summary = session.messages[0]
    assert summary["_meta"]["kind"] == SUMMARY_KIND
    boundary = summary["_meta"]["compact_boundary"]
    assert boundary["trigger"] == "auto" and boundary["pre_tokens"] >= 170_000


def test_warning_is_noted_between_warning_and_autocompact(fake_api, project):
    session = make_session(project)
    fake_api.script([Turn(text="one", usage=usage(150_000)), Turn(text="two")])
    run_turn(session, "first")
    result = run_turn(session, "second")
    warnings = [e["text"] for e in result.record["events"] if e["kind"] == "warning"]
    assert len(warnings) == 1 and "automatic compaction starts at 167,000" in warnings[0]
    assert len(fake_api.requests) == 2  # no summary call


def test_warning_says_when_automatic_compaction_is_off(fake_api, project):
    session = make_session(project, auto=False)
    fake_api.script([Turn(text="one", usage=usage(170_000)), Turn(text="two")])
    run_turn(session, "first")
    result = run_turn(session, "second")
    warnings = [e["text"] for e in result.record["events"] if e["kind"] == "warning"]
    assert warnings == [warnings[0]] and warnings[0].endswith(
        "automatic compaction is off, and requests are refused from 177,000.")


def test_blocking_level_refuses_with_a_clear_error(fake_api, project):
    session = make_session(project, auto=False)
    fake_api.script([Turn(text="one", usage=usage(178_000))])
    run_turn(session, "first")
    before = list(session.messages)
    result = run_turn(session, "second")
    assert result.status == "error"
    assert "blocking level of 177,000" in result.error and "%compact" in result.error
    assert session.messages == before  # the refused prompt was rolled back
    assert len(fake_api.requests) == 1


def test_context_report_counts_what_a_refused_call_left_like_the_levels_do(fake_api, project):
    from jupyter_memory.context.assemble import render_text

    session = make_session(project, auto=False)
    path = big_file(project, "big.txt")
    fake_api.script([Turn(tool_calls=[ToolCall("Read", {"file_path": str(path)})],
                          usage=usage(170_000))])
    result = run_turn(session, "read it")
    assert result.status == "error" and "blocking level" in result.error
    assert session.messages[-1]["content"][0]["type"] == "tool_result"  # kept, not sent
    report = session.context_report()
    assert report.used == estimate_next_request(session) > 177_000
    assert report.since_usage == report.used - 170_010 and report.level == "blocking"
    assert f"an estimate of the {report.since_usage:,} tokens added since" in render_text(report)


def test_three_failures_open_the_breaker(fake_api, project):
    session = make_session(project)
    fake_api.script([Turn(text="turn 1", usage=usage(168_000))])
    run_turn(session, "turn 1")
    for n in range(2, 5):
        fake_api.fail_next("api_error")
        fake_api.push(Turn(text=f"turn {n}", usage=usage(168_000), expect=not_summary))
        result = run_turn(session, f"turn {n}")
        assert result.ok
        assert any("Automatic compaction failed" in e["text"] for e in result.record["events"])
    state = state_of(session)
    assert state.breaker_open and state.consecutive_failures == 3
    assert any("off for the rest" in e["text"] for e in result.record["events"])

    count = len(fake_api.requests)
    fake_api.push(Turn(text="turn 5", usage=usage(168_000), expect=not_summary))
    result = run_turn(session, "turn 5")
    assert result.ok and len(fake_api.requests) == count + 1  # no summary attempt
    assert any("off for the rest" in e["text"] for e in result.record["events"])

    fake_api.push(summary_turn())
    compact(session)  # a manual success closes the breaker again
    assert not state.breaker_open and state.consecutive_failures == 0


def test_a_breaker_opened_during_a_turn_is_announced_once(fake_api, project):
    session = make_session(project)
    fake_api.script([Turn(text="turn 1", usage=usage(168_000))])
    run_turn(session, "turn 1")
    scratchpad = Turn(text="<analysis>no summary follows</analysis>", expect=is_summary_request)
    for _ in range(3):  # each model call of the turn is preceded by a failed attempt
        fake_api.push(scratchpad)
        fake_api.push(Turn(tool_calls=[ToolCall("Glob", {"pattern": "*.txt"})],
                           usage=usage(168_000), expect=not_summary))
    fake_api.push(Turn(text="done", usage=usage(168_000), expect=not_summary))
    result = run_turn(session, "turn 2")
    assert result.ok and state_of(session).breaker_open
    texts = [e["text"] for e in result.record["events"]]
    assert sum("Automatic compaction failed:" in t for t in texts) == 3
    assert sum("off for the rest" in t for t in texts) == 1


# ------------------------------------------------------------------------- microcompact


def test_microcompact_clears_all_but_the_newest_five(project):
    session = make_session(project, hook=False)
    messages = [{"role": "user", "content": [{"type": "text", "text": "go"}]}]
    for i in range(8):
        messages += read_pair(i, f"f{i}.txt", f"content of file {i} " * 50)
    messages += read_pair(99, "x", "kernel says hi", tool="NotCompactable")
    session.messages[:] = messages
    originals = list(messages)

    assert microcompact(session) == 3
    results = [b for m in session.messages for b in m["content"] if b["type"] == "tool_result"]
    assert [b["content"] == CLEARED_MARKER for b in results] == [True] * 3 + [False] * 6
    assert results[-1]["content"] == "kernel says hi"
    assert originals[2]["content"][0]["content"].startswith("content of file 0")  # copies
    assert microcompact(session) == 0  # nothing left to clear

    undo(session)
    assert all(a is b for a, b in zip(session.messages, originals, strict=True))
    with pytest.raises(NothingToUndo):
        undo(session)


def test_idle_hour_triggers_microcompact_before_the_next_call(fake_api, project):
    for i in range(7):
        (project / f"f{i}.txt").write_text(f"file {i}\n" * 20)
    now = [1_000_000.0]
    session = make_session(project, clock=lambda: now[0])
    fake_api.script([
        Turn(tool_calls=[ToolCall("Read", {"file_path": f"f{i}.txt"}) for i in range(7)]),
        Turn(text="Read them."),
        Turn(text="Thirty minutes later."),
        Turn(text="An hour later."),
    ])
    run_turn(session, "read")
    now[0] += 30 * 60
    run_turn(session, "still there?")
    assert CLEARED_MARKER not in body_text(fake_api.requests[-1].body)
    now[0] += 61 * 60
    result = run_turn(session, "and now?")
    assert body_text(fake_api.requests[-1].body).count(CLEARED_MARKER) == 2
    assert any("idle" in e["text"] for e in result.record["events"])
    assert len(fake_api.requests) == 4  # model-free


# ------------------------------------------------------------------------- the summary


def test_summary_request_has_nine_sections_and_custom_instructions(fake_api, project):
    (project / "CLAUDE.md").write_text(
        "Use pandas.\n\n## Compact Instructions\nKeep every revenue figure.\n\n## Other\nx\n")
    session = make_session(project, hook=False)
    fake_api.script([Turn(text="Revenue is 42."), summary_turn()])
    run_turn(session, "What is the revenue?")
    result = compact(session, instructions="Focus on the plotting code.")
    prompt = last_user_text(fake_api.requests[-1].body)
    for name in SUMMARY_SECTIONS:
        assert name in prompt
    assert "Keep every revenue figure." in prompt and "Focus on the plotting code." in prompt
    assert "What is the revenue?" in body_text(fake_api.requests[-1].body)
    assert result.method == "model" and result.attempts == 1
    assert "Scratch thoughts" not in result.summary and "<summary>" not in result.summary
    assert str(session.log.path) in session.messages[0]["content"][0]["text"]


def test_the_record_keeps_the_summary_answer_as_given(fake_api, project):
    """The scratchpad is dropped from the summary but kept in the record, so a notebook
    can show what the model wrote and what of it the conversation kept."""
    session = make_session(project, hook=False)
    fake_api.script([Turn(text="Revenue is 42."), summary_turn()])
    run_turn(session, "What is the revenue?")
    record = compact(session).to_json()
    [request] = record["requests"]
    assert request["answer"] == SUMMARY
    assert "Scratch thoughts" not in record["summary"]
    assert record["summary"] in request["answer"]


def test_extract_summary_handles_cut_and_untagged_replies():
    assert extract_summary("<analysis>a</analysis><summary>S</summary>") == "S"
    assert extract_summary("<analysis>a</analysis>\n<summary>cut off") == "cut off"
    assert extract_summary("plain text summary") == "plain text summary"
    assert extract_summary("<analysis>never finished") == ""


def test_too_long_summary_request_retries_dropping_oldest_rounds(fake_api, project):
    session = make_session(project, hook=False)
    fake_api.script([Turn(text=f"answer {i}") for i in range(6)])
    for i in range(6):
        run_turn(session, f"question {i}")
    fake_api.fail_next("prompt_too_long", times=2)
    fake_api.push(summary_turn())
    start = len(fake_api.requests)
    result = compact(session)
    sent = [r.body for r in fake_api.requests[start:]]
    assert len(sent) == 3 and result.attempts == 3 and result.dropped_messages > 0
    asked = [sum(f"question {i}" in body_text(b) for i in range(6)) for b in sent]
    assert asked[0] == 6 and asked[0] > asked[1] > asked[2] >= 1
    assert "left out of this summary request" in body_text(sent[2])
    assert "question 0" in body_text(sent[0]) and "question 0" not in body_text(sent[2])
    assert "question 5" in body_text(sent[2])


def test_summary_failure_leaves_the_conversation_alone(fake_api, project):
    session = make_session(project, hook=False)
    fake_api.script([Turn(text=f"answer {i}") for i in range(6)])
    for i in range(6):
        run_turn(session, f"question {i}")
    before = list(session.messages)
    fake_api.fail_next("prompt_too_long", times=4)
    with pytest.raises(SummaryFailed, match="too long for a summary request after 4 attempts"):
        compact(session)
    assert session.messages == before and not state_of(session).undo


def test_drop_point_never_orphans_a_tool_result():
    messages = [{"role": "user", "content": [{"type": "text", "text": "q" * 400}]}]
    messages += read_pair(1, "a", "r" * 4000)
    messages += [{"role": "assistant", "content": [{"type": "text", "text": "done"}]}]
    # One round: it may start on the assistant's call, never on its result...
    assert drop_point(messages, 50) == 1
    assert drop_point(messages, 200) == 3
    assert drop_point(messages, 10_000) == 3  # ...and at least one message stays
    two_rounds = [*messages, {"role": "user", "content": [{"type": "text", "text": "next"}]}]
    assert drop_point(two_rounds, 50) == 4  # whole rounds when there are several
    assert drop_point(messages[:1], 10) is None


def test_nothing_to_compact_on_an_empty_conversation(project):
    with pytest.raises(NothingToCompact):
        compact(make_session(project, hook=False))


# ------------------------------------------------------------------------- after compaction


def test_undo_restores_the_previous_conversation_and_keeps_later_turns(fake_api, project):
    session = make_session(project, hook=False)
    fake_api.script([Turn(text="one"), summary_turn(), Turn(text="two")])
    run_turn(session, "first")
    before = list(session.messages)
    compact(session)
    assert session.messages[0]["_meta"]["kind"] == SUMMARY_KIND
    run_turn(session, "second")
    entry = undo(session)
    assert entry.kind == "compact"
    assert all(a is b for a, b in zip(session.messages[:2], before, strict=True))
    assert [m["role"] for m in session.messages] == ["user", "assistant", "user", "assistant"]
    assert session.messages[2]["content"][-1]["text"] == "second"


def test_boundary_and_summary_are_logged(fake_api, project):
    session = make_session(project, hook=False)
    fake_api.script([Turn(text="one"), summary_turn()])
    run_turn(session, "first")
    result = compact(session, instructions="short")
    entries = [json.loads(line) for line in session.log.path.read_text().splitlines()]
    boundary = next(e for e in entries if e.get("subtype") == "compact_boundary")
    assert boundary["compactMetadata"] == {"trigger": "manual", "preTokens": result.pre_tokens}
    assert boundary["parentUuid"] is None and boundary["logicalParentUuid"]
    summary = entries[entries.index(boundary) + 1]
    assert summary["isCompactSummary"] is True
    assert "read the big files" in summary["message"]["content"]


def test_recall_attachments_go_so_the_budget_resets(fake_api, project):
    session = make_session(project, hook=False)
    fake_api.script([Turn(text="one"), summary_turn()])
    run_turn(session, "first")
    session.messages.insert(1, {"role": "user", "content": [{"type": "text", "text": "memo"}],
                                "_meta": {"kind": "recall", "file": "m.md", "bytes": 900}})
    assert budget_used(session.messages) == 900
    compact(session)
    assert budget_used(session.messages) == 0


def test_instruction_file_is_reread_and_read_record_reset(fake_api, project):
    (project / "CLAUDE.md").write_text("Use pandas for tables.\n")
    (project / "data.csv").write_text("a,b\n1,2\n")
    (project / "other.txt").write_text("other\n")
    session = make_session(project, hook=False)
    fake_api.script([
        Turn(tool_calls=[ToolCall("Read", {"file_path": "data.csv"})]),
        Turn(text="Read it."),
        summary_turn(),
        Turn(text="ok"),
    ])
    run_turn(session, "read data")
    session.tool_context().read_files[(project / "other.txt").resolve()] = 0.0
    (project / "other.txt").unlink()  # in the read record, but nothing to re-attach
    (project / "CLAUDE.md").write_text("Use polars for tables.\n")
    assert "Use pandas" in session.assemble().to_json()  # a stable snapshot until compaction
    compact(session)
    assert list(session.tool_context().read_files) == [(project / "data.csv").resolve()]
    run_turn(session, "go on")
    sent = json.dumps(fake_api.requests[-1].body)
    assert "Use polars for tables." in sent and "Use pandas" not in sent


def test_reattached_files_are_capped(tmp_path):
    paths = []
    for i in range(7):
        path = tmp_path / f"f{i}.txt"
        path.write_text(f"line {i} " * 10 + "\n" * 0 + "\n".join("y" * 80 for _ in range(400)))
        paths.append(path)
    (tmp_path / "blob.bin").write_bytes(b"\0\1\2")
    folder = Roots((Root.declare("project", tmp_path),))
    restored = restore_files([tmp_path / "blob.bin", *paths], folder).files
    assert len(restored) == MAX_FILES
    assert [r.path for r in restored] == paths[:MAX_FILES]
    assert all(r.truncated and r.tokens <= FILE_TOKENS + 100 for r in restored)
    text = restored[0].message["content"][0]["text"]
    assert "Cut at about 5,000 tokens" in text and "offset" in text
