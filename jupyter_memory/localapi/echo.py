"""The echo responder: how the local server answers when no scripted turn is left.

``python -m jupyter_memory.localapi --echo`` and ``%sandbox echo`` use this one responder.
A free answer repeats the person's last words, prefixed :data:`ECHO_PREFIX`: the last text
block of the last user message that is neither harness context (``<system-reminder>``) nor
a tool result. A request that forces a tool (``tool_choice`` of type ``tool``, or ``any``)
gets a call to that tool with the emptiest input its schema accepts, as the real API
always answers such a request with a tool call: the recall selector gets
``{"selected_memories": []}``, so prefetch runs and recalls nothing.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

from jupyter_memory.localapi.script import ToolCall, Turn

__all__ = ["ECHO_PREFIX", "echo_responder", "last_words", "minimal_input"]

#: What every echoed answer starts with, so nobody mistakes it for a model's.
ECHO_PREFIX = "(echo) "

#: How deep :func:`minimal_input` follows nested or referenced schemas.
_MAX_DEPTH = 32


def last_words(request: Mapping[str, Any]) -> str:
    """The person's last words in ``request``: the last text block of the last user message
    that has one, leaving out harness context (``<system-reminder>``) and tool results."""
    for message in reversed(request.get("messages") or []):
        if not isinstance(message, Mapping) or message.get("role") != "user":
            continue
        content = message.get("content")
        blocks = [{"type": "text", "text": content}] if isinstance(content, str) else content or []
        texts = [str(b.get("text", "")) for b in blocks
                 if isinstance(b, Mapping) and b.get("type") == "text"
                 and not str(b.get("text", "")).lstrip().startswith("<system-reminder>")]
        if texts:
            return texts[-1]
    return ""


def _forced_tool(request: Mapping[str, Any]) -> Mapping[str, Any] | None:
    """The tool definition ``request`` forces the model to call, or None."""
    choice = request.get("tool_choice")
    if not isinstance(choice, Mapping) or choice.get("type") not in ("tool", "any"):
        return None
    tools = [t for t in request.get("tools") or [] if isinstance(t, Mapping)]
    if choice.get("type") == "tool":
        return next((t for t in tools if t.get("name") == choice.get("name")),
                    {"name": str(choice.get("name") or "")})
    return tools[0] if tools else None


def echo_responder(request: Mapping[str, Any]) -> Turn:
    """The echo's answer to ``request`` (see the module): a forced tool's emptiest valid
    call, or the person's last words back."""
    tool = _forced_tool(request)
    if tool is not None:
        schema = tool.get("input_schema")
        payload = minimal_input(schema) if isinstance(schema, Mapping) else {}
        return Turn(tool_calls=[ToolCall(str(tool.get("name")),
                                         payload if isinstance(payload, dict) else {})])
    return Turn(text=ECHO_PREFIX + last_words(request))


def minimal_input(schema: Mapping[str, Any]) -> Any:
    """The emptiest value ``schema`` (a JSON Schema) accepts: required properties only,
    empty arrays and strings, zero or the nearest bound, the first ``enum`` value.

    Covers what tool input schemas use (types, ``properties``/``required``, ``items`` with
    ``minItems``, ``minLength``, numeric bounds, ``enum``/``const``, ``anyOf``/``oneOf``/
    ``allOf`` and local ``$ref``); a ``pattern`` or ``format`` is not generated.
    """
    return _minimal(schema, schema, 0)


def _resolve(ref: str, root: Mapping[str, Any]) -> Mapping[str, Any]:
    node: Any = root
    if not ref.startswith("#"):
        return {}
    for part in [p for p in ref[1:].split("/") if p]:
        part = part.replace("~1", "/").replace("~0", "~")
        node = node.get(part) if isinstance(node, Mapping) else None
    return node if isinstance(node, Mapping) else {}


