"""Fault survival: every way the model endpoint can fail, in every part that calls it.

The matrix is faults × components. Faults: 429, 529, 500, the connection dropped in the
middle of a stream or before any reply, an SSE ``error`` event, a body that is not JSON,
a well-formed reply with no content, a slow answer, and an answer slower than the
client's timeout. Components: the main loop (a fault on its first call and on the call
after a tool round), the relevance prefetch's selector call, the background extraction
agent, and compaction (by hand and automatic).

Every fault is sent by the local Messages API server through the real ``anthropic`` SDK,
on *every* attempt of the faulted call (a :class:`Router` answers each request by its
kind), so the SDK's retry loop runs for real and the number of requests it makes can be
counted exactly. Each cell checks that no exception escaped (from a thread either: the
module turns pytest's unhandled-thread warning into an error), that the person gets a
clear message, that the conversation and the memdir are consistent (the memdir byte for
byte), that the retries are bounded by the session's ``max_retries``, and that the
session keeps working afterwards.
"""

from __future__ import annotations

import copy
import re
import threading
from collections import defaultdict, deque
from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import pytest
from extraction_router import MARKER as EXTRACTION_MARKER
from sessions import make_session as shared_session

from jupyter_memory import recall
from jupyter_memory.agent.compaction import (
    SUMMARY_REQUEST_HEAD,
    CompactionError,
    compact,
    state_of,
)
from jupyter_memory.agent.extraction import ExtractionHook, hook_for
from jupyter_memory.agent.loop import TurnEvents, TurnResult, run_turn
from jupyter_memory.agent.session import Session
from jupyter_memory.context.request_parts import readable
from jupyter_memory.localapi import Fault, ToolCall, Turn

# Every session works on the test's memdir (the `memdir` fixture, hardening/conftest.py).
pytestmark = [
    pytest.mark.filterwarnings("error::pytest.PytestUnhandledThreadExceptionWarning"),
    pytest.mark.usefixtures("memdir"),
]

MODEL = "claude-haiku-4-5"  # a 200K window: autocompact at 167,000, blocking at 177,000
SELECTOR_TOOL = "select_memories"
MEMORY_BODY = "The revenue column holds integer cents (MARKER-CENTS)."
SUMMARY = "<summary>\n1. Primary request and intent: check the revenue unit.\n</summary>"
#: The client timeout of the sessions in the ``timeout`` cells, and how late that fault
#: answers: far enough apart that a loaded machine cannot blur them.
TIMEOUT = 1.0
LATE = 3.0
WAIT = 30.0  # seconds a background run may take before the test calls it hung

#: A Python exception class named in a message for people (``RemoteProtocolError: …``).
CLASS_NAME = re.compile(r"\b[A-Za-z]\w*(?:Error|Exception|Timeout)\b")


# ----------------------------------------------------------------------------- the faults


@dataclass(frozen=True)
class Case:
    """One way the endpoint misbehaves, and what the SDK does about it.

    ``fault`` is applied to every attempt of the faulted call; ``None`` means the reply
    is well formed but has no content at all. ``retried_stream`` / ``retried_plain``
    say whether the SDK retries it on a streamed request (main loop, extraction,
    compaction) or a plain one (the selector). ``words``: a clear message names the
    cause with one of these.
    """

    id: str
    fault: Fault | None
    retried_stream: bool
    retried_plain: bool
    words: tuple[str, ...] = ()

    @property
    def slow_only(self) -> bool:
        """The reply arrives, late but within the timeout: nothing may fail."""
        return self.id == "late-answer"

    @property
    def empty(self) -> bool:
        return self.fault is None

    @property
    def timeout(self) -> float:
        """The client timeout of the session under test."""
        return TIMEOUT if self.id == "timeout" else 30.0

    def attempts(self, *, streaming: bool, max_retries: int) -> int:
        """Requests the SDK sends for one call that meets this fault every time."""
        retried = self.retried_stream if streaming else self.retried_plain
        return 1 + max_retries if retried else 1

    def reply(self, good: Turn) -> Turn:
        """``good`` (what a healthy endpoint would answer) with this fault applied."""
        if self.empty:
            return Turn()
        return replace(good, fault=self.fault)


