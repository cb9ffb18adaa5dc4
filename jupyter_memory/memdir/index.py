"""The ``MEMORY.md`` index: parsing, the load limits, and pointer-line edits.

The index is the only part of the memdir the model sees every turn, so it is
capped. The cap is counted the way the reference counts it: lines of the
trimmed text, and UTF-16 code units (a JavaScript string length). Python's
``len`` counts code points, which differs for characters outside the Basic
Multilingual Plane (emoji, rare CJK), so every length here goes through
:func:`utf16_len`.

Edits (:func:`upsert_entry`, :func:`remove_entry`) touch only the lines that
point at the file concerned; headings, free text and line endings elsewhere
are kept byte for byte.
"""

from __future__ import annotations

import posixpath
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from functools import cached_property
from types import MappingProxyType
from typing import Any, Literal
from urllib.parse import unquote

from jupyter_memory.memdir.markdown import fence_flags, fence_open_at_end
from jupyter_memory.memdir.scopes import TEAM_PREFIX as _TEAM_PREFIX

INDEX_NAME = "MEMORY.md"
MAX_LINES = 200
MAX_CHARS = 25_000
NEAR_FRACTION = 0.9
ENTRY_MAX_CHARS = 150
_ELLIPSIS = "…"

# `- [Title](file.md) — hook`; also `*`/`+` bullets, `-`/`–`/`:` separators, no hook,
# and the `<file with spaces.md>` link form. The hook is the rest of the line, stripped by
# the caller: a lazy hook before trailing blanks would backtrack over every blank of a long
# line (quadratic), and so would a lazy heading text, which is cut in Python for that reason.
_ENTRY_RE = re.compile(
    r"""^\s{0,3}[-*+]\s+
    \[(?P<title>(?:\\.|[^\]\\])*)\]
    \((?:<(?P<angle>[^>\n]+)>|(?P<plain>[^)\s]+))\)
    \s*(?:[—–]\s*|(?:-{1,2}|:)(?:\s+|$))?(?P<hook>.*)""",
    re.VERBOSE,
)
_HEADING_START = re.compile(r"\s{0,3}(?P<hashes>#{1,6})\s+")
_SCHEME_RE = re.compile(r"^[A-Za-z][A-Za-z0-9+.-]*:")


def utf16_len(text: str) -> int:
    """Length in UTF-16 code units: the unit the reference's 25,000 cap counts."""
    return len(text.encode("utf-16-le", "surrogatepass")) // 2


def _utf16_prefix(text: str, limit: int) -> int:
    """Largest index ``i`` such that ``text[:i]`` is at most ``limit`` UTF-16 units."""
    units = 0
    for i, ch in enumerate(text):
        units += 2 if ord(ch) > 0xFFFF else 1
        if units > limit:
            return i
    return len(text)


def normalize_file(file: str) -> str:
    """The form used to compare pointer targets: ``/`` separators, no ``./``."""
    file = file.strip().replace("\\", "/")
    return posixpath.normpath(file) if file else file


def readings(target: str) -> tuple[str, ...]:
    """Every memory file a pointer's link can mean, in the order to try them.

    The link as written (normalised: ``./x.md``, ``a/../x.md``), percent-decoded
    (``my%20notes.md``), and each of those without a leading ``team/``: memories of the
    team folder are named ``team/x.md`` everywhere they are shown, so a line written that
    way in the team index still points at its ``x.md``. A pointer to a file that exists
    under any of these readings is never dangling.
    """
    found: list[str] = []
    for raw in (target, unquote(target)):
        name = normalize_file(raw)
        if not name or name in (".", "..") or name.startswith(("../", "/")):
            continue
        found.append(name)
        if name.startswith(_TEAM_PREFIX) and len(name) > len(_TEAM_PREFIX):
            found.append(name[len(_TEAM_PREFIX):])
    return tuple(dict.fromkeys(found))


def _unescape_title(title: str) -> str:
    return re.sub(r"\\(.)", r"\1", title).strip()


