"""The JSONL session log (SPEC §7): append-only writing, fast reading, resume, retention.

One file per session (``<base>/projects/<key>/<session>.jsonl``), one JSON object per
line, written the way the reference writes it so the two tools can read each other's
logs. Lines are only ever appended, never rewritten: a crash can at worst leave a torn
last line, which the reader skips and the writer steps over. Subagents log to
``<session>/subagents/agent-<id>.jsonl``.

Entries link into a DAG through ``parentUuid``; resuming follows that chain back from
the newest message, so abandoned branches drop out, and repairs what an interrupted
session leaves behind (see :func:`rebuild_conversation`).
"""

from __future__ import annotations

import json
import os
import re
import stat
import threading
import time
import uuid as uuidlib
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from types import EllipsisType
from typing import Any, BinaryIO, Literal

__all__ = [
    "CONTINUE_PROMPT",
    "FAST_PATH_BYTES",
    "NOOP_REPLY",
    "RETENTION_DAYS",
    "BoundaryInfo",
    "Conversation",
    "EntryList",
    "MessageMeta",
    "ReadStats",
    "TranscriptWriter",
    "cleanup_old_transcripts",
    "read_entries",
    "rebuild_conversation",
    "subagent_writer",
]

FAST_PATH_BYTES = 5 * 1024 * 1024
"""Logs larger than this are read from their last compaction boundary without parsing
(or holding) anything before it."""

SCAN_BLOCK_BYTES = 1024 * 1024
"""Block size of the backwards search for the last boundary."""

RETENTION_DAYS = 30
"""Default ``cleanupPeriodDays``: session logs older than this are deleted."""

CONTINUE_PROMPT = (
    "The session stopped in the middle of your last turn. "
    "Carry on from the point where you were cut off."
)
"""Added on resume when the last turn was cut off mid-work (our wording)."""

NOOP_REPLY = "(No reply.)"
"""Placeholder assistant turn added on resume when the log ends on a user message,
so roles keep alternating."""

EARLIER_OMITTED = "(The start of this conversation is not available.)"
"""Placed first when what survives of a log begins with an assistant message."""

MESSAGE_TYPES = ("user", "assistant")
KNOWN_TYPES = frozenset({"user", "assistant", "system"})
"""Entry types :func:`read_entries` returns; every other type is skipped and counted."""

_BOUNDARY_BYTES = b'"compact_boundary"'
# A "uuid" key: inside a JSON string its quotes would be escaped, so `"uuid":"` preceded
# by `{` or `,` only occurs as a real key (compact separators, as both tools write).
_UUID_KEY = re.compile(rb'"uuid":"([^"\\]{1,200})"')
_AGENT_ID = re.compile(r"[A-Za-z0-9_-]{1,128}")
_USER_STOP_MARKER = "[Request interrupted by user"

# Top-level keys a caller's ``extra`` must not override.
_RESERVED = frozenset(
    {
        "parentUuid", "logicalParentUuid", "isSidechain", "userType", "cwd", "sessionId",
        "version", "gitBranch", "agentId", "type", "subtype", "message", "uuid",
        "timestamp", "isMeta", "isCompactSummary", "isVisibleInTranscriptOnly",
    }
)  # fmt: skip

Tail = EllipsisType
"""Type of ``...``: "chain to the entry this writer wrote last"."""


def _timestamp() -> str:
    now = datetime.now(timezone.utc)
    return now.strftime("%Y-%m-%dT%H:%M:%S.") + f"{now.microsecond // 1000:03d}Z"


def _encode(entry: dict[str, Any]) -> bytes:
    """One complete line: compact JSON, UTF-8 like the reference, ASCII if it must."""
    try:
        text = json.dumps(entry, ensure_ascii=False, separators=(",", ":"))
    except (TypeError, ValueError) as exc:
        raise TypeError(
            f"transcript entry {entry.get('type')!r} cannot be written as JSON ({exc}); "
            "pass plain dicts, lists, strings and numbers (SDK objects via .model_dump())"
        ) from exc
    try:
        return text.encode("utf-8") + b"\n"
    except UnicodeEncodeError:  # a lone surrogate: escape everything instead
        return json.dumps(entry, separators=(",", ":")).encode("ascii") + b"\n"


def _scan_uuids(path: Path, chunk: int = 4 * 1024 * 1024) -> set[str]:
    """Every ``uuid`` key in a log, found by pattern rather than by parsing each line."""
    found: set[str] = set()
    try:
        handle = open(path, "rb")  # noqa: SIM115 - closed below
    except FileNotFoundError:
        return found
    with handle:
        rest = b""
        while True:
            block = handle.read(chunk)
            if not block:
                break
            data = rest + block
            cut = data.rfind(b"\n") + 1
            found.update(_uuid_keys(data, cut))
            rest = data[cut:]
        found.update(_uuid_keys(rest, len(rest)))
    return found


def _uuid_keys(data: bytes, end: int) -> Iterable[str]:
    for match in _UUID_KEY.finditer(data, 0, end):
        start = match.start()
        if start and data[start - 1] in b"{,":
            yield match.group(1).decode("utf-8", "replace")


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        written = os.write(fd, view)
        view = view[written:]


# --------------------------------------------------------------------------- writing


