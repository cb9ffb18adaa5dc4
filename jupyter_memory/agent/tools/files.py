"""Read, Write and Edit: the agent's file tools over the project and the memdir.

Reads are allowed anywhere inside the project folder and the memdir. Writes inside the
memdir go through :class:`~jupyter_memory.memdir.store.MemoryStore`, so the credential guard,
the lock, atomic replacement and the index rules apply to every memory the agent saves.
Writes elsewhere in the project need the person's permission.
"""

from __future__ import annotations

import difflib
import io
import logging
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any, TextIO

from jupyter_memory.agent.tools._fs import (
    Location,
    binary_message,
    looks_binary,
    read_text,
    resolve,
)
from jupyter_memory.agent.tools.base import Tool, ToolContext, ToolResult
from jupyter_memory.agent.tools.permissions import PermissionRequest
from jupyter_memory.errors import InvalidPath
from jupyter_memory.memdir import frontmatter
from jupyter_memory.memdir.freshness import age_days, staleness_reminder
from jupyter_memory.memdir.store import WriteResult

__all__ = [
    "DEFAULT_LINE_LIMIT",
    "MAX_LINE_CHARS",
    "MAX_READ_CHARS",
    "edit_tool",
    "format_lines",
    "read_tool",
    "write_tool",
]

DEFAULT_LINE_LIMIT = 2000
"""Lines a Read returns when no ``limit`` is given."""

MAX_LINE_CHARS = 2000
"""Longer lines are cut, with a note of their full length."""

MAX_READ_CHARS = 100_000
"""Characters a single Read returns at most (about 25,000 tokens)."""

_LINE_CHUNK = 64 * 1024  # characters read at a time when a line is long
_PREVIEW_CHARS = 4000  # what a permission prompt shows of the new content

INDEX_NAME = "MEMORY.md"


def format_lines(lines: list[str], first: int) -> str:
    """Number lines like ``cat -n``: the number right-aligned in 6 columns, then a tab."""
    return "\n".join(f"{n:>6}\t{line}" for n, line in enumerate(lines, first))


def _cut_line(line: str, length: int | None = None) -> str:
    length = len(line) if length is None else length
    if length <= MAX_LINE_CHARS:
        return line
    return f"{line[:MAX_LINE_CHARS]}… [line cut: {length:,} characters in all]"


def _lines(handle: TextIO) -> Iterator[str]:
    """The lines of a text file without line endings, long lines already cut.

    Reads in bounded chunks, so a file that is one enormous line (minified JSON, a CSV
    export without newlines) never has to fit in memory.
    """
    while True:
        chunk = handle.readline(_LINE_CHUNK)
        if not chunk:
            return
        head, length = chunk, len(chunk)
        while not chunk.endswith("\n"):
            chunk = handle.readline(_LINE_CHUNK)
            if not chunk:
                break
            length += len(chunk)
            if len(head) <= MAX_LINE_CHARS:
                head += chunk
        ending = 1 if chunk.endswith("\n") else 0  # universal newlines: always "\n"
        yield _cut_line(head.rstrip("\n"), length - ending)


# ----------------------------------------------------------------------------- Read

READ_DESCRIPTION = """\
Read a text file from the project folder or the memory directory and return its lines \
numbered like `cat -n` (number, tab, text); the numbers are not part of the file.

- file_path: absolute, or relative to the project folder. Paths outside the project \
folder and the memory directory are refused.
- Returns at most 2000 lines from the start by default. For long files pass offset (the \
1-based line to start at) and limit (how many lines). Lines longer than 2000 characters \
are cut, and one call returns at most 100,000 characters; the result says how to continue.
- Binary files (images, parquet, pickles, archives) are refused: load data files in the \
kernel instead.
- Memory files two or more days old come with a note of their age: treat what they say \
as a past observation and check it before relying on it.
- Read a file before you Edit it or overwrite it with Write. Reading several files at \
once is fine: make the calls in one response."""

READ_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "file_path": {
            "type": "string",
            "description": "Absolute path, or a path relative to the project folder.",
        },
        "offset": {
            "type": "integer",
            "minimum": 0,
            "description": "1-based line number to start from (default 1).",
        },
        "limit": {
            "type": "integer",
            "minimum": 1,
            "description": "Number of lines to return (default 2000).",
        },
    },
    "required": ["file_path"],
    "additionalProperties": False,
}


