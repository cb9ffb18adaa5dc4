"""What ``%%remember`` did, and the warning about the relative dates it found."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from jupyter_memory.errors import JupyterMemoryError
from jupyter_memory.memdir.dates import RelativeDate

__all__ = ["BY_HAND", "MemoryNotFiled", "RememberResult", "date_warning"]

#: How to save a memory the model did not file: every field given, or fixed rules.
BY_HAND = ('Save it by hand with %%remember --type TYPE --name NAME --description "…" (no '
           "model needed), or let fixed rules derive the fields with --offline or after "
           "%sandbox echo.")


class MemoryNotFiled(JupyterMemoryError):
    """``%%remember`` asked the model to file the text and nothing was saved.

    Raised rather than reported, so the cell fails and Run All stops with the fact still in
    the cell. The message is one line (why, then how to save it); the model's own words
    are kept in ``agent_text``, not shown: an endpoint that echoes would show the whole
    filing prompt.
    """

    def __init__(self, why: str, *, agent_text: str = "") -> None:
        super().__init__(f"the memory was not saved: {why.rstrip('.')}. {BY_HAND}")
        self.why = why
        self.agent_text = agent_text


@dataclass
class RememberResult:
    """What ``%%remember`` did, for the magic to report."""

    how: str  # direct | offline | agent
    folder: Path
    files: list[str] = field(default_factory=list)
    created: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    dates: list[RelativeDate] = field(default_factory=list)
    agent_text: str = ""

    @property
    def saved(self) -> bool:
        return bool(self.files)

    def summary(self) -> str:
        """Lines for the person: what was saved where, what was guessed, date warnings."""
        parts = [f"{f} ({'new' if f in self.created else 'updated'})" for f in self.files]
        saved = [f"Saved {', '.join(parts)} in {self.folder}."] if parts else []
        lines = [*saved, *self.notes]
        warning = date_warning(self.dates)
        if warning:
            lines.append(warning)
        return "\n".join(lines)

    def to_json(self) -> dict[str, Any]:
        return {"how": self.how, "folder": str(self.folder), "files": list(self.files),
                "created": list(self.created), "notes": list(self.notes),
                "relative_dates": [d.to_json() for d in self.dates],
                "agent_text": self.agent_text}


def date_warning(found: list[RelativeDate]) -> str | None:
    """One message for the person listing each relative date and its absolute form."""
    if not found:
        return None
    items = "; ".join(f'"{d.phrase}" (line {d.line}) → {d.suggestion}' for d in found)
    many = len(found) > 1
    return (
        f"Relative date{'s' if many else ''} in this memory: {items}. A memory is read long "
        "after it was written, when \"yesterday\" means another day: replace "
        f"{'them with absolute dates' if many else 'it with the absolute date'} "
        "(%memory edit NAME)."
    )
