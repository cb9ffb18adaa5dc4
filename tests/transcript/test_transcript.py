"""The JSONL session log: writing, reading, resuming, retention (docs/reference.md#the-transcript)."""

from __future__ import annotations

import json
import os
import shutil
import stat
import time
from pathlib import Path

import pytest

from jupyter_memory.transcript import reader
from jupyter_memory.transcript.reader import FAST_PATH_BYTES, SCAN_BLOCK_BYTES, read_entries
from jupyter_memory.transcript.rebuild import (
    CONTINUE_PROMPT,
    EARLIER_OMITTED,
    NOOP_REPLY,
    rebuild_conversation,
)
from jupyter_memory.transcript.retention import cleanup_old_transcripts
from jupyter_memory.transcript.writer import TranscriptWriter, subagent_writer

LONG_SESSION = "ae4a77f8-aedd-4bc1-888f-c94edc91af04"
SESSION = "11111111-2222-4333-8444-555555555555"
USAGE = {
    "input_tokens": 12,
    "cache_creation_input_tokens": 3400,
    "cache_read_input_tokens": 9000,
    "cache_creation": {"ephemeral_5m_input_tokens": 0, "ephemeral_1h_input_tokens": 3400},
    "output_tokens": 77,
    "service_tier": "standard",
}


def make_writer(path: Path, **kw) -> TranscriptWriter:
    return TranscriptWriter(
        path, session_id=SESSION, cwd="/home/ds/project", version="0.1.0", git_branch="main", **kw
    )


def assistant(content: list, msg_id: str = "msg_1") -> dict:
    return {
        "model": "claude-test",
        "id": msg_id,
        "type": "message",
        "role": "assistant",
        "content": content,
        "stop_reason": "end_turn",
        "stop_sequence": None,
        "usage": dict(USAGE),
    }


def text(s: str) -> dict:
    return {"type": "text", "text": s}


def tool_use(tid: str, name: str = "Read") -> dict:
    return {"type": "tool_use", "id": tid, "name": name, "input": {"file_path": "/x.py"}}


def result(tid: str, out: str = "ok") -> dict:
    return {"type": "tool_result", "tool_use_id": tid, "content": out}


def lines_of(path: Path) -> list[str]:
    return path.read_bytes().decode("utf-8").split("\n")


def assert_sendable(conv: list[dict]) -> None:
    """Roles alternate from user, and every tool call is answered in the next message."""
    assert conv[0]["role"] == "user"
    for i, message in enumerate(conv):
        assert message["role"] == ("user" if i % 2 == 0 else "assistant")
        assert message["content"], f"message {i} is empty"
        uses = {b["id"] for b in message["content"] if b["type"] == "tool_use"}
        if uses:
            answered = {
                b["tool_use_id"] for b in conv[i + 1]["content"] if b["type"] == "tool_result"
            }
            assert uses == answered
        if message["role"] == "user" and i:
            results = {b["tool_use_id"] for b in message["content"] if b["type"] == "tool_result"}
            previous = {b["id"] for b in conv[i - 1]["content"] if b["type"] == "tool_use"}
            assert results <= previous


# --------------------------------------------------------------------------- writer


def test_multi_turn_session_round_trips(tmp_path: Path) -> None:
    path = tmp_path / "proj" / f"{SESSION}.jsonl"
    w = make_writer(path)
    original = [
        {"role": "user", "content": [text("plot the sales by month")]},
        {"role": "assistant", "content": [text("Reading the data."), tool_use("toolu_1")]},
        {"role": "user", "content": [result("toolu_1", "month,sales\n1,10")]},
        {"role": "assistant", "content": [text("Here is the plot.")]},
    ]
    u1 = w.append_message("user", original[0])
    a1 = w.append_message(
        "assistant", assistant(original[1]["content"], "msg_a"), extra={"requestId": "req_1"}
    )
    r1 = w.append_message(
        "user",
        original[2],
        parent_uuid=a1,
        extra={"toolUseResult": {"stdout": "x"}, "sourceToolAssistantUUID": a1},
    )
    a2 = w.append_message("assistant", assistant(original[3]["content"], "msg_b"))

    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    raw = [json.loads(line) for line in lines_of(path) if line]
    assert [e["uuid"] for e in raw] == [u1, a1, r1, a2]
    assert [e["parentUuid"] for e in raw] == [None, u1, a1, r1]
    assert list(raw[0]) == [
        "parentUuid", "isSidechain", "userType", "cwd", "sessionId", "version", "gitBranch",
        "type", "message", "uuid", "timestamp",
    ]  # fmt: skip
    assert list(raw[1])[7:] == ["message", "requestId", "type", "uuid", "timestamp"]
    assert list(raw[2])[-2:] == ["toolUseResult", "sourceToolAssistantUUID"]
    assert raw[1]["message"]["usage"]["output_tokens"] == 77
    assert all(e["userType"] == "external" and e["isSidechain"] is False for e in raw)
    assert raw[0]["timestamp"].endswith("Z") and len(raw[0]["timestamp"]) == 24
    assert path.read_bytes().endswith(b"}\n")

    conv = rebuild_conversation(read_entries(path))
    assert list(conv) == original
    assert conv.session_id == SESSION and conv.cwd == "/home/ds/project"
    assert conv.leaf_uuid == a2
    assert conv.interrupted == "none" and not conv.noop_added
    assert conv.meta[1].message_id == "msg_a" and conv.meta[1].uuids == [a1]
    assert conv.meta[1].usage["output_tokens"] == 0


