"""``%%remember``: turn a piece of text into one memory (docs/reference.md#quick-add).

Three ways to file it, from cheapest to smartest:

* **direct** — name, description and type are all given: the store writes the file.
* **offline** — no model (or ``--offline``): a name, description and type are derived
  from the text by fixed rules (``derivation``), so the same text always gives the same
  memory, and the person is told what was guessed.
* **agent** — a short side run of the model with the memory tools only (``filing``): it
  picks the type, writes a specific description, reads existing memories and updates
  one instead of adding a duplicate. When it files nothing (an echoing endpoint, a model
  that only answers), ``MemoryNotFiled`` fails the cell with how to save it by hand.

Whatever path is taken, relative dates ("yesterday", "上周", "先週") are flagged with the
absolute date they stand for (``result.date_warning``), because a memory outlives the
day it was written. ``stores.scope_store`` is the store a ``--scope`` writes to.
"""

from __future__ import annotations

from jupyter_memory.agent.remember.derivation import Derived, derive, guess_type
from jupyter_memory.agent.remember.filing import (
    REMEMBER_SYSTEM,
    remember_prompt,
    remember_with_agent,
)
from jupyter_memory.agent.remember.offline import remember_direct, remember_offline
from jupyter_memory.agent.remember.result import (
    BY_HAND,
    MemoryNotFiled,
    RememberResult,
    date_warning,
)
from jupyter_memory.agent.remember.stores import scope_store
from jupyter_memory.memdir.dates import RelativeDate, find_relative_dates

__all__ = [
    "BY_HAND",
    "REMEMBER_SYSTEM",
    "Derived",
    "MemoryNotFiled",
    "RelativeDate",
    "RememberResult",
    "date_warning",
    "derive",
    "find_relative_dates",
    "guess_type",
    "remember_direct",
    "remember_offline",
    "remember_prompt",
    "remember_with_agent",
    "scope_store",
]
