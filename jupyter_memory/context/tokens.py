"""Token counts: an offline estimate, the count-tokens endpoint, and real usage.

The estimate needs no model and no network, so ``%context`` works anywhere. It is
deliberately simple and documented (docs/context.md): ASCII text averages about four
characters a token for Claude models, while CJK and other non-ASCII text is close to
one token a character. Real usage from the last response, when there is one, wins.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from jupyter_memory.context.sdk import ModelClient

#: Per-message framing the API adds around each message (role markers and the like).
MESSAGE_OVERHEAD = 4
#: Framing per tool definition.
TOOL_OVERHEAD = 8


def estimate_tokens(text: str) -> int:
    """Roughly how many tokens ``text`` costs; 0 for empty text."""
    if not text:
        return 0
    if text.isascii():  # the common case, counted in C
        return max(1, (len(text) + 3) // 4)
    ascii_chars = len(text.encode("ascii", "ignore"))
    other = len(text) - ascii_chars
    return max(1, (ascii_chars + 3) // 4 + other)


def block_text(block: Mapping[str, Any]) -> str:
    """The text a content block contributes to the prompt, for estimating."""
    kind = block.get("type")
    if kind == "text":
        return str(block.get("text", ""))
    if kind == "tool_use":
        return str(block.get("name", "")) + json.dumps(block.get("input", {}), ensure_ascii=False)
    if kind == "tool_result":
        content = block.get("content", "")
        if isinstance(content, str):
            return content
        return "".join(block_text(b) for b in content if isinstance(b, Mapping))
    if kind in ("thinking", "redacted_thinking"):
        return str(block.get("thinking", "") or block.get("data", ""))
    return json.dumps(block, ensure_ascii=False, sort_keys=True)


def content_text(content: str | Iterable[Mapping[str, Any]]) -> str:
    if isinstance(content, str):
        return content
    return "".join(block_text(b) for b in content)


def estimate_message(message: Mapping[str, Any]) -> int:
    return MESSAGE_OVERHEAD + estimate_tokens(content_text(message.get("content", "")))


def estimate_messages(messages: Iterable[Mapping[str, Any]]) -> int:
    return sum(estimate_message(m) for m in messages)


def estimate_tool(tool: Mapping[str, Any]) -> int:
    return TOOL_OVERHEAD + estimate_tokens(json.dumps(tool, ensure_ascii=False, sort_keys=True))


@dataclass(frozen=True)
class Usage:
    """Token usage of one response, as the API reports it."""

    input_tokens: int = 0
    output_tokens: int = 0
    cache_read_input_tokens: int = 0
    cache_creation_input_tokens: int = 0
    #: The part of ``cache_creation_input_tokens`` written with the 1-hour lifetime, which
    #: bills 2x input against the 5-minute writes' 1.25x (``usage.cache_creation``).
    cache_creation_1h_input_tokens: int = 0

    @property
    def total_input(self) -> int:
        """Everything the request's prompt cost, cached or not."""
        return self.input_tokens + self.cache_read_input_tokens + self.cache_creation_input_tokens

    @property
    def context_tokens(self) -> int:
        """Tokens the conversation occupies after this response."""
        return self.total_input + self.output_tokens

    def __add__(self, other: Usage) -> Usage:
        return Usage(
            self.input_tokens + other.input_tokens,
            self.output_tokens + other.output_tokens,
            self.cache_read_input_tokens + other.cache_read_input_tokens,
            self.cache_creation_input_tokens + other.cache_creation_input_tokens,
            self.cache_creation_1h_input_tokens + other.cache_creation_1h_input_tokens,
        )

    @classmethod
    def from_api(cls, usage: Any) -> Usage:
        """From an SDK usage object or a plain dict; missing numbers count as 0."""
        if usage is None:
            return cls()
        get = _getter(usage)
        return cls(
            int(get("input_tokens") or 0),
            int(get("output_tokens") or 0),
            int(get("cache_read_input_tokens") or 0),
            int(get("cache_creation_input_tokens") or 0),
            int(_getter(get("cache_creation"))("ephemeral_1h_input_tokens") or 0),
        )

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "input_tokens": self.input_tokens,
            "output_tokens": self.output_tokens,
            "cache_read_input_tokens": self.cache_read_input_tokens,
            "cache_creation_input_tokens": self.cache_creation_input_tokens,
        }
        if self.cache_creation_1h_input_tokens:  # the API's shape; absent when all are 5-minute
            out["cache_creation"] = {
                "ephemeral_5m_input_tokens":
                    self.cache_creation_input_tokens - self.cache_creation_1h_input_tokens,
                "ephemeral_1h_input_tokens": self.cache_creation_1h_input_tokens,
            }
        return out


def _getter(value: Any) -> Callable[[str], Any]:
    """Read fields of an SDK object or its dict form (None reads as nothing)."""
    if value is None:
        return lambda _key: None
    if isinstance(value, Mapping):
        return value.get
    return lambda key: getattr(value, key, None)


def count_tokens_remote(client: ModelClient, body: Mapping[str, Any]) -> int:
    """Ask the endpoint's count-tokens API for the exact size of a request body."""
    fields = {k: body[k] for k in ("model", "messages", "system", "tools") if k in body}
    result = client.messages.count_tokens(**fields)
    return int(result.input_tokens)
