"""Grep and Glob: finding files and text under the project folder or the memdir.

Both walk the tree without following symlinked folders, skip tool state (``.git``,
``node_modules``, ``.ipynb_checkpoints``, ``.venv``, ``__pycache__``) and cap what they
return, saying so, so one call never floods the context.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from jupyter_memory.agent.tools._fs import SKIP_DIRS, Location, looks_binary, resolve
from jupyter_memory.agent.tools.base import Tool, ToolContext, ToolResult
from jupyter_memory.errors import PathRefused
from jupyter_memory.memdir.fsutil import is_temp_file
from jupyter_memory.memdir.globs import Glob

__all__ = [
    "GLOB_LIMIT",
    "GREP_HEAD_LIMIT",
    "MAX_GREP_FILE_BYTES",
    "MAX_OUTPUT_CHARS",
    "MAX_WALK_FILES",
    "GlobOptions",
    "compile_glob",
    "compile_pattern",
    "glob_tool",
    "grep_tool",
]

GLOB_LIMIT = 100
"""Paths a Glob returns at most (the newest)."""

GREP_HEAD_LIMIT = 250
"""Entries (files, lines or counts) a Grep returns unless ``head_limit`` says otherwise."""

MAX_GREP_FILE_BYTES = 10_000_000
"""Larger files are skipped by Grep (named in a note): they are data, not text to search."""

MAX_OUTPUT_CHARS = 50_000
"""Characters a Grep or Glob result holds at most."""

MAX_WALK_FILES = 100_000
"""Files examined in one call before the walk stops (with a note)."""

MAX_MATCH_LINE_CHARS = 500
"""Matching lines longer than this are cut in Grep's content output."""

_GLOB_CHARS = frozenset("*?[{")


# ----------------------------------------------------------------------------- globs


def _expand_braces(pattern: str) -> list[str]:
    """``a.{py,ipynb}`` → ``["a.py", "a.ipynb"]`` (nested braces allowed)."""
    depth = 0
    start = -1
    for i, ch in enumerate(pattern):
        if ch == "{":
            if depth == 0:
                start = i
            depth += 1
        elif ch == "}" and depth:
            depth -= 1
            if depth == 0:
                inner = pattern[start + 1 : i]
                options, level, last = [], 0, 0
                for j, c in enumerate(inner):
                    level += c == "{"
                    level -= c == "}"
                    if c == "," and level == 0:
                        options.append(inner[last:j])
                        last = j + 1
                options.append(inner[last:])
                if len(options) == 1:
                    continue  # "{x}" is literal, as in the shell
                head, tail = pattern[:start], pattern[i + 1 :]
                return [x for opt in options for x in _expand_braces(head + opt + tail)]
    return [pattern]


class GlobOptions:
    """The globs a pattern's braces expand to; a path matches if any of them does."""

    def __init__(self, options: list[str]) -> None:
        self.globs = [Glob(option) for option in options]

    def match(self, path: str) -> bool:
        return any(option.match(path) for option in self.globs)


def compile_glob(pattern: str) -> GlobOptions:
    """Compile a glob over posix relative paths (its ``match(path)`` says if a path matches).

    ``*`` and ``?`` stay inside one folder, ``**/`` spans any number of folders
    (including none), ``[abc]`` and ``{a,b}`` work as in the shell. Dot files match.
    Time is linear in the path whatever the pattern (:class:`~jupyter_memory.memdir.globs.Glob`).
    """
    return GlobOptions(_expand_braces(pattern.strip().removeprefix("./")))


def _split_absolute(pattern: str) -> tuple[str | None, str]:
    """Split ``/data/**/*.csv`` into the folder ``/data`` and the pattern ``**/*.csv``."""
    if not pattern.startswith(("/", "~")):
        return None, pattern
    parts = pattern.split("/")
    for i, part in enumerate(parts):
        if _GLOB_CHARS & set(part):
            return "/".join(parts[:i]) or "/", "/".join(parts[i:])
    return "/".join(parts[:-1]) or "/", parts[-1]


# ----------------------------------------------------------------------------- walking


