"""Checking and repairing a memdir (docs/reference.md#known-weak-points, weak points 1 and 2).

:func:`doctor` reports what would make memories invisible or confusing: topic files the
index does not point at ("ghosts" that index-mode recall never sees), pointers to files
that are gone, duplicate names and descriptions, an index at or past its load limits,
files that cannot be read or decoded, and project memdirs whose project folder no longer
exists (the key is the project path, so a moved project loses its memories).

:func:`repair` fixes only what is safe to fix: it adds and removes index lines and, when
asked, moves an orphaned project memdir into the current one. It never deletes or
overwrites a topic file.
"""

from __future__ import annotations

import contextlib
import os
import stat as stat_mod
import time
from collections import defaultdict
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from jupyter_memory.errors import InvalidPath
from jupyter_memory.memdir import frontmatter
from jupyter_memory.memdir.fsutil import LOCK_NAME, is_temp_file
from jupyter_memory.memdir.gateway import Root
from jupyter_memory.memdir.guard import find_secrets
from jupyter_memory.memdir.index import (
    INDEX_NAME,
    check,
    edit_entries,
    format_entry,
    normalize_file,
    parse_index,
    readings,
    upsert_entry,
)
from jupyter_memory.memdir.location import (
    MEMORY_DIRNAME,
    REGISTRY_FILENAME,
    iter_project_dirs,
    record_project_root,
)
from jupyter_memory.memdir.record import Memory
from jupyter_memory.memdir.scan import list_files
from jupyter_memory.memdir.scopes import TEAM_PREFIX
from jupyter_memory.memdir.store import MemoryStore

__all__ = [
    "Finding",
    "RepairReport",
    "doctor",
    "frontmatter_description",
    "orphaned_projects",
    "repair",
]

Severity = Literal["error", "warning", "info"]
_SEVERITY_ORDER = {"error": 0, "warning": 1, "info": 2}


@dataclass(frozen=True)
class Finding:
    """One problem found in a memdir."""

    code: str
    severity: Severity
    file: str | None
    message: str
    fixable: bool = False

    def to_json(self) -> dict[str, Any]:
        return {
            "code": self.code,
            "severity": self.severity,
            "file": self.file,
            "message": self.message,
            "fixable": self.fixable,
        }


@dataclass
class RepairReport:
    """What :func:`repair` changed, and the findings it left for a person."""

    fixed: list[str] = field(default_factory=list)
    moved: list[tuple[str, str]] = field(default_factory=list)  # (from path, to file)
    left: list[Finding] = field(default_factory=list)

    @property
    def changed(self) -> bool:
        return bool(self.fixed or self.moved)

    def summary(self) -> str:
        """The report as lines for people: what was fixed, then what is left."""
        lines = [f"fixed: {item}" for item in self.fixed] or ["Nothing needed fixing."]
        lines += [f"left:  {f.severity} {f.code}: {f.message}" for f in self.left]
        return "\n".join(lines)

    def to_json(self) -> dict[str, Any]:
        return {
            "fixed": list(self.fixed),
            "moved": [{"from": src, "to": dst} for src, dst in self.moved],
            "left": [finding.to_json() for finding in self.left],
        }


# --------------------------------------------------------------------------- doctor


def _read_full(path: Path, root: Root) -> tuple[str | None, str | None, bool]:
    """(text, read error, valid UTF-8) for a whole file of the memdir ``root``."""
    try:
        raw = root.read(path)
    except OSError as exc:
        return None, exc.strerror or type(exc).__name__, False
    except InvalidPath as exc:
        return None, str(exc), False
    try:
        return raw.decode("utf-8"), None, True
    except UnicodeDecodeError:
        return raw.decode("utf-8", errors="replace"), None, False


def _file_findings(memory: Memory, root: Root) -> tuple[list[Finding], frontmatter.Document | None]:
    text, error, utf8 = _read_full(memory.path, root)
    if text is None:
        return [
            Finding(
                "unreadable",
                "error",
                memory.file,
                f"{memory.file} cannot be read ({error}). Check its permissions.",
            )
        ], None
    found: list[Finding] = []
    if not utf8:
        found.append(
            Finding(
                "not_utf8",
                "error",
                memory.file,
                f"{memory.file} is not valid UTF-8, so the store will not edit it. Convert it "
                "(for example `iconv -f latin1 -t utf-8`) and save it again.",
            )
        )
    doc = frontmatter.parse(text)
    if doc.error:
        found.append(
            Finding(
                "malformed_frontmatter",
                "warning",
                memory.file,
                f"{memory.file}: {doc.error}. Fix the header between the '---' lines so the "
                "name, description and type read back as written.",
            )
        )
    elif doc.has_frontmatter and not frontmatter_description(doc):
        found.append(
            Finding(
                "no_description",
                "info",
                memory.file,
                f"{memory.file} has no description; relevance recall sees only descriptions, "
                "so it will never select this memory.",
            )
        )
    if doc.has_frontmatter and memory.type is not None and not memory.type_known:
        found.append(
            Finding(
                "unknown_type",
                "info",
                memory.file,
                f"{memory.file} has type {memory.type!r}; the known types are user, feedback, "
                "project and reference.",
            )
        )
    return found, doc


