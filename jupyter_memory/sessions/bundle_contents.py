"""What a bundle holds: each file with its kind and size, and what was left out and why.

A bundle is handed to someone else, so the person packing it sees every file before the
zip is written, and the person unpacking it sees the same listing before anything lands
on their disk. The rules for memories live here too: private memories (and the person's
own instruction files) go in only when asked for with ``--include-private``; team
memories go in as the team folder shares them (never a conflict copy, never a file the
team folder holds back); a file with a credential never goes in.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from jupyter_memory.memdir.scopes import TEAM_PREFIX

__all__ = [
    "DATA",
    "INCLUDE_PRIVATE",
    "INSTRUCTIONS",
    "KINDS",
    "NOTEBOOK",
    "PRIVATE_INSTRUCTIONS",
    "PRIVATE_MEMORY",
    "RECORDING",
    "TEAM_MEMORY",
    "Contents",
    "Item",
    "ReplayPlan",
    "instruction_kind",
    "listed_left_out",
    "memory_verdict",
]

NOTEBOOK = "notebook"
RECORDING = "recording"
PRIVATE_MEMORY = "private memory"
TEAM_MEMORY = "team memory"
INSTRUCTIONS = "instruction file"
#: The person's own instructions: user scope (``<base>/CLAUDE.md``, rules) and
#: ``CLAUDE.local.md`` with what they import.
PRIVATE_INSTRUCTIONS = "private instruction file"
DATA = "data file"
KINDS = (NOTEBOOK, RECORDING, PRIVATE_MEMORY, TEAM_MEMORY, INSTRUCTIONS, PRIVATE_INSTRUCTIONS,
         DATA)
#: The command line's flag that lets private files in (``include_private=True`` in Python).
INCLUDE_PRIVATE = "--include-private"
#: Instruction scopes that belong to the person, not the project (context/instructions.py).
_PRIVATE_SCOPES = frozenset({"user", "local"})


@dataclass(frozen=True)
class Item:
    """One file of a bundle: its name (in the zip, or as unpacked), kind and size; a
    ``reason`` when it was left out."""

    name: str
    kind: str
    bytes: int = 0
    reason: str | None = None

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"name": self.name, "kind": self.kind}
        if self.reason is None:
            out["bytes"] = self.bytes
        else:
            out["reason"] = self.reason
        return out


@dataclass
class Contents:
    """What a bundle holds and what its packer left out.

    ``include_private`` is what the packer chose; None for a bundle made before bundles
    recorded it (such a bundle may hold its author's private memories: pack took the
    whole memory folder then).
    """

    included: list[Item] = field(default_factory=list)
    left_out: list[Item] = field(default_factory=list)
    include_private: bool | None = False

    @property
    def older(self) -> bool:
        return self.include_private is None

    @property
    def total_bytes(self) -> int:
        return sum(item.bytes for item in self.included)

    def count(self, kind: str) -> int:
        return sum(1 for item in self.included if item.kind == kind)

    def to_json(self) -> dict[str, Any]:
        return {"include_private": self.include_private,
                "included": [i.to_json() for i in self.included],
                "left_out": [i.to_json() for i in self.left_out]}

    def describe(self, what: str) -> str:
        """The listing people read: ``what`` names the bundle (``"The bundle"``)."""
        files = "file" if len(self.included) == 1 else "files"
        lines = []
        if self.older:
            lines.append(
                f"{what} was made before bundles listed what they hold and asked before "
                "packing private memory: it may hold its author's private memories and "
                "personal instructions.")
        lines.append(f"{what} holds {len(self.included)} {files}, "
                     f"{self.total_bytes:,} bytes:")
        width = max((len(i.kind) for i in (*self.included, *self.left_out)), default=0)
        size = max((len(f"{i.bytes:,}") for i in self.included), default=1)
        lines += [f"  {i.kind:<{width}}  {i.bytes:>{size},}  {i.name}" for i in self.included]
        if self.left_out:
            lines.append("Left out:")
            lines += [f"  {i.kind:<{width}}  {i.name}: {i.reason}" for i in self.left_out]
        if self.include_private is False and any(i.kind == PRIVATE_MEMORY for i in self.left_out):
            lines.append(
                f"Private memories are left out (no {INCLUDE_PRIVATE}): a replay stops where "
                "the recorded session used one (a memory the agent read, or one recall "
                "attached).")
        return "\n".join(lines)


def instruction_kind(entry: str, scope: object) -> str:
    """The kind of an instruction file: the person's own (``config/…``, or a user or
    ``CLAUDE.local.md`` scope) or the project's."""
    if entry.startswith("config/") or scope in _PRIVATE_SCOPES:
        return PRIVATE_INSTRUCTIONS
    return INSTRUCTIONS