def test_file_is_created_only_with_the_first_real_message(tmp_path: Path) -> None:
    path = tmp_path / "s.jsonl"
    w = make_writer(path)
    s1 = w.append_system("session_start", "kernel started")
    m1 = w.append_message("user", {"role": "user", "content": "injected context"}, is_meta=True)
    assert not path.exists()
    assert w.pending == 2
    u1 = w.append_message("user", {"role": "user", "content": [text("hello")]})
    entries = [json.loads(line) for line in lines_of(path) if line]
    assert [e["uuid"] for e in entries] == [s1, m1, u1]
    assert [e["parentUuid"] for e in entries] == [None, s1, m1]
    assert entries[1]["isMeta"] is True and entries[0]["subtype"] == "session_start"
    assert w.pending == 0


def test_flush_forces_the_file_and_existing_files_are_appended_at_once(tmp_path: Path) -> None:
    path = tmp_path / "s.jsonl"
    w = make_writer(path)
    w.append_system("note", "only metadata")
    w.flush()
    assert len([x for x in lines_of(path) if x]) == 1
    w2 = make_writer(path)
    w2.append_system("note", "more metadata")
    assert len([x for x in lines_of(path) if x]) == 2


def test_log_is_private_whatever_the_umask(tmp_path: Path) -> None:
    path = tmp_path / "s.jsonl"
    old = os.umask(0o277)
    try:
        make_writer(path, fsync=True).append_message("user", {"role": "user", "content": "hi"})
    finally:
        os.umask(old)
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert read_entries(path)[0]["message"]["content"] == "hi"


def test_duplicate_uuids_are_not_written_again(tmp_path: Path) -> None:
    path = tmp_path / "s.jsonl"
    w = make_writer(path)
    fixed = "aaaaaaaa-0000-4000-8000-000000000001"
    # A uuid-looking key inside message text must not count as a logged entry.
    decoy = 'see {"uuid":"bbbbbbbb-0000-4000-8000-000000000002"}'
    w.append_message("user", {"role": "user", "content": [text(decoy)]}, uuid=fixed)
    assert (
        w.append_message("user", {"role": "user", "content": [text("again")]}, uuid=fixed) == fixed
    )
    assert len([x for x in lines_of(path) if x]) == 1

    resumed = make_writer(path, leaf_uuid=fixed)
    resumed.append_message("user", {"role": "user", "content": [text("again")]}, uuid=fixed)
    assert len([x for x in lines_of(path) if x]) == 1
    new = resumed.append_message(
        "assistant", assistant([text("hi")]), uuid="bbbbbbbb-0000-4000-8000-000000000002"
    )
    entries = [json.loads(x) for x in lines_of(path) if x]
    assert [e["uuid"] for e in entries] == [fixed, new]
    assert entries[1]["parentUuid"] == fixed


