"""A local stand-in for the Anthropic Messages API, for tests and offline work.

No model API key exists where this project is built and tested, so everything that talks
to a model talks to this server instead, through the real ``anthropic`` SDK pointed at it
with ``ANTHROPIC_BASE_URL``. The transport is never mocked: the SDK's own HTTP client,
retry loop and stream parser run against real sockets, so bugs in how we call the SDK
show up here as they would against the API.

Replies come from a queue of scripted :class:`Turn` objects (or a ``responder`` callable
for dynamic replies). The server checks requests the way the API does (400s for malformed
requests, more than four ``cache_control`` breakpoints, ``tool_result`` ids without a
matching ``tool_use``), reports usage with prompt-cache accounting, and can inject faults
(rate limits, overloads, dropped or slow streams, garbage bodies).

Standard library only, so it imports without pytest. The schema of scripts, the token
formula and the cache rule are documented in ``docs/fake-api.md``.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import math
import re
import socket
import sys
import threading
import time
from collections import deque
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

__all__ = [
    "BLOCK_OVERHEAD_TOKENS",
    "BYTES_PER_TOKEN",
    "CACHE_LOOKBACK_BLOCKS",
    "CACHE_TTL_SECONDS",
    "FAULT_KINDS",
    "MAX_CACHE_BREAKPOINTS",
    "NO_TURN_LEFT",
    "CacheUsage",
    "FakeAnthropic",
    "Fault",
    "ManualClock",
    "PromptCache",
    "RecordedRequest",
    "ToolCall",
    "Turn",
    "echo_responder",
    "estimate_request_tokens",
    "load_script",
    "main",
    "text_tokens",
]

#: Every input block costs this much framing on top of its payload.
BLOCK_OVERHEAD_TOKENS = 3
#: Payload bytes (UTF-8) per token, rounded up per block.
BYTES_PER_TOKEN = 4
#: The API's limit on ``cache_control`` breakpoints in one request.
MAX_CACHE_BREAKPOINTS = 4
#: How many block positions, counting the breakpoint itself, a cache read may end at.
CACHE_LOOKBACK_BLOCKS = 20
#: Cache lifetimes by ``cache_control.ttl``; each read refreshes the entry.
CACHE_TTL_SECONDS = {"5m": 300.0, "1h": 3600.0}
#: The context limit quoted in the "prompt is too long" fault.
CONTEXT_LIMIT_TOKENS = 200_000
#: The 500 body text when a request finds neither a scripted turn nor a responder.
NO_TURN_LEFT = "fake_api: no scripted turn left for this request"

STOP_REASONS = frozenset(
    {
        "end_turn",
        "max_tokens",
        "stop_sequence",
        "tool_use",
        "pause_turn",
        "refusal",
        "model_context_window_exceeded",
    }
)

# kind -> (HTTP status, error type, message); {tokens} and {limit} are filled in.
_STATUS_FAULTS: dict[str, tuple[int, str, str]] = {
    "rate_limit": (429, "rate_limit_error", "fake_api: rate limit reached (injected fault)"),
    "overloaded": (529, "overloaded_error", "Overloaded"),
    "api_error": (500, "api_error", "Internal server error"),
    "authentication": (401, "authentication_error", "invalid x-api-key"),
    "prompt_too_long": (
        400,
        "invalid_request_error",
        "prompt is too long: {tokens} tokens > {limit} maximum",
    ),
}
# Faults that shape a successful-looking reply instead of replacing it.
_STREAM_FAULTS = frozenset({"drop", "slow", "garbage", "stream_error"})
#: Every fault kind a :class:`Fault` accepts.
FAULT_KINDS = frozenset(_STATUS_FAULTS) | _STREAM_FAULTS

_REDACTED_HEADERS = frozenset({"x-api-key", "authorization"})


# --------------------------------------------------------------------------- script types


@dataclass
class ToolCall:
    """One tool_use block the fake model emits; ``id`` is generated when left out."""

    name: str
    input: dict[str, Any] = field(default_factory=dict)
    id: str | None = None

    @classmethod
    def from_dict(cls, data: Mapping[str, Any], where: str = "tool call") -> ToolCall:
        _check_keys(data, {"name", "input", "id"}, where)
        if not isinstance(data.get("name"), str) or not data["name"]:
            raise ValueError(f"{where}: 'name' must be a non-empty string")
        payload = data.get("input", {})
        if not isinstance(payload, dict):
            raise ValueError(
                f"{where}: 'input' must be a JSON object, got {type(payload).__name__}"
            )
        call_id = data.get("id")
        if call_id is not None and not isinstance(call_id, str):
            raise ValueError(f"{where}: 'id' must be a string")
        return cls(name=data["name"], input=dict(payload), id=call_id)


@dataclass
class Fault:
    """A failure to inject instead of, or into, a reply.

    Status faults (``rate_limit`` 429, ``overloaded`` 529, ``api_error`` 500,
    ``authentication`` 401, ``prompt_too_long`` 400) replace the reply with the API's
    error body. Stream faults shape the reply: ``drop`` closes the socket after
    ``after_events`` SSE events (before any response bytes when that is 0 or the request
    does not stream), ``slow`` waits ``delay`` seconds between events, ``garbage`` sends
    a body that is not JSON (or an SSE event whose data is not JSON), ``stream_error``
    sends an SSE ``error`` event (overloaded) after ``after_events`` events.

    ``retry_after`` is sent as the ``retry-after`` header on 429/5xx. It defaults to a
    millisecond because the SDK treats ``0`` as "no hint" and falls back to a 0.5-8 s
    backoff, which would make retry tests slow.
    """

    kind: str
    retry_after: float | None = 0.001
    after_events: int = 3
    delay: float = 0.05
    message: str | None = None
    should_retry: bool | None = None

    def __post_init__(self) -> None:
        if self.kind not in FAULT_KINDS:
            raise ValueError(
                f"unknown fault kind {self.kind!r}; use one of {', '.join(sorted(FAULT_KINDS))}"
            )
        if self.after_events < 0:
            raise ValueError("Fault.after_events must be 0 or more")
        if self.delay < 0:
            raise ValueError("Fault.delay must be 0 or more seconds")

    @property
    def is_status(self) -> bool:
        """True when the fault replaces the reply with an HTTP error."""
        return self.kind in _STATUS_FAULTS

    @classmethod
    def coerce(cls, value: Fault | str | Mapping[str, Any], where: str = "fault") -> Fault:
        """Accept a Fault, a kind name, or a JSON object with ``kind`` and options."""
        if isinstance(value, Fault):
            return value
        if isinstance(value, str):
            return cls(kind=value)
        if isinstance(value, Mapping):
            _check_keys(
                value,
                {"kind", "retry_after", "after_events", "delay", "message", "should_retry"},
                where,
            )
            if "kind" not in value:
                raise ValueError(f"{where}: a fault object needs a 'kind'")
            try:
                return cls(**dict(value))
            except (TypeError, ValueError) as err:
                raise ValueError(f"{where}: {err}") from None
        raise ValueError(f"{where}: expected a fault name or object, got {type(value).__name__}")


@dataclass
class Turn:
    """One scripted reply of the fake model.

    ``text`` is streamed as text deltas: a list gives the chunks exactly, a string is cut
    into chunks of about three words. ``tool_calls`` follow the text as tool_use blocks.
    ``stop_reason`` defaults to ``tool_use`` when tool calls remain, else ``end_turn``;
    ``usage`` entries override the computed usage. ``delay`` pauses between stream events
    (and before a non-streaming reply). The ``expect_*`` fields check the request this
    turn answers; a mismatch is answered with a 400 naming the expectation, so a test
    fails at the first wrong request instead of several turns later.
    """

    text: str | list[str] = ""
    tool_calls: list[ToolCall] = field(default_factory=list)
    stop_reason: str | None = None
    stop_sequence: str | None = None
    usage: dict[str, int] | None = None
    fault: Fault | str | None = None
    delay: float = 0.0
    expect_user_contains: str | None = None
    expect_system_contains: str | None = None
    expect_tools: list[str] | None = None
    expect_model: str | None = None
    expect: Callable[[dict[str, Any]], bool] | None = None

    def __post_init__(self) -> None:
        if self.fault is not None:
            self.fault = Fault.coerce(self.fault)
        if self.stop_reason is not None and self.stop_reason not in STOP_REASONS:
            raise ValueError(
                f"unknown stop_reason {self.stop_reason!r}; use one of {', '.join(sorted(STOP_REASONS))}"
            )
        self.tool_calls = [
            c if isinstance(c, ToolCall) else ToolCall.from_dict(c) for c in self.tool_calls
        ]
        if self.delay < 0:
            raise ValueError("Turn.delay must be 0 or more seconds")

    def chunks(self) -> list[str]:
        """The text deltas this turn streams, in order."""
        if isinstance(self.text, list):
            return [c for c in self.text if c]
        return _split_words(self.text)

    @classmethod
    def from_dict(cls, data: Mapping[str, Any], where: str = "turn") -> Turn:
        """Build a turn from its JSON form (see docs/fake-api.md)."""
        if not isinstance(data, Mapping):
            raise ValueError(f"{where}: expected a JSON object, got {type(data).__name__}")
        known = {
            "text",
            "tool_calls",
            "stop_reason",
            "stop_sequence",
            "usage",
            "fault",
            "delay",
            "expect_user_contains",
            "expect_system_contains",
            "expect_tools",
            "expect_model",
        }
        _check_keys(data, known, where)
        text = data.get("text", "")
        if not (
            isinstance(text, str)
            or (isinstance(text, list) and all(isinstance(t, str) for t in text))
        ):
            raise ValueError(f"{where}: 'text' must be a string or a list of strings")
        calls = data.get("tool_calls", [])
        if not isinstance(calls, list):
            raise ValueError(f"{where}: 'tool_calls' must be a list")
        usage = data.get("usage")
        if usage is not None and not (
            isinstance(usage, dict) and all(isinstance(v, int) for v in usage.values())
        ):
            raise ValueError(f"{where}: 'usage' must map usage fields to integers")
        tools = data.get("expect_tools")
        if tools is not None and not (
            isinstance(tools, list) and all(isinstance(t, str) for t in tools)
        ):
            raise ValueError(f"{where}: 'expect_tools' must be a list of tool names")
        delay = data.get("delay", 0.0)
        if not isinstance(delay, (int, float)) or isinstance(delay, bool):
            raise ValueError(f"{where}: 'delay' must be a number of seconds")
        strings = {
            key: data.get(key)
            for key in (
                "stop_reason",
                "stop_sequence",
                "expect_user_contains",
                "expect_system_contains",
                "expect_model",
            )
        }
        for key, value in strings.items():
            if value is not None and not isinstance(value, str):
                raise ValueError(f"{where}: {key!r} must be a string")
        fault = data.get("fault")
        try:
            return cls(
                text=list(text) if isinstance(text, list) else text,
                tool_calls=[
                    ToolCall.from_dict(c, f"{where}.tool_calls[{i}]") for i, c in enumerate(calls)
                ],
                usage=dict(usage) if usage is not None else None,
                fault=Fault.coerce(fault, f"{where}.fault") if fault is not None else None,
                delay=float(delay),
                expect_tools=list(tools) if tools is not None else None,
                **strings,
            )
        except ValueError as err:
            message = str(err)
            raise ValueError(
                message if message.startswith(where) else f"{where}: {message}"
            ) from None


def _check_keys(data: Mapping[str, Any], known: set[str], where: str) -> None:
    unknown = sorted(set(data) - known)
    if unknown:
        raise ValueError(
            f"{where}: unknown key(s) {', '.join(map(repr, unknown))}; known keys: {', '.join(sorted(known))}"
        )


def _split_words(text: str, words_per_chunk: int = 3) -> list[str]:
    """Cut text into chunks of a few words whose concatenation is exactly ``text``."""
    pieces = re.findall(r"\s*\S+|\s+", text)
    return [
        "".join(pieces[i : i + words_per_chunk]) for i in range(0, len(pieces), words_per_chunk)
    ]


def _split_json(text: str) -> list[str]:
    """Cut a JSON document into several partial_json pieces, as the API streams them."""
    if len(text) < 2:
        return [text]
    count = max(2, math.ceil(len(text) / 16))
    size = math.ceil(len(text) / count)
    return [text[i : i + size] for i in range(0, len(text), size)]


def load_script(source: str | Sequence[Mapping[str, Any]]) -> list[Turn]:
    """Parse a script: a JSON text or an already-decoded list of turn objects."""
    data = json.loads(source) if isinstance(source, str) else source
    if not isinstance(data, list):
        raise ValueError("a fake_api script must be a JSON list of turn objects")
    return [Turn.from_dict(item, f"turn {i}") for i, item in enumerate(data)]


# --------------------------------------------------------------------------- clock


class ManualClock:
    """A clock that only moves when told to, so tests can expire cache entries instantly."""

    def __init__(self, start: float = 0.0) -> None:
        self._now = start
        self._lock = threading.Lock()

    def __call__(self) -> float:
        with self._lock:
            return self._now

    def advance(self, seconds: float) -> None:
        """Move the clock forward by ``seconds``."""
        if seconds < 0:
            raise ValueError("a clock cannot go backwards")
        with self._lock:
            self._now += seconds


# --------------------------------------------------------------------------- tokens


def _compact(value: Any) -> str:
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def _strip_cache_control(block: Mapping[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in block.items() if k != "cache_control"}


def text_tokens(text: str) -> int:
    """Tokens for a payload: its UTF-8 length divided by four, rounded up."""
    return math.ceil(len(text.encode("utf-8")) / BYTES_PER_TOKEN)


def _payload(section: str, block: Mapping[str, Any]) -> str:
    """The text of a block that the token estimate charges for."""
    if section == "tools":
        return _compact(_strip_cache_control(block))
    kind = block.get("type")
    if kind == "text":
        return str(block.get("text", ""))
    if kind == "thinking":
        return str(block.get("thinking", ""))
    if kind == "tool_use":
        return str(block.get("name", "")) + _compact(block.get("input", {}))
    if kind == "tool_result":
        content = block.get("content", "")
        if isinstance(content, str):
            return content
        if isinstance(content, list):
            return "".join(_payload("messages", p) for p in content if isinstance(p, Mapping))
        return ""
    return _compact(_strip_cache_control(block))


@dataclass(frozen=True)
class _Block:
    key: bytes
    tokens: int
    cache_control: Mapping[str, Any] | None
    where: str


def _canonical_blocks(body: Mapping[str, Any]) -> list[_Block]:
    """The request as the cache sees it: tools, then system, then message content."""
    blocks: list[_Block] = []

    def add(section: str, role: str, block: Mapping[str, Any], where: str) -> None:
        key = _compact([section, role, _strip_cache_control(block)]).encode("utf-8")
        tokens = BLOCK_OVERHEAD_TOKENS + text_tokens(_payload(section, block))
        control = block.get("cache_control")
        blocks.append(_Block(key, tokens, control if isinstance(control, Mapping) else None, where))

    for i, tool in enumerate(body.get("tools") or []):
        if isinstance(tool, Mapping):
            add("tools", "", tool, f"tools.{i}")
    system = body.get("system")
    if isinstance(system, str) and system:
        add("system", "", {"type": "text", "text": system}, "system")
    elif isinstance(system, list):
        for i, part in enumerate(system):
            if isinstance(part, Mapping):
                add("system", "", part, f"system.{i}")
    for i, message in enumerate(body.get("messages") or []):
        if not isinstance(message, Mapping):
            continue
        role = str(message.get("role", ""))
        content = message.get("content")
        if isinstance(content, str):
            add("messages", role, {"type": "text", "text": content}, f"messages.{i}.content")
        elif isinstance(content, list):
            for j, part in enumerate(content):
                if isinstance(part, Mapping):
                    add("messages", role, part, f"messages.{i}.content.{j}")
    return blocks


def estimate_request_tokens(body: Mapping[str, Any]) -> int:
    """The fake's input-token count for a request: the sum of its blocks' estimates.

    Each block (a tool definition, a system text block, a message content block; string
    content counts as one text block) costs ``3 + ceil(utf8_bytes(payload) / 4)``.
    ``count_tokens`` answers this number and the usage of a reply splits it into
    ``input_tokens + cache_read_input_tokens + cache_creation_input_tokens``.
    """
    return sum(b.tokens for b in _canonical_blocks(body))


def _output_tokens(blocks: Iterable[Mapping[str, Any]]) -> int:
    return max(1, sum(text_tokens(_payload("messages", b)) for b in blocks))


# --------------------------------------------------------------------------- prompt cache


@dataclass(frozen=True)
class CacheUsage:
    """How one request's input tokens split between fresh input, cache reads and writes."""

    input_tokens: int
    cache_read_input_tokens: int
    cache_creation_input_tokens: int
    ephemeral_5m_input_tokens: int = 0
    ephemeral_1h_input_tokens: int = 0

    @property
    def total(self) -> int:
        return self.input_tokens + self.cache_read_input_tokens + self.cache_creation_input_tokens