@dataclass(frozen=True)
class IndexEntry:
    """One pointer line: ``- [title](file) — hook``."""

    title: str
    file: str
    hook: str
    line: int  # 1-based line number in the index text
    group: str | None  # the nearest ``##`` heading above, if any


@dataclass(frozen=True)
class Index:
    """A parsed ``MEMORY.md``: pointer entries plus everything else, kept as is."""

    text: str
    entries: tuple[IndexEntry, ...]
    groups: tuple[str, ...]
    free_text: tuple[tuple[int, str], ...]  # (1-based line, text) of non-entry lines
    open_fence: bool = False  # the text ends inside an unclosed ``` block

    def files(self) -> set[str]:
        """Normalised files that have at least one pointer line."""
        return set(self.lookup)

    def find(self, file: str) -> IndexEntry | None:
        """The first entry pointing at ``file``, or None."""
        return self.lookup.get(normalize_file(file))

    @cached_property
    def lookup(self) -> Mapping[str, IndexEntry]:
        """Normalised file -> its first entry, built once: ``find`` for every memory of a
        large memdir costs one dict look-up each, not a pass over the whole index."""
        table: dict[str, IndexEntry] = {}
        for entry in self.entries:
            table.setdefault(normalize_file(entry.file), entry)
        return MappingProxyType(table)


def _is_pointer_target(target: str) -> bool:
    """Only relative links count as memory pointers; URLs and anchors are free text."""
    return bool(target) and not _SCHEME_RE.match(target) and not target.startswith(("#", "/"))


def _match_entry(line: str) -> re.Match[str] | None:
    match = _ENTRY_RE.match(line.rstrip("\r"))
    if match is None:
        return None
    target = match.group("angle") or match.group("plain") or ""
    return match if _is_pointer_target(target.strip()) else None


def parse_index(text: str) -> Index:
    """Parse index text. Never raises; lines inside fenced code blocks are free text."""
    entries: list[IndexEntry] = []
    groups: list[str] = []
    free: list[tuple[int, str]] = []
    group: str | None = None
    raw_lines = text.split("\n")
    flags = fence_flags(raw_lines)
    for number, raw in enumerate(raw_lines, start=1):
        line = raw.rstrip("\r")
        if not flags[number - 1]:
            heading = _HEADING_START.match(line)
            if heading:
                if len(heading.group("hashes")) == 1:
                    group = None
                else:  # the title without a closing run of # and the blanks around it
                    group = line[heading.end() :].rstrip().rstrip("#").rstrip()
                    groups.append(group)
                free.append((number, raw))
                continue
            match = _match_entry(line)
            if match:
                target = (match.group("angle") or match.group("plain") or "").strip()
                entries.append(
                    IndexEntry(
                        title=_unescape_title(match.group("title")),
                        file=target,
                        hook=match.group("hook").strip(),
                        line=number,
                        group=group,
                    )
                )
                continue
        free.append((number, raw))
    return Index(
        text=text,
        entries=tuple(entries),
        groups=tuple(groups),
        free_text=tuple(free),
        open_fence=fence_open_at_end(raw_lines),
    )


LimitName = Literal["lines", "chars"]


@dataclass(frozen=True)
class LoadedIndex:
    """The index as the model receives it, and what the limits did to it."""

    text: str
    line_count: int  # lines of the trimmed original
    char_count: int  # UTF-16 code units of the trimmed original
    limits_hit: tuple[LimitName, ...] = ()
    warning: str | None = None

    @property
    def truncated(self) -> bool:
        return bool(self.limits_hit)

    def to_json(self) -> dict[str, Any]:
        """What ``jupyter-memory index --json`` prints (the caller adds the index's path)."""
        return {
            "text": self.text,
            "line_count": self.line_count,
            "char_count": self.char_count,
            "truncated": self.truncated,
            "limits_hit": list(self.limits_hit),
            "warning": self.warning,
        }


