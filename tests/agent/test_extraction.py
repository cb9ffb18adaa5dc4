"""The background extraction agent against the local Messages API server (docs/reference.md#the-extraction-agent)."""

from __future__ import annotations

import json
import threading
from pathlib import Path
from typing import Any

import pytest
from extraction_router import MARKER, Router, user_texts
from sessions import make_session

from jupyter_memory.agent.extraction import (
    EXTRACTION_TOOLS,
    ExtractionHook,
    hook_for,
)
from jupyter_memory.agent.hooks import TurnHook
from jupyter_memory.agent.loop import TurnEvents, run_turn
from jupyter_memory.agent.session import Session
from jupyter_memory.localapi import ToolCall, Turn
from jupyter_memory.memdir import frontmatter
from jupyter_memory.memdir.pending import PendingArea

FEEDBACK = """\
---
name: no-full-frames
description: Show df.head() and the shape, never a whole data frame
type: feedback
---
Never print a whole data frame.

**Why:** the person's frames have millions of rows.
**How to apply:** show .head() and .shape instead.
"""


# Every session here works on the test's memdir, with extraction on (tests/conftest.py).
pytestmark = pytest.mark.usefixtures("memdir", "extraction_on")


@pytest.fixture
def session(project: Path) -> Session:
    return make_session(project)


@pytest.fixture
def hook(session: Session) -> ExtractionHook:
    return session.extraction


@pytest.fixture
def router(fake_api: Any) -> Router:
    return Router(fake_api)


class Notices:
    def __init__(self) -> None:
        self.items: list[tuple[str, dict[str, Any]]] = []

    def __call__(self, text: str, payload: dict[str, Any]) -> None:
        self.items.append((text, payload))

    def events(self) -> TurnEvents:
        return TurnEvents(on_notice=self)


def snapshot(*folders: Path) -> dict[str, bytes]:
    out = {}
    for folder in folders:
        for path in sorted(folder.rglob("*")):
            if path.is_file() and path.name != ".lock":
                out[str(path)] = path.read_bytes()
    return out


def strip_cache(node: Any) -> Any:
    if isinstance(node, dict):
        return {k: strip_cache(v) for k, v in node.items() if k != "cache_control"}
    if isinstance(node, list):
        return [strip_cache(v) for v in node]
    return node


def turn(session: Session, prompt: str, notices: Notices | None = None) -> Any:
    result = run_turn(session, prompt, events=(notices or Notices()).events())
    assert result.ok, result.error
    return result


# ----------------------------------------------------------------------------- skip


def test_main_agent_wrote_memory_so_extraction_is_skipped(session, hook, router, fake_api):
    path = session.memdir / "feedback_no_full_frames.md"
    router.main.extend([
        Turn(tool_calls=[ToolCall("Write", {"file_path": str(path), "content": FEEDBACK})]),
        Turn(text="Saved: I will not print whole frames."),
    ])
    result = turn(session, "Never print a whole data frame, remember that.")
    assert hook.wait(120)
    assert router.extract_bodies == []
    assert hook.counts["skipped"] == 1 and hook.counts["runs"] == 0
    assert hook.cursor is session.messages[-1]
    assert result.record["background"] == []
    assert fake_api.failures == []


# ----------------------------------------------------------------------------- a run