class TranscriptWriter:
    """Appends entries to one session log, the way the reference lays them out.

    The file is created (mode ``0600``) only when the first real message arrives — a
    non-meta user or assistant message; anything logged before that is held back and
    written with it, so sessions that never say anything leave no file. Each flush is a
    single ``os.write`` of complete lines to a file opened with ``O_APPEND``. Entries
    whose uuid is already in the file are not written again (the uuids already present
    are read once, on the first append to an existing file). ``parent_uuid=...`` chains
    an entry to the one this writer wrote last (:attr:`leaf_uuid`); pass an explicit
    uuid to branch, e.g. one tool result per parallel tool call.
    """

    def __init__(
        self,
        path: Path,
        *,
        session_id: str,
        cwd: str,
        version: str,
        git_branch: str | None,
        is_sidechain: bool = False,
        agent_id: str | None = None,
        leaf_uuid: str | None = None,
        fsync: bool = False,
    ) -> None:
        self.path = Path(path)
        self.session_id = session_id
        self.cwd = str(cwd)
        self.version = version
        self.git_branch = git_branch
        self.is_sidechain = is_sidechain
        self.agent_id = agent_id
        self.leaf_uuid = leaf_uuid
        """Uuid of the last entry appended (or skipped as already present)."""
        self.fsync = fsync
        self._pending: list[bytes] = []  # encoded lines held back
        self._uuids: set[str] | None = None
        self._started = False
        self._lock = threading.Lock()  # one kernel may log from several threads
        self.lines_written = 0

    # -- public API ---------------------------------------------------------------

    @property
    def pending(self) -> int:
        """Entries held back until the first real message creates the file."""
        return len(self._pending)

    def append_message(
        self,
        role: str,
        message: dict[str, Any],
        *,
        parent_uuid: str | Tail | None = ...,
        is_meta: bool = False,
        uuid: str | None = None,
        extra: dict[str, Any] | None = None,
    ) -> str:
        """Log one user or assistant message (a Messages API dict, ``usage`` included).

        ``extra`` adds top-level fields such as ``toolUseResult`` or ``requestId``.
        Returns the entry's uuid (a new uuid4 unless ``uuid`` is given).
        """
        if role not in MESSAGE_TYPES:
            raise ValueError(
                f"a transcript message has role 'user' or 'assistant', not {role!r}; "
                "use append_system() for other entries (progress entries are never logged)"
            )
        if not isinstance(message, dict) or "content" not in message:
            raise ValueError("the message must be a dict with a 'content' key, as sent to the API")
        if message.get("role", role) != role:
            raise ValueError(f"message role {message.get('role')!r} does not match role {role!r}")
        body = dict(message) if "role" in message else {"role": role, **message}
        tail = self._check_extra(extra)
        entry = self._head(parent_uuid)
        if role == "user":  # same key order as the reference's own entries
            entry.update(type="user", message=body)
        else:
            entry["message"] = body
            entry.update(tail)
            tail = {}
            entry["type"] = "assistant"
        if is_meta:
            entry["isMeta"] = True
        entry["uuid"] = uuid or str(uuidlib.uuid4())
        entry["timestamp"] = _timestamp()
        entry.update(tail)
        return self._submit(entry, real=not is_meta)

    def append_system(
        self,
        subtype: str,
        content: str,
        *,
        parent_uuid: str | Tail | None = ...,
        level: str = "info",
        is_meta: bool = False,
        uuid: str | None = None,
        **fields: Any,
    ) -> str:
        """Log a ``system`` entry (``subtype`` says which kind); ``fields`` are added as-is."""
        if not subtype or not isinstance(subtype, str):
            raise ValueError("a system entry needs a non-empty string subtype")
        self._check_extra(fields)
        entry = self._head(parent_uuid)
        entry.update(type="system", subtype=subtype, content=content, level=level)
        entry["timestamp"] = _timestamp()
        entry["uuid"] = uuid or str(uuidlib.uuid4())
        entry["isMeta"] = is_meta
        entry.update(fields)
        return self._submit(entry, real=False)

    def append_compact_boundary(
        self,
        trigger: Literal["auto", "manual"],
        pre_tokens: int,
        logical_parent_uuid: str | Tail | None = ...,
        *,
        uuid: str | None = None,
    ) -> str:
        """Log the compaction boundary: a root (``parentUuid: null``) that remembers the
        tail it replaced in ``logicalParentUuid``. Readers start after the last one."""
        if trigger not in ("auto", "manual"):
            raise ValueError(f"compaction trigger must be 'auto' or 'manual', not {trigger!r}")
        if isinstance(pre_tokens, bool) or not isinstance(pre_tokens, int) or pre_tokens < 0:
            raise ValueError(f"pre_tokens must be a token count (int >= 0), not {pre_tokens!r}")
        logical = self.leaf_uuid if logical_parent_uuid is ... else logical_parent_uuid
        entry: dict[str, Any] = {"parentUuid": None, "logicalParentUuid": logical}
        entry.update(self._head(None))
        entry.update(type="system", subtype="compact_boundary", content="Conversation compacted")
        entry.update(isMeta=False, timestamp=_timestamp(), uuid=uuid or str(uuidlib.uuid4()))
        entry.update(level="info", compactMetadata={"trigger": trigger, "preTokens": pre_tokens})
        return self._submit(entry, real=False)

    def append_summary(
        self, text: str, *, parent_uuid: str | Tail | None = ..., uuid: str | None = None
    ) -> str:
        """Log the compaction summary as a user message marked ``isCompactSummary``."""
        if not isinstance(text, str) or not text.strip():
            raise ValueError("a compaction summary must be non-empty text")
        entry = self._head(parent_uuid)
        entry["type"] = "user"
        entry["message"] = {"role": "user", "content": text}
        entry.update(isVisibleInTranscriptOnly=True, isCompactSummary=True)
        entry.update(uuid=uuid or str(uuidlib.uuid4()), timestamp=_timestamp())
        return self._submit(entry, real=True)

    def append_entry(self, entry: dict[str, Any]) -> str | None:
        """Log a ready-made entry (e.g. copied from another log), filling in missing common
        fields. Progress entries are dropped (returns ``None``); so are known uuids."""
        if not isinstance(entry, dict) or not isinstance(entry.get("type"), str):
            raise ValueError("an entry must be a dict with a string 'type'")
        if entry["type"] == "progress":
            return None
        full = self._head(entry.get("parentUuid", ...))
        full.update(entry)
        full.setdefault("uuid", str(uuidlib.uuid4()))
        full.setdefault("timestamp", _timestamp())
        real = full["type"] in MESSAGE_TYPES and not full.get("isMeta")
        return self._submit(full, real=real)

    def flush(self) -> None:
        """Write held-back entries now, creating the file even without a real message."""
        with self._lock:
            if self._pending:
                self._started = True
                self._write_pending()

    # -- internals ----------------------------------------------------------------

    def _head(self, parent_uuid: str | Tail | None) -> dict[str, Any]:
        entry: dict[str, Any] = {
            "parentUuid": self.leaf_uuid if parent_uuid is ... else parent_uuid,
            "isSidechain": self.is_sidechain,
            "userType": "external",
            "cwd": self.cwd,
            "sessionId": self.session_id,
            "version": self.version,
            "gitBranch": self.git_branch,
        }
        if self.agent_id is not None:
            entry["agentId"] = self.agent_id
        return entry

    @staticmethod
    def _check_extra(extra: dict[str, Any] | None) -> dict[str, Any]:
        if not extra:
            return {}
        clash = sorted(set(extra) & _RESERVED)
        if clash:
            raise ValueError(
                f"extra fields {clash} would overwrite fields the writer sets itself; "
                "use the matching argument instead"
            )
        return dict(extra)

    def _known_uuids(self) -> set[str]:
        if self._uuids is None:
            self._uuids = _scan_uuids(self.path)
        return self._uuids

    def _submit(self, entry: dict[str, Any], *, real: bool) -> str:
        uid: str = entry["uuid"]
        line = _encode(entry)  # fails before any state changes
        with self._lock:
            known = self._known_uuids()
            self.leaf_uuid = uid
            if uid in known:
                return uid
            known.add(uid)
            self._pending.append(line)
            if not self._started:
                self._started = real or self.path.exists()
            if self._started:
                self._write_pending()
        return uid

    def _write_pending(self) -> None:
        data = b"".join(self._pending)
        self.path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
        flags = os.O_RDWR | os.O_APPEND | os.O_CREAT | getattr(os, "O_CLOEXEC", 0)
        fd = os.open(self.path, flags, 0o600)
        try:
            size = os.fstat(fd).st_size
            if size == 0:
                os.fchmod(fd, 0o600)  # whatever the umask did, a log is private
            elif os.pread(fd, 1, size - 1) != b"\n":
                data = b"\n" + data  # a crash left a torn line: start on a fresh one
            _write_all(fd, data)
            if self.fsync:
                os.fsync(fd)
        finally:
            os.close(fd)
        self.lines_written += len(self._pending)
        self._pending.clear()


