"""What this package calls on the Anthropic SDK client, as a structural type.

Every model call (the agent loop, the recall selector, extraction, session notes,
compaction, ``%%remember``, the token count of ``%context``) goes through an object with
exactly these members. ``anthropic.Anthropic`` has them; so does the recording wrapper of
``sessions/recording/recorder.py``, which writes each exchange down on its way through.
A session's model endpoint (``agent/endpoint.py``) hands such a client out.
"""

from __future__ import annotations

from collections.abc import Callable
from contextlib import AbstractContextManager
from typing import TYPE_CHECKING, Protocol

if TYPE_CHECKING:
    from anthropic.lib.streaming import MessageStream
    from anthropic.types import Message, MessageTokensCount

__all__ = ["MessagesAPI", "ModelClient"]


class MessagesAPI(Protocol):
    """``client.messages``: the calls of the Messages API this package makes, with the SDK's
    keyword arguments (``model``, ``max_tokens``, ``messages``, ``system``, ``tools``, …)."""

    @property
    def create(self) -> Callable[..., Message]: ...

    @property
    def stream(self) -> Callable[..., AbstractContextManager[MessageStream]]: ...

    @property
    def count_tokens(self) -> Callable[..., MessageTokensCount]: ...


class ModelClient(Protocol):
    """An SDK client: its Messages API and ``close()`` for its connection pool."""

    @property
    def messages(self) -> MessagesAPI: ...

    def close(self) -> None: ...