def test_torn_last_line_is_stepped_over(tmp_path: Path) -> None:
    path = tmp_path / "s.jsonl"
    w = make_writer(path)
    u1 = w.append_message("user", {"role": "user", "content": [text("first")]})
    with open(path, "ab") as f:  # a crash in the middle of a line
        f.write(b'{"parentUuid":"' + u1.encode() + b'","type":"assistant","mess')
    resumed = make_writer(path, leaf_uuid=u1)
    a1 = resumed.append_message("assistant", assistant([text("answer")]))
    lines = lines_of(path)
    assert lines[1].startswith('{"parentUuid"') and lines[1].endswith('"mess')
    assert json.loads(lines[2])["uuid"] == a1
    entries = read_entries(path)
    assert [e["uuid"] for e in entries] == [u1, a1]
    assert entries.stats.corrupt_lines == 1
    conv = rebuild_conversation(entries)
    assert [m["role"] for m in conv] == ["user", "assistant"]
    assert conv.skipped["corrupt_lines"] == 1


def test_progress_is_never_logged_and_bad_input_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "s.jsonl"
    w = make_writer(path)
    w.append_message("user", {"role": "user", "content": "hi"})
    assert w.append_entry({"type": "progress", "data": {"type": "hook_progress"}}) is None
    with pytest.raises(ValueError, match="append_system"):
        w.append_message("progress", {"content": []})
    with pytest.raises(ValueError, match="overwrite"):
        w.append_message("user", {"role": "user", "content": "x"}, extra={"uuid": "u"})
    with pytest.raises(ValueError, match="does not match"):
        w.append_message("user", {"role": "assistant", "content": "x"})
    with pytest.raises(ValueError, match="auto"):
        w.append_compact_boundary("sometimes", 10)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="JSON"):
        w.append_message("user", {"role": "user", "content": [object()]})
    copied = w.append_entry({"type": "user", "message": {"role": "user", "content": "copied"}})
    entries = [json.loads(x) for x in lines_of(path) if x]
    assert len(entries) == 2 and entries[1]["uuid"] == copied
    assert entries[1]["sessionId"] == SESSION
    assert not any(e["type"] == "progress" for e in entries)


def test_parallel_tool_results_branch_and_merge_back(tmp_path: Path) -> None:
    """The reference's layout: one entry per content block, results on separate parents."""
    path = tmp_path / "s.jsonl"
    w = make_writer(path)
    w.append_message("user", {"role": "user", "content": "compare the two files"})
    a_text = w.append_message("assistant", assistant([text("Reading both.")], "msg_p"))
    a_one = w.append_message("assistant", assistant([tool_use("t1")], "msg_p"))
    a_two = w.append_message("assistant", assistant([tool_use("t2")], "msg_p"))
    w.append_message("user", {"role": "user", "content": [result("t1", "one")]}, parent_uuid=a_one)
    r2 = w.append_message(
        "user", {"role": "user", "content": [result("t2", "two")]}, parent_uuid=a_two
    )
    w.append_message("assistant", assistant([text("They differ.")], "msg_q"), parent_uuid=r2)
    raw = [json.loads(x) for x in lines_of(path) if x]
    assert raw[2]["parentUuid"] == a_text
    conv = rebuild_conversation(read_entries(path))
    assert list(conv) == [
        {"role": "user", "content": [text("compare the two files")]},
        {"role": "assistant", "content": [text("Reading both."), tool_use("t1"), tool_use("t2")]},
        {"role": "user", "content": [result("t1", "one"), result("t2", "two")]},
        {"role": "assistant", "content": [text("They differ.")]},
    ]
    assert conv.cleanups["parallel_results_merged"] == 1


def test_compact_boundary_and_summary_entries(tmp_path: Path) -> None:
    path = tmp_path / "s.jsonl"
    w = make_writer(path)
    w.append_message("user", {"role": "user", "content": "load the data"})
    tail = w.append_message("assistant", assistant([text("Loaded.")]))
    b = w.append_compact_boundary("auto", 167_500)
    s = w.append_summary("1. Primary Request and Intent: load the data")
    u = w.append_message("user", {"role": "user", "content": "now plot it"})
    raw = [json.loads(x) for x in lines_of(path) if x]
    boundary = raw[2]
    assert list(boundary)[:2] == ["parentUuid", "logicalParentUuid"]
    assert boundary["parentUuid"] is None and boundary["logicalParentUuid"] == tail
    assert boundary["subtype"] == "compact_boundary" and boundary["type"] == "system"
    assert boundary["compactMetadata"] == {"trigger": "auto", "preTokens": 167_500}
    assert raw[3]["isCompactSummary"] is True and raw[3]["parentUuid"] == b
    entries = read_entries(path)
    assert entries[0]["uuid"] == b and len(entries) == 3
    assert entries.stats.entries_before_boundary == 2
    conv = rebuild_conversation(entries)
    assert conv.boundary.trigger == "auto" and conv.boundary.pre_tokens == 167_500
    assert conv.boundary.logical_parent_uuid == tail
    assert conv.summary.startswith("1. Primary Request")
    assert conv[0]["content"][0]["text"] == conv.summary
    assert conv[0]["content"][1] == text("now plot it")
    assert conv.meta[0].is_compact_summary and conv.meta[0].uuids == [s, u]
    assert conv.interrupted == "prompt" and conv[-1]["content"] == [text(NOOP_REPLY)]
    everything = read_entries(path, from_last_boundary=False)
    assert len(everything) == 5


