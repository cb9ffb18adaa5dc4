"""Content-addressed parts: turn records that grow with what they show, not the session.

A request body repeats the system prompt, the tools and the whole conversation, so a
notebook whose every turn record kept its requests whole grew with the square of its
length. A record keeps each request as references instead (version 2 and later):

- ``params``: the body's own fields (model, max_tokens, ...), verbatim;
- ``system`` and ``tools``: the digest of each block list;
- ``conversation``: the digest of a conversation part ``{"prefix": DIGEST | null,
  "messages": [DIGEST, ...]}``, a chain in which each part adds its messages to the
  conversation of its ``prefix``;
- ``cache_marks``: ``[message, block, cache_control]`` triples, because the moving
  breakpoint would otherwise make every message part differ from one call to the next.

Message parts are wire messages without ``cache_control``. From version 3, every long
string in a message part, and in the record's own ``messages`` and ``tool_calls``, is a
text part referred to as ``{"$part": DIGEST}`` (:mod:`part_refs`), so a tool's output is
kept once however many places name it; the turn's recall decisions, which repeat from turn
to turn, are a part too. Every part is stored once, in the first record of the session
that needs it; later records refer to it by digest. A text part is a string in the
record's ``parts``; from version 4 a structured part (a message, a conversation link, a
block list, recall decisions) is in ``json_parts`` as the canonical JSON its digest is the
``sha256`` of, one string, because nbformat's indented writer gives every value of a
structure a line of its own (:func:`stored_parts`, :func:`record_parts`).
:func:`expand_request` rebuilds the exact body from any mapping of digests to parts and
checks it against the request's ``digest``; :func:`expand_record` puts a record's texts back.

:class:`PartStore` is the kernel side: one per session (``session.parts``), it knows
which digests the session's earlier records already hold. A new session (a restart, a
resume) starts a new store, so the records of one session never refer to another's.
"""

from __future__ import annotations

import hashlib
import json
import logging
import threading
import weakref
from collections.abc import Callable, Iterable, Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from jupyter_memory.context.json_copy import copy_json
from jupyter_memory.context.part_refs import REF_KEY, TEXT_PART_MIN, refer, references, resolve
from jupyter_memory.errors import JupyterMemoryError
from jupyter_memory.memdir.gateway import package_root

logger = logging.getLogger("jupyter_memory")

__all__ = [
    "ELSEWHERE",
    "JSON_PARTS",
    "RECORD_VERSION",
    "STORED_SECTIONS",
    "JsonPiece",
    "MissingPart",
    "PartBatch",
    "PartStore",
    "content_digest",
    "expand_record",
    "expand_request",
    "json_piece",
    "known_part",
    "notebook_parts",
    "readable",
    "record_lookup",
    "record_parts",
    "request_body",
    "stored_parts",
    "turn_record_schema",
]

#: The turn record shape this package writes. 4: structured parts as their JSON text;
#: 3: long texts and recall decisions as parts; 2: requests as references to parts; 1: each
#: request's whole body.
RECORD_VERSION = 4

#: The record field of a version 4 record's structured parts (digest -> canonical JSON).
JSON_PARTS = "json_parts"

#: The JSON Schema of the turn record this package writes (shipped in the wheel); the lab
#: extension's TypeScript type is generated from it (``npm run build:schema``).
TURN_RECORD_SCHEMA = Path(__file__).parent.parent / "schemas" / f"turn-record.v{RECORD_VERSION}.json"

#: The sections of a record whose long texts are text parts (a section that lists what an
#: agent did, in the shape of ``messages`` or ``tool_calls``, joins this tuple).
STORED_SECTIONS = ("messages", "tool_calls")

#: What a display shows for a text stored in an output it cannot see.
ELSEWHERE = "(kept once, in an earlier output of this notebook)"

#: Every part store of this process, weakly (a store goes with its session): a tuple
#: replaced whole under the lock, so :func:`known_part` reads it without taking the lock
#: (it runs for every message of every request a turn's HTML rebuilds).
_LIVE: tuple[weakref.ref[PartStore], ...] = ()
_LIVE_LOCK = threading.Lock()


