"""``%%remember`` without a model: the fields as given (direct), or derived (offline)."""

from __future__ import annotations

import datetime as _dt

from jupyter_memory.agent.remember.derivation import derive
from jupyter_memory.agent.remember.result import RememberResult
from jupyter_memory.memdir.dates import find_relative_dates
from jupyter_memory.memdir.store import MemoryStore, WriteResult

__all__ = ["remember_direct", "remember_offline"]


def remember_direct(
    store: MemoryStore, body: str, *, name: str, description: str, type: str,
    file: str | None = None, today: _dt.date | None = None, hook: str | None = None,
    exist_ok: bool = False,
) -> RememberResult:
    """Write the memory exactly as given (no model); an existing file is an error unless
    ``exist_ok`` (then it is updated). ``hook`` is the index line's text."""
    result: WriteResult = store.create(name, description, type, body, file=file, hook=hook,
                                       provenance="user", exist_ok=exist_ok)
    out = RememberResult("direct", store.memdir, [result.file],
                         [result.file] if result.created else [])
    out.notes += result.messages
    out.dates = find_relative_dates(body, today)
    return out


def remember_offline(
    store: MemoryStore, body: str, *, name: str | None = None, description: str | None = None,
    type: str | None = None, file: str | None = None, reason: str = "",
    today: _dt.date | None = None,
) -> RememberResult:
    """Derive what is missing by fixed rules, write it, and say what was guessed."""
    derived = derive(body, name=name, description=description, type=type)
    out = remember_direct(store, body, name=derived.name, description=derived.description,
                          type=derived.type, file=file, today=today)
    out.how = "offline"
    if derived.guessed:
        bits = []
        if "type" in derived.guessed:
            bits.append(f"type {derived.type} ({derived.type_reason})")
        if "name" in derived.guessed:
            bits.append(f"name {derived.name!r}")
        if "description" in derived.guessed:
            bits.append(f"description {derived.description!r}")
        why = f"{reason} " if reason else ""
        out.notes.insert(0, (
            f"{why}Derived without a model: {'; '.join(bits)}. Pass --type, --name and "
            "--description to choose them, or fix them with %memory edit."
        ).strip())
    return out
