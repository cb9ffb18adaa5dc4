"""Instruction memory: the ``CLAUDE.md`` family (docs/reference.md#instruction-memory).

People write these files; the harness sends them, whole, at the top of every request.
This module finds them, follows their ``@path`` imports, strips HTML block comments,
and keeps path-scoped rules and subfolder files aside until the agent reads a file
they apply to. Order and headers are deterministic because the rendered text sits in
the cached prompt prefix: the same files on disk must give the same bytes.

See ``docs/instructions.md`` for the rules with a worked example.
"""

from __future__ import annotations

import bisect
import os
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from jupyter_memory.errors import ConfigError, PathRefused
from jupyter_memory.memdir import frontmatter, trust_table
from jupyter_memory.memdir.basedir import config_base, home_dir
from jupyter_memory.memdir.gateway import Root, config_root, never_imported
from jupyter_memory.memdir.globs import Glob
from jupyter_memory.memdir.markdown import code_span_bounds, fence_flags
from jupyter_memory.memdir.project import find_project_root
from jupyter_memory.memdir.trust_table import LOCAL, PROJECT, USER

__all__ = [
    "MAX_FILE_BYTES",
    "MAX_IMPORTS_PER_FILE",
    "MAX_IMPORT_DEPTH",
    "MAX_PATH_CHARS",
    "SCOPES",
    "WARN_CHARS",
    "InstructionFile",
    "InstructionSet",
    "compact_instructions",
    "find_imports",
    "load_instructions",
    "match_glob",
    "project_instruction_file",
    "strip_html_comments",
]

SCOPES = ("managed", "user", "project", "local", "rule")
MAX_IMPORT_DEPTH = 4  # hops: the file itself is depth 0, its imports 1, ... up to 4
MAX_PATH_CHARS = 4096
"""The longest path a ``paths:`` glob is matched against: Linux's ``PATH_MAX`` (macOS
allows 1,024). Rules match the files the agent reads, whose paths the OS already bounds."""
MAX_IMPORTS_PER_FILE = 500
"""Distinct ``@`` imports followed from one file; the rest are named in one note. A file
with hundreds of thousands of imports of missing files otherwise costs a file-system look-up
and a note each (a 5 MB file of them took half a minute to load)."""
WARN_CHARS = 40_000  # combined size (UTF-16 code units, as the reference) that earns a warning
MAX_FILE_BYTES = 5_000_000  # refuse absurd imports (a log file, a dump) rather than hang

_SCOPE_WORDS = {
    "managed": "organisation policy, set by an administrator for every user",
    "user": "the user's private global instructions, applied to all projects",
    "project": "project instructions, kept in the repository and shared with everyone",
    "local": "the user's private instructions for this project, not checked in",
    "rule": "project rule from .claude/rules",
}


@dataclass(frozen=True)
class InstructionFile:
    """One instruction file as it reaches the model.

    ``text`` is the content after frontmatter (rules only) and HTML block comments
    are removed. ``imported_from`` is the file whose ``@path`` brought this one in;
    ``reason`` says in words why it was loaded, for ``%context``. ``globs`` holds the
    ``paths:`` patterns of a path-scoped rule.
    """

    path: Path
    scope: str
    text: str
    imported_from: Path | None
    reason: str
    globs: tuple[str, ...] = ()
    #: The file as it was read, before frontmatter and comments were cut (what a
    #: recording snapshots), so nothing needs to read the file a second time.
    raw: str = field(default="", compare=False, repr=False)

    @property
    def chars(self) -> int:
        """Size in UTF-16 code units, the unit of the reference's 40,000 warning."""
        return _utf16_len(self.text)


@dataclass(frozen=True)
class _PendingRule:
    """A rule with ``paths:`` that waits for a matching read."""

    path: Path
    base: Path  # globs are relative to this folder
    scope: str
    globs: tuple[str, ...]