def subagent_writer(parent_writer: TranscriptWriter, agent_id: str) -> TranscriptWriter:
    """A writer for a subagent's own log, ``<session>/subagents/agent-<id>.jsonl``.

    It shares the session's id, cwd, version and branch, marks every entry
    ``isSidechain`` and ``agentId``, and starts its own chain (first ``parentUuid`` null).
    """
    if not isinstance(agent_id, str) or not _AGENT_ID.fullmatch(agent_id):
        raise ValueError(
            f"agent id {agent_id!r} must be 1-128 letters, digits, '-' or '_' "
            "(it becomes part of a file name)"
        )
    parent_path = parent_writer.path
    if parent_writer.is_sidechain and parent_path.parent.name == "subagents":
        folder = parent_path.parent  # a subagent's subagent lives beside it
    else:
        folder = parent_path.with_suffix("") / "subagents"
    return TranscriptWriter(
        folder / f"agent-{agent_id}.jsonl",
        session_id=parent_writer.session_id,
        cwd=parent_writer.cwd,
        version=parent_writer.version,
        git_branch=parent_writer.git_branch,
        is_sidechain=True,
        agent_id=agent_id,
        fsync=parent_writer.fsync,
    )


# --------------------------------------------------------------------------- reading


@dataclass
class ReadStats:
    """What :func:`read_entries` did: where it started and what it skipped."""

    path: Path
    file_bytes: int = 0
    fast_path: bool = False
    """True when the file was large enough for the backwards boundary search."""
    boundary_found: bool = False
    start_offset: int = 0
    """Byte offset parsing started at (the boundary's line on the fast path)."""
    bytes_scanned_backwards: int = 0
    lines_read: int = 0
    lines_parsed: int = 0
    """Lines handed to the JSON parser (on the fast path: only the boundary onwards)."""
    blank_lines: int = 0
    corrupt_lines: int = 0
    invalid_entries: int = 0
    """Known types with an unusable shape (e.g. a user entry without a message)."""
    duplicate_entries: int = 0
    skipped_types: dict[str, int] = field(default_factory=dict)
    entries_before_boundary: int = 0
    """Entries parsed then dropped because they precede the boundary (small files)."""