def _read(input: Mapping[str, Any], ctx: ToolContext) -> ToolResult:
    loc = resolve(ctx, input["file_path"])
    path = loc.path
    if path.is_dir():
        return ToolResult.error(f"{path} is a folder, not a file. List it with Glob instead.")
    if not path.exists():
        return ToolResult.error(
            f"{path} does not exist. Check the name with Glob (paths are relative to the "
            f"project folder {ctx.project_root})."
        )
    if not path.is_file():
        return ToolResult.error(f"{path} is not a regular file (a pipe, socket or device).")
    if looks_binary(loc):
        return ToolResult.error(binary_message(path))
    start = max(int(input.get("offset") or 1), 1)
    limit = int(input.get("limit") or DEFAULT_LINE_LIMIT)
    mtime = path.stat().st_mtime

    shown: list[str] = []
    size = 0
    total = 0
    cut_at_chars = False
    with loc.root.reader(path) as raw, io.TextIOWrapper(
            raw, encoding="utf-8-sig", errors="replace") as handle:
        for total, line in enumerate(_lines(handle), 1):
            if total < start or len(shown) >= limit or cut_at_chars:
                continue
            cost = len(line) + 8  # the number column and the newline
            if shown and size + cost > MAX_READ_CHARS:
                cut_at_chars = True
                continue
            shown.append(line)
            size += cost

    last = start + len(shown) - 1
    meta: dict[str, Any] = {
        "path": str(path),
        "in_memdir": loc.in_memdir,
        "total_lines": total,
        "first_line": start,
        "last_line": last,
        "truncated": last < total,
    }
    if total == 0:
        body = "(the file is empty)"
    elif start > total:
        return ToolResult.error(
            f"{path} has {total} lines; offset {start} is past the end. Use an offset "
            f"between 1 and {total}.",
            **meta,
        )
    else:
        body = format_lines(shown, start)
        if cut_at_chars:
            body += (
                f"\n\n[Stopped after line {last} of {total} to stay under "
                f"{MAX_READ_CHARS:,} characters. Continue with offset={last + 1}.]"
            )
        elif last < total:
            body += (
                f"\n\n[Showing lines {start}–{last} of {total}. Continue with offset={last + 1}.]"
            )

    if loc.in_memdir:
        days = age_days(mtime)
        meta["age_days"] = days
        reminder = staleness_reminder(days)
        if reminder:
            body = f"{reminder}\n{body}"

    ctx.read_files[path] = mtime
    try:
        meta["activated"] = _activate(ctx, path)
    except Exception as exc:  # a broken instruction file must not hide the file just read
        logging.getLogger(__name__).info("activating instructions for %s failed", path,
                                         exc_info=True)
        meta["activated"] = []
        meta["activation_error"] = f"{type(exc).__name__}: {exc}"
    return ToolResult(body, False, meta)


def _activate(ctx: ToolContext, path: Path) -> list[str]:
    """Bring in instruction files that apply to ``path``; report their paths."""
    if ctx.instructions is None:
        return []
    files = ctx.instructions.activate_for(path)
    if files and ctx.on_activate is not None:
        ctx.on_activate(files)
    return [str(f.path) for f in files]


read_tool = Tool("Read", READ_DESCRIPTION, READ_SCHEMA, _read, allowed_when_restricted=True)


# ----------------------------------------------------------------------------- writing


def _check_writable(ctx: ToolContext, loc: Location, tool: str) -> None:
    """Refuse writes outside the confinement, folders, and overwrites of unread or changed files."""
    if ctx.restrict_to_memdir and not loc.in_memdir:
        where = ctx.memdir if ctx.memdir is not None else "(memory is off)"
        raise InvalidPath(
            f"{tool} refused for {loc.path}: this agent may only write inside the memory "
            f"directory {where}."
        )
    if loc.memdir_file == "":
        raise InvalidPath(f"{loc.path} is the memory directory itself; name a file inside it.")
    if loc.path.is_dir():
        raise InvalidPath(f"{loc.path} is a folder; {tool} needs a file path.")
    if loc.path.exists():
        _check_fresh_read(ctx, loc.path, tool)


def _check_fresh_read(ctx: ToolContext, path: Path, tool: str) -> None:
    seen = ctx.read_files.get(path)
    if seen is None:
        raise InvalidPath(
            f"{tool} refused: {path} exists but you have not read it in this session. Read it "
            f"first, then {tool.lower()} it, so no content you have not seen is lost."
        )
    if path.stat().st_mtime != seen:
        raise InvalidPath(
            f"{tool} refused: {path} changed on disk after you read it (the person, another "
            "process or the memory store updated it). Read it again, then retry."
        )


