"""Errors keep their cause (issue 27, item 3): four classes, each with its exit code and HTTP
status; a bug of ours says so, with its traceback in the log; a failed turn gives nbclient
and papermill a readable reason; a normal run logs nothing at WARNING or above."""

from __future__ import annotations

import dataclasses
import io
import logging
import os
from pathlib import Path

import nbformat
import pytest
from IPython.core.interactiveshell import InteractiveShell
from IPython.utils.capture import capture_output
from sessions import make_session

from jupyter_memory.agent import loop
from jupyter_memory.agent.loop import TURN_MIME, run_turn
from jupyter_memory.context.request_parts import readable
from jupyter_memory.errors import (
    EXIT_INTERNAL,
    EXIT_MODEL,
    ConfigError,
    InternalError,
    InvalidPath,
    JupyterMemoryError,
    LockTimeout,
    MemoryExists,
    MemoryNotFound,
    ModelCallFailed,
    ToolFailed,
)
from jupyter_memory.localapi import Fault, ToolCall, Turn

QUIET = "%load_ext jupyter_memory\n%config Agent.extraction = False\n%config Agent.session_memory = False"


def _ours(caplog: pytest.LogCaptureFixture, level: int) -> list[logging.LogRecord]:
    return [r for r in caplog.records
            if r.name.startswith("jupyter_memory") and r.levelno >= level]


@pytest.fixture
def broken_loop(monkeypatch: pytest.MonkeyPatch) -> None:
    """A bug in our own code, hit once the model has answered."""

    def broken(block: object) -> dict:
        raise TypeError("'NoneType' object is not subscriptable")

    monkeypatch.setattr(loop, "_block_to_dict", broken)


def test_a_bug_in_a_turn_is_an_internal_error_with_its_traceback_logged(
        tmp_path: Path, fake_api, broken_loop, caplog: pytest.LogCaptureFixture) -> None:
    session = make_session(tmp_path / "proj", memdir=tmp_path / "memory", extraction=False)
    fake_api.script([Turn(text="An answer the loop cannot read.")])
    result = run_turn(session, "Hello?")
    assert result.status == "error" and isinstance(result.failure, InternalError)
    assert isinstance(result.failure.cause, TypeError)
    assert result.error.startswith(
        "jupyter-memory hit an internal error while running the turn: TypeError: "
        "'NoneType' object is not subscriptable. This is a bug in jupyter-memory")
    assert "model call failed" not in result.error.lower() and "please report it" in result.error
    [logged] = _ours(caplog, logging.ERROR)
    assert logged.exc_info is not None and logged.exc_info[0] is TypeError
    assert session.messages == []  # the turn whose answer could not be read, rolled back


def test_a_bug_fails_the_agent_cell_saying_so(make_ip, tmp_path: Path, fake_api, broken_loop,
                                              caplog: pytest.LogCaptureFixture) -> None:
    ip: InteractiveShell = make_ip()  # conftest switches extraction off
    fake_api.script([Turn(text="An answer the loop cannot read.")])
    with capture_output() as cap:
        result = ip.run_cell("%%agent\nHello?", store_history=True)
    error = result.error_in_exec
    assert isinstance(error, InternalError) and "model call failed" not in str(error).lower()
    shown = cap.stdout + cap.stderr
    assert "InternalError: jupyter-memory hit an internal error" in shown
    assert "Traceback" not in shown  # one line in the cell ...
    logged = _ours(caplog, logging.ERROR)
    assert logged and logged[0].exc_info is not None  # ... the traceback in the log
    records = [o.data[TURN_MIME] for o in cap.outputs if TURN_MIME in o.data]
    assert records and records[-1]["status"] == "error"  # the record stays in the cell
    with capture_output():
        assert ip.run_cell("still_alive = 1 + 1").success


def test_a_failed_model_call_is_not_an_internal_error(tmp_path: Path, fake_api,
                                                      caplog: pytest.LogCaptureFixture) -> None:
    session = make_session(tmp_path / "proj", memdir=tmp_path / "memory", extraction=False)
    fake_api.fail_next(Fault("api_error", should_retry=False))
    result = run_turn(session, "Hello?")
    assert isinstance(result.failure, ModelCallFailed)
    assert result.error.startswith("The model endpoint answered with an error (500)")
    assert result.failure.__cause__ is not None  # the SDK's own error
    assert _ours(caplog, logging.WARNING) == []  # the endpoint's failure is not our bug