@dataclass
class InstructionSet:
    """The instruction files of one session, and which conditional ones are active."""

    cwd: Path
    project_root: Path
    files: list[InstructionFile] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    activated: list[InstructionFile] = field(default_factory=list)
    _loader: _Loader | None = field(default=None, repr=False)
    _pending: list[_PendingRule] = field(default_factory=list, repr=False)
    _extra_names: tuple[str, ...] = field(default=(), repr=False)
    _start_seen: frozenset[Path] = field(default=frozenset(), repr=False)
    _start_pending: tuple[_PendingRule, ...] = field(default=(), repr=False)
    _start_rules_seen: frozenset[Path] = field(default=frozenset(), repr=False)
    _dirs_done: set[Path] = field(default_factory=set, repr=False)
    _noted: set[str] = field(default_factory=set, repr=False)

    @property
    def skipped_imports(self) -> list[tuple[Path, Path]]:
        """``(importing file, imported file)`` pairs left out because the import reaches
        outside the project and the config base without the person's approval."""
        return list(self._require_loader().skipped) if self._loader is not None else []

    def skip_notice(self) -> str | None:
        """One line naming the skipped outside imports and how to allow them, or None."""
        skipped = self.skipped_imports
        if not skipped:
            return None
        from jupyter_memory.memdir.trust import how_to_trust

        shown = ", ".join(f"{target} (imported by {importer})" for importer, target in skipped[:3])
        more = f" and {len(skipped) - 3} more" if len(skipped) > 3 else ""
        return (f"Skipped imports from outside the project: {shown}{more}; they need your "
                "approval before their text is sent to the model. "
                + how_to_trust(self.project_root))

    @property
    def total_chars(self) -> int:
        """Combined size of the files loaded at start (UTF-16 code units)."""
        return sum(f.chars for f in self.files)

    def activate_for(self, path: Path) -> list[InstructionFile]:
        """Files that reading ``path`` brings in for the first time.

        Path-scoped rules whose globs match come first (in load order), then, for each
        folder strictly below ``cwd`` down to the read file's folder, that folder's
        instruction files and rules. Each file is returned once; after a compaction
        call ``reset_activations`` so the next matching read brings it back.
        """
        loader = self._require_loader()
        target = _absolute(Path(path), self.cwd)
        out: list[InstructionFile] = []
        for rule in self._pending:
            if _rule_matches(rule, target):
                out += _load_rule(loader, rule, target)
        for folder in _folders_between(self.cwd, target.parent):
            if folder not in self._dirs_done:
                self._dirs_done.add(folder)
                files, pending = _scan_folder(
                    loader, folder, self._extra_names, f"on reading {target}"
                )
                out += files
                self._pending += pending
                for rule in pending:
                    if _rule_matches(rule, target):
                        out += _load_rule(loader, rule, target)
        self.activated += out
        self._absorb_notes()
        return out

    def reset_activations(self) -> None:
        """Forget what was activated (after a compaction dropped it from the context)."""
        loader = self._require_loader()
        loader.seen = set(self._start_seen)
        loader.rules_seen = set(self._start_rules_seen)
        self.activated.clear()
        self._dirs_done.clear()
        self._pending = list(self._start_pending)

    def render_block(self, file: InstructionFile) -> str:
        """The text of ``file`` as the model receives it: a header naming path and scope."""
        words = _SCOPE_WORDS.get(file.scope, file.scope)
        if file.globs:
            words += ", for files matching " + ", ".join(file.globs)
        if file.imported_from is not None:
            words += f"; imported by {file.imported_from}"
        return f"Contents of {file.path} ({words}):\n\n{file.text.strip()}"

    def render(self, files: Iterable[InstructionFile] | None = None) -> str:
        """All blocks of ``files`` (default: those loaded at start), blank-line separated."""
        chosen = self.files if files is None else files
        return "\n\n".join(self.render_block(f) for f in chosen)

    def reload_file(self, path: Path, scope: str = "project") -> list[InstructionFile]:
        """Read ``path`` afresh from disk with its imports (after a compaction).

        Independent of what is loaded: the result reflects the disk now, and the set
        itself is not changed.
        """
        loader = self._require_loader().fresh()
        return loader.load(_absolute(Path(path), self.cwd), scope, "re-read from disk")

    def _require_loader(self) -> _Loader:
        if self._loader is None:
            raise RuntimeError(
                "this InstructionSet was built by hand; create it with load_instructions()"
            )
        return self._loader

    def _absorb_notes(self) -> None:
        """Move the loader's new notes here, each once (a set, not a search of the list:
        a file of thousands of ``@`` imports leaves thousands of notes)."""
        loader = self._require_loader()
        for note in loader.notes:
            if note not in self._noted:
                self._noted.add(note)
                self.notes.append(note)
        loader.notes.clear()