def memory_verdict(rel: str, text: str, *, include_private: bool) -> tuple[str, str | None]:
    """The kind of memdir file ``rel`` and why it stays out of a bundle (None: it goes in).

    ``rel`` is relative to the memdir (``team/…`` for the team folder). Checked in order:
    a non-markdown file, a conflict copy, a credential (the guard, over the text and the
    file name), a file the team folder holds back, then the private flag.
    """
    from jupyter_memory.memdir.guard import find_secrets
    from jupyter_memory.memdir.store import name_pieces
    from jupyter_memory.memdir.team.checks import is_conflict_copy, text_problems

    team = rel.startswith(TEAM_PREFIX)
    kind = TEAM_MEMORY if team else PRIVATE_MEMORY
    if not rel.endswith(".md"):
        return kind, "not a memory file (only .md files are packed)"
    if is_conflict_copy(rel):
        return kind, ("a conflict copy a team sync kept beside the shared version; never "
                      "packed (merge it into the shared file first)")
    findings = find_secrets(text)
    if findings:
        return kind, f"holds what looks like a credential ({_where(findings)}); never packed"
    if find_secrets(name_pieces(rel)):
        return kind, "its file name holds what looks like a credential; never packed"
    if team:
        held = text_problems(text, rel[len(TEAM_PREFIX):])
        if held:
            return kind, f"the team folder holds it back: {'; '.join(held)}"
        return kind, None
    if not include_private:
        return kind, f"private; packed only with {INCLUDE_PRIVATE}"
    return kind, None


def _where(findings: Iterable[Any]) -> str:
    found = list(findings)
    shown = ", ".join(f"{f.kind} on line {f.line}" for f in found[:3])
    return shown + (f" and {len(found) - 3} more" if len(found) > 3 else "")


def listed_left_out(manifest: Mapping[str, Any]) -> list[Item]:
    """What a manifest says its packer left out (text someone else wrote: shown, never
    acted on). Older bundles list bare paths."""
    raw = manifest.get("left_out")
    out: list[Item] = []
    for entry in raw if isinstance(raw, list) else []:
        if isinstance(entry, str):
            out.append(Item(entry, INSTRUCTIONS, reason="outside the project and config folders"))
        elif isinstance(entry, dict):
            out.append(Item(str(entry.get("name", "?")), str(entry.get("kind", "?")),
                            reason=str(entry.get("reason", "?"))))
    return out


@dataclass(frozen=True)
class ReplayPlan:
    """What a replay runs, for the person to read before saying yes: every code cell of
    the notebook, and where the replayed agent's tools may reach."""

    notebook: Path
    folder: Path
    cells: tuple[str, ...]
    """The source of each code cell, in order."""
    project: Path
    """The folder the replayed session takes as its project (the unpack folder, or the
    git repository around it)."""

    def describe(self) -> str:
        count = len(self.cells)
        cells = "code cell" if count == 1 else "code cells"
        lines = [
            f"Replaying {self.notebook.name} runs its {count} {cells} as you: with your "
            "permissions, your files and your network. jupyter-memory replays it untrusted, "
            "which stops our code from using the folder's settings (hooks, imports from "
            "outside); it does not limit what the cells themselves do.",
        ]
        if self.project != self.folder:
            lines.append(
                f"{self.folder} is inside the git repository {self.project}, so the replayed "
                "agent's tools take that repository as the project: tool calls in the "
                "recording can read files anywhere in it. Unpack outside a repository to "
                "keep the replay inside the unpacked folder.")
        width = len(str(count))
        for number, source in enumerate(self.cells, 1):
            first, *rest = source.splitlines() or [""]
            lines.append(f"  [{number:>{width}}] {first}")
            lines += [f"  {' ' * (width + 2)} {line}" for line in rest]
        return "\n".join(lines)

    def question(self) -> str:
        count = len(self.cells)
        return (f"{self.describe()}\nRun {'this cell' if count == 1 else f'these {count} cells'}"
                "? [y/N] ")
