"""The agent loop: one user turn, streamed, with tool rounds, over the Messages API.

``run_turn`` appends the person's message, then calls the model until it ends its turn
or the round limit is hit, running tools in between. Whatever happens (an API error, a
Ctrl-C in the middle of a stream or a tool, a bug of ours), the conversation is left
consistent: no ``tool_use`` without its ``tool_result``, and a turn that never reached the
model is rolled back so the cell can simply be run again. A turn that fails says how, in
the error classes of ``errors.py`` (``TurnResult.failure``): a model or transport error, a
refusal meant for the person, or an internal error whose traceback went to the log.

A call of the Agent tool runs a turn of a delegated agent inside this one (``_delegate``,
``agent/delegation.py``): a child session, the task as its first message, its final
message as the tool result, and what it did in this turn's record (``delegations``).

The session's background work (prefetch, extraction, session notes) runs in threads live;
when it is synchronous (record, replay) the loop runs it at three points, so two runs do
the same thing at the same moment: right after the prefetch starts, after the call hooks
of each model call, and after the turn's ``after_turn`` hooks.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from jupyter_memory.agent.delegation import DelegatedRun, DelegationRequest, child_permission
from jupyter_memory.agent.delegation import agent_id as delegated_agent_id
from jupyter_memory.agent.failures import as_failure, is_model_failure, model_failure
from jupyter_memory.agent.hooks import collect, dispatch
from jupyter_memory.agent.session import Session
from jupyter_memory.context import prompts
from jupyter_memory.context.assemble import digest
from jupyter_memory.context.call_log import LoggedClient, calling
from jupyter_memory.context.request_parts import RECORD_VERSION, PartBatch, stored_parts
from jupyter_memory.context.sdk import ModelClient
from jupyter_memory.context.tokens import Usage
from jupyter_memory.errors import JupyterMemoryError
from jupyter_memory.memdir.clock import now_iso

if TYPE_CHECKING:
    from anthropic.types import Message

    from jupyter_memory.agent.tools.base import ToolContext, ToolResult
    from jupyter_memory.recall.prefetch import Prefetch

log = logging.getLogger(__name__)

TURN_MIME = "application/vnd.jupyter-memory.turn+json"
#: Longest wait for prefetched memories before the first call (``wait_for_prefetch``).
PREFETCH_WAIT_SECONDS = 60.0


def _noop(*_: Any) -> None:
    return None


@dataclass
class TurnEvents:
    """Callbacks through which a front end shows a turn as it happens."""

    on_text: Callable[[str], None] = _noop
    on_tool_start: Callable[[dict[str, Any]], None] = _noop
    on_tool_end: Callable[[dict[str, Any], Any], None] = _noop
    on_status: Callable[[str], None] = _noop
    #: Called, possibly from a background thread after the turn ended, with a notice
    #: about work the turn started (such as memories the extraction agent saved).
    on_notice: Callable[[str, dict[str, Any]], None] = _noop


@dataclass
class TurnResult:
    """How a turn ended, the answer, and the record that goes into the cell output.

    A failed turn (``status == "error"``) carries its ``failure``: the error to raise in
    the cell, in its class (``errors.py``); ``error`` is its one line.
    """

    status: str  # ok | max_tokens | max_turns | interrupted | error
    answer: str
    record: dict[str, Any]
    error: str | None = None
    usage: Usage = field(default_factory=Usage)
    failure: JupyterMemoryError | None = None

    @property
    def ok(self) -> bool:
        return self.status == "ok"




def _block_to_dict(block: Any) -> dict[str, Any]:
    """A response content block in the form the API accepts back as input."""
    kind = getattr(block, "type", None)
    if kind == "text":
        return {"type": "text", "text": block.text}
    if kind == "tool_use":
        return {"type": "tool_use", "id": block.id, "name": block.name, "input": block.input}
    if kind == "thinking":
        return {"type": "thinking", "thinking": block.thinking, "signature": block.signature}
    if kind == "redacted_thinking":
        return {"type": "redacted_thinking", "data": block.data}
    return block.model_dump(exclude_none=True) if hasattr(block, "model_dump") else dict(block)


def _text_of(content: list[dict[str, Any]]) -> str:
    return "".join(b.get("text", "") for b in content if b.get("type") == "text")


class TurnState:
    """The mutable state of one turn while it runs; what turn hooks see.

    Messages of the turn go through :meth:`add`, so the turn knows exactly which
    messages it owns even if a hook (compaction) replaces earlier history meanwhile.
    """

    def __init__(self, session: Session, prompt: str, events: TurnEvents,
                 client: ModelClient) -> None:
        self.session = session
        self.events = events
        self.client = client
        self.prompt = prompt
        self.added: list[dict[str, Any]] = []
        self.tool_calls: list[dict[str, Any]] = []
        self.requests: list[dict[str, Any]] = []
        self.usage = Usage()
        self.events_log: list[dict[str, str]] = []
        self.started = now_iso()
        self.partial_text = ""
        self.got_response = False
        self.activated: list[str] = []
        self.memories_before: set[str] = set()
        self.memories_written: list[str] = []
        self.prefetch: Prefetch | None = None
        self.extra: dict[str, Any] = {}
        self.delegations: list[DelegatedRun] = []
        #: The id of the tool call running now (a delegation notes which call it answers).
        self.tool_use_id: str | None = None

    def add(self, message: dict[str, Any]) -> dict[str, Any]:
        """Append ``message`` to the conversation as part of this turn."""
        self.session.messages.append(message)
        self.added.append(message)
        return message

    def note(self, kind: str, text: str) -> None:
        """Record an event (warning, compaction, ...) in the turn and show it."""
        self.events_log.append({"kind": kind, "text": text})
        self.events.on_status(text)

    def rollback(self) -> None:
        """Take this turn's messages back out of the conversation."""
        owned = {id(m) for m in self.added}
        self.session.messages[:] = [m for m in self.session.messages if id(m) not in owned]
        self.added.clear()

    @property
    def new_messages(self) -> list[dict[str, Any]]:
        return list(self.added)


