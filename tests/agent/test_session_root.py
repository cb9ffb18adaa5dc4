"""The session as a composition root (issue 27, item 1): typed services, each a declared
field; one model endpoint switched in one operation; child sessions that share the
endpoint, the runner and the ledger; nothing hung on a session from outside."""

from __future__ import annotations

from pathlib import Path

import pytest
from IPython.core.interactiveshell import InteractiveShell
from sessions import make_session
from shell_helpers import run

from jupyter_memory.agent.endpoint import LiveEndpoint
from jupyter_memory.agent.hooks import TurnHook
from jupyter_memory.agent.loop import TURN_MIME, run_turn
from jupyter_memory.agent.session import Session
from jupyter_memory.localapi import ToolCall, Turn
from jupyter_memory.memdir.trust import trust_folder
from jupyter_memory.sessions import recording as record
from jupyter_memory.sessions.recording import RecordingError
from jupyter_memory.sessions.sandbox import sandbox_of, use_sandbox

REVIEWER = """---
name: data-reviewer
description: Reviews data analyses.
tools: Read, Grep
memory: project
---
You review data analyses.
"""


def quiet(project: Path, **config: object) -> Session:
    return make_session(project, memdir=project / "memory", extraction=False,
                        session_memory=False, **config)


def test_a_session_refuses_an_attribute_it_does_not_declare(project: Path) -> None:
    session = quiet(project)
    with pytest.raises(AttributeError):
        session._jupyter_memory_compaction = object()  # type: ignore[attr-defined]
    with pytest.raises(AttributeError):
        session.client_factory = lambda: None  # type: ignore[attr-defined]
    assert not hasattr(session, "__dict__")
    session.today_override = "2026-01-02"  # a declared field can be set
    assert session.today() == "2026-01-02"


def test_the_services_are_fields_and_their_hooks_run_in_order(project: Path, fake_api) -> None:
    session = quiet(project)
    own = [session.log, session.extraction, session.lifecycle, session.notes,
           session.compactor, session.cost_section]
    assert list(session.hooks) == own

    class Watcher(TurnHook):
        pass

    watcher = Watcher()
    session.hooks.append(watcher)
    recorder = record.start_recording(session, project / "nb.recording.json")
    assert list(session.hooks) == [*own, recorder, watcher]  # the endpoint's, then added
    record.stop(session)
    assert list(session.hooks) == [*own, watcher]


def _record(folder: Path, fake_api) -> Path:
    """A recording of one turn of a session in ``folder``, made against ``fake_api``."""
    fake_api.script([Turn(text="Recorded answer.")])
    session = quiet(folder)
    path = folder / "nb.recording.json"
    record.start_recording(session, path)
    assert run_turn(session, "What is recorded?").ok
    record.stop(session)
    return path


@pytest.mark.parametrize("replay_first", [True, False], ids=["replay-first", "live-first"])
def test_a_live_and_a_replaying_session_work_side_by_side(tmp_path: Path, fake_api,
                                                          replay_first: bool) -> None:
    path = _record(tmp_path / "recorded", fake_api)
    asked = len(fake_api.requests)
    replaying = quiet(tmp_path / "recorded")
    replayer = record.start_replay(replaying, path)
    live = quiet(tmp_path / "live")
    fake_api.script([Turn(text="Live answer.")])

    def turn_of(session: Session) -> str:
        result = run_turn(session, "What is recorded?")
        assert result.ok, result.error
        return result.answer

    order = [replaying, live] if replay_first else [live, replaying]
    answers = {id(s): turn_of(s) for s in order}
    assert answers[id(replaying)] == "Recorded answer." and answers[id(live)] == "Live answer."
    assert len(fake_api.requests) == asked + 1  # only the live session reached the server
    assert replayer.served == 1 and replayer.mismatches == []
    assert (replaying.endpoint.kind, live.endpoint.kind) == ("replay", "live")
    assert replaying.runner.synchronous and not live.runner.synchronous
    record.stop(replaying)


def test_switching_the_endpoint_closes_the_replay_and_gives_the_identity_back(
        tmp_path: Path, fake_api) -> None:
    path = _record(tmp_path / "recorded", fake_api)
    session = quiet(tmp_path / "recorded")
    own_id = session.session_id
    replayer = record.start_replay(session, path)
    assert session.session_id != own_id and replayer.base_url.startswith("http://127.0.0.1")
    old = session.use_endpoint(LiveEndpoint(session.env))
    assert old is replayer and record.controller(session) is None
    with pytest.raises(RecordingError, match="not running"):
        replayer.base_url  # noqa: B018 - its local server was stopped
    assert session.session_id == own_id and session.today_override is None
    assert not session.runner.synchronous


def test_a_sandbox_hands_over_to_a_recording_and_back(tmp_path: Path) -> None:
    session = quiet(tmp_path / "proj")
    box = use_sandbox(session, "echo")
    recorder = record.start_recording(session, tmp_path / "nb.recording.json")
    assert recorder.inner is box and sandbox_of(session) is None
    assert run_turn(session, "Hello?").answer == "(echo) Hello?"
    assert len(recorder.recording.exchanges) == 1
    record.stop(session)
    assert session.endpoint is box and box.server is not None  # the sandbox kept running
    assert run_turn(session, "Again?").answer == "(echo) Again?"
    session.use_endpoint(LiveEndpoint(session.env))
    with pytest.raises(RuntimeError, match="not running"):
        box.server.base_url  # noqa: B018 - closing the sandbox stopped its server