def test_extraction_runs_writes_and_saw_the_main_tool_list(session, hook, router, fake_api):
    store = session.store
    store.create("analyst", "Senior analyst who prefers SQL", "user", "Senior analyst.")
    index_before = store.index_path.read_bytes()
    path = session.memdir / "feedback_no_full_frames.md"
    index = session.memdir / "MEMORY.md"
    router.main.append(Turn(text="Understood: only .head() from now on."))
    router.extract.extend([
        Turn(tool_calls=[ToolCall("Read", {"file_path": str(index)})]),
        Turn(tool_calls=[
            ToolCall("Write", {"file_path": str(path), "content": FEEDBACK}),
            ToolCall("Edit", {"file_path": str(index), "old_string": "SQL",
                              "new_string": "SQL\n- [no-full-frames](feedback_no_full_frames.md)"
                                            " — show head, not whole frames"}),
        ]),
        Turn(text="Saved feedback_no_full_frames.md."),
    ])
    notices = Notices()
    result = turn(session, "Please never print a whole data frame for me.", notices)
    assert result.record["background"] == ["extraction"]
    assert hook.wait(120)
    assert fake_api.failures == []

    # The server saw the main agent's tool list (the default shares the cached prefix),
    # the main system prompt and the whole conversation, then the instruction with the
    # manifest of existing memories.
    first = router.extract_bodies[0]
    main = router.main_bodies[-1]
    assert first["tools"] == main["tools"]
    assert first["system"] == main["system"]
    conversation = main["messages"]
    assert strip_cache(first["messages"][: len(conversation)]) == strip_cache(conversation)
    assert first["messages"][len(conversation)]["role"] == "assistant"
    instruction = first["messages"][-1]["content"][-1]["text"]
    assert MARKER in instruction
    # The index in the shared context already points to the one memory, unchanged since it
    # was loaded: the manifest says so instead of listing it again.
    assert "points to 1 of the 1 memories" in instruction, instruction
    assert "none changed since it was loaded." in instruction
    assert "user_analyst.md" not in instruction
    assert "user_analyst.md" in first["messages"][0]["content"][0]["text"]
    assert "last 2 messages" in instruction
    assert len(router.extract_bodies) == 3

    # Written through the store, with provenance the reference can still read.
    doc = frontmatter.parse(path.read_text())
    assert doc.get("origin") == "extraction"
    assert doc.get("originSessionId") == session.session_id
    assert doc.get("name") == "no-full-frames"
    assert "feedback_no_full_frames.md" in index.read_text()

    # Announced in the cell that triggered it, with an undo.
    assert len(notices.items) == 1
    text, payload = notices.items[0]
    assert "Saved 1 memory" in text and "feedback_no_full_frames.md" in text
    assert payload["files"] == ["feedback_no_full_frames.md"]
    assert payload["undo"] == "%memory undo 1"
    # The undo names the run, so its number does not read as a count of memories.
    assert text.endswith("This was extraction run 1; undo it with `%memory undo 1`.")
    assert hook.cursor is session.messages[-1]
    run = hook.runs[-1]
    assert run.status == "saved" and run.calls == 3 and run.created == run.files

    # The fork's messages are logged as a subagent transcript beside the session log.
    log = session.log.path.with_suffix("") / "subagents" / f"agent-{run.agent_id}.jsonl"
    entries = [json.loads(line) for line in log.read_text().splitlines()]
    assert entries[0]["isSidechain"] is True and entries[0]["agentId"] == run.agent_id
    assert MARKER in json.dumps(entries[0]["message"])

    # Undo takes it all back, byte for byte.
    report = hook.undo()
    assert report.removed == ["feedback_no_full_frames.md"] and report.index_restored
    assert not path.exists()
    assert index.read_bytes() == index_before


def test_nothing_to_save_announces_nothing(session, hook, router, fake_api):
    router.main.append(Turn(text="2 + 2 = 4."))
    router.extract.append(Turn(text="Nothing to save."))
    notices = Notices()
    turn(session, "What is 2 + 2?", notices)
    assert hook.wait(120)
    assert notices.items == []
    assert hook.runs[-1].status == "nothing"
    assert hook.cursor is session.messages[-1]
    assert fake_api.failures == []


# ----------------------------------------------------------------------------- confinement


def test_confinement_refuses_writes_outside_the_memdir_and_deletion(
        session, hook, router, fake_api, project):
    session.store.create("cents", "sales.revenue is stored in cents", "project", "Cents.")
    victim = project / "analysis.py"
    victim.write_text("print('keep me')\n")
    memory = session.memdir / "project_cents.md"
    before = snapshot(project, session.memdir)
    router.main.append(Turn(text="ok"))
    router.extract.extend([
        Turn(tool_calls=[
            ToolCall("Read", {"file_path": str(victim)}),
            ToolCall("Write", {"file_path": str(victim), "content": "hacked"}),
            ToolCall("Write", {"file_path": str(project / "new.md"), "content": "x"}),
            ToolCall("Write", {"file_path": f"{session.memdir}/../escape.md", "content": "x"}),
            ToolCall("RunPython", {"code": f"import os; os.remove({str(memory)!r})"}),
            ToolCall("Delete", {"file_path": str(memory)}),
            ToolCall("ListVariables", {}),
        ]),
        Turn(text="Nothing to save."),
    ])
    turn(session, "hello")
    assert hook.wait(120)
    assert fake_api.failures == []
    assert snapshot(project, session.memdir) == before
    assert not (session.memdir.parent / "escape.md").exists()
    results = router.extract_bodies[1]["messages"][-1]["content"]
    outcome = {r["tool_use_id"]: r for r in results if r.get("type") == "tool_result"}
    assert len(outcome) == 7
    read, *refused = list(outcome.values())
    assert not read.get("is_error")
    assert all(r.get("is_error") for r in refused)
    text = json.dumps(refused)
    assert "may only write inside the memory directory" in text
    assert "not available to this agent" in text or "no tool named" in text