def load_instructions(
    cwd: Path,
    *,
    project_root: Path | None = None,
    env: Mapping[str, str] | None = None,
    extra_names: Sequence[str] = (),
    managed_path: Path | None = None,
    external_imports: bool | None = None,
) -> InstructionSet:
    """Find and read every instruction file that applies at session start.

    Order, lowest scope first: ``managed_path`` (organisation policy), the user's
    ``<base>/CLAUDE.md`` and ``<base>/rules/**/*.md``, then for each folder from the
    filesystem root down to ``cwd``: ``CLAUDE.md``, ``.claude/CLAUDE.md``, each of
    ``extra_names`` (such as ``AGENTS.md``), ``CLAUDE.local.md``, and the rules in
    ``.claude/rules/`` that have no ``paths:``. Each file is followed by what it imports.

    Project files (not the managed or user ones) may import only from inside the project
    and the config base unless ``external_imports`` is True; None looks the approval up
    in the trust records (``trust.external_imports_approved``). Imports left out are
    listed in ``InstructionSet.skipped_imports``.
    """
    names = _check_extra_names(extra_names)
    cwd = Path(cwd).expanduser().resolve()
    root = Path(project_root).expanduser().resolve() if project_root else find_project_root(cwd)
    base = config_base(env)
    if external_imports is None:
        from jupyter_memory.memdir.trust import external_imports_approved

        external_imports = external_imports_approved(root, env).trusted
    loader = _Loader(home_dir(env), project=root, env=env, allow_external=external_imports)

    files: list[InstructionFile] = []
    pending: list[_PendingRule] = []
    if managed_path is not None:
        files += loader.load(Path(managed_path).expanduser(), "managed", "organisation policy")
    files += loader.load(base / "CLAUDE.md", "user", "user instructions")
    for rule_path in _rule_files(base / "rules", loader.base):
        globs = loader.rule_globs(rule_path)
        if globs:
            pending.append(_PendingRule(_normal(rule_path), root, "user", globs))
        elif globs is not None:
            files += loader.load(rule_path, "user", "user rule, loaded at start", rule=True)
    for folder in [*reversed(cwd.parents), cwd]:
        found, waiting = _scan_folder(loader, folder, names, "at start")
        files += found
        pending += waiting

    result = InstructionSet(
        cwd=cwd,
        project_root=root,
        files=files,
        _loader=loader,
        _pending=pending,
        _extra_names=names,
        _start_seen=frozenset(loader.seen),
        _start_pending=tuple(pending),
        _start_rules_seen=frozenset(loader.rules_seen),
    )
    result._absorb_notes()
    if result.total_chars > WARN_CHARS:
        result.warnings.append(_size_warning(result.files, result.total_chars))
    return result


def compact_instructions(instructions: InstructionSet) -> str | None:
    """The text of every "Compact Instructions" section in the loaded files.

    A section is a markdown heading (any level, case-insensitive) and everything up to
    the next heading of the same or a higher level. Used to steer compaction summaries.
    """
    parts: list[str] = []
    for file in [*instructions.files, *instructions.activated]:
        parts += _compact_sections(file.text)
    return "\n\n".join(parts) if parts else None


def project_instruction_file(instructions: InstructionSet) -> Path | None:
    """The project-root ``CLAUDE.md`` (or ``.claude/CLAUDE.md``) that exists on disk now.

    This is the file the harness re-reads after a compaction.
    """
    root = instructions.project_root
    for candidate in (root / "CLAUDE.md", root / ".claude" / "CLAUDE.md"):
        if candidate.is_file():
            return candidate
    return None


# --------------------------------------------------------------------------- reading files


