"""The hook protocol: a hook's own message passes through; a bug in a hook is named as one."""

from __future__ import annotations

from pathlib import Path

import pytest

from jupyter_memory.agent.hooks import HookFailed, collect, dispatch
from jupyter_memory.agent.loop import run_turn
from jupyter_memory.agent.session import AgentConfig, Session
from jupyter_memory.errors import JupyterMemoryError
from jupyter_memory.localapi import Turn


class Broken:
    def before_call(self, turn: object, round_index: int) -> None:
        raise KeyError("missing")


class Refusing:
    def before_turn(self, turn: object) -> None:
        raise JupyterMemoryError("Refused at the blocking level: run %compact.")


def test_dispatch_calls_hooks_in_order_and_skips_missing_methods() -> None:
    seen: list[str] = []

    class A:
        def after_turn(self, turn: object, result: object) -> None:
            seen.append("a")

    class B:
        def after_turn(self, turn: object, result: object) -> None:
            seen.append("b")

    dispatch([A(), Broken(), B()], "after_turn", None, None)
    assert seen == ["a", "b"]
    with pytest.raises(ValueError, match="unknown hook event"):
        dispatch([], "after_call")


def test_a_hook_bug_is_reported_as_the_hook_not_the_model(tmp_path: Path, fake_api, monkeypatch,
                                                          caplog) -> None:
    monkeypatch.setenv("JUPYTER_MEMORY_DIR", str(tmp_path / "memory"))
    fake_api.script([Turn(text="never sent")])
    session = Session(tmp_path, config=AgentConfig(log_transcript=False))
    session.hooks.append(Broken())
    result = run_turn(session, "hello")
    assert result.status == "error" and isinstance(result.failure, HookFailed)
    assert result.error.startswith(
        "jupyter-memory hit an internal error in the Broken hook (before_call): KeyError:")
    assert "model call failed" not in result.error and "please report it" in result.error
    assert fake_api.requests == []
    logged = [r for r in caplog.records if r.name.startswith("jupyter_memory")
              and r.levelname == "ERROR"]
    assert logged and logged[0].exc_info is not None  # the traceback, in the log


def test_a_hooks_own_message_reaches_the_person_unchanged(tmp_path: Path, fake_api, monkeypatch) -> None:
    monkeypatch.setenv("JUPYTER_MEMORY_DIR", str(tmp_path / "memory"))
    session = Session(tmp_path, config=AgentConfig(log_transcript=False))
    session.hooks.append(Refusing())
    result = run_turn(session, "hello")
    assert result.error == "Refused at the blocking level: run %compact."
    with pytest.raises(HookFailed) as info:
        dispatch([Broken()], "before_call", None, 0)
    assert info.value.hook_name == "Broken" and info.value.event == "before_call"


def test_hooks_contribute_record_sections_before_it_is_built(tmp_path: Path, fake_api,
                                                             monkeypatch) -> None:
    monkeypatch.setenv("JUPYTER_MEMORY_DIR", str(tmp_path / "memory"))
    fake_api.script([Turn(text="done")])
    seen: list[dict] = []

    class Section:
        def record_fields(self, turn: object) -> dict:
            return {"marker": {"from": "Section"}}

    class Watcher:
        def after_turn(self, turn: object, result: object) -> None:
            seen.append(dict(result.record))  # type: ignore[attr-defined]

    session = Session(tmp_path, config=AgentConfig.from_env(log_transcript=False, extraction=False))
    session.hooks.append(Section())
    session.hooks.append(Watcher())
    result = run_turn(session, "hello")
    assert result.ok, result.error
    assert result.record["marker"] == {"from": "Section"}
    assert seen[0]["marker"] == {"from": "Section"}  # there already when after_turn runs
    assert "cost" in seen[0]  # the session's own cost section, also built in


def test_collect_refuses_a_hook_that_returns_no_mapping() -> None:
    class Wrong:
        def record_fields(self, turn: object) -> list:
            return ["not", "a", "mapping"]

    with pytest.raises(TypeError, match="record_fields must return a mapping"):
        collect([Wrong()], "record_fields", None)