def test_extraction_cannot_save_a_service_account_key(session, hook, router, fake_api):
    """Issue 16 break 4: the extraction agent saved a GCP key ("private_key" with \\n escapes)."""
    key_lines = ["MIIEvQIBADANBgkqhkiG9w0BAQEFAASCBKcwggSjAgEAAoIBAQC7",
                 "q8Zk3vN1pR7tW2yB5cF0hJ4dG6sA8eU2iO9kLmNxQwErTyUiOpAs"]
    account = json.dumps({
        "type": "service_account",
        "private_key": "-----BEGIN " + "PRIVATE KEY-----\n" + "\n".join(key_lines)
        + "\n-----END " + "PRIVATE KEY-----\n",
    })
    content = ("---\nname: gcp-account\ndescription: The warehouse service account\n"
               "type: reference\n---\n" + account + "\n")
    path = f"{session.memdir}/reference_gcp_account.md"
    router.main.append(Turn(text="ok"))
    router.extract.extend([
        Turn(tool_calls=[ToolCall("Write", {"file_path": path, "content": content})]),
        Turn(text="Could not save it."),
    ])
    turn(session, "here is the service account json")
    assert hook.wait(120)
    assert fake_api.failures == []
    assert not Path(path).exists()
    results = router.extract_bodies[1]["messages"][-1]["content"]
    refusal = json.dumps([r for r in results if r.get("type") == "tool_result"])
    assert "PEM private key" in refusal and key_lines[0] not in refusal


def test_refused_writes_to_an_existing_memory_are_not_announced_as_saved(
        session, hook, router, fake_api):
    """The guard refused every write: the run saved nothing, says nothing, undoes nothing."""
    session.store.create("summary-key", "the summary job's key is in SUMMARY_KEY", "reference",
                         "The key is in the SUMMARY_KEY variable.")
    memory = session.memdir / "reference_summary_key.md"
    index = session.memdir / "MEMORY.md"
    before = snapshot(session.memdir)
    key = "sk-ant-api03-" + "FAKE-refused-write-test-q7W2e9R4t6Y1"
    router.main.append(Turn(text="ok"))
    router.extract.extend([
        Turn(tool_calls=[ToolCall("Read", {"file_path": str(memory)}),
                         ToolCall("Read", {"file_path": str(index)})]),
        Turn(tool_calls=[
            ToolCall("Write", {"file_path": str(memory),
                               "content": memory.read_text() + f"\nCurrent key: {key}\n"}),
            ToolCall("Write", {"file_path": str(index),
                               "content": index.read_text() + f"- key {key}\n"}),
        ]),
        Turn(text="Nothing saved."),
    ])
    notices = Notices()
    turn(session, f"the new key is {key}", notices)
    assert hook.wait(120)
    assert fake_api.failures == []
    assert snapshot(session.memdir) == before
    results = router.extract_bodies[2]["messages"][-1]["content"]
    assert all(r.get("is_error") for r in results if r.get("type") == "tool_result")
    run = hook.runs[-1]
    assert (run.status, run.files, run.created) == ("nothing", [], [])
    assert notices.items == []
    with pytest.raises(Exception, match="saved anything to undo"):
        hook.undo()


# ----------------------------------------------------------------------------- one at a time


