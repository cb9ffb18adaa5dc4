"""The memory store: the one write path for a memdir.

Every front end (magics, CLI, server, the agent's Write/Edit tools, the extraction
agent) writes memories through :class:`MemoryStore`, so the same rules hold everywhere:

* a path is checked before anything else (:meth:`MemoryStore.resolve`): relative,
  inside the memdir even after following symlinks, a visible ``.md`` name;
* the credential guard runs on the final text before any byte is written, so a refused
  write leaves the memdir exactly as it was;
* the topic file and its ``MEMORY.md`` pointer are updated under one
  :func:`~jupyter_memory.memdir.fsutil.memdir_lock`, each with an atomic write, so the index is
  consistent by construction (``maintain_index=True``; ``False`` leaves the index to the
  agent, as the reference does);
* ``modified`` is refreshed only in files that already have frontmatter, and every
  header line the store did not change is kept byte for byte.
"""

from __future__ import annotations

import builtins
import contextlib
import difflib
import os
import re
import unicodedata
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path, PurePath
from typing import Any, TypedDict

from jupyter_memory.errors import InvalidMemory, InvalidPath, MemoryExists, MemoryNotFound
from jupyter_memory.memdir import frontmatter
from jupyter_memory.memdir.frontmatter import MODIFIED, Stamp
from jupyter_memory.memdir.fsutil import refuse_symlink
from jupyter_memory.memdir.gateway import Root
from jupyter_memory.memdir.guard import check_no_secrets, find_secrets
from jupyter_memory.memdir.index import (
    INDEX_NAME,
    IndexCheck,
    check,
    parse_index,
    remove_entry,
    upsert_entry,
)
from jupyter_memory.memdir.index import rename_entry as _rename_entry
from jupyter_memory.memdir.location import MemoryLocation, locate, record_project_root
from jupyter_memory.memdir.record import (
    MEMORY_TYPES,
    PROVENANCE_FIELD,
    PROVENANCES,
    Memory,
)
from jupyter_memory.memdir.scan import ScanCache, describe, scan

__all__ = [
    "AmbiguousMemory", "InvalidMemory", "MemoryChanges", "MemoryStore", "WriteResult", "slugify"
]

_MAX_NAME_BYTES = 255
_INDEX_WHAT = f"The memory index {INDEX_NAME}"
_SLUG_CHARS = 60
_WINDOWS_DRIVE = re.compile(r"^[A-Za-z]:")


class AmbiguousMemory(MemoryNotFound):
    """A name that matches more than one memory; the message lists their files."""


class MemoryChanges(TypedDict, total=False):
    """Text fields :meth:`MemoryStore.update` can change, as keyword arguments."""

    name: str
    description: str
    type: str
    body: str
    hook: str


@dataclass(frozen=True)
class WriteResult:
    """What a write did: the file, whether it is new, and the index check afterwards."""

    file: str
    created: bool
    index_check: IndexCheck | None
    warnings: tuple[str, ...] = ()
    index_changed: bool = False
    deleted: bool = False

    @property
    def messages(self) -> list[str]:
        """Everything the writer should be told: warnings, then the index reminder or error."""
        notes = list(self.warnings)
        if self.index_check is not None and self.index_check.message:
            notes.append(self.index_check.message)
        return notes

    def to_json(self) -> dict[str, Any]:
        return {
            "file": self.file,
            "created": self.created,
            "deleted": self.deleted,
            "index_changed": self.index_changed,
            "index_check": None if self.index_check is None else self.index_check.to_json(),
            "warnings": list(self.warnings),
        }


def slugify(name: str) -> str:
    """A file-name-safe form of a memory name: lower case, words joined by ``_``.

    Letters of any script are kept (``数据_口径``), everything else becomes ``_``.
    """
    text = unicodedata.normalize("NFKC", name).lower()
    slug = re.sub(r"[^\w]+", "_", text).strip("_")
    return slug[:_SLUG_CHARS].rstrip("_") or "memory"


def _one_line(text: str) -> str:
    return " ".join(str(text).split())