def frontmatter_description(doc: frontmatter.Document) -> str | None:
    value = doc.get("description")
    if value is None or isinstance(value, (dict, list)):
        return None
    text = " ".join(str(value).split())
    return text or None


def _index_findings(store: MemoryStore, files: set[str]) -> list[Finding]:
    text = store.read_index()
    found: list[Finding] = []
    result = check(text)
    if result.status == "over":
        found.append(Finding("index_over_limit", "error", INDEX_NAME, result.message or ""))
    elif result.status == "near":
        found.append(Finding("index_near_limit", "warning", INDEX_NAME, result.message or ""))
    index = parse_index(text)
    seen: dict[str, int] = {}
    for entry in index.entries:
        target = normalize_file(entry.file)
        seen[target] = seen.get(target, 0) + 1
        if seen[target] == 2:
            found.append(
                Finding(
                    "duplicate_pointer",
                    "warning",
                    target,
                    f"{INDEX_NAME} points at {target} more than once (line {entry.line}); "
                    "repair keeps the first line.",
                    fixable=True,
                )
            )
        if seen[target] > 1 or target in files or _pointer_exists(store, entry.file, files):
            continue
        try:
            path = store.resolve(target)
            reason = "does not exist" if not path.exists() else "is not a memory file"
        except InvalidPath as exc:
            reason = f"is not a valid memory path ({exc})"
        found.append(
            Finding(
                "dangling_pointer",
                "warning",
                target,
                f"{INDEX_NAME} line {entry.line} points at {target}, which {reason}; the "
                "model is shown a memory it cannot read. Repair removes the line.",
                fixable=True,
            )
        )
    return found


def _pointer_exists(store: MemoryStore, target: str, files: set[str]) -> bool:
    """Whether a pointer's file exists under any reading of its link (``./x.md``,
    ``my%20notes.md``, ``team/x.md``): such a pointer is never dangling, and repair never
    drops it (issue 26, break 9: every line of a team index was once dropped this way)."""
    roots = [(Path(store.memdir), "")]
    team = getattr(store, "team_dir", None)
    if team is not None:
        roots.append((Path(team), TEAM_PREFIX))
    for name in readings(target):
        if name in files:
            return True
        for root, prefix in roots:
            if prefix and not name.startswith(prefix):
                continue
            path = root / name[len(prefix):]
            real, top = os.path.realpath(path), os.path.realpath(root)
            if (real == top or real.startswith(top.rstrip(os.sep) + os.sep)) and path.is_file():
                return True
    return False


def _duplicates(memories: list[Memory], docs: dict[str, frontmatter.Document]) -> list[Finding]:
    by_name: dict[str, list[str]] = defaultdict(list)
    by_description: dict[str, list[str]] = defaultdict(list)
    for memory in memories:
        doc = docs.get(memory.file)
        if doc is None or not doc.has_frontmatter:
            continue
        name = doc.get("name")
        if isinstance(name, str) and name.strip():
            by_name[name.strip().casefold()].append(memory.file)
        description = frontmatter_description(doc)
        if description:
            by_description[description.casefold()].append(memory.file)
    found: list[Finding] = []
    for files in by_name.values():
        if len(files) > 1:
            files = sorted(files)
            found.append(
                Finding(
                    "duplicate_name",
                    "warning",
                    files[0],
                    f"{len(files)} memories share one name: {', '.join(files)}. Merge them "
                    "or rename one, so 'show' and 'forget' can tell them apart.",
                )
            )
    for files in by_description.values():
        if len(files) > 1:
            files = sorted(files)
            found.append(
                Finding(
                    "duplicate_description",
                    "warning",
                    files[0],
                    f"{len(files)} memories have the same description: {', '.join(files)}. "
                    "Recall chooses by description, so it cannot tell them apart; merge them "
                    "or make each description say what is special about it.",
                )
            )
    return found


