"""Session memory: thresholds, background refresh with the small model, use by compaction."""

from __future__ import annotations

import json
import threading
from collections import deque
from pathlib import Path

import pytest
from sessions import make_session as shared_session

from jupyter_memory.agent.compaction import SUMMARY_REQUEST_HEAD, compact
from jupyter_memory.agent.loop import run_turn
from jupyter_memory.agent.session import Session
from jupyter_memory.agent.session_notes import (
    KEEP_MAX_TOKENS,
    KEEP_MIN_TEXT_MESSAGES,
    KEEP_MIN_TOKENS,
    SECTIONS,
    SessionNotes,
    cap_notes,
    is_empty,
    keep_start,
    notes_path,
    should_update,
    template,
)
from jupyter_memory.context.tokens import estimate_messages
from jupyter_memory.localapi import ToolCall, Turn

MODEL = "claude-haiku-4-5"
SMALL = "claude-3-5-haiku-latest"
NOTES = "<notes>\n# Session title\nRevenue checks\n\n# Current state\nSumming revenue.\n</notes>"


# Every session here works on the test's memdir (the `memdir` fixture, tests/conftest.py).
pytestmark = pytest.mark.usefixtures("memdir")


class HandNotes(SessionNotes):
    """Notes refreshed only by hand: no refresh after a turn or a tool round."""

    def before_call(self, turn, round_index):  # type: ignore[no-untyped-def]
        return None

    def after_turn(self, turn, result):  # type: ignore[no-untyped-def]
        return None


def make_session(project: Path, enabled: bool = True, *,
                 by_hand: bool = False) -> tuple[Session, SessionNotes]:
    session = shared_session(project, model=MODEL, small_model=SMALL)
    # The notes are a field: replace the default (switched off by the test environment).
    memory = (HandNotes if by_hand else SessionNotes)(session, enabled=enabled)
    session.notes = memory
    return session, memory


def usage(total: int) -> dict[str, int]:
    return {"input_tokens": total, "cache_read_input_tokens": 0, "cache_creation_input_tokens": 0,
            "output_tokens": 10}


def is_notes_request(body: dict) -> bool:
    return body.get("model") == SMALL and "running notes" in json.dumps(body.get("system"))


def notes_turn(text: str = NOTES) -> Turn:
    return Turn(text=text, expect=is_notes_request)


def text_message(role: str, text: str) -> dict:
    return {"role": role, "content": [{"type": "text", "text": text}]}


def tool_pair(i: int, size: int) -> list[dict]:
    uid = f"toolu_{i:04d}"
    return [
        {"role": "assistant", "content": [
            {"type": "tool_use", "id": uid, "name": "Read", "input": {"file_path": f"f{i}"}}]},
        {"role": "user", "content": [
            {"type": "tool_result", "tool_use_id": uid, "content": "r" * size}]},
    ]


# ------------------------------------------------------------------------- rules


def test_update_rule_follows_the_reference():
    base = {"tokens_at_update": 0, "initialized": False, "tool_calls": 0,
            "answered_without_tools": True}
    assert not should_update(tokens=9_999, **base)
    assert should_update(tokens=10_000, **base)
    later = {**base, "initialized": True, "tokens_at_update": 10_000}
    assert not should_update(tokens=14_999, **later)  # not 5K more yet
    assert should_update(tokens=15_000, **later)
    mid_turn = {**later, "answered_without_tools": False}
    assert not should_update(tokens=15_000, **{**mid_turn, "tool_calls": 2})
    assert should_update(tokens=15_000, **{**mid_turn, "tool_calls": 3})


def test_notes_live_beside_the_session_log(project):
    session, memory = make_session(project)
    assert memory.path == notes_path(session)
    assert memory.path == (session.log.path.parent / session.session_id / "session-memory"
                           / "summary.md")
    assert session.notes is memory


def test_template_has_every_section_and_counts_as_empty():
    text = template()
    for name, _ in SECTIONS:
        assert f"# {name}" in text
    assert is_empty(text) and not is_empty(text + "\nSomething real.\n")


def test_notes_are_capped_at_12k_tokens():
    long = "\n".join(f"- worklog entry {i} " + "z" * 200 for i in range(2_000))
    capped = cap_notes(long)
    assert len(capped) < len(long) and "Notes cut at about 12,000 tokens" in capped
    assert cap_notes("short") == "short"