def test_two_quick_turns_give_one_run_and_one_trailing_run(session, hook, router, fake_api):
    started, release = threading.Event(), threading.Event()

    def blocked(body: dict) -> Turn:
        started.set()
        assert release.wait(120), "the test never released the first extraction"
        return Turn(text="Nothing to save.")

    router.main.extend([Turn(text="first"), Turn(text="second"), Turn(text="third")])
    router.extract.extend([blocked, Turn(text="Nothing to save.")])
    n1, n2, n3 = Notices(), Notices(), Notices()
    turn(session, "turn one", n1)
    assert started.wait(120)
    r2 = turn(session, "turn two", n2)
    r3 = turn(session, "turn three", n3)
    assert r2.record["background"] == ["extraction"] and r3.record["background"] == ["extraction"]
    assert hook.running
    release.set()
    assert hook.wait(120)
    assert fake_api.failures == []
    assert len(router.extract_bodies) == 2  # one run, then one trailing run (not three)
    assert hook.counts == {**hook.counts, "runs": 2, "stashed": 2}
    assert hook.max_parallel == 1
    assert [r.trailing for r in hook.runs] == [False, True]
    trailing = user_texts(router.extract_bodies[1])
    assert "turn three" in trailing  # the newest stashed request replaced the older one
    assert "last 4 messages" in router.extract_bodies[1]["messages"][-1]["content"][-1]["text"]
    assert hook.cursor is session.messages[-1]


def test_throttle_runs_every_n_eligible_turns(session, hook, router, fake_api):
    hook.every_override = 2
    router.main.extend([Turn(text="a"), Turn(text="b")])
    router.extract.append(Turn(text="Nothing to save."))
    first = turn(session, "one")
    assert hook.wait(120)
    assert first.record["background"] == [] and router.extract_bodies == []
    assert hook.counts["throttled"] == 1
    turn(session, "two")
    assert hook.wait(120)
    assert len(router.extract_bodies) == 1
    assert "last 4 messages" in router.extract_bodies[0]["messages"][-1]["content"][-1]["text"]
    assert fake_api.failures == []


def test_turn_ending_in_an_error_is_not_eligible(session, hook, router, fake_api):
    router.main.append(Turn(fault="api_error"))
    result = run_turn(session, "hello")
    assert result.status == "error"
    assert hook.wait(120)
    assert router.extract_bodies == [] and hook.counts["runs"] == 0


# ----------------------------------------------------------------------------- failures


def test_cursor_stays_after_a_failure_and_success_resets_the_count(
        session, hook, router, fake_api):
    router.main.extend([Turn(text="a"), Turn(text="b")])
    router.extract.extend([Turn(fault="api_error"), Turn(text="Nothing to save.")])
    turn(session, "one")
    assert hook.wait(120)
    assert hook.cursor is None and hook.failures == 1
    assert hook.runs[-1].status == "failed" and "500" in (hook.runs[-1].error or "")
    turn(session, "two")
    assert hook.wait(120)
    assert hook.failures == 0 and hook.cursor is session.messages[-1]
    # The second run still covers the first turn's messages.
    assert "last 4 messages" in router.extract_bodies[-1]["messages"][-1]["content"][-1]["text"]


def test_three_failures_open_the_breaker(session, hook, router, fake_api):
    router.main.extend([Turn(text=str(i)) for i in range(4)])
    router.extract.extend([Turn(fault="api_error") for _ in range(3)])
    notices = [Notices() for _ in range(4)]
    for i in range(3):
        turn(session, f"turn {i}", notices[i])
        assert hook.wait(120)
    assert hook.broken and hook.failures == 3
    assert [len(n.items) for n in notices[:3]] == [0, 0, 1]
    text, payload = notices[2].items[0]
    assert "off for the rest of this session" in text and payload["breaker"] is True
    assert "\n" not in text
    result = turn(session, "turn 3", notices[3])
    assert hook.wait(120)
    assert len(router.extract_bodies) == 3  # no fourth run
    assert result.record["background"] == [] and notices[3].items == []
    hook.reset()
    assert not hook.broken



def test_memory_switched_off_before_the_run_starts_saves_nothing_and_is_no_failure(
        session, hook, router, fake_api, monkeypatch):
    """The turn asks for a run while memory is on; the person switches memory off before the
    background work gets going. The run finds no memdir: it ends with nothing saved, and
    is not counted as a failure towards the breaker (it used to fail on ``Path(None)``)."""

    class SwitchOff(TurnHook):  # runs after extraction's hook asked for the run
        def after_turn(self, turn: Any, result: Any) -> None:
            session.memory.enabled_override = False

    session.runner.synchronous_chosen = True  # the run waits for the end of the turn
    session.hooks.append(SwitchOff())
    router.main.append(Turn(text="a"))
    turn(session, "one")
    assert router.extract_bodies == []
    assert hook.failures == 0 and not hook.running
    assert [r.status for r in hook.runs] == ["nothing"]


