"""What the local server answers with: scripted turns, their tool calls and faults.

A script is a queue of :class:`Turn` objects (or their JSON form, read by
:func:`load_script`; the schema is in ``docs/fake-api.md``). A responder callable such as
``echo.echo_responder`` answers when the script runs out.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

__all__ = [
    "CONTEXT_LIMIT_TOKENS",
    "FAULT_KINDS",
    "STATUS_FAULTS",
    "STOP_REASONS",
    "STREAM_FAULTS",
    "Fault",
    "ToolCall",
    "Turn",
    "load_script",
]

#: The context limit quoted in the "prompt is too long" fault.
CONTEXT_LIMIT_TOKENS = 200_000

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
STATUS_FAULTS: dict[str, tuple[int, str, str]] = {
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
STREAM_FAULTS = frozenset({"drop", "slow", "garbage", "stream_error"})
#: Every fault kind a :class:`Fault` accepts.
FAULT_KINDS = frozenset(STATUS_FAULTS) | STREAM_FAULTS


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
        return self.kind in STATUS_FAULTS

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


def load_script(source: str | Sequence[Mapping[str, Any]]) -> list[Turn]:
    """Parse a script: a JSON text or an already-decoded list of turn objects."""
    data = json.loads(source) if isinstance(source, str) else source
    if not isinstance(data, list):
        raise ValueError("a fake_api script must be a JSON list of turn objects")
    return [Turn.from_dict(item, f"turn {i}") for i, item in enumerate(data)]