def test_a_tool_error_goes_back_to_the_model(tmp_path: Path, fake_api) -> None:
    session = make_session(tmp_path / "proj", memdir=tmp_path / "memory", extraction=False)
    fake_api.script([Turn(tool_calls=[ToolCall("Read", {"file_path": "/nowhere/at/all.md"})]),
                     Turn(text="That file does not exist.")])
    result = run_turn(session, "Read /nowhere/at/all.md")
    assert result.ok and result.failure is None
    [call] = readable(result.record)["tool_calls"]  # a long result is a stored part
    assert call["is_error"] and "nowhere" in call["result"]


ERROR_CLASSES = [
    (ConfigError("bad setting"), 2, 400),
    (InvalidPath("../out.md"), 2, 403),
    (MemoryNotFound("no such memory"), 1, 404),
    (MemoryExists("already there"), 2, 409),
    (LockTimeout("locked"), 1, 503),
    (ToolFailed("the tool failed"), 1, 422),
    (ModelCallFailed("The model endpoint answered with an error (500)"), EXIT_MODEL, 502),
    (InternalError(TypeError("boom")), EXIT_INTERNAL, 500),
]


@pytest.mark.parametrize("error, code, status", ERROR_CLASSES,
                         ids=[type(e).__name__ for e, _, _ in ERROR_CLASSES])
def test_the_command_line_and_the_rest_api_read_one_code_from_the_error(
        error: JupyterMemoryError, code: int, status: int) -> None:
    from jupyter_memory.commands.base import failure
    from jupyter_memory.server.handlers import status_for

    report = failure(error, "jupyter-memory list")
    assert report is not None and report.code == error.exit_code == code
    assert report.line == f"jupyter-memory list: {error}"
    assert status_for(error) == error.http_status == status
    assert error._render_traceback_()[0] == f"{type(error).__name__}: {str(error).splitlines()[0]}"


