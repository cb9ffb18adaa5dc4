"""Record and replay wait for the background work of a turn (prefetch, extraction, session
notes), so that both runs see it finished at the same point and send the same requests."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from jupyter_memory.agent.session import Session

__all__ = ["SETTLE_SECONDS", "settle_background", "settle_prefetch", "settle_session_notes"]

#: How long record and replay wait for work a turn started in the background (prefetch,
#: extraction, session notes), so that both runs see it finished at the same point.
SETTLE_SECONDS = 120.0


def settle_prefetch(turn: Any, round_index: int) -> None:
    """Make the call after a tool round take a running prefetch only once it finished.

    The reference attaches prefetched memories to that call only if they happen to be
    ready. Record and replay wait for them instead (the first call still never waits), so
    both runs attach the same memories at the same point, which replay needs to send
    identical requests. The agent loop takes prefetched messages before the call hooks
    run, so the wait goes into the prefetch object itself.
    """
    prefetch = getattr(turn, "prefetch", None)
    if round_index == 0 and prefetch is not None and not isinstance(prefetch, _SettledPrefetch):
        turn.prefetch = _SettledPrefetch(prefetch)


class _SettledPrefetch:
    """A prefetch whose messages are handed over only after it has finished."""

    def __init__(self, inner: Any) -> None:
        self._inner = inner

    def take_messages(self) -> list[dict[str, Any]]:
        self._inner.wait(SETTLE_SECONDS)
        return list(self._inner.take_messages())

    def __getattr__(self, name: str) -> Any:
        return getattr(self._inner, name)


def settle_session_notes(session: Session) -> None:
    """Wait for a session-notes refresh under way (it may have started with this call)."""
    from jupyter_memory.agent.session_notes import session_notes_for

    notes = session_notes_for(session)
    if notes is not None:
        notes.wait(SETTLE_SECONDS)


def settle_background(session: Session) -> None:
    """Wait for the extraction agent and the session notes the finished turn started.

    Live, they run while the person goes on; recorded or replayed, the cell ends only when
    they are done, so their requests, their memory writes and their notices happen at the
    same point in both runs.
    """
    from jupyter_memory.agent.extraction import hook_for

    extraction = hook_for(session)
    if extraction is not None:
        extraction.wait(SETTLE_SECONDS)
    settle_session_notes(session)