class _Loader:
    """Reads instruction files once each, following imports; collects notes.

    Every file is read through the gateway (``memdir/gateway.py``): the person's own
    (managed and user files, and what they import) through a root that follows links
    anywhere; a project file and its imports through the project (or, for a file found by
    scanning a folder above it, that folder), where a link is followed only while it stays
    inside. An import that leads outside the project, ``<base>`` included, needs approval
    (``allow_external``), and :func:`~jupyter_memory.memdir.gateway.never_imported` files
    (credentials, settings, session logs, non-markdown files in ``<base>``) are never read.
    """

    def __init__(
        self, home: Path, project: Path, env: Mapping[str, str] | None = None,
        allow_external: bool = True,
    ) -> None:
        self.home = home
        self.env = env
        self.project = Root.declare("project", project)
        self.base = config_root(env)
        self.allow_external = allow_external
        self.seen: set[Path] = set()
        self.rules_seen: set[Path] = set()
        self.notes: list[str] = []
        self.skipped: list[tuple[Path, Path]] = []

    def fresh(self) -> _Loader:
        """A new loader with the same home and import policy (nothing seen yet)."""
        return _Loader(self.home, self.project.path, self.env, self.allow_external)

    def _root_for(self, path: Path, scope: str, importer: Path | None) -> Root | None:
        """The root ``path`` is read through, or None when it needs approval first.

        Managed and user files are the person's own. A project file may import from the
        project; a file found by scanning may be a link only within its own folder.
        Anything else (``<base>`` included) needs the person's approval.
        """
        folder = Root.declare("given", path.parent, links="any", label="your own file's folder")
        if scope in ("managed", "user"):
            return folder
        if self.project.contains(path):
            return self.project
        if importer is None:  # the folder that was scanned, above any .claude/ in the path
            parts = path.parts
            cut = max((i for i, p in enumerate(parts) if p == ".claude"), default=len(parts) - 1)
            scanned = Root.declare("project", Path(*parts[:cut]), label="the scanned folder")
            if scanned.contains(path):
                return scanned
        origin = LOCAL if scope == "local" else PROJECT
        if trust_table.refusal("@import", origin, trusted=self.allow_external) is None:
            return Root.declare("given", path.parent, links="any", label="an approved import")
        return None

    def load(
        self,
        path: Path,
        scope: str,
        reason: str,
        globs: tuple[str, ...] = (),
        *,
        rule: bool = False,
    ) -> list[InstructionFile]:
        """``path`` (if it exists and is new) followed by its imports, depth first.

        A rule's frontmatter is metadata for the harness, so it is cut from the text.
        """
        return self._load(_normal(path), scope, reason, None, 0, globs, rule)

    def rule_globs(self, path: Path) -> tuple[str, ...] | None:
        """A rule file's ``paths:`` globs (empty: loads at start), None to skip it."""
        key = path.resolve()
        if key in self.rules_seen or key in self.seen:
            return None
        self.rules_seen.add(key)
        scope = "user" if self.base.relative(path) is not None else "rule"
        never = never_imported(path, self.env)
        root = None if never is not None else self._root_for(path, scope, None)
        if root is None:
            if (path, path) not in self.skipped and never is None:
                self.skipped.append((path, path))
            self.notes.append(f"{path} skipped, " + (
                never or "it is outside the project and outside imports are not approved"))
            return None
        text = self._read(path, None, root)
        if text is None:
            return None
        return _rule_globs(text, path, self.notes, USER if scope == "user" else PROJECT)

    def _load(
        self,
        path: Path,
        scope: str,
        reason: str,
        importer: Path | None,
        depth: int,
        globs: tuple[str, ...],
        rule: bool = False,
        *,
        key: Path | None = None,
    ) -> list[InstructionFile]:
        key = path.resolve() if key is None else key
        if key in self.seen:
            if importer is not None:
                self.notes.append(f"{importer}: import of {path} skipped, already loaded")
            return []
        never = never_imported(path, self.env)
        if never is not None:
            if path.exists():
                self.notes.append(f"{importer or path}: {path} is never imported: {never}")
            return []
        root = self._root_for(path, scope, importer)
        if root is None:
            if path.exists() and (importer or path, path) not in self.skipped:
                self.skipped.append((importer or path, path))
                self.notes.append(
                    f"{importer or path}: {path} skipped, it is outside the project and "
                    "outside imports are not approved"
                )
            return []
        raw = self._read(path, importer, root)
        if raw is None:
            return []
        self.seen.add(key)
        text = strip_html_comments(_strip_frontmatter(raw) if rule else raw)
        if not text.strip():
            return []
        entry = InstructionFile(path, scope, text, importer, reason, globs, raw)
        out = [entry]
        # token -> (file, its resolved path), None when not followed. The same import
        # again adds at most an "already loaded" note: a file of one token repeated costs
        # a look-up per token, not a path resolution.
        followed: dict[str, tuple[Path, Path] | None] = {}
        over: set[str] = set()  # distinct imports past MAX_IMPORTS_PER_FILE
        for token in find_imports(text):
            if len(followed) >= MAX_IMPORTS_PER_FILE and token not in followed:
                over.add(token)
                continue
            if token in followed:
                seen = followed[token]
                if seen is not None and seen[1] in self.seen:
                    self.notes.append(f"{path}: import of {seen[0]} skipped, already loaded")
                continue
            target = _import_target(token, path.parent, self.home)
            followed[token] = None
            if target is None:
                continue
            if depth >= MAX_IMPORT_DEPTH:
                self.notes.append(
                    f"{path}: @{token} not followed, imports go at most "
                    f"{MAX_IMPORT_DEPTH} levels deep"
                )
                continue
            key = target.resolve()
            followed[token] = (target, key)
            out += self._load(target, scope, f"imported by {path}", path, depth + 1, (),
                              key=key)
        if over:
            self.notes.append(
                f"{path}: {len(over):,} more @ imports not followed: a file may import at "
                f"most {MAX_IMPORTS_PER_FILE:,} (split it, or import fewer files)")
        return out

    def _read(self, path: Path, importer: Path | None, root: Root) -> str | None:
        """Text of ``path`` through ``root``, or None (with a note when an import was wanted)."""

        def skip(why: str) -> None:
            if importer is not None:
                self.notes.append(f"{importer}: import of {path} skipped, {why}")
            else:
                self.notes.append(f"{path} skipped, {why}")

        try:
            if not path.is_file():
                if importer is not None or path.exists():
                    skip("not found" if not path.exists() else "not a regular file")
                return None
            if path.stat().st_size > MAX_FILE_BYTES:
                skip(f"larger than {MAX_FILE_BYTES:,} bytes")
                return None
            data = root.read(path, limit=MAX_FILE_BYTES)
        except PathRefused as exc:
            skip(exc.why)
            return None
        except OSError as exc:
            skip(f"unreadable ({exc.strerror or exc})")
            return None
        if b"\x00" in data:
            skip("binary file")
            return None
        try:
            text = data.decode("utf-8")
        except UnicodeDecodeError:
            skip("not UTF-8 text")
            return None
        return text.removeprefix("\ufeff")