def _define_reviewer(project: Path) -> None:
    agents = project / ".claude" / "agents"
    agents.mkdir(parents=True)
    (agents / "data-reviewer.md").write_text(REVIEWER, encoding="utf-8")
    trust_folder(project)  # a project's own agents run only in a trusted folder


def test_a_child_session_shares_the_endpoint_runner_and_ledger(project: Path, fake_api) -> None:
    from jupyter_memory.agent.definitions import load_agent

    _define_reviewer(project)
    main = quiet(project)
    child = main.child(load_agent(project, "data-reviewer"))
    assert child.parent is main and child.shared is main.shared
    assert (child.endpoint, child.runner, child.cost_ledger) == (
        main.endpoint, main.runner, main.cost_ledger)
    assert child.conversation is not main.conversation and child.memory is not main.memory
    assert child.memdir == project / ".claude" / "agent-memory" / "data-reviewer"
    assert [t["name"] for t in child.assemble().body["tools"]] == [
        "Read", "Grep", "Write", "Edit"]  # its own tools (and those that keep its memory)
    assert child.session_id == main.child(child.agent).session_id  # derived: stable
    fake_api.script([Turn(text="Reviewed.")])
    assert run_turn(child, "Review the join.").ok
    assert main.messages == [] and len(child.messages) == 2
    [row] = main.cost_ledger.to_json()  # the child's call is on the shared ledger
    assert row["kind"] == "main" and row["calls"] == 1
    path = project / "nb.recording.json"
    record.start_recording(main, path)  # recording the parent records the child too
    fake_api.script([Turn(text="Reviewed again.")])
    assert run_turn(child, "And the other join?").ok
    recording = record.controller(main).recording
    assert len(recording.exchanges) == 1 and recording.turns == []  # the parent's turns only
    assert list(child.hooks) == [child.log, child.extraction, child.lifecycle, child.notes,
                                 child.compactor, child.cost_section]
    record.stop(main)


def test_agent_cells_run_in_a_child_of_the_kernel_session(make_ip, tmp_path: Path,
                                                          fake_api) -> None:
    from jupyter_memory.magics.state import state_for

    project = tmp_path / "proj"
    _define_reviewer(project)
    ip: InteractiveShell = make_ip(project)  # conftest switches extraction and notes off
    fake_api.script([
        Turn(text="Let me look.", tool_calls=[ToolCall("Grep", {"pattern": "join",
                                                                 "path": str(project)})]),
        Turn(text="The join drops refunds."),
    ])
    cap = run(ip, "%%agent --agent data-reviewer\nReview the join.")
    records = [o.data[TURN_MIME] for o in cap.outputs if TURN_MIME in o.data]
    assert records[-1]["answer"].endswith("The join drops refunds.")
    main = state_for(ip).session
    agent_magics = ip.magics_manager.registry["Agent"]
    child = agent_magics._agent_sessions["data-reviewer"]
    assert child.parent is main and child.shared is main.shared and main.messages == []
    assert agent_magics.agent_session("data-reviewer") is child  # kept while main lives
    run(ip, "%agent new")
    assert agent_magics.agent_session("data-reviewer").parent is state_for(ip).session


def test_services_that_kept_state_on_the_session_keep_it_in_fields(project: Path,
                                                                    fake_api) -> None:
    from jupyter_memory.agent import lifecycle
    from jupyter_memory.agent.compaction import state_of
    from jupyter_memory.agent.extraction import hook_for
    from jupyter_memory.recall import last_prefetch

    session = quiet(project, recall_mode="prefetch", recall_selector="offline")
    session.store.create("revenue-in-cents", "sales revenue is stored in integer cents",
                         "project", "Cents.")
    lifecycle.mark_resumed(session)
    seen: list[str] = []
    lifecycle.register(session, "SessionStart", lambda p: seen.append(p["source"]))
    fake_api.script([Turn(text="In cents.")])
    assert run_turn(session, "How is revenue stored in the sales table?").ok
    assert seen == ["resume"] and session.lifecycle.started
    assert state_of(session) is session.compaction and hook_for(session) is session.extraction
    assert last_prefetch(session) is session.last_prefetch is not None
    assert session.parts.values  # the record's parts, in the session's own store
    assert session.conversation.turn_count == 1 and session.last_record is not None


def test_no_registry_is_keyed_by_a_session() -> None:
    """The modules that used to keep per-session state in registries keep none."""
    import jupyter_memory.context.request_parts as parts
    import jupyter_memory.recall.caches as caches

    assert not hasattr(caches, "_LAST") and not hasattr(caches, "remember_prefetch")
    assert not hasattr(parts, "_stores") and not hasattr(parts, "part_store")
    source = (Path(__file__).resolve().parents[2] / "jupyter_memory").rglob("*.py")
    offending = [p.name for p in source if "id(session)" in p.read_text(encoding="utf-8")]
    assert offending == []
