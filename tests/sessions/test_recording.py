"""Recording model exchanges and replaying them offline (docs/reference.md#where-this-project-differs, issue 7 item 4)."""

from __future__ import annotations

import ast
import importlib
import json
import os
import stat
from pathlib import Path

import pytest
from IPython.core.error import UsageError
from IPython.core.interactiveshell import InteractiveShell
from IPython.utils.capture import capture_output
from sessions import make_session as shared_session
from shell_helpers import MakeIp

from jupyter_memory.agent.loop import TURN_MIME, run_turn
from jupyter_memory.agent.session import AgentConfig, Session
from jupyter_memory.context.assemble import digest
from jupyter_memory.context.request_parts import readable
from jupyter_memory.localapi import ToolCall, Turn
from jupyter_memory.magics import load_ipython_extension
from jupyter_memory.magics.state import forget_state, state_for
from jupyter_memory.sessions import recording as record
from jupyter_memory.sessions.recording import (
    Normaliser,
    Recording,
    RecordingError,
    describe_difference,
    first_difference,
)

CENTS = (
    "---\nname: revenue-in-cents\ndescription: sales.revenue is stored in cents\n"
    "type: project\n---\nThe revenue column holds integer cents.\n"
)
INDEX = "- [Revenue in cents](project_cents.md) — sales.revenue holds cents\n"


def make_session(folder: Path, extra_env: dict[str, str] | None = None, **config) -> Session:
    """A session whose project is ``folder`` and whose memdir is ``folder/memory``."""
    return shared_session(folder, memdir=folder / "memory", env={**os.environ, **(extra_env or {})},
                          **config)


def seed_memory(folder: Path) -> Path:
    memdir = folder / "memory"
    memdir.mkdir(parents=True, exist_ok=True)
    (memdir / "MEMORY.md").write_text(INDEX, encoding="utf-8")
    (memdir / "project_cents.md").write_text(CENTS, encoding="utf-8")
    return memdir


def record_session(folder: Path, fake_api, prompts: list[str]) -> tuple[Path, list]:
    """Record a session of ``prompts`` in ``folder``: answer, then a Read of a memory."""
    memdir = seed_memory(folder)
    fake_api.script([
        Turn(text="Hello! How can I help?"),
        Turn(text="Let me check.", tool_calls=[ToolCall("Read", {"file_path": str(memdir / "project_cents.md")})]),
        Turn(text=f"Revenue is stored in cents, as {memdir}/project_cents.md says."),
    ][: 1 + 2 * (len(prompts) - 1)])
    session = make_session(folder)
    path = folder / "demo.recording.json"
    record.start_recording(session, path)
    results = [run_turn(session, p) for p in prompts]
    record.stop(session)
    return path, results


