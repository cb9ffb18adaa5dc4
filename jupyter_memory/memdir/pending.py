"""The pending area: extracted memories waiting for the person's approval.

In approval mode (off by default; the reference saves extracted memories at once) the
extraction agent works on a *stage*, a private copy of the memdir, so it can read and
update existing memories exactly as usual. What it changed on the stage becomes pending
items in ``<memdir>/.pending/``; nothing in the memdir itself changes until the person
accepts an item, which goes through :class:`~jupyter_memory.memdir.store.MemoryStore` like any
other write. The folder name starts with a dot, so scans, recall and the index never see
pending items.

Each item is two files: ``<id>.md`` (the proposed text, which the person may edit before
accepting) and ``<id>.json`` (the target file, the run, and a fingerprint of the memory
as it was when the stage was made, so accepting over a memory that changed since is
refused unless forced).
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import uuid
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from jupyter_memory.errors import InvalidPath, JupyterMemoryError, MemoryNotFound
from jupyter_memory.memdir import frontmatter
from jupyter_memory.memdir.clock import now_iso
from jupyter_memory.memdir.gateway import Root
from jupyter_memory.memdir.index import INDEX_NAME, parse_index, upsert_entry
from jupyter_memory.memdir.store import MemoryStore, WriteResult

__all__ = ["PENDING_DIR", "PendingArea", "PendingConflict", "PendingItem", "fingerprint"]

PENDING_DIR = ".pending"
"""Folder inside the memdir that holds pending items (hidden from scans and the index)."""

_STAGE_PREFIX = ".stage-"


class PendingConflict(JupyterMemoryError):
    """The memory a pending item would replace changed after the item was proposed."""


def fingerprint(data: bytes | None) -> str | None:
    """``sha256:<hex>`` of some bytes, or None for a file that did not exist."""
    return None if data is None else "sha256:" + hashlib.sha256(data).hexdigest()




@dataclass(frozen=True)
class PendingItem:
    """One proposed memory: where it would go and what it would say."""

    id: str
    file: str
    run: str
    created: str
    base: str | None  # fingerprint of the memdir file when proposed; None: a new file
    title: str | None
    hook: str | None
    session_id: str | None
    path: Path  # the editable proposed text
    memdir: Root  # the memdir it lives in (its ``.pending/`` folder), read through the gateway

    @property
    def is_new(self) -> bool:
        return self.base is None

    def text(self) -> str:
        return self.memdir.read(self.path).decode("utf-8", errors="replace")

    def description(self) -> str:
        doc = frontmatter.parse(self.text())
        value = doc.get("description")
        return str(value) if value else ""

    def to_json(self) -> dict[str, Any]:
        return {"id": self.id, "file": self.file, "run": self.run, "created": self.created,
                "new": self.is_new, "path": str(self.path), "description": self.description()}


class PendingArea:
    """The pending items of one memdir, and the stages extraction runs work on."""

    def __init__(self, memdir: Path | str) -> None:
        self.memdir = Path(memdir)
        self.root = self.memdir / PENDING_DIR
        #: The memdir as a gateway root: stages and items live below it, never through a link.
        self.gate = Root.declare("memdir", self.memdir)

    # ------------------------------------------------------------------ stages

    def stage(self) -> Path:
        """A fresh private copy of the memdir's visible files for one extraction run."""
        stage = self.root / f"{_STAGE_PREFIX}{uuid.uuid4().hex[:12]}"
        self.gate.make_folder(stage)
        for source, rel in _visible_files(self.gate):
            self.gate.copy(source, stage / rel)
        return stage

    def drop_stage(self, stage: Path) -> None:
        """Delete a stage (only ever a folder this area made)."""
        stage = Path(stage)
        if stage.parent == self.root and stage.name.startswith(_STAGE_PREFIX):
            with contextlib.suppress(OSError, InvalidPath):
                self.gate.remove_folder(stage, tree=True)

    def collect(
        self, stage: Path, before: dict[str, bytes | None], *, run: str,
        session_id: str | None = None,
    ) -> list[PendingItem]:
        """Turn what a run changed on ``stage`` into pending items.

        ``before`` maps each file the run wrote to its bytes before the first write
        (``None`` for files it created). Files whose final text equals what they were are
        not proposed; the index is never proposed (accepting an item adds its pointer).
        """
        staged_index = parse_index(_read(self.gate, stage / INDEX_NAME) or "")
        items: list[PendingItem] = []
        for rel in sorted(before):
            if rel == INDEX_NAME:
                continue
            path = stage / rel
            if not path.is_file():
                continue
            data = self.gate.read(path)
            if data == before[rel]:
                continue
            entry = staged_index.find(rel)
            items.append(self.add(
                rel, data, base=before[rel], run=run, session_id=session_id,
                title=entry.title if entry else None, hook=entry.hook if entry else None,
            ))
        return items

    # ------------------------------------------------------------------ items

    def add(
        self, file: str, data: bytes, *, base: bytes | None, run: str,
        title: str | None = None, hook: str | None = None, session_id: str | None = None,
    ) -> PendingItem:
        """Store one proposed memory and return it."""
        item_id = self._new_id(session_id, run, file)
        meta = {"file": file, "run": run, "created": now_iso("seconds"), "base": fingerprint(base),
                "title": title, "hook": hook, "session_id": session_id}
        self.gate.write(self.root / f"{item_id}.md", data)
        self.gate.write(self.root / f"{item_id}.json",
                        json.dumps(meta, ensure_ascii=False, indent=2) + "\n")
        return self._item(item_id, meta)

    def _new_id(self, session_id: str | None, run: str, file: str) -> str:
        """A short id derived from the session, the run and the file.

        Derived rather than random so a replayed notebook shows the same ids; a clash (the
        same file proposed twice in one run) takes the next free suffix.
        """
        seed = hashlib.sha256(f"{session_id}\0{run}\0{file}".encode()).hexdigest()[:8]
        item_id, n = seed, 1
        while (self.root / f"{item_id}.json").exists():
            n += 1
            item_id = f"{seed}-{n}"
        return item_id

    def _item(self, item_id: str, meta: dict[str, Any]) -> PendingItem:
        return PendingItem(item_id, str(meta["file"]), str(meta.get("run", "")),
                           str(meta.get("created", "")), meta.get("base"), meta.get("title"),
                           meta.get("hook"), meta.get("session_id"),
                           self.root / f"{item_id}.md", self.gate)

    def list(self) -> list[PendingItem]:
        """Every pending item, oldest first (unreadable leftovers are skipped)."""
        items: list[PendingItem] = []
        if not self.root.is_dir():
            return items
        for meta_path in self.gate.matching("*.json", self.root):
            try:
                meta = json.loads(self.gate.text(meta_path))
            except (OSError, ValueError, InvalidPath):
                continue
            if isinstance(meta, dict) and "file" in meta and meta_path.with_suffix(".md").is_file():
                items.append(self._item(meta_path.stem, meta))
        return sorted(items, key=lambda i: (i.created, i.id))

    def get(self, item_id: str) -> PendingItem:
        """The item with this id (or a unique prefix of it)."""
        items = self.list()
        matches = [i for i in items if i.id == item_id] or [
            i for i in items if i.id.startswith(item_id)]
        if len(matches) == 1:
            return matches[0]
        if not items:
            raise MemoryNotFound("There are no pending memories.")
        known = ", ".join(f"{i.id} ({i.file})" for i in items)
        if matches:
            raise MemoryNotFound(f"{item_id!r} matches several pending items: {known}.")
        raise MemoryNotFound(f"No pending memory {item_id!r}. Pending: {known}.")

    def discard(self, item_id: str) -> PendingItem:
        """Throw a proposed memory away; the memdir is not touched."""
        item = self.get(item_id)
        for suffix in (".md", ".json"):
            self.gate.remove(self.root / f"{item.id}{suffix}", missing_ok=True)
        return item

    def accept(self, item_id: str, store: MemoryStore, *, force: bool = False) -> WriteResult:
        """Write a pending item into the memdir through ``store`` and add its index pointer.

        The item's current text is used, so the person may edit it first. Refused with
        :class:`PendingConflict` when the memory changed since the item was proposed,
        unless ``force``.
        """
        item = self.get(item_id)
        text = item.text()
        with store.writing():
            path = store.resolve(item.file)
            current = store.root.read(path) if path.exists() else None
            if fingerprint(current) != item.base and not force:
                state = "was created" if item.base is None else "changed"
                raise PendingConflict(
                    f"{item.file} {state} after the extraction proposed item {item.id}; "
                    f"accepting would overwrite that. Compare with %memory show {item.file} "
                    f"and %memory pending show {item.id}, then accept with -f to overwrite "
                    "or discard the item."
                )
            result = store.write_file(item.file, text, provenance="extraction")
            before = store.read_index_for_edit()
            if parse_index(before).find(item.file) is None:
                doc = frontmatter.parse(text)
                title = item.title or _field(doc, "name") or Path(item.file).stem
                hook = item.hook or _field(doc, "description") or ""
                store.write_index(upsert_entry(before, item.file, title, hook))
        self.discard(item.id)
        return result


def _field(doc: frontmatter.Document, key: str) -> str | None:
    value = doc.get(key)
    if value is None or isinstance(value, (dict, list)):
        return None
    return " ".join(str(value).split()) or None


def _read(root: Root, path: Path) -> str | None:
    try:
        return root.read(path).decode("utf-8", errors="replace")
    except (OSError, InvalidPath):
        return None


def _visible_files(memdir: Root) -> list[tuple[Path, str]]:
    """Regular files under ``memdir`` whose path has no hidden part, with relative names."""
    found: list[tuple[Path, str]] = []
    if not memdir.is_dir(""):
        return found
    for folder, dirs, files in memdir.walk():
        dirs[:] = sorted(d for d in dirs if not d.startswith("."))
        base = Path(folder)
        for name in sorted(files):
            path = base / name
            if name.startswith(".") or path.is_symlink() or not path.is_file():
                continue
            found.append((path, path.relative_to(memdir.real).as_posix()))
    return found
