"""The local server's prompt cache: which input tokens a request reads, writes or pays
for fresh, by the rule documented in ``docs/fake-api.md``."""

from __future__ import annotations

import hashlib
import threading
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from jupyter_memory.localapi.tokens import canonical_blocks, compact

__all__ = ["CACHE_LOOKBACK_BLOCKS", "CACHE_TTL_SECONDS", "CacheUsage", "PromptCache"]

#: How many block positions, counting the breakpoint itself, a cache read may end at.
CACHE_LOOKBACK_BLOCKS = 20
#: Cache lifetimes by ``cache_control.ttl``; each read refreshes the entry.
CACHE_TTL_SECONDS = {"5m": 300.0, "1h": 3600.0}


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
        blocks = canonical_blocks(body)
        controls: dict[int, Mapping[str, Any]] = {
            i: b.cache_control for i, b in enumerate(blocks) if b.cache_control is not None
        }
        top = body.get("cache_control")
        if isinstance(top, Mapping) and blocks:
            controls.setdefault(len(blocks) - 1, top)

        cumulative: list[int] = []
        hashes: list[str] = []
        digest = hashlib.sha256(compact(["model", body.get("model")]).encode("utf-8"))
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
