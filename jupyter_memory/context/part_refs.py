"""References to stored parts inside any JSON value: each long text kept once.

A tool's output used to sit in a turn record three times (the turn's ``messages``, its
``tool_calls`` and the request part of the message that carried it), and a file read twice
was kept twice. From record version 3, every string of :data:`TEXT_PART_MIN` characters or
more in those places is a **text part**, stored once per session under its digest like any
request part (``request_parts.py``), and the place holds a reference instead::

    {"$part": "sha256:…"}

The same reference stands for any other stored value (a turn's recall decisions, which
repeat from turn to turn). A dict that happens to have the shape of a marker (a tool input
the model wrote as ``{"$part": …}``) is kept as ``{"$literal": {...}}``, so every value
comes back exactly. ``_meta`` (why a message is there, never sent) is kept whole.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

from jupyter_memory.context.json_copy import copy_json

__all__ = [
    "KEPT_WHOLE",
    "LITERAL_KEY",
    "REF_KEY",
    "TEXT_PART_MIN",
    "is_ref",
    "refer",
    "references",
    "resolve",
]

#: Strings this long or longer are stored as text parts. A reference costs about 100
#: bytes in a saved notebook, so a text kept in two places is smaller stored above ~290
#: characters, one kept in three places (a tool result) above ~190.
TEXT_PART_MIN = 256
REF_KEY = "$part"
LITERAL_KEY = "$literal"
#: Keys whose values are kept as they are, never scanned for texts or references.
KEPT_WHOLE = frozenset({"_meta"})

Put = Callable[[Any], str]
Lookup = Callable[[str], Any]


def is_ref(value: Any) -> bool:
    """Whether ``value`` is a reference ``{"$part": DIGEST}``."""
    return isinstance(value, dict) and len(value) == 1 and isinstance(value.get(REF_KEY), str)


def _marker_shaped(value: dict[str, Any]) -> bool:
    return len(value) == 1 and (REF_KEY in value or LITERAL_KEY in value)


def refer(value: Any, put: Put, *, min_chars: int = TEXT_PART_MIN) -> Any:
    """A copy of ``value`` with each string of ``min_chars`` or more characters replaced by
    a reference to the text part ``put`` stored it as (``put(text) -> digest``)."""
    if isinstance(value, str):
        return {REF_KEY: put(value)} if len(value) >= min_chars else value
    if isinstance(value, list):
        return [refer(item, put, min_chars=min_chars) for item in value]
    if isinstance(value, dict):
        out = {k: copy_json(v) if k in KEPT_WHOLE else refer(v, put, min_chars=min_chars)
               for k, v in value.items()}
        return {LITERAL_KEY: out} if _marker_shaped(value) else out
    return value


def resolve(value: Any, lookup: Lookup, missing: Callable[[str], Any], *,
            copied: bool = True) -> Any:
    """``value`` with every reference replaced by the part ``lookup`` finds for it.

    ``missing(digest)`` gives what stands for a part that ``lookup`` does not find (or
    raises). Literal markers are unwrapped. Parts are copied, so the caller owns the
    result; with ``copied=False`` (a display that only reads it) they are shared.
    """
    if isinstance(value, list):
        return [resolve(item, lookup, missing, copied=copied) for item in value]
    if not isinstance(value, dict):
        return value
    if is_ref(value):
        found = lookup(value[REF_KEY])
        if found is None:
            return missing(value[REF_KEY])
        return copy_json(found) if copied and not isinstance(found, str) else found
    if len(value) == 1 and isinstance(value.get(LITERAL_KEY), dict):
        value = value[LITERAL_KEY]
    return {k: (copy_json(v) if copied else v) if k in KEPT_WHOLE
            else resolve(v, lookup, missing, copied=copied) for k, v in value.items()}


def references(value: Any) -> Iterator[str]:
    """The digest of every reference in ``value``, in document order."""
    if isinstance(value, list):
        for item in value:
            yield from references(item)
    elif isinstance(value, dict):
        if is_ref(value):
            yield value[REF_KEY]
            return
        if len(value) == 1 and isinstance(value.get(LITERAL_KEY), dict):
            value = value[LITERAL_KEY]
        for k, v in value.items():
            if k not in KEPT_WHOLE:
                yield from references(v)