class EntryList(list[dict[str, Any]]):
    """The entries of a log, in file order, with the :class:`ReadStats` of the read."""

    def __init__(self, entries: Iterable[dict[str, Any]], stats: ReadStats) -> None:
        super().__init__(entries)
        self.stats = stats


def _is_boundary(entry: dict[str, Any]) -> bool:
    return entry.get("type") == "system" and entry.get("subtype") == "compact_boundary"


def _valid(entry: dict[str, Any]) -> bool:
    if entry["type"] not in MESSAGE_TYPES:
        return True
    message = entry.get("message")
    return (
        isinstance(message, dict)
        and isinstance(message.get("content"), str | list)
        and isinstance(entry.get("uuid"), str)
    )


def read_entries(path: Path, *, from_last_boundary: bool = True) -> EntryList:
    """Read a session log, skipping blank, corrupt and unknown lines without failing.

    With ``from_last_boundary`` the result starts at the last ``compact_boundary`` entry
    (included). For files over :data:`FAST_PATH_BYTES` that boundary is found by
    searching the file backwards for its byte pattern, and nothing before it is parsed or
    kept in memory. Entries of types other than user, assistant and system (progress,
    file-history snapshots, ...) are dropped and spliced out of the ``parentUuid`` chain:
    a child of a dropped entry is re-pointed at that entry's own parent.
    """
    path = Path(path)
    stats = ReadStats(path=path)
    with open(path, "rb") as handle:
        size = os.fstat(handle.fileno()).st_size
        stats.file_bytes = size
        start = 0
        if from_last_boundary and size > FAST_PATH_BYTES:
            stats.fast_path = True
            found = _find_last_boundary(handle, size, stats)
            if found is not None:
                start = found
                stats.boundary_found = True
        handle.seek(start)
        stats.start_offset = start
        entries = _parse(handle, stats)
    if from_last_boundary and not stats.fast_path:
        last = _last_boundary(entries)
        if last is not None:
            stats.boundary_found = True
            stats.entries_before_boundary = last
            entries = entries[last:]
    return EntryList(entries, stats)


def _last_boundary(entries: list[dict[str, Any]]) -> int | None:
    """Index of the last compaction boundary of the main conversation (None if none).

    A subagent's entries (``isSidechain``) may sit in the main log; its boundary does not
    cut the main conversation, unless the log holds nothing else (a subagent's own log).
    """
    main = any(not e.get("isSidechain") for e in entries if e.get("type") in MESSAGE_TYPES)
    for i in range(len(entries) - 1, -1, -1):
        if _is_boundary(entries[i]) and not (main and entries[i].get("isSidechain")):
            return i
    return None


def _parse(handle: BinaryIO, stats: ReadStats) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    seen: set[str] = set()
    spliced: dict[str, Any] = {}  # uuid of a dropped entry -> its (resolved) parent
    skipped: Counter[str] = Counter()
    for raw in handle:
        stats.lines_read += 1
        if not raw.strip():
            stats.blank_lines += 1
            continue
        stats.lines_parsed += 1
        try:
            entry = json.loads(raw)
        except ValueError:  # includes UnicodeDecodeError
            stats.corrupt_lines += 1
            continue
        if not isinstance(entry, dict):
            stats.corrupt_lines += 1
            continue
        uid = entry.get("uuid")
        parent = entry.get("parentUuid")
        if isinstance(parent, str) and parent in spliced:
            parent = spliced[parent]
        kind = entry.get("type")
        if kind not in KNOWN_TYPES or not _valid(entry):
            if kind in KNOWN_TYPES:
                stats.invalid_entries += 1
            else:
                skipped[kind if isinstance(kind, str) else "(no type)"] += 1
            if isinstance(uid, str):
                spliced[uid] = parent
            continue
        if isinstance(uid, str):
            if uid in seen:
                stats.duplicate_entries += 1
                continue
            seen.add(uid)
        if parent != entry.get("parentUuid"):
            entry["parentUuid"] = parent
        out.append(entry)
    stats.skipped_types = dict(skipped)
    return out


