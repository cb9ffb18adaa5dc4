"""A responder for the ``fake_api`` fixture that tells the extraction agent's requests from
the main agent's: import it as ``from extraction_router import Router``."""

from __future__ import annotations

import threading
from collections import deque
from collections.abc import Callable
from typing import Any

from jupyter_memory.localapi import Turn

#: The opening words of the extraction agent's instruction, which only its requests carry.
MARKER = "You are now the memory extraction agent"


def user_texts(body: dict[str, Any]) -> str:
    """The text of every user message of a request body, one block a line."""
    parts = []
    for message in body.get("messages", []):
        if message.get("role") != "user":
            continue
        content = message.get("content")
        if isinstance(content, str):
            parts.append(content)
            continue
        parts += [b.get("text", "") for b in content if b.get("type") == "text"]
    return "\n".join(parts)


def is_extraction(body: dict[str, Any]) -> bool:
    """Whether a request body is the extraction agent's."""
    return MARKER in user_texts(body)


class Router:
    """Answers main-agent and extraction requests from two separate queues.

    The two streams interleave in time (extraction runs in a thread), so one script
    could not say which reply goes where. An empty queue answers ``None``: the server
    then fails the request, and the test sees it.
    """

    def __init__(self, fake: Any) -> None:
        self.main: deque[Turn | Callable[[dict], Turn]] = deque()
        self.extract: deque[Turn | Callable[[dict], Turn]] = deque()
        self.main_bodies: list[dict[str, Any]] = []
        self.extract_bodies: list[dict[str, Any]] = []
        self._lock = threading.Lock()
        fake.responder = self

    def __call__(self, body: dict[str, Any]) -> Turn | None:
        extraction = is_extraction(body)
        with self._lock:
            (self.extract_bodies if extraction else self.main_bodies).append(body)
            queue = self.extract if extraction else self.main
            item = queue.popleft() if queue else None
        if item is not None and not isinstance(item, Turn):
            item = item(body)
        return item