# ----------------------------------------------------------------------------- settings


def test_environment_switch_turns_extraction_off(session, hook, router, monkeypatch):
    monkeypatch.setenv("JUPYTER_MEMORY_EXTRACTION", "0")
    router.main.append(Turn(text="hi"))
    turn(session, "hello")
    assert hook.wait(120)
    assert router.extract_bodies == []
    assert hook_for(session) is hook is session.extraction


def test_shared_tools_read_the_main_cache(session, hook, router, fake_api):
    router.main.extend([Turn(text="a"), Turn(text="b")])
    router.extract.extend([Turn(text="Nothing to save."), Turn(text="Nothing to save.")])
    hook.share_tools_override = False
    turn(session, "first question")
    assert hook.wait(120)
    restricted = hook.runs[-1]
    hook.share_tools_override = True
    turn(session, "second question")
    assert hook.wait(120)
    shared = hook.runs[-1]
    assert restricted.tools_offered == list(EXTRACTION_TOOLS)
    assert shared.tools_offered == session.tools.names()
    assert [t["name"] for t in router.extract_bodies[-1]["tools"]] == session.tools.names()
    # Same tools, system and conversation as the main request: most of it is a cache read.
    assert shared.usage.cache_read_input_tokens > restricted.usage.cache_read_input_tokens
    assert restricted.usage.cache_read_input_tokens == 0
    assert fake_api.failures == []


# ----------------------------------------------------------------------------- approval


def test_approval_mode_stages_pending_items(session, hook, router, fake_api):
    store = session.store
    store.create("cents", "sales.revenue is stored in cents", "project", "Cents.\n")
    memdir = session.memdir
    before = snapshot(memdir)
    hook.approval_override = True
    existing = memdir / "project_cents.md"
    router.main.append(Turn(text="ok"))
    router.extract.extend([
        Turn(tool_calls=[ToolCall("Read", {"file_path": str(existing)})]),
        Turn(tool_calls=[
            ToolCall("Write", {"file_path": str(memdir / "feedback_no_full_frames.md"),
                               "content": FEEDBACK}),
            ToolCall("Edit", {"file_path": str(existing), "old_string": "Cents.",
                              "new_string": "Cents, since the 2024 billing migration."}),
        ]),
        Turn(text="Saved two."),
    ])
    notices = Notices()
    turn(session, "note the migration", notices)
    assert hook.wait(120)
    assert fake_api.failures == []
    assert snapshot(memdir) == {**before, **{k: v for k, v in snapshot(memdir).items()
                                             if "/.pending/" in k}}
    results = router.extract_bodies[2]["messages"][-1]["content"]
    assert not any(r.get("is_error") for r in results if r.get("type") == "tool_result")
    assert ".stage-" not in json.dumps(router.extract_bodies[2])  # paths mapped back

    area = PendingArea(memdir)
    items = {i.file: i for i in area.list()}
    assert set(items) == {"feedback_no_full_frames.md", "project_cents.md"}
    assert items["feedback_no_full_frames.md"].is_new and not items["project_cents.md"].is_new
    assert not list((memdir / ".pending").glob(".stage-*"))
    text, payload = notices.items[0]
    assert "await your approval" in text and sorted(payload["pending"]) == sorted(
        i.id for i in items.values())
    assert [m.file for m in store.list()] == ["project_cents.md"]

    area.accept(items["feedback_no_full_frames.md"].id, store)
    memory = store.get("no-full-frames")
    assert memory.indexed and memory.provenance == "extraction"
    area.discard(items["project_cents.md"].id)
    assert area.list() == []
    assert existing.read_bytes() == before[str(existing)]


