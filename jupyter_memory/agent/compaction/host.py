"""What compaction reads of a session, as a structural type.

The session builds its compaction hook (``agent/services.py``), so compaction cannot name
``Session``; it reads a :class:`CompactingSession`: a ``SessionHost`` with the session
notes it summarises from first, the lifecycle hooks it runs (PreCompact, SessionStart,
PostCompact) and its own bookkeeping.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Protocol

from jupyter_memory.agent.host import SessionHost

if TYPE_CHECKING:
    from jupyter_memory.agent.compaction.bookkeeping import CompactionState
    from jupyter_memory.agent.lifecycle import Lifecycle
    from jupyter_memory.agent.session_notes import SessionNotes

__all__ = ["CompactingSession"]


class CompactingSession(SessionHost, Protocol):
    """A session as compaction sees it."""

    @property
    def notes(self) -> SessionNotes: ...

    @property
    def lifecycle(self) -> Lifecycle: ...

    @property
    def compaction(self) -> CompactionState: ...
