"""Request assembly: one pure function from session state to the exact request body.

``assemble`` is deterministic: the same ``RequestState`` always gives a byte-identical
body, and nothing in the prefix before the last cache breakpoint depends on the turn, so
consecutive turns read it from the prompt cache (docs/reference.md#prompt-caching). Reading the disk (instruction
files, the index) happens before, in ``context_pieces``; ``report`` turns an assembled
request into the per-category budget that ``%context`` shows.
"""

from __future__ import annotations

import functools
import json
import threading
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, fields, replace
from functools import cached_property
from typing import Any

from jupyter_memory.context import prompts
from jupyter_memory.context.json_copy import copy_json
from jupyter_memory.context.models import (
    Thresholds,
    model_info,
    thresholds,
    unknown_model_note,
)
from jupyter_memory.context.request_parts import JsonPiece, content_digest, json_piece
from jupyter_memory.context.tokens import (
    MESSAGE_OVERHEAD,
    Usage,
    content_text,
    estimate_tokens,
    estimate_tool,
)

#: The API accepts at most this many ``cache_control`` markers in one request.
MAX_BREAKPOINTS = 4
CACHE = {"type": "ephemeral"}
#: Lifetimes a request's breakpoints may ask for (``Agent.cache_ttl``); ``5m`` is the API's
#: default and sends no ``ttl``, so the request is byte for byte what it was without one.
CACHE_TTLS = ("5m", "1h")
#: Key of the private metadata a conversation message may carry; stripped before sending.
META_KEY = "_meta"


@dataclass(frozen=True)
class InstructionPart:
    """One instruction file as the model receives it (already headed with path and scope)."""

    path: str
    scope: str
    text: str


@dataclass(frozen=True)
class IndexPart:
    """``MEMORY.md`` as loaded for the model, with the limits it used."""

    text: str
    lines: int
    chars: int
    truncated_by: str | None = None
    warning: str | None = None


@dataclass(frozen=True)
class RequestState:
    """Everything a request is made of. Assembly reads nothing else."""

    model: str
    max_tokens: int
    environment: prompts.Environment
    tools: Sequence[Mapping[str, Any]] = ()
    messages: Sequence[Mapping[str, Any]] = ()
    instructions: Sequence[InstructionPart] = ()
    memdir: str | None = None
    recall_mode: str = "index"
    index: IndexPart | None = None
    today: str = ""
    maintain_index: bool = True
    cache: bool = True
    #: The team folder and its index (docs/reference.md#team-mode); None when the project has no team folder.
    team_dir: str | None = None
    team_index: IndexPart | None = None
    #: A defined agent's own prompt (``.claude/agents/NAME.md``): it replaces the identity,
    #: and the agent's memory index moves into the system prompt (docs/reference.md#agent-memory).
    agent_prompt: str | None = None
    agent_name: str | None = None
    #: The agent's ``memory:`` scope (user, project, local), which its memory rules name.
    agent_memory_scope: str | None = None
    #: The lifetime of the entries the breakpoints write (:data:`CACHE_TTLS`).
    cache_ttl: str = "5m"
    #: A side call's own messages after the conversation (the extraction fork's instruction
    #: and its rounds, a summary request): sent after it and never marked, so the moving
    #: breakpoint stays on the conversation's last block. What the side call writes there is
    #: then the prefix the next main call reads, and its own words are written nowhere.
    suffix: Sequence[Mapping[str, Any]] = ()


