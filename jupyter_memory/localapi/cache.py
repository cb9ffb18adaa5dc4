"""The local server's prompt cache: which input tokens a request reads, writes or pays
for fresh, billed by the rules the API documents (``docs/fake-api.md``, "Prompt cache").

What it models: a cache entry per breakpoint, keyed on the hash of everything before it
(per model); the lookback that finds an earlier entry up to 20 blocks before a
breakpoint; each model's minimum cacheable length, below which a breakpoint is neither
written nor read; the 5-minute and 1-hour lifetimes on the server's clock, a read
restarting its entry's; and tokens read and written accounted per breakpoint.
"""

from __future__ import annotations

import hashlib
import threading
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from jupyter_memory.localapi.tokens import canonical_blocks, compact

__all__ = [
    "CACHE_LOOKBACK_BLOCKS",
    "CACHE_TTL_SECONDS",
    "MIN_CACHEABLE_SOURCE",
    "MIN_CACHEABLE_TOKENS",
    "BreakpointUsage",
    "CacheUsage",
    "PromptCache",
    "min_cacheable_tokens",
]

#: How many block positions, counting the breakpoint itself, a cache read may end at: the
#: API checks the block boundaries up to about 20 blocks before each breakpoint.
CACHE_LOOKBACK_BLOCKS = 20
#: Cache lifetimes by ``cache_control.ttl``; each read restarts the entry's lifetime.
CACHE_TTL_SECONDS = {"5m": 300.0, "1h": 3600.0}

MIN_CACHEABLE_SOURCE = "https://platform.claude.com/docs/en/build-with-claude/prompt-caching"
#: The minimum cacheable prompt length per model, by model id prefix (the longest matching
#: prefix wins, so a dated id or a point release finds its family, as in
#: ``context/models.py``). From Anthropic's prompt-caching documentation
#: (:data:`MIN_CACHEABLE_SOURCE`) as quoted on 2026-12-01; the 5.1/5.2/5.5 point releases
#: were not listed and take their family's value. A prefix shorter than this, counted
#: with the server's token estimate, is neither written nor read.
MIN_CACHEABLE_TOKENS: dict[str, int] = {
    "claude-fable-5": 512,
    "claude-mythos-5": 512,
    "claude-opus-5": 512,
    "claude-sonnet-5": 1024,
    "claude-opus-4-8": 1024,
    "claude-opus-4-7": 2048,
    "claude-opus-4-6": 4096,
    "claude-opus-4-5": 4096,
    "claude-opus-4-1": 1024,
    "claude-opus-4": 1024,
    "claude-sonnet-4": 1024,
    "claude-3-7-sonnet": 1024,
    "claude-3-5-sonnet": 1024,
    "claude-3-opus": 1024,
    "claude-haiku-4-5": 4096,
    "claude-3-5-haiku": 2048,
    "claude-3-haiku": 2048,
}


def min_cacheable_tokens(model: str) -> int:
    """The minimum cacheable length for ``model``; an unknown model gets the largest one,
    so the local server never caches what the API might not."""
    best = max((p for p in MIN_CACHEABLE_TOKENS if model.startswith(p)), key=len, default=None)
    return MIN_CACHEABLE_TOKENS[best] if best else max(MIN_CACHEABLE_TOKENS.values())


@dataclass(frozen=True)
class BreakpointUsage:
    """What one breakpoint did: the tokens of its segment (from the previous breakpoint,
    or the start, up to and including its block) that were read or written."""

    #: Where its block is, e.g. ``system.1`` or ``messages.4.content.0``.
    where: str
    ttl: str
    #: Tokens from the start of the request up to and including this block.
    prefix_tokens: int
    read: int = 0
    written: int = 0
    #: False when ``prefix_tokens`` is under the model's minimum: not written, not read.
    cacheable: bool = True


@dataclass(frozen=True)
class CacheUsage:
    """How one request's input tokens split between fresh input, cache reads and writes."""

    input_tokens: int
    cache_read_input_tokens: int
    cache_creation_input_tokens: int
    ephemeral_5m_input_tokens: int = 0
    ephemeral_1h_input_tokens: int = 0
    #: Every breakpoint of the request, in order.
    breakpoints: tuple[BreakpointUsage, ...] = ()
    #: Where the prefix read from the cache ends (a block location), or None.
    read_until: str | None = None
    #: The minimum cacheable length this request was billed with.
    min_tokens: int = 0

    @property
    def total(self) -> int:
        return self.input_tokens + self.cache_read_input_tokens + self.cache_creation_input_tokens