def _live_add(store: PartStore) -> None:
    """Add ``store``, leaving out the stores that went (no weakref callback: one could run
    in the middle of this, under the lock)."""
    global _LIVE
    with _LIVE_LOCK:
        _LIVE = (*(ref for ref in _LIVE if ref() is not None), weakref.ref(store))

#: The body fields a request entry stores as parts; the others go to ``params``.
PART_FIELDS = ("system", "tools", "messages")


class MissingPart(JupyterMemoryError):
    """A request or a record refers to a part that none of the given records holds."""

    def __init__(self, digest: str, what: str) -> None:
        self.digest = digest
        self.what = what
        super().__init__(
            f"The {what} part {digest[:19]}… is not in the records given. "
            "It lives in an earlier turn output of the same session: keep that output in "
            "the notebook (or read the whole notebook) to rebuild it.")


def _canonical(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, sort_keys=True, separators=(",", ":"))


def _digest_of(raw: str) -> str:
    return "sha256:" + hashlib.sha256(raw.encode("utf-8")).hexdigest()


def _digest_of_raw(raw: bytes) -> str:
    return "sha256:" + hashlib.sha256(raw).hexdigest()


def content_digest(value: Any) -> str:
    """``sha256:`` of the canonical JSON of ``value`` (sorted keys, no spaces)."""
    if type(value) is dict and type(value.get("messages")) is list:
        return _digest_of_raw(_BODIES.canonical(value))
    return _digest_of(_canonical(value))


#: The leaves whose JSON a value equal to them (``==``) may still write differently:
#: ``1``, ``1.0`` and ``True`` are equal, and so are ``0.0`` and ``-0.0``.
_NUMBERS = (int, float, bool)
_Path = tuple[Any, ...]


def _number_leaves(value: Any, path: _Path, out: list[tuple[_Path, Any]]) -> bool:
    """Add the path and value of every number in ``value`` to ``out``; False when
    ``value`` holds something other than JSON (then it is not remembered)."""
    kind = type(value)
    if kind is str or value is None:
        return True
    if kind is dict:
        return all(type(k) is str and _number_leaves(v, (*path, k), out)
                   for k, v in value.items())
    if kind is list:
        return all(_number_leaves(v, (*path, i), out) for i, v in enumerate(value))
    if kind in _NUMBERS:
        out.append((path, value))
        return True
    return False


class JsonPiece:
    """A JSON value as first seen (a copy), the numbers in it, and its canonical JSON:
    :meth:`same` tells, without serialising it, whether another value is written the same."""

    __slots__ = ("numbers", "raw", "value")

    def __init__(self, value: Any, numbers: list[tuple[_Path, Any]], raw: bytes) -> None:
        self.value = value
        self.numbers = numbers
        self.raw = raw

    def same(self, other: Any) -> bool:
        """Whether ``other`` has exactly this canonical JSON: equal, and each of its
        numbers of the same type as here (a float also of the same ``repr``)."""
        if other != self.value:
            return False
        for path, number in self.numbers:
            node = other
            for step in path:
                node = node[step]
            if type(node) is not type(number) or (
                    type(number) is float and repr(node) != repr(number)):
                return False
        return True


def _same(remembered: Any, value: Any) -> bool:
    """Whether ``value`` is written as ``remembered`` was: a :class:`JsonPiece` compares
    the numbers' types too (``1``, ``True`` and ``1.0`` are equal in Python, not in JSON);
    anything else (not plain JSON) must be equal."""
    if isinstance(remembered, JsonPiece):
        return remembered.same(value)
    return bool(remembered == value)


def json_piece(value: Any) -> JsonPiece | None:
    """``value`` remembered as a :class:`JsonPiece`, or None when it is not plain JSON
    (dicts with string keys, lists, strings, numbers, booleans, None)."""
    numbers: list[tuple[_Path, Any]] = []
    if not _number_leaves(value, (), numbers):
        return None
    return JsonPiece(copy_json(value), numbers, _canonical(value).encode("utf-8"))