def test_subagent_writer_uses_its_own_file(tmp_path: Path) -> None:
    main = make_writer(tmp_path / f"{SESSION}.jsonl")
    sub = subagent_writer(main, "a1b2c3")
    assert sub.path == tmp_path / SESSION / "subagents" / "agent-a1b2c3.jsonl"
    first = sub.append_message("user", {"role": "user", "content": "find the csv files"})
    sub.append_message("assistant", assistant([text("Found two.")]))
    entries = read_entries(sub.path)
    assert all(e["isSidechain"] is True and e["agentId"] == "a1b2c3" for e in entries)
    assert entries[0]["uuid"] == first and entries[0]["parentUuid"] is None
    assert stat.S_IMODE(sub.path.stat().st_mode) == 0o600
    assert not main.path.exists()
    nested = subagent_writer(sub, "deeper")
    assert nested.path.parent == sub.path.parent
    for bad in ("../x", "a/b", "", "x" * 200):
        with pytest.raises(ValueError, match="agent id"):
            subagent_writer(main, bad)


# --------------------------------------------------------------------------- real logs


FIXTURES = ["short.jsonl", "tool_heavy.jsonl", "subagent.jsonl", f"{LONG_SESSION}.jsonl"]


@pytest.fixture
def transcripts(fixtures_dir: Path, tmp_path: Path) -> Path:
    target = tmp_path / "transcripts"
    shutil.copytree(fixtures_dir / "transcripts", target)
    return target


@pytest.mark.parametrize("name", FIXTURES)
def test_real_transcripts_rebuild_into_sendable_conversations(transcripts: Path, name: str) -> None:
    entries = read_entries(transcripts / name)
    assert entries and all(e["type"] in ("user", "assistant", "system") for e in entries)
    assert entries.stats.skipped_types.get("progress", 0) > 0
    conv = rebuild_conversation(entries)
    assert_sendable(conv)
    assert conv.session_id and conv.cwd
    assert all(m.usage is None or m.usage["output_tokens"] == 0 for m in conv.meta)
    assert len(conv.meta) == len(conv)


def test_long_real_session_starts_after_its_boundary(transcripts: Path) -> None:
    path = transcripts / f"{LONG_SESSION}.jsonl"
    entries = read_entries(path)
    assert entries[0]["subtype"] == "compact_boundary"
    assert entries.stats.boundary_found and entries.stats.entries_before_boundary > 0
    conv = rebuild_conversation(entries)
    assert conv.boundary.trigger == "manual" and conv.boundary.pre_tokens == 142431
    assert conv.boundary.logical_parent_uuid == "23b73f9a-2123-4b8e-81a2-b98378c7498f"
    sections = [
        "Primary Request and Intent", "Key Technical Concepts", "Files and Code Sections",
        "Errors and Fixes", "Problem Solving", "All User Messages", "Pending Tasks",
        "Current Work", "Optional Next Step",
    ]  # fmt: skip
    for number, title in enumerate(sections, 1):
        assert f"{number}. {title}" in conv.summary
    assert conv[0]["content"][0]["text"] == conv.summary
    assert conv.meta[0].is_compact_summary
    assert conv.interrupted == "none" and conv[-1]["role"] == "assistant"
    assert conv[-1]["content"][-1]["text"].startswith("All done.")
    full = read_entries(path, from_last_boundary=False)
    assert len(full) > len(entries)
    assert rebuild_conversation(full) == conv  # the rebuild also starts at the boundary