class PromptCache:
    """Prefix cache keyed on the hash of the canonical request up to each breakpoint.

    The longest prefix whose hash was stored earlier and has not expired is read (and its
    lifetime refreshed); it may end at a breakpoint or up to 19 blocks before one, so a
    breakpoint that moves to the newest message still reads the previous turn's entry.
    Everything after it up to the last breakpoint is written, with an entry stored for
    every breakpoint. Prefixes shorter than ``min_tokens`` are never cached, as the API
    has a per-model minimum.
    """

    def __init__(self, clock: Callable[[], float], min_tokens: int = 0) -> None:
        self._clock = clock
        self.min_tokens = min_tokens
        self._entries: dict[str, tuple[float, float]] = {}  # hash -> (expires_at, ttl)
        self._lock = threading.Lock()

    def __len__(self) -> int:
        now = self._clock()
        with self._lock:
            return sum(1 for expires, _ in self._entries.values() if expires > now)

    def clear(self) -> None:
        with self._lock:
            self._entries.clear()

    def _read_candidates(self, points: list[int], cumulative: list[int]) -> set[int]:
        """Block positions where a cached prefix may end: each breakpoint and the blocks
        just before it (the API looks back about 20 blocks for an earlier entry)."""
        return {
            i
            for point in points
            for i in range(max(0, point - CACHE_LOOKBACK_BLOCKS + 1), point + 1)
            if cumulative[i] >= self.min_tokens
        }

    def account(self, body: Mapping[str, Any]) -> CacheUsage:
        """Split the request's tokens into read, written and fresh, updating the cache."""
        blocks = _canonical_blocks(body)
        controls: dict[int, Mapping[str, Any]] = {
            i: b.cache_control for i, b in enumerate(blocks) if b.cache_control is not None
        }
        top = body.get("cache_control")
        if isinstance(top, Mapping) and blocks:
            controls.setdefault(len(blocks) - 1, top)

        cumulative: list[int] = []
        hashes: list[str] = []
        digest = hashlib.sha256(_compact(["model", body.get("model")]).encode("utf-8"))
        running = 0
        for block in blocks:
            running += block.tokens
            cumulative.append(running)
            digest.update(len(block.key).to_bytes(8, "big") + block.key)
            hashes.append(digest.copy().hexdigest())

        points = [i for i in sorted(controls) if cumulative[i] >= self.min_tokens]
        now = self._clock()
        with self._lock:
            self._entries = {h: e for h, e in self._entries.items() if e[0] > now}
            read_end = -1
            for i in sorted(self._read_candidates(points, cumulative), reverse=True):
                entry = self._entries.get(hashes[i])
                if entry is not None:
                    read_end = i
                    self._entries[hashes[i]] = (now + entry[1], entry[1])
                    break
            written = {"5m": 0, "1h": 0}
            previous = read_end
            for i in points:
                ttl_name = str(controls[i].get("ttl", "5m"))
                ttl = CACHE_TTL_SECONDS.get(ttl_name, CACHE_TTL_SECONDS["5m"])
                if i > read_end:
                    start = cumulative[previous] if previous >= 0 else 0
                    written[ttl_name if ttl_name in written else "5m"] += cumulative[i] - start
                    previous = i
                self._entries[hashes[i]] = (now + ttl, ttl)

        total = cumulative[-1] if cumulative else 0
        read = cumulative[read_end] if read_end >= 0 else 0
        creation = written["5m"] + written["1h"]
        return CacheUsage(
            input_tokens=total - read - creation,
            cache_read_input_tokens=read,
            cache_creation_input_tokens=creation,
            ephemeral_5m_input_tokens=written["5m"],
            ephemeral_1h_input_tokens=written["1h"],
        )