class _BodyMemo:
    """Canonical JSON of request bodies, from the pieces the last ones had.

    A body repeats the system prompt, the tools and the conversation of the one before,
    and three digests are taken of each main request (the call log, the turn record, the
    turn's HTML, which rebuilds it): serialising them whole each time was a visible share
    of a turn's cost. A piece is reused only when it is equal to the one remembered and
    its numbers are of the same types (:meth:`JsonPiece.same`), so the JSON is byte for byte
    the one ``json.dumps`` writes. A few conversations are kept (the main agent's, a
    delegated one's, the selector's), each by its messages' places.
    """

    SLOTS = 4

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._fields: dict[str, list[JsonPiece]] = {}
        self._conversations: list[list[JsonPiece | None]] = []

    def canonical(self, body: dict[str, Any]) -> bytes:
        keys = sorted(body) if all(type(k) is str for k in body) else None
        if keys is None:
            return _canonical(body).encode("utf-8")
        out = [b"{"]
        with self._lock:
            for n, key in enumerate(keys):
                if n:
                    out.append(b",")
                out.append(_canonical(key).encode("utf-8") + b":")
                value = body[key]
                if key == "messages":
                    out.append(self._messages(value))
                elif key in ("system", "tools"):
                    out.append(self._field(key, value))
                else:
                    out.append(_canonical(value).encode("utf-8"))
        out.append(b"}")
        return b"".join(out)

    def _field(self, key: str, value: Any) -> bytes:
        kept = self._fields.setdefault(key, [])
        for i, piece in enumerate(kept):
            if piece.same(value):
                if i:
                    kept.insert(0, kept.pop(i))
                return piece.raw
        fresh = json_piece(value)
        if fresh is None:
            return _canonical(value).encode("utf-8")
        kept.insert(0, fresh)
        del kept[self.SLOTS:]
        return fresh.raw

    def _messages(self, messages: list[Any]) -> bytes:
        if not messages:
            return b"[]"
        kept = self._conversations
        for i, pieces in enumerate(kept):  # the conversation that starts the same way
            first = pieces[0] if pieces else None
            if first is not None and first.same(messages[0]):
                kept.insert(0, kept.pop(i))
                break
        else:
            kept.insert(0, [])
            del kept[self.SLOTS:]
        pieces = kept[0]
        raws = []
        for i, message in enumerate(messages):
            piece = pieces[i] if i < len(pieces) else None
            if piece is None or not piece.same(message):
                piece = json_piece(message)
                if i < len(pieces):
                    pieces[i] = piece
                else:
                    pieces.append(piece)
            raws.append(piece.raw if piece is not None else _canonical(message).encode("utf-8"))
        del pieces[len(messages):]
        return b"[" + b",".join(raws) + b"]"


_BODIES = _BodyMemo()


def _strip_marks(message: Mapping[str, Any], index: int) -> tuple[Mapping[str, Any], list[list[Any]]]:
    """``message`` without ``cache_control`` on its blocks, and where the markers were.

    Only the blocks that carried a marker are copied; the rest are the message's own.
    """
    content = message.get("content")
    if not isinstance(content, list):
        return message, []
    for b in content:
        if isinstance(b, dict) and "cache_control" in b:
            break
    else:
        return message, []
    marks: list[list[Any]] = []
    blocks = []
    for j, block in enumerate(content):
        if isinstance(block, dict) and "cache_control" in block:
            marks.append([index, j, copy_json(block["cache_control"])])
            block = {k: v for k, v in block.items() if k != "cache_control"}
        blocks.append(block)
    return {**message, "content": blocks}, marks


def _chain_key(previous: str, message_digest: str) -> str:
    return hashlib.sha256(f"{previous}|{message_digest}".encode()).hexdigest()