def _scan_folder(
    loader: _Loader, folder: Path, names: tuple[str, ...], when: str
) -> tuple[list[InstructionFile], list[_PendingRule]]:
    """One folder's files in order, and its rules that wait for a matching read."""
    files: list[InstructionFile] = []
    for name, scope in (
        ("CLAUDE.md", "project"),
        (".claude/CLAUDE.md", "project"),
        *((n, "project") for n in names),
        ("CLAUDE.local.md", "local"),
    ):
        label = "private project instructions" if scope == "local" else "project instructions"
        files += loader.load(folder / name, scope, f"{label}, loaded {when}")
    pending: list[_PendingRule] = []
    for rule_path in _rule_files(folder / ".claude" / "rules", Root.declare("project", folder)):
        globs = loader.rule_globs(rule_path)
        if globs:
            pending.append(_PendingRule(_normal(rule_path), folder, "rule", globs))
        elif globs is not None:
            files += loader.load(
                rule_path, "rule", f"rule without paths:, loaded {when}", rule=True
            )
    return files, pending


def _rule_files(rules_dir: Path, root: Root) -> list[Path]:
    """Every ``*.md`` under ``rules_dir``, sorted by relative path (symlinked dirs not entered)."""
    if not rules_dir.is_dir():
        return []
    found: list[tuple[str, Path]] = []
    try:
        walk = list(root.walk(rules_dir))
    except PathRefused:
        return []
    for dirpath, dirnames, filenames in walk:
        dirnames.sort()
        for name in filenames:
            if name.endswith(".md"):
                full = Path(dirpath) / name
                found.append((full.relative_to(rules_dir).as_posix(), full))
    return [p for _, p in sorted(found)]