def _measure(text: str) -> tuple[str, list[str], int]:
    trimmed = text.strip()
    return trimmed, trimmed.split("\n"), utf16_len(trimmed)


def _limit_phrase(line_count: int, char_count: int, hits: tuple[LimitName, ...]) -> str:
    parts = []
    if "lines" in hits:
        parts.append(f"{line_count} lines (the limit is {MAX_LINES})")
    if "chars" in hits:
        parts.append(f"{char_count:,} characters (the limit is {MAX_CHARS:,} UTF-16 units)")
    return " and ".join(parts)


def load_for_model(text: str) -> LoadedIndex:
    """Trim, cut to 200 lines, then cut at the last newline before 25,000 UTF-16 units.

    When a limit cut anything, a warning naming it is appended so the model
    knows the index is incomplete and tidies it.
    """
    trimmed, lines, chars = _measure(text)
    line_count = len(lines) if trimmed else 0
    hits: list[LimitName] = []
    if line_count > MAX_LINES:
        hits.append("lines")
    if chars > MAX_CHARS:
        hits.append("chars")
    if not hits:
        return LoadedIndex(text=trimmed, line_count=line_count, char_count=chars)
    kept = "\n".join(lines[:MAX_LINES]) if "lines" in hits else trimmed
    if utf16_len(kept) > MAX_CHARS:
        end = _utf16_prefix(kept, MAX_CHARS)
        cut = kept.rfind("\n", 0, end)
        kept = kept[:cut] if cut > 0 else kept[:end]
    limits = tuple(hits)
    warning = (
        f"> WARNING: {INDEX_NAME} is {_limit_phrase(line_count, chars, limits)}, so only "
        "the part above was loaded and the rest is invisible. Tidy the index: keep each entry "
        "to one short line, move detail into the topic files, merge entries that say the "
        "same thing, and delete entries for memories that are no longer true."
    )
    return LoadedIndex(
        text=f"{kept}\n\n{warning}",
        line_count=line_count,
        char_count=chars,
        limits_hit=limits,
        warning=warning,
    )


@dataclass(frozen=True)
class LoadedLines:
    """Which lines of an index text the model receives (:func:`loaded_through`)."""

    #: The last line (1-based, as :func:`parse_index` numbers them) the model receives.
    through: int
    #: The limits that cut what follows (empty: every line loads).
    limits: tuple[LimitName, ...] = ()
    #: The last line the 200-line cut keeps (leading blank lines count, as they are trimmed).
    line_limit: int = MAX_LINES

    def cut_by(self, line: int) -> LimitName | None:
        """The limit that keeps ``line`` from the model, or None when it is received."""
        if line <= self.through:
            return None
        if "lines" in self.limits and (line > self.line_limit or "chars" not in self.limits):
            return "lines"
        return "chars"


def loaded_through(text: str) -> LoadedLines:
    """How much of ``text`` reaches the model, by line.

    A pointer line past :attr:`LoadedLines.through` exists (the memory is *indexed*) but
    never reaches the model: it is not *loaded* (docs/reference.md#the-index-and-its-limits).
    """
    trimmed = text.strip()
    if not trimmed:
        return LoadedLines(0)
    loaded = load_for_model(text)
    kept = loaded.text
    if loaded.warning and kept.endswith(loaded.warning):
        kept = kept[: -len(loaded.warning)].rstrip("\n")
    leading = text[: text.find(trimmed)].count("\n")
    return LoadedLines(leading + (kept.count("\n") + 1 if kept else 0), loaded.limits_hit,
                       leading + MAX_LINES)


CheckStatus = Literal["ok", "near", "over"]


@dataclass(frozen=True)
class IndexCheck:
    """How close an index text is to the load limits, with a message for the writer."""

    status: CheckStatus
    line_count: int
    char_count: int
    message: str | None = None
    limits: tuple[LimitName, ...] = field(default=())

    @property
    def ok(self) -> bool:
        return self.status == "ok"

    def to_json(self) -> dict[str, object]:
        return {
            "status": self.status,
            "line_count": self.line_count,
            "char_count": self.char_count,
            "max_lines": MAX_LINES,
            "max_chars": MAX_CHARS,
            "limits": list(self.limits),
            "message": self.message,
        }