def test_keep_start_respects_minimums_maximum_and_tool_pairs():
    messages = []
    for i in range(12):
        messages.append(text_message("user", f"question {i} " + "q" * 2_000))
        messages += tool_pair(i, 12_000)
        messages.append(text_message("assistant", f"answer {i}"))
    start = keep_start(messages, len(messages) - 1)
    kept = messages[start:]
    texts = sum(1 for m in kept if m["content"][0]["type"] == "text")
    assert estimate_messages(kept) >= KEEP_MIN_TOKENS and texts >= KEEP_MIN_TEXT_MESSAGES
    assert estimate_messages(kept) <= KEEP_MAX_TOKENS
    assert kept[0]["content"][0]["type"] != "tool_result"
    # Too much uncovered conversation: the notes are stale.
    assert keep_start(messages, 0) is None
    # A start that would land on a tool result takes its call along.
    small = [text_message("user", "hi"), *tool_pair(1, 40), text_message("assistant", "ok")]
    assert keep_start(small, 2) == 0


# ------------------------------------------------------------------------- refresh


def test_notes_start_after_10k_tokens_in_the_background(fake_api, project):
    session, memory = make_session(project)
    fake_api.script([Turn(text="small talk", usage=usage(3_000))])
    run_turn(session, "hello")
    assert not memory.running and memory.read() is None and len(fake_api.requests) == 1

    fake_api.script([Turn(text="Revenue is 42.", usage=usage(12_000)), notes_turn()])
    run_turn(session, "What is the revenue?")
    assert memory.wait(120)
    assert memory.last_error is None and memory.updates == 1
    notes = memory.path.read_text()
    assert notes.startswith("# Session title\nRevenue checks")
    assert oct(memory.path.stat().st_mode & 0o777) == "0o600"
    request = fake_api.requests[-1].body
    prompt = request["messages"][0]["content"]
    assert "Person: What is the revenue?" in prompt and "Assistant: Revenue is 42." in prompt
    assert "# Worklog" in prompt  # the template the model fills

    fake_api.script([Turn(text="more", usage=usage(14_000))])
    run_turn(session, "and?")  # only 2K more: no refresh
    assert memory.wait(120) and memory.updates == 1 and len(fake_api.requests) == 4


def test_refresh_mid_turn_after_three_tool_calls(fake_api, project):
    for i in range(3):
        (project / f"f{i}.txt").write_text(f"file {i}\n")
    session, memory = make_session(project)
    main = deque([
        Turn(tool_calls=[ToolCall("Read", {"file_path": f"f{i}.txt"}) for i in range(3)],
             usage=usage(11_000)),
        Turn(text="done"),
    ])
    notes_seen = threading.Event()

    def respond(request: dict) -> Turn:
        if is_notes_request(request):
            notes_seen.set()
            return Turn(text=NOTES)
        return main.popleft()

    fake_api.responder = respond
    result = run_turn(session, "read three files")
    assert result.ok and memory.wait(120) and notes_seen.is_set()
    assert memory.updates == 1
    prompt = next(r.body for r in fake_api.requests if is_notes_request(r.body))
    assert "Assistant called Read" in prompt["messages"][0]["content"]


def test_a_failed_refresh_keeps_old_notes_and_is_reported(fake_api, project):
    session, memory = make_session(project)
    fake_api.script([Turn(text="x", usage=usage(12_000)), notes_turn("no notes here")])
    run_turn(session, "go")
    assert memory.wait(120)
    assert memory.read() is None and "without notes" in (memory.last_error or "")


def test_switched_off(fake_api, project, monkeypatch):
    session, memory = make_session(project, enabled=False)
    fake_api.script([Turn(text="x", usage=usage(50_000))])
    run_turn(session, "go")
    assert not memory.enabled and not memory.running and len(fake_api.requests) == 1
    by_env = SessionNotes(session)
    monkeypatch.setenv("JUPYTER_MEMORY_SESSION_MEMORY", "off")
    assert not by_env.enabled
    monkeypatch.setenv("JUPYTER_MEMORY_SESSION_MEMORY", "1")
    assert by_env.enabled