def test_written_entries_use_the_reference_key_order(transcripts: Path, tmp_path: Path) -> None:
    real = [json.loads(x) for x in lines_of(transcripts / f"{LONG_SESSION}.jsonl") if x]
    at = next(i for i, e in enumerate(real) if e.get("subtype") == "compact_boundary")
    w = make_writer(tmp_path / "s.jsonl")
    w.append_message("user", {"role": "user", "content": "x"})
    w.append_compact_boundary("manual", 1)
    w.append_summary("summary")
    ours = [json.loads(x) for x in lines_of(w.path) if x]

    def keys(entry: dict) -> list[str]:
        return [k for k in entry if k != "slug"]  # the reference's session nickname

    assert keys(ours[1]) == keys(real[at])
    assert keys(ours[2]) == keys(real[at + 1])


def test_real_subagent_files_are_readable(transcripts: Path) -> None:
    files = sorted((transcripts / LONG_SESSION / "subagents").glob("agent-*.jsonl"))
    assert len(files) == 2
    for path in files:
        entries = read_entries(path)
        assert entries and all(e["isSidechain"] is True for e in entries)
        assert {e["agentId"] for e in entries} == {path.stem.removeprefix("agent-")}
        assert_sendable(rebuild_conversation(entries))


def test_real_parallel_calls_are_merged(transcripts: Path) -> None:
    short = rebuild_conversation(read_entries(transcripts / "short.jsonl"))
    assert [b["type"] for b in short[1]["content"]] == ["thinking", "text", "tool_use", "tool_use"]
    assert [b["type"] for b in short[2]["content"]] == ["tool_result", "tool_result", "text"]
    assert short.interrupted == "prompt" and short.noop_added  # the user stopped it
    heavy = rebuild_conversation(read_entries(transcripts / "tool_heavy.jsonl"))
    ids = [b.get("id") for m in heavy for b in m["content"] if b["type"] == "tool_use"]
    assert "toolu_01JJds55jYrYwd9TktNGndRY" in ids  # the Glob call sits on a side branch
    assert heavy.skipped["meta"] == 1


# --------------------------------------------------------------------------- resume clean-ups


def test_trailing_unfinished_tool_use_is_dropped(tmp_path: Path) -> None:
    w = make_writer(tmp_path / "s.jsonl")
    w.append_message("user", {"role": "user", "content": "summarise df"})
    w.append_message("assistant", assistant([text("Let me look."), tool_use("t9")]))
    conv = rebuild_conversation(read_entries(w.path))
    assert conv.cleanups["unfinished_tool_uses"] == 1
    assert conv.interrupted == "turn"
    assert list(conv) == [
        {"role": "user", "content": [text("summarise df")]},
        {"role": "assistant", "content": [text("Let me look.")]},
        {"role": "user", "content": [text(CONTINUE_PROMPT)]},
        {"role": "assistant", "content": [text(NOOP_REPLY)]},
    ]
    assert conv.meta[2].synthetic and conv.meta[3].synthetic


def test_orphan_thinking_only_messages_are_dropped(tmp_path: Path) -> None:
    w = make_writer(tmp_path / "s.jsonl")
    w.append_message("user", {"role": "user", "content": "first"})
    w.append_message(
        "assistant", assistant([{"type": "thinking", "thinking": "hm", "signature": "s"}], "m1")
    )
    w.append_message("user", {"role": "user", "content": "second"})
    w.append_message(
        "assistant",
        assistant([{"type": "thinking", "thinking": "ok", "signature": "s"}, text("Done.")], "m2"),
    )
    conv = rebuild_conversation(read_entries(w.path))
    assert conv.cleanups["thinking_only_messages"] == 1
    assert [m["role"] for m in conv] == ["user", "assistant"]
    assert conv[0]["content"] == [text("first"), text("second")]
    assert [b["type"] for b in conv[1]["content"]] == ["thinking", "text"]
    assert conv.interrupted == "none"


def test_cut_off_after_thinking_counts_as_an_interrupted_turn(tmp_path: Path) -> None:
    w = make_writer(tmp_path / "s.jsonl")
    w.append_message("user", {"role": "user", "content": "go"})
    w.append_message(
        "assistant", assistant([{"type": "thinking", "thinking": "...", "signature": "s"}])
    )
    conv = rebuild_conversation(read_entries(w.path))
    assert conv.interrupted == "turn"
    assert conv[0]["content"] == [text("go"), text(CONTINUE_PROMPT)]
    assert conv[1]["content"] == [text(NOOP_REPLY)]


