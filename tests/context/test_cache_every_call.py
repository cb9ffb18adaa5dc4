"""Every token written once over every call of a session: where the extraction fork, the
compaction summary and the recall selector put their cache breakpoints, measured through
the real anthropic SDK against the local server, which bills as the API does."""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Any

import pytest
from sessions import make_session

from jupyter_memory.agent.compaction.core import compact
from jupyter_memory.agent.compaction.prompt import SUMMARY_REQUEST_HEAD
from jupyter_memory.agent.loop import run_turn
from jupyter_memory.context.assemble import (
    MAX_BREAKPOINTS,
    RequestState,
    assemble,
    count_breakpoints,
)
from jupyter_memory.context.prompts import Environment
from jupyter_memory.localapi import FakeAnthropic, RecordedRequest, ToolCall, Turn
from jupyter_memory.localapi.tokens import canonical_blocks
from jupyter_memory.recall.model_selector import SELECTOR_TOOL_NAME

FORK = "You are now the memory extraction agent"



def user_texts(body: dict[str, Any]) -> list[str]:
    return [str(b.get("text", "")) for m in body["messages"] if m["role"] == "user"
            for b in m["content"] if b.get("type") == "text"]


def kind(body: dict[str, Any]) -> str:
    choice = body.get("tool_choice") or {}
    if choice.get("name") == SELECTOR_TOOL_NAME:
        return "selector"
    texts = user_texts(body)
    if any(t.startswith(FORK) for t in texts):
        return "extraction"
    if texts and texts[-1].startswith(SUMMARY_REQUEST_HEAD):
        return "summary"
    return "main"


class Routed:
    """Scripted replies per kind of call (the fork runs in a thread of its own)."""

    def __init__(self, server: FakeAnthropic, **replies: list[Turn]) -> None:
        self.replies = {k: list(v) for k, v in replies.items()}
        self.lock = threading.Lock()
        server.responder = self

    def __call__(self, body: dict[str, Any]) -> Turn | None:
        with self.lock:
            queue = self.replies.get(kind(body)) or []
            return queue.pop(0) if queue else None


def calls(server: FakeAnthropic, of: str) -> list[RecordedRequest]:
    return [r for r in server.requests if r.usage is not None and kind(r.body) == of]


def marked(body: dict[str, Any]) -> list[str]:
    """Where the request's breakpoints are (block locations, as the server names them)."""
    return [b.where for b in canonical_blocks(body) if b.cache_control is not None]


