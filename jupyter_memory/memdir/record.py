"""The memory record: what the scanner, the store and every front end pass around.

A :class:`Memory` describes one topic file of a memdir as read from its frontmatter and
its ``stat``. It is tolerant by design: a file with no frontmatter, no ``type`` or an
unknown ``type`` is still a memory (``name`` falls back to the file stem).
"""

from __future__ import annotations

import logging
import os
from collections.abc import Mapping
from dataclasses import dataclass, replace
from datetime import date, datetime
from pathlib import Path, PurePosixPath
from typing import Any

from jupyter_memory.memdir import trust_table
from jupyter_memory.memdir.clock import iso_utc
from jupyter_memory.memdir.freshness import age_days as _age_days
from jupyter_memory.memdir.frontmatter import Document
from jupyter_memory.memdir.index import INDEX_NAME, MAX_CHARS, MAX_LINES
from jupyter_memory.memdir.scopes import TEAM_PREFIX, scope_of

__all__ = [
    "AUTHOR_FIELD",
    "MEMORY_TYPES",
    "PROVENANCES",
    "PROVENANCE_ENV",
    "PROVENANCE_FIELD",
    "Memory",
    "provenance_from_env",
]

MEMORY_TYPES = ("user", "feedback", "project", "reference")
"""The four kinds of memory (docs/reference.md#topic-files); other values are kept but flagged unknown."""

PROVENANCES = ("user", "agent", "extraction", "import")
"""Who wrote a memory: a person, the main agent, the extraction agent, or an import."""

PROVENANCE_FIELD = "origin"
"""Frontmatter key recording provenance (top level when flat, under ``metadata:`` when nested)."""

PROVENANCE_ENV = "JUPYTER_MEMORY_PROVENANCE"
"""``0``/``false``/``no``/``off`` writes no :data:`PROVENANCE_FIELD`: the reference's exact shape
from every front end (the command line, the lab panel, and the default of
``Agent.provenance`` in a notebook)."""

_OFF = ("0", "false", "no", "off")
_ON = ("1", "true", "yes", "on")

AUTHOR_FIELD = "author"
"""Frontmatter key naming the person who wrote a team memory (docs/team.md)."""


def provenance_from_env(env: Mapping[str, str] | None = None) -> bool:
    """Whether writes record who made them (``origin:``): on unless ``$JUPYTER_MEMORY_PROVENANCE``
    switches it off. A value that is neither on nor off is logged and leaves it on."""
    raw = trust_table.env(PROVENANCE_ENV, env)
    value = (raw or "").strip().lower()
    if value in _OFF:
        return False
    if value and value not in _ON:
        logging.getLogger("jupyter_memory").warning(
            "%s=%r is neither on (1/true/yes/on) nor off (0/false/no/off); provenance stays on",
            PROVENANCE_ENV, raw)
    return True


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
    #: The line of its pointer in its index (``MEMORY.md``, or the team folder's own), or
    #: None when the index has none.
    index_line: int | None = None
    #: The limit (``"lines"`` or ``"chars"``) that cuts its index before that line, or None
    #: when the pointer is inside the part the model receives.
    index_cut: str | None = None
    #: The recall mode :attr:`loaded` is judged in: ``index`` (the default) or ``prefetch``.
    recall_mode: str = "index"

    @property
    def type_known(self) -> bool:
        """Whether ``type`` is one of :data:`MEMORY_TYPES`."""
        return self.type in MEMORY_TYPES

    @property
    def mtime_iso(self) -> str:
        return iso_utc(self.mtime)

    @property
    def loaded(self) -> bool:
        """Whether the model receives this memory's pointer line in :attr:`recall_mode`.

        ``indexed`` only says a pointer line exists; past the 200-line or 25,000-character
        cut of its index, or in prefetch mode (no index is sent), the model never sees it
        (docs/reference.md#the-index-and-its-limits).
        """
        return self.recall_mode == "index" and self.indexed and self.index_cut is None

    @property
    def loaded_reason(self) -> str:
        """Why :attr:`loaded` is what it is, in one clause for people."""
        index = f"{TEAM_PREFIX}{INDEX_NAME}" if self.scope == "team" else INDEX_NAME
        if self.recall_mode != "index":
            return ("prefetch mode sends no index: the memory reaches the model only when "
                    "prefetch attaches it to a message")
        if not self.indexed:
            return f"{index} has no pointer line for it"
        where = f"on line {self.index_line} of {index}" if self.index_line else f"in {index}"
        if self.index_cut is not None:
            limit = {"lines": f"{MAX_LINES}-line", "chars": f"{MAX_CHARS:,}-character"}.get(
                self.index_cut, self.index_cut)
            return f"its pointer is {where}, past the {limit} limit: the model never sees it"
        return f"its pointer {where} is in every request"

    def in_mode(self, mode: str) -> Memory:
        """This record with :attr:`loaded` judged in recall mode ``mode``."""
        return self if mode == self.recall_mode else replace(self, recall_mode=mode)

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
            "loaded": self.loaded,
            "loaded_reason": self.loaded_reason,
        }


def _provenance(value: Any) -> str | None:
    text = _text(value)
    if text is None:
        return None
    return text.lower() if text.lower() in PROVENANCES else text
