"""Fenced code blocks, found one way (CommonMark's rules) for every reader of markdown.

An opening fence is three or more backticks or tildes indented at most three spaces (a
backtick fence's info string holds no backtick); it closes only at a line of the same
character, at least as long. So a ``~~~`` block may hold a ``` line, and a ```` block a ```.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

__all__ = ["fence_flags", "fence_open_at_end"]

_FENCE_OPEN = re.compile(r"^ {0,3}(`{3,}|~{3,})(.*)$")


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