def orphaned_projects(
    env: Mapping[str, str] | None = None, *, exclude: Path | None = None
) -> list[tuple[Path, Path]]:
    """``(memdir, recorded project root)`` of project memdirs whose project folder is gone.

    Only folders with a recorded root can be judged (the store records it on its first
    write); a memdir with no topic file left is not reported.
    """
    skip = os.path.realpath(exclude) if exclude is not None else None
    found = []
    for project_dir, root in iter_project_dirs(env):
        memdir = project_dir / MEMORY_DIRNAME
        if root is None or root.exists() or not memdir.is_dir():
            continue
        if skip is not None and os.path.realpath(memdir) == skip:
            continue
        if list_files(memdir):
            found.append((memdir, root))
    return found


def _project_findings(store: MemoryStore, env: Mapping[str, str] | None) -> list[Finding]:
    here = store.location.project_root if store.location is not None else None
    found = []
    for memdir, root in orphaned_projects(env, exclude=store.memdir):
        count = len(list_files(memdir))
        likely = ""
        if here is not None and here.name == root.name:
            likely = f" It has the same folder name as this project ({here}), so it may be this project before a move."
        found.append(
            Finding(
                "orphaned_project",
                "warning",
                str(memdir),
                f"{count} memories in {memdir} belong to {root}, which no longer exists (the "
                f"project was moved, renamed or deleted).{likely} To bring them here, run "
                f"`jupyter-memory repair --reattach {memdir}` in the project's new folder.",
            )
        )
    return found


def _own(store: MemoryStore) -> list[Memory]:
    """The memories of the store's own folder, with the index the doctor checks: a team
    folder's store owns all of its files; the private store leaves the team's to the team
    index (their files start with ``team/``)."""
    memories = store.list()
    if store.scope == "team":
        return memories
    return [m for m in memories if not m.file.startswith(TEAM_PREFIX)]


def doctor(
    store: MemoryStore,
    *,
    env: Mapping[str, str] | None = None,
    check_projects: bool = True,
) -> list[Finding]:
    """Every problem found in the store's memdir (and orphaned project memdirs), worst first.

    The private store's doctor leaves team memories (docs/reference.md#team-mode) to the team folder's own
    index; the team folder's store (``--scope team``) checks that index against the team
    files and lists held-back files and conflict copies, which stay out of it.
    """
    memories = _own(store)
    findings: list[Finding] = _link_findings(store)
    index_linked = any(f.code == "index_symlink" for f in findings)
    kept_out = _kept_out(store)
    docs: dict[str, frontmatter.Document] = {}
    for memory in memories:
        found, doc = _file_findings(memory, store.root)
        findings.extend(found)
        if doc is not None:
            docs[memory.file] = doc
        if not memory.indexed and not index_linked and memory.file not in kept_out:
            findings.append(
                Finding(
                    "orphan_file",
                    "warning",
                    memory.file,
                    f"{memory.file} has no line in {INDEX_NAME}, so recall from the index never "
                    "shows it. Repair adds a pointer line built from its name and description.",
                    fixable=True,
                )
            )
    findings.extend(_duplicates(memories, docs))
    if not index_linked:
        findings.extend(_index_findings(store, {m.file for m in memories}))
    findings.extend(
        Finding(
            "stale_temp_file",
            "info",
            rel,
            f"{rel} is the temporary file of a write that was interrupted over an hour ago; "
            "it holds no memory. Repair deletes it.",
            fixable=True,
        )
        for rel in _stale_temp_files(store.memdir)
    )
    if store.scope == "team":
        findings.extend(_team_findings(store))
    if check_projects:
        findings.extend(_project_findings(store, env))
    findings.sort(key=lambda f: (_SEVERITY_ORDER[f.severity], f.code, f.file or ""))
    return findings


def _kept_out(store: MemoryStore) -> set[str]:
    """Files of a team folder that stay out of its index (conflict copies, held back)."""
    if store.scope != "team":
        return set()
    from jupyter_memory.memdir.team.index import folder_memories

    return set(folder_memories(store.memdir, store.list())[1])


def _team_findings(store: MemoryStore) -> list[Finding]:
    """Held-back files and conflict copies of the team folder: on disk, out of the index
    and recall until a person fixes or merges them (docs/team.md)."""
    from jupyter_memory.memdir.team.checks import held_back, is_conflict_copy

    found = [
        Finding(
            "held_back",
            "error",
            file,
            f"{file} is held back from the team index and recall: {'; '.join(reasons)}. It "
            "stays on disk: fix it (or delete it if it never belonged here) and it comes back "
            "at once; a 'user' memory belongs in your private memory.",
        )
        for file, reasons in sorted(held_back(store.memdir).items())
    ]
    found += [
        Finding(
            "conflict_copy",
            "warning",
            memory.file,
            f"{memory.file} is a conflict copy a sync kept beside the shared version; it stays "
            "out of the index and recall. Merge it into the shared file and delete it.",
        )
        for memory in store.list()
        if is_conflict_copy(memory.file)
    ]
    return found


