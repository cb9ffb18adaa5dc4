"""Every model call of a session, as sent: the data behind ``%request``.

A session's one endpoint hands out its client through ``Session.client()``, which wraps it
in a :class:`LoggedClient`: each ``messages.create`` / ``messages.stream`` call is noted
in the session's :class:`CallLog` the moment it leaves, whether it then succeeds or not.
The body is kept once, as references into the session's part store
(:mod:`~jupyter_memory.context.request_parts`): the extraction fork and the selector share
parts with the main turn, so a log of every call costs little more than the turn records.

Which kind of call it is (``main``, ``selector``, ``extraction``, ``remember``,
``summary``, ``notes``: the cost ledger's kinds) is said by the code making it, with
``with calling("selector"): ...`` around the call; a call made outside any such block is
the agent's own (``main``). A child session (a defined agent) shares its parent's log and
names its agent on each call.
"""

from __future__ import annotations

import contextlib
import contextvars
import threading
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import AbstractContextManager
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from jupyter_memory.context.request_parts import PartStore, content_digest
from jupyter_memory.memdir.clock import now_iso

if TYPE_CHECKING:
    from anthropic.lib.streaming import MessageStream
    from anthropic.types import Message, MessageTokensCount

    from jupyter_memory.context.sdk import MessagesAPI, ModelClient

__all__ = ["CLIENT_OPTIONS", "CallLog", "LoggedClient", "ModelCall", "calling", "current_kind"]

#: Keyword arguments of SDK calls that are client options, not part of the request body.
CLIENT_OPTIONS = frozenset({"timeout", "extra_headers", "extra_query", "extra_body", "stream"})

_KIND: contextvars.ContextVar[str] = contextvars.ContextVar("jupyter_memory_call_kind",
                                                           default="main")


@contextlib.contextmanager
def calling(kind: str) -> Iterator[None]:
    """Model calls made inside this block are of ``kind`` (in this thread)."""
    token = _KIND.set(kind)
    try:
        yield
    finally:
        _KIND.reset(token)


def current_kind() -> str:
    """The kind of model call made here now (``main`` outside any :func:`calling`)."""
    return _KIND.get()


@dataclass(frozen=True)
class ModelCall:
    """One model call: what kind, for which turn, and its body in reference form."""

    number: int
    """1 for the session's first call, counting every kind."""
    kind: str
    agent: str | None
    """The defined agent that made it (a child session), or None."""
    turn: int
    """The turn it belongs to: the one running, or the last one ended (extraction, notes
    and ``%%remember`` run after a turn); 0 before the first turn."""
    during_turn: bool
    sent: str
    request: dict[str, Any]
    """``params``, ``system``, ``tools``, ``conversation``, ``cache_marks`` and ``digest``:
    the form a turn record stores (request_parts.py)."""

    @property
    def digest(self) -> str:
        return str(self.request["digest"])

    def to_json(self) -> dict[str, Any]:
        """The entry a turn record's ``calls`` carries."""
        return {"number": self.number, "kind": self.kind, "agent": self.agent,
                "turn": self.turn, "during_turn": self.during_turn, "sent": self.sent,
                **self.request}


class CallLog:
    """The model calls of one session and its child sessions, in the order they were sent.

    ``turns`` is read when a call is noted (the root session's finished turns); the agent
    loop says when a turn runs (:meth:`turn_started`, :meth:`turn_ended`). Thread-safe:
    the selector, extraction and the note taker call from background threads.
    """

    def __init__(self, parts: PartStore, turns: Callable[[], int]) -> None:
        self.parts = parts
        self._turns = turns
        self._lock = threading.Lock()
        self._calls: list[ModelCall] = []
        self._running = False
        self._carried = 0
        self._clients: dict[str | None, LoggedClient] = {}

    def turn_started(self) -> None:
        with self._lock:
            self._running = True

    def turn_ended(self) -> None:
        with self._lock:
            self._running = False

    def note(self, body: dict[str, Any], *, kind: str | None = None,
             agent: str | None = None) -> ModelCall:
        """Keep ``body`` (the keyword arguments sent, client options left out)."""
        wire = {k: v for k, v in body.items() if k not in CLIENT_OPTIONS}
        digest = content_digest(wire)
        ref = self.parts.hold(wire)
        sent = now_iso()
        with self._lock:
            running = self._running
            finished = self._turns()
            call = ModelCall(number=len(self._calls) + 1, kind=kind or current_kind(),
                             agent=agent, turn=finished + 1 if running else finished,
                             during_turn=running, sent=sent,
                             request={**ref, "digest": digest})
            self._calls.append(call)
        return call

    def client(self, inner: ModelClient, agent: str | None = None) -> LoggedClient:
        """``inner`` wrapped so its calls are noted here: the same wrapper while ``inner``
        and ``agent`` stay the same (a session hands out one client while its settings do)."""
        with self._lock:
            cached = self._clients.get(agent)
            if cached is None or cached.inner is not inner:
                cached = self._clients[agent] = LoggedClient(inner, self, agent)
            return cached

    @property
    def calls(self) -> list[ModelCall]:
        with self._lock:
            return list(self._calls)

    def uncarried(self, *, take: bool = True) -> list[ModelCall]:
        """The calls no turn record carries yet; with ``take``, the record asking carries
        them from now on (a failed turn's record does not: it may never be saved)."""
        with self._lock:
            out = self._calls[self._carried:]
            if take:
                self._carried = len(self._calls)
            return out

    def adopt(self, carried: Sequence[Mapping[str, Any]]) -> None:
        """Count the calls a failed turn's record carried (its ``calls``) as carried, once
        that record is on the page, so the next record does not carry them again."""
        numbers = [c["number"] for c in carried if isinstance(c.get("number"), int)]
        if numbers:
            with self._lock:
                self._carried = min(len(self._calls), max(self._carried, max(numbers)))

    def body(self, call: ModelCall) -> dict[str, Any]:
        """The exact body of ``call``, checked against its digest."""
        from jupyter_memory.context.request_parts import expand_request

        return expand_request(call.request, self.parts.values.get)


class _LoggedMessages:
    def __init__(self, inner: MessagesAPI, log: CallLog, agent: str | None) -> None:
        self._inner = inner
        self._log = log
        self._agent = agent

    def create(self, **kwargs: Any) -> Message:
        self._log.note(kwargs, agent=self._agent)
        return self._inner.create(**kwargs)

    def stream(self, **kwargs: Any) -> AbstractContextManager[MessageStream]:
        self._log.note(kwargs, agent=self._agent)
        return self._inner.stream(**kwargs)

    def count_tokens(self, **kwargs: Any) -> MessageTokensCount:
        return self._inner.count_tokens(**kwargs)  # counts, sends no request to answer


class LoggedClient:
    """An SDK client whose message calls are noted in a :class:`CallLog` as they leave."""

    def __init__(self, inner: ModelClient, log: CallLog, agent: str | None = None) -> None:
        self.inner = inner
        self._messages = _LoggedMessages(inner.messages, log, agent)

    @property
    def messages(self) -> _LoggedMessages:
        return self._messages

    def close(self) -> None:
        self.inner.close()
