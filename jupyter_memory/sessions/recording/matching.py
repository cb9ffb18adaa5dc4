"""How replay matches a request to a recorded exchange: by what the conversation says
(:func:`conversation_view`), and what else changed (:func:`describe_changes`) for the
warning it gives when only our own prompt text, tools, context blocks or settings differ."""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from jupyter_memory.sessions.recording.differences import MISSING, excerpt, first_difference

__all__ = ["MATCH_ENV", "MATCH_MODES", "conversation_view", "describe_changes"]

MATCH_ENV = "JUPYTER_MEMORY_REPLAY_MATCH"
"""``strict`` makes every replay match requests byte for byte (after normalising)."""
#: How replay matches a request to a recorded exchange, after vcrpy's ``match_on``:
#: ``conversation`` (the default) compares what the person and the model said, tool calls
#: and their results, and only warns about our own prompt text, tool descriptions and
#: settings; ``strict`` compares the whole request.
MATCH_MODES = ("conversation", "strict")

_REMINDER_START = "<system-reminder>"
_REMINDER_END = "</system-reminder>"
#: A reminder inside a longer text (session notes and compaction transcribe the
#: conversation into one string, reminders included).
_REMINDER_SPAN = re.compile(r"<system-reminder>.*?</system-reminder>", re.DOTALL)


def _closable(text: str) -> tuple[str, str]:
    """``text`` cut after its last ``</system-reminder>``: every reminder span lies in the
    first part. Searching only there keeps an opening tag that never closes from being
    followed to the end of the text, once per such tag (quadratic in a transcript quoting
    many of them)."""
    end = text.rfind(_REMINDER_END)
    cut = end + len(_REMINDER_END) if end >= 0 else 0
    return text[:cut], text[cut:]


def _is_reminder(block: Any) -> bool:
    """A text block of our own context (date, memory index, memories), not anyone's words."""
    text = block.get("text") if isinstance(block, Mapping) else block
    return isinstance(text, str) and text.lstrip().startswith(_REMINDER_START)


def _blocks(message: Mapping[str, Any]) -> list[Any]:
    content = message.get("content")
    if isinstance(content, str):
        return [{"type": "text", "text": content}]
    return list(content or [])


def _result_view(content: Any) -> Any:
    if isinstance(content, list):
        return [b.get("text") if isinstance(b, Mapping) and b.get("type") == "text"
                else _strip_cache(b) for b in content]
    return content


def _strip_cache(value: Any) -> Any:
    if isinstance(value, Mapping):
        return {k: _strip_cache(v) for k, v in value.items() if k != "cache_control"}
    if isinstance(value, list):
        return [_strip_cache(v) for v in value]
    return value


def conversation_view(request: Mapping[str, Any]) -> list[dict[str, Any]]:
    """What a request says, without what the package adds around it.

    One entry per message: its role and, per block, the text people and the model wrote,
    each tool call (name and input) and each tool result. Left out: the system prompt,
    the tool list, model settings, cache markers and ``<system-reminder>`` blocks (the
    date, the memory index, attached memories, the cells run since the last turn; also
    where a side call quotes them inside a text), which replay only warns about.
    """
    view: list[dict[str, Any]] = []
    for message in request.get("messages") or []:
        if not isinstance(message, Mapping):
            continue
        parts: list[Any] = []
        for block in _blocks(message):
            if not isinstance(block, Mapping):
                continue
            kind = block.get("type")
            if kind == "text":
                if not _is_reminder(block):
                    text = block.get("text")
                    if isinstance(text, str):
                        head, tail = _closable(text)
                        text = _REMINDER_SPAN.sub("<system-reminder/>", head) + tail
                    parts.append({"text": text})
            elif kind == "tool_use":
                parts.append({"tool_use": block.get("name"), "input": block.get("input")})
            elif kind == "tool_result":
                parts.append({"tool_result": _result_view(block.get("content")),
                              "is_error": bool(block.get("is_error"))})
            else:
                parts.append(_strip_cache(block))
        view.append({"role": message.get("role"), "content": parts})
    return view


def _system_view(system: Any) -> Any:
    if isinstance(system, list):
        return [b.get("text") if isinstance(b, Mapping) and "text" in b else _strip_cache(b)
                for b in system]
    return system


def _reminders(request: Mapping[str, Any]) -> list[tuple[int, str]]:
    """Every ``<system-reminder>`` of the messages: whole blocks and those inside a text."""
    out = []
    for index, message in enumerate(request.get("messages") or []):
        if not isinstance(message, Mapping):
            continue
        for block in _blocks(message):
            if isinstance(block, Mapping) and block.get("type") == "text":
                text = str(block.get("text"))
                spans = _REMINDER_SPAN.findall(_closable(text)[0])
                out += [(index, span) for span in spans] or (
                    [(index, text)] if _is_reminder(block) else [])
    return out


def describe_changes(recorded: Mapping[str, Any], now: Mapping[str, Any]) -> list[str]:
    """What differs between two requests with the same conversation, one phrase per part:
    the system prompt, each tool whose description or schema changed (or that was added or
    removed), the context blocks, any other setting. Empty when they are identical."""
    changes: list[str] = []
    old_system, new_system = _system_view(recorded.get("system")), _system_view(now.get("system"))
    if old_system != new_system:
        found = first_difference(old_system, new_system, "system")
        where = found[0] if found else "system"
        old, new = (found[1], found[2]) if found else (old_system, new_system)
        changes.append(f"the system prompt (at {where}: recorded {excerpt(old, new, 40)}, "
                       f"now {excerpt(new, old, 40)})")
    old_tools = {str(t.get("name")): _strip_cache(t) for t in recorded.get("tools") or []
                 if isinstance(t, Mapping)}
    new_tools = {str(t.get("name")): _strip_cache(t) for t in now.get("tools") or []
                 if isinstance(t, Mapping)}
    changed = [n for n in old_tools if n in new_tools and old_tools[n] != new_tools[n]]
    added = [n for n in new_tools if n not in old_tools]
    removed = [n for n in old_tools if n not in new_tools]
    if changed:
        changes.append("the description or schema of tool " + ", ".join(changed))
    if added:
        changes.append("new tool " + ", ".join(added))
    if removed:
        changes.append("tool no longer offered: " + ", ".join(removed))
    old_rem, new_rem = _reminders(recorded), _reminders(now)
    if old_rem != new_rem:
        found = first_difference([t for _, t in old_rem], [t for _, t in new_rem])
        if found is not None:
            changes.append(f"the context blocks (<system-reminder>: recorded "
                           f"{excerpt(found[1], found[2], 40)}, now {excerpt(found[2], found[1], 40)})")
    for key in [k for k in recorded if k not in ("system", "tools", "messages")] + \
            [k for k in now if k not in recorded and k not in ("system", "tools", "messages")]:
        old, new = recorded.get(key, MISSING), now.get(key, MISSING)
        if _strip_cache(old) != _strip_cache(new):
            changes.append(f"{key} (recorded {excerpt(old, new, 30)}, now {excerpt(new, old, 30)})")
    if not changes and _strip_cache(recorded.get("messages")) != _strip_cache(now.get("messages")):
        changes.append("cache markers in the messages")
    return changes