def _hooks(session: Session, name: str, *args: Any) -> None:
    dispatch(session.hooks, name, *args)


def user_message(prompt: str, preamble: list[str] | None = None) -> dict[str, Any]:
    """The person's turn: optional harness context (cells they ran) before their words."""
    blocks = [{"type": "text", "text": prompts.system_reminder(p)} for p in preamble or [] if p]
    blocks.append({"type": "text", "text": prompt})
    return {"role": "user", "content": blocks}


def run_turn(
    session: Session,
    prompt: str,
    *,
    client: ModelClient | None = None,
    events: TurnEvents | None = None,
    preamble: list[str] | None = None,
) -> TurnResult:
    """Run one turn of the agent for ``prompt`` and return its answer and record."""
    return _run_turn(session, prompt, client=client, events=events, preamble=preamble)[1]


def _run_turn(
    session: Session,
    prompt: str,
    *,
    client: ModelClient | None = None,
    events: TurnEvents | None = None,
    preamble: list[str] | None = None,
) -> tuple[TurnState, TurnResult]:
    """:func:`run_turn`, also handing back the turn's state (what a delegation reads)."""
    events = events or TurnEvents()
    if not prompt.strip():
        raise JupyterMemoryError("The prompt is empty: write what you want the agent to do.")
    if client is None:
        client = session.client()
    turn = TurnState(session, prompt, events, client)
    ctx = session.tool_context(
        on_activate=lambda files: turn.activated.extend(
            session.instructions.render_block(f) for f in files),
        delegate=(lambda data: _delegate(turn, data)) if session.offered.agents else None)
    turn.memories_before = set(ctx.written_memdir_files)
    turn.add(user_message(prompt, preamble))
    status, failure = "max_turns", None
    runner = session.runner
    if session.parent is None:
        session.calls.turn_started()
    try:
        _hooks(session, "before_turn", turn)
        turn.prefetch = session.start_prefetch(prompt, client)
        if turn.prefetch is not None:
            turn.prefetch.when_done(lambda prefetch: _notice_recall_failure(turn, prefetch))
        runner.settle()  # synchronous: the prefetch is ready before the first call
        for round_index in range(session.config.max_turns):
            _consume_prefetch(turn, first_call=round_index == 0)
            _hooks(session, "before_call", turn, round_index)
            runner.settle()  # synchronous: what the call hooks started (session notes)
            message = _call_model(turn, client, round_index)
            content = [_block_to_dict(b) for b in message.content] or [
                {"type": "text", "text": EMPTY_REPLY}]
            turn.add({"role": "assistant", "content": content})
            turn.partial_text = ""
            tool_uses = [b for b in content if b["type"] == "tool_use"]
            if message.stop_reason != "tool_use" or not tool_uses:
                status = "ok" if message.stop_reason != "max_tokens" else "max_tokens"
                break
            _run_tools(turn, tool_uses, ctx)
        else:
            events.on_status(f"Stopped after {session.config.max_turns} model calls (max_turns).")
    except KeyboardInterrupt:
        status = "interrupted"
        _close_after_interrupt(turn)
    except Exception as exc:  # keep the kernel alive; say what kind of failure it was
        status, failure = "error", as_failure(exc, "while running the turn")
        _close_after_error(turn)
    ctx.delegate = None  # the Agent tool hands work over only during a turn
    error = str(failure) if failure is not None else (
        INTERRUPTED if status == "interrupted" else None)
    conversation = session.conversation
    conversation.turn_count += 1
    if session.parent is None:
        session.calls.turn_ended()
    turn.memories_written = sorted(set(ctx.written_memdir_files) - turn.memories_before)
    conversation.total_usage = conversation.total_usage + turn.usage
    answer = "\n\n".join(
        t for m in turn.new_messages if m["role"] == "assistant" and (t := _text_of(m["content"]))
    )
    if error:
        turn.events_log.append({"kind": "error" if status == "error" else "warning", "text": error})
    record = build_record(turn, answer, status, collect(session.hooks, "record_fields", turn))
    conversation.last_record = record
    result = TurnResult(status=status, answer=answer, record=record, error=error,
                        usage=turn.usage, failure=failure)
    _hooks(session, "after_turn", turn, result)
    runner.settle()  # synchronous: extraction and session notes, when the turn has ended
    log.debug("turn %d of session %s: %s after %d model call(s)", conversation.turn_count,
              session.session_id, status, len(turn.requests))
    return turn, result