@pytest.fixture
def session(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    monkeypatch.setenv("JUPYTER_MEMORY_EXTRACTION", "1")
    session = make_session(tmp_path / "project", memdir=tmp_path / "memory")
    session.store.create("revenue-in-cents", "sales.revenue is stored in integer cents",
                         "project", "The revenue column holds cents.")
    yield session
    session.close()


def test_the_forks_prefix_write_is_read_by_the_next_main_call(fake_api, session) -> None:
    Routed(fake_api, main=[Turn(text="Revenue is up 3.2%."), Turn(text="Churn is flat.")],
           extraction=[Turn(text="Nothing to save.")] * 2)
    hook = session.extraction
    assert run_turn(session, "How does revenue look?").ok
    assert hook.wait(30)
    [first_main] = calls(fake_api, "main")
    [fork] = calls(fake_api, "extraction")
    # The fork's last breakpoint is on the turn's answer, the last block of the
    # conversation; its own instruction after it carries none.
    answer_at = f"messages.{len(fork.body['messages']) - 2}.content.0"
    assert fork.body["messages"][-2]["role"] == "assistant"
    assert marked(fork.body)[-1] == answer_at
    assert fork.usage is not None and fork.usage.read_until == marked(first_main.body)[-1]
    [answer] = [b for b in canonical_blocks(fork.body) if b.where == answer_at]
    assert fork.usage.cache_creation_input_tokens == answer.tokens  # the answer, once
    assert fork.usage.input_tokens == canonical_blocks(fork.body)[-1].tokens  # its own words

    fake_api.clock.advance(30)
    assert run_turn(session, "And churn?").ok
    second = calls(fake_api, "main")[1]
    assert second.usage is not None
    # The next main call reads everything the fork wrote, and writes only its new message.
    assert second.usage.read_until == answer_at
    assert second.usage.cache_read_input_tokens == fork.usage.total - fork.usage.input_tokens
    new = sum(b.tokens for b in canonical_blocks(second.body)
              if b.where.startswith(f"messages.{len(second.body['messages']) - 1}."))
    assert second.usage.cache_creation_input_tokens == new
    assert second.usage.input_tokens == 0


def test_the_forks_own_messages_carry_no_cache_mark(fake_api, session) -> None:
    notes = session.memdir / "project_revenue-in-cents.md"
    Routed(fake_api, main=[Turn(text="Revenue is up 3.2%.")], extraction=[
        Turn(tool_calls=[ToolCall("Read", {"file_path": str(notes)})]),
        Turn(text="Nothing to save."),
    ])
    hook = session.extraction
    assert run_turn(session, "How does revenue look?").ok
    assert hook.wait(30)
    forks = calls(fake_api, "extraction")
    assert len(forks) == 2  # the instruction, then its Read and the result
    conversation_end = marked(forks[0].body)[-1]
    for fork in forks:
        assert count_breakpoints(fork.body) <= MAX_BREAKPOINTS
        assert marked(fork.body)[-1] == conversation_end
        blocks = canonical_blocks(fork.body)
        after = blocks[[b.where for b in blocks].index(conversation_end) + 1:]
        assert after and all(b.cache_control is None for b in after)
        assert fork.usage is not None
        assert fork.usage.input_tokens == sum(b.tokens for b in after)
    # The second round reads the first round's prefix and writes nothing.
    assert forks[1].usage is not None and forks[1].usage.cache_creation_input_tokens == 0
    assert forks[1].usage.read_until == conversation_end


def test_a_summary_request_is_an_unmarked_suffix(fake_api, session) -> None:
    Routed(fake_api, main=[Turn(text="Revenue is 42.")],
           summary=[Turn(text="<summary>Revenue is 42.</summary>")])
    assert run_turn(session, "What is the revenue?").ok
    compact(session)
    [main] = calls(fake_api, "main")
    [summary] = calls(fake_api, "summary")
    blocks = canonical_blocks(summary.body)
    assert blocks[-1].cache_control is None  # the summary request itself
    assert summary.usage is not None
    assert summary.usage.cache_read_input_tokens == main.usage.total  # the turn's prefix
    assert summary.usage.cache_creation_input_tokens == blocks[-2].tokens  # its answer
    assert summary.usage.input_tokens == blocks[-1].tokens


def test_a_suffix_keeps_the_breakpoint_on_the_conversation() -> None:
    env = Environment(project_root="/p", notebook=None, platform="Linux", python_version="3.11",
                      model="claude-sonnet-5-5")
    conversation = [{"role": "user", "content": "q"},
                    {"role": "assistant", "content": [{"type": "text", "text": "a"}]},
                    {"role": "user", "content": [{"type": "text", "text": "q2"}]}]
    state = RequestState(model="m", max_tokens=10, environment=env, messages=conversation,
                         suffix=[{"role": "user", "content": [{"type": "text", "text": "fork"}]}])
    body = assemble(state).body
    # Same role: the suffix joins the conversation's last message, after its marked block.
    assert body["messages"][-1]["content"] == [
        {"type": "text", "text": "q2", "cache_control": {"type": "ephemeral"}},
        {"type": "text", "text": "fork"},
    ]
    assert count_breakpoints(body) == 4
    without = assemble(RequestState(model="m", max_tokens=10, environment=env,
                                    messages=conversation)).body
    assert body["messages"][:-1] == without["messages"][:-1]


def _selector_session(tmp_path: Path, memories: int):
    session = make_session(tmp_path / "project", memdir=tmp_path / "memory",
                           recall_mode="prefetch", recall_selector="model",
                           wait_for_prefetch=True)
    for k in range(memories):
        session.store.create(f"fact-{k}", f"fact number {k}: a long enough description of one "
                             "durable fact about the quarterly revenue tables", "project",
                             f"Fact {k}.")
    return session


def test_the_selectors_manifest_is_written_once_then_read(fake_api, tmp_path) -> None:
    session = _selector_session(tmp_path, memories=60)
    pick = Turn(tool_calls=[ToolCall(SELECTOR_TOOL_NAME, {"selected_memories": []})])
    Routed(fake_api, main=[Turn(text="ok"), Turn(text="ok")], selector=[pick, pick])
    try:
        assert run_turn(session, "How does the revenue look this quarter?").ok
        fake_api.clock.advance(30)
        assert run_turn(session, "And what about the churn numbers?").ok
    finally:
        session.close()
    first, second = calls(fake_api, "selector")
    # The manifest comes first and carries the one breakpoint; the question follows it.
    assert marked(first.body) == ["messages.0.content.0"]
    assert first.body["messages"][0]["content"][0]["text"].startswith("Memory files:")
    assert first.usage is not None and second.usage is not None
    assert first.usage.cache_creation_input_tokens == first.usage.breakpoints[0].prefix_tokens
    assert second.usage.cache_read_input_tokens == first.usage.cache_creation_input_tokens
    assert second.usage.cache_creation_input_tokens == 0


def test_a_short_manifest_is_below_the_minimum_and_not_cached(fake_api, tmp_path) -> None:
    session = _selector_session(tmp_path, memories=3)
    pick = Turn(tool_calls=[ToolCall(SELECTOR_TOOL_NAME, {"selected_memories": []})])
    Routed(fake_api, main=[Turn(text="ok"), Turn(text="ok")], selector=[pick, pick])
    try:
        assert run_turn(session, "How does the revenue look this quarter?").ok
        assert run_turn(session, "And what about the churn numbers?").ok
    finally:
        session.close()
    for call in calls(fake_api, "selector"):
        assert call.usage is not None
        assert [b.cacheable for b in call.usage.breakpoints] == [False]
        assert call.usage.cache_read_input_tokens == call.usage.cache_creation_input_tokens == 0


def test_an_hour_long_cache_outlives_a_pause_and_is_priced_at_twice(fake_api, tmp_path) -> None:
    from jupyter_memory.context.pricing import report

    session = make_session(tmp_path / "project", memdir=tmp_path / "memory", cache_ttl="1h")
    Routed(fake_api, main=[Turn(text="Revenue is up."), Turn(text="Churn is flat.")])
    try:
        assert run_turn(session, "How does revenue look?").ok
        fake_api.clock.advance(600)  # ten minutes: a five-minute entry would be gone
        assert run_turn(session, "And churn?").ok
    finally:
        session.close()
    first, second = calls(fake_api, "main")
    assert [b.ttl for b in first.usage.breakpoints] == ["1h"] * 4
    assert first.usage.ephemeral_1h_input_tokens == first.usage.total
    assert second.usage.cache_read_input_tokens == first.usage.total
    rows = {row.kind: row for row in report(session.cost_ledger, "test").rows}
    used = rows["main"].usage
    assert used.cache_creation_1h_input_tokens == used.cache_creation_input_tokens > 0
    assert "1-hour cache writes 2x" in report(session.cost_ledger, "test").render_text()


def test_the_default_lifetime_sends_no_ttl(tmp_path) -> None:
    session = make_session(tmp_path / "project", memdir=tmp_path / "memory")
    body = session.assemble([{"role": "user", "content": "hi"}]).body
    marks = [b.cache_control for b in canonical_blocks(body) if b.cache_control is not None]
    assert marks == [{"type": "ephemeral"}] * 4  # byte for byte what the API's default is
    session.close()