@dataclass
class _Walk:
    """Files under a folder, with what was left out, for the notes of a result."""

    scanned: int = 0
    stopped: bool = False


def _walk(base: Location, state: _Walk) -> Iterator[tuple[Path, str]]:
    """Yield ``(path, posix path relative to base)`` of every file worth searching.

    Symlinked folders are not entered; a symlinked file is yielded only when its target
    stays inside the same root (the gateway's rule for reads).
    """
    root = base.root
    for folder, dirs, files in root.walk(base.path):
        dirs[:] = sorted(d for d in dirs if d not in SKIP_DIRS)
        here = Path(folder)
        for name in sorted(files):
            if is_temp_file(name):
                continue
            path = here / name
            if path.is_symlink() and not root.is_file(path):
                continue
            if not path.is_file():
                continue  # pipes, sockets, devices: opening one could block
            state.scanned += 1
            if state.scanned > MAX_WALK_FILES:
                state.stopped = True
                return
            yield path, path.relative_to(base.path).as_posix()


def _mtime(path: Path) -> float:
    try:
        return path.stat().st_mtime
    except OSError:
        return 0.0


def _cap_lines(lines: list[str], budget: int = MAX_OUTPUT_CHARS) -> tuple[list[str], bool]:
    kept: list[str] = []
    used = 0
    for line in lines:
        used += len(line) + 1
        if used > budget and kept:
            return kept, True
        kept.append(line)
    return kept, False


# ----------------------------------------------------------------------------- Glob

GLOB_DESCRIPTION = """\
Find files by name pattern, newest first.

- pattern: a glob such as `**/*.py` (every .py file at any depth), `*.csv` (only in the \
folder itself), `data/**/*.{csv,parquet}` or `**/*revenue*`. `*` stays inside one folder; \
`**/` crosses folders.
- path: the folder to search (default: the project folder). To search your memories, \
pass the memory directory.
- Returns absolute paths of files (not folders), at most 100. Skips .git, node_modules, \
.ipynb_checkpoints, .venv and __pycache__. Use Grep to search inside files."""

GLOB_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "pattern": {"type": "string", "description": "Glob pattern, e.g. **/*.py"},
        "path": {
            "type": "string",
            "description": "Folder to search in (default: the project folder).",
        },
    },
    "required": ["pattern"],
    "additionalProperties": False,
}


def _glob(input: Mapping[str, Any], ctx: ToolContext) -> ToolResult:
    pattern: str = input["pattern"].strip()
    if not pattern:
        return ToolResult.error("pattern is empty. Give a glob such as **/*.py.")
    folder, pattern = _split_absolute(pattern)
    if folder is not None and input.get("path"):
        return ToolResult.error("Give either an absolute pattern or a path, not both.")
    where = resolve(ctx, folder or input.get("path") or str(ctx.project_root), param="path")
    base = where.path
    if not base.is_dir():
        return ToolResult.error(f"{base} is not a folder. Glob searches inside a folder.")
    regex = compile_glob(pattern)
    state = _Walk()
    found = [p for p, rel in _walk(where, state) if regex.match(rel)]
    found.sort(key=lambda p: (-_mtime(p), str(p)))
    meta: dict[str, Any] = {"path": str(base), "count": len(found), "truncated": False}
    if not found:
        hint = ""
        if "/" not in pattern and "**" not in pattern:
            hint = (
                f" The pattern only looks in {base} itself; use **/{pattern} to look in subfolders."
            )
        return ToolResult(f"No files match {pattern} in {base}.{hint}", False, meta)
    shown, _ = _cap_lines([str(p) for p in found[:GLOB_LIMIT]])
    notes = []
    if len(shown) < len(found):
        meta["truncated"] = True
        notes.append(
            f"[{len(found) - len(shown)} more files not shown: narrow the pattern or the path.]"
        )
    if state.stopped:
        meta["truncated"] = True
        notes.append(f"[Stopped after examining {MAX_WALK_FILES:,} files: narrow the path.]")
    return ToolResult("\n".join(shown + notes), False, meta)


glob_tool = Tool("Glob", GLOB_DESCRIPTION, GLOB_SCHEMA, _glob, allowed_when_restricted=True)


