"""What a session's own services read of it, as a structural type.

``agent/session.py`` builds its services (the JSONL mirror, extraction, lifecycle, session
notes, compaction, the cost section) and holds them as fields, so their modules cannot
import it, not even for the type checker: that would be an import cycle. They name the
session they serve as a :class:`SessionHost` instead: everything here is something
``Session`` has, and a ``TYPE_CHECKING`` block at the end of agent/session.py has mypy
check that it still does. Code above the session (the loop, the front ends) names
``Session`` itself.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    from jupyter_memory.agent.background import BackgroundRunner
    from jupyter_memory.agent.config import AgentConfig
    from jupyter_memory.agent.conversation import Conversation
    from jupyter_memory.agent.memory_context import MemoryContext
    from jupyter_memory.agent.tools.base import ToolContext, ToolRegistry
    from jupyter_memory.context.assemble import AssembledRequest, RequestState
    from jupyter_memory.context.instructions import InstructionSet
    from jupyter_memory.context.pricing import CostLedger
    from jupyter_memory.context.sdk import ModelClient
    from jupyter_memory.memdir.store import MemoryStore
    from jupyter_memory.transcript.mirror import SessionLog

__all__ = ["SessionHost"]


class SessionHost(Protocol):
    """A session as its services see it: who it is, its conversation and memory, how it
    builds a request and reaches the model, its log, background runner and cost ledger."""

    @property
    def cwd(self) -> Path: ...

    @property
    def env(self) -> Mapping[str, str] | None: ...

    @property
    def session_id(self) -> str: ...

    @property
    def config(self) -> AgentConfig: ...

    @property
    def conversation(self) -> Conversation: ...

    @property
    def messages(self) -> list[dict[str, Any]]: ...

    @property
    def memory(self) -> MemoryContext: ...

    @property
    def project_root(self) -> Path: ...

    @property
    def memdir(self) -> Path | None: ...

    @property
    def store(self) -> MemoryStore | None: ...

    @property
    def team_dir(self) -> Path | None: ...

    @property
    def instructions(self) -> InstructionSet: ...

    @property
    def log(self) -> SessionLog | None: ...

    @property
    def runner(self) -> BackgroundRunner: ...

    @property
    def cost_ledger(self) -> CostLedger: ...

    @property
    def tools(self) -> ToolRegistry: ...

    def tool_context(self) -> ToolContext: ...

    def client(self) -> ModelClient: ...

    def request_state(self, messages: list[dict[str, Any]] | None = None) -> RequestState: ...

    def assemble(self, messages: list[dict[str, Any]] | None = None) -> AssembledRequest: ...

    def today(self) -> str: ...

    def refresh_context(self) -> None: ...
