"""The one background runner of a session (issue 27, item 1): threads live; in synchronous
mode (record, replay, tests that choose it) work runs at the loop's defined points, so two
runs of the same turns do the same thing at the same moment."""

from __future__ import annotations

import logging
import threading
from pathlib import Path

import pytest
from sessions import make_session

from jupyter_memory.agent.background import BackgroundRunner
from jupyter_memory.agent.loop import run_turn
from jupyter_memory.localapi import ToolCall, Turn
from jupyter_memory.sessions import recording as record


def test_live_work_runs_in_a_thread_of_its_own() -> None:
    runner = BackgroundRunner()
    release = threading.Event()
    ran_in: list[str] = []

    def work() -> None:
        release.wait(60)
        ran_in.append(threading.current_thread().name)

    task = runner.submit("prefetch", work)
    assert not task.done() and runner.pending == 0  # under way, not queued
    release.set()
    assert task.wait(60) and ran_in == ["jupyter-memory-prefetch"]


def test_synchronous_work_waits_for_a_settle_point_and_keeps_its_order() -> None:
    runner = BackgroundRunner(synchronous=True)
    order: list[str] = []
    first = runner.submit("a", lambda: (order.append("a"), runner.submit("c", lambda: order.append("c"))))
    runner.submit("b", lambda: order.append("b"))
    assert order == [] and runner.pending == 2 and not first.done()
    runner.settle()
    assert order == ["a", "b", "c"] and runner.pending == 0 and first.done()


def test_waiting_for_queued_work_runs_it_now() -> None:
    runner = BackgroundRunner(synchronous=True)
    ran: list[str] = []
    task = runner.submit("notes", lambda: ran.append(threading.current_thread().name))
    assert task.wait(0) and ran == [threading.current_thread().name]
    runner.settle()
    assert ran == [threading.current_thread().name]  # it ran once


def test_work_that_fails_is_logged_with_its_traceback_and_the_runner_goes_on(
        caplog: pytest.LogCaptureFixture) -> None:
    runner = BackgroundRunner(synchronous=True)
    done: list[bool] = []

    def broken() -> None:
        raise TypeError("a bug in background work")

    failing = runner.submit("extraction", broken)
    runner.submit("notes", lambda: done.append(True))
    runner.settle()
    assert failing.done() and done == [True]
    [logged] = [r for r in caplog.records if r.name == "jupyter_memory.agent.background"]
    assert logged.levelno == logging.ERROR and "'extraction'" in logged.getMessage()
    assert logged.exc_info is not None and logged.exc_info[0] is TypeError


@pytest.fixture
def project(tmp_path: Path) -> Path:
    root = tmp_path / "proj"
    (root / "memory").mkdir(parents=True)
    (root / "memory" / "project_cents.md").write_text(
        "---\nname: revenue-in-cents\ndescription: sales revenue is stored in integer cents\n"
        "type: project\n---\nThe revenue column holds integer cents.\n", encoding="utf-8")
    return root


def test_a_synchronous_turn_runs_prefetch_first_and_extraction_before_it_returns(
        project: Path, fake_api, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("JUPYTER_MEMORY_EXTRACTION")
    session = make_session(project, memdir=project / "memory", recall_mode="prefetch",
                           session_memory=False)
    session.runner.synchronous_chosen = True
    selector = Turn(tool_calls=[ToolCall("select_memories",
                                         {"selected_memories": ["project_cents.md"]})])
    fake_api.script([selector, Turn(text="Let me look.", tool_calls=[
        ToolCall("Glob", {"pattern": "*.md", "path": str(project / "memory")})]),
        Turn(text="In cents."), Turn(text="Nothing to save.")])
    result = run_turn(session, "How is revenue stored in the sales table?")
    assert result.ok, result.error
    kinds = ["selector" if r.body.get("tool_choice") else "call" for r in fake_api.requests]
    assert kinds == ["selector", "call", "call", "call"]  # the prefetch before the first call
    second = fake_api.requests[2].body["messages"]
    assert "project_cents.md" in str(second)  # attached after the tool round, as live
    assert "project_cents.md" not in str(fake_api.requests[1].body["messages"])
    assert not session.extraction.running and [r.status for r in session.extraction.runs] == [
        "nothing"]  # the extraction run finished inside run_turn
    assert session.runner.pending == 0


def test_a_recording_makes_the_work_synchronous_while_it_is_in_use(project: Path,
                                                                   fake_api) -> None:
    session = make_session(project, memdir=project / "memory", extraction=False,
                           session_memory=False)
    assert not session.runner.synchronous
    record.start_recording(session, project / "nb.recording.json")
    assert session.runner.synchronous
    record.stop(session)
    assert not session.runner.synchronous