# ----------------------------------------------------------------------------- Grep

GREP_DESCRIPTION = """\
Search file contents with a regular expression (RE2 syntax, as in ripgrep; matched line by line).

- pattern: the regex, e.g. `def load_sales`, `revenue_(usd|cents)`, `import\\s+pandas`. \
Backreferences (`\\1`) and lookaround (`(?=…)`, `(?!…)`, `(?<=…)`, `(?<!…)`) are not supported.
- path: a folder or a single file (default: the project folder). To search your memories, \
pass the memory directory.
- glob: only search files whose name matches, e.g. `*.py`, `*.{md,ipynb}`; a glob with a \
`/` is matched against the path below `path`, e.g. `notebooks/**/*.ipynb`.
- case_insensitive: ignore case (default false).
- output_mode: `files_with_matches` (default; matching files, newest first), `content` \
(matching lines as path:line:text, with `context` lines around them) or `count` \
(matches per file).
- head_limit: at most this many entries (default 250). Output is also capped at 50,000 \
characters. Binary files, files over 10 MB, .git, node_modules, .ipynb_checkpoints, .venv \
and __pycache__ are skipped."""

GREP_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "pattern": {"type": "string", "description": "Regular expression (RE2 syntax, as in ripgrep)."},
        "path": {
            "type": "string",
            "description": "File or folder to search (default: the project folder).",
        },
        "glob": {"type": "string", "description": "Only files matching this glob, e.g. *.py"},
        "case_insensitive": {"type": "boolean", "description": "Ignore case (default false)."},
        "output_mode": {
            "type": "string",
            "enum": ["files_with_matches", "content", "count"],
            "description": "What to return (default files_with_matches).",
        },
        "head_limit": {
            "type": "integer",
            "minimum": 1,
            "description": "Return at most this many entries (default 250).",
        },
        "context": {
            "type": "integer",
            "minimum": 0,
            "maximum": 20,
            "description": "Lines of context before and after each match (content mode).",
        },
    },
    "required": ["pattern"],
    "additionalProperties": False,
}


def _grep_targets(base: Location, glob: str | None, state: _Walk) -> Iterator[Path]:
    if base.path.is_file():
        yield base.path
        return
    name_only = glob is not None and "/" not in glob
    regex = compile_glob(glob) if glob else None
    for path, rel in _walk(base, state):
        if regex is None or regex.match(path.name if name_only else rel):
            yield path


_RE2_MISSING = (
    "backreferences (\\1, (?P=name)) and lookaround ((?=…), (?!…), (?<=…), (?<!…))"
)


class _PatternError(ValueError):
    """A Grep pattern the engine cannot run; the message says why and what to do."""


def compile_pattern(pattern: str, *, ignore_case: bool = False) -> Any:
    """Compile a model-supplied Grep pattern on RE2, whose matching time is linear.

    Python's backtracking ``re`` can take hours on a pattern such as ``(a+)+$``; RE2
    (the engine family ripgrep uses) never backtracks, so a hostile or careless pattern
    cannot stall the kernel. The price is that RE2 lacks backreferences and
    lookaround; such a pattern raises ``ValueError`` saying so. ``^`` and ``$`` match at
    line ends, as Grep searches line by line.
    """
    import re2

    options = re2.Options()
    options.log_errors = False  # the error is reported to the caller, not to stderr
    options.case_sensitive = not ignore_case
    try:
        return re2.compile("(?m)" + pattern, options=options)
    except re2.error as exc:
        reason = exc.args[0] if exc.args else str(exc)
        if isinstance(reason, bytes):
            reason = reason.decode("utf-8", errors="replace")
        unsupported = any(
            marker in reason for marker in ("invalid perl operator", "invalid escape sequence")
        )
        hint = (
            f"Grep runs patterns on RE2, a linear-time engine (as ripgrep does), which has no "
            f"{_RE2_MISSING}; rewrite the pattern without them (for example search for the "
            "candidates and check the context lines)."
            if unsupported
            else "Escape literal characters such as ( [ . * + ? with a backslash."
        )
        raise _PatternError(f"Invalid regular expression {pattern!r}: {reason}. {hint}") from None