class PartStore:
    """The parts one session's records hold, and the conversations they spell.

    A record is built in one :meth:`batch`: its requests in reference form, its sections
    with their long texts as references, each part the session has not stored yet added
    to the batch's ``new`` (which the record carries as its ``parts``).
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.values: dict[str, Any] = {}
        _live_add(self)  # for known_part; a store goes when its session does
        # rolling key of a message-digest prefix -> digest of the conversation part for it
        self._chains: dict[str, str] = {}
        # The last request's messages (markers stripped), their digests and the chain key of
        # the conversation up to each: a message equal to the one at the same place last
        # time has the same digest, found by a comparison instead of serialising and hashing
        # the whole conversation at every call, and the same messages the same chain keys.
        # (what was remembered of each message: a JsonPiece, a copy, so a message changed
        # in place or a number of another type is seen as new)
        self._recent: list[tuple[Any, str, str]] = []
        # slot ("system", "tools", "decisions") -> (the value stored last, its digest)
        self._memo: dict[str, tuple[Any, str]] = {}
        # the digests some record of the session carries (the call log holds parts that
        # no record carries yet: values may know more than the records do)
        self._saved: set[str] = set()

    def _put(self, value: Any, new: dict[str, Any] | None, raw: str | None = None) -> str:
        """Store ``value`` (once per session) and, unless ``new`` is None (held for the
        call log), put it in ``new`` when no record carries it yet."""
        key = _digest_of(_canonical(value) if raw is None else raw)
        if key not in self.values:
            self.values[key] = value
        if new is not None:
            self._carry(key, new)
        return key

    def _carry(self, key: str, new: dict[str, Any]) -> None:
        """Put ``key`` and every part it refers to (a conversation's prefix and messages, a
        message's long texts) in ``new``, each unless a record already carries it."""
        pending = [key]
        while pending:
            digest = pending.pop()
            if digest in self._saved or digest not in self.values:
                continue
            value = self.values[digest]
            new[digest] = value
            self._saved.add(digest)
            if isinstance(value, dict) and set(value) == {"prefix", "messages"}:
                pending.extend(value["messages"])
                if value["prefix"] is not None:
                    pending.append(value["prefix"])
            else:
                pending.extend(references(value))

    def _put_slot(self, slot: str, value: Any, new: dict[str, Any] | None,
                  raw: str | None = None) -> str:
        """:meth:`_put` for a value that is usually the same as last time in its slot."""
        last = self._memo.get(slot)
        if last is not None and _same(last[0], value):
            if new is not None:
                self._carry(last[1], new)
            return last[1]
        stored = copy_json(value)
        key = self._put(stored, new, raw)
        self._memo[slot] = (json_piece(value) or self.values[key], key)
        return key

    @contextmanager
    def batch(self, *, keep: bool = True) -> Iterator[PartBatch]:
        """Build one record's parts. With ``keep=False`` the store forgets them again: the
        record that carries them may never reach the notebook (a failed turn fails its
        cell), so no later record may count on it."""
        with self._lock:
            saved = None if keep else (
                dict(self.values), dict(self._chains), list(self._recent), dict(self._memo),
                set(self._saved))
            try:
                yield PartBatch(self)
            finally:
                if saved is not None:
                    (self.values, self._chains, self._recent, self._memo,
                     self._saved) = saved

    def adopt(self, parts: Mapping[str, Any]) -> None:
        """Count ``parts`` (a failed turn's record's ``parts``, which its batch did not keep)
        as carried, once that record is on the page: later records refer to them instead of
        carrying them a second time."""
        with self._lock:
            for digest, value in parts.items():
                self.values.setdefault(digest, value)
                self._saved.add(digest)

    def hold(self, body: Mapping[str, Any]) -> dict[str, Any]:
        """The reference form of ``body``, its parts kept in this store but in no record
        yet (the call log: :meth:`carry` hands them to the record that carries the call)."""
        with self._lock:
            return self._compact(body, None)

    def carry(self, refs: Iterable[Mapping[str, Any]], *, keep: bool = True) -> dict[str, Any]:
        """The parts the given reference forms need that no record carries yet; with
        ``keep=False`` later records still count them as not carried."""
        new: dict[str, Any] = {}
        with self._lock:
            saved = set(self._saved)
            self._carry_refs(refs, new)
            if not keep:
                self._saved = saved
        return new

    def _carry_refs(self, refs: Iterable[Mapping[str, Any]], new: dict[str, Any]) -> None:
        for ref in refs:
            for field in ("system", "tools", "conversation"):
                if isinstance(ref.get(field), str):
                    self._carry(ref[field], new)

    def compact(self, body: Mapping[str, Any]) -> tuple[dict[str, Any], dict[str, Any]]:
        """``(reference form of body, parts first stored now)``; see the module docstring."""
        with self.batch() as batch:
            ref = batch.request(body)
        return ref, batch.new

    def _compact(self, body: Mapping[str, Any], new: dict[str, Any] | None) -> dict[str, Any]:
        ref: dict[str, Any] = {"params": {k: copy_json(v) for k, v in body.items()
                                          if k not in PART_FIELDS}}
        if "system" in body:
            ref["system"] = self._put_slot("system", body["system"], new)
        if "tools" in body:
            ref["tools"] = self._put_slot("tools", body["tools"], new)
        marks: list[list[Any]] = []
        digests: list[str] = []
        recent: list[tuple[Any, str, str]] = []
        keys = [""]
        same = True  # every message so far is the one at its place last time
        last = self._recent
        for i, message in enumerate(body.get("messages") or []):
            stripped, found = _strip_marks(message, i)
            marks.extend(found)
            if i < len(last) and _same(last[i][0], stripped):
                key, remembered = last[i][1], last[i][0]
            else:
                key = self._put(self._texts(stripped, new), new)
                remembered = json_piece(stripped) or copy_json(stripped)
                same = False
            chain = last[i][2] if same else _chain_key(keys[-1], key)
            digests.append(key)
            keys.append(chain)
            recent.append((remembered, key, chain))
        self._recent = recent
        # the longest known prefix, looked for from the end: usually all of it is known
        known = next((n for n in range(len(keys) - 1, 0, -1) if keys[n] in self._chains), 0)
        if known == len(digests) and digests:
            ref["conversation"] = self._chains[keys[known]]
            if new is not None:
                self._carry(ref["conversation"], new)
        else:
            part = {"prefix": self._chains[keys[known]] if known else None,
                    "messages": digests[known:]}
            ref["conversation"] = self._chains[keys[-1]] = self._put(part, new)
        ref["cache_marks"] = marks
        return ref

    def _texts(self, value: Any, new: dict[str, Any] | None) -> Any:
        return refer(value, lambda text: self._put(text, new))


class PartBatch:
    """The parts of one record while it is built (:meth:`PartStore.batch`)."""

    def __init__(self, store: PartStore) -> None:
        self._store = store
        #: The parts no earlier record of the session holds: the record's ``parts``.
        self.new: dict[str, Any] = {}

    def request(self, body: Mapping[str, Any]) -> dict[str, Any]:
        """A request body in reference form (its parts stored)."""
        return self._store._compact(body, self.new)

    def texts(self, value: Any) -> Any:
        """``value`` with each long string a reference to its text part."""
        return self._store._texts(value, self.new)

    def value(self, slot: str, value: Any) -> Any:
        """``value`` as a reference to a part when its JSON is long, else itself.

        ``slot`` names what it is (``"decisions"``): a value equal to the slot's previous
        one is found by a comparison, not serialised again.
        """
        last = self._store._memo.get(slot)
        if last is not None and _same(last[0], value):
            return {REF_KEY: last[1]}
        raw = _canonical(value)
        if len(raw) < TEXT_PART_MIN:
            return value
        return {REF_KEY: self._store._put_slot(slot, value, self.new, raw)}

    def carry(self, refs: Iterable[Mapping[str, Any]]) -> None:
        """Add the parts the call log's reference forms need that no record carries yet
        (:meth:`PartStore.carry`, within this batch's keep rule)."""
        self._store._carry_refs(refs, self.new)


def known_part(digest: str) -> Any:
    """A part any live session of this process stored, or ``None`` (the live turn view)."""
    for ref in _LIVE:
        store = ref()
        if store is not None:
            value = store.values.get(digest, _ABSENT)
            if value is not _ABSENT:
                return value
    return None


_ABSENT = object()


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


def request_body(entry: Mapping[str, Any], parts: Mapping[str, Any] | Lookup, *,
                 version: int = RECORD_VERSION, copied: bool = True) -> dict[str, Any]:
    """The exact body of a request entry of any record version.

    Version 1 entries carry their ``body``; later entries are rebuilt from ``parts`` (a
    digest → part mapping, or a lookup function), and from version 3 the texts their
    message parts refer to are put back (``version`` is the record's). Raises
    :class:`MissingPart` naming the first part that cannot be found.

    ``copied=False`` is for a body only read (the turn's HTML): it shares its system
    prompt and tools with the parts, and each message with the bodies read before while
    the lookup finds the very same part and texts for it (:func:`_read_message`).
    """
    if not copied and version >= 3 and not isinstance(entry.get("body"), Mapping):
        shared = _shared_body(entry, _lookup_from(parts))
        if shared is not None:
            return shared[0]
    if isinstance(entry.get("body"), Mapping):
        whole: dict[str, Any] = copy_json(dict(entry["body"]))
        return whole
    lookup = _lookup_from(parts)
    body: dict[str, Any] = copy_json(dict(entry.get("params") or {}))
    if "system" in entry:
        body["system"] = copy_json(_resolve(lookup, entry["system"], "system"))
    messages = [_message(lookup, d, version)
                for d in (_conversation(lookup, entry["conversation"])
                          if entry.get("conversation") else [])]
    for i, j, mark in entry.get("cache_marks") or []:
        messages[i]["content"][j]["cache_control"] = copy_json(mark)
    body["messages"] = messages
    if "tools" in entry:
        body["tools"] = copy_json(_resolve(lookup, entry["tools"], "tools"))
    return body


def _message(lookup: Lookup, digest: str, version: int) -> dict[str, Any]:
    message = _resolve(lookup, digest, "message")
    if version < 3:  # before text parts, a "$part" in a message was the model's own text
        copied: dict[str, Any] = copy_json(dict(message))
        return copied
    return dict(resolve(message, lookup, _missing_text))


def _missing_text(digest: str) -> Any:
    raise MissingPart(digest, "text")


#: Message digest -> (its part, each text it refers to with the text found, the message
#: with its texts put back), for bodies only read: a turn's HTML rebuilds the whole
#: conversation of each request, most of it the same messages as the turn before.
_READ: dict[str, tuple[Any, tuple[tuple[str, Any], ...], dict[str, Any]]] = {}
_READ_MAX = 4096
#: (slot, part digest) -> the value read from that part (a message of :data:`_READ`, a
#: system prompt or tools part itself) and its canonical JSON, while it is that value.
_READ_RAW: dict[tuple[str, str], tuple[Any, bytes]] = {}


def _read_message(lookup: Lookup, digest: str) -> dict[str, Any] | None:
    """The message of ``digest`` with its texts, shared: the one built before while the
    lookup finds the very same part and texts (parts are never changed), else a new one.
    None for a part that is not a message."""
    part = _resolve(lookup, digest, "message")
    known = _READ.get(digest)
    if known is not None and known[0] is part and all(lookup(d) is text for d, text in known[1]):
        return known[2]
    if type(part) is not dict:
        return None
    message = resolve(part, lookup, _missing_text, copied=False)
    if type(message) is not dict:
        return None
    if len(_READ) >= _READ_MAX:
        _READ.clear()
        _READ_RAW.clear()
    _READ[digest] = (part, tuple((d, lookup(d)) for d in references(part)), message)
    return message


def _read_raw(slot: str, digest: str, value: Any) -> bytes:
    """The canonical JSON of ``value``, read from part ``digest``: kept while what is read
    from it is that very value (read-only, never changed)."""
    known = _READ_RAW.get((slot, digest))
    if known is not None and known[0] is value:
        return known[1]
    raw = _canonical(value).encode("utf-8")
    _READ_RAW[(slot, digest)] = (value, raw)
    return raw


def _shared_body(entry: Mapping[str, Any],
                 lookup: Lookup) -> tuple[dict[str, Any], Callable[[], bytes]] | None:
    """:func:`request_body` of a version 3 entry for reading only, and what gives its
    canonical JSON from the JSON of its parts (kept: :func:`_read_raw`); None when the
    entry is not one this can rebuild (the copying path then does, or says what is wrong).
    """
    body: dict[str, Any] = copy_json(dict(entry.get("params") or {}))
    fields: dict[str, tuple[str, Any]] = {}
    if "system" in entry:
        body["system"] = _resolve(lookup, entry["system"], "system")
        fields["system"] = (entry["system"], body["system"])
    messages = []
    digests = _conversation(lookup, entry["conversation"]) if entry.get("conversation") else []
    for d in digests:
        message = _read_message(lookup, d)
        if message is None:
            return None
        messages.append(message)
    marked: set[int] = set()
    for mark in entry.get("cache_marks") or []:
        if not (isinstance(mark, list) and len(mark) == 3 and type(mark[0]) is int
                and type(mark[1]) is int and 0 <= mark[0] < len(messages)):
            return None
        i, j, value = mark
        content = messages[i].get("content")
        if type(content) is not list or not 0 <= j < len(content) or type(content[j]) is not dict:
            return None
        if i not in marked:  # the marks go on copies: the shared message stays as it is
            messages[i] = {**messages[i], "content": list(content)}
            marked.add(i)
        blocks = messages[i]["content"]
        blocks[j] = {**blocks[j], "cache_control": copy_json(value)}
    body["messages"] = messages
    if "tools" in entry:
        body["tools"] = _resolve(lookup, entry["tools"], "tools")
        fields["tools"] = (entry["tools"], body["tools"])

    def canonical() -> bytes:
        if not all(type(k) is str for k in body):
            return _canonical(body).encode("utf-8")
        out = []
        for key in sorted(body):
            if key == "messages":
                raw = b"[" + b",".join(
                    _canonical(m).encode("utf-8") if i in marked
                    else _read_raw("message", d, m)
                    for i, (d, m) in enumerate(zip(digests, messages, strict=True))) + b"]"
            elif key in fields:
                raw = _read_raw(key, *fields[key])
            else:
                raw = _canonical(body[key]).encode("utf-8")
            out.append(_canonical(key).encode("utf-8") + b":" + raw)
        return b"{" + b",".join(out) + b"}"

    return body, canonical


def expand_request(entry: Mapping[str, Any], parts: Mapping[str, Any] | Lookup, *,
                   version: int = RECORD_VERSION, copied: bool = True) -> dict[str, Any]:
    """:func:`request_body`, checked against the entry's ``digest`` when it has one
    (``copied=False``: a body only read, which shares what it can, and whose digest is
    taken from the JSON of the parts it was read from)."""
    shared = None
    if not copied and version >= 3 and not isinstance(entry.get("body"), Mapping):
        shared = _shared_body(entry, _lookup_from(parts))
    body = shared[0] if shared is not None else request_body(
        entry, parts, version=version, copied=copied)
    expected = entry.get("digest")
    if expected and (_digest_of_raw(shared[1]()) if shared is not None
                     else content_digest(body)) != expected:
        raise JupyterMemoryError(
            f"The rebuilt request does not match its digest {expected[:19]}…: a part of the "
            "notebook was edited by hand.")
    return body


def stored_parts(new: Mapping[str, Any]) -> dict[str, dict[str, Any]]:
    """The ``parts`` and ``json_parts`` fields of a record that stores the parts ``new``
    (digest -> part): texts as they are, structured parts as their canonical JSON."""
    texts: dict[str, Any] = {}
    encoded: dict[str, str] = {}
    for digest, value in new.items():
        if type(value) is str:
            texts[digest] = value
        else:
            raw = _canonical(value)
            encoded[digest] = raw
            _remember_decoded(digest, raw, value)  # the live view reads the store's value
    return {"parts": texts, **({JSON_PARTS: encoded} if encoded else {})}


#: digest -> (the JSON text a record stores for it, the value read from that text): a
#: notebook's records are read again at every display, and the memos of :func:`_shared_body`
#: keep what they built while the lookup finds the very same part.
_DECODED: dict[str, tuple[str, Any]] = {}
_DECODED_MAX = 8192


def _remember_decoded(digest: str, raw: str, value: Any) -> None:
    if len(_DECODED) >= _DECODED_MAX:
        _DECODED.clear()
    _DECODED[digest] = (raw, value)


def _decoded(digest: str, raw: Any) -> Any:
    """The structured part stored as ``raw``, or None when it is not JSON (a hand edit:
    whatever needs the part then names it as missing)."""
    known = _DECODED.get(digest)
    if known is not None and (known[0] is raw or known[0] == raw):
        return known[1]
    if type(raw) is not str:
        logger.warning("The stored part %s is not a JSON text; it is treated as missing.",
                       digest[:19])
        return None
    try:
        value = json.loads(raw)
    except (ValueError, RecursionError) as exc:  # RecursionError: nested past Python's limit
        logger.warning("The stored part %s is not valid JSON (%s); it is treated as missing.",
                       digest[:19], exc)
        return None
    _remember_decoded(digest, raw, value)
    return value


def record_parts(record: Mapping[str, Any]) -> dict[str, Any]:
    """Every part ``record`` stores, by digest, its structured parts read from their JSON
    (shared: read them, never change them)."""
    out: dict[str, Any] = {}
    parts = record.get("parts")
    if isinstance(parts, Mapping):
        out.update(parts)
    encoded = record.get(JSON_PARTS)
    if isinstance(encoded, Mapping):
        for digest, raw in encoded.items():
            value = _decoded(digest, raw)
            if value is not None:
                out[digest] = value
    return out


def notebook_parts(records: Iterable[Mapping[str, Any]]) -> dict[str, Any]:
    """Every part the given turn records store, by digest."""
    out: dict[str, Any] = {}
    for record in records:
        out.update(record_parts(record))
    return out


def record_lookup(record: Mapping[str, Any], then: Lookup | None = known_part) -> Lookup:
    """Find a part in ``record``'s own parts, else through ``then`` (by default the parts
    of this process's live sessions, which hold every part a live record needs)."""
    parts = record.get("parts")
    own: Mapping[str, Any] = parts if isinstance(parts, Mapping) else {}
    encoded = record.get(JSON_PARTS)
    coded: Mapping[str, Any] = encoded if isinstance(encoded, Mapping) else {}

    def lookup(digest: str) -> Any:
        found = own.get(digest)
        if found is None and digest in coded:
            found = _decoded(digest, coded[digest])
        return found if found is not None or then is None else then(digest)

    return lookup


def expand_record(record: Mapping[str, Any], lookup: Lookup,
                  missing: Callable[[str], Any] = _missing_text, *,
                  sections: Iterable[str] = STORED_SECTIONS,
                  copied: bool = True) -> dict[str, Any]:
    """A copy of ``record`` whose stored ``sections`` hold their texts again, and whose
    recall decisions are a list (a record before version 3 is returned as it is).

    ``missing(digest)`` gives what stands for a part ``lookup`` does not find; by default
    :class:`MissingPart` is raised. ``copied=False`` shares the parts (read-only use).
    """
    out = dict(record)
    if not isinstance(record.get("version"), int) or record["version"] < 3:
        return out
    for section in sections:
        if section in out:
            out[section] = resolve(out[section], lookup, missing, copied=copied)
    recall = out.get("recall")
    if isinstance(recall, Mapping) and "decisions" in recall:
        decisions = resolve(recall["decisions"], lookup, lambda digest: [], copied=copied)
        out["recall"] = {**recall, "decisions": decisions if isinstance(decisions, list) else []}
    return out


def readable(record: Mapping[str, Any], lookup: Lookup | None = None, *,
             sections: Iterable[str] = STORED_SECTIONS) -> dict[str, Any]:
    """``record`` as a display shows it: every text it can find put back, the others
    :data:`ELSEWHERE` (``lookup``: by default the record's parts, then the live ones).

    The result shares its parts with the record and the session: read it, never change it.
    """
    return expand_record(record, record_lookup(record) if lookup is None else lookup,
                         lambda digest: ELSEWHERE, sections=sections, copied=False)


def turn_record_schema() -> dict[str, Any]:
    """The JSON Schema of the turn record this package writes, as a dict."""
    schema: dict[str, Any] = json.loads(package_root().text(TURN_RECORD_SCHEMA))
    return schema