@dataclass(frozen=True)
class Part:
    """A piece of the request, for the budget: which category, what text, what it costs."""

    category: str
    label: str
    text: str
    tokens: int
    meta: Mapping[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class AssembledRequest:
    """A request body and, on demand, the parts it is made of with their token estimates.

    The parts are for ``%context`` and the compaction budget; a model call needs only the
    body, so they are worked out the first time they are asked for (from a snapshot of
    the conversation taken at assembly).
    """

    body: dict[str, Any]
    build_parts: Callable[[], tuple[Part, ...]] = field(repr=False, compare=False)
    #: The ``cache_control`` markers of ``body`` as assembled, counted while it was built
    #: (None: count them in the body).
    marks: int | None = field(default=None, repr=False, compare=False)

    @cached_property
    def parts(self) -> tuple[Part, ...]:
        return self.build_parts()

    @property
    def breakpoints(self) -> int:
        """How many ``cache_control`` markers the body carries (as assembled: a body
        changed since is counted again with :func:`count_breakpoints`)."""
        return count_breakpoints(self.body) if self.marks is None else self.marks

    def to_json(self) -> str:
        """The body exactly as serialised for the wire (stable key order)."""
        return json.dumps(self.body, ensure_ascii=False, indent=None, separators=(",", ":"))

    def to_json_pretty(self) -> str:
        return json.dumps(self.body, ensure_ascii=False, indent=2)


def context_message_text(state: RequestState) -> str:
    """The body of ``messages[0]``: instructions, the index (index mode) and the date."""
    sections = [prompts.CONTEXT_PREAMBLE]
    sections.extend(part.text for part in state.instructions)
    if _index_in_messages(state):
        assert state.memdir is not None and state.index is not None
        sections.append(prompts.index_block(state.memdir, state.index.text, state.index.warning))
    if _team_index_shown(state):
        assert state.team_index is not None and state.team_dir is not None
        sections.append(prompts.team_index_block(
            state.team_dir, state.team_index.text, state.team_index.warning))
    if state.today:
        sections.append(prompts.date_block(state.today))
    return prompts.system_reminder("\n\n".join(sections))


def _index_in_messages(state: RequestState) -> bool:
    return (state.memdir is not None and state.recall_mode == "index"
            and state.index is not None and state.agent_prompt is None)


def _agent_index_text(state: RequestState) -> str | None:
    """A defined agent's memory index, which sits in its system prompt."""
    if state.agent_prompt is None or state.memdir is None or state.index is None:
        return None
    return prompts.agent_index_block(state.memdir, state.index.text, state.index.warning)


def _tool_names(state: RequestState) -> list[str]:
    return [str(tool.get("name")) for tool in state.tools]


def _session_text(state: RequestState) -> str:
    if state.agent_prompt is not None:
        return prompts.agent_session_prompt(
            state.environment, memdir=state.memdir, name=state.agent_name or "agent",
            scope=state.agent_memory_scope, tools=_tool_names(state))
    return prompts.session_system_prompt(
        state.environment,
        memdir=state.memdir,
        mode=state.recall_mode,
        maintain_index=state.maintain_index,
        team_dir=state.team_dir,
    )


def _team_index_shown(state: RequestState) -> bool:
    return (state.memdir is not None and state.recall_mode == "index"
            and state.team_dir is not None and state.team_index is not None)


def _system_blocks(state: RequestState) -> list[dict[str, Any]]:
    identity = (prompts.static_system_prompt() if state.agent_prompt is None
                else prompts.agent_system_prompt(state.agent_name or "agent", state.agent_prompt,
                                                 _tool_names(state)))
    static: dict[str, Any] = {"type": "text", "text": identity}
    agent_index = _agent_index_text(state)
    text = _session_text(state)
    session: dict[str, Any] = {"type": "text", "text": text if agent_index is None else f"{text}\n\n{agent_index}"}
    if state.cache:
        static["cache_control"] = cache_mark(state.cache_ttl)
        session["cache_control"] = cache_mark(state.cache_ttl)
    return [static, session]


def cache_mark(ttl: str = "5m") -> dict[str, Any]:
    """A ``cache_control`` breakpoint writing entries that live ``ttl`` (5m or 1h)."""
    if ttl not in CACHE_TTLS:
        raise ValueError(f"cache_ttl {ttl!r} is not one of {', '.join(CACHE_TTLS)}")
    return dict(CACHE) if ttl == "5m" else {**CACHE, "ttl": ttl}


def _as_blocks(content: Any) -> list[dict[str, Any]]:
    if isinstance(content, str):
        return [{"type": "text", "text": content}]
    return [dict(b) for b in content]


def wire_messages(messages: Sequence[Mapping[str, Any]], *,
                  copied: bool = True) -> list[dict[str, Any]]:
    """Conversation messages in wire form: metadata stripped, same-role runs merged.

    Merging keeps roles alternating (a meta message before the person's prompt, or a
    recalled memory after a tool result, joins the user message next to it). Only the
    tail can change when messages are appended, so earlier wire messages stay stable.
    With ``copied=False`` the messages, their block lists and their blocks are new, but
    what a block holds (a tool's input, a result's blocks) is the conversation's own:
    read it, never change it.
    """
    return _wire(messages, copied)[0]


def _wire(messages: Sequence[Mapping[str, Any]], copied: bool) -> tuple[list[dict[str, Any]], int]:
    """:func:`wire_messages`, and the ``cache_control`` markers left inside its blocks (in
    what they hold: a block's own marker is dropped)."""
    out: list[dict[str, Any]] = []
    nested = 0
    for message in messages:
        role = message["role"]
        content = message.get("content", [])
        blocks = _as_blocks(copy_json(content) if copied else content)
        for block in blocks:
            block.pop("cache_control", None)
            for value in block.values():
                if type(value) is not str:
                    nested += count_breakpoints(value)
        if out and out[-1]["role"] == role:
            out[-1]["content"].extend(blocks)
        else:
            out.append({"role": role, "content": blocks})
    return out, nested


def _mark_last_block(messages: list[dict[str, Any]], mark: dict[str, Any]) -> int:
    """Put the moving breakpoint on the last block that can carry one; 1 when that adds
    a marker (:func:`wire_messages` dropped the blocks' own; the context block has one)."""
    for message in reversed(messages):
        for block in reversed(message["content"]):
            if block.get("type") in ("thinking", "redacted_thinking"):
                continue
            if block.get("type") == "text" and not block.get("text"):
                continue
            had = "cache_control" in block  # the context block, already marked
            block["cache_control"] = dict(mark)
            return 0 if had else 1
    return 0


def _append(messages: list[dict[str, Any]], more: list[dict[str, Any]]) -> None:
    """Add wire messages after ``messages``, merging a first one of the same role."""
    for message in more:
        if messages and messages[-1]["role"] == message["role"]:
            messages[-1]["content"].extend(message["content"])
        else:
            messages.append(message)


def assemble(state: RequestState, *, copied: bool = True) -> AssembledRequest:
    """Build the exact request body for ``state``, and the parts it is made of.

    ``copied=False`` is for a body only read (the budget ``%context`` reports): the same
    body, but it shares what the conversation's blocks hold (:func:`wire_messages`), so
    it is not copied whole; it must never be sent or changed.
    """
    system = _system_blocks(state)
    tools = [dict(t) for t in state.tools]
    context_block: dict[str, Any] = {"type": "text", "text": context_message_text(state)}
    mark = cache_mark(state.cache_ttl) if state.cache else None
    if mark is not None:
        context_block["cache_control"] = dict(mark)
    # The context block opens the first user message (merged into it, as wire_messages
    # would): the conversation is copied once, not again to put the block in front.
    messages, marks = _wire(state.messages, copied)
    if messages and messages[0]["role"] == "user":
        messages[0]["content"].insert(0, context_block)
    else:
        messages.insert(0, {"role": "user", "content": [context_block]})
    if mark is not None and (len(messages) > 1 or len(messages[0]["content"]) > 1):
        marks += _mark_last_block(messages, mark)
    if state.suffix:
        more, nested = _wire(state.suffix, copied)
        _append(messages, more)
        marks += nested
    body: dict[str, Any] = {
        "model": state.model,
        "max_tokens": state.max_tokens,
        "system": system,
        "messages": messages,
    }
    if tools:
        body["tools"] = tools
    marks += count_breakpoints(system) + count_breakpoints(tools) + ("cache_control" in context_block)
    snapshot = replace(state, messages=list(state.messages), suffix=list(state.suffix))
    return AssembledRequest(body, lambda: tuple(_parts(snapshot, system, tools)), marks)


def _parts(
    state: RequestState, system: list[dict[str, Any]], tools: list[dict[str, Any]]
) -> list[Part]:
    parts = _fixed_parts(state, system, tools)
    for message in [*state.messages, *state.suffix]:
        meta = message.get(META_KEY) or {}
        text = _text_of(message)
        tokens = MESSAGE_OVERHEAD + estimate_tokens(text)  # estimate_message, text read once
        if meta.get("kind") == "recall":
            parts.append(Part("memories", str(meta.get("file", "memory")),
                              text, tokens, dict(meta)))
        else:
            parts.append(Part("messages", message["role"], text, tokens, dict(meta)))
    return parts


def _fixed_parts(
    state: RequestState, system: list[dict[str, Any]], tools: list[dict[str, Any]]
) -> list[Part]:
    """The parts before the conversation: system prompt, tools, instructions, index."""
    parts = [
        Part("system", "system prompt: identity and tool guidance", system[0]["text"],
             estimate_tokens(system[0]["text"])),
        Part("system", "system prompt: environment and memory rules", _session_text(state),
             estimate_tokens(_session_text(state))),
    ]
    for tool in tools:
        text = json.dumps(tool, ensure_ascii=False)
        parts.append(Part("tools", str(tool.get("name", "?")), text, _tool_tokens(text, tool)))
    for inst in state.instructions:
        parts.append(Part("instructions", inst.path, inst.text, estimate_tokens(inst.text),
                          {"scope": inst.scope}))
    agent_index = _agent_index_text(state)
    if agent_index is not None and state.index is not None:
        parts.append(Part("index", f"agent {state.agent_name}: MEMORY.md", agent_index,
                          estimate_tokens(agent_index), {
                              "lines": state.index.lines, "chars": state.index.chars,
                              "truncated_by": state.index.truncated_by, "scope": "agent"}))
    if _index_in_messages(state):
        assert state.memdir is not None and state.index is not None
        text = prompts.index_block(state.memdir, state.index.text, state.index.warning)
        parts.append(Part("index", "MEMORY.md", text, estimate_tokens(text), {
            "lines": state.index.lines, "chars": state.index.chars,
            "truncated_by": state.index.truncated_by,
            **({"scope": "private"} if _team_index_shown(state) else {})}))
    if _team_index_shown(state):
        assert state.team_index is not None and state.team_dir is not None
        text = prompts.team_index_block(state.team_dir, state.team_index.text,
                                        state.team_index.warning)
        parts.append(Part("index", "team/MEMORY.md", text, estimate_tokens(text), {
            "lines": state.team_index.lines, "chars": state.team_index.chars,
            "truncated_by": state.team_index.truncated_by, "scope": "team"}))
    frame = prompts.system_reminder(
        prompts.CONTEXT_PREAMBLE + ("\n\n" + prompts.date_block(state.today) if state.today else "")
    )
    parts.append(Part("system", "context preamble and date", frame, estimate_tokens(frame)))
    return parts


def _text_of(message: Mapping[str, Any]) -> str:
    return content_text(message.get("content", ""))


#: A tool definition's JSON (as ``json.dumps`` writes it) -> its estimate. The same JSON
#: text is the same definition, so its estimate (of its sorted JSON) is the same: the
#: definitions, which rarely change, are not serialised a second time for every report.
_TOOL_TOKENS: dict[str, int] = {}
_TOOL_TOKENS_MAX = 256


def _tool_tokens(text: str, tool: Mapping[str, Any]) -> int:
    tokens = _TOOL_TOKENS.get(text)
    if tokens is None:
        tokens = estimate_tool(tool)
        if len(_TOOL_TOKENS) >= _TOOL_TOKENS_MAX:
            _TOOL_TOKENS.clear()
        _TOOL_TOKENS[text] = tokens
    return tokens


def count_breakpoints(body: Any) -> int:
    """How many ``cache_control`` markers a request body (or any value in one) carries,
    anywhere."""

    count = 0
    stack: list[Any] = [body]
    while stack:  # a loop, not recursion: this runs on every model call
        node = stack.pop()
        kind = type(node)
        if kind is dict:
            count += "cache_control" in node
            stack.extend(node.values())
        elif kind is list:
            stack.extend(node)
        elif kind is str or kind is int or kind is float or kind is bool or node is None:
            continue  # the leaves, most of a body: no abstract-class check for them
        elif isinstance(node, Mapping):
            count += "cache_control" in node
            stack.extend(node.values())
        elif isinstance(node, list):
            stack.extend(node)
    return count


def cached_prefix(body: Mapping[str, Any]) -> str:
    """The canonical text of the request up to its last-but-one breakpoint.

    That is the part a following turn must repeat byte for byte to read from cache: the
    last breakpoint moves with the conversation, every earlier one must not.
    """
    seq: list[Any] = [("tools", t) for t in body.get("tools", [])]
    seq += [("system", s) for s in body.get("system", [])]
    for i, message in enumerate(body.get("messages", [])):
        for block in message["content"]:
            seq.append((f"m{i}:{message['role']}", block))
    marks = [i for i, (_, b) in enumerate(seq) if isinstance(b, Mapping) and "cache_control" in b]
    if len(marks) < 2:
        return ""
    end = marks[-2] + 1
    return json.dumps(seq[:end], ensure_ascii=False, sort_keys=True)


# ---------------------------------------------------------------------------- budget


@dataclass(frozen=True)
class Category:
    name: str
    tokens: int
    items: tuple[Part, ...] = ()


@dataclass(frozen=True)
class ContextReport:
    """What the next request holds, by category, against the model's window."""

    model: str
    window: int
    used: int
    source: str
    categories: tuple[Category, ...]
    thresholds: Thresholds
    breakpoints: int
    index: IndexPart | None
    last_usage: Usage | None
    model_known: bool = True
    #: The model's own window when ``Agent.context_window`` set a smaller one, else 0.
    model_window: int = 0
    #: Estimated tokens of the messages added after the response whose usage ``used``
    #: counts (tool results of a call that was refused, for example), else 0.
    since_usage: int = 0
    #: What was left out because its folder is not trusted, one line each.
    notices: tuple[str, ...] = ()
    #: Warnings about the request itself, such as instruction files past 40,000 characters.
    warnings: tuple[str, ...] = ()

    @property
    def free(self) -> int:
        return max(0, self.window - self.used - self.thresholds.autocompact_buffer)

    @property
    def level(self) -> str:
        return self.thresholds.level(self.used)

    def to_json(self) -> dict[str, Any]:
        cats = [
            {"name": c.name, "tokens": c.tokens, "percent": _pct(c.tokens, self.window),
             "items": [{"label": p.label, "tokens": p.tokens, **_jsonable(p.meta)} for p in c.items]}
            for c in self.categories
        ]
        cats.append({"name": "autocompact buffer", "tokens": self.thresholds.autocompact_buffer,
                     "percent": _pct(self.thresholds.autocompact_buffer, self.window), "items": []})
        cats.append({"name": "free", "tokens": self.free, "percent": _pct(self.free, self.window),
                     "items": []})
        return {
            "model": self.model,
            "model_known": self.model_known,
            "window": self.window,
            "used": self.used,
            "percent_used": _pct(self.used, self.window),
            "source": self.source,
            "level": self.level,
            "thresholds": self.thresholds.to_json(),
            "breakpoints": self.breakpoints,
            "categories": cats,
            "index": _index_usage(self.index),
            "last_usage": self.last_usage.to_json() if self.last_usage else None,
            "notices": list(self.notices),
            **({"model_window": self.model_window} if self.model_window else {}),
            **({"since_usage": self.since_usage} if self.since_usage else {}),
            "warnings": list(self.warnings),
        }


def _index_usage(index: IndexPart | None) -> dict[str, Any] | None:
    """Lines and characters of ``MEMORY.md`` against the limits that cut what loads."""
    if index is None:
        return None
    from jupyter_memory.memdir.index import MAX_CHARS, MAX_LINES

    return {
        "lines": index.lines, "max_lines": MAX_LINES,
        "chars": index.chars, "max_chars": MAX_CHARS,
        "truncated_by": index.truncated_by,
    }


CATEGORY_ORDER = ("system", "tools", "instructions", "index", "memories", "messages")


def _pct(n: int, window: int) -> float:
    return round(100.0 * n / window, 1) if window else 0.0


def _jsonable(meta: Mapping[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in meta.items() if isinstance(v, (str, int, float, bool, type(None)))}


def report(
    assembled: AssembledRequest,
    *,
    index: IndexPart | None = None,
    last_usage: Usage | None = None,
    counted_tokens: int | None = None,
    max_output_tokens: int | None = None,
    notices: Sequence[str] = (),
    context_window: int = 0,
    since_usage: int = 0,
    warnings: Sequence[str] = (),
) -> ContextReport:
    """Budget of ``assembled``: estimates per part, corrected by real numbers when known.

    Precedence: an exact count of this request from the count-tokens endpoint when one
    was asked for, then the last response's real usage (the reference's automatic
    count), then the offline estimate. With a real total,
    the difference from the estimates is attributed to the conversation.
    ``context_window`` is the ``Agent.context_window`` setting (0: the model's window).
    ``since_usage`` estimates the messages added after the last response, which its usage
    does not cover; it is added to that usage, as the compaction levels count it.
    """
    model = assembled.body["model"]
    info = model_info(model, context_window)
    th = thresholds(info, max_output_tokens)
    by_cat: dict[str, list[Part]] = {name: [] for name in CATEGORY_ORDER}
    for part in assembled.parts:
        by_cat.setdefault(part.category, []).append(part)
    totals = {name: sum(p.tokens for p in items) for name, items in by_cat.items()}
    messages = totals["messages"]
    totals, used, source = _settle(totals, lambda: messages, counted_tokens=counted_tokens,
                                   last_usage=last_usage, since_usage=since_usage)
    categories = tuple(Category(name, totals[name], tuple(items)) for name, items in by_cat.items())
    return ContextReport(
        model=model,
        window=info.context_window,
        used=used,
        source=source,
        categories=categories,
        thresholds=th,
        breakpoints=assembled.breakpoints,
        index=index,
        last_usage=last_usage,
        model_known=info.known,
        model_window=info.model_window,
        since_usage=max(0, since_usage) if source == "usage" else 0,
        notices=tuple(notices),
        warnings=tuple(warnings),
    )


def _settle(totals: dict[str, int], messages: Callable[[], int], *, counted_tokens: int | None,
            last_usage: Usage | None, since_usage: int) -> tuple[dict[str, int], int, str]:
    """``(totals, used, source)`` of a budget whose categories are ``totals``: the
    estimates, corrected by a real count when there is one (see :func:`report`).

    ``messages()`` gives the conversation's estimate, asked for only when it counts: a
    real total at least the other categories' sets the conversation's share without it.
    """
    source, real = "estimate", None
    if counted_tokens is not None:
        # Asked for just now (``%context --count``), of this very request: exact, so it
        # wins over the last response's usage, which describes the request before.
        real, source = counted_tokens, "count_tokens"
    elif last_usage is not None and last_usage.total_input > 0:
        real, source = last_usage.context_tokens + max(0, since_usage), "usage"
    fixed = sum(tokens for name, tokens in totals.items() if name != "messages")
    if real is not None and real >= fixed:
        return {**totals, "messages": real - fixed}, real, source
    totals = {**totals, "messages": messages()}
    estimate = sum(totals.values())
    if real is None:
        return totals, estimate, source
    if estimate:
        # The estimate of the fixed parts alone overshoots the real total: scale every
        # category so they still add up to what the endpoint counted.
        scale = real / estimate
        totals = {name: round(tokens * scale) for name, tokens in totals.items()}
        totals["messages"] += real - sum(totals.values())
    return totals, real, source


def context_totals(
    state: RequestState,
    *,
    last_usage: Usage | None = None,
    counted_tokens: int | None = None,
    max_output_tokens: int | None = None,
    context_window: int = 0,
    since_usage: int = 0,
) -> dict[str, Any]:
    """The budget of the request for ``state`` as a turn record keeps it: ``window``,
    ``used``, ``source``, the ``categories`` with their tokens (then the autocompact
    buffer and free space) and the ``thresholds``, as ``report(assemble(state), ...)``
    says them, but with no body built and no part listed; the conversation's estimate is
    worked out only when no real count takes its place.
    """
    info = model_info(state.model, context_window)
    th = thresholds(info, max_output_tokens)
    totals = _fixed_totals(state)
    conversation = []
    for message in [*state.messages, *state.suffix]:
        meta = message.get(META_KEY) or {}
        if meta.get("kind") == "recall":
            totals["memories"] += MESSAGE_OVERHEAD + estimate_tokens(_text_of(message))
        else:
            conversation.append(message)
    totals, used, source = _settle(
        totals, lambda: sum(MESSAGE_OVERHEAD + estimate_tokens(_text_of(m)) for m in conversation),
        counted_tokens=counted_tokens, last_usage=last_usage, since_usage=since_usage)
    return {
        "window": info.context_window,
        "used": used,
        "source": source,
        "categories": [*({"name": name, "tokens": tokens} for name, tokens in totals.items()),
                       {"name": "autocompact buffer", "tokens": th.autocompact_buffer},
                       {"name": "free", "tokens": max(0, info.context_window - used
                                                      - th.autocompact_buffer)}],
        "thresholds": _thresholds_json(th),
    }


#: The fields of a request state that the parts before the conversation are made of:
#: all but the conversation (and the tools, compared as JSON).
_FIXED_FIELDS = tuple(f.name for f in fields(RequestState)
                      if f.name not in ("messages", "suffix", "tools"))
#: A few recent ``(those fields, the tools, the tokens of each category they make)``.
_FIXED: list[tuple[tuple[Any, ...], JsonPiece, dict[str, int]]] = []
_FIXED_LOCK = threading.Lock()


def _fixed_totals(state: RequestState) -> dict[str, int]:
    """The tokens of each category before the conversation (every category, the
    conversation's at 0): worked out once for the same state, since they change only when
    the context snapshot, the settings or the tools do."""
    key = tuple(getattr(state, name) for name in _FIXED_FIELDS)
    with _FIXED_LOCK:
        for i, (seen, tools, totals) in enumerate(_FIXED):
            if seen == key and tools.same(state.tools):
                if i:
                    _FIXED.insert(0, _FIXED.pop(i))
                return dict(totals)
    totals = {name: 0 for name in CATEGORY_ORDER}
    for part in _fixed_parts(state, _system_blocks(state), [dict(t) for t in state.tools]):
        totals[part.category] = totals.get(part.category, 0) + part.tokens
    piece = json_piece(state.tools)
    if piece is not None:
        with _FIXED_LOCK:
            _FIXED.insert(0, (key, piece, dict(totals)))
            del _FIXED[4:]
    return totals


@functools.lru_cache(maxsize=16)
def _thresholds_cached(th: Thresholds) -> dict[str, int]:
    return th.to_json()


def _thresholds_json(th: Thresholds) -> dict[str, int]:
    """``th.to_json()``, worked out once per thresholds (a new dict each time)."""
    return dict(_thresholds_cached(th))


def render_text(rep: ContextReport, *, detail: bool = True) -> str:
    """The plain-text ``%context`` view: one line per category, then the limits."""
    data = rep.to_json()
    width = 28
    lines = [
        f"Context for the next request: {rep.model}",
        f"{rep.used:,} / {rep.window:,} tokens ({data['percent_used']}%) — "
        f"counted by {_SOURCE_WORDS[rep.source]}"
        + (f" and an estimate of the {rep.since_usage:,} tokens added since"
           if rep.since_usage else ""),
        "",
    ]
    note = None if rep.model_known else unknown_model_note(rep.model)
    if note is not None:
        lines[3:3] = [f"Note: {note}", ""]
    if rep.model_window:
        lines.insert(2, f"Window: {rep.window:,} tokens, set by Agent.context_window "
                        f"({rep.model}'s own is {rep.model_window:,}).")
    for cat in data["categories"]:
        bar = "#" * max(0, round(cat["percent"] / 100 * width))
        lines.append(f"  {cat['name']:<20} {cat['tokens']:>9,}  {cat['percent']:>5}%  {bar}")
        if detail:
            for item in cat["items"]:
                extra = ""
                if "age_days" in item:
                    extra = f"  ({_age(item['age_days'])})"
                if "scope" in item:
                    extra = f"  [{item['scope']}]"
                lines.append(f"      {item['label']:<40} {item['tokens']:>7,}{extra}")
    th = rep.thresholds
    lines += [
        "",
        f"Levels: warning {th.warning:,} · autocompact {th.autocompact:,} · "
        f"blocking {th.blocking:,} (effective window {th.effective:,}); now: {rep.level}",
    ]
    idx = data["index"]
    if idx is not None:
        cut = f", cut by the {idx['truncated_by']} limit" if idx["truncated_by"] else ""
        lines.append(
            f"Index MEMORY.md: {idx['lines']} / {idx['max_lines']} lines, "
            f"{idx['chars']:,} / {idx['max_chars']:,} characters{cut}"
        )
    lines.append(f"Cache breakpoints: {rep.breakpoints} of {MAX_BREAKPOINTS}")
    if rep.last_usage is not None:
        u = rep.last_usage
        lines.append(
            f"Last response: {u.input_tokens:,} input, {u.cache_read_input_tokens:,} cache read, "
            f"{u.cache_creation_input_tokens:,} cache write, {u.output_tokens:,} output"
        )
    for warning in rep.warnings:
        lines.append(f"Warning: {warning}")
    for notice in rep.notices:
        lines.append(f"Not trusted: {notice}")
    return "\n".join(lines)


_SOURCE_WORDS = {
    "estimate": "offline estimate",
    "usage": "the last response's usage",
    "count_tokens": "the count-tokens endpoint",
}


def _age(days: int) -> str:
    from jupyter_memory.memdir.freshness import age_text

    return age_text(days)


digest = content_digest
"""A stable fingerprint of a request body (recording, replay and the turn record's parts)."""