class PromptCache:
    """Prefix cache keyed on the hash of the canonical request up to each breakpoint.

    The longest prefix whose hash was stored earlier and has not expired is read (and its
    lifetime restarted); it may end at a breakpoint or up to 19 blocks before one, so a
    breakpoint that moves to the newest message still reads the previous turn's entry.
    Everything after it up to the last breakpoint is written, with an entry stored for
    every breakpoint. ``min_tokens`` is the minimum cacheable length for every model;
    None (the default) takes each model's own from :data:`MIN_CACHEABLE_TOKENS`.
    """

    def __init__(self, clock: Callable[[], float], min_tokens: int | None = None) -> None:
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

    def minimum(self, model: str) -> int:
        """The minimum cacheable length a request for ``model`` is billed with."""
        return min_cacheable_tokens(model) if self.min_tokens is None else self.min_tokens

    def account(self, body: Mapping[str, Any]) -> CacheUsage:
        """Split the request's tokens into read, written and fresh, updating the cache."""
        blocks = canonical_blocks(body)
        controls: dict[int, Mapping[str, Any]] = {
            i: b.cache_control for i, b in enumerate(blocks) if b.cache_control is not None
        }
        top = body.get("cache_control")
        if isinstance(top, Mapping) and blocks:
            controls.setdefault(len(blocks) - 1, top)
        minimum = self.minimum(str(body.get("model") or ""))

        cumulative: list[int] = []
        hashes: list[str] = []
        digest = hashlib.sha256(compact(["model", body.get("model")]).encode("utf-8"))
        running = 0
        in_messages = False
        for block in blocks:
            if not in_messages and block.where.startswith("messages."):
                # The API keys the messages' cache on the tool choice and the thinking
                # settings too: changing either leaves tools and system cached, not messages.
                in_messages = True
                settings = compact(["messages", body.get("tool_choice"), body.get("thinking")])
                digest.update(settings.encode("utf-8"))
            running += block.tokens
            cumulative.append(running)
            digest.update(len(block.key).to_bytes(8, "big") + block.key)
            hashes.append(digest.copy().hexdigest())

        points = sorted(controls)
        live = [i for i in points if cumulative[i] >= minimum]
        candidates = {
            i
            for point in live
            for i in range(max(0, point - CACHE_LOOKBACK_BLOCKS + 1), point + 1)
            if cumulative[i] >= minimum
        }
        now = self._clock()
        with self._lock:
            self._entries = {h: e for h, e in self._entries.items() if e[0] > now}
            read_end = -1
            for i in sorted(candidates, reverse=True):
                entry = self._entries.get(hashes[i])
                if entry is not None:
                    read_end = i
                    self._entries[hashes[i]] = (now + entry[1], entry[1])
                    break
            for i in live:
                ttl = CACHE_TTL_SECONDS[_ttl_name(controls[i])]
                old = self._entries.get(hashes[i])
                if old is not None and old[1] > ttl:  # a longer lifetime is kept
                    ttl = old[1]
                self._entries[hashes[i]] = (now + ttl, ttl)

        read = cumulative[read_end] if read_end >= 0 else 0
        written = {"5m": 0, "1h": 0}
        accounted: list[BreakpointUsage] = []
        previous = stored = 0  # where the previous breakpoint ends; the previous cacheable one
        for i in points:
            ttl_name = _ttl_name(controls[i])
            end = cumulative[i]
            cacheable = end >= minimum
            seg_read = max(0, min(end, read) - previous)
            # A write runs from the read prefix (or the last entry stored) to the breakpoint.
            seg_written = end - max(stored, read) if cacheable and end > read else 0
            written[ttl_name] += seg_written
            accounted.append(BreakpointUsage(blocks[i].where, ttl_name, end, seg_read,
                                             seg_written, cacheable))
            previous = end
            if cacheable:
                stored = end
        total = cumulative[-1] if cumulative else 0
        creation = written["5m"] + written["1h"]
        return CacheUsage(
            input_tokens=total - read - creation,
            cache_read_input_tokens=read,
            cache_creation_input_tokens=creation,
            ephemeral_5m_input_tokens=written["5m"],
            ephemeral_1h_input_tokens=written["1h"],
            breakpoints=tuple(accounted),
            read_until=blocks[read_end].where if read_end >= 0 else None,
            min_tokens=minimum,
        )


def _ttl_name(control: Mapping[str, Any]) -> str:
    """The lifetime a breakpoint asks for (validation refused any other value)."""
    ttl = str(control.get("ttl", "5m"))
    return ttl if ttl in CACHE_TTL_SECONDS else "5m"