INTERRUPTED = "Interrupted by the person; the conversation was kept consistent."


def _notice_recall_failure(turn: TurnState, prefetch: Any) -> None:
    """Tell the person, through the turn's notices, that the selector failed (once per
    session and kind of failure; the decisions in the record say it every time)."""
    notice = prefetch.failure_notice()
    if notice is not None:
        turn.events.on_notice(*notice)


def _consume_prefetch(turn: TurnState, *, first_call: bool) -> None:
    """Attach prefetched memories when they are ready (docs/reference.md#path-b-relevance-prefetch, its timing).

    The reference never waits: memories found while the first call is under way join
    the conversation only before the call after a tool round, so an answer that needs
    no tool misses them. ``wait_for_prefetch`` waits before the first call instead.
    """
    prefetch = turn.prefetch
    if prefetch is None:
        return
    if first_call:
        if not turn.session.config.wait_for_prefetch:
            return
        prefetch.wait(timeout=PREFETCH_WAIT_SECONDS)
    for message in prefetch.take_messages():
        turn.add(message)


def _call_model(turn: TurnState, client: ModelClient, round_index: int) -> Message:
    session = turn.session
    assembled = session.assemble()
    body = assembled.body
    entry = {"round": round_index, "digest": None, "breakpoints": None, "sent": now_iso(),
             "body": body}
    turn.requests.append(entry)
    try:
        with client.messages.stream(**body) as stream:
            for event in stream:
                if event.type == "text":
                    turn.partial_text += event.text
                    turn.events.on_text(event.text)
            message = stream.get_final_message()
    except Exception as exc:
        if is_model_failure(exc):
            raise model_failure(exc) from exc
        raise  # not the endpoint's doing: an internal error, reported as one
    finally:  # worked out once the request is on its way, not before it leaves
        entry.update(digest=digest(body), breakpoints=assembled.breakpoints)
    turn.got_response = True
    session.cost_ledger.charge(session.call_kind, message, str(body.get("model") or ""))
    usage = Usage.from_api(message.usage)
    turn.usage = turn.usage + usage
    session.conversation.last_usage = usage
    entry.update(usage=usage.to_json(), stop_reason=message.stop_reason, id=message.id)
    return message


