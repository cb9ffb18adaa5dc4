"""Fenced code blocks and code spans, found one way (CommonMark's rules) for every reader
of markdown.

An opening fence is three or more backticks or tildes indented at most three spaces (a
backtick fence's info string holds no backtick); it closes only at a line of the same
character, at least as long. So a ``~~~`` block may hold a ``` line, and a ```` block a ```.

A code span opens at a run of backticks and closes at the next run of exactly as many in
the same paragraph: ````` `` a ` b `` ````` is one span holding a single backtick. Both
scans are linear in the text, whatever it holds: these readers see files others wrote.
"""

from __future__ import annotations

import re
from array import array
from collections.abc import Iterator, Sequence

__all__ = ["code_span_bounds", "code_spans", "fence_flags", "fence_open_at_end"]

_FENCE_OPEN = re.compile(r"^ {0,3}(`{3,}|~{3,})(.*)$")
_BACKTICKS = re.compile(r"`+")
_PARAGRAPH_BREAK = re.compile(r"\n[ \t]*\n")


def _scan(lines: Sequence[str]) -> tuple[list[bool], str | None]:
    flags: list[bool] = []
    fence: str | None = None
    for raw in lines:
        line = raw.rstrip("\r\n")
        if fence is None:
            m = _FENCE_OPEN.match(line)
            if m and not (m.group(1)[0] == "`" and "`" in m.group(2)):
                fence = m.group(1)
                flags.append(True)
            else:
                flags.append(False)
        else:
            flags.append(True)
            stripped = line.strip()
            if (
                len(line) - len(line.lstrip(" ")) <= 3
                and stripped
                and set(stripped) == {fence[0]}
                and len(stripped) >= len(fence)
            ):
                fence = None
    return flags, fence


def fence_flags(lines: Sequence[str]) -> list[bool]:
    """For each line, whether it belongs to a fenced code block (delimiters included)."""
    return _scan(lines)[0]


def fence_open_at_end(lines: Sequence[str]) -> bool:
    """Whether the text ends inside a fenced block that was never closed."""
    return _scan(lines)[1] is not None


def code_spans(text: str) -> Iterator[tuple[int, int]]:
    """``(start, end)`` of each inline code span of ``text``, backticks included, in order."""
    starts, ends = code_span_bounds(text)
    return zip(starts, ends, strict=True)


def code_span_bounds(text: str) -> tuple[array[int], array[int]]:
    """The starts and the ends of the inline code spans of ``text``, backticks included, in
    order, as two flat arrays (a file of backticks makes a span every few bytes).

    A run of backticks opens a span that ends at the next run of the same length within
    the paragraph (a blank line ends it); a run with no such partner is plain text, and
    the search goes on after it. Each run is paired with its partner from a table built
    once, so unclosed runs cost nothing more (looking ahead from every opening run, as a
    plain reading of the rule does, is quadratic in a file of unclosed backticks).
    """
    breaks = [m.start() for m in _PARAGRAPH_BREAK.finditer(text)]
    starts, ends = array("q"), array("q")
    for m in _BACKTICKS.finditer(text):
        starts.append(m.start())
        ends.append(m.end())
    partner = array("q", bytes(8 * len(starts)))  # the closing run's index; 0: none
    later: dict[int, int] = {}  # paragraph * (longest run + 1) + width -> next run's index
    stride = max((e - s for s, e in zip(starts, ends, strict=True)), default=0) + 1
    paragraph = len(breaks)
    for index in range(len(starts) - 1, -1, -1):
        start = starts[index]
        while paragraph and breaks[paragraph - 1] > start:
            paragraph -= 1
        key = paragraph * stride + ends[index] - start
        partner[index] = later.get(key, 0)
        later[key] = index
    span_starts, span_ends = array("q"), array("q")
    index = 0
    while index < len(starts):
        close = partner[index]
        if close:
            span_starts.append(starts[index])
            span_ends.append(ends[close])
            index = close + 1
        else:
            index += 1
    return span_starts, span_ends
