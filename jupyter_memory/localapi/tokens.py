"""The local server's token estimate, and the request as blocks that the estimate and the
prompt cache both read.

The formula is documented in ``docs/fake-api.md``: every input block costs
``3 + ceil(utf8_bytes(payload) / 4)``. It is not the real tokenizer, only a stable,
easily predicted stand-in so tests can state exact numbers.
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

__all__ = [
    "BLOCK_OVERHEAD_TOKENS",
    "BYTES_PER_TOKEN",
    "Block",
    "canonical_blocks",
    "compact",
    "estimate_output_tokens",
    "estimate_request_tokens",
    "message_text",
    "payload",
    "strip_cache_control",
    "text_tokens",
]

#: Every input block costs this much framing on top of its payload.
BLOCK_OVERHEAD_TOKENS = 3
#: Payload bytes (UTF-8) per token, rounded up per block.
BYTES_PER_TOKEN = 4


def compact(value: Any) -> str:
    """The one JSON spelling used for keys and payloads: sorted keys, no spaces."""
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def strip_cache_control(block: Mapping[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in block.items() if k != "cache_control"}


def text_tokens(text: str) -> int:
    """Tokens for a payload: its UTF-8 length divided by four, rounded up."""
    return math.ceil(len(text.encode("utf-8")) / BYTES_PER_TOKEN)


def payload(section: str, block: Mapping[str, Any]) -> str:
    """The text of a block that the token estimate charges for."""
    if section == "tools":
        return compact(strip_cache_control(block))
    kind = block.get("type")
    if kind == "text":
        return str(block.get("text", ""))
    if kind == "thinking":
        return str(block.get("thinking", ""))
    if kind == "tool_use":
        return str(block.get("name", "")) + compact(block.get("input", {}))
    if kind == "tool_result":
        content = block.get("content", "")
        if isinstance(content, str):
            return content
        if isinstance(content, list):
            return "".join(payload("messages", p) for p in content if isinstance(p, Mapping))
        return ""
    return compact(strip_cache_control(block))


@dataclass(frozen=True)
class Block:
    """One input block: its cache key, its estimated tokens, its breakpoint and where it is."""

    key: bytes
    tokens: int
    cache_control: Mapping[str, Any] | None
    where: str


def canonical_blocks(body: Mapping[str, Any]) -> list[Block]:
    """The request as the cache sees it: tools, then system, then message content."""
    blocks: list[Block] = []

    def add(section: str, role: str, block: Mapping[str, Any], where: str) -> None:
        key = compact([section, role, strip_cache_control(block)]).encode("utf-8")
        tokens = BLOCK_OVERHEAD_TOKENS + text_tokens(payload(section, block))
        control = block.get("cache_control")
        blocks.append(Block(key, tokens, control if isinstance(control, Mapping) else None, where))

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
    return sum(b.tokens for b in canonical_blocks(body))


def estimate_output_tokens(blocks: Iterable[Mapping[str, Any]]) -> int:
    """Tokens of a reply's content blocks (at least one)."""
    return max(1, sum(text_tokens(payload("messages", b)) for b in blocks))


def message_text(message: Mapping[str, Any]) -> str:
    """The text a message carries, as the estimate reads it (string or blocks)."""
    content = message.get("content")
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "".join(payload("messages", p) for p in content if isinstance(p, Mapping))
    return ""