# --------------------------------------------------------------------------- markdown


_COMMENT_OPEN = re.compile(r"^ {0,3}<!--")
_BLANK = re.compile(r"[^\n]")
_IMPORT = re.compile(r"(?<!\S)@((?:[^\s\\]|\\ )+)")
_HEADING_START = re.compile(r" {0,3}(#{1,6})(?=[ \t]|$)")
_TRAILING_PUNCT = ".,;:!?)]}'\""
_PATH_START = re.compile(r"[A-Za-z0-9._-]")


def strip_html_comments(text: str) -> str:
    """Remove HTML comments that start a line (block comments), outside code blocks.

    Text after ``-->`` on the closing line is kept; a comment that never closes is
    left alone rather than swallowing the rest of the file; comments inside a line of
    prose are kept as they are. One pass: the lines holding ``-->`` are listed once, so
    a file of unclosed ``<!--`` lines costs no more than any other file of its size.
    """
    if "<!--" not in text or "-->" not in text:
        return text  # nothing opens, or nothing closes: every line is kept
    lines = text.splitlines(keepends=True)
    flags = fence_flags(lines) if "```" in text or "~~~" in text else [False] * len(lines)
    closers = [number for number, line in enumerate(lines) if "-->" in line]
    out: list[str] = []
    i = 0
    while i < len(lines):
        line = lines[i]
        if flags[i] or not _COMMENT_OPEN.match(line):
            out.append(line)
            i += 1
            continue
        start = line.index("<!--") + 4
        end_line, end_col = i, line.find("-->", start)
        if end_col < 0:
            later = bisect.bisect_right(closers, i)
            if later < len(closers):
                end_line = closers[later]
                end_col = lines[end_line].find("-->")
        if end_col < 0:  # unclosed: keep everything
            out.append(line)
            i += 1
            continue
        residue = lines[end_line][end_col + 3 :]
        if residue.strip():
            out.append(residue.lstrip(" \t"))
        i = end_line + 1
    return "".join(out)


def _blank(text: str) -> str:
    """``text`` with every character but a newline made a space."""
    if "\n" not in text:
        return " " * len(text)
    return _BLANK.sub(" ", text)


def _code_regions(text: str) -> tuple[Sequence[int], Sequence[int]]:
    """Starts and ends of the fenced blocks and inline code spans of ``text``, in order and
    apart: what :func:`find_imports` must not read as imports.

    Spans are found after the fenced blocks are blanked, as a reader of markdown sees them;
    a text without backticks or tildes skips both scans.
    """
    fence_starts: list[int] = []
    fence_ends: list[int] = []
    blanked = text
    if "```" in text or "~~~" in text:
        lines = text.splitlines(keepends=True)
        offset = 0
        for line, fenced in zip(lines, fence_flags(lines), strict=True):
            if fenced:
                if fence_ends and fence_ends[-1] == offset:
                    fence_ends[-1] = offset + len(line)  # one region per block
                else:
                    fence_starts.append(offset)
                    fence_ends.append(offset + len(line))
            offset += len(line)
        if fence_starts and "`" in text:  # spans are read with the blocks blanked
            parts: list[str] = []
            done = 0
            for start, end in zip(fence_starts, fence_ends, strict=True):
                parts += [text[done:start], _blank(text[start:end])]
                done = end
            parts.append(text[done:])
            blanked = "".join(parts)
    if "`" not in blanked:
        return fence_starts, fence_ends
    span_starts, span_ends = code_span_bounds(blanked)
    if not fence_starts:
        return span_starts, span_ends
    merged = sorted([*zip(fence_starts, fence_ends, strict=True),
                     *zip(span_starts, span_ends, strict=True)])
    return [s for s, _ in merged], [e for _, e in merged]


