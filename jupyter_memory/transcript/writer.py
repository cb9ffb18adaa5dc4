"""Writing the JSONL session log (docs/reference.md#the-transcript): append-only, the way the reference writes it.

One file per session (``<base>/projects/<key>/<session>.jsonl``), one JSON object per
line, written the way the reference writes it so the two tools can read each other's
logs. Lines are only ever appended, never rewritten: a crash can at worst leave a torn
last line, which the reader skips and the writer steps over. Subagents log to
``<session>/subagents/agent-<id>.jsonl``. Entries link into a DAG through ``parentUuid``.
"""

from __future__ import annotations

import contextlib
import json
import re
import threading
import uuid as uuidlib
from collections.abc import Iterable
from datetime import datetime, timezone
from pathlib import Path
from types import EllipsisType
from typing import Any, Literal

from jupyter_memory.memdir.gateway import Root
from jupyter_memory.transcript.entries import MESSAGE_TYPES

__all__ = ["TranscriptWriter", "subagent_path", "subagent_writer"]

# A "uuid" key: inside a JSON string its quotes would be escaped, so `"uuid":"` preceded
# by `{` or `,` only occurs as a real key (compact separators, as both tools write).
_UUID_KEY = re.compile(rb'"uuid":"([^"\\]{1,200})"')
_AGENT_ID = re.compile(r"[A-Za-z0-9_-]{1,128}")

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


def _scan_uuids(path: Path, root: Root, chunk: int = 4 * 1024 * 1024) -> set[str]:
    """Every ``uuid`` key in a log, found by pattern rather than by parsing each line."""
    found: set[str] = set()
    with contextlib.suppress(FileNotFoundError), root.reader(path) as handle:
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
        #: The log's folder as a gateway root: the log is appended to, never through a link.
        self.root = Root.declare("transcripts", self.path.parent)
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
            self._uuids = _scan_uuids(self.path, self.root)
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
        self.root.make_folder(mode=0o700)
        # A log is private (0600), and a crash that left a torn line starts on a fresh one.
        self.root.append(self.path, data, mode=0o600, fresh_line=True, fsync=self.fsync)
        self.lines_written += len(self._pending)
        self._pending.clear()


def subagent_path(parent_path: Path, agent_id: str, *, sidechain: bool = False) -> Path:
    """Where the log of subagent ``agent_id`` of the log at ``parent_path`` goes:
    ``<session>/subagents/agent-<id>.jsonl`` (beside it when the parent is a sidechain)."""
    if not isinstance(agent_id, str) or not _AGENT_ID.fullmatch(agent_id):
        raise ValueError(
            f"agent id {agent_id!r} must be 1-128 letters, digits, '-' or '_' "
            "(it becomes part of a file name)"
        )
    parent_path = Path(parent_path)
    if sidechain and parent_path.parent.name == "subagents":
        folder = parent_path.parent  # a subagent's subagent lives beside it
    else:
        folder = parent_path.with_suffix("") / "subagents"
    return folder / f"agent-{agent_id}.jsonl"


def subagent_writer(parent_writer: TranscriptWriter, agent_id: str) -> TranscriptWriter:
    """A writer for a subagent's own log, ``<session>/subagents/agent-<id>.jsonl``.

    It shares the session's id, cwd, version and branch, marks every entry
    ``isSidechain`` and ``agentId``, and starts its own chain (first ``parentUuid`` null).
    """
    return TranscriptWriter(
        subagent_path(parent_writer.path, agent_id, sidechain=parent_writer.is_sidechain),
        session_id=parent_writer.session_id,
        cwd=parent_writer.cwd,
        version=parent_writer.version,
        git_branch=parent_writer.git_branch,
        is_sidechain=True,
        agent_id=agent_id,
        fsync=parent_writer.fsync,
    )
