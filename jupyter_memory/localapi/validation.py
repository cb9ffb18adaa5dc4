"""Which requests the local server refuses, and how: the API's own checks (400s in its
wording) and the expectations a scripted turn places on the request it answers."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from jupyter_memory.localapi.cache import CACHE_TTL_SECONDS
from jupyter_memory.localapi.script import Turn
from jupyter_memory.localapi.tokens import Block, canonical_blocks, message_text

__all__ = ["MAX_CACHE_BREAKPOINTS", "ApiError", "check_expectations", "invalid", "validate"]

#: The API's limit on ``cache_control`` breakpoints in one request.
MAX_CACHE_BREAKPOINTS = 4


class ApiError(Exception):
    """An error reply: HTTP status, API error type and message."""

    def __init__(
        self, status: int, error_type: str, message: str, headers: Mapping[str, str] | None = None
    ) -> None:
        super().__init__(message)
        self.status = status
        self.error_type = error_type
        self.message = message
        self.headers = dict(headers or {})


def invalid(message: str) -> ApiError:
    return ApiError(400, "invalid_request_error", message)


def validate(body: Any, *, count_only: bool) -> None:
    """Reject requests the API would reject, with messages in the API's style."""
    if not isinstance(body, dict):
        raise invalid("The request body must be a JSON object.")
    if not isinstance(body.get("model"), str) or not body["model"]:
        raise invalid("model: Field required")
    if not count_only:
        max_tokens = body.get("max_tokens")
        if max_tokens is None:
            raise invalid("max_tokens: Field required")
        if not isinstance(max_tokens, int) or isinstance(max_tokens, bool) or max_tokens < 1:
            raise invalid("max_tokens: Input should be an integer greater than or equal to 1")
        if "stream" in body and not isinstance(body["stream"], bool):
            raise invalid("stream: Input should be a valid boolean")
    messages = body.get("messages")
    if messages is None:
        raise invalid("messages: Field required")
    if not isinstance(messages, list) or not messages:
        raise invalid("messages: at least one message is required")
    _validate_tools(body.get("tools"))
    system = body.get("system")
    if system is not None and not isinstance(system, (str, list)):
        raise invalid("system: Input should be a string or a list of text blocks")
    for i, message in enumerate(messages):
        if not isinstance(message, dict):
            raise invalid(f"messages.{i}: Input should be an object")
        if message.get("role") not in ("user", "assistant"):
            raise invalid(f"messages.{i}.role: Input should be 'user' or 'assistant'")
        content = message.get("content")
        if content is None:
            raise invalid(f"messages.{i}.content: Field required")
        last = i == len(messages) - 1
        if not isinstance(content, (str, list)):
            raise invalid(f"messages.{i}.content: Input should be a string or a list of blocks")
        if not content and not (last and message["role"] == "assistant"):
            raise invalid(
                f"messages.{i}: all messages must have non-empty content except for the "
                "optional final assistant message"
            )
        if isinstance(content, list):
            for j, part in enumerate(content):
                if not isinstance(part, dict) or not isinstance(part.get("type"), str):
                    raise invalid(f"messages.{i}.content.{j}: each block needs a 'type'")
    if messages[0].get("role") != "user":
        raise invalid('messages: first message must use the "user" role')
    _validate_tool_pairs(messages)
    _validate_cache_controls(body)


def _validate_tools(tools: Any) -> None:
    if tools is None:
        return
    if not isinstance(tools, list):
        raise invalid("tools: Input should be a list")
    seen: set[str] = set()
    for i, tool in enumerate(tools):
        name = tool.get("name") if isinstance(tool, dict) else None
        if not isinstance(name, str) or not name:
            raise invalid(f"tools.{i}.name: Field required")
        if name in seen:
            raise invalid(f"tools: Tool names must be unique. Duplicate: {name!r}")
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
                raise invalid(
                    f"messages.{i}.content.{j}: `tool_result` block(s) provided when the previous "
                    "message does not contain any `tool_use` blocks"
                )
            for i, j, p in results:
                if p.get("tool_use_id") not in use_ids:
                    raise invalid(
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
                raise invalid(
                    f"messages.{uses[0][0]}: `tool_use` ids were found without `tool_result` "
                    f"blocks immediately after: {', '.join(map(str, missing))}. Each `tool_use` "
                    "block must have a corresponding `tool_result` block in the next message."
                )


def _validate_cache_controls(body: Mapping[str, Any]) -> None:
    blocks = canonical_blocks(body)
    controls = [b for b in blocks if b.cache_control is not None]
    top = body.get("cache_control")
    count = len(controls) + (1 if isinstance(top, Mapping) else 0)
    if count > MAX_CACHE_BREAKPOINTS:
        raise invalid(
            f"A maximum of {MAX_CACHE_BREAKPOINTS} blocks with cache_control may be provided. "
            f"Found {count}."
        )
    seen_5m = False
    for block in controls + (
        [Block(b"", 0, top, "cache_control")] if isinstance(top, Mapping) else []
    ):
        control = block.cache_control or {}
        if control.get("type") != "ephemeral":
            raise invalid(f"{block.where}.cache_control.type: Input should be 'ephemeral'")
        ttl = control.get("ttl", "5m")
        if ttl not in CACHE_TTL_SECONDS:
            raise invalid(f"{block.where}.cache_control.ttl: Input should be '5m' or '1h'")
        if ttl == "1h" and seen_5m:
            raise invalid(
                "a cache_control entry with ttl='1h' cannot come after one with ttl='5m'"
            )
        seen_5m = seen_5m or ttl == "5m"


def check_expectations(turn: Turn, body: Mapping[str, Any], number: int) -> None:
    """Raise a 400 naming the first expectation of ``turn`` the request does not meet."""
    label = f"fake_api: scripted turn {number}"
    if turn.expect_model is not None and body.get("model") != turn.expect_model:
        raise invalid(
            f"{label} expected model {turn.expect_model!r} but the request used {body.get('model')!r}"
        )
    if turn.expect_user_contains is not None:
        users = [m for m in body.get("messages", []) if m.get("role") == "user"]
        text = message_text(users[-1]) if users else ""
        if turn.expect_user_contains not in text:
            raise invalid(
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
            raise invalid(
                f"{label} expected the system prompt to contain {turn.expect_system_contains!r}; "
                f"it starts: {text[:300]!r}"
            )
    if turn.expect_tools is not None:
        offered = [t.get("name") for t in body.get("tools") or [] if isinstance(t, Mapping)]
        missing = [name for name in turn.expect_tools if name not in offered]
        if missing:
            raise invalid(
                f"{label} expected tools {missing} to be offered; the request offered {offered}"
            )
    if turn.expect is not None and not turn.expect(dict(body)):
        name = getattr(turn.expect, "__name__", repr(turn.expect))
        raise invalid(f"{label}: the request failed the check {name}")