def _run_tools(turn: TurnState, tool_uses: list[dict[str, Any]], ctx: ToolContext) -> None:
    session = turn.session
    results: list[dict[str, Any]] = []
    try:
        for use in tool_uses:
            turn.events.on_tool_start(use)
            turn.tool_use_id = use["id"]
            result = session.tools.run(use["name"], use.get("input") or {}, ctx)
            turn.events.on_tool_end(use, result)
            results.append({"type": "tool_result", "tool_use_id": use["id"],
                            "content": result.content, **({"is_error": True} if result.is_error else {})})
            turn.tool_calls.append({"id": use["id"], "name": use["name"], "input": use.get("input"),
                                    "result": result.content, "is_error": bool(result.is_error)})
    except KeyboardInterrupt:
        _append_results(turn, results, tool_uses)
        raise
    _append_results(turn, results, tool_uses)
    if turn.activated:
        extra = [{"type": "text", "text": prompts.system_reminder(t)} for t in turn.activated]
        turn.added[-1]["content"].extend(extra)
        turn.activated.clear()


def _delegate(turn: TurnState, data: Any) -> ToolResult:
    """Run the task of an Agent tool call with the agent it names, as a child session.

    The child starts from its own context (the task, the instruction files that apply,
    its own memory) and shares the endpoint, so record and replay cover its calls. Its
    questions to the person go through the main agent's permission policy, marked with
    its name. A stop pressed while it works stops the main turn too.
    """
    session = turn.session
    request = DelegationRequest.from_input(data)
    definition = next(a for a in session.offered.agents if a.name == request.agent)
    index = len(turn.delegations) + 1
    child = session.child(definition, delegated_id=delegated_agent_id(
        session.session_id, session.conversation.turn_count + 1, index))
    session.delegated[definition.name] = child
    parent_ctx = session.tool_context()
    child.tool_context(namespace=parent_ctx.namespace,
                       permission=child_permission(parent_ctx.permission, definition.name))
    run = DelegatedRun(definition.name, child.delegated_id or "", request.description,
                       request.prompt, child.config.model, tool_use_id=turn.tool_use_id,
                       memdir=None if child.memdir is None else str(child.memdir))
    turn.delegations.append(run)
    events = turn.events
    turn.events.on_status(f"Delegated to {definition.name}: {request.description}")
    # the same endpoint, but the calls are noted as the agent's, of kind "delegated"
    client = turn.client
    if isinstance(client, LoggedClient):
        client = child.calls.client(client.inner, definition.name)
    with calling(child.call_kind):
        done, result = _run_turn(child, request.prompt, client=client, events=TurnEvents(
            on_tool_start=lambda use: events.on_status(
                f"{definition.name} uses {use.get('name', '?')}"),
            on_notice=events.on_notice))
    run.status, run.error = result.status, result.error
    final = done.added[-1] if done.added else {}
    run.answer = _text_of(final.get("content") or []) if final.get("role") == "assistant" else ""
    run.tool_calls = done.tool_calls
    run.usage = done.usage.to_json()
    run.requests = done.requests
    run.memories_written = done.memories_written
    run.transcript = None if child.log is None else str(child.log.path)
    if result.status == "interrupted":
        raise KeyboardInterrupt
    return run.result()


#: Stands in for a reply with no content: the API refuses an empty assistant message later.
EMPTY_REPLY = "(The model returned an empty reply.)"

INTERRUPTED_TOOL = "The person interrupted the turn before this tool finished; it did not run."


def _append_results(turn: TurnState, results: list[dict[str, Any]], uses: list[dict[str, Any]]) -> None:
    """Append tool results, filling in any tool_use that got none (so none dangles)."""
    done = {r["tool_use_id"] for r in results}
    for use in uses:
        if use["id"] not in done:
            results.append({"type": "tool_result", "tool_use_id": use["id"],
                            "content": INTERRUPTED_TOOL, "is_error": True})
    if results:
        turn.add({"role": "user", "content": results})


def _close_after_interrupt(turn: TurnState) -> None:
    if not turn.got_response and not turn.partial_text:
        turn.rollback()
        return
    last = turn.added[-1] if turn.added else None
    if last and last["role"] == "assistant":
        uses = [b for b in last["content"] if b.get("type") == "tool_use"]
        if uses:
            _append_results(turn, [], uses)
        return
    text = turn.partial_text.strip()
    note = "[interrupted by the person]"
    turn.add({"role": "assistant", "content": [
        {"type": "text", "text": f"{text}\n\n{note}" if text else note}]})


