"""What recall needs to know about the conversation, derived from the messages alone.

Nothing here is stored on the session: the already-surfaced set, the bytes spent from the
session budget and the recently used tools are all recomputed from ``session.messages``.
That is how a compaction, which drops old recall attachments, resets the budget and lets
memories surface again, without any bookkeeping to keep in step.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

from jupyter_memory.context.assemble import META_KEY

__all__ = [
    "RECALL_KIND",
    "agent_files",
    "budget_used",
    "is_real_user_message",
    "recall_messages",
    "recent_tools",
    "surfaced_files",
]

RECALL_KIND = "recall"
"""``_meta.kind`` of a message that carries a prefetched memory."""

_PROMPT_KINDS = frozenset({"prompt", "user"})


def _meta(message: Mapping[str, Any]) -> Mapping[str, Any]:
    meta = message.get(META_KEY)
    return meta if isinstance(meta, Mapping) else {}


def _blocks(message: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    content = message.get("content")
    if isinstance(content, str):
        return [{"type": "text", "text": content}]
    if isinstance(content, list):
        return [b for b in content if isinstance(b, Mapping)]
    return []


def recall_messages(messages: Iterable[Mapping[str, Any]]) -> list[Mapping[str, Any]]:
    """The recall attachments still in the conversation, oldest first."""
    return [m for m in messages if _meta(m).get("kind") == RECALL_KIND]


def surfaced_files(messages: Iterable[Mapping[str, Any]]) -> set[str]:
    """Memdir-relative names of memories already attached in this conversation."""
    return {str(_meta(m)["file"]) for m in recall_messages(messages) if _meta(m).get("file")}


def budget_used(messages: Iterable[Mapping[str, Any]]) -> int:
    """Bytes of memory content carried by the recall attachments still present."""
    total = 0
    for message in recall_messages(messages):
        value = _meta(message).get("bytes")
        if isinstance(value, int) and not isinstance(value, bool):
            total += value
    return total


def is_real_user_message(message: Mapping[str, Any]) -> bool:
    """A message the person wrote, as opposed to tool results or harness attachments.

    Tool-result messages and messages with a ``_meta`` kind other than ``prompt`` or
    ``user`` (recall attachments, compaction summaries, other harness context) are not.
    """
    if message.get("role") != "user":
        return False
    kind = _meta(message).get("kind")
    if kind is not None and kind not in _PROMPT_KINDS:
        return False
    blocks = _blocks(message)
    if any(b.get("type") == "tool_result" for b in blocks):
        return False
    return any(b.get("type") == "text" and str(b.get("text", "")).strip() for b in blocks)


def _last_text(message: Mapping[str, Any]) -> str:
    texts = [str(b.get("text", "")) for b in _blocks(message) if b.get("type") == "text"]
    return texts[-1] if texts else ""


def recent_tools(messages: Sequence[Mapping[str, Any]], prompt: str | None = None) -> list[str]:
    """Tools used since the previous real user message whose every use succeeded.

    When the last real user message is the current ``prompt`` (the agent appends it before
    prefetch starts), the window is the previous turn: the messages between the real user
    message before it and it. A use counts as failed when its result has ``is_error`` or
    when no result answers it. Names come back in order of first use.
    """
    real = [i for i, m in enumerate(messages) if is_real_user_message(m)]
    if not real:
        return []
    end = len(messages)
    if prompt is not None and _last_text(messages[real[-1]]).strip() == prompt.strip():
        end = real[-1]
        real = real[:-1]
    if not real:
        return []
    window = messages[real[-1] + 1 : end]
    uses: dict[str, str] = {}
    errors: dict[str, bool] = {}
    for message in window:
        for block in _blocks(message):
            if block.get("type") == "tool_use" and message.get("role") == "assistant":
                uses[str(block.get("id"))] = str(block.get("name"))
            elif block.get("type") == "tool_result":
                errors[str(block.get("tool_use_id"))] = bool(block.get("is_error"))
    order: list[str] = []
    failed: set[str] = set()
    for use_id, name in uses.items():
        if name not in order:
            order.append(name)
        if errors.get(use_id, True):
            failed.add(name)
    return [name for name in order if name not in failed]


def agent_files(memdir: Path, read_files: Iterable[Any], written: Iterable[str]) -> set[str]:
    """Memdir-relative names of memories the agent read, wrote or edited with its tools.

    ``read_files`` holds absolute paths (the tool layer stores real paths); those outside
    the memdir are ignored. ``written`` already holds memdir-relative names.
    """
    root = os.path.realpath(memdir)
    found = {str(name).replace("\\", "/") for name in written}
    for item in read_files:
        real = os.path.realpath(item)
        if real.startswith(root.rstrip(os.sep) + os.sep):
            found.add(Path(os.path.relpath(real, root)).as_posix())
    return found
