"""Deep copies of JSON-shaped data (request bodies, turn records, messages).

Every request is copied a few times on its way to the record and the page; the general
``copy.deepcopy`` keeps a memo of every object and dispatches on each type, which made it
a visible share of a turn's own cost, and nbformat's ``NotebookNode`` copies even slower.
"""

from __future__ import annotations

import copy
from typing import Any

__all__ = ["copy_json"]

#: Values copied as themselves (immutable): most of a body's leaves, kept without a call.
_ATOMS = frozenset({str, int, float, bool, type(None)})


def copy_json(value: Any) -> Any:
    """A deep copy of dicts, lists and scalars, several times faster than ``copy.deepcopy``.

    A dict subclass (nbformat's ``NotebookNode``) comes back a plain dict and a list
    subclass a plain list; anything else is deep-copied the general way.
    """
    kind = type(value)
    if kind in _ATOMS:
        return value
    if kind is dict:
        return {k: v if type(v) in _ATOMS else copy_json(v) for k, v in value.items()}
    if kind is list:
        return [v if type(v) in _ATOMS else copy_json(v) for v in value]
    if isinstance(value, dict):
        return {k: copy_json(v) for k, v in value.items()}
    if isinstance(value, list):
        return [copy_json(v) for v in value]
    return copy.deepcopy(value)