# --------------------------------------------------------------------------- validation


class _ApiError(Exception):
    """An error reply: HTTP status, API error type and message."""

    def __init__(
        self, status: int, error_type: str, message: str, headers: Mapping[str, str] | None = None
    ) -> None:
        super().__init__(message)
        self.status = status
        self.error_type = error_type
        self.message = message
        self.headers = dict(headers or {})


def _invalid(message: str) -> _ApiError:
    return _ApiError(400, "invalid_request_error", message)


def _validate(body: Any, *, count_only: bool) -> None:
    """Reject requests the API would reject, with messages in the API's style."""
    if not isinstance(body, dict):
        raise _invalid("The request body must be a JSON object.")
    if not isinstance(body.get("model"), str) or not body["model"]:
        raise _invalid("model: Field required")
    if not count_only:
        max_tokens = body.get("max_tokens")
        if max_tokens is None:
            raise _invalid("max_tokens: Field required")
        if not isinstance(max_tokens, int) or isinstance(max_tokens, bool) or max_tokens < 1:
            raise _invalid("max_tokens: Input should be an integer greater than or equal to 1")
        if "stream" in body and not isinstance(body["stream"], bool):
            raise _invalid("stream: Input should be a valid boolean")
    messages = body.get("messages")
    if messages is None:
        raise _invalid("messages: Field required")
    if not isinstance(messages, list) or not messages:
        raise _invalid("messages: at least one message is required")
    _validate_tools(body.get("tools"))
    system = body.get("system")
    if system is not None and not isinstance(system, (str, list)):
        raise _invalid("system: Input should be a string or a list of text blocks")
    for i, message in enumerate(messages):
        if not isinstance(message, dict):
            raise _invalid(f"messages.{i}: Input should be an object")
        if message.get("role") not in ("user", "assistant"):
            raise _invalid(f"messages.{i}.role: Input should be 'user' or 'assistant'")
        content = message.get("content")
        if content is None:
            raise _invalid(f"messages.{i}.content: Field required")
        last = i == len(messages) - 1
        if not isinstance(content, (str, list)):
            raise _invalid(f"messages.{i}.content: Input should be a string or a list of blocks")
        if not content and not (last and message["role"] == "assistant"):
            raise _invalid(
                f"messages.{i}: all messages must have non-empty content except for the "
                "optional final assistant message"
            )
        if isinstance(content, list):
            for j, part in enumerate(content):
                if not isinstance(part, dict) or not isinstance(part.get("type"), str):
                    raise _invalid(f"messages.{i}.content.{j}: each block needs a 'type'")
    if messages[0].get("role") != "user":
        raise _invalid('messages: first message must use the "user" role')
    _validate_tool_pairs(messages)
    _validate_cache_controls(body)