def _now() -> Stamp:
    """The time of this write, for ``modified`` (written in the form the file uses)."""
    return Stamp(datetime.now(timezone.utc))




def _inside(real: str, root: str) -> bool:
    return real == root or real.startswith(root.rstrip(os.sep) + os.sep)


class MemoryStore:
    """Read and write the memories of one memdir.

    Every file it reads or writes goes through :attr:`root` (``memdir/gateway.py``): a
    read follows a link only while it stays inside the memdir, and a write, delete or the
    lock never goes through one.

    ``session_id`` is written as ``originSessionId`` into memories this store creates;
    ``provenance_default`` is the ``origin`` recorded when a call does not name one
    (``user``, ``agent``, ``extraction`` or ``import``). ``mark_provenance=False`` writes
    no ``origin`` field at all, as the reference does.
    """

    #: Which memories the store's folder holds (``team`` for the team folder's own store).
    scope = "private"
    ROOT_KIND = "memdir"

    def __init__(
        self,
        memdir: Path | str,
        *,
        session_id: str | None = None,
        provenance_default: str = "user",
        maintain_index: bool = True,
        mark_provenance: bool = True,
        lock_timeout: float = 30.0,
        cache: ScanCache | None = None,
        location: MemoryLocation | None = None,
        root: Root | None = None,
    ) -> None:
        self.memdir = Path(memdir)
        self.session_id = session_id
        self.provenance_default = _check_provenance(provenance_default)
        self.maintain_index = maintain_index
        self.mark_provenance = mark_provenance
        self.lock_timeout = lock_timeout
        self.cache = cache if cache is not None else ScanCache()
        self.location = location
        self._root_recorded = False
        #: The memdir as a gateway root (declared by the caller, or here): every read and
        #: write of this store goes through it.
        self.root = root if root is not None else Root.declare(self.ROOT_KIND, self.memdir)

    @classmethod
    def for_project(
        cls,
        project: Path | str | None = None,
        env: Mapping[str, str] | None = None,
        **options: Any,
    ) -> MemoryStore:
        """The store of a project's memdir, located by the usual rules (``paths.locate``).

        When the memdir is the project's default one, its first write also records the
        project root beside it, so ``doctor`` can tell later if the project moved away.
        """
        location = locate(None if project is None else Path(project), env)
        return cls(location.memdir, location=location, **options)

    @property
    def index_path(self) -> Path:
        return self.memdir / INDEX_NAME

    def __repr__(self) -> str:
        return f"MemoryStore({str(self.memdir)!r})"

    # ------------------------------------------------------------------ paths

    def normalize(self, file: str | PurePath, *, allow_index: bool = False) -> str:
        """Check a memory path and return its canonical memdir-relative form (``a/b.md``)."""
        raw = file.as_posix() if isinstance(file, PurePath) else file
        if not isinstance(raw, str):
            raise InvalidPath(f"A memory path must be text, not {type(raw).__name__}.")
        shown = repr(raw)
        hint = "Give a path relative to the memory folder, such as 'feedback_plots.md'."
        if "\x00" in raw:
            raise InvalidPath(f"The memory path {shown} contains a NUL byte. {hint}")
        if not raw.strip():
            raise InvalidPath(f"The memory path is empty. {hint}")
        if any(ord(ch) < 32 or ord(ch) == 127 for ch in raw):
            raise InvalidPath(f"The memory path {shown} contains a control character. {hint}")
        if raw != raw.strip():
            raise InvalidPath(f"The memory path {shown} starts or ends with a space. {hint}")
        if "\\" in raw:
            raise InvalidPath(f"The memory path {shown} contains '\\'; separate folders with '/'.")
        if raw.startswith(("/", "~")) or _WINDOWS_DRIVE.match(raw):
            raise InvalidPath(f"The memory path {shown} is absolute. {hint}")
        parts = [part for part in raw.split("/") if part not in ("", ".")]
        if ".." in parts:
            raise InvalidPath(
                f"The memory path {shown} contains '..'; memories must stay inside the "
                f"memory folder. {hint}"
            )
        for part in parts:
            if part.startswith("."):
                raise InvalidPath(
                    f"The memory path {shown} has a name starting with '.' ({part!r}); hidden "
                    "names are reserved for the store's own files. Drop the leading dot."
                )
            if "<" in part or ">" in part:
                raise InvalidPath(
                    f"The memory path {shown} contains '<' or '>', which an index link cannot "
                    "hold. Choose a name without them."
                )
            if len(part.encode("utf-8", errors="surrogatepass")) > _MAX_NAME_BYTES:
                raise InvalidPath(
                    f"The memory path {shown} has a name longer than {_MAX_NAME_BYTES} bytes. "
                    "Choose a shorter name."
                )
        rel = "/".join(parts)
        if not rel.endswith(".md") or PurePath(rel).name == ".md":
            raise InvalidPath(
                f"The memory path {shown} is not a markdown file; memory files end in '.md' "
                f"(for example {PurePath(rel or 'memory').stem or 'memory'}.md)."
            )
        if rel == INDEX_NAME and not allow_index:
            raise InvalidPath(
                f"{INDEX_NAME} is the index, not a memory. Write it with write_index(), or "
                "choose another file name for the memory."
            )
        return rel

    def resolve(self, file: str | PurePath, *, allow_index: bool = False) -> Path:
        """The absolute path of a memory file, refusing anything that could leave the memdir.

        Refused with :class:`InvalidPath`: absolute paths, ``..``, backslashes, NUL and
        control characters, names with a leading dot, names that are not ``*.md``, and
        paths whose symlinks (in any component) lead outside the memdir.
        """
        rel = self.normalize(file, allow_index=allow_index)
        path = self.memdir / rel
        root = os.path.realpath(self.memdir)
        real = os.path.realpath(path)
        if not _inside(real, root):
            raise InvalidPath(
                f"The memory path {rel!r} leads outside the memory folder through a symbolic "
                f"link (it resolves to {real}). Remove the link or write the memory elsewhere "
                "inside the memory folder."
            )
        if os.path.isdir(path):
            raise InvalidPath(f"The memory path {rel!r} is a folder, not a file.")
        return path

    def relative(self, path: str | os.PathLike[str]) -> str:
        """Turn a path the agent gave (absolute or memdir-relative) into a checked ``file``."""
        text = os.fspath(path)
        if os.path.isabs(text):
            for base in (str(self.memdir), os.path.realpath(self.memdir)):
                rel = os.path.relpath(os.path.normpath(text), base)
                if rel != ".." and not rel.startswith("../") and rel != ".":
                    return self.normalize(rel, allow_index=True)
            raise InvalidPath(
                f"{text} is outside the memory folder {self.memdir}; only files inside it "
                "can be stored as memories."
            )
        return self.normalize(text, allow_index=True)

    # ------------------------------------------------------------------ reads

    def list(self, limit: int | None = None) -> list[Memory]:
        """All memories (or the newest ``limit``), newest first."""
        return scan(self.memdir, limit=limit, cache=self.cache)

    def get(self, name_or_file: str) -> Memory:
        """Find one memory by file path, by frontmatter ``name`` or by file stem.

        Raises :class:`MemoryNotFound` with close matches when nothing fits, and
        :class:`AmbiguousMemory` when a name fits several files.
        """
        key = name_or_file.strip() if isinstance(name_or_file, str) else str(name_or_file)
        if not key:
            raise MemoryNotFound("No memory name or file was given.")
        if key.endswith(".md"):
            with contextlib.suppress(InvalidPath):
                rel = self.normalize(key)
                self.resolve(rel)  # a symlink that leads out is not a memory
                found = describe(self.memdir, rel, cache=self.cache)
                if found is not None:
                    return found
        memories = self.list()
        stem = key[:-3] if key.endswith(".md") else key
        for matches in (
            [m for m in memories if m.name == key],
            [m for m in memories if m.name.casefold() == key.casefold()],
            [m for m in memories if m.file[:-3] == stem or PurePath(m.file).stem == stem],
            [m for m in memories if PurePath(m.file).stem.casefold() == stem.casefold()],
        ):
            if len(matches) == 1:
                return matches[0]
            if len(matches) > 1:
                files = ", ".join(sorted(m.file for m in matches))
                raise AmbiguousMemory(
                    f"{len(matches)} memories match {key!r}: {files}. Name the one you mean "
                    "by its file."
                )
        raise MemoryNotFound(self._not_found(key, memories))

    def _not_found(self, key: str, memories: builtins.list[Memory]) -> str:
        candidates: dict[str, str] = {}
        for memory in memories:
            candidates.setdefault(memory.name, memory.file)
            candidates.setdefault(memory.file, memory.file)
            candidates.setdefault(PurePath(memory.file).stem, memory.file)
        close = difflib.get_close_matches(key, list(candidates), n=5, cutoff=0.5)
        lowered = key.casefold()
        close += [c for c in candidates if lowered in c.casefold() and c not in close]
        files = list(dict.fromkeys(candidates[c] for c in close))[:5]
        message = f"No memory named {key!r} in {self.memdir}."
        if files:
            message += " Did you mean: " + ", ".join(files) + "?"
        elif memories:
            message += " List the memories to see their names and files."
        else:
            message += " The memory folder has no memories yet."
        return message

    def read(self, file: str | PurePath) -> str:
        """The whole text of a memory file (bytes that are not UTF-8 shown as U+FFFD)."""
        path = self.resolve(file)
        try:
            return self.root.read(path).decode("utf-8", errors="replace")
        except FileNotFoundError:
            raise MemoryNotFound(self._not_found(self.normalize(file), self.list())) from None

    def read_index(self) -> str:
        """The raw ``MEMORY.md`` text ('' when there is none); a symlinked index is refused."""
        try:
            raw = self.root.read(INDEX_NAME, follow=False, what=_INDEX_WHAT)
        except FileNotFoundError:
            return ""
        return raw.decode("utf-8", errors="replace")

    # ------------------------------------------------------------------ write plumbing

    @contextlib.contextmanager
    def writing(self) -> Iterator[None]:
        """Hold the memdir lock for a multi-step change (re-entrant within a thread).

        The first write of a store made by :meth:`for_project` also records the project
        root beside the project's default memdir.
        """
        with self.root.lock(timeout=self.lock_timeout):
            # Checked before any write, so a change never stops half way at the index.
            refuse_symlink(self.index_path, _INDEX_WHAT)
            if not self._root_recorded:
                location = self.location
                if (
                    location is not None
                    and location.source == "default"
                    and location.project_dir is not None
                ):
                    record_project_root(location.project_dir, location.project_root)
                self._root_recorded = True
            yield

    def read_index_for_edit(self) -> str:
        """``MEMORY.md`` decoded so that writing it back keeps every byte, even invalid UTF-8."""
        try:
            raw = self.root.read(INDEX_NAME, follow=False, what=_INDEX_WHAT)
        except FileNotFoundError:
            return ""
        return raw.decode("utf-8", errors="surrogateescape")

    def _save_index(self, before: str, after: str) -> tuple[bool, IndexCheck]:
        if after != before:
            self.root.write(INDEX_NAME, after.encode("utf-8", errors="surrogateescape"))
        return after != before, check(after)

    def _provenance(self, value: str | None) -> str:
        return self.provenance_default if value is None else _check_provenance(value)

    # ------------------------------------------------------------------ writes

    def create(
        self,
        name: str,
        description: str,
        type: str,
        body: str,
        *,
        file: str | None = None,
        hook: str | None = None,
        provenance: str | None = None,
        session_id: str | None = None,
        exist_ok: bool = False,
        extra: dict[str, Any] | None = None,
    ) -> WriteResult:
        """Write a new memory and its index pointer.

        The file defaults to ``<type>_<slug of name>.md``. An existing file is never
        overwritten: :class:`MemoryExists` is raised, or with ``exist_ok=True`` the
        existing memory is updated in place (unknown header fields survive). ``extra``
        adds header fields to a new file (the team scope's ``author``).
        """
        name = _one_line(name)
        description = _one_line(description)
        kind = _check_type(type)
        if not name:
            raise InvalidMemory("A memory needs a name: a few words saying what it is about.")
        if file is not None:
            rel = self.normalize(file)
        else:
            slug = slugify(name)
            if slug.startswith(f"{kind}_"):  # "project plans" -> project_plans.md
                slug = slug[len(kind) + 1 :]
            rel = f"{kind}_{slug}.md"
        path = self.resolve(rel)
        _check_fields(rel, name=name, description=description, body=body, hook=hook)
        warnings: list[str] = []
        if not description:
            warnings.append(
                f"{rel} has no description: the relevance selector sees only descriptions, so "
                "it will never pick this memory. Add a one-line description."
            )
        fields: dict[str, Any] = {"name": name, "description": description, "type": kind}
        origin = session_id if session_id is not None else self.session_id
        if origin:
            fields["originSessionId"] = origin
        if self.mark_provenance:
            fields[PROVENANCE_FIELD] = self._provenance(provenance)
        for key, value in (extra or {}).items():
            fields.setdefault(key, value)
        if body and not body.endswith("\n"):
            body += "\n"
        text = frontmatter.render(fields, body)
        _check_size(text, f"memory {rel}")
        check_no_secrets(text, f"memory {rel}")
        with self.writing():
            if path.exists():
                if not exist_ok:
                    existing = describe(self.memdir, rel, cache=self.cache)
                    label = f" (memory {existing.name!r})" if existing is not None else ""
                    raise MemoryExists(
                        f"{rel} already exists{label}. Update that memory instead of "
                        "creating a duplicate, or choose another name."
                    )
                result = self.update(
                    rel,
                    name=name,
                    description=description,
                    type=kind,
                    body=body,
                    hook=hook,
                    provenance=provenance,
                )
                return WriteResult(
                    result.file,
                    False,
                    result.index_check,
                    (*warnings, *result.warnings),
                    result.index_changed,
                )
            self.root.write(path, text)
            before = self.read_index_for_edit()
            after = upsert_entry(before, rel, name, hook if hook is not None else description)
            changed, index_check = self._save_index(before, after)
        return WriteResult(rel, True, index_check, tuple(warnings), changed)

    def update(
        self,
        file: str | PurePath,
        *,
        name: str | None = None,
        description: str | None = None,
        type: str | None = None,
        body: str | None = None,
        hook: str | None = None,
        provenance: str | None = None,
        extra: dict[str, Any] | None = None,
    ) -> WriteResult:
        """Change some fields and/or the body of an existing memory.

        Only the header lines of changed keys are rewritten (everything else, unknown
        fields included, is kept byte for byte) and ``modified`` is refreshed. A file
        without frontmatter keeps having none when only its body changes; setting a
        field on it adds a header with just the fields given (reported as a warning).
        """
        rel = self.normalize(file)
        path = self.resolve(rel)
        changes: dict[str, Any] = {}
        if name is not None:
            if not _one_line(name):
                raise InvalidMemory("A memory's name cannot be empty.")
            changes["name"] = _one_line(name)
        if description is not None:
            changes["description"] = _one_line(description)
        if type is not None:
            changes["type"] = _check_type(type)
        if provenance is not None and self.mark_provenance:
            changes[PROVENANCE_FIELD] = _check_provenance(provenance)
        _check_fields(rel, name=name, description=description, body=body, hook=hook)
        changes.update(extra or {})  # other header fields (the team scope's ``author``)
        warnings: list[str] = []
        if not path.exists():  # checked before the lock too, so a miss creates nothing
            self._read_for_update(path, rel)
        with self.writing():
            old = self._read_for_update(path, rel)
            doc = frontmatter.parse(old)
            if doc.has_frontmatter:
                new = frontmatter.update(old, {**changes, MODIFIED: _now()}, body=body)
            elif changes:
                fields = {k: v for k, v in changes.items() if k != PROVENANCE_FIELD}
                new = frontmatter.render(fields, doc.body if body is None else body)
                warnings.append(
                    f"{rel} had no frontmatter; a header was added to hold "
                    f"{', '.join(sorted(fields))}."
                )
            else:
                new = frontmatter.update(old, {}, body=body)
            _check_size(new, f"memory {rel}")
            check_no_secrets(new, f"memory {rel}")
            if new != old:
                self.root.write(path, new)
            after_doc = frontmatter.parse(new)
            before = self.read_index_for_edit()
            after = self._index_after_update(before, rel, after_doc, doc, name, description, hook)
            changed, index_check = self._save_index(before, after)
        return WriteResult(rel, False, index_check, tuple(warnings), changed)

    def _read_for_update(self, path: Path, rel: str) -> str:
        try:
            raw = self.root.read(path)
        except FileNotFoundError:
            raise MemoryNotFound(
                f"{rel} does not exist, so it cannot be updated. Create it instead."
            ) from None
        try:
            return raw.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise InvalidMemory(
                f"{rel} is not valid UTF-8 (byte {exc.start}); editing it could damage it. "
                "Convert it to UTF-8 first (for example with iconv), then retry."
            ) from None

    def _index_after_update(
        self,
        text: str,
        rel: str,
        doc: frontmatter.Document,
        old: frontmatter.Document,
        name: str | None,
        description: str | None,
        hook: str | None,
    ) -> str:
        """The index after an update: a pointer line follows a changed name or description
        only where it was made from the old one, so a title or hook someone wrote by hand
        stays as written (and an unchanged memory leaves the index byte for byte)."""
        entry = parse_index(text).find(rel)
        if entry is None:
            return self._ensure_pointer(text, rel, doc, hook)
        title, new_hook = entry.title, entry.hook
        old_name = _text(old.get("name")) or PurePath(rel).stem
        if name is not None and _one_line(name) != old_name and _made_from(title, old_name):
            title = _one_line(name)
        old_description = _text(old.get("description")) or ""
        if hook is not None:
            new_hook = _one_line(hook)
        elif (description is not None and _one_line(description) != old_description
              and _made_from(new_hook, old_description)):
            new_hook = _one_line(description)
        if (title, new_hook) == (entry.title, entry.hook):
            return text
        return upsert_entry(text, rel, title, new_hook)

    def _ensure_pointer(
        self, text: str, rel: str, doc: frontmatter.Document, hook: str | None = None
    ) -> str:
        """Add a pointer for a file with a name or description, if the index lacks one."""
        if not self.maintain_index or not doc.has_frontmatter:
            return text
        name = _text(doc.get("name"))
        description = _text(doc.get("description"))
        if (name is None and description is None) or parse_index(text).find(rel) is not None:
            return text
        title = name or PurePath(rel).stem
        return upsert_entry(text, rel, title, hook if hook is not None else description or "")

    def write_file(
        self, file: str | PurePath, text: str, *, provenance: str | None = None
    ) -> WriteResult:
        """Write a whole file as the agent's Write/Edit tools do.

        ``MEMORY.md`` goes to :meth:`write_index`. A text with frontmatter gets a fresh
        ``modified`` and its ``origin`` set to ``provenance`` (unless provenance marking
        is off); with ``maintain_index`` a pointer line is added when missing.
        """
        rel = self.normalize(file, allow_index=True)
        if rel == INDEX_NAME:
            return self.write_index(text)
        path = self.resolve(rel)
        _check_fields(rel, text=text)
        doc = frontmatter.parse(text)
        final = text
        if doc.has_frontmatter:
            changes: dict[str, Any] = {MODIFIED: _now()}
            if self.mark_provenance:
                changes[PROVENANCE_FIELD] = self._provenance(provenance)
                if self.session_id and not path.exists() and doc.get("originSessionId") is None:
                    changes["originSessionId"] = self.session_id
            final = _marked(text, doc, changes)
        _check_size(final, f"memory {rel}")
        check_no_secrets(final, f"memory {rel}")
        with self.writing():
            created = not path.exists()
            self.root.write(path, final)
            before = self.read_index_for_edit()
            after = self._ensure_pointer(before, rel, frontmatter.parse(final))
            changed, index_check = self._save_index(before, after)
        return WriteResult(rel, created, index_check, (), changed)

    def free_name(self, file: str | PurePath) -> str:
        """``file`` (checked), or ``<stem>_2.md``, ``_3``… when a memory already has it."""
        rel = self.normalize(file)
        stem, n = rel[:-3], 2
        while self.resolve(rel).exists():
            rel, n = f"{stem}_{n}.md", n + 1
        return rel

    def place(self, file: str | PurePath, data: bytes, *, title: str, hook: str) -> WriteResult:
        """Put a memory moved here from another folder: its bytes exactly as they were
        (a move is no rewrite: nothing, not even ``modified``, changes) and its index
        line. Refuses an existing file and a credential like any write."""
        rel = self.normalize(file)
        path = self.resolve(rel)
        text = data.decode("utf-8", errors="replace")
        _check_size(text, f"memory {rel}")
        check_file_name(rel)
        check_no_secrets(text, f"memory {rel}")
        with self.writing():
            if path.exists():
                raise MemoryExists(f"{rel} already exists; the memory was not moved over it.")
            self.root.write(rel, data)
            before = self.read_index_for_edit()
            after = upsert_entry(before, rel, title, hook)
            changed, index_check = self._save_index(before, after)
        return WriteResult(rel, True, index_check, (), changed)

    def write_index(self, text: str) -> WriteResult:
        """Replace ``MEMORY.md``. Always written; the check says if it is near or over the limits."""
        _check_size(text, INDEX_NAME)
        check_no_secrets(text, INDEX_NAME)
        with self.writing():
            created = not self.index_path.exists()
            refuse_symlink(self.index_path, _INDEX_WHAT)
            self.root.write(INDEX_NAME, text)
        return WriteResult(INDEX_NAME, created, check(text), (), True)

    def rename(self, file: str | PurePath, new_file: str | PurePath) -> WriteResult:
        """Move a memory to a new file name and repoint its index line in place."""
        rel = self.normalize(file)
        new_rel = self.normalize(new_file)
        src = self.resolve(rel)
        dst = self.resolve(new_rel)
        _check_fields(new_rel)
        if rel == new_rel:
            raise InvalidPath(f"{rel} would be renamed to itself; give a different new name.")
        if not src.exists():
            raise MemoryNotFound(f"{rel} does not exist, so it cannot be renamed.")
        with self.writing():
            if not src.exists():
                raise MemoryNotFound(f"{rel} does not exist, so it cannot be renamed.")
            if dst.exists():
                raise MemoryExists(
                    f"{new_rel} already exists; renaming {rel} onto it would overwrite it. "
                    "Choose another name, or merge the two memories by hand."
                )
            self.root.move(src, dst, replace=False)
            before = self.read_index_for_edit()
            after = _rename_entry(before, rel, new_rel)
            if after == before:
                after = self._ensure_pointer(before, new_rel, frontmatter.parse(self._head(dst)))
            changed, index_check = self._save_index(before, after)
        return WriteResult(new_rel, False, index_check, (), changed)

    def forget(self, file: str | PurePath) -> WriteResult:
        """Delete a memory file and every index line pointing at it.

        A pointer whose file is already gone is removed too; raises
        :class:`MemoryNotFound` when there is neither a file nor a pointer.
        """
        rel = self.normalize(file)
        path = self.resolve(rel)
        with self.writing():
            before = self.read_index_for_edit()
            after = remove_entry(before, rel)
            exists = path.exists()
            if not exists and after == before:
                raise MemoryNotFound(self._not_found(rel, self.list()))
            if exists:
                self.root.remove(path)
            changed, index_check = self._save_index(before, after)
        return WriteResult(rel, False, index_check, (), changed, deleted=exists)

    def _head(self, path: Path) -> str:
        try:
            return self.root.read(path, limit=65536).decode("utf-8", errors="replace")
        except (OSError, InvalidPath):
            return ""