def _find_last_boundary(handle: BinaryIO, size: int, stats: ReadStats) -> int | None:
    """Byte offset of the line holding the last real compaction boundary, or None.

    Blocks are read from the end towards the start; each hit of the pattern is
    confirmed by parsing its line (the words may also appear in data, e.g. a tool input).
    """
    keep = len(_BOUNDARY_BYTES) - 1  # overlap so a hit across two blocks is still found
    high = size
    carry = b""
    while high > 0:
        low = max(0, high - SCAN_BLOCK_BYTES)
        handle.seek(low)
        block = handle.read(high - low)
        stats.bytes_scanned_backwards += len(block)
        data = block + carry
        hit = data.rfind(_BOUNDARY_BYTES, 0, len(block) + keep)
        while hit != -1:
            line_start = _line_start(handle, data, low, hit)
            handle.seek(line_start)
            if _is_boundary_line(handle.readline()):
                return line_start
            hit = data.rfind(_BOUNDARY_BYTES, 0, hit + keep)
        carry = data[:keep]
        high = low
    return None


def _line_start(handle: BinaryIO, data: bytes, low: int, hit: int) -> int:
    newline = data.rfind(b"\n", 0, hit)
    if newline != -1:
        return low + newline + 1
    position = low  # the line began before this block: keep walking back
    while position > 0:
        earlier = max(0, position - SCAN_BLOCK_BYTES)
        handle.seek(earlier)
        chunk = handle.read(position - earlier)
        newline = chunk.rfind(b"\n")
        if newline != -1:
            return earlier + newline + 1
        position = earlier
    return 0


def _is_boundary_line(line: bytes) -> bool:
    try:
        entry = json.loads(line)
    except ValueError:
        return False
    return isinstance(entry, dict) and _is_boundary(entry)


# --------------------------------------------------------------------------- resume


@dataclass
class BoundaryInfo:
    """The compaction boundary a conversation was rebuilt from."""

    uuid: str | None
    trigger: str | None
    pre_tokens: int | None
    logical_parent_uuid: str | None
    timestamp: str | None


@dataclass
class MessageMeta:
    """Where one rebuilt message came from. ``usage`` is kept with every count at zero:
    the stored numbers describe a context that no longer exists and would trigger an
    immediate re-compaction if trusted."""

    uuids: list[str] = field(default_factory=list)
    message_id: str | None = None
    model: str | None = None
    usage: dict[str, Any] | None = None
    timestamp: str | None = None
    is_compact_summary: bool = False
    synthetic: bool = False
    """Added by a resume clean-up, not read from the log."""


class Conversation(list[dict[str, Any]]):
    """Messages API dicts (``{"role", "content"}``) ready to send, plus resume facts.

    Content is always a list of blocks: string content from the log becomes one text
    block. Roles alternate, starting with ``user``. :attr:`meta` is aligned with the
    messages as returned.
    """

    def __init__(self, messages: Iterable[dict[str, Any]] = (), **facts: Any) -> None:
        super().__init__(messages)
        self.meta: list[MessageMeta] = facts.get("meta", [])
        self.session_id: str | None = facts.get("session_id")
        self.cwd: str | None = facts.get("cwd")
        self.leaf_uuid: str | None = facts.get("leaf_uuid")
        """Newest message on the kept chain: the parent for the next logged message."""
        self.boundary: BoundaryInfo | None = facts.get("boundary")
        self.summary: str | None = facts.get("summary")
        self.skipped: dict[str, int] = facts.get("skipped", {})
        self.cleanups: dict[str, int] = facts.get("cleanups", {})
        self.interrupted: str = facts.get("interrupted", "none")
        """``"turn"`` (cut off mid-work: a continue request was added), ``"prompt"`` (the
        last user message got no reply) or ``"none"``."""

    @property
    def messages(self) -> list[dict[str, Any]]:
        return list(self)

    @property
    def noop_added(self) -> bool:
        return bool(self.cleanups.get("noop_reply_added"))


_BLOCK_FIELDS = {
    "text": ("type", "text", "citations"),
    "thinking": ("type", "thinking", "signature"),
    "redacted_thinking": ("type", "data"),
    "tool_use": ("type", "id", "name", "input"),
    "tool_result": ("type", "tool_use_id", "content", "is_error"),
}


def _blocks(content: Any, counts: Counter[str]) -> list[dict[str, Any]]:
    """Content as API blocks: strings become text blocks, log-only keys are dropped."""
    items = [content] if isinstance(content, str) else content
    out: list[dict[str, Any]] = []
    for item in items:
        block = {"type": "text", "text": item} if isinstance(item, str) else item
        if not isinstance(block, dict) or not isinstance(block.get("type"), str):
            counts["unreadable_blocks"] += 1
            continue
        names = _BLOCK_FIELDS.get(block["type"])
        if names is None:
            clean = {k: v for k, v in block.items() if k != "cache_control"}
        else:
            clean = {k: block[k] for k in names if block.get(k) is not None}
        if clean["type"] == "text" and not (
            isinstance(clean.get("text"), str) and clean["text"].strip()
        ):
            counts["blank_text_blocks"] += 1
            continue
        out.append(clean)
    return out


def _zeroed(usage: Any) -> Any:
    if isinstance(usage, dict):
        return {k: _zeroed(v) for k, v in usage.items()}
    if isinstance(usage, int | float) and not isinstance(usage, bool):
        return 0
    return usage