def _close_after_error(turn: TurnState) -> None:
    """Roll back a turn that never got an answer into the conversation (the call failed,
    or the answer could not be read); otherwise close any dangling tool use."""
    if not turn.got_response or not any(m["role"] == "assistant" for m in turn.added):
        turn.rollback()
        return
    last = turn.added[-1]
    if last["role"] == "assistant":
        uses = [b for b in last["content"] if b.get("type") == "tool_use"]
        if uses:
            _append_results(turn, [], uses)


#: Most recall decisions a turn record carries: the reference's scan cap. The record goes
#: into the cell output and the notebook, so it must not grow with the memdir.
RECORD_DECISIONS = 200


def _recall_record(session: Session, turn: TurnState, parts: PartBatch) -> dict[str, Any]:
    """Why each memory was or was not in this turn (docs/reference.md#where-this-project-differs), and the selector call.

    Past :data:`RECORD_DECISIONS` memories, the most telling decisions are kept and the
    rest counted in ``omitted`` (``%memory why`` lists them all). The decisions are a part
    of their own: in index mode they are the same from turn to turn, kept once.
    """
    if session.memdir is None:
        return {"mode": session.recall_mode, "decisions": [], "selector": None}
    from jupyter_memory.recall.explain import record_decisions

    prefetch = turn.prefetch
    decisions, omitted = record_decisions(session, prefetch, RECORD_DECISIONS)
    out: dict[str, Any] = {
        "mode": session.recall_mode,
        "decisions": parts.value("decisions", decisions),
        "selector": prefetch.to_json() if prefetch is not None else None,
    }
    if omitted:
        out["omitted"] = omitted
    return out


def build_record(turn: TurnState, answer: str, status: str,
                 fields: dict[str, Any] | None = None) -> dict[str, Any]:
    """The turn record that the cell output carries (docs/architecture.md); ``fields`` are
    the hooks' sections of it (``record_fields``).

    Its requests, its long texts and its recall decisions are parts (request_parts.py),
    each stored once per session, in the record of the first turn that needs it. A failed
    turn's record carries what it needs but stores nothing for later records: its cell
    fails, and its output may never be saved, unless the front end that shows it adopts
    it (``PartStore.adopt``, ``CallLog.adopt``), as ``%%agent`` does.
    """
    session = turn.session
    context = session.context_totals()
    kept = status != "error"
    with session.parts.batch(keep=kept) as batch:
        # The delegated runs' requests share this record's parts: one store, one keep rule.
        theirs = [r for run in turn.delegations for r in run.requests]
        compacted = [{**{k: v for k, v in r.items() if k != "body"}, **batch.request(r["body"])}
                     for r in [*turn.requests, *theirs]]
        requests, rest = compacted[:len(turn.requests)], compacted[len(turn.requests):]
        delegations = []
        for run in turn.delegations:
            count = len(run.requests)
            delegations.append(run.to_json(rest[:count]))
            rest = rest[count:]
        sections = {"messages": batch.texts(turn.new_messages),
                    "tool_calls": batch.texts(turn.tool_calls)}
        recall = _recall_record(session, turn, batch)
        # the main agent's own rounds are the record's requests; every other call goes here
        # (a failed turn's record may never be saved: the next record carries them again)
        # (a delegated agent's own record is not saved: the main turn's record carries its calls)
        calls = [] if session.parent is not None else [
            c.to_json() for c in session.calls.uncarried(take=kept)
            if c.kind != "main" or c.agent is not None or not c.during_turn]
        batch.carry(calls)
    return {
        "version": RECORD_VERSION,
        "session_id": session.session_id,
        "turn": session.conversation.turn_count,
        "model": session.config.model,
        "memdir": str(session.memdir) if session.memdir is not None else None,
        "status": status,
        "started": turn.started,
        "ended": now_iso(),
        "prompt": turn.prompt,
        "answer": answer,
        **sections,
        "recall": recall,
        "context": context,
        "usage": turn.usage.to_json(),
        "requests": requests,
        **({"calls": calls} if calls else {}),
        **stored_parts(batch.new),
        "memories_written": [{"file": f, "by": "agent"} for f in turn.memories_written],
        "events": turn.events_log,
        "background": [],
        **({"delegations": delegations} if delegations else {}),
        **(fields or {}),
    }
