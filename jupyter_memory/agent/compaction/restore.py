"""What comes back after a compaction: recently read files and the instruction file.

The summary names files but not their contents, so the files the agent read most
recently are read again from disk and attached (at most :data:`MAX_FILES`, each cut at
:data:`FILE_TOKENS`, all together within :data:`TOTAL_TOKENS`). The record of files
read is then cleared, so anything else is read again before it is edited. The
project's instruction file is re-read from disk, and path-scoped rules wait for a
matching read again (docs/reference.md#instruction-memory and #compaction).
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from jupyter_memory.context import prompts
from jupyter_memory.context.assemble import META_KEY
from jupyter_memory.context.tokens import estimate_tokens
from jupyter_memory.errors import PathRefused
from jupyter_memory.memdir.gateway import Root, Roots

if TYPE_CHECKING:
    from jupyter_memory.agent.host import SessionHost

MAX_FILES = 5
FILE_TOKENS = 5_000
TOTAL_TOKENS = 50_000
#: ``_meta.kind`` of a re-attached file.
FILE_KIND = "compact_file"


@dataclass(frozen=True)
class RestoredFile:
    path: Path
    tokens: int
    truncated: bool
    message: dict[str, Any]


def _real(path: str | Path, root: Path) -> Path:
    p = Path(path).expanduser()
    if not p.is_absolute():
        p = root / p
    return Path(os.path.realpath(p))


def read_paths(messages: Sequence[dict[str, Any]], root: Path) -> list[Path]:
    """Files named by Read calls in ``messages``, most recent first, each once."""
    out: list[Path] = []
    for message in reversed(messages):
        if message.get("role") != "assistant" or not isinstance(message.get("content"), list):
            continue
        for block in reversed(message["content"]):
            if block.get("type") == "tool_use" and block.get("name") == "Read":
                raw = (block.get("input") or {}).get("file_path")
                if isinstance(raw, str) and raw:
                    path = _real(raw, root)
                    if path not in out:
                        out.append(path)
    return out


def recent_files(
    history: Sequence[dict[str, Any]],
    read_record: Iterable[Path],
    root: Path,
    *,
    exclude: Iterable[Path] = (),
) -> list[Path]:
    """Candidates to re-attach, most recent first.

    The order comes from the Read calls in the conversation; files in the read record
    that no Read call names (written or edited ones) follow, newest record entry first.
    """
    recorded = [Path(os.path.realpath(p)) for p in read_record]
    skip = {Path(os.path.realpath(p)) for p in exclude}
    ordered = [p for p in read_paths(history, root) if p in recorded]
    ordered += [p for p in reversed(recorded) if p not in ordered]
    return [p for p in ordered if p not in skip]


def _numbered(lines: list[str], first: int = 1) -> str:
    return "\n".join(f"{n:>6}\t{line}" for n, line in enumerate(lines, first))


def render_file(path: Path, root: Root, limit: int = FILE_TOKENS) -> tuple[str, int, bool] | None:
    """The file (read through ``root``) as numbered lines within ``limit`` tokens:
    (text, tokens, truncated)."""
    try:
        raw = root.read(path)
    except OSError:
        return None
    if b"\0" in raw[:8192]:
        return None  # binary: nothing useful to show
    lines = raw.decode("utf-8", errors="replace").splitlines()
    shown: list[str] = []
    tokens = 0
    for line in lines:
        cost = estimate_tokens(f"{len(shown) + 1:>6}\t{line}\n")
        if tokens + cost > limit:
            break
        shown.append(line)
        tokens += cost
    truncated = len(shown) < len(lines)
    text = _numbered(shown) if shown else "(the file is empty)"
    if truncated:
        text += (
            f"\n\n[Cut at about {limit:,} tokens: lines 1–{len(shown)} of {len(lines)} are "
            f"shown. Read {path} with an offset for the rest.]"
        )
    return text, estimate_tokens(text), truncated


@dataclass(frozen=True)
class Restored:
    """The files re-attached, and the paths refused because they lie outside the roots."""

    files: list[RestoredFile]
    skipped: list[str]

    def note(self, roots: Roots) -> str | None:
        """One line naming the skipped paths, or None."""
        if not self.skipped:
            return None
        count = len(self.skipped)
        return (f"skipped re-reading {count} file{'s' if count != 1 else ''} a compaction record "
                f"named outside {roots.describe()}: {', '.join(self.skipped)}")


def restore_files(candidates: Sequence[Path | str], roots: Roots) -> Restored:
    """Re-read up to :data:`MAX_FILES` candidates within the token budgets.

    Every path is resolved through the gateway against ``roots`` (the session's): a
    compaction record in a saved notebook is data anyone can write, so a path outside
    them, or reached through a link that leads out, is never read, only named in
    :attr:`Restored.skipped`.
    """
    restored: list[RestoredFile] = []
    skipped: list[str] = []
    total = 0
    project = roots.get("project")
    for raw in candidates:
        if len(restored) >= MAX_FILES:
            break
        given = os.path.expanduser(os.fspath(raw))
        if not os.path.isabs(given) and project is not None:  # as the Read tool takes it
            given = os.path.join(project.real, given)
        try:
            root, path = roots.locate(Path(os.path.abspath(given)))
        except PathRefused:
            skipped.append(os.fspath(raw))
            continue
        rendered = render_file(path, root)
        if rendered is None:
            continue
        text, tokens, truncated = rendered
        if total + tokens > TOTAL_TOKENS:
            continue
        total += tokens
        body = prompts.system_reminder(
            f"Before the conversation was compacted you had read {path}. "
            f"Its contents now, read again from disk:\n\n{text}"
        )
        message = {
            "role": "user",
            "content": [{"type": "text", "text": body}],
            META_KEY: {"kind": FILE_KIND, "path": str(path), "tokens": tokens,
                       "truncated": truncated},
        }
        restored.append(RestoredFile(path, tokens, truncated, message))
    return Restored(restored, skipped)


def reset_read_record(ctx: Any, restored: Sequence[RestoredFile]) -> None:
    """Forget which files were read, except those whose contents were just attached."""
    ctx.read_files.clear()
    for item in restored:
        try:
            ctx.read_files[item.path] = item.path.stat().st_mtime
        except OSError:
            continue


def instruction_paths(instructions: Any) -> set[Path]:
    files = [*getattr(instructions, "files", []), *getattr(instructions, "activated", [])]
    return {Path(os.path.realpath(f.path)) for f in files}


def reread_instructions(session: SessionHost) -> Path | None:
    """Re-read the project instruction file from disk into the session's context.

    Path-scoped rules and subfolder files activated by reads are forgotten; they come
    back when a matching file is read again. Returns the file re-read, if any.
    """
    from jupyter_memory.context.instructions import project_instruction_file

    inst = session.instructions
    inst.reset_activations()
    path = project_instruction_file(inst)
    if path is not None:
        fresh = inst.reload_file(path, "project")
        target = Path(os.path.realpath(path))
        dropped = {target}
        kept: list[Any] = []
        at: int | None = None
        for f in inst.files:
            real = Path(os.path.realpath(f.path))
            parent = Path(os.path.realpath(f.imported_from)) if f.imported_from else None
            if real == target or (parent is not None and parent in dropped):
                dropped.add(real)
                at = len(kept) if at is None else at
                continue
            kept.append(f)
        at = len(kept) if at is None else at
        kept[at:at] = fresh
        inst.files[:] = kept
    session.refresh_context()
    return path
