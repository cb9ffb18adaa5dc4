"""The turn hook protocol: what the session's hooks are called with, and when.

A hook is any object with some of these methods, kept in ``Session.hooks`` in the order
they run (the JSONL mirror first, then extraction, lifecycle, session notes, compaction,
and a recorder or replayer when one is installed):

- ``before_turn(turn)``: the person's message is in ``turn``; nothing sent yet.
- ``before_call(turn, round_index)``: right before each model call of the turn.
- ``record_fields(turn)``: the turn has ended and its record is about to be built; a
  mapping returned here becomes part of the record (``compactions``, ``cost``), so no hook
  changes a record after it is built.
- ``after_turn(turn, result)``: the turn's record is built; the conversation is final.

A hook that raises a :class:`~jupyter_memory.errors.JupyterMemoryError` means it (a
refusal at the blocking level, a replay mismatch): the message reaches the person as it
is. Any other exception is a bug in that hook, and is reported as such, naming the hook
and the moment, never as a failure of the model call.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from jupyter_memory.errors import JupyterMemoryError

__all__ = ["EVENTS", "HookFailed", "collect", "dispatch"]

EVENTS = ("before_turn", "before_call", "record_fields", "after_turn")


class HookFailed(JupyterMemoryError):
    """A hook raised something that is not a message for the person: a bug in the hook."""

    def __init__(self, hook: object, event: str, exc: BaseException) -> None:
        self.hook_name = type(hook).__name__
        self.event = event
        detail = str(exc) or type(exc).__name__
        super().__init__(
            f"The {self.hook_name} hook failed in {event}: {detail}. The conversation was "
            "kept consistent; run the cell again, and report this if it repeats."
        )


def dispatch(hooks: Iterable[Any], event: str, *args: Any) -> None:
    """Call ``event`` on every hook that has it, in order."""
    _each(hooks, event, args)


def collect(hooks: Iterable[Any], event: str, *args: Any) -> dict[str, Any]:
    """Call ``event`` on every hook that has it and merge the mappings they return (a later
    hook's key wins, as a later hook runs later)."""
    merged: dict[str, Any] = {}
    for value in _each(hooks, event, args):
        if value is None:
            continue
        if not isinstance(value, Mapping):
            raise TypeError(f"{event} must return a mapping or None, not {type(value).__name__}")
        merged.update(value)
    return merged


def _each(hooks: Iterable[Any], event: str, args: tuple[Any, ...]) -> list[Any]:
    if event not in EVENTS:
        raise ValueError(f"unknown hook event {event!r}; one of {', '.join(EVENTS)}")
    results = []
    for hook in list(hooks):
        method = getattr(hook, event, None)
        if method is None:
            continue
        try:
            results.append(method(*args))
        except (JupyterMemoryError, KeyboardInterrupt):
            raise
        except Exception as exc:
            raise HookFailed(hook, event, exc) from exc
    return results