CASES = [
    Case("429", Fault("rate_limit"), True, True, ("429",)),
    Case("529", Fault("overloaded"), True, True, ("529", "overloaded")),
    Case("500", Fault("api_error"), True, True, ("500",)),
    Case("drop-mid-stream", Fault("drop", after_events=3), False, True, ("connection",)),
    Case("drop-before-reply", Fault("drop", after_events=0), True, True, ("connection",)),
    Case("stream-error", Fault("stream_error", after_events=3), False, True, ("overloaded",)),
    Case("garbage", Fault("garbage", after_events=3), False, False, ("json",)),
    Case("empty-reply", None, False, False, ("summary", "answer")),
    Case("late-answer", Fault("slow", delay=0.01), False, False),
    Case("timeout", Fault("slow", delay=LATE), False, True, ("time", "connection")),
]
BY_ID = {case.id: case for case in CASES}
FAILING = [c for c in CASES if not c.slow_only]
RETRIABLE = [c for c in CASES if c.fault is not None and c.fault.is_status] + [
    BY_ID["drop-before-reply"]]


def cases(*, xfail: dict[str, str] | None = None, only: list[Case] | None = None) -> list[Any]:
    """``pytest.param`` per case, with strict xfail marks for the known bugs."""
    xfail = xfail or {}
    out = []
    for case in only if only is not None else CASES:
        marks = [pytest.mark.xfail(strict=True, reason=xfail[case.id])] if case.id in xfail else []
        out.append(pytest.param(case, id=case.id, marks=marks))
    return out


# ----------------------------------------------------------------------------- routing


def _user_texts(body: dict[str, Any]) -> str:
    parts = []
    for message in body.get("messages", []):
        if message.get("role") != "user":
            continue
        content = message.get("content")
        if isinstance(content, str):
            parts.append(content)
        else:
            parts += [b.get("text", "") for b in content if b.get("type") == "text"]
    return "\n".join(parts)


def _last_user_text(body: dict[str, Any]) -> str:
    content = body["messages"][-1]["content"]
    if isinstance(content, str):
        return content
    return "".join(b.get("text", "") for b in content if b.get("type") == "text")


def kind_of(body: dict[str, Any]) -> str:
    """Which part of jupyter-memory sent this request."""
    if (body.get("tool_choice") or {}).get("name") == SELECTOR_TOOL:
        return "selector"
    if EXTRACTION_MARKER in _user_texts(body):
        return "extraction"
    if SUMMARY_REQUEST_HEAD in _last_user_text(body):
        return "summary"
    return "main"


def round_of(body: dict[str, Any]) -> int:
    """0 for a turn's first call, 1 for a call that follows a tool round."""
    last = body["messages"][-1]["content"]
    blocks = last if isinstance(last, list) else []
    return 1 if any(b.get("type") == "tool_result" for b in blocks) else 0


class Router:
    """The server's responder: each request kind gets its own answers.

    ``faulty[kind]`` builds the reply for every request of that kind (``None`` falls
    through); main-model requests otherwise take ``main`` in order. An empty queue
    answers ``None``, which the server turns into a 500 that fails the test loudly.
    """

    def __init__(self, fake: Any) -> None:
        self.main: deque[Turn] = deque()
        self.faulty: dict[str, Callable[[dict[str, Any]], Turn | None]] = {}
        self.seen: dict[str, int] = defaultdict(int)
        self.faulted: dict[str, int] = defaultdict(int)
        self._lock = threading.Lock()
        fake.responder = self

    def __call__(self, body: dict[str, Any]) -> Turn | None:
        kind = kind_of(body)
        with self._lock:
            self.seen[kind] += 1
        build = self.faulty.get(kind)
        turn = build(body) if build is not None else None
        if turn is not None:
            with self._lock:
                self.faulted[kind] += 1
            return turn
        with self._lock:
            return self.main.popleft() if kind == "main" and self.main else None

    def check_total(self, fake: Any) -> None:
        """Every request the server received went through here: none was hidden or refused."""
        assert len(fake.requests) == sum(self.seen.values())
        assert fake.failures == []


# ----------------------------------------------------------------------------- checks