def check(text: str) -> IndexCheck:
    """Judge an index about to be (or just) written; the write itself is never refused."""
    trimmed, lines, chars = _measure(text)
    line_count = len(lines) if trimmed else 0
    over: list[LimitName] = []
    near: list[LimitName] = []
    for name, value, limit in (("lines", line_count, MAX_LINES), ("chars", chars, MAX_CHARS)):
        if value > limit:
            over.append(name)  # type: ignore[arg-type]
        elif value >= NEAR_FRACTION * limit:
            near.append(name)  # type: ignore[arg-type]
    if over:
        message = (
            f"Error: {INDEX_NAME} is now {_limit_phrase(line_count, chars, tuple(over))}. "
            "It was saved, but everything past the limit will not be loaded next session. "
            "Rewrite the index now: one short line per memory, detail in the topic files, "
            "duplicates merged, stale entries removed."
        )
        return IndexCheck("over", line_count, chars, message, tuple(over))
    if near:
        used = []
        if "lines" in near:
            used.append(f"{line_count} of {MAX_LINES} lines")
        if "chars" in near:
            used.append(f"{chars:,} of {MAX_CHARS:,} characters")
        message = (
            f"Note: {INDEX_NAME} uses {' and '.join(used)}. Consider shortening or merging "
            "entries before it reaches the limit."
        )
        return IndexCheck("near", line_count, chars, message, tuple(near))
    return IndexCheck("ok", line_count, chars)


def _one_line(text: str) -> str:
    return " ".join(text.split())


def _shorten(text: str, width: int) -> str:
    if width <= 0:
        return ""
    if len(text) <= width:
        return text
    if width == 1:
        return _ELLIPSIS
    cut = text[: width - 1]
    space = cut.rfind(" ")
    if space >= width // 2:
        cut = cut[:space]
    return cut.rstrip(" ,;:.-—–") + _ELLIPSIS


def _link_target(file: str) -> str:
    needs_angle = any(ch.isspace() or ch in "()<>" for ch in file)
    return f"<{file}>" if needs_angle else file


