"""Rebuilding the conversation to resume with from log entries, with the resume clean-ups.

Entries link into a DAG through ``parentUuid``; resuming follows that chain back from
the newest message, so abandoned branches drop out, and repairs what an interrupted
session leaves behind (see :func:`rebuild_conversation`).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from jupyter_memory.transcript.entries import MESSAGE_TYPES, is_valid, last_boundary
from jupyter_memory.transcript.reader import ReadStats

__all__ = [
    "CONTINUE_PROMPT",
    "NOOP_REPLY",
    "BoundaryInfo",
    "MessageMeta",
    "RebuiltConversation",
    "rebuild_conversation",
]

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

_USER_STOP_MARKER = "[Request interrupted by user"


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


class RebuiltConversation(list[dict[str, Any]]):
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
) -> RebuiltConversation:
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
    placeholder reply (:data:`NOOP_REPLY`); stored usage is zeroed in
    :attr:`RebuiltConversation.meta`.
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

    last = last_boundary(entries)
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

    messages = [e for e in entries if e.get("type") in MESSAGE_TYPES and is_valid(e)]
    skipped["system"] += sum(1 for e in entries if e.get("type") == "system")
    facts: dict[str, Any] = {"boundary": boundary, "skipped": skipped, "cleanups": counts}
    if not messages:
        return _finish(RebuiltConversation(**facts))

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
    return _finish(RebuiltConversation(msgs, **facts))


def _finish(conversation: RebuiltConversation) -> RebuiltConversation:
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

    msgs, metas = _merged(items)
    return msgs, metas, summary


def _merged(
    items: Iterable[tuple[str, list[dict[str, Any]], MessageMeta]],
) -> tuple[list[dict[str, Any]], list[MessageMeta]]:
    """Messages from ``(role, blocks, meta)`` items, merging items of one role in a row.

    A merged message's blocks are gathered first and put in order once: ordering the
    growing message again at each item copied it each time, quadratic in a log of many
    user entries in a row.
    """
    msgs: list[dict[str, Any]] = []
    metas: list[MessageMeta] = []
    for role, blocks, meta in items:
        if msgs and msgs[-1]["role"] == role:
            msgs[-1]["content"].extend(blocks)
            previous = metas[-1]
            previous.uuids.extend(meta.uuids)
            previous.usage = meta.usage if meta.usage is not None else previous.usage
            previous.is_compact_summary = previous.is_compact_summary or meta.is_compact_summary
            previous.synthetic = previous.synthetic and meta.synthetic
            continue
        msgs.append({"role": role, "content": list(blocks)})
        metas.append(meta)
    for message in msgs:
        message["content"] = _ordered(message["role"], message["content"])
    return msgs, metas


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
        msgs[:], metas[:] = _merged((m["role"], m["content"], meta) for m, meta in survivors)
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
