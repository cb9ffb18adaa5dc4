"""Glob patterns as regular expressions over posix relative paths, one translation for every
matcher (the Glob and Grep tools, the ``paths:`` of instruction rules).

``*`` and ``?`` stay inside one folder, ``**/`` spans zero or more folders, ``**`` anything,
``[...]`` a class (``[!...]`` negated). Callers add their own anchoring rules.
"""

from __future__ import annotations

import re

__all__ = ["glob_to_regex"]


def glob_to_regex(pattern: str) -> str:
    """The regex source (unanchored) for ``pattern``."""
    out: list[str] = []
    i = 0
    while i < len(pattern):
        if pattern.startswith("**/", i):
            out.append("(?:[^/]*/)*")
            i += 3
        elif pattern.startswith("**", i):
            out.append(".*")
            i += 2
        elif pattern[i] == "*":
            out.append("[^/]*")
            i += 1
        elif pattern[i] == "?":
            out.append("[^/]")
            i += 1
        elif pattern[i] == "[" and "]" in pattern[i + 2 :]:
            close = pattern.index("]", i + 2)
            inner = pattern[i + 1 : close]
            if inner.startswith("!"):
                inner = "^" + inner[1:]
            out.append("[" + inner.replace("\\", "\\\\") + "]")
            i = close + 1
        else:
            out.append(re.escape(pattern[i]))
            i += 1
    return "".join(out)
