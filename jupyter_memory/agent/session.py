"""One agent session: the composition root of the services a conversation uses.

A kernel holds one ``Session``. It is made of typed services, each a declared field, and
refuses any attribute it does not declare (``__slots__``), so no feature hangs state on
it from outside:

- ``conversation`` (messages, turn count, usage, last record) and ``memory`` (where
  memory lives, the stores, instruction files, the index snapshot, the team folder);
- ``shared``: the model ``endpoint``, the background ``runner`` and the ``cost_ledger``,
  which a child session shares with its parent;
- ``parts`` (the request part store of its turn records), ``compaction`` (its state),
  ``last_prefetch``;
- the services that act at the moments of a turn, built by ``agent/services.py``: the
  JSONL ``log``, ``extraction``, ``lifecycle``, ``notes``, the ``compactor`` and the
  ``cost_section``; ``hooks`` runs them in that order, then the endpoint's, then any
  added with ``hooks.append``;
- ``offered``: the defined agents the main agent may delegate to, fixed when the session
  starts (``agent/delegation.py``), and ``delegated``: the child session of each agent's
  latest delegated run (``%context --agent NAME`` shows its request).

The session turns all of it into a ``RequestState`` for ``context.assemble``. It imports
nothing from IPython, so the CLI and tests use it too.
"""

from __future__ import annotations

import datetime as _dt
import functools
import logging
import os
import platform
import uuid
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from jupyter_memory.agent.background import BackgroundRunner
from jupyter_memory.agent.compaction.bookkeeping import CompactionState
from jupyter_memory.agent.config import (
    PERMISSION_MODES,
    RECALL_MODES,
    RECALL_SELECTORS,
    AgentConfig,
    setting,
    user_settings,
)
from jupyter_memory.agent.conversation import Conversation
from jupyter_memory.agent.definitions import AgentDefinition, OfferedAgents, offered_agents
from jupyter_memory.agent.endpoint import LiveEndpoint, ModelEndpoint
from jupyter_memory.agent.hooks import TurnHook, TurnHooks
from jupyter_memory.agent.memory_context import AgentMemory, MemoryContext
from jupyter_memory.agent.services import compose
from jupyter_memory.context import prompts
from jupyter_memory.context.assemble import (
    AssembledRequest,
    ContextReport,
    IndexPart,
    InstructionPart,
    RequestState,
    assemble,
    context_totals,
    report,
)
from jupyter_memory.context.call_log import CallLog
from jupyter_memory.context.pricing import CostLedger
from jupyter_memory.context.request_parts import PartStore
from jupyter_memory.context.sdk import ModelClient
from jupyter_memory.memdir import trust_table

if TYPE_CHECKING:
    from jupyter_memory.agent.compaction.hook import CompactionHook
    from jupyter_memory.agent.cost import CostInRecord
    from jupyter_memory.agent.extraction import ExtractionHook
    from jupyter_memory.agent.host import SessionHost
    from jupyter_memory.agent.lifecycle import Lifecycle
    from jupyter_memory.agent.session_notes import SessionNotes
    from jupyter_memory.agent.tools.base import ToolContext, ToolRegistry
    from jupyter_memory.context.instructions import InstructionSet
    from jupyter_memory.memdir.gateway import Roots
    from jupyter_memory.memdir.location import MemoryLocation
    from jupyter_memory.memdir.store import MemoryStore
    from jupyter_memory.recall.prefetch import Prefetch
    from jupyter_memory.recall.session_view import RecallSession
    from jupyter_memory.transcript.mirror import LoggedSession, SessionLog

log = logging.getLogger(__name__)

__all__ = [
    "PERMISSION_MODES",
    "RECALL_MODES",
    "RECALL_SELECTORS",
    "AgentConfig",
    "Session",
    "SharedServices",
    "default_cwd",
    "setting",
    "user_settings",
]


@dataclass(slots=True)
class SharedServices:
    """What a session shares with its child sessions: where model calls go, the runner of
    background work, and the ledger every call is charged to."""

    endpoint: ModelEndpoint
    runner: BackgroundRunner
    cost_ledger: CostLedger

    @classmethod
    def live(cls, env: Mapping[str, str] | None = None) -> SharedServices:
        """The endpoint the environment names, a fresh runner and an empty ledger."""
        return cls(LiveEndpoint(env), BackgroundRunner(), CostLedger())