def _save(
    ctx: ToolContext, loc: Location, text: str, *, tool: str, action: str, detail: str
) -> tuple[str, list[str], Location]:
    """Store ``text`` at ``loc``; return the text now on disk, notes for the model and
    where the file is now (the store may file a memory in another scope).

    The memory store may add or refresh frontmatter fields (``modified``, ``origin``), so
    what is on disk can differ from ``text``; the read record follows the disk.
    """
    notes: list[str] = []
    if loc.in_memdir:
        if ctx.store is None or not loc.memdir_file:
            raise InvalidPath(f"{tool} cannot save {loc.path}: no memory store is attached.")
        if loc.memdir_file == INDEX_NAME:
            result = ctx.store.write_index(text)
        else:
            result = ctx.store.write_file(loc.memdir_file, text, provenance=ctx.provenance)
        ctx.written_memdir_files.add(result.file)
        notes += _index_notes(result, result.file)
        if result.file != loc.memdir_file:  # the store filed it in another scope (team → private)
            moved = resolve(ctx, str(ctx.store.resolve(result.file)))
            ctx.read_files[moved.path] = moved.path.stat().st_mtime
            return read_text(moved), notes, moved
        stored = read_text(loc)
        if stored != text:
            notes.append(
                "The memory store set frontmatter fields (such as modified and origin); "
                "Read the file again before editing its header."
            )
    else:
        ctx.permission.require(PermissionRequest(tool, action, detail))
        loc.root.write(loc.path, text)
        stored = text
    ctx.read_files[loc.path] = loc.path.stat().st_mtime
    return stored, notes, loc


def _index_notes(result: WriteResult, file: str) -> list[str]:
    """What the store said about the index after a memdir write, for the model."""
    notes: list[str] = []
    if result.index_changed and file != INDEX_NAME:
        notes.append(f"{INDEX_NAME} was updated with a pointer to {file}.")
    notes += result.messages
    return notes


def _preview(text: str) -> str:
    if len(text) <= _PREVIEW_CHARS:
        return text
    return text[:_PREVIEW_CHARS] + f"\n… ({len(text) - _PREVIEW_CHARS:,} more characters)"


def _count_lines(text: str) -> int:
    return text.count("\n") + (0 if text.endswith("\n") or not text else 1)


# ----------------------------------------------------------------------------- Write

WRITE_DESCRIPTION = """\
Create a file, or replace a file's whole content.

- file_path: absolute, or relative to the project folder.
- Inside the memory directory this is how you save a memory: one topic file per fact, \
with frontmatter, and `MEMORY.md` for the index. Such writes are always allowed, but text \
that looks like a credential (API keys, tokens, passwords, private keys) is refused.
- Anywhere else in the project folder a write needs the person's permission; it may be \
refused. Paths outside the project folder and the memory directory are refused.
- To overwrite an existing file you must have read it in this session (and it must not \
have changed since). For small changes prefer Edit, which sends only the difference."""

WRITE_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "file_path": {
            "type": "string",
            "description": "Absolute path, or a path relative to the project folder.",
        },
        "content": {"type": "string", "description": "The complete new content of the file."},
    },
    "required": ["file_path", "content"],
    "additionalProperties": False,
}


def _write(input: Mapping[str, Any], ctx: ToolContext) -> ToolResult:
    loc = resolve(ctx, input["file_path"], write=True)
    _check_writable(ctx, loc, "Write")
    content: str = input["content"]
    existed = loc.path.exists()
    verb = "overwrite" if existed else "create"
    lines = _count_lines(content)
    action = f"{verb} {loc.path} ({lines} lines)"
    _, notes, saved = _save(ctx, loc, content, tool="Write", action=action,
                            detail=_preview(content))
    if loc.in_memdir:
        what = ("the memory index" if loc.memdir_file == INDEX_NAME
                else f"memory {saved.memdir_file}")
        head = f"{'Updated' if existed else 'Saved'} {what} ({lines} lines) at {saved.path}."
    else:
        head = f"{'Overwrote' if existed else 'Created'} {loc.path} ({lines} lines)."
    meta = {"path": str(saved.path), "in_memdir": loc.in_memdir, "created": not existed}
    return ToolResult("\n".join([head, *notes]), False, meta)


write_tool = Tool("Write", WRITE_DESCRIPTION, WRITE_SCHEMA, _write, allowed_when_restricted=True)


# ----------------------------------------------------------------------------- Edit