def test_turn_cut_off_after_a_tool_result_asks_to_continue(tmp_path: Path) -> None:
    w = make_writer(tmp_path / "s.jsonl")
    w.append_message("user", {"role": "user", "content": "run it"})
    w.append_message("assistant", assistant([tool_use("t1", "Bash")]))
    w.append_message("user", {"role": "user", "content": [result("t1", "done")]})
    conv = rebuild_conversation(read_entries(w.path))
    assert conv.interrupted == "turn"
    assert conv[2] == {"role": "user", "content": [result("t1", "done"), text(CONTINUE_PROMPT)]}
    assert conv[3] == {"role": "assistant", "content": [text(NOOP_REPLY)]}
    assert conv.cleanups == {"continue_prompt_added": 1, "noop_reply_added": 1}


def test_log_ending_on_a_prompt_gets_a_placeholder_reply(tmp_path: Path) -> None:
    w = make_writer(tmp_path / "s.jsonl")
    w.append_message("user", {"role": "user", "content": "hello"})
    w.append_message("assistant", assistant([text("Hi.")]))
    w.append_message("user", {"role": "user", "content": "what is in df?"})
    conv = rebuild_conversation(read_entries(w.path))
    assert conv.interrupted == "prompt" and conv.noop_added
    assert CONTINUE_PROMPT not in json.dumps(list(conv))
    assert conv[-1] == {"role": "assistant", "content": [text(NOOP_REPLY)]}


def test_user_stop_marker_is_not_treated_as_a_cut_off(tmp_path: Path) -> None:
    w = make_writer(tmp_path / "s.jsonl")
    w.append_message("user", {"role": "user", "content": "run"})
    w.append_message("assistant", assistant([tool_use("t1", "Bash")]))
    w.append_message("user", {"role": "user", "content": [result("t1", "partial")]})
    w.append_message("user", {"role": "user", "content": [text("[Request interrupted by user]")]})
    conv = rebuild_conversation(read_entries(w.path))
    assert conv.interrupted == "prompt"
    assert conv[2]["content"] == [result("t1", "partial"), text("[Request interrupted by user]")]


def test_stored_usage_is_zeroed_without_touching_the_entries(tmp_path: Path) -> None:
    w = make_writer(tmp_path / "s.jsonl")
    w.append_message("user", {"role": "user", "content": "hi"})
    w.append_message("assistant", assistant([text("Hello.")]))
    entries = read_entries(w.path)
    conv = rebuild_conversation(entries)
    zero = conv.meta[1].usage
    assert zero == {
        "input_tokens": 0,
        "cache_creation_input_tokens": 0,
        "cache_read_input_tokens": 0,
        "cache_creation": {"ephemeral_5m_input_tokens": 0, "ephemeral_1h_input_tokens": 0},
        "output_tokens": 0,
        "service_tier": "standard",
    }
    assert entries[1]["message"]["usage"]["output_tokens"] == 77
    assert all("usage" not in m for m in conv)


def test_abandoned_branches_are_dropped(tmp_path: Path) -> None:
    w = make_writer(tmp_path / "s.jsonl")
    w.append_message("user", {"role": "user", "content": "load"})
    a1 = w.append_message("assistant", assistant([text("Loaded.")], "m1"))
    w.append_message("user", {"role": "user", "content": "plot as bars"})
    w.append_message("assistant", assistant([text("Bars.")], "m2"))
    w.append_message("user", {"role": "user", "content": "plot as lines"}, parent_uuid=a1)
    w.append_message("assistant", assistant([text("Lines.")], "m3"))
    conv = rebuild_conversation(read_entries(w.path))
    assert [m["content"][0]["text"] for m in conv] == ["load", "Loaded.", "plot as lines", "Lines."]
    assert conv.skipped["off_branch"] == 2


def test_unmatched_results_blank_text_and_leading_assistant(tmp_path: Path) -> None:
    w = make_writer(tmp_path / "s.jsonl")
    w.append_message("user", {"role": "user", "content": "x"})
    w.append_message("assistant", assistant([tool_use("t0")]))
    w.append_compact_boundary("manual", 5000)
    w.append_message(
        "assistant", assistant([text("\n\n"), text("Picking up."), tool_use("t2")], "m9")
    )
    w.append_message(
        "user", {"role": "user", "content": [result("t0", "old"), result("t2", "new")]}
    )
    w.append_message("assistant", assistant([text("Finished.")], "m10"))
    conv = rebuild_conversation(read_entries(w.path))
    assert conv.cleanups["orphan_tool_results"] == 1 and conv.cleanups["blank_text_blocks"] == 1
    assert conv.cleanups["leading_note_added"] == 1
    assert conv[0]["content"] == [text(EARLIER_OMITTED)]
    assert conv[1]["content"] == [text("Picking up."), tool_use("t2")]
    assert conv[2]["content"] == [result("t2", "new")]
    assert_sendable(conv)