def format_entry(title: str, file: str, hook: str = "", *, max_chars: int = ENTRY_MAX_CHARS) -> str:
    """A pointer line, kept to about ``max_chars`` by shortening the hook, then the title."""
    title = _one_line(title) or file
    hook = _one_line(hook)
    escaped = title.replace("\\", "\\\\").replace("[", "\\[").replace("]", "\\]")
    head = f"- [{escaped}]({_link_target(file)})"
    if not hook:
        if len(head) > max_chars:
            room = max_chars - len(head) + len(escaped)
            short = _shorten(title, max(room, 8))
            head = f"- [{short.replace('[', '(').replace(']', ')')}]({_link_target(file)})"
        return head
    line = f"{head} — {hook}"
    if len(line) <= max_chars:
        return line
    room = max_chars - len(head) - 3
    if room >= 20:
        return f"{head} — {_shorten(hook, room)}"
    # The title itself is long: give it half of what is left, the hook the rest.
    fixed = len(f"- []({_link_target(file)}) — ")
    budget = max(max_chars - fixed, 24)
    short_title = _shorten(title, budget // 2).replace("[", "(").replace("]", ")")
    short_hook = _shorten(hook, budget - len(short_title))
    line = f"- [{short_title}]({_link_target(file)})"
    return f"{line} — {short_hook}" if short_hook else line


def _split(text: str) -> list[str]:
    return text.split("\n") if text else []


def _join(lines: list[str]) -> str:
    out = "\n".join(lines)
    return out if not out or out.endswith("\n") else out + "\n"


def upsert_entry(text: str, file: str, title: str, hook: str = "") -> str:
    """Point the index at ``file``: replace its existing line in place, else append one.

    An existing line keeps its position (and so its ``##`` group) and its line
    ending; further lines pointing at the same file are dropped as duplicates.
    """
    new_line = format_entry(title, file, hook)
    index = parse_index(text)
    wanted = normalize_file(file)
    matching = [e.line for e in index.entries if normalize_file(e.file) == wanted]
    lines = _split(text)
    if not matching:
        while lines and lines[-1].strip() == "":
            lines.pop()
        ending = "\r" if lines and lines[-1].endswith("\r") else ""
        if index.open_fence:  # an unclosed code block would swallow the new pointer
            lines.append("```" + ending)
        lines.append(new_line + ending)
        return _join(lines)
    first = matching[0] - 1
    ending = "\r" if lines[first].endswith("\r") else ""
    lines[first] = new_line + ending
    drop = {n - 1 for n in matching[1:]}
    return "\n".join(line for i, line in enumerate(lines) if i not in drop)


def remove_entry(text: str, file: str) -> str:
    """Drop every line pointing at ``file``; everything else stays byte for byte."""
    index = parse_index(text)
    wanted = normalize_file(file)
    drop = {e.line - 1 for e in index.entries if normalize_file(e.file) == wanted}
    if not drop:
        return text
    return "\n".join(line for i, line in enumerate(_split(text)) if i not in drop)


def edit_entries(
    text: str,
    *,
    remove: Iterable[str] = (),
    dedupe: bool = False,
    add: Sequence[tuple[str, str, str]] = (),
) -> str:
    """Many pointer edits in one pass (what ``repair`` needs for thousands of files).

    Drops every line pointing at a file in ``remove``, with ``dedupe`` every line after the
    first that points at the same file, and appends a line per ``(file, title, hook)`` in
    ``add`` whose file has no line yet. Untouched lines stay byte for byte.
    """
    index = parse_index(text)
    gone = {normalize_file(f) for f in remove}
    seen: set[str] = set()
    drop: set[int] = set()
    for entry in index.entries:
        target = normalize_file(entry.file)
        if target in gone or (dedupe and target in seen):
            drop.add(entry.line - 1)
        seen.add(target)
    lines = [line for i, line in enumerate(_split(text)) if i not in drop]
    present = seen - gone
    new = [(f, t, h) for f, t, h in add if normalize_file(f) not in present]
    if not new:
        return "\n".join(lines) if drop else text
    while lines and lines[-1].strip() == "":
        lines.pop()
    ending = "\r" if lines and lines[-1].endswith("\r") else ""
    if index.open_fence:  # an unclosed code block would swallow the new pointers
        lines.append("```" + ending)
    lines.extend(format_entry(title, file, hook) + ending for file, title, hook in new)
    return _join(lines)


def rename_entry(text: str, old_file: str, new_file: str) -> str:
    """Repoint the lines for ``old_file`` at ``new_file``: only the link target changes, so
    the title, the hook and every other byte of the line stay as written.

    Further lines for ``old_file`` and any line already pointing at ``new_file`` are
    dropped (one line per file). Returns ``text`` unchanged when no line points at
    ``old_file``.
    """
    index = parse_index(text)
    old = normalize_file(old_file)
    matching = [e for e in index.entries if normalize_file(e.file) == old]
    if not matching:
        return text
    without_new = remove_entry(text, new_file) if index.find(new_file) else text
    index = parse_index(without_new)
    matching = [e for e in index.entries if normalize_file(e.file) == old]
    lines = _split(without_new)
    first = matching[0]
    line = lines[first.line - 1]
    found = _match_entry(line)
    if found is None:  # the parser matched this very line; nothing else can happen
        return text
    group = "angle" if found.group("angle") is not None else "plain"
    start, end = found.span(group)
    if group == "angle":
        start, end = start - 1, end + 1
    lines[first.line - 1] = line[:start] + _link_target(new_file) + line[end:]
    drop = {e.line - 1 for e in matching[1:]}
    return "\n".join(line for i, line in enumerate(lines) if i not in drop)