def _validate_tools(tools: Any) -> None:
    if tools is None:
        return
    if not isinstance(tools, list):
        raise _invalid("tools: Input should be a list")
    seen: set[str] = set()
    for i, tool in enumerate(tools):
        name = tool.get("name") if isinstance(tool, dict) else None
        if not isinstance(name, str) or not name:
            raise _invalid(f"tools.{i}.name: Field required")
        if name in seen:
            raise _invalid(f"tools: Tool names must be unique. Duplicate: {name!r}")
        seen.add(name)


def _turn_blocks(
    messages: list[dict[str, Any]],
) -> list[tuple[str, list[tuple[int, int, dict[str, Any]]]]]:
    """Consecutive same-role messages merged into turns, as the API merges them."""
    turns: list[tuple[str, list[tuple[int, int, dict[str, Any]]]]] = []
    for i, message in enumerate(messages):
        content = message["content"]
        parts = [(i, j, p) for j, p in enumerate(content)] if isinstance(content, list) else []
        if turns and turns[-1][0] == message["role"]:
            turns[-1][1].extend(parts)
        else:
            turns.append((message["role"], parts))
    return turns


def _validate_tool_pairs(messages: list[dict[str, Any]]) -> None:
    """Every tool_result answers a tool_use of the turn before; every tool_use is answered."""
    turns = _turn_blocks(messages)
    for t, (role, parts) in enumerate(turns):
        results = [(i, j, p) for i, j, p in parts if p.get("type") == "tool_result"]
        if role == "user" and results:
            previous = turns[t - 1][1] if t > 0 else []
            use_ids = {p.get("id") for _, _, p in previous if p.get("type") == "tool_use"}
            if not use_ids:
                i, j, _ = results[0]
                raise _invalid(
                    f"messages.{i}.content.{j}: `tool_result` block(s) provided when the previous "
                    "message does not contain any `tool_use` blocks"
                )
            for i, j, p in results:
                if p.get("tool_use_id") not in use_ids:
                    raise _invalid(
                        f"messages.{i}.content.{j}: unexpected `tool_use_id` found in "
                        f"`tool_result` blocks: {p.get('tool_use_id')}. Each `tool_result` block "
                        "must have a corresponding `tool_use` block in the previous message."
                    )
    for t, (role, parts) in enumerate(turns):
        if role == "assistant" and t + 1 < len(turns):
            uses = [(i, p.get("id")) for i, _, p in parts if p.get("type") == "tool_use"]
            answered = {
                p.get("tool_use_id")
                for _, _, p in turns[t + 1][1]
                if p.get("type") == "tool_result"
            }
            missing = [use_id for _, use_id in uses if use_id not in answered]
            if missing:
                raise _invalid(
                    f"messages.{uses[0][0]}: `tool_use` ids were found without `tool_result` "
                    f"blocks immediately after: {', '.join(map(str, missing))}. Each `tool_use` "
                    "block must have a corresponding `tool_result` block in the next message."
                )


def _validate_cache_controls(body: Mapping[str, Any]) -> None:
    blocks = _canonical_blocks(body)
    controls = [b for b in blocks if b.cache_control is not None]
    top = body.get("cache_control")
    count = len(controls) + (1 if isinstance(top, Mapping) else 0)
    if count > MAX_CACHE_BREAKPOINTS:
        raise _invalid(
            f"A maximum of {MAX_CACHE_BREAKPOINTS} blocks with cache_control may be provided. "
            f"Found {count}."
        )
    seen_5m = False
    for block in controls + (
        [_Block(b"", 0, top, "cache_control")] if isinstance(top, Mapping) else []
    ):
        control = block.cache_control or {}
        if control.get("type") != "ephemeral":
            raise _invalid(f"{block.where}.cache_control.type: Input should be 'ephemeral'")
        ttl = control.get("ttl", "5m")
        if ttl not in CACHE_TTL_SECONDS:
            raise _invalid(f"{block.where}.cache_control.ttl: Input should be '5m' or '1h'")
        if ttl == "1h" and seen_5m:
            raise _invalid(
                "a cache_control entry with ttl='1h' cannot come after one with ttl='5m'"
            )
        seen_5m = seen_5m or ttl == "5m"