def _meta_for(group: list[dict[str, Any]]) -> MessageMeta:
    if not group:
        return MessageMeta()
    first = group[0]
    message = first.get("message") or {}
    usage = next(
        (
            g["message"]["usage"]
            for g in reversed(group)
            if isinstance(g["message"].get("usage"), dict)
        ),
        None,
    )
    return MessageMeta(
        uuids=[g["uuid"] for g in group],
        message_id=message.get("id") if isinstance(message.get("id"), str) else None,
        model=message.get("model") if isinstance(message.get("model"), str) else None,
        usage=_zeroed(usage) if usage is not None else None,
        timestamp=first.get("timestamp"),
        is_compact_summary=bool(first.get("isCompactSummary")),
    )


def _text_of(content: Any) -> str:
    if isinstance(content, str):
        return content
    return "\n".join(
        b["text"] for b in content if isinstance(b, dict) and isinstance(b.get("text"), str)
    )


def rebuild_conversation(
    entries: Iterable[dict[str, Any]], *, include_meta: bool = False
) -> Conversation:
    """Turn log entries into the conversation to resume with.

    Starts after the last compaction boundary. Follows ``parentUuid`` back from the newest
    message so abandoned branches are dropped, but gathers what the reference spreads
    over several entries: an assistant message logged one block per entry (shared
    ``message.id``, possibly on sibling branches) and parallel tool results hanging off
    different parents. Sidechain (subagent) entries never become the leaf while the log
    holds main-conversation messages. The compaction summary stays as a user message; meta (unless
    ``include_meta``), progress and system entries are left out. Then the resume
    clean-ups: unanswered tool calls and unmatched tool results are dropped, as are
    assistant messages left with only thinking; a turn cut off mid-work gets a request
    to continue (:data:`CONTINUE_PROMPT`); a log ending on a user message gets a
    placeholder reply (:data:`NOOP_REPLY`); stored usage is zeroed in :attr:`Conversation.meta`.
    """
    stats = getattr(entries, "stats", None)
    entries = [e for e in entries if isinstance(e, dict)]
    skipped: Counter[str] = Counter()
    counts: Counter[str] = Counter()
    if isinstance(stats, ReadStats):
        skipped.update(stats.skipped_types)
        for name in ("corrupt_lines", "blank_lines", "invalid_entries", "duplicate_entries"):
            if getattr(stats, name):
                skipped[name] = getattr(stats, name)

    last = _last_boundary(entries)
    boundary = None
    if last is not None:
        mark = entries[last]
        raw_meta = mark.get("compactMetadata")
        meta: dict[str, Any] = raw_meta if isinstance(raw_meta, dict) else {}
        boundary = BoundaryInfo(
            uuid=mark.get("uuid"),
            trigger=meta.get("trigger"),
            pre_tokens=meta.get("preTokens"),
            logical_parent_uuid=mark.get("logicalParentUuid"),
            timestamp=mark.get("timestamp"),
        )
        skipped["before_boundary"] += last
        entries = entries[last + 1 :]

    messages = [e for e in entries if e.get("type") in MESSAGE_TYPES and _valid(e)]
    skipped["system"] += sum(1 for e in entries if e.get("type") == "system")
    facts: dict[str, Any] = {"boundary": boundary, "skipped": skipped, "cleanups": counts}
    if not messages:
        return _finish(Conversation(**facts))

    main = [m for m in messages if not m.get("isSidechain")]  # a subagent's are never the leaf
    leaf = main[-1] if main else messages[-1]
    chain = _chain(leaf, entries)
    msgs, metas, summary = _assemble(chain, messages, include_meta, skipped, counts)
    trailing = _tidy(msgs, metas, counts)
    interrupted = _resume_fixes(msgs, metas, trailing, counts)
    facts.update(
        meta=metas,
        session_id=leaf.get("sessionId"),
        cwd=leaf.get("cwd"),
        leaf_uuid=leaf.get("uuid"),
        summary=summary,
        interrupted=interrupted,
    )
    return _finish(Conversation(msgs, **facts))


def _finish(conversation: Conversation) -> Conversation:
    conversation.skipped = {k: v for k, v in dict(conversation.skipped).items() if v}
    conversation.cleanups = {k: v for k, v in dict(conversation.cleanups).items() if v}
    return conversation


def _chain(leaf: dict[str, Any], entries: list[dict[str, Any]]) -> list[dict[str, Any]]:
    by_uuid = {e["uuid"]: e for e in entries if isinstance(e.get("uuid"), str)}
    chain: list[dict[str, Any]] = []
    visited: set[int] = set()
    current: dict[str, Any] | None = leaf
    while current is not None and id(current) not in visited:
        visited.add(id(current))
        chain.append(current)
        parent = current.get("parentUuid")
        current = by_uuid.get(parent) if isinstance(parent, str) else None
    chain.reverse()
    return chain


def _group_key(entry: dict[str, Any]) -> str:
    message_id = entry["message"].get("id")
    return message_id if isinstance(message_id, str) and message_id else "uuid:" + entry["uuid"]


