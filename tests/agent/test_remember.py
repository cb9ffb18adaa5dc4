"""``%%remember`` logic: the date warning, offline derivation, scopes, and the agent path.

The relative dates themselves are found by the storage layer's engine (tests/memdir/test_dates.py)."""

from __future__ import annotations

import datetime as dt
from pathlib import Path
from typing import Any

import pytest

from jupyter_memory.agent.remember import (
    MemoryNotFiled,
    date_warning,
    derive,
    find_relative_dates,
    guess_type,
    remember_direct,
    remember_offline,
    remember_with_agent,
    scope_store,
)
from jupyter_memory.agent.session import AgentConfig, Session
from jupyter_memory.errors import ConfigError, MemoryDisabled, MemoryExists
from jupyter_memory.localapi import ToolCall, Turn
from jupyter_memory.memdir import frontmatter
from jupyter_memory.memdir.scopes import scope_dir

TODAY = dt.date(2026, 3, 14)  # a Saturday


# ----------------------------------------------------------------------------- date warning


def test_relative_date_lines_and_warning_text():
    found = find_relative_dates("fact\n\n**Why:** the report of last week was off.\n", TODAY)
    assert [(d.phrase, d.line) for d in found] == [("last week", 3)]
    warning = date_warning(found)
    assert warning is not None
    assert '"last week" (line 3) → the week of 2026-03-02' in warning
    assert date_warning([]) is None


# ----------------------------------------------------------------------------- derivation


@pytest.mark.parametrize(
    ("body", "kind"),
    [
        ("I am a senior analyst on the pricing team.", "user"),
        ("The revenue dashboard lives at https://grafana.example/d/rev", "reference"),
        ("Never print a whole data frame; show .head() instead.", "feedback"),
        ("The sales.revenue column holds integer cents.", "project"),
        ("我是定价团队的分析师", "user"),
        ("不要打印整个数据框", "feedback"),
    ],
)
def test_guess_type(body, kind):
    assert guess_type(body)[0] == kind


def test_derive_is_deterministic_and_reads_the_fact_line():
    body = (
        "## Revenue\n"
        "The `sales.revenue` column holds integer cents. It comes from billing.\n\n"
        "**Why:** the billing export writes cents.\n"
        "**How to apply:** divide by 100.\n"
    )
    first = derive(body)
    assert first == derive(body)
    assert first.description == "The sales.revenue column holds integer cents."
    assert first.name == "sales-revenue-column-holds-integer"
    assert first.type == "project"
    assert set(first.guessed) == {"name", "description", "type"}


def test_derive_keeps_what_was_given_and_shortens_long_text():
    body = "word " * 100
    derived = derive(body, type="feedback", name="given")
    assert derived.name == "given" and derived.type == "feedback"
    assert derived.guessed == ("description",)
    assert len(derived.description) <= 150 and derived.description.endswith("…")


def test_derive_cjk_name_and_description():
    derived = derive("收入字段以分为单位存储。展示前除以一百。")
    assert derived.description == "收入字段以分为单位存储。"
    assert derived.name == "收入字段以分为单位存储"
    with pytest.raises(ConfigError):
        derive("x", type="opinion")


# ----------------------------------------------------------------------------- scopes


@pytest.fixture
def session(project: Path, memdir: Path) -> Session:
    return Session(project, config=AgentConfig.from_env(max_retries=0, log_transcript=False))


def test_scope_store_follows_memory_switch(session):
    user = scope_store(session, "user", "reviewer")
    assert user.memdir == scope_dir("user", memdir=session.memdir,
                                    project_root=session.project_root, agent="reviewer")
    session.memory.enabled_override = False
    with pytest.raises(MemoryDisabled, match="Memory is off") as info:
        scope_store(session, "memdir")
    assert "agent-scoped" not in str(info.value)
    for scope in ("user", "project", "local"):
        with pytest.raises(MemoryDisabled, match="agent-scoped memory follows it"):
            scope_store(session, scope)


# ----------------------------------------------------------------------------- writing