def _message_text(message: Mapping[str, Any]) -> str:
    content = message.get("content")
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "".join(_payload("messages", p) for p in content if isinstance(p, Mapping))
    return ""


def _check_expectations(turn: Turn, body: Mapping[str, Any], number: int) -> None:
    """Raise a 400 naming the first expectation of ``turn`` the request does not meet."""
    label = f"fake_api: scripted turn {number}"
    if turn.expect_model is not None and body.get("model") != turn.expect_model:
        raise _invalid(
            f"{label} expected model {turn.expect_model!r} but the request used {body.get('model')!r}"
        )
    if turn.expect_user_contains is not None:
        users = [m for m in body.get("messages", []) if m.get("role") == "user"]
        text = _message_text(users[-1]) if users else ""
        if turn.expect_user_contains not in text:
            raise _invalid(
                f"{label} expected the last user message to contain "
                f"{turn.expect_user_contains!r}; it was: {text[:300]!r}"
            )
    if turn.expect_system_contains is not None:
        system = body.get("system") or ""
        text = (
            system
            if isinstance(system, str)
            else "".join(str(p.get("text", "")) for p in system if isinstance(p, Mapping))
        )
        if turn.expect_system_contains not in text:
            raise _invalid(
                f"{label} expected the system prompt to contain {turn.expect_system_contains!r}; "
                f"it starts: {text[:300]!r}"
            )
    if turn.expect_tools is not None:
        offered = [t.get("name") for t in body.get("tools") or [] if isinstance(t, Mapping)]
        missing = [name for name in turn.expect_tools if name not in offered]
        if missing:
            raise _invalid(
                f"{label} expected tools {missing} to be offered; the request offered {offered}"
            )
    if turn.expect is not None and not turn.expect(dict(body)):
        name = getattr(turn.expect, "__name__", repr(turn.expect))
        raise _invalid(f"{label}: the request failed the check {name}")


# --------------------------------------------------------------------------- recording


@dataclass
class RecordedRequest:
    """One request as the server received it (API keys removed from the headers)."""

    method: str
    path: str
    headers: dict[str, str]
    body: Any
    time: float
    status: int | None = None
    #: ``time.perf_counter()`` when the request line arrived: compare with the same clock
    #: in the client's process to see how long a request took to leave it.
    received: float = 0.0

    @property
    def messages(self) -> list[dict[str, Any]]:
        return list(self.body.get("messages", [])) if isinstance(self.body, dict) else []


# --------------------------------------------------------------------------- reply building


@dataclass
class _Reply:
    message: dict[str, Any]
    deltas: list[list[dict[str, Any]]]  # per content block, the deltas that build it


def _build_reply(
    turn: Turn,
    body: Mapping[str, Any],
    usage: CacheUsage,
    message_id: str,
    next_tool_id: Callable[[], str],
) -> _Reply:
    chunks = turn.chunks()
    calls = list(turn.tool_calls)
    stop_reason: str | None = None
    stop_sequence: str | None = None

    text = "".join(chunks)
    for candidate in body.get("stop_sequences") or []:
        at = text.find(candidate) if isinstance(candidate, str) and candidate else -1
        if at >= 0 and (stop_sequence is None or at < text.find(stop_sequence)):
            stop_sequence = candidate
    if stop_sequence is not None:
        chunks = _cut_chunks(chunks, text.find(stop_sequence))
        calls, stop_reason = [], "stop_sequence"

    max_tokens = int(body.get("max_tokens") or 1)
    text = "".join(chunks)
    truncated = False
    if text_tokens(text) > max_tokens:
        kept = text.encode("utf-8")[: max_tokens * BYTES_PER_TOKEN].decode("utf-8", "ignore")
        chunks, calls, truncated = _cut_chunks(chunks, len(kept)), [], True
    else:
        call_tokens = sum(text_tokens(c.name + _compact(c.input)) for c in calls)
        if text_tokens(text) + call_tokens > max_tokens:
            calls, truncated = [], True
    if truncated:
        stop_reason, stop_sequence = "max_tokens", None

    content: list[dict[str, Any]] = []
    deltas: list[list[dict[str, Any]]] = []
    if chunks:
        content.append({"type": "text", "text": "".join(chunks)})
        deltas.append([{"type": "text_delta", "text": c} for c in chunks])
    for call in calls:
        content.append(
            {
                "type": "tool_use",
                "id": call.id or next_tool_id(),
                "name": call.name,
                "input": call.input,
            }
        )
        raw = json.dumps(call.input, separators=(",", ":"), ensure_ascii=False)
        deltas.append([{"type": "input_json_delta", "partial_json": p} for p in _split_json(raw)])

    if stop_reason is None:
        stop_reason = turn.stop_reason or ("tool_use" if calls else "end_turn")
        stop_sequence = turn.stop_sequence
    output_tokens = max_tokens if truncated else _output_tokens(content)
    usage_body: dict[str, Any] = {
        "input_tokens": usage.input_tokens,
        "cache_creation_input_tokens": usage.cache_creation_input_tokens,
        "cache_read_input_tokens": usage.cache_read_input_tokens,
        "cache_creation": {
            "ephemeral_5m_input_tokens": usage.ephemeral_5m_input_tokens,
            "ephemeral_1h_input_tokens": usage.ephemeral_1h_input_tokens,
        },
        "output_tokens": output_tokens,
        "service_tier": "standard",
    }
    usage_body.update(turn.usage or {})
    message = {
        "id": message_id,
        "type": "message",
        "role": "assistant",
        "model": body.get("model"),
        "content": content,
        "stop_reason": stop_reason,
        "stop_sequence": stop_sequence,
        "usage": usage_body,
    }
    return _Reply(message, deltas)


def _cut_chunks(chunks: list[str], length: int) -> list[str]:
    """The chunks trimmed so their concatenation is the first ``length`` characters."""
    out: list[str] = []
    left = length
    for chunk in chunks:
        if left <= 0:
            break
        out.append(chunk[:left])
        left -= len(chunk)
    return [c for c in out if c]


def _stream_events(reply: _Reply) -> Iterator[tuple[str, dict[str, Any]]]:
    """The SSE events of a reply, in the order the API sends them."""
    message = reply.message
    start = dict(message, content=[], stop_reason=None, stop_sequence=None)
    start["usage"] = dict(message["usage"], output_tokens=1)
    yield "message_start", {"type": "message_start", "message": start}
    if not message["content"]:
        yield "ping", {"type": "ping"}
    for index, (block, deltas) in enumerate(zip(message["content"], reply.deltas, strict=True)):
        opening = {"type": "text", "text": ""} if block["type"] == "text" else dict(block, input={})
        yield (
            "content_block_start",
            {"type": "content_block_start", "index": index, "content_block": opening},
        )
        if index == 0:
            yield "ping", {"type": "ping"}
        for delta in deltas:
            yield (
                "content_block_delta",
                {"type": "content_block_delta", "index": index, "delta": delta},
            )
        yield "content_block_stop", {"type": "content_block_stop", "index": index}
    usage = message["usage"]
    delta_usage = {
        k: usage[k]
        for k in (
            "input_tokens",
            "cache_creation_input_tokens",
            "cache_read_input_tokens",
            "output_tokens",
        )
        if k in usage
    }
    yield (
        "message_delta",
        {
            "type": "message_delta",
            "delta": {
                "stop_reason": message["stop_reason"],
                "stop_sequence": message["stop_sequence"],
            },
            "usage": delta_usage,
        },
    )
    yield "message_stop", {"type": "message_stop"}