def _link_findings(store: MemoryStore) -> list[Finding]:
    """A symlinked ``MEMORY.md`` or ``.lock``: the store refuses both, so say how to fix it.

    A linked index would put the file it points to (anywhere on disk) into every request
    and grow it with pointer lines; a linked lock would be truncated. Repair does not
    touch them: only a person can tell whether the target's content belongs here.
    """
    found: list[Finding] = []
    for name, code, what in (
        (INDEX_NAME, "index_symlink", "the memory index"),
        (LOCK_NAME, "lock_symlink", "the memory lock"),
    ):
        path = store.memdir / name
        if not os.path.islink(path):
            continue
        try:
            target = os.readlink(path)
        except OSError:
            target = "?"
        keep = (
            f"If the linked file really is this memdir's index, replace the link with a copy "
            f"(cp --remove-destination \"$(readlink -f {path})\" {path}); otherwise remove it "
            f"(rm {path}) and run `jupyter-memory repair` to rebuild the index from "
            "the topic files."
            if name == INDEX_NAME
            else f"Remove it (rm {path}); the store creates a fresh lock file on its next write."
        )
        found.append(Finding(
            code, "error", name,
            f"{name} is a symbolic link to {target}. The store refuses to read or write "
            f"{what} through a link, since it could expose or overwrite a file outside the "
            f"memory folder, so memory writes fail until it is fixed. {keep}",
        ))
    return found


#: Temporary files younger than this may belong to a write in progress in another kernel.
STALE_TEMP_SECONDS = 3600


def _stale_temp_files(memdir: Path, now: float | None = None) -> list[str]:
    """Leftover ``.name.*.tmp`` files of interrupted atomic writes, oldest first."""
    now = time.time() if now is None else now
    found: list[tuple[float, str]] = []
    for folder, dirs, names in Root.declare("memdir", memdir).walk():
        dirs[:] = [d for d in dirs if not d.startswith(".")]
        for name in names:
            if not is_temp_file(name):
                continue
            path = os.path.join(folder, name)
            try:
                st = os.lstat(path)
            except OSError:
                continue
            if stat_mod.S_ISREG(st.st_mode) and now - st.st_mtime > STALE_TEMP_SECONDS:
                rel = os.path.relpath(path, os.path.realpath(memdir))
                found.append((st.st_mtime, rel.replace(os.sep, "/")))
    return [rel for _, rel in sorted(found)]


# --------------------------------------------------------------------------- repair


def _free_name(memdir: Path, rel: str) -> str:
    """``rel``, or ``<stem>_reattached[_N].md`` when that file already exists."""
    if not (memdir / rel).exists():
        return rel
    stem, _, _ = rel.rpartition(".")
    n = 1
    while True:
        candidate = f"{stem}_reattached{'' if n == 1 else f'_{n}'}.md"
        if not (memdir / candidate).exists():
            return candidate
        n += 1


def _same_bytes(a: Path, a_root: Root, b: Path, b_root: Root) -> bool:
    try:
        return a.stat().st_size == b.stat().st_size and a_root.read(a) == b_root.read(b)
    except (OSError, InvalidPath):
        return False


def _reattach(store: MemoryStore, source: Path, report: RepairReport) -> None:
    """Move the topic files of ``source`` into the store and carry their index lines over."""
    if (source / MEMORY_DIRNAME).is_dir() and not (source / INDEX_NAME).exists():
        source = source / MEMORY_DIRNAME
    if not source.is_dir():
        raise InvalidPath(f"{source} is not a folder; give the orphaned memdir to reattach.")
    real_source = os.path.realpath(source)
    real_target = os.path.realpath(store.memdir)
    if real_source == real_target:
        raise InvalidPath(f"{source} is this project's own memdir; there is nothing to reattach.")
    if real_target.startswith(real_source + os.sep) or real_source.startswith(real_target + os.sep):
        raise InvalidPath(f"{source} and {store.memdir} are nested; choose a separate memdir.")
    old = MemoryStore(source)
    old_index = parse_index(old.read_index())
    index_text = store.read_index_for_edit()
    before = index_text
    for entry in sorted(list_files(source), key=lambda f: f.file):
        target_rel = entry.file
        target = store.memdir / target_rel
        if target.exists() and _same_bytes(entry.path, old.root, target, store.root):
            report.fixed.append(f"{entry.file} was already here with the same content; kept once")
            continue
        target_rel = _free_name(store.memdir, target_rel)
        target = store.memdir / target_rel
        old.root.move(entry.path, target, to=store.root, replace=False)
        report.moved.append((str(entry.path), target_rel))
        pointer = old_index.find(entry.file)
        if pointer is not None and parse_index(index_text).find(target_rel) is None:
            index_text = upsert_entry(index_text, target_rel, pointer.title, pointer.hook)
    if index_text != before:
        store.root.write(INDEX_NAME, index_text.encode("utf-8", errors="surrogateescape"))
    if report.moved:
        report.fixed.append(
            f"moved {len(report.moved)} memories from {source} into {store.memdir}; "
            f"its old {INDEX_NAME} was left in place"
        )
    location = store.location
    registry = source.parent / REGISTRY_FILENAME
    if location is not None and source.name == MEMORY_DIRNAME and registry.exists():
        # what is left there (the old index, identical copies) now belongs to this project
        record_project_root(source.parent, location.project_root)
        report.fixed.append(f"recorded {location.project_root} as the project of {source.parent}")


