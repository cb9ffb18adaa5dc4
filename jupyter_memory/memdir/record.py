"""The memory record: what the scanner, the store and every front end pass around.

A :class:`Memory` describes one topic file of a memdir as read from its frontmatter and
its ``stat``. It is tolerant by design: a file with no frontmatter, no ``type`` or an
unknown ``type`` is still a memory (``name`` falls back to the file stem).
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from datetime import date, datetime
from pathlib import Path, PurePosixPath
from typing import Any

from jupyter_memory.memdir.clock import iso_utc
from jupyter_memory.memdir.freshness import age_days as _age_days
from jupyter_memory.memdir.frontmatter import Document
from jupyter_memory.memdir.scopes import scope_of

__all__ = [
    "AUTHOR_FIELD",
    "MEMORY_TYPES",
    "PROVENANCES",
    "PROVENANCE_FIELD",
    "Memory",
]

MEMORY_TYPES = ("user", "feedback", "project", "reference")
"""The four kinds of memory (docs/reference.md#topic-files); other values are kept but flagged unknown."""

PROVENANCES = ("user", "agent", "extraction", "import")
"""Who wrote a memory: a person, the main agent, the extraction agent, or an import."""

PROVENANCE_FIELD = "origin"
"""Frontmatter key recording provenance (top level when flat, under ``metadata:`` when nested)."""

AUTHOR_FIELD = "author"
"""Frontmatter key naming the person who wrote a team memory (docs/team.md)."""


def _text(value: Any) -> str | None:
    """A header value as one stripped string, or ``None`` for absent, empty or structured values."""
    if value is None or isinstance(value, (dict, list, tuple, set, bytes)):
        return None
    if isinstance(value, bool):
        text = "true" if value else "false"
    elif isinstance(value, (datetime, date)):
        text = value.isoformat()
    else:
        text = str(value)
    text = text.strip()
    return text or None


@dataclass
class Memory:
    """One topic file of a memdir.

    ``file`` is the path relative to the memdir with ``/`` separators, ``path`` the
    absolute path. ``type`` is kept as written (``None`` when missing); check
    :attr:`type_known` before trusting it. ``provenance`` comes from the ``origin`` field
    (``user | agent | extraction | import``; ``None`` for files that predate it).
    ``error`` carries a frontmatter problem that was recovered from.
    """

    file: str
    path: Path
    name: str
    description: str | None
    type: str | None
    mtime: float
    age_days: int
    bytes: int
    indexed: bool
    shape: str
    origin_session_id: str | None = None
    provenance: str | None = None
    error: str | None = None
    #: ``private`` (the person's memdir) or ``team`` (the shared folder; ``file`` starts
    #: with ``team/``), docs/reference.md#team-mode.
    scope: str = "private"
    #: Who wrote it (the ``author`` field every team write records), or None.
    author: str | None = None

    @property
    def type_known(self) -> bool:
        """Whether ``type`` is one of :data:`MEMORY_TYPES`."""
        return self.type in MEMORY_TYPES

    @property
    def mtime_iso(self) -> str:
        return iso_utc(self.mtime)

    @classmethod
    def from_document(
        cls,
        file: str | os.PathLike[str],
        path: str | os.PathLike[str],
        doc: Document,
        stat: os.stat_result,
        indexed: bool,
        *,
        now: float | None = None,
    ) -> Memory:
        """Build the record from a parsed file and its ``os.stat`` result.

        ``file`` may be given with the platform's separators; it is stored with ``/``.
        ``now`` (a POSIX timestamp) fixes the clock for ``age_days``.
        """
        rel = PurePosixPath(*Path(file).parts).as_posix()
        name = _text(doc.get("name")) or PurePosixPath(rel).stem
        kind = _text(doc.get("type"))
        return cls(
            file=rel,
            path=Path(path),
            name=name,
            description=_text(doc.get("description")),
            type=kind.lower() if kind and kind.lower() in MEMORY_TYPES else kind,
            mtime=stat.st_mtime,
            age_days=_age_days(stat.st_mtime, now),
            bytes=stat.st_size,
            indexed=indexed,
            shape=doc.shape,
            origin_session_id=_text(doc.get("originSessionId")),
            provenance=_provenance(doc.get(PROVENANCE_FIELD)),
            error=doc.error,
            scope=scope_of(rel),
            author=_text(doc.get(AUTHOR_FIELD)),
        )

    def to_json(self) -> dict[str, Any]:
        """The documented JSON record (``mtime`` as ISO 8601 UTC); stable key order."""
        return {
            "file": self.file,
            "name": self.name,
            "description": self.description,
            "type": self.type,
            "mtime": iso_utc(self.mtime),
            "age_days": self.age_days,
            "bytes": self.bytes,
            "indexed": self.indexed,
            "shape": self.shape,
            "origin_session_id": self.origin_session_id,
            "provenance": self.provenance,
            "error": self.error,
            "scope": self.scope,
            "author": self.author,
        }


def _provenance(value: Any) -> str | None:
    text = _text(value)
    if text is None:
        return None
    return text.lower() if text.lower() in PROVENANCES else text