# ------------------------------------------------------------------------- compaction


def _long_session(fake_api, session: Session, rounds: int = 8, size: int = 8_000) -> None:
    fake_api.script([Turn(text=f"answer {i} " + "a" * size) for i in range(rounds)])
    for i in range(rounds):
        run_turn(session, f"question {i}")


def test_compaction_uses_fresh_notes_without_a_model_call(fake_api, project):
    session, memory = make_session(project, by_hand=True)  # refreshed by hand below
    _long_session(fake_api, session)
    fake_api.push(notes_turn())
    memory.update(list(session.messages))
    count = len(fake_api.requests)

    result = compact(session)
    assert len(fake_api.requests) == count  # no model call at compaction time
    assert result.method == "session_memory" and result.attempts == 0
    assert "Revenue checks" in result.summary
    summary, *rest = session.messages
    assert summary["_meta"]["kind"] == "compact_summary"
    assert f"the {result.kept_messages} most recent messages" in summary["content"][0]["text"]
    kept = rest[: result.kept_messages]
    assert estimate_messages(kept) >= KEEP_MIN_TOKENS
    assert estimate_messages(kept) <= KEEP_MAX_TOKENS
    assert kept[-1]["content"][0]["text"].startswith("answer 7")
    assert "question 0" not in json.dumps(session.messages)

    entries = [json.loads(x) for x in session.log.path.read_text().splitlines()]
    boundary = max(i for i, e in enumerate(entries) if e.get("subtype") == "compact_boundary")
    after = [e for e in entries[boundary + 1 :] if e["type"] in ("user", "assistant")]
    assert after[0].get("isCompactSummary") and len(after) == 1 + result.kept_messages


def test_stale_notes_or_instructions_fall_back_to_the_model(fake_api, project):
    session, memory = make_session(project, by_hand=True)
    _long_session(fake_api, session, rounds=3)
    fake_api.push(notes_turn())
    memory.update(list(session.messages[:2]))  # covers only the first round
    _long_session(fake_api, session, rounds=8, size=24_000)  # then over 40K tokens arrive
    fake_api.push(Turn(text="<summary>model summary</summary>",
                       expect=lambda b: SUMMARY_REQUEST_HEAD in json.dumps(b["messages"][-1])))
    assert compact(session).method == "model"

    session2, memory2 = make_session(project, by_hand=True)
    _long_session(fake_api, session2, rounds=3)
    fake_api.push(notes_turn())
    memory2.update(list(session2.messages))
    fake_api.push(Turn(text="<summary>steered</summary>"))
    result = compact(session2, instructions="only the numbers")
    assert result.method == "model" and result.summary == "steered"


def test_automatic_compaction_takes_the_notes_first(fake_api, project):
    from jupyter_memory.agent.compaction import CompactionHook

    session, memory = make_session(project)
    assert session.compactor in session.hooks and isinstance(session.compactor, CompactionHook)
    fake_api.script([Turn(text="big answer", usage=usage(168_000)), notes_turn()])
    run_turn(session, "first question")
    assert memory.wait(120) and memory.updates == 1
    count = len(fake_api.requests)
    fake_api.push(Turn(text="after", expect=lambda b: not is_notes_request(b)))
    result = run_turn(session, "second question")
    assert result.ok and len(fake_api.requests) == count + 1  # only the answer itself
    [made] = result.record["compactions"]
    assert made["method"] == "session_memory" and made["trigger"] == "auto"
    sent = json.dumps(fake_api.requests[-1].body["messages"])
    assert "Revenue checks" in sent and "first question" in sent  # notes + kept verbatim


def test_growth_is_counted_from_the_compacted_size(fake_api, project):
    session, memory = make_session(project)
    fake_api.script([Turn(text="x", usage=usage(60_000)), notes_turn()])
    run_turn(session, "go")
    assert memory.wait(120) and memory.tokens_at_update >= 60_000
    fake_api.push(Turn(text="<summary>short</summary>",
                       expect=lambda b: SUMMARY_REQUEST_HEAD in json.dumps(b["messages"][-1])))
    result = compact(session, instructions="model please")
    assert memory.tokens_at_update == result.post_tokens < 60_000