def test_direct_and_offline(session):
    store = session.store
    direct = remember_direct(store, "Senior analyst.", name="role", description="senior analyst",
                             type="user", today=TODAY)
    assert direct.files == ["user_role.md"] and direct.created == ["user_role.md"]
    assert store.get("role").provenance == "user"
    body = "Never print a whole data frame; show .head() instead. Decided yesterday."
    offline = remember_offline(store, body, reason="No model is connected.", today=TODAY)
    assert offline.how == "offline" and len(offline.files) == 1
    memory = store.get(offline.files[0])
    assert memory.type == "feedback" and memory.indexed
    summary = offline.summary()
    assert "No model is connected. Derived without a model" in summary
    assert "type feedback" in summary and '"yesterday" (line 1) → 2026-03-13' in summary
    with pytest.raises(MemoryExists):
        remember_offline(store, body, today=TODAY)


def test_agent_updates_an_existing_memory_instead_of_duplicating(session, fake_api):
    store = session.store
    store.create("revenue-in-cents", "sales.revenue is stored in cents", "project",
                 "The revenue column holds cents.\n")
    path = session.memdir / "project_revenue_in_cents.md"
    fake_api.script([
        Turn(tool_calls=[ToolCall("Read", {"file_path": str(path)})],
             expect_tools=["Read", "Grep", "Glob", "Write", "Edit"],
             expect_user_contains="project_revenue_in_cents.md"),
        Turn(tool_calls=[ToolCall("Edit", {
            "file_path": str(path), "old_string": "The revenue column holds cents.",
            "new_string": "The revenue column holds cents.\n\n**Why:** the billing export "
                          "writes cents (found 2026-03-13)."})]),
        Turn(text="Updated project_revenue_in_cents.md."),
    ])
    body = "Revenue is in cents because billing exports cents; found yesterday."
    result = remember_with_agent(session, session.client(), store, body, today=TODAY)
    assert fake_api.failures == [] and fake_api.remaining == 0
    assert result.how == "agent"
    assert result.files == ["project_revenue_in_cents.md"] and result.created == []
    assert [m.file for m in store.list()] == ["project_revenue_in_cents.md"]
    assert "**Why:** the billing export" in path.read_text()
    assert store.get("revenue-in-cents").provenance == "user"
    assert result.dates == []  # the agent wrote the absolute date
    request = fake_api.requests[0].body
    assert [t["name"] for t in request["tools"]] == ["Read", "Grep", "Glob", "Write", "Edit"]
    text = request["messages"][0]["content"][0]["text"]
    assert "Today's date is 2026-03-14" in text and body in text
    assert "Saved project_revenue_in_cents.md (updated)" in result.summary()


def test_agent_is_confined_to_the_target_folder_and_fields_are_enforced(
        session, fake_api, tmp_path):
    store = scope_store(session, "project", "reviewer")
    folder = store.memdir
    outside = session.memdir / "user_sneaky.md"
    content = "---\nname: chosen-by-model\ndescription: d\ntype: project\n---\nBody.\n"
    fake_api.script([
        Turn(tool_calls=[
            ToolCall("Write", {"file_path": str(outside), "content": content}),
            ToolCall("Write", {"file_path": str(folder / "project_x.md"), "content": content}),
        ]),
        Turn(text="Saved project_x.md"),
    ])
    result = remember_with_agent(session, session.client(), store, "Body.",
                                 type="feedback", name="kept-name")
    assert not outside.exists()
    assert result.files == ["project_x.md"]
    doc = frontmatter.parse((folder / "project_x.md").read_text())
    assert doc.get("type") == "feedback" and doc.get("name") == "kept-name"
    assert doc.get("originSessionId") == session.session_id
    assert store.get("kept-name").indexed  # agent scopes keep their index by construction
    refused: Any = fake_api.requests[1].body["messages"][-1]["content"][0]
    assert refused["is_error"] and "outside" in refused["content"]


def test_agent_that_saves_nothing_raises_and_keeps_its_words(session, fake_api):
    fake_api.script([Turn(text="This is task progress, not worth remembering.")])
    with pytest.raises(MemoryNotFiled) as caught:
        remember_with_agent(session, session.client(), session.store, "wip")
    assert str(caught.value).startswith("the memory was not saved: the model (")
    assert "task progress" not in str(caught.value)
    assert caught.value.agent_text == "This is task progress, not worth remembering."
    assert session.store.list() == []
