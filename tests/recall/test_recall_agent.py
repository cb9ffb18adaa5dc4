"""Relevance prefetch inside the agent loop, against the local Messages API server.

Every request goes through the real ``anthropic`` SDK. One responder plays both models:
requests that force the ``select_memories`` tool are the selector (the small model),
the others the main model. Where timing matters, the main model's responder waits for
the prefetch to finish before answering, so each test is deterministic without sleeps.
"""

from __future__ import annotations

import json
import os
import threading
import time
from collections.abc import Callable
from functools import partial
from typing import Any

import pytest
from sessions import make_session as shared_session

from jupyter_memory import recall
from jupyter_memory.agent.loop import run_turn
from jupyter_memory.agent.session import AgentConfig, Session
from jupyter_memory.context.request_parts import readable
from jupyter_memory.localapi import Fault, ToolCall, Turn
from jupyter_memory.recall import SESSION_BUDGET_BYTES

SELECTOR = "select_memories"
OLD = time.time() - 5 * 86_400


# Every session here works on the test's memdir (the `memdir` fixture, tests/conftest.py).
pytestmark = pytest.mark.usefixtures("memdir")


make_session = partial(shared_session, recall_mode="prefetch")


def add(session: Session, name: str, description: str, body: str, kind: str = "project") -> str:
    """Create a memory through the store; return its memdir-relative file."""
    return session.store.create(name, description, kind, body).file


def is_selector(body: dict[str, Any]) -> bool:
    return (body.get("tool_choice") or {}).get("name") == SELECTOR


def text_of(body: dict[str, Any]) -> str:
    return json.dumps(body["messages"], ensure_ascii=False)


class Router:
    """Answers selector requests with ``pick`` and main requests from ``main`` in order.

    ``wait_first`` makes each turn's first main call wait until that turn's prefetch
    has finished, so whether memories reach a later call never depends on timing.
    """

    def __init__(
        self,
        session: Session,
        pick: Callable[[dict[str, Any]], Turn] | list[str],
        main: list[Turn],
        *,
        wait_first: bool = True,
    ) -> None:
        self.session = session
        self.pick = pick if callable(pick) else (lambda _b, names=pick: choose(names))
        self.main = list(main)
        self.wait_first = wait_first
        self.selector_bodies: list[dict[str, Any]] = []
        self.main_bodies: list[dict[str, Any]] = []
        self._lock = threading.Lock()

    def __call__(self, body: dict[str, Any]) -> Turn:
        if is_selector(body):
            with self._lock:
                self.selector_bodies.append(body)
            return self.pick(body)
        with self._lock:
            self.main_bodies.append(body)
            turn = self.main.pop(0)
        last = body["messages"][-1]
        first_call = not any(b.get("type") == "tool_result" for b in last["content"])
        if self.wait_first and first_call:
            prefetch = recall.last_prefetch(self.session)
            assert prefetch is not None and prefetch.wait(120)
        return turn


def choose(names: list[str]) -> Turn:
    return Turn(tool_calls=[ToolCall(SELECTOR, {"selected_memories": names})])


def glob() -> Turn:
    return Turn(tool_calls=[ToolCall("Glob", {"pattern": "*.py"})])


def recall_files(session: Session) -> list[str]:
    return [m["_meta"]["file"] for m in recall.recall_messages(session.messages)]


