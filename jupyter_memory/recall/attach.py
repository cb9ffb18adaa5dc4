"""Turning a chosen memory into the message that carries it to the model.

A file is cut at 4,096 UTF-8 bytes or 200 lines, always at a line boundary (a single
line longer than the byte limit is cut at a character boundary, never inside a multi-byte
character), and a cut file says which limit it hit and where the rest is.

The header (path and age, plus the staleness caveat for memories two or more days old)
is written once, when the attachment is made, and stored inside the message. Re-sending
the conversation on later turns therefore repeats the exact same bytes, so the memory
stays inside the cached prefix even as the file grows older.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from jupyter_memory.context.assemble import META_KEY
from jupyter_memory.context.prompts import neutralize_reminder_tags
from jupyter_memory.memdir.freshness import age_days, age_text, staleness_reminder
from jupyter_memory.memdir.gateway import Root
from jupyter_memory.memdir.scopes import TEAM_PREFIX
from jupyter_memory.memdir.team import folder_of, team_path
from jupyter_memory.recall.conversation import RECALL_KIND
from jupyter_memory.recall.limits import MAX_FILE_BYTES, MAX_FILE_LINES

__all__ = ["Excerpt", "attachment_message", "header_text", "read_excerpt"]

_OPEN, _CLOSE = "<system-reminder>", "</system-reminder>"
_READ_CAP = 1 << 20  # a memory is a few KB; never pull a huge stray file into memory


@dataclass(frozen=True)
class Excerpt:
    """The part of a memory file an attachment carries.

    ``text`` is what is sent, ``bytes`` its UTF-8 size (what the session budget counts),
    ``total_bytes`` and ``total_lines`` describe the whole file, ``truncated`` names the
    limit that cut it (``"bytes"``, ``"lines"`` or ``None``).
    """

    text: str
    bytes: int
    lines: int
    total_bytes: int
    total_lines: int
    truncated: str | None


def _char_boundary(data: bytes, end: int) -> int:
    """The largest index <= ``end`` that does not split a UTF-8 sequence."""
    end = min(end, len(data))
    while end > 0 and end < len(data) and (data[end] & 0xC0) == 0x80:
        end -= 1
    return end


def read_excerpt(
    path: Path, root: Root | None = None, *, max_bytes: int = MAX_FILE_BYTES,
    max_lines: int = MAX_FILE_LINES,
) -> Excerpt:
    """Read ``path`` up to ``max_lines`` lines and ``max_bytes`` bytes, cut at a line end.

    Read through ``root`` (its memory folder; default the file's own folder). The line
    limit is applied first; if the remaining text is still over the byte limit, whole
    lines are kept while they fit. Undecodable bytes become U+FFFD.
    """
    root = root if root is not None else Root.declare("memdir", Path(path).parent)
    data = root.read(path, limit=_READ_CAP + 1)
    total_bytes = max(len(data), path.stat().st_size)
    if data.startswith(b"\xef\xbb\xbf"):
        data = data[3:]
    lines = data[:_READ_CAP].splitlines(keepends=True)
    total_lines = len(lines)
    truncated: str | None = None
    if total_lines > max_lines:
        lines = lines[:max_lines]
        truncated = "lines"
    kept = b"".join(lines)
    if len(kept) > max_bytes:
        truncated = "bytes"
        size = 0
        whole: list[bytes] = []
        for line in lines:
            if size + len(line) > max_bytes:
                break
            whole.append(line)
            size += len(line)
        kept = b"".join(whole) if whole else kept[: _char_boundary(kept, max_bytes)]
    text = kept.decode("utf-8", errors="replace")
    return Excerpt(
        text=text,
        bytes=len(text.encode("utf-8")),
        lines=len(text.splitlines()),
        total_bytes=total_bytes,
        total_lines=total_lines,
        truncated=truncated,
    )


def _unwrap(reminder: str) -> str:
    """The caveat's words without its own tags (it goes inside our reminder)."""
    text = reminder.strip()
    if text.startswith(_OPEN) and text.endswith(_CLOSE):
        text = text[len(_OPEN) : -len(_CLOSE)]
    return text.strip()


def header_text(file: str, path: Path, days: int) -> str:
    """The lines that introduce a recalled memory: path, age, and the caveat when old."""
    head = f"Memory recalled for this message: {file} (saved {age_text(days)}), full path {path}"
    caveat = staleness_reminder(days)
    return f"{head}\n{_unwrap(caveat)}" if caveat else head


def _truncation_note(excerpt: Excerpt, path: Path) -> str:
    if excerpt.truncated == "lines":
        limit = f"the first {excerpt.lines:,} of its {excerpt.total_lines:,} lines"
        why = f"the {MAX_FILE_LINES}-line limit"
    else:
        limit = f"{excerpt.bytes:,} of its {excerpt.total_bytes:,} bytes"
        why = f"the {MAX_FILE_BYTES:,}-byte limit"
    return (
        f"[Cut short by {why} for recalled memories: only {limit} are shown above. "
        f"Use the Read tool on {path} to see the rest.]"
    )


def attachment_message(
    memdir: Path,
    file: str,
    *,
    now: float | None = None,
    max_bytes: int = MAX_FILE_BYTES,
    max_lines: int = MAX_FILE_LINES,
) -> dict[str, Any]:
    """The meta user message that carries ``file`` (memdir-relative) to the model.

    Raises ``OSError`` when the file cannot be read and ``InvalidPath`` when the gateway
    refuses it (a link leading out of its folder). ``_meta`` records the file, the recall
    path (``"B"``), its age and size at attachment time, the limit that cut it and the
    header; ``context.wire_messages`` strips it before sending.
    """
    path = team_path(Path(memdir), file)  # ``team/…`` may live outside the memdir (docs/reference.md#team-mode)
    team = file.startswith(TEAM_PREFIX)
    root = Root.declare("team" if team else "memdir", folder_of(Path(memdir)) if team else memdir)
    mtime = path.stat().st_mtime
    excerpt = read_excerpt(path, root, max_bytes=max_bytes, max_lines=max_lines)
    days = age_days(mtime, now)
    header = header_text(file, path, days)
    body = neutralize_reminder_tags(excerpt.text.rstrip("\n"))
    parts = [header, body]
    if excerpt.truncated:
        parts.append(_truncation_note(excerpt, path))
    text = f"{_OPEN}\n" + "\n\n".join(parts) + f"\n{_CLOSE}"
    return {
        "role": "user",
        "content": [{"type": "text", "text": text}],
        META_KEY: {
            "kind": RECALL_KIND,
            "file": file,
            "path": "B",
            "abs_path": str(path),
            "age_days": days,
            "bytes": excerpt.bytes,
            "total_bytes": excerpt.total_bytes,
            "truncated": excerpt.truncated,
            "header": header,
        },
    }