def snapshot(memdir: Path) -> dict[str, bytes]:
    """Every file of the memdir (but the lock file), byte for byte."""
    return {str(p.relative_to(memdir)): p.read_bytes() for p in sorted(memdir.rglob("*"))
            if p.is_file() and p.name != ".lock"}


def assert_consistent(messages: list[dict[str, Any]]) -> None:
    """What the API accepts: user first, content everywhere, every tool_use answered next."""
    assert not messages or messages[0]["role"] == "user"
    for i, message in enumerate(messages):
        assert message["role"] in ("user", "assistant"), message
        assert message["content"], f"message {i} ({message['role']}) has no content"
        if message["role"] != "assistant":
            continue
        uses = {b["id"] for b in message["content"] if b.get("type") == "tool_use"}
        if not uses:
            continue
        assert i + 1 < len(messages), f"message {i} ends the conversation with a tool_use"
        answer = messages[i + 1]
        answered = {b["tool_use_id"] for b in answer["content"] if b.get("type") == "tool_result"}
        assert answer["role"] == "user" and answered == uses, f"dangling tool_use after {i}"


def assert_clear(message: str | None, case: Case) -> None:
    """A message for a person: says what failed in words, names no Python class."""
    assert message and message.strip(), "no message at all"
    assert "Traceback" not in message
    found = CLASS_NAME.search(message)
    assert found is None, f"the message names the exception class {found.group()}: {message!r}"
    assert any(w in message.lower() for w in case.words), (
        f"the message does not name the cause ({' or '.join(case.words)}): {message!r}")


def make_session(project: Path, case: Case, max_retries: int = 1, **config: Any) -> Session:
    """A session on a memdir that holds one memory (so there is something to protect)."""
    session = shared_session(project, model=MODEL, max_retries=max_retries, timeout=case.timeout,
                             **config)
    session.store.create("revenue-in-cents", "sales.revenue is stored in cents", "project",
                         MEMORY_BODY)
    return session


class Notices:
    """Collects the background notices a turn's front end would show."""

    def __init__(self) -> None:
        self.items: list[tuple[str, dict[str, Any]]] = []

    def __call__(self, text: str, payload: dict[str, Any]) -> None:
        self.items.append((text, payload))

    def events(self) -> TurnEvents:
        return TurnEvents(on_notice=self)


def turn_ok(session: Session, prompt: str, notices: Notices | None = None) -> TurnResult:
    result = run_turn(session, prompt, events=(notices or Notices()).events())
    assert result.ok, result.error
    return result


def answer(text: str, **options: Any) -> Turn:
    return Turn(text=text, **options)


# ----------------------------------------------------------------------------- main loop

#: The good reply of a faulted main call: several text chunks, so stream faults land mid-answer.
MAIN_REPLY = Turn(text=["The revenue ", "column is ", "stored in ", "cents, so ", "divide by 100."])


@pytest.mark.parametrize(("at_round", "max_retries"), [(0, 0), (0, 1), (1, 1)],
                         ids=["first-call-no-retry", "first-call", "after-tool-round"])
@pytest.mark.parametrize("case", cases())
def test_main_loop(case: Case, at_round: int, max_retries: int, project: Path, fake_api: Any):
    """Every attempt of one main call faults: an error turn, then the session goes on."""
    session = make_session(project, case, max_retries)
    router = Router(fake_api)
    router.main.append(answer("Hello."))
    turn_ok(session, "Hello there, agent.")
    before = list(session.messages)
    memdir_before = snapshot(session.memdir)
    prompt = "What unit is the revenue column in?"

    armed = [True]
    router.faulty["main"] = lambda body: (case.reply(MAIN_REPLY)
                                          if armed[0] and round_of(body) == at_round else None)
    if at_round == 1:
        router.main.append(Turn(tool_calls=[ToolCall("Glob", {"pattern": "*.py"})]))
    result = run_turn(session, prompt)
    armed[0] = False

    assert router.faulted["main"] == case.attempts(streaming=True, max_retries=max_retries)
    assert len(fake_api.requests) == 1 + at_round + router.faulted["main"]
    assert_consistent(session.messages)
    assert snapshot(session.memdir) == memdir_before
    if case.slow_only or case.empty:
        assert result.ok, result.error
        if case.slow_only:
            assert result.answer.endswith("divide by 100.")
    else:
        assert result.status == "error" and result.record["status"] == "error"
        assert_clear(result.error, case)
        assert {"kind": "error", "text": result.error} in result.record["events"]
        if at_round == 0:  # nothing came back: the turn is taken out, the cell can rerun
            assert len(session.messages) == len(before)
            assert all(a is b for a, b in zip(session.messages, before, strict=True))
        else:  # the tool round stays, answered; the failed call left nothing behind
            assert session.messages[: len(before)] == before
            assert [m["role"] for m in session.messages[len(before):]] == [
                "user", "assistant", "user"]

    router.main.append(answer("Recovered."))
    follow = turn_ok(session, "Are you still there?")
    assert follow.answer == "Recovered."
    assert_consistent(session.messages)
    router.check_total(fake_api)