class Session:
    """The state of one conversation with the agent, and the memory it can use.

    ``Session(cwd, config, env, notebook=..., session_id=...)`` makes a session with a
    live endpoint; ``session.child(definition)`` makes one that runs as a defined agent.
    """

    __slots__ = (
        "__weakref__",  # a prefetch refers to its session weakly
        "_registry",
        "_tool_context",
        "agent",
        "calls",
        "compaction",
        "compactor",
        "config",
        "conversation",
        "cost_section",
        "cwd",
        "delegated",
        "delegated_id",
        "env",
        "extraction",
        "hooks",
        "last_prefetch",
        "lifecycle",
        "log",
        "memory",
        "notebook",
        "notes",
        "offered",
        "parent",
        "parts",
        "recall_failures_told",
        "recall_override",
        "session_id",
        "shared",
        "today_override",
    )

    cwd: Path
    env: Mapping[str, str] | None
    config: AgentConfig
    notebook: str | None
    session_id: str
    #: The date requests carry instead of today's (a replay pins the recorded day).
    today_override: str | None
    #: ``%memory mode index|prefetch`` for this session (None: the setting decides).
    recall_override: str | None
    #: The defined agent this session runs as (a child session), or None.
    agent: AgentDefinition | None
    parent: Session | None
    #: The agent id of a session that runs one delegated task (its sidechain log's name).
    delegated_id: str | None
    #: The agents this session's Agent tool offers (none for a child: no nested delegation).
    offered: OfferedAgents
    #: The child session of each agent's latest delegated run, by agent name.
    delegated: dict[str, Session]
    conversation: Conversation
    memory: MemoryContext
    shared: SharedServices
    parts: PartStore
    #: Every model call of this session and its children, as sent (``%request``); a child
    #: session shares its parent's.
    calls: CallLog
    compaction: CompactionState
    #: The latest relevance prefetch this session started (``%memory why`` explains it).
    last_prefetch: Prefetch | None
    #: The kinds of selector failure this session was told of (each is told once).
    recall_failures_told: set[str]
    log: SessionLog | None
    extraction: ExtractionHook
    lifecycle: Lifecycle
    notes: SessionNotes
    compactor: CompactionHook
    cost_section: CostInRecord
    hooks: TurnHooks
    _registry: ToolRegistry | None
    _tool_context: ToolContext | None

    def __init__(
        self,
        cwd: Path | str,
        config: AgentConfig | None = None,
        env: Mapping[str, str] | None = None,
        *,
        notebook: str | None = None,
        session_id: str | None = None,
        shared: SharedServices | None = None,
        agent: AgentDefinition | None = None,
        parent: Session | None = None,
        delegated_id: str | None = None,
    ) -> None:
        self.cwd = Path(cwd).expanduser().resolve()
        self.env = env
        self.config = config if config is not None else AgentConfig.from_env(env)
        self.notebook = notebook
        self.session_id = session_id or str(uuid.uuid4())
        self.today_override = None
        self.recall_override = None
        self.agent = agent
        self.parent = parent
        self.delegated_id = delegated_id
        self.delegated = {}
        self.conversation = Conversation()
        self.memory = (AgentMemory(self.cwd, env, agent) if agent is not None
                       else MemoryContext(self.cwd, env))
        self.shared = shared if shared is not None else SharedServices.live(env)
        self.parts = PartStore()
        self.calls = (parent.calls if parent is not None
                      else CallLog(self.parts, lambda: self.conversation.turn_count))
        self.compaction = CompactionState()
        self.last_prefetch = None
        self.recall_failures_told = set()
        self._registry = None
        self._tool_context = None
        services = compose(self)
        self.log = services.log
        self.extraction = services.extraction
        self.lifecycle = services.lifecycle
        self.notes = services.notes
        self.compactor = services.compactor
        self.cost_section = services.cost_section
        if delegated_id is not None:  # a delegated run logs as a sidechain of its parent's
            parent_log = parent.log if parent is not None else None
            self.log = (parent_log.sidechain(delegated_id, self) if parent_log is not None
                        else None)
        self.hooks = TurnHooks(self._service_hooks)
        self.reload()
        self.offered = (offered_agents(self.project_root, env) if parent is None
                        else OfferedAgents())

    def _service_hooks(self) -> Iterator[TurnHook]:
        if self.log is not None:
            yield self.log
        if self.delegated_id is not None:  # one task inside its parent's turn: no session
            yield self.compactor           # start or stop, notes, extraction or cost section
            return
        yield from (self.extraction, self.lifecycle, self.notes, self.compactor,
                    self.cost_section)
        if self.parent is None:  # a recording notes its session's turns; a child's calls
            yield from self.shared.endpoint.turn_hooks()  # go through it all the same

    def child(self, definition: AgentDefinition, *, config: AgentConfig | None = None,
              session_id: str | None = None, delegated_id: str | None = None) -> Session:
        """A session that runs as ``definition`` (``.claude/agents/NAME.md``).

        It shares this session's model endpoint, background runner and cost ledger, so
        record and replay cover it and its calls are counted with the rest; it has its own
        conversation, prompt, tools, model (the agent's, else ``config``'s, by default
        this session's) and memory (docs/reference.md#agent-memory). Its id derives from this session's, so a
        replayed notebook (which restores that id) gives the child the recorded one.

        With ``delegated_id`` it runs one task the main agent handed over (the Agent tool):
        it keeps this session's id, as the reference's subagents do, logs as a sidechain
        named by that agent id, and takes part in no session events of its own.
        """
        base = config if config is not None else self.config
        if delegated_id is not None:
            return Session(self.cwd, definition.config_for(base, delegated=True), self.env,
                           notebook=self.notebook, session_id=self.session_id,
                           shared=self.shared, agent=definition, parent=self,
                           delegated_id=delegated_id)
        derived = uuid.uuid5(uuid.NAMESPACE_URL, f"{self.session_id}/agent/{definition.name}")
        return Session(self.cwd, definition.config_for(base), self.env, notebook=self.notebook,
                       session_id=session_id or str(derived), shared=self.shared,
                       agent=definition, parent=self)

    @property
    def call_kind(self) -> str:
        """How the cost ledger counts this session's own model calls: ``delegated`` for a
        delegated run, else ``main``."""
        return "delegated" if self.delegated_id is not None else "main"

    # ------------------------------------------------------------------ shared services

    @property
    def endpoint(self) -> ModelEndpoint:
        return self.shared.endpoint

    @property
    def runner(self) -> BackgroundRunner:
        return self.shared.runner

    @property
    def cost_ledger(self) -> CostLedger:
        return self.shared.cost_ledger

    def use_endpoint(self, endpoint: ModelEndpoint, *, close_old: bool = True) -> ModelEndpoint:
        """Send this session's model calls (and its children's) to ``endpoint`` from now on.

        The endpoint in use until now is closed, releasing what it owned (a client's
        connections, a local server, a recording file), unless ``endpoint`` took it over
        (a recording wraps what it records) or ``close_old`` is False (the endpoint was
        handed to another session). Background work runs synchronously while a
        synchronous endpoint (record, replay) is in use. Returns the endpoint replaced.
        """
        old = self.shared.endpoint
        if endpoint is old:
            return old
        self.shared.runner.settle()  # work queued for the old endpoint finishes through it
        self.shared.endpoint = endpoint
        self.shared.runner.endpoint_synchronous = endpoint.synchronous
        if close_old and not endpoint.owns(old):
            old.close()
        log.info("session %s: model calls now go to the %s endpoint (was %s)",
                 self.session_id, endpoint.kind, old.kind)
        return old

    def client(self) -> ModelClient:
        """The model client of the endpoint in use, for this session's settings.

        The endpoint keeps it, so connections are reused from turn to turn; each message
        call is noted in :attr:`calls` as it leaves. Raises ``NoModelConfigured`` when
        there is no model to talk to.
        """
        inner = self.shared.endpoint.client(max_retries=self.config.max_retries,
                                            timeout=self.config.timeout)
        return self.calls.client(inner, self.agent.name if self.agent else None)

    def close(self) -> None:
        """Close the endpoint in use (kernel shutdown): its client's connections and what
        it owns (a local server). A live endpoint builds a new client on the next call."""
        self.shared.endpoint.close()

    # ------------------------------------------------------------------ conversation

    @property
    def messages(self) -> list[dict[str, Any]]:
        """The conversation's messages (the list itself, changed in place)."""
        return self.conversation.messages

    @messages.setter
    def messages(self, messages: list[dict[str, Any]]) -> None:
        # In place: every part of the session holds this one list (``messages += [...]``).
        self.conversation.messages[:] = messages

    @property
    def last_record(self) -> dict[str, Any] | None:
        """The record of the last finished turn."""
        return self.conversation.last_record

    # ------------------------------------------------------------------ memory

    def reload(self) -> None:
        """Re-locate the memdir and re-read instruction files (session start, a replay
        that takes the recorded session id)."""
        self.memory.reload(session_id=self.session_id, notebook=self.notebook,
                           instruction_names=self.config.instruction_names,
                           maintain_index=self.config.maintain_index,
                           mark_provenance=self.config.provenance)
        self.reset_tools()

    def trust_notices(self) -> list[str]:
        """One line for each thing left out because its folder is not trusted."""
        notes = [n for n in self.memory.location.notes
                 if "not trusted" in n or "outside the project" in n]
        notes += self.memory.team_notices()
        notes += self.offered.notices
        hooks = self.lifecycle.skipped_notice()
        if hooks:
            notes.append(hooks)
        imports = self.memory.instructions.skip_notice()
        if imports:
            notes.append(imports)
        return notes

    def reset_tools(self) -> None:
        """Forget the tool context and context snapshot (settings or memory on/off changed)."""
        self._tool_context = None
        self.memory.configure_store(maintain_index=self.config.maintain_index,
                                    mark_provenance=self.config.provenance)
        self.memory.forget_snapshot()

    def refresh_context(self) -> None:
        """Re-read the index and instruction files before the next request.

        Like the reference, instruction files and ``MEMORY.md`` are read once and then
        kept for the whole session, so the cached prefix stays stable even when the
        agent saves memories mid-session. Compaction and memory changes the person makes
        through the front ends (``%%remember``, ``%memory forget``) call this.
        """
        if self.memory.refresh() and self._tool_context is not None:
            team = self.memory.team_dir  # a team folder just made: keep what was read
            self._tool_context.team_dir = (Path(os.path.realpath(team)) if team is not None
                                           else None)
            self._tool_context.roots = self.tool_roots()

    @property
    def roots(self) -> Roots:
        """The folders this session may reach (memdir/gateway.py), declared when it starts."""
        return self.memory.roots

    def tool_roots(self) -> Roots:
        """What the file tools may reach (:meth:`MemoryContext.tool_roots`)."""
        return self.memory.tool_roots()

    def context_pieces(self) -> tuple[list[InstructionPart], IndexPart | None]:
        """The instruction files and index of this session's ``messages[0]``."""
        return self.memory.pieces()

    @property
    def location(self) -> MemoryLocation:
        return self.memory.location

    @property
    def project_root(self) -> Path:
        return self.memory.project_root

    @property
    def recall_mode(self) -> str:
        return self.recall_override or self.config.recall_mode

    @property
    def memdir(self) -> Path | None:
        return self.memory.memdir

    @property
    def store(self) -> MemoryStore | None:
        """The ``MemoryStore`` of this session's memdir, or None when memory is off."""
        return self.memory.store

    @property
    def team_dir(self) -> Path | None:
        return self.memory.team_dir

    @property
    def instructions(self) -> InstructionSet:
        return self.memory.instructions

    # ------------------------------------------------------------------ recall

    def start_prefetch(self, prompt: str, client: ModelClient | None) -> Prefetch | None:
        """Start relevance prefetch for this turn (prefetch mode), or return None."""
        if self.recall_mode != "prefetch" or self.memdir is None:
            return None
        from jupyter_memory.recall import start_prefetch

        self.last_prefetch = start_prefetch(self, prompt, client)
        return self.last_prefetch

    # ------------------------------------------------------------------ tools

    @property
    def tools(self) -> ToolRegistry:
        """Every tool, and the Agent tool when this session offers agents to delegate to;
        for a defined agent, the tools it lists (with the tools that keep its memory when
        it has one), never the Agent tool."""
        if self._registry is None:
            from jupyter_memory.agent.definitions import MEMORY_TOOLS
            from jupyter_memory.agent.tools import ToolRegistry, default_registry, default_tools

            registry = default_registry()
            wanted = self.agent.tools if self.agent is not None else None
            if wanted is not None:
                names = set(wanted)
                if self.memdir is not None:
                    names.update(MEMORY_TOOLS)
                registry = registry.subset(names)
            elif self.agent is None and self.offered.agents:
                from jupyter_memory.agent.delegation import agent_tool

                registry = ToolRegistry([*default_tools(), agent_tool(self.offered.agents)])
            self._registry = registry
        return self._registry

    def tool_context(self, **kwargs: Any) -> ToolContext:
        """The tool context of this session (created once; kwargs update it)."""
        from jupyter_memory.agent.tools import PermissionPolicy, ToolContext

        if self._tool_context is None:
            self._tool_context = ToolContext(
                project_root=self.project_root,
                memdir=self.memdir,
                store=self.store,
                team_dir=self.team_dir,
                instructions=(None if self.agent is not None and self.agent.omit_claude_md
                              else self.instructions),
                permission=PermissionPolicy(mode=self.config.permission_mode),
                roots=self.tool_roots(),
            )
        for key, value in kwargs.items():
            setattr(self._tool_context, key, value)
        return self._tool_context

    # ------------------------------------------------------------------ requests

    def environment(self) -> prompts.Environment:
        return prompts.Environment(
            project_root=str(self.project_root),
            notebook=self.notebook,
            platform=_platform_name(),
            python_version=platform.python_version(),
            model=self.config.model,
        )

    def today(self) -> str:
        """The date requests carry: a replay's recorded one, a child's parent's, or today."""
        if self.today_override:
            return self.today_override
        return self.parent.today() if self.parent is not None else _dt.date.today().isoformat()

    def request_state(self, messages: list[dict[str, Any]] | None = None) -> RequestState:
        memdir = self.memdir
        instructions, index = self.context_pieces()
        team_dir = self.team_dir
        state = RequestState(
            model=self.config.model,
            max_tokens=self.config.max_tokens,
            environment=self.environment(),
            tools=self.tools.definitions(),
            messages=self.messages if messages is None else messages,
            instructions=instructions,
            memdir=str(memdir) if memdir is not None else None,
            recall_mode=self.recall_mode,
            index=index if self.recall_mode == "index" else None,
            today=self.today(),
            maintain_index=self.config.maintain_index,
            team_dir=None if team_dir is None else str(team_dir),
            team_index=self.memory.team_index_part() if self.recall_mode == "index" else None,
            cache_ttl=self.config.cache_ttl,
        )
        if self.agent is None:
            return state
        return replace(state, agent_prompt=self.agent.prompt or self.agent.description,
                       agent_name=self.agent.name, agent_memory_scope=self.agent.memory)

    def assemble(self, messages: list[dict[str, Any]] | None = None) -> AssembledRequest:
        return assemble(self.request_state(messages))

    def context_report(self, *, counted_tokens: int | None = None) -> ContextReport:
        """What the next request would hold: the data behind ``%context``."""
        return report(
            # only read, for its parts and breakpoints: not copied whole as a sent body is
            assemble(self.request_state(), copied=False),
            index=self.context_pieces()[1],
            last_usage=self.conversation.last_usage,
            counted_tokens=counted_tokens,
            notices=self.trust_notices(),
            context_window=self.config.context_window,
            since_usage=self._since_last_response(),
            warnings=tuple(self.instructions.warnings),
        )

    def context_totals(self) -> dict[str, Any]:
        """The budget a turn record keeps (``context``): what :meth:`context_report` says
        of the window and each category's tokens, worked out without building the request."""
        return context_totals(
            self.request_state(),
            last_usage=self.conversation.last_usage,
            context_window=self.config.context_window,
            since_usage=self._since_last_response(),
        )

    def _since_last_response(self) -> int:
        """Estimated tokens of the messages after the last assistant message: the part of
        the next request that the last response's usage does not cover."""
        from jupyter_memory.context.tokens import estimate_messages

        messages = self.messages
        for i in range(len(messages) - 1, -1, -1):
            if messages[i].get("role") == "assistant":
                return estimate_messages(messages[i + 1 :])
        return 0


@functools.lru_cache(maxsize=1)
def _platform_name() -> str:
    """``"Linux x86_64"``: fixed for the process, and ``platform`` is slow to ask each call."""
    return f"{platform.system()} {platform.machine()}".strip()


def default_cwd(env: Mapping[str, str] | None = None) -> Path:
    """The folder a session starts in when no notebook path is known."""
    return Path(trust_table.env("PWD", env) or os.getcwd())


if TYPE_CHECKING:
    # The services and the layers below the agent describe what they read of a session as
    # protocols (agent/host.py, recall/session_view.py, transcript/mirror.py). mypy checks
    # here that a Session satisfies them, so a renamed or retyped attribute fails the type
    # check, not a turn.
    def _views_of(session: Session) -> tuple[SessionHost, RecallSession, LoggedSession]:
        return session, session, session
