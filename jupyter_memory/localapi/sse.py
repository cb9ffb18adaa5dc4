"""A reply as server-sent events: the event sequence the API streams, and their wire form."""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping
from typing import Any

from jupyter_memory.localapi.reply import Reply

__all__ = ["sse", "stream_events"]


def stream_events(reply: Reply) -> Iterator[tuple[str, dict[str, Any]]]:
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


def sse(event: str, data: Mapping[str, Any]) -> bytes:
    return f"event: {event}\ndata: {json.dumps(data)}\n\n".encode()