@pytest.mark.parametrize("case", cases(only=RETRIABLE))
def test_main_loop_transient_fault_is_retried(case: Case, project: Path, fake_api: Any):
    """A fault that clears after one attempt costs one retry and nothing else."""
    session = make_session(project, case, max_retries=1)
    assert case.fault is not None
    fake_api.fail_next(case.fault)
    fake_api.push(answer("Cents."))
    result = turn_ok(session, "What unit is the revenue column in?")
    assert result.answer == "Cents."
    first, second = fake_api.requests
    assert second.headers.get("x-stainless-retry-count") == "1"
    assert first.body == second.body
    assert_consistent(session.messages)
    assert fake_api.failures == []


# ----------------------------------------------------------------------------- prefetch


@pytest.mark.parametrize("case", cases())
def test_prefetch_selector(case: Case, project: Path, fake_api: Any,
                           monkeypatch: pytest.MonkeyPatch):
    """The selector call faults: the answer still comes, without memories, and says why."""
    # The selector passes its own 30 s timeout; shorten it for the ``timeout`` cell.
    monkeypatch.setattr("jupyter_memory.recall.model_selector.SELECTOR_TIMEOUT_SECONDS",
                        case.timeout)
    session = make_session(project, case, recall_mode="prefetch", wait_for_prefetch=True)
    file = session.store.list()[0].file
    memdir_before = snapshot(session.memdir)
    router = Router(fake_api)
    pick = Turn(tool_calls=[ToolCall(SELECTOR_TOOL, {"selected_memories": [file]})])
    router.faulty["selector"] = lambda _body: case.reply(pick)
    router.main.extend([answer("It is in euros, I think."), answer("Still here.")])

    result = turn_ok(session, "What unit is the revenue column in?")
    assert result.answer == "It is in euros, I think."
    assert router.seen["selector"] == case.attempts(streaming=False, max_retries=1)
    selector = readable(result.record)["recall"]["selector"]
    decision = {d["file"]: d for d in readable(result.record)["recall"]["decisions"]}[file]
    attached = [m["_meta"]["file"] for m in recall.recall_messages(session.messages)]
    if case.slow_only:
        assert selector["status"] == "done" and decision["decision"] == "injected"
        assert attached == [file]
    else:
        assert selector["status"] == "failed", selector
        assert selector["reason"].startswith("selector failed: ")
        assert decision["decision"] == "skipped" and "selector failed" in decision["reason"]
        assert attached == []
        assert "MARKER-CENTS" not in str(session.messages)
    assert_consistent(session.messages)
    assert snapshot(session.memdir) == memdir_before

    turn_ok(session, "And the cost column, in what unit?")  # the next prefetch fails alike
    assert router.seen["selector"] <= 2 * case.attempts(streaming=False, max_retries=1)
    router.check_total(fake_api)


# ----------------------------------------------------------------------------- extraction


