"""The side call that asks a small model which memories fit the person's message.

The answer is structured output: a tool whose input schema is
``{"selected_memories": [...]}``, forced with ``tool_choice``. Forcing a tool works on
every endpoint that speaks the Messages API, unlike newer structured-output options.
The names that come back are only a suggestion: :func:`validate` keeps those that are in
the manifest that was shown, at most five, in the order given.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from jupyter_memory.memdir.index import normalize_file
from jupyter_memory.recall.limits import (
    MAX_FILES_PER_TURN,
    SELECTOR_MAX_TOKENS,
    SELECTOR_TIMEOUT_SECONDS,
)

if TYPE_CHECKING:
    from jupyter_memory.context.sdk import ModelClient

__all__ = [
    "SELECTOR_SYSTEM",
    "SELECTOR_TOOL",
    "SelectorAnswer",
    "SelectorError",
    "build_request",
    "call_selector",
    "parse_answer",
    "validate",
]

SELECTOR_TOOL_NAME = "select_memories"

SELECTOR_SYSTEM = """\
You pick saved memories for an assistant that works in a Jupyter notebook beside a data \
scientist. You receive a list of memory files, one per line: its type, its file name, when \
it was last written, and a one-line description; then the person's latest message.

Choose only the memories that will clearly help the assistant answer this particular \
message, at most five, and give their file names exactly as listed. Be strict: if you are \
unsure whether a memory helps, leave it out. Returning an empty list is a normal, good \
answer when nothing fits.

The message may come with a list of tools the assistant has just been using without \
errors. Do not pick memories that only explain how to use those tools: the assistant \
already knows. Do pick memories that warn about them: pitfalls, known bugs, gotchas, \
things to avoid."""

SELECTOR_TOOL: dict[str, Any] = {
    "name": SELECTOR_TOOL_NAME,
    "description": "Report the memory files that will help with the person's message.",
    "input_schema": {
        "type": "object",
        "properties": {
            "selected_memories": {
                "type": "array",
                "items": {"type": "string"},
                "description": "File names exactly as listed, best first; at most five; "
                "empty when none clearly helps.",
            }
        },
        "required": ["selected_memories"],
        "additionalProperties": False,
    },
}


class SelectorError(RuntimeError):
    """The selector answered, but not with a usable list of file names."""


@dataclass(frozen=True)
class SelectorAnswer:
    """What the selector chose: ``kept`` names in the manifest, ``dropped`` names not in it."""

    kept: tuple[str, ...]
    dropped: tuple[str, ...]
    over_limit: tuple[str, ...] = ()


def user_content(
    prompt: str, manifest: str, recent_tools: Sequence[str] = ()
) -> list[dict[str, Any]]:
    """The selector's one user message: the manifest, then the person's words and tools.

    The manifest comes first and carries the cache breakpoint: the tool, the system prompt
    and the manifest stay the same from turn to turn until a memory is saved, surfaced or
    read, so that prefix is written once and read after (when it reaches the model's
    minimum cacheable length; a few memories stay under it).
    """
    text = f"The person's message:\n{prompt.strip()}"
    if recent_tools:
        text += "\n\nTools used without errors since the person's previous message: "
        text += ", ".join(recent_tools)
    return [
        {"type": "text", "text": f"Memory files:\n{manifest}",
         "cache_control": {"type": "ephemeral"}},
        {"type": "text", "text": text},
    ]


def build_request(
    model: str, prompt: str, manifest: str, recent_tools: Sequence[str] = ()
) -> dict[str, Any]:
    """Keyword arguments for ``client.messages.create`` (exactly what is sent)."""
    return {
        "model": model,
        "max_tokens": SELECTOR_MAX_TOKENS,
        "system": SELECTOR_SYSTEM,
        "messages": [{"role": "user", "content": user_content(prompt, manifest, recent_tools)}],
        "tools": [SELECTOR_TOOL],
        "tool_choice": {"type": "tool", "name": SELECTOR_TOOL_NAME},
    }


def _blocks(response: Any) -> list[Mapping[str, Any]]:
    content = getattr(response, "content", None)
    if content is None and isinstance(response, Mapping):
        content = response.get("content")
    out = []
    for block in content or []:
        if isinstance(block, Mapping):
            out.append(block)
        elif hasattr(block, "model_dump"):
            out.append(block.model_dump())
    return out


def parse_answer(response: Any) -> list[str]:
    """The list of names in a selector response.

    The forced tool call is the normal answer; a text block holding the same JSON object
    is accepted too, for endpoints that ignore ``tool_choice``.
    """
    blocks = _blocks(response)
    for block in blocks:
        if block.get("type") == "tool_use" and block.get("name") == SELECTOR_TOOL_NAME:
            return _names(block.get("input"))
    for block in blocks:
        if block.get("type") == "text":
            text = str(block.get("text", ""))
            start, end = text.find("{"), text.rfind("}")
            if 0 <= start < end:
                try:
                    return _names(json.loads(text[start : end + 1]))
                except ValueError:
                    pass
    kinds = ", ".join(str(b.get("type")) for b in blocks) or "nothing"
    raise SelectorError(f"the response held no {SELECTOR_TOOL_NAME} call (it held {kinds})")


def _names(payload: Any) -> list[str]:
    if not isinstance(payload, Mapping) or not isinstance(payload.get("selected_memories"), list):
        raise SelectorError("the answer had no selected_memories list")
    return [str(x) for x in payload["selected_memories"] if isinstance(x, str)]


def validate(names: Iterable[str], manifest_files: Iterable[str]) -> SelectorAnswer:
    """Keep names that are in the manifest (once each, in order), at most five."""
    known = {normalize_file(f): f for f in manifest_files}
    kept: list[str] = []
    dropped: list[str] = []
    over: list[str] = []
    for raw in names:
        name = normalize_file(raw.strip().strip("`'\""))
        file = known.get(name)
        if file is None:
            dropped.append(raw)
        elif file not in kept and file not in over:
            (kept if len(kept) < MAX_FILES_PER_TURN else over).append(file)
    return SelectorAnswer(tuple(kept), tuple(dropped), tuple(over))


def call_selector(
    client: ModelClient, request: Mapping[str, Any],
    on_response: Callable[[Any], None] | None = None,
) -> list[str]:
    """Send ``request`` (from :func:`build_request`) through the SDK; the names it chose.

    ``on_response`` sees the raw response first (the session charges its cost ledger).
    """
    response = client.messages.create(**request, timeout=SELECTOR_TIMEOUT_SECONDS)
    if on_response is not None:
        on_response(response)
    return parse_answer(response)