def _merged(schema: Mapping[str, Any], root: Mapping[str, Any]) -> Mapping[str, Any]:
    """``schema`` with its ``$ref`` and ``allOf`` parts folded in (properties and required
    names joined, other keys from the first part that has them)."""
    parts: list[Mapping[str, Any]] = [schema]
    if isinstance(schema.get("$ref"), str):
        parts.append(_resolve(schema["$ref"], root))
    parts += [p for p in schema.get("allOf") or [] if isinstance(p, Mapping)]
    if len(parts) == 1:
        return schema
    out: dict[str, Any] = {}
    properties: dict[str, Any] = {}
    required: list[str] = []
    for part in parts:
        properties.update(part.get("properties") or {})
        required += [r for r in part.get("required") or [] if r not in required]
        for key, value in part.items():
            if key not in ("$ref", "allOf", "properties", "required"):
                out.setdefault(key, value)
    if properties:
        out["properties"] = properties
    if required:
        out["required"] = required
    return out


def _type_of(schema: Mapping[str, Any]) -> str | None:
    kind = schema.get("type")
    if isinstance(kind, Sequence) and not isinstance(kind, str):
        kinds = [str(k) for k in kind]
        return "null" if "null" in kinds else (kinds[0] if kinds else None)
    if isinstance(kind, str):
        return kind
    if "properties" in schema or "required" in schema:
        return "object"
    if "items" in schema:
        return "array"
    return None


def _within(value: float, schema: Mapping[str, Any]) -> bool:
    low, high = schema.get("minimum"), schema.get("maximum")
    low_open, high_open = schema.get("exclusiveMinimum"), schema.get("exclusiveMaximum")
    return not ((isinstance(low, (int, float)) and value < low)
                or (isinstance(high, (int, float)) and value > high)
                or (isinstance(low_open, (int, float)) and value <= low_open)
                or (isinstance(high_open, (int, float)) and value >= high_open))


def _number(schema: Mapping[str, Any], integer: bool) -> int | float:
    """Zero, or the allowed value nearest to it (a whole one for ``integer``)."""
    value: float = 0
    low, high = schema.get("minimum"), schema.get("maximum")
    low_open, high_open = schema.get("exclusiveMinimum"), schema.get("exclusiveMaximum")
    if isinstance(low, (int, float)) and value < low:
        value = low
    if isinstance(low_open, (int, float)) and value <= low_open:
        value = low_open + (1 if integer else abs(low_open) * 1e-9 + 1e-9)
    if isinstance(high, (int, float)) and value > high:
        value = high
    if isinstance(high_open, (int, float)) and value >= high_open:
        value = high_open - (1 if integer else abs(high_open) * 1e-9 + 1e-9)
    if not integer:
        return value
    up, down = math.ceil(value), math.floor(value)
    return up if _within(up, schema) or not _within(down, schema) else down


def _count(schema: Mapping[str, Any], key: str) -> int:
    value = schema.get(key)
    return max(value, 0) if isinstance(value, int) else 0


def _minimal(schema: Mapping[str, Any], root: Mapping[str, Any], depth: int) -> Any:
    if depth > _MAX_DEPTH:
        return None
    schema = _merged(schema, root)
    if "const" in schema:
        return schema["const"]
    if isinstance(schema.get("enum"), list) and schema["enum"]:
        return schema["enum"][0]
    for key in ("anyOf", "oneOf"):
        options = [o for o in schema.get(key) or [] if isinstance(o, Mapping)]
        if options:
            return _minimal(options[0], root, depth + 1)
    kind = _type_of(schema)
    if kind == "object" or (kind is None and depth == 0):
        properties = schema.get("properties") or {}
        out: dict[str, Any] = {}
        for name in schema.get("required") or []:
            prop = properties.get(name)
            out[name] = _minimal(prop, root, depth + 1) if isinstance(prop, Mapping) else None
        return out
    if kind == "array":
        items = schema.get("items")
        item = _minimal(items, root, depth + 1) if isinstance(items, Mapping) else None
        return [item] * _count(schema, "minItems")
    if kind == "string":
        return "x" * _count(schema, "minLength")
    if kind in ("integer", "number"):
        return _number(schema, kind == "integer")
    if kind == "boolean":
        return False
    return None