#: Largest memory (or index) the store writes. A memory is a note of one fact; a file
#: this size is a data dump, and checking it for credentials would hold the lock for long.
MAX_MEMORY_BYTES = 1024 * 1024


def _check_size(text: str, where: str) -> None:
    size = len(text.encode("utf-8", errors="surrogateescape"))
    if size > MAX_MEMORY_BYTES:
        raise InvalidMemory(
            f"{where} would be {size:,} bytes; a memory holds at most {MAX_MEMORY_BYTES:,}. "
            "Keep one short fact per file and point to where bulky data lives instead of "
            "copying it in. Nothing was written."
        )


def name_pieces(rel: str) -> str:
    """A file name as text the guard can scan: each part, and each tail after ``_`` or ``-``.

    Token detectors want a token to start a word, but a name such as
    ``token_ghp_….md`` glues it to the words before it.
    """
    pieces: list[str] = []
    for part in re.split(r"[/.]", rel):
        pieces.append(part)
        pieces += [part[m.end() :] for m in re.finditer(r"[_-]", part)]
    return "\n".join(piece for piece in pieces if piece)


def masked_file_name(rel: str) -> str:
    """``rel`` with every credential in it replaced, safe to show in a message or report."""
    pieces = name_pieces(rel)
    secrets = {pieces[f.start : f.end] for f in find_secrets(pieces)}
    for secret in sorted(secrets, key=len, reverse=True):
        rel = rel.replace(secret, "[REDACTED]")
    return rel