EDIT_DESCRIPTION = """\
Replace exact text in a file you have read in this session.

- old_string must match the file exactly, including indentation and line breaks; do not \
include the line-number prefix that Read shows. It must occur exactly once unless \
replace_all is true: if it occurs several times, add surrounding lines to make it unique.
- new_string replaces it (an empty new_string deletes it); it must differ from old_string.
- The same places are allowed as for Write: inside the memory directory always (with the \
credential check), elsewhere in the project folder only with the person's permission.
- If the file changed on disk since you read it, read it again first."""

EDIT_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "file_path": {
            "type": "string",
            "description": "Absolute path, or a path relative to the project folder.",
        },
        "old_string": {"type": "string", "description": "The exact text to replace."},
        "new_string": {"type": "string", "description": "The text to put in its place."},
        "replace_all": {
            "type": "boolean",
            "description": "Replace every occurrence instead of exactly one (default false).",
        },
    },
    "required": ["file_path", "old_string", "new_string"],
    "additionalProperties": False,
}

_SNIPPET_CONTEXT = 3  # lines shown around the first change


def _edit(input: Mapping[str, Any], ctx: ToolContext) -> ToolResult:
    loc = resolve(ctx, input["file_path"], write=True)
    old: str = input["old_string"]
    new: str = input["new_string"]
    replace_all = bool(input.get("replace_all") or False)
    _check_writable(ctx, loc, "Edit")
    if not loc.path.exists():
        return ToolResult.error(f"{loc.path} does not exist. Use Write to create a new file.")
    if old == "":
        return ToolResult.error(
            "old_string is empty. Give the exact text to replace, or use Write."
        )
    if old == new:
        return ToolResult.error(
            "old_string and new_string are the same; there is nothing to change."
        )
    if looks_binary(loc):
        return ToolResult.error(binary_message(loc.path))
    text = read_text(loc)

    count = text.count(old)
    if count == 0 and "\r\n" in text and "\n" in old:  # the model writes \n; the file has \r\n
        old, new = _crlf(old), _crlf(new)
        count = text.count(old)
    if count == 0:
        return ToolResult.error(
            f"old_string was not found in {loc.path}. It must match exactly, including "
            "whitespace and indentation; Read the file again and copy the text without the "
            "line-number prefix."
        )
    if count > 1 and not replace_all:
        return ToolResult.error(
            f"old_string occurs {count} times in {loc.path}. Add surrounding lines so it is "
            "unique, or set replace_all to true to change every occurrence."
        )
    first = text.index(old)
    updated = text.replace(old, new) if replace_all else text.replace(old, new, 1)
    diff = "".join(
        difflib.unified_diff(
            text.splitlines(keepends=True),
            updated.splitlines(keepends=True),
            str(loc.path),
            str(loc.path),
        )
    )
    replaced = count if replace_all else 1
    plural = "s" if replaced != 1 else ""
    action = f"edit {loc.path} ({replaced} replacement{plural})"
    stored, notes, saved = _save(ctx, loc, updated, tool="Edit", action=action,
                                 detail=_preview(diff))

    line_no = _edited_line(stored, updated, first)
    lines = stored.splitlines()
    lo = max(line_no - _SNIPPET_CONTEXT, 1)
    hi = min(line_no + new.count("\n") + _SNIPPET_CONTEXT, len(lines))
    snippet = format_lines([_cut_line(x) for x in lines[lo - 1 : hi]], lo)
    head = f"Edited {saved.path}: {replaced} replacement{plural}. The file now reads:"
    meta = {"path": str(saved.path), "in_memdir": loc.in_memdir, "replacements": replaced}
    return ToolResult("\n".join([head, snippet, *notes]), False, meta)


def _crlf(text: str) -> str:
    return text.replace("\r\n", "\n").replace("\n", "\r\n")


def _edited_line(stored: str, updated: str, first: int) -> int:
    """The line of ``stored`` where the first replacement (at ``first`` in ``updated``) is.

    The two texts differ only when the store added header lines (``modified``,
    ``origin``); edits below the header then move down by that many lines.
    """
    line = updated.count("\n", 0, first) + 1
    if stored == updated:
        return line
    parts = frontmatter.split(updated)
    below_header = parts is not None and updated.count("\n", 0, parts.body_start) < line
    if below_header:
        line += stored.count("\n") - updated.count("\n")
    return line


edit_tool = Tool("Edit", EDIT_DESCRIPTION, EDIT_SCHEMA, _edit, allowed_when_restricted=True)
