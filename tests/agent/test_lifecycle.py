"""Lifecycle hooks: Python callables and settings commands at SessionStart, PreCompact,
PostCompact and Stop."""

from __future__ import annotations

import json
import shlex
import sys
from functools import partial
from pathlib import Path

import pytest
from sessions import make_session as shared_session

from jupyter_memory.agent import lifecycle
from jupyter_memory.agent.compaction import SUMMARY_REQUEST_HEAD, CompactionBlocked, compact
from jupyter_memory.agent.lifecycle import HookResult
from jupyter_memory.agent.loop import run_turn
from jupyter_memory.agent.session import Session
from jupyter_memory.localapi import Turn
from jupyter_memory.memdir.trust import trust_folder
from jupyter_memory.sessions.resume import Resumed, apply_resume

MODEL = "claude-haiku-4-5"
SUMMARY = "<analysis>x</analysis><summary>1. Primary request and intent: test.</summary>"


@pytest.fixture(autouse=True)
def trusted(project: Path, memdir: Path) -> Path:
    """Every test's project is trusted, since project hooks run only in a trusted folder
    (tests/hardening checks the untrusted case), and works on the test's memdir."""
    trust_folder(project)
    return project


make_session = partial(shared_session, model=MODEL)


def settings_hooks(project: Path, hooks: dict, name: str = "settings.json") -> None:
    folder = project / ".claude"
    folder.mkdir(exist_ok=True)
    (folder / name).write_text(json.dumps({"hooks": hooks}))


def command(script: str) -> str:
    """A shell command running ``script`` with this Python (portable quoting)."""
    return f"{shlex.quote(sys.executable)} -c {shlex.quote(script)}"


def one_turn(fake_api, session: Session) -> None:
    fake_api.push(Turn(text="answered"))
    run_turn(session, "a question")


def summary_prompt_sent(fake_api) -> str:
    return json.dumps(fake_api.requests[-1].body["messages"][-1])


# ------------------------------------------------------------------------- Python hooks


def test_register_rejects_unknown_events_and_non_callables(project):
    session = make_session(project)
    with pytest.raises(ValueError, match="PreCompact"):
        lifecycle.register(session, "BeforeCompact", print)
    with pytest.raises(TypeError):
        lifecycle.register(session, "PreCompact", "not callable")
    fn = lifecycle.register(session, "PreCompact", lambda payload: None)
    assert lifecycle.registered(session, "PreCompact") == [fn]
    assert lifecycle.unregister(session, "PreCompact", fn)
    assert not lifecycle.unregister(session, "PreCompact", fn)


def test_precompact_adds_instructions_and_postcompact_sees_the_summary(fake_api, project):
    session = make_session(project)
    one_turn(fake_api, session)
    seen: list[dict] = []
    lifecycle.register(session, "PreCompact", lambda p: seen.append(p) or "Mention the cat.")
    lifecycle.register(session, "PostCompact", lambda p: seen.append(p) or "saved a copy")
    fake_api.push(Turn(text=SUMMARY))
    result = compact(session, instructions="be brief")
    assert "Mention the cat." in summary_prompt_sent(fake_api)
    pre, post = seen
    assert pre["hook_event_name"] == "PreCompact" and pre["trigger"] == "manual"
    assert pre["custom_instructions"] == "be brief" and pre["session_id"] == session.session_id
    assert post["compact_summary"] == "1. Primary request and intent: test."
    assert result.post_hook_output == ["saved a copy"]


def test_precompact_can_block(fake_api, project):
    session = make_session(project)
    one_turn(fake_api, session)
    before = list(session.messages)
    lifecycle.register(session, "PreCompact", lambda p: HookResult(block=True, reason="not now"))
    with pytest.raises(CompactionBlocked, match="not now"):
        compact(session)
    assert session.messages == before and len(fake_api.requests) == 1


