"""The turn hook protocol: what a session's hooks are called with, and when.

A turn hook implements :class:`TurnHook` (subclass it for the no-op defaults of the
moments it does not use). The session's own services are hooks, in the order they run:
the JSONL mirror, extraction, lifecycle, session notes, compaction and the cost section;
then the model endpoint's (a recorder or replayer); then any added with
``session.hooks.append(hook)``. :class:`TurnHooks` keeps that order. The moments:

- ``before_turn(turn)``: the person's message is in ``turn``; nothing sent yet.
- ``before_call(turn, round_index)``: right before each model call of the turn.
- ``record_fields(turn)``: the turn has ended and its record is about to be built; a
  mapping returned here becomes part of the record (``compactions``, ``cost``), so no hook
  changes a record after it is built.
- ``after_turn(turn, result)``: the turn's record is built; the conversation is final.

A hook that raises a :class:`~jupyter_memory.errors.JupyterMemoryError` means it (a
refusal at the blocking level, a replay mismatch): the message reaches the person as it
is. Any other exception is a bug in that hook: :class:`HookFailed` (an internal error)
names the hook and the moment, and the traceback goes to the log; it is never reported as
a failure of the model call.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Mapping
from typing import Any, Protocol

from jupyter_memory.context.sdk import ModelClient
from jupyter_memory.errors import InternalError, JupyterMemoryError, log_internal

__all__ = [
    "EVENTS",
    "HookFailed",
    "TurnHook",
    "TurnHooks",
    "TurnInProgress",
    "TurnNotices",
    "TurnOutcome",
    "collect",
    "dispatch",
]

EVENTS = ("before_turn", "before_call", "record_fields", "after_turn")


class TurnNotices(Protocol):
    """The front end's callback for notices about background work a turn started."""

    @property
    def on_notice(self) -> Callable[[str, dict[str, Any]], None]: ...


class TurnInProgress(Protocol):
    """What a hook reads of a turn in progress (``agent.loop.TurnState``)."""

    @property
    def prompt(self) -> str: ...

    @property
    def client(self) -> ModelClient: ...

    @property
    def events(self) -> TurnNotices: ...

    @property
    def added(self) -> list[dict[str, Any]]: ...

    @property
    def new_messages(self) -> list[dict[str, Any]]: ...

    @property
    def requests(self) -> list[dict[str, Any]]: ...

    @property
    def extra(self) -> dict[str, Any]: ...

    @property
    def got_response(self) -> bool: ...

    @property
    def memories_written(self) -> list[str]: ...

    def note(self, kind: str, text: str) -> None: ...


class TurnOutcome(Protocol):
    """What a hook reads of a finished turn (``agent.loop.TurnResult``)."""

    @property
    def status(self) -> str: ...

    @property
    def answer(self) -> str: ...

    @property
    def record(self) -> dict[str, Any]: ...


class TurnHook(Protocol):
    """An object that acts at the moments of a turn; every moment is optional."""

    def before_turn(self, turn: TurnInProgress) -> None:
        return None

    def before_call(self, turn: TurnInProgress, round_index: int) -> None:
        return None

    def record_fields(self, turn: TurnInProgress) -> Mapping[str, Any] | None:
        return None

    def after_turn(self, turn: TurnInProgress, result: TurnOutcome) -> None:
        return None


class TurnHooks:
    """A session's turn hooks in the order they run: its services' hooks and its model
    endpoint's (both from ``services()``, read each time, so a service or endpoint that is
    replaced is the one that runs), then those added with :meth:`append`."""

    def __init__(self, services: Callable[[], Iterable[TurnHook]]) -> None:
        self._services = services
        self._added: list[TurnHook] = []

    def __iter__(self) -> Iterator[TurnHook]:
        yield from self._services()
        yield from list(self._added)

    def __contains__(self, hook: object) -> bool:
        return any(h is hook for h in self)

    def append(self, hook: TurnHook) -> None:
        """Run ``hook`` after the session's own hooks, from the next moment on."""
        self._added.append(hook)

    def remove(self, hook: TurnHook) -> None:
        """Stop running a hook added with :meth:`append`."""
        self._added.remove(hook)

    @property
    def added(self) -> tuple[TurnHook, ...]:
        return tuple(self._added)


class HookFailed(InternalError):
    """A hook raised something that is not a message for the person: a bug in the hook."""

    def __init__(self, hook: object, event: str, exc: BaseException) -> None:
        self.hook_name = type(hook).__name__
        self.event = event
        super().__init__(exc, f"in the {self.hook_name} hook ({event})")


def dispatch(hooks: Iterable[TurnHook], event: str, *args: Any) -> None:
    """Call ``event`` on every hook, in order."""
    _each(hooks, event, args)


def collect(hooks: Iterable[TurnHook], event: str, *args: Any) -> dict[str, Any]:
    """Call ``event`` on every hook and merge the mappings they return (a later hook's key
    wins, as a later hook runs later)."""
    merged: dict[str, Any] = {}
    for value in _each(hooks, event, args):
        if value is None:
            continue
        if not isinstance(value, Mapping):
            raise TypeError(f"{event} must return a mapping or None, not {type(value).__name__}")
        merged.update(value)
    return merged


def _each(hooks: Iterable[TurnHook], event: str, args: tuple[Any, ...]) -> list[Any]:
    if event not in EVENTS:
        raise ValueError(f"unknown hook event {event!r}; one of {', '.join(EVENTS)}")
    results = []
    for hook in list(hooks):
        method = getattr(hook, event, None)
        if method is None:  # an object that implements the protocol only in part
            continue
        try:
            results.append(method(*args))
        except (JupyterMemoryError, KeyboardInterrupt):
            raise
        except Exception as exc:
            failed = HookFailed(hook, event, exc)
            log_internal(exc, failed.where)
            raise failed from exc
    return results
