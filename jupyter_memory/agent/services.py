"""The services a session is made of that act at the moments of a turn, built for it.

``Session`` calls :func:`compose` once, when it is made, and keeps each service as a field;
its turn hooks run them in the order of :class:`TurnServices`. Every service names the
session as a structural type of what it reads (``agent/host.py``, ``compaction/host.py``).
"""

from __future__ import annotations

from dataclasses import dataclass

from jupyter_memory.agent.compaction.hook import CompactionHook
from jupyter_memory.agent.compaction.host import CompactingSession
from jupyter_memory.agent.cost import CostInRecord
from jupyter_memory.agent.extraction import ExtractionHook
from jupyter_memory.agent.lifecycle import Lifecycle
from jupyter_memory.agent.session_notes import SessionNotes
from jupyter_memory.transcript.mirror import SessionLog

__all__ = ["TurnServices", "compose"]


@dataclass(frozen=True)
class TurnServices:
    """A session's turn services, in the order their hooks run."""

    log: SessionLog | None
    extraction: ExtractionHook
    lifecycle: Lifecycle
    notes: SessionNotes
    compactor: CompactionHook
    cost_section: CostInRecord


def compose(session: CompactingSession) -> TurnServices:
    """The JSONL mirror (unless ``log_transcript`` is off), extraction, lifecycle, session
    notes, compaction and the cost section of ``session``'s turn records."""
    return TurnServices(
        log=SessionLog(session) if session.config.log_transcript else None,
        extraction=ExtractionHook(session),
        lifecycle=Lifecycle(session),
        notes=SessionNotes(session),
        compactor=CompactionHook(session),
        cost_section=CostInRecord(session.cost_ledger),
    )