def by_file(decisions: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    return {d["file"]: d for d in decisions}


# ----------------------------------------------------------------------------- timing


def test_answer_without_tool_call_misses_the_prefetch(fake_api, project):
    session = make_session(project)
    cents = add(session, "revenue-in-cents", "sales.revenue is stored in cents",
                "The revenue column holds integer cents (MARKER-CENTS).")
    router = Router(session, [cents], [Turn(text="It is in euros, I think.")])
    fake_api.responder = router
    result = run_turn(session, "What unit is the revenue column in?")
    assert result.ok
    assert len(router.main_bodies) == 1 and len(router.selector_bodies) == 1
    assert "MARKER-CENTS" not in text_of(router.main_bodies[0])
    assert recall_files(session) == []
    decision = by_file(readable(result.record)["recall"]["decisions"])[cents]
    assert decision["decision"] == "skipped" and "not attached" in decision["reason"]


def test_call_after_a_tool_round_carries_the_prefetch(fake_api, project):
    session = make_session(project)
    cents = add(session, "revenue-in-cents", "sales.revenue is stored in cents",
                "The revenue column holds integer cents (MARKER-CENTS).")
    router = Router(session, [cents], [glob(), Turn(text="Divide by 100.")])
    fake_api.responder = router
    result = run_turn(session, "What unit is the revenue column in?")
    assert result.ok
    first, second = router.main_bodies
    assert "MARKER-CENTS" not in text_of(first)
    assert "MARKER-CENTS" in text_of(second)
    assert "<system-reminder>" in text_of(second)
    assert "_meta" not in text_of(second)  # private metadata never reaches the wire
    assert recall_files(session) == [cents]
    decision = by_file(readable(result.record)["recall"]["decisions"])[cents]
    assert decision["decision"] == "injected" and decision["path"] == "B"
    memories = {c["name"]: c["tokens"] for c in result.record["context"]["categories"]}
    assert memories["memories"] > 0


def test_wait_for_prefetch_puts_memories_in_the_first_call(fake_api, project):
    session = make_session(project, wait_for_prefetch=True)
    cents = add(session, "revenue-in-cents", "sales.revenue is stored in cents",
                "The revenue column holds integer cents (MARKER-CENTS).")
    router = Router(session, [cents], [Turn(text="Divide by 100.")], wait_first=False)
    fake_api.responder = router
    assert run_turn(session, "What unit is the revenue column in?").ok
    assert len(router.main_bodies) == 1
    assert "MARKER-CENTS" in text_of(router.main_bodies[0])


# ----------------------------------------------------------------------------- the selector call


def test_selector_request_goes_to_the_small_model_with_manifest_and_forced_tool(fake_api, project):
    session = make_session(project, small_model="claude-small-test", wait_for_prefetch=True)
    cents = add(session, "revenue-in-cents", "sales.revenue is stored in cents", "Cents.")
    frames = add(session, "no-full-frames", "never print whole data frames", "Head only.",
                 "feedback")
    router = Router(session, [], [glob(), Turn(text="ok")], wait_first=False)
    fake_api.responder = router
    assert run_turn(session, "List the python files please").ok
    router.main = [Turn(text="done")]
    assert run_turn(session, "How is revenue stored here?").ok

    first, second = router.selector_bodies
    assert first["model"] == "claude-small-test"
    assert first["max_tokens"] == 256
    assert first["tool_choice"] == {"type": "tool", "name": SELECTOR}
    schema = first["tools"][0]["input_schema"]
    assert schema["properties"]["selected_memories"]["type"] == "array"
    assert "at most five" in first["system"]
    prompt = "\n".join(b["text"] for b in first["messages"][0]["content"])
    assert f"- [project] {cents} (" in prompt and "): sales.revenue is stored in cents" in prompt
    assert f"- [feedback] {frames} (" in prompt
    assert "List the python files please" in prompt
    assert "Tools used without errors" not in prompt
    # the second message sees the tool that succeeded during the first turn
    later = second["messages"][0]["content"][-1]["text"]
    assert "Tools used without errors since the person's previous message: Glob" in later
    assert all(b["model"] != "claude-small-test" for b in router.main_bodies)


def test_failed_tools_are_not_recently_used(fake_api, project):
    session = make_session(project, wait_for_prefetch=True)
    add(session, "revenue-in-cents", "sales.revenue is stored in cents", "Cents.")
    missing = str(project / "nope.txt")
    router = Router(session, [], [
        Turn(tool_calls=[ToolCall("Read", {"file_path": missing}),
                         ToolCall("Glob", {"pattern": "*.py"})]),
        Turn(text="ok"), Turn(text="ok")], wait_first=False)
    fake_api.responder = router
    assert run_turn(session, "Read the notes file please").ok
    assert run_turn(session, "And how is revenue stored?").ok
    later = router.selector_bodies[1]["messages"][0]["content"][-1]["text"]
    assert later.endswith("previous message: Glob")


def test_names_not_in_the_manifest_are_dropped(fake_api, project):
    session = make_session(project, wait_for_prefetch=True)
    cents = add(session, "revenue-in-cents", "sales.revenue is stored in cents", "MARKER-CENTS")
    router = Router(session, ["invented_memory.md", "../etc/passwd", cents],
                    [Turn(text="ok")], wait_first=False)
    fake_api.responder = router
    result = run_turn(session, "How is revenue stored?")
    assert recall_files(session) == [cents]
    decisions = by_file(readable(result.record)["recall"]["decisions"])
    assert decisions["invented_memory.md"]["decision"] == "filtered"
    assert "not in the manifest" in decisions["invented_memory.md"]["reason"]
    assert decisions[cents]["decision"] == "injected"


def test_the_selector_answer_is_kept_as_given_beside_its_request(fake_api, project):
    session = make_session(project, wait_for_prefetch=True)
    cents = add(session, "revenue-in-cents", "sales.revenue is stored in cents", "Cents.")
    router = Router(session, ["invented_memory.md", cents], [Turn(text="ok")], wait_first=False)
    fake_api.responder = router
    result = run_turn(session, "How is revenue stored?")
    prefetch = recall.last_prefetch(session)
    assert prefetch.request == {k: v for k, v in router.selector_bodies[0].items()
                                if k != "stream"}
    # the answer before validation: the invented name is still in it
    assert prefetch.answer == {"selected_memories": ["invented_memory.md", cents]}
    assert prefetch.selected == [cents]
    selector = readable(result.record)["recall"]["selector"]
    assert selector["answer"] == prefetch.answer and selector["request"] == prefetch.request


def test_offline_selector_has_no_request_and_no_answer(project):
    session = make_session(project, recall_selector="offline")
    add(session, "revenue-in-cents", "sales.revenue is stored in cents", "Cents.")
    prefetch = recall.start_prefetch(session, "How is revenue stored in sales?", None)
    assert prefetch.wait(120)
    assert prefetch.request is None and prefetch.answer is None
    assert prefetch.to_json()["selector"] == "offline"


def test_at_most_five_memories_a_turn(fake_api, project):
    session = make_session(project, wait_for_prefetch=True)
    files = [add(session, f"fact-{i}", f"fact number {i} about sales", f"Fact {i}.")
             for i in range(7)]
    router = Router(session, files, [Turn(text="ok")], wait_first=False)
    fake_api.responder = router
    result = run_turn(session, "Tell me all the sales facts")
    assert recall_files(session) == files[:5]
    decisions = by_file(readable(result.record)["recall"]["decisions"])
    assert [decisions[f]["decision"] for f in files[5:]] == ["skipped", "skipped"]
    assert "5-file limit" in decisions[files[6]]["reason"]


# ----------------------------------------------------------------------------- filters


def test_already_surfaced_and_already_read_are_filtered_before_the_call(fake_api, project):
    session = make_session(project, wait_for_prefetch=True)
    cents = add(session, "revenue-in-cents", "sales.revenue is stored in cents", "Cents.")
    frames = add(session, "no-full-frames", "never print whole data frames", "Head.", "feedback")
    fiscal = add(session, "fiscal-year", "fiscal year starts in February", "Feb.")
    router = Router(session, [cents], [
        Turn(tool_calls=[ToolCall("Read", {"file_path": str(session.memdir / frames)})]),
        Turn(text="ok"), Turn(text="ok")], wait_first=False)
    fake_api.responder = router
    assert run_turn(session, "How is revenue stored?").ok
    assert recall_files(session) == [cents]
    router.pick = lambda _body: choose([fiscal])
    result = run_turn(session, "When does the fiscal year start?")
    manifest = router.selector_bodies[1]["messages"][0]["content"][0]["text"]
    assert fiscal in manifest
    assert cents not in manifest and frames not in manifest
    decisions = by_file(readable(result.record)["recall"]["decisions"])
    assert decisions[cents]["decision"] == "filtered" and decisions[cents]["path"] == "B"
    assert decisions[frames]["decision"] == "filtered" and decisions[frames]["path"] == "C"
    assert recall_files(session) == [cents, fiscal]


def test_files_read_while_the_selector_thinks_are_filtered_after_the_call(fake_api, project):
    session = make_session(project)
    cents = add(session, "revenue-in-cents", "sales.revenue is stored in cents", "MARKER-CENTS")
    fiscal = add(session, "fiscal-year", "fiscal year starts in February", "MARKER-FISCAL")
    read_done = threading.Event()

    def slow_selector(_body: dict[str, Any]) -> Turn:
        assert read_done.wait(120)  # answer only after the agent has read the file itself
        return choose([cents, fiscal])

    class AfterRead(Router):
        def __call__(self, body: dict[str, Any]) -> Turn:
            if not is_selector(body) and len(self.main_bodies) == 1:
                read_done.set()  # the Read of the tool round has run
                prefetch = recall.last_prefetch(self.session)
                assert prefetch is not None and prefetch.wait(120)
            return super().__call__(body)

    router = AfterRead(session, slow_selector, [
        Turn(tool_calls=[ToolCall("Read", {"file_path": str(session.memdir / cents)})]),
        glob(), Turn(text="ok")], wait_first=False)
    fake_api.responder = router
    result = run_turn(session, "What do we know about revenue and the fiscal year?")
    assert result.ok
    assert recall_files(session) == [fiscal]
    assert "MARKER-FISCAL" in text_of(router.main_bodies[2])
    decision = by_file(readable(result.record)["recall"]["decisions"])[cents]
    assert decision["decision"] == "filtered"
    assert "after the selector answered" in decision["reason"]


# ----------------------------------------------------------------------------- size limits


def test_long_memories_are_cut_with_a_note(fake_api, project):
    session = make_session(project, wait_for_prefetch=True)
    wide = add(session, "wide", "a memory with long lines", "\n".join(["w" * 99] * 60))
    tall = add(session, "tall", "a memory with many short lines",
               "\n".join(f"line {i}" for i in range(300)))
    router = Router(session, [wide, tall], [Turn(text="ok")], wait_first=False)
    fake_api.responder = router
    result = run_turn(session, "Show me the wide and tall notes")
    messages = {m["_meta"]["file"]: m for m in recall.recall_messages(session.messages)}
    wide_meta, tall_meta = messages[wide]["_meta"], messages[tall]["_meta"]
    assert wide_meta["truncated"] == "bytes" and wide_meta["bytes"] <= 4096
    assert tall_meta["truncated"] == "lines"
    wide_text = messages[wide]["content"][0]["text"]
    assert "4,096-byte limit" in wide_text and str(session.memdir / wide) in wide_text
    assert "Read tool" in wide_text
    assert "w" * 99 + "\n" in wide_text  # cut at a line boundary: only whole lines
    tall_text = messages[tall]["content"][0]["text"]
    assert "200-line limit" in tall_text and "line 150" in tall_text
    assert "line 250" not in tall_text
    decisions = by_file(readable(result.record)["recall"]["decisions"])
    assert decisions[wide]["decision"] == "truncated" and "4,096-byte" in decisions[wide]["reason"]
    assert decisions[tall]["decision"] == "truncated" and "200-line" in decisions[tall]["reason"]


def _exact_memory(session: Session, name: str, size: int) -> str:
    """A memory without frontmatter of exactly ``size`` bytes (the store keeps it verbatim)."""
    line = "b" * 63 + "\n"
    text = line * (size // 64) + "c" * (size % 64)
    session.store.write_file(f"{name}.md", text)
    assert (session.memdir / f"{name}.md").stat().st_size == size
    return f"{name}.md"


def test_session_budget_stops_prefetch_and_resets_when_attachments_go(fake_api, project):
    session = make_session(project, wait_for_prefetch=True)
    files = [_exact_memory(session, f"note_{i:02d}", 4096) for i in range(18)]
    picks = [files[0:5], files[5:10], files[10:15], files[15:18]]
    router = Router(session, lambda _b: choose(picks.pop(0)), [Turn(text="ok")] * 5,
                    wait_first=False)
    fake_api.responder = router
    for _ in range(3):
        assert run_turn(session, "Anything relevant in the notes?").ok
    assert recall.budget_used(session.messages) == 15 * 4096 == SESSION_BUDGET_BYTES
    result = run_turn(session, "Anything more in the notes?")
    assert len(router.selector_bodies) == 3  # budget spent: no new selector call
    assert all(d["decision"] in ("skipped", "filtered") for d in readable(result.record)["recall"]["decisions"])
    skipped = [d for d in readable(result.record)["recall"]["decisions"] if d["decision"] == "skipped"]
    assert skipped and "budget is spent" in skipped[0]["reason"]
    # a compaction drops the attachments: the budget and the surfaced set start again
    session.messages[:] = [m for m in session.messages if m.get("_meta", {}).get("kind") != "recall"]
    assert recall.budget_used(session.messages) == 0
    assert run_turn(session, "Anything in the notes now?").ok
    assert len(router.selector_bodies) == 4
    manifest = router.selector_bodies[3]["messages"][0]["content"][0]["text"]
    assert files[0] in manifest  # surfaced before the compaction, offered again
    assert recall_files(session) == files[15:18]


def test_attachments_stop_before_the_budget_would_be_passed(fake_api, project):
    session = make_session(project, wait_for_prefetch=True)
    small = _exact_memory(session, "small", 2000)
    files = [_exact_memory(session, f"note_{i:02d}", 4096) for i in range(16)]
    picks = [[small, *files[0:4]], files[4:9], files[9:14], files[14:16]]
    router = Router(session, lambda _b: choose(picks.pop(0)), [Turn(text="ok")] * 4,
                    wait_first=False)
    fake_api.responder = router
    for _ in range(3):
        assert run_turn(session, "Anything relevant in the notes?").ok
    spent = recall.budget_used(session.messages)
    assert spent == 2000 + 14 * 4096 and spent < SESSION_BUDGET_BYTES
    result = run_turn(session, "Anything more in the notes?")
    assert len(router.selector_bodies) == 4  # under budget: the prefetch ran
    assert recall.budget_used(session.messages) == spent  # but nothing more fitted
    decisions = by_file(readable(result.record)["recall"]["decisions"])
    assert decisions[files[14]]["decision"] == "skipped"
    assert "would pass the session's recall budget" in decisions[files[14]]["reason"]


# ----------------------------------------------------------------------------- trigger


def test_single_word_skips_and_cjk_trigger_lets_chinese_through(fake_api, project):
    session = make_session(project, wait_for_prefetch=True)
    east = add(session, "east-region", "华东区销售数据在 sales_cn_east 表", "MARKER-EAST")
    router = Router(session, [east], [Turn(text="ok")] * 3, wait_first=False)
    fake_api.responder = router
    result = run_turn(session, "summarise")
    assert router.selector_bodies == []
    assert by_file(readable(result.record)["recall"]["decisions"])[east]["reason"].startswith(
        "prefetch did not run: single-word message")
    result = run_turn(session, "华东区的销售数据在哪个表？")
    assert router.selector_bodies == []  # the reference skips unspaced Chinese too
    assert "cjk_trigger" in by_file(readable(result.record)["recall"]["decisions"])[east]["reason"]

    cjk = make_session(project, wait_for_prefetch=True, cjk_trigger=True)
    router = Router(cjk, [east], [Turn(text="ok")], wait_first=False)
    fake_api.responder = router
    assert run_turn(cjk, "华东区的销售数据在哪个表？").ok
    assert len(router.selector_bodies) == 1
    assert "MARKER-EAST" in text_of(router.main_bodies[0])


def test_selector_failure_leaves_the_turn_working(fake_api, project):
    session = make_session(project, wait_for_prefetch=True)
    cents = add(session, "revenue-in-cents", "sales.revenue is stored in cents", "Cents.")
    router = Router(session, lambda _b: Turn(fault=Fault("api_error", should_retry=False)),
                    [Turn(text="Revenue is stored as cents, as far as I know.")],
                    wait_first=False)
    fake_api.responder = router
    result = run_turn(session, "How is revenue stored?")
    assert result.ok and result.answer.startswith("Revenue is stored")
    assert recall_files(session) == []
    decision = by_file(readable(result.record)["recall"]["decisions"])[cents]
    assert decision["decision"] == "skipped"
    assert decision["reason"].startswith("selector failed: InternalServerError (500)")


def test_header_is_fixed_when_the_memory_is_attached(fake_api, project):
    session = make_session(project, wait_for_prefetch=True)
    cents = add(session, "revenue-in-cents", "sales.revenue is stored in cents", "MARKER-CENTS")
    path = session.memdir / cents
    os.utime(path, (OLD, OLD))
    picks = [[cents], []]
    router = Router(session, lambda _b: choose(picks.pop(0)), [Turn(text="ok")] * 2,
                    wait_first=False)
    fake_api.responder = router
    assert run_turn(session, "How is revenue stored?").ok
    message = recall.recall_messages(session.messages)[0]
    assert "saved 5 days ago" in message["_meta"]["header"]
    assert "5 days ago" in message["content"][0]["text"] and "Verify" in message["content"][0]["text"]
    block = message["content"][0]["text"]
    much_older = time.time() - 40 * 86_400
    os.utime(path, (much_older, much_older))
    assert run_turn(session, "And the fiscal year?").ok
    resent = [b["text"] for m in router.main_bodies[1]["messages"] for b in m["content"]
              if b.get("type") == "text" and "MARKER-CENTS" in b.get("text", "")]
    assert resent == [block]  # byte-identical: the cached prefix is not disturbed
    assert "40 days" not in text_of(router.main_bodies[1])


def test_offline_selector_setting_needs_no_model(fake_api, project):
    options = {"max_retries": 0, "recall_mode": "prefetch", "wait_for_prefetch": True}
    config = AgentConfig.from_env(recall_selector="offline", **options)
    session = Session(project, config=config)
    cents = add(session, "revenue-in-cents", "The sales.revenue column is stored in cents",
                "MARKER-CENTS")
    add(session, "editor", "Uses JupyterLab with vim key bindings", "Vim.", "user")
    router = Router(session, [], [Turn(text="ok")], wait_first=False)
    fake_api.responder = router
    result = run_turn(session, "Is the revenue column stored in cents or euros?")
    assert router.selector_bodies == []
    assert "MARKER-CENTS" in text_of(router.main_bodies[0])
    decision = by_file(readable(result.record)["recall"]["decisions"])[cents]
    assert decision["decision"] == "injected" and "offline selector" in decision["reason"]