def test_a_failing_python_hook_is_reported_not_raised(fake_api, project):
    session = make_session(project)
    one_turn(fake_api, session)

    def broken(payload):
        raise RuntimeError("oops")

    lifecycle.register(session, "PreCompact", broken)
    fake_api.push(Turn(text=SUMMARY))
    result = compact(session)
    assert any("oops" in w for w in result.warnings)


def test_sessionstart_after_compaction_adds_context(fake_api, project):
    session = make_session(project)
    one_turn(fake_api, session)
    sources: list[str] = []
    lifecycle.register(session, "SessionStart",
                       lambda p: sources.append(p["source"]) or "Branch: main, 3 commits ahead.")
    fake_api.push(Turn(text=SUMMARY))
    result = compact(session)
    assert sources == ["compact"] and result.hook_context == ["Branch: main, 3 commits ahead."]
    last = session.messages[-1]
    assert last["_meta"]["kind"] == lifecycle.HOOK_CONTEXT_KIND
    assert "Branch: main" in last["content"][0]["text"]
    logged = [json.loads(line) for line in session.log.path.read_text().splitlines()]
    assert logged[-1]["isMeta"] and "Branch: main" in json.dumps(logged[-1]["message"])
    assert logged[-2].get("isCompactSummary")  # after the boundary, as the model sees it


# ------------------------------------------------------------------------- settings commands


def test_settings_command_gets_json_on_stdin_and_adds_instructions(fake_api, project, tmp_path):
    out = tmp_path / "payload.json"
    script = (f"import sys; data = sys.stdin.read(); open({str(out)!r}, 'w').write(data); "
              "print('Keep the SQL queries verbatim.')")
    settings_hooks(project, {"PreCompact": [{"matcher": "manual", "hooks": [
        {"type": "command", "command": command(script)}]}]})
    session = make_session(project)
    one_turn(fake_api, session)
    fake_api.push(Turn(text=SUMMARY))
    compact(session)
    payload = json.loads(out.read_text())
    assert payload["hook_event_name"] == "PreCompact" and payload["trigger"] == "manual"
    assert payload["transcript_path"] == str(session.log.path)
    sent = summary_prompt_sent(fake_api)
    assert SUMMARY_REQUEST_HEAD in sent and "Keep the SQL queries verbatim." in sent


def test_settings_command_exit_2_blocks_with_its_reason(fake_api, project):
    script = "import sys; sys.stderr.write('backup running'); sys.exit(2)"
    settings_hooks(project, {"PreCompact": [{"hooks": [{"type": "command",
                                                          "command": command(script)}]}]},
                   name="settings.local.json")
    session = make_session(project)
    one_turn(fake_api, session)
    with pytest.raises(CompactionBlocked, match="backup running"):
        compact(session)


def test_matcher_selects_the_trigger(fake_api, project, tmp_path):
    flag = tmp_path / "ran"
    settings_hooks(project, {"PreCompact": [{"matcher": "auto", "hooks": [
        {"type": "command", "command": command(f"open({str(flag)!r}, 'w')")}]}]})
    session = make_session(project)
    one_turn(fake_api, session)
    fake_api.push(Turn(text=SUMMARY))
    compact(session)  # manual: the auto-only hook does not run
    assert not flag.exists()
    assert lifecycle.matches("manual|auto", "auto") and not lifecycle.matches("auto", "manual")
    assert lifecycle.matches("", "anything") and lifecycle.matches("*", "x")


def test_json_output_and_errors_and_timeouts(project):
    settings_hooks(project, {"SessionStart": [{"hooks": [
        {"type": "command", "command": command(
            "import json; print(json.dumps({'hookSpecificOutput': "
            "{'additionalContext': 'from json'}}))")},
        {"type": "command", "command": command("import sys; sys.exit(1)")},
        {"type": "command", "command": command("import time; time.sleep(5)"), "timeout": 0.3},
        {"type": "command", "command": command("import sys; sys.exit(2)")},
    ]}]})
    session = make_session(project)
    outcome = lifecycle.run(session, "SessionStart", {"source": "startup"}, match="startup")
    assert outcome.texts == ["from json"] and outcome.ran == 4
    assert not outcome.blocked  # SessionStart cannot block
    joined = "\n".join(outcome.errors)
    assert "status 1" in joined and "stopped after 0.3 s" in joined and "cannot block" in joined