def _grep(input: Mapping[str, Any], ctx: ToolContext) -> ToolResult:
    try:
        regex = compile_pattern(input["pattern"], ignore_case=bool(input.get("case_insensitive")))
    except _PatternError as exc:
        return ToolResult.error(str(exc))
    where = resolve(ctx, input.get("path") or str(ctx.project_root), param="path")
    base = where.path
    if not base.exists():
        return ToolResult.error(f"{base} does not exist.")
    mode = input.get("output_mode") or "files_with_matches"
    limit = int(input.get("head_limit") or GREP_HEAD_LIMIT)
    around = int(input.get("context") or 0)

    state = _Walk()
    skipped_large: list[Path] = []
    files: list[Path] = []
    counts: dict[Path, int] = {}
    content: list[str] = []
    for path in _grep_targets(where, input.get("glob"), state):
        loc = Location(path, None, where.root)
        try:
            if path.stat().st_size > MAX_GREP_FILE_BYTES:
                skipped_large.append(path)
                continue
            if looks_binary(loc):
                continue
            text = where.root.text(path, errors="replace")
        except (OSError, PathRefused):
            continue
        if not regex.search(text):
            continue
        lines = text.splitlines()
        hits = [i for i, line in enumerate(lines) if regex.search(line)]
        if not hits:
            continue
        files.append(path)
        counts[path] = len(hits)
        if mode == "content":
            content += _content_lines(path, lines, hits, around)

    meta: dict[str, Any] = {"path": str(base), "files": len(files), "matches": sum(counts.values())}
    if mode == "files_with_matches":
        files.sort(key=lambda p: (-_mtime(p), str(p)))
        entries = [str(p) for p in files]
        unit = "files"
    elif mode == "count":
        entries = [f"{p}:{counts[p]}" for p in files]
        unit = "files"
    else:
        entries = content
        unit = "lines"
    notes: list[str] = []
    shown, cut = _cap_lines(entries[:limit])
    meta["truncated"] = len(shown) < len(entries)
    if len(shown) < len(entries):
        why = "the 50,000-character cap" if cut else f"head_limit={limit}"
        notes.append(
            f"[Showing {len(shown)} of {len(entries)} {unit} ({why}); narrow the search with "
            "path or glob, or raise head_limit.]"
        )
    if skipped_large:
        names = ", ".join(str(p) for p in skipped_large[:5])
        notes.append(f"[Skipped {len(skipped_large)} file(s) over 10 MB: {names}]")
    if state.stopped:
        notes.append(f"[Stopped after examining {MAX_WALK_FILES:,} files: narrow the path.]")
    if not files:
        return ToolResult(
            "\n".join([f"No matches for {input['pattern']!r} in {base}.", *notes]), False, meta
        )
    if mode == "count":
        head = f"{meta['matches']} matching lines in {len(files)} files:"
    elif mode == "files_with_matches":
        head = f"Found {len(files)} files:"
    else:
        head = f"{meta['matches']} matching lines in {len(files)} files:"
    return ToolResult("\n".join([head, *shown, *notes]), False, meta)


def _content_lines(path: Path, lines: list[str], hits: list[int], around: int) -> list[str]:
    """``path:n:text`` for matches and ``path-n-text`` for context, groups split by ``--``."""
    out: list[str] = []
    hit_set = set(hits)
    last = -2
    for i in hits:
        lo, hi = max(i - around, 0), min(i + around, len(lines) - 1)
        if around and out and lo > last + 1:
            out.append("--")
        for j in range(max(lo, last + 1), hi + 1):
            text = lines[j]
            if len(text) > MAX_MATCH_LINE_CHARS:
                text = text[:MAX_MATCH_LINE_CHARS] + "… [cut]"
            sep = ":" if j in hit_set else "-"
            out.append(f"{path}{sep}{j + 1}{sep}{text}")
        last = max(last, hi)
    return out


grep_tool = Tool("Grep", GREP_DESCRIPTION, GREP_SCHEMA, _grep, allowed_when_restricted=True)