def echo_responder(request: Mapping[str, Any]) -> Turn:
    """A responder for offline work: answers with the text of the last user message."""
    users = [m for m in request.get("messages", []) if m.get("role") == "user"]
    text = _message_text(users[-1]) if users else ""
    return Turn(text=f"(fake_api echo) {text}")


# --------------------------------------------------------------------------- HTTP plumbing


class _Exchange:
    """Writes one HTTP response on the handler's socket; tolerates a client gone away."""

    def __init__(self, handler: _Handler, request_id: str) -> None:
        self.handler = handler
        self.request_id = request_id

    def _head(self, status: int, headers: Mapping[str, str]) -> None:
        phrases = {529: "Overloaded"}
        self.handler.send_response(status, phrases.get(status))
        self.handler.send_header("request-id", self.request_id)
        for name, value in headers.items():
            self.handler.send_header(name, value)
        self.handler.end_headers()

    def send_bytes(
        self, status: int, data: bytes, content_type: str, headers: Mapping[str, str] | None = None
    ) -> None:
        all_headers = {
            "content-type": content_type,
            "content-length": str(len(data)),
            **(headers or {}),
        }
        try:
            self._head(status, all_headers)
            self.handler.wfile.write(data)
            self.handler.wfile.flush()
        except OSError:
            self.handler.close_connection = True

    def send_json(
        self, status: int, payload: Any, headers: Mapping[str, str] | None = None
    ) -> None:
        self.send_bytes(status, json.dumps(payload).encode("utf-8"), "application/json", headers)

    def start_stream(self) -> bool:
        try:
            self._head(
                200,
                {
                    "content-type": "text/event-stream; charset=utf-8",
                    "cache-control": "no-cache",
                    "transfer-encoding": "chunked",
                },
            )
            return True
        except OSError:
            self.handler.close_connection = True
            return False

    def chunk(self, data: bytes) -> bool:
        try:
            self.handler.wfile.write(f"{len(data):x}\r\n".encode() + data + b"\r\n")
            self.handler.wfile.flush()
            return True
        except OSError:
            self.handler.close_connection = True
            return False

    def end_stream(self) -> None:
        try:
            self.handler.wfile.write(b"0\r\n\r\n")
            self.handler.wfile.flush()
        except OSError:
            self.handler.close_connection = True

    def drop(self) -> None:
        """Close the socket abruptly, as a network failure would."""
        self.handler.close_connection = True
        try:
            self.handler.wfile.flush()
            self.handler.connection.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass


def _sse(event: str, data: Mapping[str, Any]) -> bytes:
    return f"event: {event}\ndata: {json.dumps(data)}\n\n".encode()


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server: _Server
    timeout = 30  # idle keep-alive connections give their thread back eventually
    disable_nagle_algorithm = True  # headers and body go out as separate writes

    def log_message(self, format: str, *args: Any) -> None:  # quiet: tests read server.requests
        return

    def setup(self) -> None:
        super().setup()
        self.server.fake._connection_opened(self.connection)

    def parse_request(self) -> bool:
        self.received = time.perf_counter()  # the request line has just been read
        return super().parse_request()

    def finish(self) -> None:
        try:
            super().finish()
        except OSError:
            pass
        finally:
            self.server.fake._connection_closed(self.connection)

    def _read_body(self) -> bytes:
        if "chunked" in (self.headers.get("Transfer-Encoding") or "").lower():
            data = bytearray()
            while True:
                size = int(self.rfile.readline().split(b";")[0].strip() or b"0", 16)
                if size == 0:
                    while self.rfile.readline() not in (b"\r\n", b"\n", b""):
                        pass
                    return bytes(data)
                data += self.rfile.read(size)
                self.rfile.readline()
        length = int(self.headers.get("Content-Length") or 0)
        return self.rfile.read(length) if length > 0 else b""

    def _dispatch(self) -> None:
        self.server.fake._handle(self, self._read_body())

    do_POST = do_GET = do_PUT = do_DELETE = do_PATCH = _dispatch


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    allow_reuse_address = True

    def __init__(self, address: tuple[str, int], fake: FakeAnthropic) -> None:
        self.fake = fake
        super().__init__(address, _Handler)

    def handle_error(self, request: Any, client_address: Any) -> None:
        # A client hanging up (or stop() closing its socket) is normal here; anything
        # else is a bug in the fake and deserves the default traceback.
        if not isinstance(sys.exc_info()[1], OSError):
            super().handle_error(request, client_address)


# --------------------------------------------------------------------------- the server


