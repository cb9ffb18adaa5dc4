"""What the guard reports: a finding per secret, its masked excerpt, and the set of hits.

:class:`Hits` keeps the spans found so far sorted and disjoint. Rules run most specific
first (a private key block before everything, so no rule claims a piece of one), and a
later hit that overlaps an earlier one is dropped: the text is reported once.
"""

from __future__ import annotations

import bisect
from dataclasses import dataclass

__all__ = ["Hits", "SecretFinding", "excerpt"]


@dataclass(frozen=True)
class SecretFinding:
    """One suspected credential: what it looks like, where, and the line with it masked."""

    kind: str
    line: int  # 1-based
    excerpt: str  # the line, with the secret masked
    start: int  # offsets of the secret in the text
    end: int


class Hits:
    """Disjoint (start, end, kind) spans in order of ``start``."""

    def __init__(self) -> None:
        self.spans: list[tuple[int, int, str]] = []

    def __bool__(self) -> bool:
        return bool(self.spans)

    def overlaps(self, start: int, end: int) -> bool:
        at = bisect.bisect_left(self.spans, (start,))
        return (at < len(self.spans) and self.spans[at][0] < end) or (
            at > 0 and self.spans[at - 1][1] > start
        )

    def add(self, start: int, end: int, kind: str) -> None:
        """Record a hit, unless it overlaps one found before (by a more specific rule)."""
        if start < end and not self.overlaps(start, end):
            self.spans.insert(bisect.bisect_left(self.spans, (start,)), (start, end, kind))


def _mask(secret: str) -> str:
    keep = min(6, len(secret) // 4)
    return f"{secret[:keep]}…[{len(secret)} chars hidden]"


def excerpt(text: str, start: int, end: int, spans: list[tuple[int, int]]) -> str:
    """The line holding ``start``, with every credential found on it masked (not only this one).

    Only a window around the secret is built (the excerpt shows about 110 characters),
    and ``spans`` (sorted, non-overlapping) is searched by bisection, so a text with
    thousands of findings on one long line costs no more per finding than a short one.
    """
    line_start = text.rfind("\n", 0, start) + 1
    line_end = text.find("\n", start)
    if line_end < 0:
        line_end = len(text)
    low, high = max(line_start, start - 160), min(line_end, max(end, start) + 160)
    at = bisect.bisect_left(spans, (low,))
    if at and spans[at - 1][1] > low:
        at -= 1
    pieces: list[str] = []
    position = low
    before_secret = 0
    while at < len(spans) and spans[at][0] < high:
        s_start, s_end = spans[at]
        at += 1
        s_start = max(s_start, low)
        if s_start < position:
            continue
        pieces.append(text[position:s_start])
        if s_start <= start < max(s_end, s_start + 1) and not before_secret:
            before_secret = sum(len(piece) for piece in pieces)
        pieces.append(_mask(text[s_start : min(s_end, high)]))
        position = min(s_end, high)
    pieces.append(text[position:high])
    line = "".join(pieces)
    clipped_left = low > line_start
    stripped = line.lstrip()
    before_secret -= len(line) - len(stripped)
    line = stripped.rstrip()
    if len(line) > 120 or clipped_left or high < line_end:
        begin = max(0, before_secret - 40)
        tail = "…" if begin + 110 < len(line) or high < line_end else ""
        line = ("…" if begin or clipped_left else "") + line[begin : begin + 110] + tail
    return line


