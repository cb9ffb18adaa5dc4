"""Content-addressed request parts: turn records that grow with the turn, not the session.

A request body repeats the system prompt, the tools and the whole conversation, so a
notebook whose every turn record kept its requests whole grew with the square of its
length. A version-2 record keeps each request as references instead:

- ``params``: the body's own fields (model, max_tokens, ...), verbatim;
- ``system`` and ``tools``: the digest of each block list;
- ``conversation``: the digest of a conversation part ``{"prefix": DIGEST | null,
  "messages": [DIGEST, ...]}``, a chain in which each part adds its messages to the
  conversation of its ``prefix``;
- ``cache_marks``: ``[message, block, cache_control]`` triples, because the moving
  breakpoint would otherwise make every message part differ from one call to the next.

Message parts are wire messages without ``cache_control``. Every part is stored once, in
the ``parts`` map of the first record of the session that needs it; later records refer to
it by digest. :func:`expand_request` rebuilds the exact body from any mapping of digests
to parts and checks it against the request's ``digest``.

:class:`PartStore` is the kernel side: one per session (``session.parts``), it knows
which digests the session's earlier records already hold. A new session (a restart, a
resume) starts a new store, so the records of one session never refer to another's.
"""

from __future__ import annotations

import copy
import hashlib
import json
import threading
import weakref
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from typing import Any

from jupyter_memory.errors import JupyterMemoryError
from jupyter_memory.memdir.gateway import package_root

__all__ = [
    "MissingPart",
    "PartStore",
    "content_digest",
    "expand_request",
    "known_part",
    "notebook_parts",
    "request_body",
    "turn_record_schema",
]

#: The JSON Schema of the turn record this package writes (shipped in the wheel); the lab
#: extension's TypeScript type is generated from it (``npm run build:schema``).
TURN_RECORD_SCHEMA = Path(__file__).parent.parent / "schemas" / "turn-record.v2.json"

#: Every part store of this process (weakly: a store goes with its session).
_LIVE: weakref.WeakSet[PartStore] = weakref.WeakSet()
_LIVE_LOCK = threading.Lock()

#: The body fields a version-2 request entry stores as parts; the others go to ``params``.
PART_FIELDS = ("system", "tools", "messages")


class MissingPart(JupyterMemoryError):
    """A request refers to a part that none of the given records holds."""

    def __init__(self, digest: str, what: str) -> None:
        self.digest = digest
        self.what = what
        super().__init__(
            f"The {what} part {digest[:19]}… of this request is not in the records given. "
            "It lives in an earlier turn output of the same session: keep that output in "
            "the notebook (or read the whole notebook) to rebuild the request.")


def content_digest(value: Any) -> str:
    """``sha256:`` of the canonical JSON of ``value`` (sorted keys, no spaces)."""
    raw = json.dumps(value, ensure_ascii=False, sort_keys=True, separators=(",", ":"))
    return "sha256:" + hashlib.sha256(raw.encode("utf-8")).hexdigest()


def _strip_marks(message: Mapping[str, Any], index: int) -> tuple[dict[str, Any], list[list[Any]]]:
    """``message`` without ``cache_control`` on its blocks, and where the markers were."""
    stripped = copy.deepcopy(dict(message))
    marks: list[list[Any]] = []
    content = stripped.get("content")
    if isinstance(content, list):
        for j, block in enumerate(content):
            if isinstance(block, dict) and "cache_control" in block:
                marks.append([index, j, block.pop("cache_control")])
    return stripped, marks


def _chain_key(previous: str, message_digest: str) -> str:
    return hashlib.sha256(f"{previous}|{message_digest}".encode()).hexdigest()


