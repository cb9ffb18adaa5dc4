"""Widgets: the context, the budgets and the memory at a glance (docs/widgets.md).

A front end: it may import the core, the core never imports it. Names are loaded on
first use, so ``jupyter_memory.widgets.html`` and ``.data`` (the static fallbacks and the
view state) import without loading ipywidgets.
"""

from __future__ import annotations

import importlib
from typing import Any

_EXPORTS = {
    "BudgetGauges": "gauges",
    "ContextPanel": "show",
    "ContextView": "context_view",
    "MemoryBrowser": "memory_browser",
    "MemoryOff": "show",
    "TurnView": "turn_view",
    "context_html": "html",
    "memories_html": "html",
    "turn_html": "html",
    "gauges_html": "html",
    "show_context": "show",
    "show_memories": "show",
    "show_turn": "show",
}

__all__ = sorted(_EXPORTS)


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(f"{__name__}.{module}"), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted([*globals(), *_EXPORTS])