def _assemble(
    chain: list[dict[str, Any]],
    messages: list[dict[str, Any]],
    include_meta: bool,
    skipped: Counter[str],
    counts: Counter[str],
) -> tuple[list[dict[str, Any]], list[MessageMeta], str | None]:
    """Messages along the chain, with split assistant messages and stray results merged."""
    on_chain = {id(e) for e in chain}
    wanted = {_group_key(e) for e in chain if e.get("type") == "assistant"}
    groups: dict[str, list[dict[str, Any]]] = {}
    for entry in messages:
        if entry["type"] == "assistant" and _group_key(entry) in wanted:
            groups.setdefault(_group_key(entry), []).append(entry)
    answered_on_chain = {
        b.get("tool_use_id")
        for e in chain
        if e.get("type") == "user" and isinstance(e["message"]["content"], list)
        for b in e["message"]["content"]
        if isinstance(b, dict) and b.get("type") == "tool_result"
    }
    stray_results: dict[str | None, dict[str, Any]] = {}  # keyed by tool_use_id
    for entry in messages:
        if entry["type"] == "user" and id(entry) not in on_chain:
            content = entry["message"]["content"]
            for block in content if isinstance(content, list) else ():
                if isinstance(block, dict) and block.get("type") == "tool_result":
                    stray_results.setdefault(block.get("tool_use_id"), entry)

    used: set[int] = set()
    items: list[tuple[str, list[dict[str, Any]], MessageMeta]] = []
    summary: str | None = None
    for entry in chain:
        kind = entry.get("type")
        if kind not in MESSAGE_TYPES:
            continue
        if id(entry) in used:
            continue
        if entry.get("isMeta") and not include_meta and not entry.get("isCompactSummary"):
            skipped["meta"] += 1
            used.add(id(entry))
            continue
        if kind == "user":
            used.add(id(entry))
            if entry.get("isCompactSummary"):
                summary = _text_of(entry["message"]["content"])
            items.append(("user", _blocks(entry["message"]["content"], counts), _meta_for([entry])))
            continue
        group = groups[_group_key(entry)]
        used.update(id(g) for g in group)
        blocks = [b for g in group for b in _blocks(g["message"]["content"], counts)]
        items.append(("assistant", blocks, _meta_for(group)))
        extra: list[dict[str, Any]] = []
        extra_entries: list[dict[str, Any]] = []
        for block in blocks:
            if block["type"] != "tool_use" or block.get("id") in answered_on_chain:
                continue
            source = stray_results.get(block.get("id"))
            if source is None:
                continue
            extra.extend(
                b for b in _blocks(source["message"]["content"], counts)
                if b["type"] == "tool_result" and b.get("tool_use_id") == block.get("id")
            )  # fmt: skip
            if id(source) not in used:
                used.add(id(source))
                extra_entries.append(source)
        if extra:
            counts["parallel_results_merged"] += len(extra)
            items.append(("user", extra, _meta_for(extra_entries)))
    skipped["off_branch"] += sum(1 for e in messages if id(e) not in used and id(e) not in on_chain)

    msgs: list[dict[str, Any]] = []
    metas: list[MessageMeta] = []
    for role, blocks, meta in items:
        _push(msgs, metas, role, blocks, meta)
    return msgs, metas, summary


def _push(
    msgs: list[dict[str, Any]],
    metas: list[MessageMeta],
    role: str,
    blocks: list[dict[str, Any]],
    meta: MessageMeta,
) -> None:
    """Append a message, merging it into the previous one when the role repeats."""
    if msgs and msgs[-1]["role"] == role:
        msgs[-1]["content"] = _ordered(role, msgs[-1]["content"] + blocks)
        previous = metas[-1]
        previous.uuids.extend(meta.uuids)
        previous.usage = meta.usage if meta.usage is not None else previous.usage
        previous.is_compact_summary = previous.is_compact_summary or meta.is_compact_summary
        previous.synthetic = previous.synthetic and meta.synthetic
        return
    msgs.append({"role": role, "content": _ordered(role, list(blocks))})
    metas.append(meta)