def find_imports(text: str) -> list[str]:
    """The ``@path`` tokens of ``text`` in order, outside code spans and fenced blocks.

    The ``@`` must start a token (so ``ana@example.com`` is not an import); ``\\ ``
    escapes a space in a path. Tokens that cannot be paths (``@``, ``@@x``, ``@#x``)
    are left out. A token ends where code begins. The code regions are kept as offsets,
    not as a blanked copy of the text: a file of code spans would otherwise cost a string
    per span.
    """
    if "@" not in text:
        return []
    starts, ends = _code_regions(text)
    tokens: list[str] = []
    region, regions = 0, len(starts)  # the first code region not yet behind the scan
    for m in _IMPORT.finditer(text):
        token = m.group(1)
        if region < regions:
            # Matches and regions both come in order: walk along them (looking each match
            # up in the regions instead costs a cache miss per step on a long file).
            at = m.start()
            while region < regions and ends[region] <= at:
                region += 1
            if region < regions:
                if starts[region] <= at:
                    continue  # inside code
                if starts[region] < m.end():
                    token = text[m.start(1):starts[region]]  # it stops where code starts
                    if not token:
                        continue
        if "\\" in token:
            token = token.replace("\\ ", " ")
        if _looks_like_path(token):
            tokens.append(token)
    return tokens


def _looks_like_path(token: str) -> bool:
    if token.startswith(("./", "../", "~/")):
        return True
    if token.startswith("/"):
        return len(token) > 1
    return bool(_PATH_START.match(token)) and token not in (".", "..")


def _import_target(token: str, folder: Path, home: Path) -> Path | None:
    """The file an import token names; trailing punctuation is dropped if that helps."""
    raw = token.split("#", 1)[0]
    if not raw:
        return None
    candidates = [raw]
    trimmed = raw.rstrip(_TRAILING_PUNCT)
    if trimmed and trimmed != raw:
        candidates.append(trimmed)
    paths = []
    for cand in candidates:
        if cand.startswith("~/"):
            p = home / cand[2:]
        elif cand.startswith("/"):
            p = Path(cand)
        else:
            p = folder / cand
        paths.append(_normal(p))
    for p in paths:
        if p.exists():
            return p
    return paths[0]


def _strip_frontmatter(text: str) -> str:
    header = _frontmatter_span(text)
    return text if header is None else text[header[1] :]


def _frontmatter_span(text: str) -> tuple[str, int] | None:
    """(YAML header, index where the body starts), or None when there is no header."""
    parts = frontmatter.split(text)
    return None if parts is None else (parts.header, parts.body_start)


def _rule_globs(text: str, path: Path, notes: list[str], origin: str) -> tuple[str, ...]:
    """The ``paths:`` patterns of a rule; empty means the rule loads at start."""
    span = _frontmatter_span(text)
    if span is None:
        return ()
    try:
        data = frontmatter.load_yaml(span[0], where=f"{path}: frontmatter")
    except frontmatter.FrontmatterError as exc:
        notes.append(f"{exc}; loaded as a rule without paths:")
        return ()
    value = trust_table.value("paths", data, origin) if isinstance(data, dict) else None
    if value is None:
        return ()
    if isinstance(value, str):
        items = value.split(",")
    elif isinstance(value, list):
        items = [str(v) for v in value if v is not None]
    else:
        notes.append(
            f"{path}: paths: should be a glob or a list of globs; loaded as a rule without paths:"
        )
        return ()
    globs = tuple(g.strip() for g in items if g.strip())
    if all(g in ("**", "**/*") for g in globs):
        return ()  # matches everything: the same as no paths
    return globs


def _heading(line: str) -> tuple[int, str] | None:
    """``(level, text)`` of an ATX heading line (``## Title ##``), or None.

    The text drops an optional closing run of ``#`` written after a space or tab. Cut
    with string operations: a regex with a lazy title before optional trailing blanks
    backtracks over every blank of a long line, quadratic on a line of spaces.
    """
    m = _HEADING_START.match(line)
    if m is None:
        return None
    body = line[m.end() :].lstrip(" \t")
    text = body.rstrip(" \t")
    unclosed = text.rstrip("#")
    if len(unclosed) < len(text) and unclosed != unclosed.rstrip(" \t"):
        text = unclosed.rstrip(" \t")
    return len(m.group(1)), text