class FakeAnthropic:
    """A Messages API server on localhost that replies from a script of turns.

    Use as a context manager, or ``start()``/``stop()``. Point the SDK at ``base_url``
    with any API key. Thread-safe: the SDK, the test and handler threads may all touch it.
    """

    def __init__(
        self,
        host: str = "127.0.0.1",
        port: int = 0,
        clock: Callable[[], float] | None = None,
        *,
        min_cache_tokens: int = 0,
        responder: Callable[[dict[str, Any]], Turn | None] | None = None,
        connection_delay: float = 0.0,
    ) -> None:
        if connection_delay < 0:
            raise ValueError("fake_api: connection_delay is in seconds and cannot be negative")
        self.host = host
        #: Seconds each new connection waits before its first request is read, as a TLS
        #: handshake with a distant endpoint would; a reused connection pays nothing.
        self.connection_delay = connection_delay
        self._requested_port = port
        self.clock: Callable[[], float] = clock or time.monotonic
        self.cache = PromptCache(self.clock, min_cache_tokens)
        self.responder = responder
        self._lock = threading.RLock()
        self._turns: deque[Turn] = deque()
        self._faults: deque[Fault] = deque()
        self._requests: list[RecordedRequest] = []
        self._failures: list[str] = []
        self._counters = {"request": 0, "message": 0, "tool": 0, "turn": 0}
        self._connections: set[socket.socket] = set()
        self._accepted = 0
        self._server: _Server | None = None
        self._thread: threading.Thread | None = None

    # ----- lifecycle

    def start(self) -> FakeAnthropic:
        """Bind and serve in a background thread; returns self."""
        if self._server is not None:
            return self
        self._server = _Server((self.host, self._requested_port), self)
        self._thread = threading.Thread(
            target=self._server.serve_forever,
            kwargs={"poll_interval": 0.01},
            name="fake-anthropic",
            daemon=True,
        )
        self._thread.start()
        return self

    def stop(self) -> None:
        """Stop serving and close every open connection."""
        server, self._server = self._server, None
        if server is None:
            return
        server.shutdown()
        server.server_close()
        with self._lock:
            connections = list(self._connections)
        for conn in connections:
            try:
                conn.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
        if self._thread is not None:
            self._thread.join(timeout=5)
            self._thread = None

    def __enter__(self) -> FakeAnthropic:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    @property
    def port(self) -> int:
        if self._server is None:
            raise RuntimeError("fake_api: the server is not running; call start() first")
        return int(self._server.server_address[1])

    @property
    def base_url(self) -> str:
        """The URL to give the SDK as ``base_url`` / ``ANTHROPIC_BASE_URL``."""
        return f"http://{self.host}:{self.port}"

    # ----- scripting

    def script(self, turns: Iterable[Turn | Mapping[str, Any]]) -> None:
        """Replace the pending turns with ``turns`` (Turn objects or their JSON form)."""
        parsed = [
            t if isinstance(t, Turn) else Turn.from_dict(t, f"turn {i}")
            for i, t in enumerate(turns)
        ]
        with self._lock:
            self._turns = deque(parsed)

    def push(self, turn: Turn | Mapping[str, Any]) -> None:
        """Append one turn to the script."""
        parsed = turn if isinstance(turn, Turn) else Turn.from_dict(turn)
        with self._lock:
            self._turns.append(parsed)

    def fail_next(self, fault: Fault | str, times: int = 1, **options: Any) -> None:
        """Inject ``fault`` into the next ``times`` requests to ``/v1/messages``.

        Status faults answer without using a scripted turn, so a retry gets the turn.
        ``drop``, ``garbage`` and ``stream_error`` break the reply of the next turn
        without using it up; ``slow`` delivers that turn slowly.
        """
        if times < 1:
            raise ValueError("fail_next: times must be 1 or more")
        if options and not isinstance(fault, str):
            raise TypeError(
                "fail_next: pass options only with a fault kind name, e.g. fail_next('drop', after_events=2)"
            )
        item = Fault(kind=fault, **options) if isinstance(fault, str) else Fault.coerce(fault)
        with self._lock:
            self._faults.extend([item] * times)

    @property
    def remaining(self) -> int:
        """Scripted turns not yet used."""
        with self._lock:
            return len(self._turns)

    @property
    def requests(self) -> list[RecordedRequest]:
        """A snapshot of every request received so far, oldest first."""
        with self._lock:
            return list(self._requests)

    @property
    def last_request(self) -> RecordedRequest:
        with self._lock:
            if not self._requests:
                raise LookupError("fake_api: no request has been received yet")
            return self._requests[-1]

    @property
    def failures(self) -> list[str]:
        """Messages of errors the fake produced on its own (not injected faults)."""
        with self._lock:
            return list(self._failures)

    def reset(self) -> None:
        """Forget requests, turns, faults, the responder, the cache and the id counters."""
        with self._lock:
            self._turns.clear()
            self._faults.clear()
            self._requests.clear()
            self._failures.clear()
            self._counters = dict.fromkeys(self._counters, 0)
            self.responder = None
        self.cache.clear()

    # ----- internals

    @property
    def connections_opened(self) -> int:
        """Connections accepted since the server started (HTTP/1.1 keep-alive reuses them)."""
        with self._lock:
            return self._accepted

    @property
    def connections_open(self) -> int:
        """Connections open right now."""
        with self._lock:
            return len(self._connections)

    def _connection_opened(self, conn: socket.socket) -> None:
        with self._lock:
            self._connections.add(conn)
            self._accepted += 1
        if self.connection_delay:
            time.sleep(self.connection_delay)

    def _connection_closed(self, conn: socket.socket) -> None:
        with self._lock:
            self._connections.discard(conn)

    def _next_id(self, kind: str) -> int:
        with self._lock:
            self._counters[kind] += 1
            return self._counters[kind]

    def _next_tool_id(self) -> str:
        return f"toolu_fake_{self._next_id('tool'):04d}"

    def _handle(self, handler: _Handler, raw: bytes) -> None:
        exchange = _Exchange(handler, f"req_fake_{self._next_id('request'):04d}")
        path = handler.path.split("?", 1)[0]
        try:
            body: Any = json.loads(raw) if raw else None
        except ValueError:
            body = raw.decode("utf-8", "replace")
        headers = {
            k.lower(): v for k, v in handler.headers.items() if k.lower() not in _REDACTED_HEADERS
        }
        record = RecordedRequest(handler.command, path, headers, body, time.time(),
                                 received=getattr(handler, "received", 0.0))
        with self._lock:
            self._requests.append(record)
        try:
            self._answer(handler, exchange, record, raw)
        except _ApiError as err:
            self._send_error(exchange, record, err)
        except Exception as err:  # a responder or expectation bug: make the test fail loudly
            message = f"fake_api: internal error {type(err).__name__}: {err}"
            with self._lock:
                self._failures.append(message)
            self._send_error(
                exchange, record, _ApiError(500, "api_error", message, {"x-should-retry": "false"})
            )

    def _send_error(self, exchange: _Exchange, record: RecordedRequest, err: _ApiError) -> None:
        record.status = err.status
        if err.status >= 500 or err.status == 429:
            headers = {"x-should-retry": "true"}
        else:
            headers = {"x-should-retry": "false"}
        headers.update(err.headers)
        body = {
            "type": "error",
            "error": {"type": err.error_type, "message": err.message},
            "request_id": exchange.request_id,
        }
        exchange.send_json(err.status, body, headers)

    def _refuse(self, err: _ApiError) -> _ApiError:
        with self._lock:
            self._failures.append(err.message)
        return err

    def _answer(
        self, handler: _Handler, exchange: _Exchange, record: RecordedRequest, raw: bytes
    ) -> None:
        path = record.path
        if path not in ("/v1/messages", "/v1/messages/count_tokens"):
            raise self._refuse(
                _ApiError(404, "not_found_error", f"fake_api: no route for {record.method} {path}")
            )
        if record.method != "POST":
            raise self._refuse(
                _ApiError(405, "invalid_request_error", f"fake_api: {path} accepts POST only")
            )
        if not (handler.headers.get("x-api-key") or handler.headers.get("authorization")):
            raise self._refuse(
                _ApiError(
                    401,
                    "authentication_error",
                    "x-api-key header is required (any value works with fake_api)",
                )
            )
        if not handler.headers.get("anthropic-version"):
            raise self._refuse(_invalid("anthropic-version: header is required"))
        if not isinstance(record.body, dict):
            raise self._refuse(
                _invalid(
                    "There was an error parsing the body of your request as JSON. Send a JSON object."
                )
            )
        body = record.body
        if path == "/v1/messages/count_tokens":
            try:
                _validate(body, count_only=True)
            except _ApiError as err:
                raise self._refuse(err) from None
            record.status = 200
            exchange.send_json(200, {"input_tokens": estimate_request_tokens(body)})
            return

        with self._lock:
            fault = self._faults.popleft() if self._faults else None
        if fault is not None and fault.is_status:
            raise self._fault_error(fault, body)
        try:
            _validate(body, count_only=False)
        except _ApiError as err:
            raise self._refuse(err) from None

        consume = fault is None or fault.kind == "slow"
        turn, number = self._take_turn(body, consume)
        if turn is None:
            if fault is None:
                raise self._refuse(
                    _ApiError(500, "api_error", NO_TURN_LEFT, {"x-should-retry": "false"})
                )
            turn = Turn()
        if fault is None and isinstance(turn.fault, Fault):
            fault = turn.fault
            if fault.is_status:
                raise self._fault_error(fault, body)
        try:
            _check_expectations(turn, body, number)
        except _ApiError as err:
            raise self._refuse(err) from None
        if fault is not None and fault.kind == "stream_error" and not body.get("stream"):
            # Without a stream there is no error event to send: overload the request instead.
            raise self._fault_error(Fault("overloaded", retry_after=fault.retry_after), body)

        usage = self.cache.account(body)
        reply = _build_reply(
            turn, body, usage, f"msg_fake_{self._next_id('message'):04d}", self._next_tool_id
        )
        delay = turn.delay + (fault.delay if fault is not None and fault.kind == "slow" else 0.0)
        streaming = bool(body.get("stream"))
        dropped_early = (
            fault is not None
            and fault.kind == "drop"
            and (not streaming or fault.after_events == 0)
        )
        record.status = None if dropped_early else 200
        if streaming:
            self._send_stream(exchange, reply, fault, delay)
        else:
            self._send_message(exchange, reply, fault, delay)

    def _take_turn(self, body: dict[str, Any], consume: bool) -> tuple[Turn | None, int]:
        with self._lock:
            if self._turns:
                if not consume:
                    return self._turns[0], self._counters["turn"] + 1
                self._counters["turn"] += 1
                return self._turns.popleft(), self._counters["turn"]
            responder = self.responder
            number = self._counters["turn"] + 1
            if consume:
                self._counters["turn"] += 1
        if responder is None:
            return None, number
        turn = responder(body)
        if turn is not None and not isinstance(turn, Turn):
            raise TypeError(f"the responder must return a Turn or None, not {type(turn).__name__}")
        return turn, number

    def _fault_error(self, fault: Fault, body: Mapping[str, Any]) -> _ApiError:
        status, error_type, template = _STATUS_FAULTS[fault.kind]
        tokens = max(
            estimate_request_tokens(body) if isinstance(body, Mapping) else 0,
            CONTEXT_LIMIT_TOKENS + 1,
        )
        message = fault.message or template.format(tokens=tokens, limit=CONTEXT_LIMIT_TOKENS)
        headers: dict[str, str] = {}
        if fault.retry_after is not None and (status == 429 or status >= 500):
            headers["retry-after"] = f"{fault.retry_after:g}"
        if fault.should_retry is not None:
            headers["x-should-retry"] = "true" if fault.should_retry else "false"
        return _ApiError(status, error_type, message, headers)

    def _send_message(
        self, exchange: _Exchange, reply: _Reply, fault: Fault | None, delay: float
    ) -> None:
        if delay:
            time.sleep(delay)
        if fault is not None and fault.kind == "drop":
            exchange.drop()
            return
        if fault is not None and fault.kind == "garbage":
            exchange.send_bytes(
                200, b"<html>fake_api garbage: this body is not JSON", "application/json"
            )
            return
        exchange.send_json(200, reply.message)

    def _send_stream(
        self, exchange: _Exchange, reply: _Reply, fault: Fault | None, delay: float
    ) -> None:
        kind = fault.kind if fault is not None else None
        limit = fault.after_events if fault is not None else -1
        if kind == "drop" and limit == 0:  # before the status line: a connection error
            exchange.drop()
            return
        if not exchange.start_stream():
            return
        for sent, (event, data) in enumerate(_stream_events(reply)):
            if sent == limit and kind == "drop":
                exchange.drop()
                return
            if sent == limit and kind == "stream_error":
                error = {
                    "type": "error",
                    "error": {"type": "overloaded_error", "message": "Overloaded"},
                }
                exchange.chunk(_sse("error", error))
                exchange.end_stream()
                return
            if sent == limit and kind == "garbage":
                exchange.chunk(b"event: content_block_delta\ndata: {this is not json\n\n")
                exchange.end_stream()
                return
            if delay and sent:
                time.sleep(delay)
            if not exchange.chunk(_sse(event, data)):
                return
        if kind == "drop":  # fewer events than after_events: still never finish cleanly
            exchange.drop()
            return
        exchange.end_stream()


