"""Where two JSON values first differ, and that difference in two short lines.

Replay names the first difference when it refuses a request, so a changed prompt or a
changed memory is found without reading two whole requests.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

__all__ = ["MISSING", "describe_difference", "excerpt", "first_difference", "locate_difference"]


def first_difference(recorded: Any, now: Any, path: str = "") -> tuple[str, Any, Any] | None:
    """Where two JSON values first differ: (path like ``messages[2].content[0].text``,
    recorded value, current value), or None when they are equal."""
    found = locate_difference(recorded, now, path, [0])
    return None if found is None else found[:3]


def locate_difference(a: Any, b: Any, path: str, counter: list[int]) -> tuple[str, Any, Any, int] | None:
    """The first difference as (path, recorded, now, values compared up to it): the larger
    that count, the longer two requests agree before they part, which is how replay picks
    the closest recorded exchange. ``counter`` carries the count; start it at ``[0]``."""
    if isinstance(a, Mapping) and isinstance(b, Mapping):
        for key in list(a) + [k for k in b if k not in a]:
            sub = f"{path}.{key}" if path else str(key)
            if key not in a:
                return sub, MISSING, b[key], counter[0]
            if key not in b:
                return sub, a[key], MISSING, counter[0]
            found = locate_difference(a[key], b[key], sub, counter)
            if found is not None:
                return found
        return None
    if isinstance(a, list) and isinstance(b, list):
        for i in range(max(len(a), len(b))):
            sub = f"{path}[{i}]"
            if i >= len(a):
                return sub, MISSING, b[i], counter[0]
            if i >= len(b):
                return sub, a[i], MISSING, counter[0]
            found = locate_difference(a[i], b[i], sub, counter)
            if found is not None:
                return found
        return None
    counter[0] += 1
    if type(a) is type(b) and a == b:
        return None
    return path or "(the whole request)", a, b, counter[0]


class _Missing:
    def __repr__(self) -> str:
        return "(absent)"


#: Stands for the value of a key or list item that one side does not have.
MISSING = _Missing()


def excerpt(value: Any, other: Any, width: int = 60) -> str:
    """A short view of ``value`` centred on where it starts to differ from ``other``."""
    if value is MISSING:
        return "(absent)"
    if not isinstance(value, str):
        text = json.dumps(value, ensure_ascii=False)
        return text if len(text) <= 2 * width else text[: 2 * width] + "…"
    at = 0
    if isinstance(other, str):
        while at < min(len(value), len(other)) and value[at] == other[at]:
            at += 1
    start = max(0, at - width // 2)
    end = min(len(value), start + width)
    piece = value[start:end]
    return ("…" if start else "") + json.dumps(piece, ensure_ascii=False) + ("…" if end < len(value) else "")


def describe_difference(recorded: Any, now: Any) -> str:
    """Two lines naming the first difference, each value shortened around it."""
    found = first_difference(recorded, now)
    if found is None:
        return "The two requests are identical."
    where, old, new = found
    return (
        f"First difference at {where}:\n"
        f"  recorded: {excerpt(old, new)}\n"
        f"  now:      {excerpt(new, old)}"
    )
