"""The reply to a scripted turn: the message the API would send for the request, with
stop sequences, ``max_tokens`` and usage applied, and the deltas a stream is built from."""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from jupyter_memory.localapi.cache import CacheUsage
from jupyter_memory.localapi.script import Turn
from jupyter_memory.localapi.tokens import (
    BYTES_PER_TOKEN,
    compact,
    estimate_output_tokens,
    text_tokens,
)

__all__ = ["Reply", "build_reply"]


@dataclass
class Reply:
    """The message of a reply, and per content block the deltas that stream it."""

    message: dict[str, Any]
    deltas: list[list[dict[str, Any]]]  # per content block, the deltas that build it


def build_reply(
    turn: Turn,
    body: Mapping[str, Any],
    usage: CacheUsage,
    message_id: str,
    next_tool_id: Callable[[], str],
) -> Reply:
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
        call_tokens = sum(text_tokens(c.name + compact(c.input)) for c in calls)
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
    output_tokens = max_tokens if truncated else estimate_output_tokens(content)
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
    return Reply(message, deltas)


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


def _split_json(text: str) -> list[str]:
    """Cut a JSON document into several partial_json pieces, as the API streams them."""
    if len(text) < 2:
        return [text]
    count = max(2, math.ceil(len(text) / 16))
    size = math.ceil(len(text) / count)
    return [text[i : i + size] for i in range(0, len(text), size)]