# --------------------------------------------------------------------------- command line


def main(argv: Sequence[str] | None = None) -> int:
    """Serve a script by hand: ``python -m jupyter_memory.testing.fake_api --script turns.json``."""
    parser = argparse.ArgumentParser(
        prog="python -m jupyter_memory.testing.fake_api",
        description="A local Anthropic Messages API that answers from a script of turns.",
    )
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=8765, help="0 picks a free port")
    parser.add_argument("--script", help="JSON file with a list of turns (docs/fake-api.md)")
    parser.add_argument(
        "--echo", action="store_true", help="when the script runs out, echo the last user message"
    )
    parser.add_argument("--min-cache-tokens", type=int, default=0, help="shortest cacheable prefix")
    parser.add_argument(
        "--connection-delay", type=float, default=0.0, metavar="SECONDS",
        help="wait this long on each new connection, as a distant TLS handshake would",
    )
    args = parser.parse_args(argv)

    turns: list[Turn] = []
    if args.script:
        try:
            with open(args.script, encoding="utf-8") as handle:
                turns = load_script(handle.read())
        except (OSError, ValueError) as err:
            print(f"fake_api: cannot load script {args.script}: {err}", file=sys.stderr)
            return 2
    server = FakeAnthropic(
        args.host,
        args.port,
        min_cache_tokens=args.min_cache_tokens,
        responder=echo_responder if args.echo else None,
        connection_delay=max(args.connection_delay, 0.0),
    )
    server.script(turns)
    try:
        server.start()
    except OSError as err:
        print(f"fake_api: cannot listen on {args.host}:{args.port}: {err}", file=sys.stderr)
        return 2
    print(f"fake_api listening on {server.base_url} with {len(turns)} scripted turn(s)", flush=True)
    print(f"  export ANTHROPIC_BASE_URL={server.base_url} ANTHROPIC_API_KEY=test-key", flush=True)
    try:
        while True:
            time.sleep(3600)
    except KeyboardInterrupt:
        pass
    finally:
        server.stop()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