def _ordered(role: str, blocks: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The API wants a user message's tool results before anything else in it."""
    if role != "user":
        return blocks
    results = [b for b in blocks if b.get("type") == "tool_result"]
    return results + [b for b in blocks if b.get("type") != "tool_result"]


def _tool_ids(message: dict[str, Any], kind: str, key: str) -> list[Any]:
    return [b.get(key) for b in message["content"] if b.get("type") == kind]


def _tidy(msgs: list[dict[str, Any]], metas: list[MessageMeta], counts: Counter[str]) -> bool:
    """Drop unanswered tool calls, unmatched results and thinking-only or empty messages.

    Returns True when something was dropped from the end of the conversation, i.e. the
    last assistant turn was cut off.
    """
    trailing = False
    for _ in range(len(msgs) + 1):
        changed = False
        for i, message in enumerate(msgs):
            if message["role"] != "assistant":
                continue
            uses = set(_tool_ids(message, "tool_use", "id"))
            following = msgs[i + 1] if i + 1 < len(msgs) else None
            answered = (
                set(_tool_ids(following, "tool_result", "tool_use_id")) if following else set()
            )
            missing = uses - answered
            if missing:
                message["content"] = [
                    b for b in message["content"]
                    if not (b.get("type") == "tool_use" and b.get("id") in missing)
                ]  # fmt: skip
                counts["unfinished_tool_uses"] += len(missing)
                trailing = trailing or following is None
                changed = True
        for i, message in enumerate(msgs):
            if message["role"] != "user":
                continue
            allowed = set(_tool_ids(msgs[i - 1], "tool_use", "id")) if i else set()
            kept: list[dict[str, Any]] = []
            seen: set[Any] = set()
            for block in message["content"]:
                if block.get("type") == "tool_result":
                    tool_id = block.get("tool_use_id")
                    if tool_id not in allowed or tool_id in seen:
                        counts["orphan_tool_results"] += 1
                        changed = True
                        continue
                    seen.add(tool_id)
                kept.append(block)
            message["content"] = kept
        survivors: list[tuple[dict[str, Any], MessageMeta]] = []
        for i, (message, meta) in enumerate(zip(msgs, metas, strict=True)):
            is_last = i == len(msgs) - 1
            thinking_only = message["role"] == "assistant" and all(
                b.get("type") in ("thinking", "redacted_thinking") for b in message["content"]
            )
            if not message["content"] or thinking_only:
                counts["thinking_only_messages" if message["content"] else "empty_messages"] += 1
                trailing = trailing or (is_last and message["role"] == "assistant")
                changed = True
                continue
            survivors.append((message, meta))
        msgs.clear()
        kept_metas: list[MessageMeta] = []
        for message, meta in survivors:
            _push(msgs, kept_metas, message["role"], message["content"], meta)
        metas[:] = kept_metas
        if not changed:
            break
    return trailing


def _resume_fixes(
    msgs: list[dict[str, Any]], metas: list[MessageMeta], trailing: bool, counts: Counter[str]
) -> str:
    """Make the conversation sendable again; returns how the last turn ended."""
    if msgs and msgs[0]["role"] == "assistant":
        msgs.insert(0, {"role": "user", "content": [{"type": "text", "text": EARLIER_OMITTED}]})
        metas.insert(0, MessageMeta(synthetic=True))
        counts["leading_note_added"] += 1
    interrupted = "none"
    if msgs:
        last, last_meta = msgs[-1], metas[-1]
        if last["role"] == "user":
            kinds = {b.get("type") for b in last["content"]}
            stopped = any(
                b.get("type") == "text" and b.get("text", "").startswith(_USER_STOP_MARKER)
                for b in last["content"]
            )
            if kinds == {"tool_result"} or (trailing and not stopped):
                interrupted = "turn"
            elif last_meta.is_compact_summary and len(last_meta.uuids) == 1:
                interrupted = "none"  # compacted, then closed: nothing was pending
            else:
                interrupted = "prompt"
        elif trailing:
            interrupted = "turn"
    if interrupted == "turn":
        block = {"type": "text", "text": CONTINUE_PROMPT}
        if msgs[-1]["role"] == "user":
            msgs[-1]["content"].append(block)
        else:
            msgs.append({"role": "user", "content": [block]})
            metas.append(MessageMeta(synthetic=True))
        counts["continue_prompt_added"] += 1
    if msgs and msgs[-1]["role"] == "user":
        msgs.append({"role": "assistant", "content": [{"type": "text", "text": NOOP_REPLY}]})
        metas.append(MessageMeta(synthetic=True))
        counts["noop_reply_added"] += 1
    return interrupted


# --------------------------------------------------------------------------- retention


def cleanup_old_transcripts(
    projects_dir: Path, days: int = RETENTION_DAYS, now: float | None = None
) -> list[Path]:
    """Delete session logs (``<key>/<session>.jsonl``) not modified for ``days`` days,
    with the old files of their ``<session>/`` folders (subagent logs and the like).

    Memories are never touched: nothing under a ``memory/`` folder and no ``.md`` file is
    deleted, symlinks are neither followed nor removed, and a file in a session folder
    goes only if it is old itself. Returns the files and emptied folders removed.
    """
    if isinstance(days, bool) or not isinstance(days, int) or days < 0:
        raise ValueError(f"retention must be a whole number of days >= 0, not {days!r}")
    cutoff = (time.time() if now is None else now) - days * 86400
    projects_dir = Path(projects_dir)
    removed: list[Path] = []
    if not projects_dir.is_dir():
        return removed
    for key_dir in sorted(projects_dir.iterdir()):
        if key_dir.is_symlink() or not key_dir.is_dir() or key_dir.name == "memory":
            continue
        for log in sorted(key_dir.glob("*.jsonl")):
            if _old_regular_file(log, cutoff):
                log.unlink()
                removed.append(log)
                folder = key_dir / log.stem
                if folder.name != "memory" and folder.is_dir() and not folder.is_symlink():
                    removed.extend(_prune_session_folder(folder, cutoff))
    return removed


def _old_regular_file(path: Path, cutoff: float) -> bool:
    try:
        info = path.lstat()
    except FileNotFoundError:
        return False
    return stat.S_ISREG(info.st_mode) and info.st_mtime < cutoff


def _prune_session_folder(folder: Path, cutoff: float) -> list[Path]:
    removed: list[Path] = []
    for root, dirs, files in os.walk(folder, topdown=True, followlinks=False):
        dirs[:] = [d for d in dirs if d != "memory"]
        for name in files:
            path = Path(root) / name
            if not name.lower().endswith(".md") and _old_regular_file(path, cutoff):
                path.unlink()
                removed.append(path)
    for root, _dirs, _files in os.walk(folder, topdown=False, followlinks=False):
        path = Path(root)
        if "memory" in path.relative_to(folder).parts or path.is_symlink():
            continue
        try:
            path.rmdir()  # only succeeds when empty
        except OSError:
            continue
        removed.append(path)
    return removed