class PartStore:
    """The parts one session's records hold, and the conversations they spell.

    ``compact`` turns a request body into a version-2 request entry plus the parts the
    session has not stored yet; the caller puts those in the record it is building.
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.values: dict[str, Any] = {}
        with _LIVE_LOCK:  # for known_part; a store goes when its session does
            _LIVE.add(self)
        # rolling key of a message-digest prefix -> digest of the conversation part for it
        self._chains: dict[str, str] = {}

    def _put(self, value: Any, new: dict[str, Any]) -> str:
        key = content_digest(value)
        if key not in self.values:
            self.values[key] = value
            new[key] = value
        return key

    def compact(self, body: Mapping[str, Any]) -> tuple[dict[str, Any], dict[str, Any]]:
        """``(reference form of body, parts first stored now)``; see the module docstring."""
        with self._lock:
            return self._compact(body)

    def compact_all(
        self, bodies: Iterable[Mapping[str, Any]], *, keep: bool = True
    ) -> tuple[list[dict[str, Any]], dict[str, Any]]:
        """Every body in reference form, and the parts they need that are not stored yet.

        With ``keep=False`` the store forgets these parts again: the record that carries
        them may never reach the notebook (a failed turn fails its cell), so no later
        record may count on it.
        """
        with self._lock:
            saved = (dict(self.values), dict(self._chains)) if not keep else None
            refs: list[dict[str, Any]] = []
            new: dict[str, Any] = {}
            for body in bodies:
                ref, added = self._compact(body)
                refs.append(ref)
                new.update(added)
            if saved is not None:
                self.values, self._chains = saved
            return refs, new

    def _compact(self, body: Mapping[str, Any]) -> tuple[dict[str, Any], dict[str, Any]]:
        new: dict[str, Any] = {}
        ref: dict[str, Any] = {"params": {k: copy.deepcopy(v) for k, v in body.items()
                                          if k not in PART_FIELDS}}
        if "system" in body:
            ref["system"] = self._put(copy.deepcopy(body["system"]), new)
        if "tools" in body:
            ref["tools"] = self._put(copy.deepcopy(body["tools"]), new)
        marks: list[list[Any]] = []
        digests: list[str] = []
        for i, message in enumerate(body.get("messages") or []):
            stripped, found = _strip_marks(message, i)
            marks.extend(found)
            digests.append(self._put(stripped, new))
        keys = [""]
        for d in digests:
            keys.append(_chain_key(keys[-1], d))
        known = max((n for n in range(len(keys)) if keys[n] in self._chains), default=0)
        if known == len(digests) and digests:
            ref["conversation"] = self._chains[keys[known]]
        else:
            part = {"prefix": self._chains[keys[known]] if known else None,
                    "messages": digests[known:]}
            ref["conversation"] = self._chains[keys[-1]] = self._put(part, new)
        ref["cache_marks"] = marks
        return ref, new


def known_part(digest: str) -> Any:
    """A part any live session of this process stored, or ``None`` (the live turn view)."""
    with _LIVE_LOCK:
        stores = list(_LIVE)
    for store in stores:
        if digest in store.values:
            return store.values[digest]
    return None


Lookup = Callable[[str], Any]


def _lookup_from(parts: Mapping[str, Any] | Lookup) -> Lookup:
    if callable(parts):
        return parts
    return parts.get


def _resolve(lookup: Lookup, digest: Any, what: str) -> Any:
    value = lookup(digest) if isinstance(digest, str) else None
    if value is None:
        raise MissingPart(str(digest), what)
    return value


def _conversation(lookup: Lookup, digest: str) -> list[str]:
    """The message digests of a conversation part, following its prefix chain."""
    chunks: list[list[str]] = []
    seen: set[str] = set()
    current: Any = digest
    while current is not None:
        if current in seen:
            raise JupyterMemoryError(f"The conversation part {current[:19]}… refers to itself: "
                                     "the record is corrupt.")
        seen.add(current)
        part = _resolve(lookup, current, "conversation")
        chunks.append(list(part.get("messages") or []))
        current = part.get("prefix")
    return [d for chunk in reversed(chunks) for d in chunk]


def request_body(entry: Mapping[str, Any], parts: Mapping[str, Any] | Lookup) -> dict[str, Any]:
    """The exact body of a request entry of either record version.

    Version 1 entries carry their ``body``; version 2 entries are rebuilt from ``parts``
    (a digest → part mapping, or a lookup function). Raises :class:`MissingPart` naming
    the first part that cannot be found.
    """
    if isinstance(entry.get("body"), Mapping):
        return copy.deepcopy(dict(entry["body"]))
    lookup = _lookup_from(parts)
    body: dict[str, Any] = copy.deepcopy(dict(entry.get("params") or {}))
    if "system" in entry:
        body["system"] = copy.deepcopy(_resolve(lookup, entry["system"], "system"))
    messages = [copy.deepcopy(_resolve(lookup, d, "message"))
                for d in (_conversation(lookup, entry["conversation"])
                          if entry.get("conversation") else [])]
    for i, j, mark in entry.get("cache_marks") or []:
        messages[i]["content"][j]["cache_control"] = copy.deepcopy(mark)
    body["messages"] = messages
    if "tools" in entry:
        body["tools"] = copy.deepcopy(_resolve(lookup, entry["tools"], "tools"))
    return body


def expand_request(entry: Mapping[str, Any], parts: Mapping[str, Any] | Lookup) -> dict[str, Any]:
    """:func:`request_body`, checked against the entry's ``digest`` when it has one."""
    body = request_body(entry, parts)
    expected = entry.get("digest")
    if expected and content_digest(body) != expected:
        raise JupyterMemoryError(
            f"The rebuilt request does not match its digest {expected[:19]}…: a part of the "
            "notebook was edited by hand.")
    return body


def notebook_parts(records: Iterable[Mapping[str, Any]]) -> dict[str, Any]:
    """Every part the given turn records store, by digest."""
    out: dict[str, Any] = {}
    for record in records:
        parts = record.get("parts")
        if isinstance(parts, Mapping):
            out.update(parts)
    return out


def turn_record_schema() -> dict[str, Any]:
    """The JSON Schema of a version-2 turn record, as a dict."""
    schema: dict[str, Any] = json.loads(package_root().text(TURN_RECORD_SCHEMA))
    return schema
