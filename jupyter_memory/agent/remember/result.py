"""What ``%%remember`` did, and the warning about the relative dates it found."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from jupyter_memory.memdir.dates import RelativeDate

__all__ = ["RememberResult", "date_warning"]


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
        if not self.files:
            lines = ["Nothing was saved."]
            if self.agent_text:
                lines.append(f"The agent said: {self.agent_text}")
        else:
            parts = [f"{f} ({'new' if f in self.created else 'updated'})" for f in self.files]
            lines = [f"Saved {', '.join(parts)} in {self.folder}."]
        lines += self.notes
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