def test_accepting_over_a_changed_memory_needs_force(session, tmp_path):
    from jupyter_memory.memdir.pending import PendingConflict

    store = session.store
    store.create("cents", "revenue in cents", "project", "Cents.\n")
    area = PendingArea(session.memdir)
    path = session.memdir / "project_cents.md"
    original = path.read_bytes()
    item = area.add("project_cents.md", original.replace(b"Cents.", b"Cents!"), base=original,
                    run="r1")
    store.update("project_cents.md", body="Changed by hand.\n")
    with pytest.raises(PendingConflict, match="changed after the extraction"):
        area.accept(item.id, store)
    area.accept(item.id, store, force=True)
    assert "Cents!" in path.read_text()


def test_undo_keeps_a_file_changed_after_the_run(session, hook, router, fake_api):
    path = session.memdir / "feedback_no_full_frames.md"
    router.main.append(Turn(text="ok"))
    router.extract.extend([
        Turn(tool_calls=[ToolCall("Write", {"file_path": str(path), "content": FEEDBACK})]),
        Turn(text="done"),
    ])
    turn(session, "no whole frames please")
    assert hook.wait(120)
    session.store.update("feedback_no_full_frames.md", body="Edited by the person.\n")
    report = hook.undo(1)
    assert report.kept == ["feedback_no_full_frames.md"] and not report.removed
    assert "Edited by the person." in path.read_text()
    assert "changed after the extraction" in report.summary()


def test_a_run_stops_after_five_model_calls(session, hook, router, fake_api):
    router.main.append(Turn(text="ok"))
    router.extract.extend(
        [Turn(tool_calls=[ToolCall("Glob", {"pattern": "*.md"})]) for _ in range(6)])
    turn(session, "hello")
    assert hook.wait(120)
    assert len(router.extract_bodies) == 5 and len(router.extract) == 1
    run = hook.runs[-1]
    assert run.calls == 5 and run.status == "nothing" and hook.failures == 0
    assert "You have 5 model calls at most" in router.extract_bodies[0]["messages"][-1]["content"][-1][
        "text"]
    assert fake_api.failures == []


def save_then_nothing(session: Session, router: Router, *answers: str) -> None:
    """Two turns answered with ``answers``; the first run saves FEEDBACK, the next none."""
    path = session.memdir / "feedback_no_full_frames.md"
    router.main.extend(Turn(text=answer) for answer in answers)
    router.extract.extend([
        Turn(tool_calls=[ToolCall("Write", {"file_path": str(path), "content": FEEDBACK})]),
        Turn(text="Saved feedback_no_full_frames.md."),
        Turn(text="Nothing to save."),
    ])


def test_a_notice_that_cannot_reach_its_cell_comes_with_the_next_turn(
        session, hook, router, fake_api):
    save_then_nothing(session, router, "ok", "next")

    def gone(text: str, payload: dict) -> None:
        raise RuntimeError("the cell's display is gone")

    result = run_turn(session, "no whole frames", events=TurnEvents(on_notice=gone))
    assert result.ok and hook.wait(120)
    later = turn(session, "next question")
    assert any(e["kind"] == "memory" and "Saved 1 memory" in e["text"]
               for e in later.record["events"])
    assert hook.undelivered == []


def test_the_next_run_names_the_memory_the_last_run_saved(session, hook, router, fake_api):
    """The index in the shared context was loaded before the first run saved a memory, so
    the second run's instruction names that memory (and only it) as new since then."""
    save_then_nothing(session, router, "Noted.", "Here is the head.")
    turn(session, "Please never print a whole data frame for me.")
    assert hook.wait(120)
    turn(session, "Show me the sales table.")
    assert hook.wait(120)
    assert fake_api.failures == []
    first, second = router.extract_bodies[0], router.extract_bodies[-1]
    assert len(router.extract_bodies) == 3
    said = [body["messages"][-1]["content"][-1]["text"] for body in (first, second)]
    assert "There are no memories yet." in said[0]
    # The memdir of these tests keeps no index by itself, so nothing points to the file.
    assert "points to 0 of the 1 memories that exist; new or changed since it was loaded" in said[1]
    assert "[feedback] feedback_no_full_frames.md" in said[1]
    assert "Show df.head() and the shape, never a whole data frame" in said[1]
    # The main calls kept the index they started with: their cached prefix did not move.
    assert "feedback_no_full_frames.md" not in json.dumps(router.main_bodies[-1]["messages"][0])