def check_file_name(rel: str) -> None:
    """Refuse a file name holding a credential; the message never repeats the secret."""
    pieces = name_pieces(rel)
    if find_secrets(pieces):
        check_no_secrets(pieces, f"the file name {masked_file_name(rel)!r}")


def _check_fields(rel: str, **fields: str | None) -> None:
    """Run the credential guard on the file name and on each field as the person gave it.

    Checking fields one by one (before the whole file is checked again) means a refusal
    names the line of what was typed, not of the generated file with its header, and
    that fields which never reach the file body — the index line's hook, the file name
    — are checked too.
    """
    check_file_name(rel)
    labels = {"text": f"memory {rel}", "hook": f"the index line (hook) of memory {rel}"}
    for key, value in fields.items():
        if value:
            check_no_secrets(value, labels.get(key, f"the {key} of memory {rel}"))


def _marked(text: str, doc: frontmatter.Document, changes: dict[str, Any]) -> str:
    """``text`` with ``changes`` in its header, checked by reading it back.

    The in-place edit keeps every other header line byte for byte. A header written in
    an unusual YAML style (a flow mapping, an explicit ``? key``) can defeat a line
    edit, which would leave a forged ``origin`` or break the header; then the header is
    written afresh from its parsed fields, so the provenance mark always holds.
    """
    final = frontmatter.update(text, changes)
    check = frontmatter.parse(final)
    if check.error is None and all(
        check.get(k) is not None if isinstance(v, Stamp) else check.get(k) == v
        for k, v in changes.items()
    ):
        return final
    fields = dict(doc.fields)
    fields.update(changes)
    return frontmatter.render(fields, doc.body)


def _made_from(shown: str, source: str) -> bool:
    """Whether an index title or hook was made from ``source`` by the store (whole, or
    shortened with an ellipsis), rather than written by someone."""
    if shown == source:
        return True
    if not shown.endswith("…"):
        return False
    head = shown[:-1].rstrip()
    return bool(head) and source.replace("[", "(").replace("]", ")").startswith(head)


def _text(value: Any) -> str | None:
    if value is None or isinstance(value, (dict, list)):
        return None
    text = _one_line(str(value))
    return text or None


def _check_type(value: str) -> str:
    kind = str(value).strip().lower()
    if kind not in MEMORY_TYPES:
        raise InvalidMemory(
            f"Unknown memory type {value!r}; use one of {', '.join(MEMORY_TYPES)} "
            "(user: who the user is; feedback: how to work; project: ongoing work and "
            "decisions; reference: where things live)."
        )
    return kind


def _check_provenance(value: str) -> str:
    text = str(value).strip().lower()
    if text not in PROVENANCES:
        raise InvalidMemory(f"Unknown provenance {value!r}; use one of {', '.join(PROVENANCES)}.")
    return text