def test_a_bug_in_a_command_exits_70_with_one_line_and_logs_the_traceback(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from jupyter_memory.cli import app
    from jupyter_memory.commands.base import COMMANDS

    def broken(ctx: object) -> int:
        raise KeyError("a bug in the command")

    monkeypatch.setitem(COMMANDS, "list", dataclasses.replace(COMMANDS["list"], run=broken))
    env = {**os.environ, "JUPYTER_MEMORY_DIR": str(tmp_path / "memory"),
           "CLAUDE_CONFIG_DIR": str(tmp_path / "config")}
    out, err = io.StringIO(), io.StringIO()
    code = app.main(["list", "--project", str(tmp_path)], env=env, stdout=out, stderr=err)
    assert code == EXIT_INTERNAL == 70
    [line] = err.getvalue().splitlines()
    assert line.startswith("jupyter-memory list: jupyter-memory hit an internal error")
    assert "KeyError" in line and "please report it" in line and "Traceback" not in line
    log = (tmp_path / "config" / "jupyter-memory.log").read_text(encoding="utf-8")
    assert "Traceback" in log and "a bug in the command" in log
    assert str(tmp_path / "config" / "jupyter-memory.log") in line  # where to look


def test_the_log_goes_to_a_file_at_the_level_asked_for(tmp_path: Path) -> None:
    from jupyter_memory import logs

    logger = logging.getLogger("jupyter_memory.test")
    before = logging.getLogger("jupyter_memory").level
    try:
        path = logs.setup(tmp_path / "config", {logs.LEVEL_ENV: "debug"})
        assert path == tmp_path / "config" / logs.LOG_NAME and logs.log_file() == path
        logger.debug("a debug line")
        assert "DEBUG jupyter_memory.test: a debug line" in path.read_text(encoding="utf-8")
        other = logs.setup(tmp_path, {logs.FILE_ENV: str(tmp_path / "elsewhere.log"),
                                      logs.LEVEL_ENV: "WARNING"})
        logger.info("not written at WARNING")
        logger.warning("written")
        assert other == tmp_path / "elsewhere.log"
        assert other.read_text(encoding="utf-8").count("jupyter_memory.test") == 1
    finally:
        logging.getLogger("jupyter_memory").setLevel(before)


def test_a_normal_run_logs_nothing_at_warning_or_above(tmp_path: Path, fake_api,
                                                       monkeypatch: pytest.MonkeyPatch,
                                                       caplog: pytest.LogCaptureFixture) -> None:
    monkeypatch.delenv("JUPYTER_MEMORY_EXTRACTION")
    caplog.set_level(logging.DEBUG, logger="jupyter_memory")
    memdir = tmp_path / "memory"
    session = make_session(tmp_path / "proj", memdir=memdir, recall_mode="prefetch")
    session.store.create("revenue-in-cents", "sales revenue is stored in integer cents",
                         "project", "The revenue column holds integer cents.")
    session.runner.synchronous_chosen = True
    fake_api.script([
        Turn(tool_calls=[ToolCall("select_memories", {"selected_memories": []})]),
        Turn(text="Let me look.", tool_calls=[ToolCall("Read", {
            "file_path": str(memdir / "project_revenue_in_cents.md")})]),
        Turn(text="Revenue is in cents."),
        Turn(text="Nothing to save."),
    ])
    assert run_turn(session, "How is revenue stored in the sales table?").ok
    assert [r.status for r in session.extraction.runs] == ["nothing"]
    assert _ours(caplog, logging.WARNING) == []
    assert _ours(caplog, logging.DEBUG)  # the log is on, and said what happened


def test_a_bug_in_background_work_is_logged_and_reported_as_before(
        tmp_path: Path, fake_api, monkeypatch: pytest.MonkeyPatch,
        caplog: pytest.LogCaptureFixture) -> None:
    from jupyter_memory.agent.extraction import ExtractionHook

    monkeypatch.delenv("JUPYTER_MEMORY_EXTRACTION")

    def broken(self: ExtractionHook, request: object, run: object) -> None:
        raise AttributeError("'NoneType' object has no attribute 'memdir'")

    monkeypatch.setattr(ExtractionHook, "_extract", broken)
    session = make_session(tmp_path / "proj", memdir=tmp_path / "memory")
    session.runner.synchronous_chosen = True
    fake_api.script([Turn(text="Done.")])
    assert run_turn(session, "Hello?").ok  # background work never fails the turn
    [run] = session.extraction.runs
    assert run.status == "failed" and "internal error" in (run.error or "")
    assert "AttributeError" in (run.error or "") and "model call failed" not in run.error.lower()
    logged = _ours(caplog, logging.ERROR)
    assert logged and logged[0].exc_info is not None and logged[0].exc_info[0] is AttributeError


@pytest.mark.kernel
def test_papermill_says_why_a_turn_failed(tmp_path: Path, fake_api) -> None:
    papermill = pytest.importorskip("papermill")
    fake_api.fail_next(Fault("api_error", should_retry=False), times=10)  # the server: 500s
    work = tmp_path / "work"
    work.mkdir()
    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_code_cell(s)
                for s in (QUIET, "%%agent\nHello?", "after = 'ran'")]
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3",
                                 "language": "python"}
    nbformat.write(nb, str(work / "turn.ipynb"))
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("JUPYTER_MEMORY_DIR", str(work / "memory"))
        mp.delenv("JPY_SESSION_NAME", raising=False)
        with pytest.raises(papermill.PapermillExecutionError) as failed:
            papermill.execute_notebook(str(work / "turn.ipynb"), str(work / "out.ipynb"),
                                       kernel_name="python3", cwd=str(work),
                                       progress_bar=False)
    reason = "ModelCallFailed: The model endpoint answered with an error (500)"
    assert reason in str(failed.value)
    assert failed.value.ename == "ModelCallFailed"
    assert failed.value.evalue.startswith("The model endpoint answered with an error (500)")
    done = nbformat.read(str(work / "out.ipynb"), as_version=4)
    code = [c for c in done.cells if c.cell_type == "code"]  # papermill adds a banner cell
    assert code[-1].get("execution_count") is None  # the run stopped at the turn