def offline(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("ANTHROPIC_API_KEY", "ANTHROPIC_BASE_URL", "ANTHROPIC_AUTH_TOKEN"):
        monkeypatch.delenv(name, raising=False)


# --------------------------------------------------------------------------- normalising


def test_normaliser_replaces_paths_date_and_platform_and_restores_them() -> None:
    norm = Normaliser.build(
        [("{{MEMDIR}}", "/work/p/memory"), ("{{PROJECT}}", "/work/p"), ("{{CWD}}", "/work/p")],
        today="2026-03-04", platform="Linux x86_64", python="3.11.9",
    )
    text = ("see /work/p/memory/x.md and /work/p/data.csv, not /work/p2/y or /work/p.bak; "
            "end /work/p. Today's date is 2026-03-04.\n- Platform: Linux x86_64\n- Python: 3.11.9\n")
    out = norm.text(text)
    assert out == ("see {{MEMDIR}}/x.md and {{PROJECT}}/data.csv, not /work/p2/y or /work/p.bak; "
                   "end {{PROJECT}}. Today's date is {{TODAY}}.\n- Platform: {{PLATFORM}}\n"
                   "- Python: {{PYTHON}}\n")
    assert norm.restore(out) == text
    other = Normaliser.build([("{{MEMDIR}}", "/elsewhere/m"), ("{{PROJECT}}", "/elsewhere")],
                             today="2026-03-04", platform="Darwin arm64", python="3.12.1")
    assert other.restore(out).startswith("see /elsewhere/m/x.md and /elsewhere/data.csv")
    assert "- Platform: Darwin arm64\n" in other.restore(out)


def test_timestamps_are_normalised_in_requests_only() -> None:
    norm = Normaliser.build([])
    body = {"messages": [{"content": "     5\tmodified: 2026-03-04T10:11:12.345Z\nbody"}]}
    assert norm.request(body)["messages"][0]["content"].endswith("modified: {{TIMESTAMP}}\nbody")
    compacted = {"messages": [{"content": "Compacted at 2026-12-01T01:11:16Z: 4 messages"}]}
    assert norm.request(compacted)["messages"][0]["content"] == "Compacted at {{INSTANT}}: 4 messages"
    assert norm.response(body) == body


def test_first_difference_names_the_path_and_both_values() -> None:
    a = {"model": "m", "messages": [{"role": "user", "content": [{"text": "Plot revenue by month"}]}]}
    b = {"model": "m", "messages": [{"role": "user", "content": [{"text": "Plot profit by month"}]}]}
    assert first_difference(a, a) is None
    where, old, new = first_difference(a, b)
    assert where == "messages[0].content[0].text" and (old, new) == ("Plot revenue by month",
                                                                     "Plot profit by month")
    text = describe_difference(a, b)
    assert "messages[0].content[0].text" in text and "revenue" in text and "profit" in text
    where, old, _ = first_difference({"a": [1, 2]}, {"a": [1, 2, 3]})
    assert where == "a[2]" and repr(old) == "(absent)"
    assert first_difference({"x": 1}, {"x": 1, "y": 2})[0] == "y"


def test_long_values_are_shortened_around_the_difference() -> None:
    old = "x" * 5000 + "revenue" + "y" * 5000
    new = "x" * 5000 + "profit" + "y" * 5000
    text = describe_difference({"t": old}, {"t": new})
    assert len(text) < 300 and "revenue" in text and "profit" in text


# --------------------------------------------------------------------------- record & replay


def test_replay_in_another_folder_gives_the_recorded_turns_offline(
    tmp_path: Path, fake_api, monkeypatch: pytest.MonkeyPatch
) -> None:
    path, recorded = record_session(tmp_path / "a", fake_api, ["Hello", "How is revenue stored?"])
    assert [r.status for r in recorded] == ["ok", "ok"]
    data = json.loads(path.read_text())
    assert data["format"] == record.FORMAT and len(data["exchanges"]) == 3
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    raw = path.read_text()
    assert str(tmp_path / "a") not in raw  # every path was normalised
    asked = len(fake_api.requests)

    offline(monkeypatch)
    target = tmp_path / "b"
    seed_memory(target)
    copy = target / "demo.recording.json"
    copy.write_text(raw)
    session = make_session(target)
    replayer = record.start_replay(session, copy)
    replayed = [run_turn(session, p) for p in ["Hello", "How is revenue stored?"]]
    assert [r.status for r in replayed] == ["ok", "ok"]
    assert len(fake_api.requests) == asked  # nothing reached the live endpoint
    assert replayer.served == 3 and replayer.mismatches == []
    memdir_b = target / "memory"
    assert replayed[0].answer == recorded[0].answer
    assert replayed[1].answer == recorded[1].answer.replace(str(tmp_path / "a"), str(target))
    call = readable(replayed[1].record)["tool_calls"][0]
    assert call["input"]["file_path"] == str(memdir_b / "project_cents.md")
    assert "integer cents" in call["result"]
    for mine, theirs in zip(replayed, recorded, strict=True):
        for key in ("session_id", "started", "ended", "usage", "turn"):
            assert mine.record[key] == theirs.record[key], key
        assert [r["id"] for r in mine.record["requests"]] == [r["id"] for r in theirs.record["requests"]]
        assert [r["sent"] for r in mine.record["requests"]] == [r["sent"] for r in theirs.record["requests"]]
    record.stop(session)
    assert session.today_override is None and session.endpoint.kind == "live"
    assert session.session_id != recorded[0].record["session_id"]  # its own id back


def test_a_changed_prompt_is_refused_with_the_first_difference(
    tmp_path: Path, fake_api, monkeypatch: pytest.MonkeyPatch
) -> None:
    path, _ = record_session(tmp_path / "a", fake_api, ["Plot revenue by month"])
    offline(monkeypatch)
    session = make_session(tmp_path / "a")
    replayer = record.start_replay(session, path)
    result = run_turn(session, "Plot profit by month")
    assert result.status == "error" and session.messages == []
    message = replayer.take_new_mismatch()
    assert replayer.take_new_mismatch() is None  # reported once
    assert "not in the recording demo.recording.json" in message
    assert "First difference at messages[0].content[" in message
    assert '"Plot revenue by month"' in message and '"Plot profit by month"' in message
    assert "%agent record" in message


def test_a_changed_memory_index_is_refused_too(
    tmp_path: Path, fake_api, monkeypatch: pytest.MonkeyPatch
) -> None:
    path, _ = record_session(tmp_path / "a", fake_api, ["Hello"])
    offline(monkeypatch)
    (tmp_path / "a" / "memory" / "MEMORY.md").write_text(INDEX.replace("holds cents", "is dollars"))
    session = make_session(tmp_path / "a")
    replayer = record.start_replay(session, path, match="strict")
    run_turn(session, "Hello")
    message = replayer.take_new_mismatch()
    assert "messages[0].content[0].text" in message and "dollars" in message
    # Matched on the conversation (the default), the changed index is a warning naming it.
    record.stop(session)
    session = make_session(tmp_path / "a")
    replayer = record.start_replay(session, path)
    assert run_turn(session, "Hello").ok
    assert replayer.take_new_mismatch() is None
    (warning,) = replayer.take_new_warnings()
    assert "context blocks" in warning and "dollars" in warning


def test_a_changed_system_prompt_replays_with_a_warning_and_fails_when_strict(
    tmp_path: Path, fake_api, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A recording made before a change to our own prompt text still replays."""
    from jupyter_memory.context import prompts

    path, recorded = record_session(tmp_path / "a", fake_api, ["Hello", "How is revenue stored?"])
    offline(monkeypatch)
    monkeypatch.setattr(prompts, "IDENTITY", prompts.IDENTITY.replace(
        "Be direct and concrete.", "Be brief and concrete."))
    session = make_session(tmp_path / "a")
    replayer = record.start_replay(session, path)
    results = [run_turn(session, p) for p in ("Hello", "How is revenue stored?")]
    assert [r.answer for r in results] == [r.answer for r in recorded]
    assert replayer.take_new_mismatch() is None
    warnings = replayer.take_new_warnings()
    assert len(warnings) == 1  # the same change is named once, not at every request
    assert "the system prompt" in warnings[0] and "Be brief" in warnings[0]
    assert "Be direct" in warnings[0] and "--strict" in warnings[0]
    record.stop(session)

    session = make_session(tmp_path / "a")
    replayer = record.start_replay(session, path, match="strict")
    result = run_turn(session, "Hello")
    assert result.status == "error"
    message = replayer.take_new_mismatch()
    assert "First difference at system[0].text" in message
    assert "Be direct" in message and "Be brief" in message and "strict matching" in message


def test_a_changed_tool_description_is_named_in_the_warning() -> None:
    tools = [{"name": "Read", "description": "Read a file."}, {"name": "Grep", "description": "g"}]
    recorded = {"model": "m", "system": [{"type": "text", "text": "a"}], "tools": tools,
                "messages": [{"role": "user", "content": "hi"}]}
    now = json.loads(json.dumps(recorded))
    now["tools"][0]["description"] = "Read one file."
    now["tools"].append({"name": "Plot", "description": "p"})
    now["max_tokens"] = 10
    changes = record.describe_changes(recorded, now)
    assert changes[0] == "the description or schema of tool Read"
    assert changes[1] == "new tool Plot" and changes[2].startswith("max_tokens (recorded")
    assert record.describe_changes(recorded, recorded) == []


def test_the_conversation_view_keeps_what_was_said_and_drops_our_context() -> None:
    request = {"system": "s", "tools": [], "messages": [
        {"role": "user", "content": [
            {"type": "text", "text": "<system-reminder>\nToday is x\n</system-reminder>"},
            {"type": "text", "text": "Plot it", "cache_control": {"type": "ephemeral"}}]},
        {"role": "assistant", "content": [{"type": "tool_use", "id": "t1", "name": "Read",
                                           "input": {"file_path": "/p"}}]},
        {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t1",
                                      "content": [{"type": "text", "text": "data"}]}]}]}
    quoted = {"messages": [{"role": "user", "content": "Notes:\nPerson: <system-reminder>\n"
                            "about 3,813 tokens\n</system-reminder>\nPlot it"}]}
    assert record.conversation_view(quoted) == [{"role": "user", "content": [
        {"text": "Notes:\nPerson: <system-reminder/>\nPlot it"}]}]
    assert record.conversation_view(request) == [
        {"role": "user", "content": [{"text": "Plot it"}]},
        {"role": "assistant", "content": [{"tool_use": "Read", "input": {"file_path": "/p"}}]},
        {"role": "user", "content": [{"tool_result": ["data"], "is_error": False}]}]


def test_match_mode_comes_from_the_flag_the_setting_or_the_environment() -> None:
    assert record.match_mode(env={}) == "conversation"
    assert record.match_mode(True, env={}) == "strict"
    assert record.match_mode(configured="strict", env={}) == "strict"
    assert record.match_mode(env={record.MATCH_ENV: "STRICT"}) == "strict"
    with pytest.raises(RecordingError, match="Unknown replay match 'exact'"):
        record.match_mode(env={record.MATCH_ENV: "exact"})


def test_a_kernel_that_does_not_know_its_notebook_takes_the_recorded_one(
    tmp_path: Path, fake_api, monkeypatch: pytest.MonkeyPatch
) -> None:
    """nbconvert, nbclient and papermill start kernels without the notebook's path: the
    replay names the same notebook the recording did, so the requests are identical."""
    folder = tmp_path / "a"
    seed_memory(folder)
    (folder / "analysis.ipynb").write_text("{}", encoding="utf-8")
    fake_api.script([Turn(text="Hello!")])
    session = Session(folder, config=AgentConfig.from_env(),
                      env=dict(os.environ, JUPYTER_MEMORY_DIR=str(folder / "memory")),
                      notebook=str(folder / "analysis.ipynb"))
    path = folder / "analysis.recording.json"
    record.start_recording(session, path)
    assert run_turn(session, "Hi").ok
    record.stop(session)
    assert json.loads(path.read_text())["notebook"] == "analysis.ipynb"

    offline(monkeypatch)
    session = make_session(folder)  # no notebook known
    replayer = record.start_replay(session, path, match="strict")
    assert session.notebook == str(folder.resolve() / "analysis.ipynb")
    assert run_turn(session, "Hi").answer == "Hello!"
    assert replayer.take_new_mismatch() is None and replayer.take_new_warnings() == []
    record.stop(session)
    assert session.notebook is None


def test_more_requests_than_recorded_are_refused(
    tmp_path: Path, fake_api, monkeypatch: pytest.MonkeyPatch
) -> None:
    path, _ = record_session(tmp_path / "a", fake_api, ["Hello"])
    offline(monkeypatch)
    session = make_session(tmp_path / "a")
    replayer = record.start_replay(session, path)
    assert run_turn(session, "Hello").ok
    assert not run_turn(session, "And another thing").ok
    assert "all 1 recorded exchanges have been served" in replayer.take_new_mismatch()


def test_prefetch_selector_calls_are_recorded_and_replayed(
    tmp_path: Path, fake_api, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Side calls (the small model choosing memories) run in a thread and use create()."""

    def respond(body: dict) -> Turn:
        if any(t.get("name") == "select_memories" for t in body.get("tools", [])):
            return Turn(tool_calls=[ToolCall("select_memories",
                                             {"selected_memories": ["project_cents.md"]})])
        last = body["messages"][-1]["content"]
        if any(b.get("type") == "tool_result" for b in last):
            return Turn(text="Revenue is in cents.")
        return Turn(text="Looking.", tool_calls=[ToolCall("Glob", {"pattern": "*.csv"})])

    fake_api.responder = respond
    folder = tmp_path / "a"
    seed_memory(folder)
    session = make_session(folder, recall_mode="prefetch")
    path = folder / "p.recording.json"
    record.start_recording(session, path)
    live = run_turn(session, "how is the revenue column stored?")
    record.stop(session)
    exchanges = Recording.load(path).exchanges
    assert sorted(e["stream"] for e in exchanges) == [False, True, True]
    assert any("project_cents.md" in json.dumps(m) for m in live.record["messages"])

    offline(monkeypatch)
    again = make_session(folder, recall_mode="prefetch")
    replayer = record.start_replay(again, path)
    replayed = run_turn(again, "how is the revenue column stored?")
    assert replayed.ok, "\n".join(replayer.mismatches)
    assert replayer.served == 3 and replayed.answer == live.answer
    assert replayed.record["messages"] == live.record["messages"]


def test_background_extraction_is_recorded_and_replayed_in_step(
    tmp_path: Path, fake_api, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The extraction agent forks the conversation after a turn, in a thread. Recorded and
    replayed, it finishes before the cell does, so both runs make the same requests."""
    role = "---\nname: role\ndescription: the person is a data analyst\ntype: user\n---\nAnalyst.\n"

    def respond(body: dict) -> Turn:
        fork = "memory extraction agent" in json.dumps(body["messages"][-1])
        last = body["messages"][-1]["content"]
        if any(b.get("type") == "tool_result" for b in last):
            return Turn(text="Saved the role.")
        memdir = Path(os.environ["JUPYTER_MEMORY_DIR"])
        if fork and not (memdir / "user_role.md").exists():
            return Turn(tool_calls=[ToolCall("Write", {"file_path": str(memdir / "user_role.md"),
                                                       "content": role})])
        return Turn(text="Nothing new to keep." if fork else "Noted, analyst.")

    fake_api.responder = respond
    on = {"JUPYTER_MEMORY_EXTRACTION": "1"}
    folder = tmp_path / "a"
    seed_memory(folder)
    monkeypatch.setenv("JUPYTER_MEMORY_DIR", str(folder / "memory"))
    session = make_session(folder, on)
    path = folder / "x.recording.json"
    record.start_recording(session, path)
    live = [run_turn(session, p) for p in ("I am a data analyst.", "What else?")]
    record.stop(session)
    written = (folder / "memory" / "user_role.md").read_text()
    assert "origin: extraction" in written and written.endswith("Analyst.\n")
    count = len(Recording.load(path).exchanges)
    assert count == 5  # two turns, a fork that wrote (2 calls), a fork that did not (1)

    offline(monkeypatch)
    target = tmp_path / "b"
    seed_memory(target)
    (target / "x.recording.json").write_text(path.read_text())
    again = make_session(target, on)
    replayer = record.start_replay(again, target / "x.recording.json")
    replayed = [run_turn(again, p) for p in ("I am a data analyst.", "What else?")]
    assert replayer.mismatches == [] and replayer.served == count
    assert [r.answer for r in replayed] == [r.answer for r in live]
    def without_time(text: str) -> list[str]:
        return [line for line in text.splitlines() if not line.startswith("modified:")]

    assert without_time((target / "memory" / "user_role.md").read_text()) == without_time(written)
    log = again.log.written_to
    assert log.parent.name == "replays" and log.is_file()  # not the recorded session's log
    # What the conversation names (compaction summaries, hooks) is the recorded log.
    assert again.log.path.name == f"{again.session_id}.jsonl"
    record.stop(again)
    assert again.log.path.name == f"{again.session_id}.jsonl"


def test_recording_shares_repeated_parts_between_requests(tmp_path: Path, fake_api) -> None:
    path, _ = record_session(tmp_path / "a", fake_api, ["Hello", "How is revenue stored?"])
    rec = Recording.load(path)
    systems = {json.dumps(e["request"]["system"]) for e in rec.exchanges}
    assert len(systems) == 1  # one blob, referenced three times
    full = rec.request(rec.exchanges[2])
    assert full["messages"][0]["role"] == "user" and isinstance(full["system"], list)
    assert rec.exchanges[2]["digest"] == digest(full)
    assert [m["role"] for m in full["messages"]] == ["user", "assistant", "user", "assistant", "user"]


def test_bad_recordings_are_explained(tmp_path: Path) -> None:
    with pytest.raises(RecordingError, match="No recording at"):
        Recording.load(tmp_path / "missing.recording.json")
    bad = tmp_path / "bad.json"
    bad.write_text("{not json")
    with pytest.raises(RecordingError, match="not valid JSON"):
        Recording.load(bad)
    bad.write_text(json.dumps({"format": "something else"}))
    with pytest.raises(RecordingError, match="not a jupyter-memory recording"):
        Recording.load(bad)
    bad.write_text(json.dumps({"format": record.FORMAT, "version": 99}))
    with pytest.raises(RecordingError, match="version 99"):
        Recording.load(bad)


def test_recording_never_overwrites_another_file(tmp_path: Path) -> None:
    notebook = tmp_path / "analysis.ipynb"
    notebook.write_text('{"cells": []}')
    session = make_session(tmp_path)
    with pytest.raises(RecordingError, match="refusing to overwrite"):
        record.start_recording(session, notebook)
    assert notebook.read_text() == '{"cells": []}'
    assert record.controller(session) is None


def test_start_snapshot_holds_memory_conversation_and_instructions(tmp_path: Path) -> None:
    seed_memory(tmp_path)
    (tmp_path / "CLAUDE.md").write_text("Use polars, not pandas.\n")
    session = make_session(tmp_path)
    session.messages.append({"role": "user", "content": [{"type": "text", "text": f"hi {tmp_path}"}]})
    rec = Recording.new(tmp_path / "x.recording.json", session)
    start = rec.start
    assert {m["file"] for m in start["memdir"]} == {"MEMORY.md", "project_cents.md"}
    assert start["messages"][0]["content"][0]["text"] == "hi {{PROJECT}}"
    assert {"path": "{{PROJECT}}/CLAUDE.md", "scope": "project",
            "text": "Use polars, not pandas.\n"} in start["instructions"]


def test_default_path_is_beside_the_notebook(tmp_path: Path) -> None:
    assert record.default_recording_path(str(tmp_path / "sales.ipynb"), tmp_path) == \
        tmp_path / "sales.recording.json"
    assert record.default_recording_path(None, tmp_path) == tmp_path / "agent.recording.json"


# --------------------------------------------------------------------------- the magics




@pytest.fixture
def seeded_ip(make_ip: MakeIp, project: Path) -> InteractiveShell:
    """The shell in ``project``, whose memdir ``project/memory`` holds one memory."""
    return make_ip(project, memdir=seed_memory(project))


def run(shell: InteractiveShell, code: str):
    with capture_output() as cap:
        result = shell.run_cell(code, store_history=True)
    return cap, result


def answers(cap) -> list[str]:
    return [o.data[TURN_MIME]["answer"] for o in cap.outputs if TURN_MIME in o.data]


def test_record_then_replay_through_the_magics(seeded_ip, fake_api, monkeypatch, tmp_path) -> None:
    fake_api.script([Turn(text="First answer."), Turn(text="Second answer.")])
    cap, _ = run(seeded_ip, "%agent record demo.recording.json")
    assert "Recording every model exchange to demo.recording.json" in cap.stdout
    assert answers(run(seeded_ip, "%%agent\nWhat is in memory?")[0]) == ["First answer."]
    assert answers(run(seeded_ip, "%agent And then?")[0]) == ["Second answer."]
    assert "2 exchanges" in run(seeded_ip, "%agent status")[0].stdout
    assert "Stopped recording" in run(seeded_ip, "%agent record off")[0].stdout

    offline(monkeypatch)
    forget_state(seeded_ip)
    load_ipython_extension(seeded_ip)  # a fresh kernel
    cap, _ = run(seeded_ip, "%agent replay demo.recording.json")
    assert "Replaying 2 recorded model exchanges from demo.recording.json" in cap.stdout
    assert answers(run(seeded_ip, "%%agent\nWhat is in memory?")[0]) == ["First answer."]
    assert "replaying" in run(seeded_ip, "%agent status")[0].stdout
    cap, result = run(seeded_ip, "%agent And then, differently?")
    assert isinstance(result.error_in_exec, record.ReplayMismatch)  # one line, no traceback
    assert "First difference at messages[" in str(result.error_in_exec)
    assert "Traceback" not in cap.stdout and "ReplayMismatch: Replay: " in cap.stdout
    assert answers(cap) == []
    assert "Stopped replaying" in run(seeded_ip, "%agent replay off")[0].stdout


def test_replay_setting_in_the_environment_wins_over_record(seeded_ip, fake_api, monkeypatch) -> None:
    fake_api.script([Turn(text="Recorded answer.")])
    run(seeded_ip, "%agent record env.recording.json")
    run(seeded_ip, "%agent Hello there")
    run(seeded_ip, "%agent record off")
    offline(monkeypatch)
    monkeypatch.setenv(record.REPLAY_ENV, "env.recording.json")
    forget_state(seeded_ip)
    load_ipython_extension(seeded_ip)
    cap, _ = run(seeded_ip, "%agent record env.recording.json")
    assert "(JUPYTER_MEMORY_REPLAY)" in cap.stdout and "instead of recording" in cap.stdout
    assert answers(run(seeded_ip, "%agent Hello there")[0]) == ["Recorded answer."]


def test_missing_recording_fails_the_cell(seeded_ip, monkeypatch) -> None:
    offline(monkeypatch)
    _, result = run(seeded_ip, "%agent replay nowhere.recording.json")
    assert isinstance(result.error_in_exec, UsageError)
    assert "No recording at nowhere.recording.json" in str(result.error_in_exec)


def test_a_changed_system_prompt_through_the_magics(seeded_ip, fake_api, monkeypatch) -> None:
    """``%agent replay`` warns in the cell's stderr; ``%agent replay --strict`` fails it."""
    from jupyter_memory.context import prompts

    fake_api.script([Turn(text="Recorded answer.")])
    run(seeded_ip, "%agent record p.recording.json")
    run(seeded_ip, "%agent Hello there")
    run(seeded_ip, "%agent record off")
    offline(monkeypatch)
    monkeypatch.setattr(prompts, "IDENTITY", prompts.IDENTITY.replace(
        "Be direct and concrete.", "Be brief and concrete."))
    forget_state(seeded_ip)
    load_ipython_extension(seeded_ip)
    run(seeded_ip, "%agent replay p.recording.json")
    cap, result = run(seeded_ip, "%agent Hello there")
    assert result.error_in_exec is None and answers(cap) == ["Recorded answer."]
    assert "Replay warning" in cap.stderr and "the system prompt" in cap.stderr
    assert "Be brief" in cap.stderr

    forget_state(seeded_ip)
    load_ipython_extension(seeded_ip)
    cap, _ = run(seeded_ip, "%agent replay --strict p.recording.json")
    assert "(strict matching)" in cap.stdout
    assert "strict matching" in run(seeded_ip, "%agent status")[0].stdout
    cap, result = run(seeded_ip, "%agent Hello there")
    assert isinstance(result.error_in_exec, record.ReplayMismatch) and answers(cap) == []
    message = str(result.error_in_exec)
    assert "First difference at system[0].text" in message and "Be brief" in message


def test_agent_new_starts_a_fresh_session_in_the_same_kernel(seeded_ip, fake_api) -> None:
    fake_api.script([Turn(text="One."), Turn(text="Two.")])
    run(seeded_ip, "%agent First question")
    before = state_for(seeded_ip).session
    cap, _ = run(seeded_ip, "%agent new")
    after = state_for(seeded_ip).session
    assert after is not before and after.session_id != before.session_id
    assert after.messages == [] and f"previous one ({before.session_id}) ended" in cap.stdout
    assert after.session_id not in cap.stdout
    run(seeded_ip, "%agent Second question")
    assert len(fake_api.requests[1].body["messages"]) == 1  # the conversation started over


#: The names of the single module that record and replay were before they were split.
OLD_SURFACE = (
    "FORMAT", "MATCH_ENV", "MATCH_MODES", "REPLAY_ENV", "SUFFIX", "VERSION", "Normaliser",
    "Recorder", "Recording", "RecordingError", "ReplayMismatch", "Replayer", "controller",
    "conversation_view", "default_recording_path", "describe_changes", "describe_difference",
    "first_difference", "match_mode", "start_recording", "start_replay", "stop",
)


def test_the_package_exports_every_name_from_the_module_that_holds_it() -> None:
    assert set(OLD_SURFACE) <= set(record.__all__)
    assert sorted(record.__all__) == sorted(record._EXPORTS)
    for name, module in record._EXPORTS.items():
        home = importlib.import_module(f"jupyter_memory.sessions.recording.{module}")
        assert getattr(record, name) is getattr(home, name), name
    with pytest.raises(AttributeError, match="no attribute 'Nothing'"):
        _ = record.Nothing
    # The type checker reads the same names from the same modules.
    tree = ast.parse(Path(record.__file__).read_text(encoding="utf-8"))
    checked = {alias.name: node.module.rsplit(".", 1)[1]
               for node in ast.walk(tree) if isinstance(node, ast.ImportFrom)
               and (node.module or "").startswith("jupyter_memory.sessions.recording.")
               for alias in node.names}
    assert checked == record._EXPORTS
