"""What recall reads of a session, as a structural type.

Recall sits below the agent layer, so it cannot name the agent's ``Session`` class
(agent/session.py imports recall). These protocols list exactly what ``prefetch`` and
``explain`` use of a session; ``Session`` satisfies them without knowing they exist, and a
``TYPE_CHECKING`` block at the end of agent/session.py has mypy check that it does.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence, Set
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    from jupyter_memory.context.pricing import CostLedger

__all__ = ["BackgroundWork", "Explained", "RecallConfig", "RecallSession", "SeenFiles",
           "Waitable"]


class RecallConfig(Protocol):
    """The settings recall reads (fields of ``AgentConfig``)."""

    @property
    def small_model(self) -> str: ...

    @property
    def recall_selector(self) -> str: ...

    @property
    def cjk_trigger(self) -> bool: ...


class SeenFiles(Protocol):
    """What recall reads of the tool context: the files the agent has read or written."""

    @property
    def read_files(self) -> Mapping[Path, float]: ...

    @property
    def written_memdir_files(self) -> Set[str]: ...


class Waitable(Protocol):
    """Background work that was started: whether it finished, and waiting for it."""

    def done(self) -> bool: ...

    def wait(self, timeout: float | None = None) -> bool: ...


class BackgroundWork(Protocol):
    """The session's runner of background work (``agent/background.py``): a thread live,
    a queue drained at defined points when the session's work is synchronous."""

    def submit(self, name: str, work: Callable[[], None]) -> Waitable: ...


class Explained(Protocol):
    """A prefetch, as ``%memory why`` reads it: one decision per memory."""

    @property
    def decisions(self) -> list[dict[str, Any]]: ...


class RecallSession(Protocol):
    """A session as recall sees it: its memdir, mode, conversation and tool context, the
    runner its prefetch runs on, the ledger the selector's calls are charged to, and its
    latest prefetch."""

    @property
    def session_id(self) -> str: ...

    @property
    def config(self) -> RecallConfig: ...

    @property
    def recall_mode(self) -> str: ...

    @property
    def memdir(self) -> Path | None: ...

    @property
    def team_dir(self) -> Path | None: ...

    @property
    def messages(self) -> Sequence[Mapping[str, Any]]: ...

    def tool_context(self) -> SeenFiles: ...

    @property
    def runner(self) -> BackgroundWork: ...

    @property
    def cost_ledger(self) -> CostLedger: ...

    @property
    def last_prefetch(self) -> Explained | None: ...

    @property
    def recall_failures_told(self) -> set[str]: ...