def _compact_sections(text: str) -> list[str]:
    lines = text.splitlines()
    flags = fence_flags(lines)
    sections: list[str] = []
    level: int | None = None
    body: list[str] = []
    for line, fenced in zip(lines, flags, strict=True):
        heading = None if fenced else _heading(line)
        if heading and level is not None and heading[0] <= level:
            sections.append("\n".join(body).strip())
            level, body = None, []
        if level is not None:
            body.append(line)
        elif heading and heading[1].strip().lower() == "compact instructions":
            level = heading[0]
    if level is not None:
        sections.append("\n".join(body).strip())
    return [s for s in sections if s]


# --------------------------------------------------------------------------- globs


def _glob(pattern: str) -> Glob:
    """A ``paths:`` glob as a matcher over posix paths relative to the rule's folder."""
    p = pattern.strip().removeprefix("./")
    dir_only = p.endswith("/")
    p = p.rstrip("/")
    if "/" not in p:
        p = "**/" + p  # a bare name matches at any depth
    # a matching folder covers what is inside
    return Glob(p.lstrip("/"), "inside" if dir_only else "or_inside")


def match_glob(pattern: str, relpath: str) -> bool:
    """Whether a posix relative path matches a ``paths:`` glob.

    ``*`` and ``?`` stay inside one folder, ``**/`` spans zero or more folders, a
    pattern without ``/`` matches the name at any depth, and a pattern that names a
    folder matches everything inside it (as in ``.gitignore``). Time is linear in the
    path whatever the pattern (:class:`~jupyter_memory.memdir.globs.Glob`); a path longer
    than :data:`MAX_PATH_CHARS`, which no file system gives, matches nothing.
    """
    if len(relpath) > MAX_PATH_CHARS:
        return False
    return _glob(pattern).match(relpath)


def _rule_matches(rule: _PendingRule, target: Path) -> bool:
    try:
        rel = target.relative_to(rule.base).as_posix()
    except ValueError:
        return False
    return any(match_glob(g, rel) for g in rule.globs)


def _load_rule(loader: _Loader, rule: _PendingRule, target: Path) -> list[InstructionFile]:
    reason = f"rule for {', '.join(rule.globs)}, activated by reading {target}"
    return loader.load(rule.path, rule.scope, reason, rule.globs, rule=True)


# --------------------------------------------------------------------------- paths


def _normal(path: Path) -> Path:
    """Absolute, with ``..`` collapsed, without following symlinks (for display)."""
    return Path(os.path.normpath(os.path.abspath(path)))


def _absolute(path: Path, cwd: Path) -> Path:
    path = path.expanduser()
    return (path if path.is_absolute() else cwd / path).resolve()


def _folders_between(cwd: Path, folder: Path) -> list[Path]:
    """Folders strictly below ``cwd`` down to ``folder``, shallow first."""
    try:
        rel = folder.relative_to(cwd)
    except ValueError:
        return []
    out: list[Path] = []
    current = cwd
    for part in rel.parts:
        current = current / part
        out.append(current)
    return out


def _check_extra_names(names: Sequence[str]) -> tuple[str, ...]:
    if isinstance(names, str):
        names = (names,)
    out: list[str] = []
    for name in names:
        if not name or "/" in name or "\\" in name or name in (".", ".."):
            raise ConfigError(
                f"extra instruction file name {name!r} is not a plain file name; "
                "pass names such as 'AGENTS.md' or 'GEMINI.md'"
            )
        if name not in ("CLAUDE.md", "CLAUDE.local.md") and name not in out:
            out.append(name)
    return tuple(out)


def _utf16_len(text: str) -> int:
    return len(text.encode("utf-16-le")) // 2


def _size_warning(files: list[InstructionFile], total: int) -> str:
    largest = sorted(files, key=lambda f: (-f.chars, str(f.path)))[:3]
    listed = ", ".join(f"{f.path} ({f.chars:,})" for f in largest)
    return (
        f"Instruction files add up to {total:,} characters, over the {WARN_CHARS:,} "
        f"that earns a warning; all of it is sent with every request. Largest: {listed}. "
        "Move detail into rules with paths: (loaded only when matching files are read) "
        "or trim these files."
    )
