"""Microcompact: clear the content of old tool results, without any model call.

Every result of a compactable tool (file reads and searches, writes and edits, code run
in the kernel and kernel inspection) except the newest :data:`KEEP_RECENT` has its
content replaced by a short fixed marker. The tool calls themselves stay, so the model
still sees what it did and can run a tool again when it needs the output back.

Messages are replaced, never edited in place: the turn records already shown in the
notebook and the JSONL log keep the full outputs, and an undo puts the originals back.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from jupyter_memory.agent.compaction.bookkeeping import UndoEntry
from jupyter_memory.context.tokens import block_text as _block_text
from jupyter_memory.context.tokens import estimate_tokens

if TYPE_CHECKING:
    from jupyter_memory.agent.compaction.host import CompactingSession

#: Tools whose results may be cleared (the reference's read, search, shell, edit and
#: write tools; here RunPython is the shell and the kernel inspectors are reads).
COMPACTABLE_TOOLS = frozenset(
    {"Read", "Grep", "Glob", "Write", "Edit", "RunPython", "InspectVariable", "ListVariables"}
)
#: The newest compactable results that are never cleared.
KEEP_RECENT = 5
#: What a cleared result holds instead of its output.
CLEARED_MARKER = "[Output of this earlier tool call was cleared to save context.]"


def compactable_results(messages: Sequence[dict[str, Any]]) -> list[tuple[int, int]]:
    """(message index, block index) of every compactable tool result, oldest first."""
    names: dict[str, str] = {}
    found: list[tuple[int, int]] = []
    for i, message in enumerate(messages):
        content = message.get("content")
        if not isinstance(content, list):
            continue
        for j, block in enumerate(content):
            if not isinstance(block, dict):
                continue
            if block.get("type") == "tool_use" and message.get("role") == "assistant":
                names[str(block.get("id"))] = str(block.get("name"))
            elif (block.get("type") == "tool_result"
                  and names.get(str(block.get("tool_use_id"))) in COMPACTABLE_TOOLS):
                found.append((i, j))
    return found


def is_cleared(block: dict[str, Any]) -> bool:
    return block.get("content") == CLEARED_MARKER


def microcompact_messages(
    messages: Sequence[dict[str, Any]], *, keep: int = KEEP_RECENT
) -> tuple[list[dict[str, Any]], int, int]:
    """A copy of ``messages`` with old compactable results cleared.

    Returns the new list (unchanged messages are the same objects), how many results
    were cleared, and roughly how many tokens that saved.
    """
    targets = compactable_results(messages)
    old = targets[: max(0, len(targets) - max(0, keep))]
    by_message: dict[int, list[int]] = {}
    for i, j in old:
        if not is_cleared(messages[i]["content"][j]):
            by_message.setdefault(i, []).append(j)
    out = list(messages)
    cleared = saved = 0
    for i, blocks in by_message.items():
        content = list(messages[i]["content"])
        for j in blocks:
            block = dict(content[j])
            saved += estimate_tokens(_block_text(block)) - estimate_tokens(CLEARED_MARKER)
            block["content"] = CLEARED_MARKER
            content[j] = block
            cleared += 1
        out[i] = {**messages[i], "content": content}
    return out, cleared, max(0, saved)


def microcompact(session: CompactingSession, *, keep: int = KEEP_RECENT, trigger: str = "manual") -> int:
    """Clear old tool outputs in ``session``'s conversation; returns how many were cleared.

    Undoable with :func:`jupyter_memory.agent.compaction.undo`. The stored usage of the last
    response no longer describes the conversation, so it is dropped and the next size
    check estimates instead.
    """
    before = list(session.messages)
    after, cleared, saved = microcompact_messages(before, keep=keep)
    if not cleared:
        return 0
    session.messages[:] = after
    session.conversation.last_usage = None
    description = (
        f"cleared {cleared} old tool output{'s' if cleared != 1 else ''} "
        f"(about {saved:,} tokens, {trigger})"
    )
    session.compaction.push(UndoEntry("micro", before, list(after), description))
    return cleared