@pytest.fixture
def extracting(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("JUPYTER_MEMORY_EXTRACTION", "1")  # the root conftest switches it off


def _extraction_hook(session: Session) -> ExtractionHook:
    hook = hook_for(session)
    assert hook is not None and hook.enabled
    return hook


@pytest.mark.usefixtures("extracting")
@pytest.mark.parametrize("case", cases())
def test_extraction(case: Case, project: Path, fake_api: Any):
    """Every extraction call faults: the memdir stays, failures count, the breaker opens."""
    session = make_session(project, case)
    hook = _extraction_hook(session)
    memdir_before = snapshot(session.memdir)
    router = Router(fake_api)
    router.faulty["extraction"] = lambda _body: case.reply(answer("Nothing to save."))
    router.main.extend(answer(f"Answer {i}.") for i in range(4))
    per_run = case.attempts(streaming=True, max_retries=1)
    fails = not (case.slow_only or case.empty)

    notices = [Notices() for _ in range(4)]
    for i in range(3):
        result = turn_ok(session, f"Question {i} about the revenue column.", notices[i])
        assert result.answer == f"Answer {i}."  # the main turn never notices
        assert result.record["background"] == ["extraction"]
        assert hook.wait(WAIT), "the extraction run hung"
        assert router.seen["extraction"] == (i + 1) * per_run  # bounded by max_retries
        assert snapshot(session.memdir) == memdir_before
        run = hook.runs[-1]
        if fails:
            assert run.status == "failed" and run.error
            assert hook.failures == i + 1 and hook.counts["failed"] == i + 1
            assert hook.cursor is None  # the failed turns are looked at again next time
        else:
            assert run.status == "nothing" and hook.failures == 0
    assert_consistent(session.messages)

    if fails:  # three failures in a row: one notice, one line, and no fourth run
        assert hook.broken
        assert [len(n.items) for n in notices[:3]] == [0, 0, 1]
        text, payload = notices[2].items[0]
        assert "\n" not in text and payload["breaker"] is True
        assert payload["error"] == hook.runs[-1].error and payload["error"].rstrip(".") in text
        result = turn_ok(session, "Question 3 about the revenue column.", notices[3])
        assert hook.wait(WAIT)
        assert result.record["background"] == [] and notices[3].items == []
        assert router.seen["extraction"] == 3 * per_run
    assert router.seen["main"] == (4 if fails else 3)
    assert snapshot(session.memdir) == memdir_before
    router.check_total(fake_api)




@pytest.mark.usefixtures("extracting")
@pytest.mark.parametrize("case", cases(
    only=[c for c in FAILING if not c.empty]))
def test_extraction_failure_message_is_clear(case: Case, project: Path, fake_api: Any):
    session = make_session(project, case)
    hook = _extraction_hook(session)
    router = Router(fake_api)
    router.faulty["extraction"] = lambda _body: case.reply(answer("Nothing to save."))
    router.main.append(answer("Cents."))
    turn_ok(session, "What unit is the revenue column in?")
    assert hook.wait(WAIT)
    assert hook.runs[-1].status == "failed"
    router.check_total(fake_api)
    assert_clear(hook.runs[-1].error, case)




@pytest.mark.usefixtures("extracting")
@pytest.mark.parametrize("case", cases(
    only=[BY_ID["500"], BY_ID["drop-mid-stream"]]))
def test_extraction_fault_after_a_write(case: Case, project: Path, fake_api: Any):
    """The run's first call writes a memory, its second call faults.

    Consistent means: either the write is taken back, or the run owns it (it is listed,
    announced and can be undone). A memory nobody reports and nothing can undo is not.
    """
    session = make_session(project, case)
    hook = _extraction_hook(session)
    memdir_before = snapshot(session.memdir)
    path = session.memdir / "feedback_no_full_frames.md"
    write = Turn(tool_calls=[ToolCall("Write", {"file_path": str(path), "content": (
        "---\nname: no-full-frames\ndescription: never print a whole frame\ntype: feedback\n"
        "---\nShow .head() only.\n")})])
    router = Router(fake_api)
    router.faulty["extraction"] = lambda body: (
        write if round_of(body) == 0 else case.reply(answer("Saved it.")))
    router.main.append(answer("Understood."))
    notices = Notices()
    turn_ok(session, "Never print a whole data frame for me.", notices)
    assert hook.wait(WAIT)
    assert router.seen["extraction"] == 1 + case.attempts(streaming=True, max_retries=1)
    run = hook.runs[-1]
    if snapshot(session.memdir) != memdir_before:
        assert run.files == [path.name], "a failed run left a memory it does not own"
        assert any("%memory undo" in text for text, _ in notices.items)
        hook.undo(run.id)
        assert snapshot(session.memdir) == memdir_before
    router.check_total(fake_api)


# ----------------------------------------------------------------------------- compaction




def _history(session: Session, router: Router) -> list[dict[str, Any]]:
    router.main.append(answer("The revenue column is in cents."))
    turn_ok(session, "What unit is the revenue column in?")
    return list(session.messages)


@pytest.mark.parametrize("case", cases())
def test_manual_compaction(case: Case, project: Path, fake_api: Any):
    """The summary request faults: a CompactionError, and the conversation as it was."""
    session = make_session(project, case)
    router = Router(fake_api)
    before = _history(session, router)
    frozen = copy.deepcopy(before)
    memdir_before = snapshot(session.memdir)
    router.faulty["summary"] = lambda _body: case.reply(answer(SUMMARY))

    if case.slow_only:
        result = compact(session)
        assert result.method == "model" and "check the revenue unit" in result.summary
    else:
        with pytest.raises(CompactionError) as info:
            compact(session)
        assert str(info.value).strip()
        assert all(a is b for a, b in zip(session.messages, before, strict=True))
        assert len(session.messages) == len(before) and session.messages == frozen
        state = state_of(session)
        assert state.undo == [] and state.results == []
    assert router.seen["summary"] == case.attempts(streaming=True, max_retries=1)
    assert snapshot(session.memdir) == memdir_before
    assert_consistent(session.messages)

    router.faulty.clear()
    router.main.append(answer("Still here."))
    turn_ok(session, "Are you still there?")
    router.check_total(fake_api)


@pytest.mark.parametrize("case", cases(
    only=FAILING))
def test_manual_compaction_failure_message_is_clear(case: Case, project: Path, fake_api: Any):
    session = make_session(project, case)
    router = Router(fake_api)
    _history(session, router)
    router.faulty["summary"] = lambda _body: case.reply(answer(SUMMARY))
    with pytest.raises(CompactionError) as info:
        compact(session)
    router.check_total(fake_api)
    message = str(info.value)
    assert message.startswith("The summary request failed") or "summary" in message
    assert_clear(message, case)


def _big(text: str) -> Turn:
    """A main reply whose prompt cost 168,000 tokens: past autocompact, under blocking."""
    return answer(text, usage={"input_tokens": 168_000, "cache_read_input_tokens": 0,
                               "cache_creation_input_tokens": 0, "output_tokens": 10})


@pytest.mark.parametrize("case", cases())
def test_automatic_compaction(case: Case, project: Path, fake_api: Any):
    """Past autocompact, the summary faults: the turn goes on; three failures open the breaker."""
    session = make_session(project, case)
    router = Router(fake_api)
    router.main.extend(_big(f"Answer {i}.") for i in range(5))
    turn_ok(session, "Question 0.")
    memdir_before = snapshot(session.memdir)
    router.faulty["summary"] = lambda _body: case.reply(answer(SUMMARY))
    per_call = case.attempts(streaming=True, max_retries=1)
    state = state_of(session)

    if case.slow_only:
        result = turn_ok(session, "Question 1.")
        assert result.record["compactions"][0]["trigger"] == "auto"
        assert router.seen["summary"] == per_call
        assert_consistent(session.messages)
        router.check_total(fake_api)
        return

    for i in range(1, 4):
        before = list(session.messages)
        result = turn_ok(session, f"Question {i}.")  # the answer still comes
        assert result.answer == f"Answer {i}."
        assert all(a is b for a, b in zip(session.messages, before, strict=False))
        assert len(session.messages) == len(before) + 2  # the history was not replaced
        notes = [e["text"] for e in result.record["events"] if e["kind"] == "warning"]
        assert any(t.startswith("Automatic compaction failed: ") for t in notes), notes
        assert state.consecutive_failures == i and router.seen["summary"] == i * per_call
        assert "compactions" not in result.record
    assert state.breaker_open and any("off for the rest" in t for t in notes)

    result = turn_ok(session, "Question 4.")  # the breaker is open: no fourth attempt
    assert router.seen["summary"] == 3 * per_call
    assert any("off for the rest" in e["text"] for e in result.record["events"])
    assert_consistent(session.messages)
    assert snapshot(session.memdir) == memdir_before
    router.check_total(fake_api)