def test_commands_are_read_once_per_session(project):
    session = make_session(project)
    assert lifecycle.command_hooks(session) == []
    settings_hooks(project, {"Stop": [{"hooks": [{"type": "command", "command": "true"}]}]})
    assert lifecycle.command_hooks(session) == []  # a snapshot, like the reference
    [hook] = lifecycle.reload_hooks(session)
    assert hook.event == "Stop" and hook.source == "project" and hook.timeout == 60.0


# ------------------------------------------------------------------------- the turn hook


def test_lifecycle_hook_runs_sessionstart_once_and_stop_after_each_turn(fake_api, project):
    session = make_session(project)
    assert [h for h in session.hooks if h is session.lifecycle] == [session.lifecycle]
    starts: list[str] = []
    lifecycle.register(session, "SessionStart",
                       lambda p: starts.append(p["source"]) or "The dataset is sales.parquet.")
    lifecycle.register(session, "Stop", lambda p: f"stopped after: {p['last_assistant_message']}")
    fake_api.script([Turn(text="first answer"), Turn(text="second answer")])
    first = run_turn(session, "first")
    second = run_turn(session, "second")
    assert starts == ["startup"]
    blocks = fake_api.requests[0].body["messages"][0]["content"]
    texts = [b["text"] for b in blocks]
    assert "The dataset is sales.parquet." in texts[1] and texts[2] == "first"
    assert {"kind": "hook", "text": "stopped after: first answer"} in first.record["events"]
    assert {"kind": "hook", "text": "stopped after: second answer"} in second.record["events"]


def test_sessionstart_context_belongs_to_the_first_turn(fake_api, project):
    """The model saw the SessionStart text, so the turn record and the log carry it (and a
    resume finds it); a first turn rolled back takes it along and SessionStart runs again."""
    session = make_session(project)
    starts: list[str] = []
    lifecycle.register(session, "SessionStart",
                       lambda p: starts.append(p["source"]) or "The dataset is sales.parquet.")
    fake_api.script([Turn(text="", fault="authentication"), Turn(text="answered")])
    failed = run_turn(session, "first")
    assert failed.status == "error" and session.messages == []
    done = run_turn(session, "second")
    assert starts == ["startup", "startup"]
    hook_messages = [m for m in session.messages if (m.get("_meta") or {}).get("kind") == "hook_context"]
    assert len(hook_messages) == 1
    assert done.record["messages"][0] == hook_messages[0]
    logged = [json.loads(line) for line in session.log.path.read_text().splitlines()]
    assert logged[0]["isMeta"] is True
    assert "sales.parquet" in json.dumps(logged[0]["message"]["content"])
    assert logged[1]["message"]["content"][-1]["text"] == "second"


def test_a_resumed_session_starts_with_source_resume(fake_api, project):
    """Like the reference after --resume: SessionStart says the conversation continues."""
    session = make_session(project)
    starts: list[str] = []
    lifecycle.register(session, "SessionStart", lambda p: starts.append(p["source"]))
    earlier = [{"role": "user", "content": [{"type": "text", "text": "before"}]},
               {"role": "assistant", "content": [{"type": "text", "text": "noted"}]}]
    apply_resume(session, Resumed(source="notebook", path=project / "a.ipynb",
                                  messages=earlier, turns=1), seed_log=False)
    fake_api.script([Turn(text="one"), Turn(text="two")])
    run_turn(session, "after")
    run_turn(session, "again")
    assert starts == ["resume"]
    fresh = make_session(project)
    lifecycle.register(fresh, "SessionStart", lambda p: starts.append(p["source"]))
    one_turn(fake_api, fresh)
    assert starts == ["resume", "startup"]