def test_meta_messages_are_left_out_unless_asked(tmp_path: Path) -> None:
    w = make_writer(tmp_path / "s.jsonl")
    w.append_message("user", {"role": "user", "content": "<memory>context</memory>"}, is_meta=True)
    w.append_message("user", {"role": "user", "content": "hello"})
    w.append_message("assistant", assistant([text("Hi.")]))
    w.append_system("turn_duration", "", durationMs=5)
    assert rebuild_conversation(read_entries(w.path))[0]["content"] == [text("hello")]
    with_meta = rebuild_conversation(read_entries(w.path), include_meta=True)
    assert with_meta[0]["content"] == [text("<memory>context</memory>"), text("hello")]
    assert with_meta.skipped["system"] == 1


def test_reader_skips_blank_corrupt_and_unknown_lines(tmp_path: Path) -> None:
    path = tmp_path / "s.jsonl"
    w = make_writer(path)
    u1 = w.append_message("user", {"role": "user", "content": "hi"})
    with open(path, "a", encoding="utf-8") as f:
        f.write("\n   \n[1, 2]\nnot json\n")
        f.write(json.dumps({"type": "queue-operation", "operation": "enqueue"}) + "\n")
        f.write(json.dumps({"type": "progress", "uuid": "p1", "parentUuid": u1}) + "\n")
        f.write(json.dumps({"type": "user", "uuid": "broken"}) + "\n")
    w2 = make_writer(path, leaf_uuid="p1")
    a1 = w2.append_message("assistant", assistant([text("Hello.")]))
    entries = read_entries(path)
    s = entries.stats
    assert (s.blank_lines, s.corrupt_lines, s.invalid_entries) == (2, 2, 1)
    assert s.skipped_types == {"queue-operation": 1, "progress": 1}
    assert [e["uuid"] for e in entries] == [u1, a1]
    assert entries[1]["parentUuid"] == u1  # spliced past the progress entry
    assert [m["role"] for m in rebuild_conversation(entries)] == ["user", "assistant"]


def test_empty_and_message_free_logs(tmp_path: Path) -> None:
    empty = tmp_path / "empty.jsonl"
    empty.write_bytes(b"")
    conv = rebuild_conversation(read_entries(empty))
    assert list(conv) == [] and conv.interrupted == "none"
    only_system = tmp_path / "sys.jsonl"
    w = make_writer(only_system)
    w.append_system("note", "x")
    w.flush()
    assert list(rebuild_conversation(read_entries(only_system))) == []


# --------------------------------------------------------------------------- large logs


def _filler_line(i: int, parent: str | None, size: int) -> tuple[str, str]:
    uid = f"00000000-0000-4000-8000-{i:012d}"
    role = "user" if i % 2 == 0 else "assistant"
    entry = {
        "parentUuid": parent,
        "isSidechain": False,
        "type": role,
        "message": {"role": role, "content": [text("x" * size)]},
        "uuid": uid,
        "sessionId": SESSION,
    }
    return uid, json.dumps(entry, separators=(",", ":")) + "\n"


def _big_log(path: Path, *, lines: int, size: int, boundary: bool = True) -> int:
    """Filler, then (optionally) a boundary and a short tail. Returns the boundary offset."""
    parent = None
    with open(path, "w", encoding="utf-8") as f:
        for i in range(lines):
            parent, line = _filler_line(i, parent, size)
            f.write(line)
        offset = f.tell()
    w = make_writer(path, leaf_uuid=parent)
    if boundary:
        w.append_compact_boundary("auto", 170_000)
        w.append_summary("1. Primary Request and Intent: make the report")
    w.append_message("user", {"role": "user", "content": "continue"})
    # A decoy after the real boundary: the pattern as a value inside a tool input.
    grep = {
        "type": "tool_use",
        "id": "t1",
        "name": "Grep",
        "input": {"subtype": "compact_boundary"},
    }
    w.append_message("assistant", assistant([grep], "m_grep"))
    w.append_message("user", {"role": "user", "content": [result("t1", "none")]})
    w.append_message("assistant", assistant([text("Report done.")], "m_end"))
    return offset


