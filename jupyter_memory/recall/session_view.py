"""What recall reads of a session, as a structural type.

Recall sits below the agent layer, so it cannot name the agent's ``Session`` class
(agent/session.py imports recall). These protocols list exactly what ``prefetch``,
``explain`` and ``caches`` use of a session; ``Session`` (and ``AgentSession``) satisfy them
without knowing they exist, and a ``TYPE_CHECKING`` block at the end of agent/session.py
has mypy check that they do.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence, Set
from pathlib import Path
from typing import Any, Protocol

__all__ = ["RecallConfig", "RecallSession", "SeenFiles"]


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


class RecallSession(Protocol):
    """A session as recall sees it: its memdir, mode, conversation and tool context."""

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