def repair(
    store: MemoryStore,
    *,
    reattach_from: Path | None = None,
    env: Mapping[str, str] | None = None,
) -> RepairReport:
    """Fix what is safe and return what was done and what is left.

    Adds pointer lines for orphan files (title from ``name``, hook from ``description``),
    removes pointers to missing files and duplicate pointer lines, and with
    ``reattach_from`` moves an orphaned memdir's files here first (a file that already
    exists is never overwritten: identical content is kept once, different content is
    moved in under a ``_reattached`` name). No topic file is ever deleted.
    """
    report = RepairReport()
    links = _link_findings(store)
    if links:  # every write would be refused; a person decides what the link's target is
        report.left = doctor(store, env=env)
        return report
    if store.scope == "team":
        return _repair_team(store, env)
    with store.writing():
        if reattach_from is not None:
            _reattach(store, Path(reattach_from), report)
        memories = _own(store)
        files = {m.file for m in memories}
        before = store.read_index_for_edit()
        index = parse_index(before)
        counts: dict[str, int] = defaultdict(int)
        for entry in index.entries:
            counts[normalize_file(entry.file)] += 1
        for target, count in counts.items():
            if target in files and count > 1:
                report.fixed.append(f"removed {count - 1} duplicate pointer line(s) for {target}")
        missing = [target for target in counts
                   if target not in files and not _pointer_exists(store, target, files)]
        for target in missing:
            report.fixed.append(f"removed the pointer to missing file {target}")
        claimed = {name for target in counts for name in readings(target)}
        add = []
        for memory in sorted(memories, key=lambda m: m.file):
            if memory.indexed or counts.get(memory.file) or memory.file in claimed:
                continue
            line = format_entry(memory.name, memory.file, memory.description or "")
            if find_secrets(line):
                continue  # doctor keeps reporting it; a person must look at this file
            add.append((memory.file, memory.name, memory.description or ""))
            report.fixed.append(f"added a pointer line for {memory.file}")
        text = edit_entries(before, remove=missing, dedupe=True, add=add)
        for rel in _stale_temp_files(store.memdir):
            with contextlib.suppress(FileNotFoundError):
                store.root.remove(store.memdir / rel)
                report.fixed.append(f"deleted {rel}, the leftover of an interrupted write")
        if text != before:
            store.root.write(INDEX_NAME, text.encode("utf-8", errors="surrogateescape"))
    report.left = doctor(store, env=env)
    return report


def _repair_team(store: MemoryStore, env: Mapping[str, str] | None) -> RepairReport:
    """``repair --scope team``: the team index merge that ``team sync`` runs, under the team
    folder's lock: every line of an existing file kept as written, lines for new files
    added, lines of removed files, conflict copies and held-back files dropped."""
    from jupyter_memory.memdir.team.index import exists_in, folder_memories, reconcile

    report = RepairReport()
    with store.writing():
        before = store.read_index_for_edit()
        shown, hidden = folder_memories(store.memdir, store.list())
        merge = reconcile(before, shown, hidden=hidden, exists=exists_in(store.memdir))
        if merge.changed:
            store.root.write(INDEX_NAME, merge.text.encode("utf-8", errors="surrogateescape"))
        report.fixed += merge.notes()
        for rel in _stale_temp_files(store.memdir):
            with contextlib.suppress(FileNotFoundError):
                store.root.remove(rel)
                report.fixed.append(f"deleted {rel}, the leftover of an interrupted write")
    report.left = doctor(store, env=env)
    return report