def test_large_log_is_parsed_only_from_its_last_boundary(tmp_path: Path) -> None:
    path = tmp_path / "big.jsonl"
    offset = _big_log(path, lines=2800, size=2000)
    assert path.stat().st_size > FAST_PATH_BYTES
    entries = read_entries(path)
    s = entries.stats
    assert s.fast_path and s.boundary_found
    assert s.start_offset == offset
    assert s.lines_parsed == 6 and s.lines_read == 6  # boundary, summary, 4 messages
    assert s.bytes_scanned_backwards < 2 * SCAN_BLOCK_BYTES
    assert entries[0]["subtype"] == "compact_boundary"
    conv = rebuild_conversation(entries)
    assert conv.summary.startswith("1. Primary Request")
    assert conv[-1]["content"] == [text("Report done.")]


@pytest.mark.parametrize("block", [5, 19, 64, 1000])
def test_backward_search_across_block_edges(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, block: int
) -> None:
    path = tmp_path / "log.jsonl"
    offset = _big_log(path, lines=6, size=300)
    slow = read_entries(path)
    monkeypatch.setattr(reader, "FAST_PATH_BYTES", 0)
    monkeypatch.setattr(reader, "SCAN_BLOCK_BYTES", block)
    fast = read_entries(path)
    assert fast.stats.fast_path and fast.stats.start_offset == offset
    assert list(fast) == list(slow)
    assert fast.stats.lines_parsed == 6 < slow.stats.lines_parsed


def test_large_log_without_boundary_is_read_whole(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "log.jsonl"
    _big_log(path, lines=10, size=100, boundary=False)
    monkeypatch.setattr(reader, "FAST_PATH_BYTES", 0)
    monkeypatch.setattr(reader, "SCAN_BLOCK_BYTES", 128)
    entries = read_entries(path)
    assert entries.stats.fast_path and not entries.stats.boundary_found
    assert entries.stats.start_offset == 0 and len(entries) == 14


# --------------------------------------------------------------------------- retention


def _touch(path: Path, age_days: float, now: float, body: str = "x") -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(body)
    stamp = now - age_days * 86400
    os.utime(path, (stamp, stamp))
    return path


def test_retention_deletes_old_logs_only(tmp_path: Path) -> None:
    now = time.time()
    projects = tmp_path / "projects"
    key = projects / "-home-ds-project"
    old_log = _touch(key / "old-session.jsonl", 40, now)
    old_sub = _touch(key / "old-session" / "subagents" / "agent-a1.jsonl", 40, now)
    notes = _touch(key / "old-session" / "session-memory" / "summary.md", 40, now)
    recent_sub = _touch(key / "old-session" / "subagents" / "agent-a2.jsonl", 2, now)
    new_log = _touch(key / "new-session.jsonl", 3, now)
    memory_log = _touch(key / "memory.jsonl", 40, now)
    memories = [
        _touch(key / "memory" / "MEMORY.md", 400, now),
        _touch(key / "memory" / "user_role.md", 400, now),
        _touch(key / "memory" / "team" / "old.jsonl", 400, now),
        _touch(key / "old-session" / "memory" / "x.jsonl", 400, now),
        _touch(key / "notes.md", 400, now),
    ]
    outside = _touch(tmp_path / "elsewhere" / "linked.jsonl", 400, now)
    (projects / "linked-key").symlink_to(outside.parent)

    removed = cleanup_old_transcripts(projects, days=30, now=now)

    assert set(removed) >= {old_log, old_sub, memory_log}
    for gone in (old_log, old_sub, memory_log):
        assert not gone.exists()
    for kept in (notes, recent_sub, new_log, outside, *memories):
        assert kept.exists(), kept
    assert (key / "old-session" / "subagents").is_dir()  # still holds a recent file
    assert cleanup_old_transcripts(projects, days=30, now=now) == []
    assert cleanup_old_transcripts(tmp_path / "missing") == []
    with pytest.raises(ValueError, match="days"):
        cleanup_old_transcripts(projects, days=-1)


def test_retention_removes_emptied_session_folders(tmp_path: Path) -> None:
    now = time.time()
    key = tmp_path / "projects" / "k"
    _touch(key / "s.jsonl", 31, now)
    _touch(key / "s" / "subagents" / "agent-x.jsonl", 31, now)
    removed = cleanup_old_transcripts(tmp_path / "projects", now=now)
    assert not (key / "s").exists()
    assert key / "s" in removed and key.is_dir()
