"""One agent session: the conversation and everything a request is built from.

A kernel holds one ``Session``. It knows where memory lives, which instruction files
apply, what the conversation holds, and turns that into a ``RequestState`` for
``context.assemble``. It imports nothing from IPython, so the CLI and tests use it too.
"""

from __future__ import annotations

import datetime as _dt
import functools
import os
import platform
import uuid
from collections.abc import Mapping
from dataclasses import dataclass, field, fields, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from jupyter_memory.agent.client import SharedClient
from jupyter_memory.context import prompts
from jupyter_memory.context.assemble import (
    CACHE_TTLS,
    AssembledRequest,
    ContextReport,
    IndexPart,
    InstructionPart,
    RequestState,
    assemble,
    report,
)
from jupyter_memory.context.models import (
    DEFAULT_MODEL,
    DEFAULT_SMALL_MODEL,
    MIN_CONTEXT_WINDOW,
    default_model,
    default_small_model,
)
from jupyter_memory.context.pricing import CostLedger
from jupyter_memory.context.tokens import Usage
from jupyter_memory.errors import ConfigError

if TYPE_CHECKING:
    from jupyter_memory.agent.tools.base import ToolContext, ToolRegistry
    from jupyter_memory.context.instructions import InstructionSet
    from jupyter_memory.memdir.location import MemoryLocation
    from jupyter_memory.memdir.store import MemoryStore
    from jupyter_memory.memdir.team import TeamLocation
    from jupyter_memory.recall.session_view import RecallSession
    from jupyter_memory.transcript.mirror import LoggedSession, SessionLog

RECALL_MODES = ("index", "prefetch")
RECALL_SELECTORS = ("model", "offline")
PERMISSION_MODES = ("ask", "allow", "deny")


def setting(default: Any, help: str, *, choices: tuple[str, ...] | None = None) -> Any:
    """A field of :class:`AgentConfig` that people set (``%config Agent.NAME``): declared
    once here, with its help and choices; the magics build their traits from it."""
    metadata: dict[str, Any] = {"help": help}
    if choices is not None:
        metadata["choices"] = choices
    return field(default=default, metadata=metadata)


@dataclass(frozen=True)
class AgentConfig:
    """Settings of the agent; the magics expose each :func:`setting` through ``%config Agent``.

    Defaults reproduce the reference behaviour, because people use this project to
    learn how that behaviour works. Each improvement is a switch: ``maintain_index``
    (the index follows topic files the agent writes), ``cjk_trigger`` (unspaced Chinese
    or Japanese questions still trigger prefetch), ``wait_for_prefetch`` (the first model
    call waits for prefetched memories). Plain fields (retries, timeout, the transcript
    switch) are for code and tests, not ``%config``.
    """

    model: str = setting(
        "", f"Main model (default: $JUPYTER_MEMORY_MODEL or {DEFAULT_MODEL}).")
    small_model: str = setting(
        "", "Model for the side calls: recall selection and the session notes (default: "
        f"$JUPYTER_MEMORY_SMALL_MODEL or {DEFAULT_SMALL_MODEL}, a Sonnet model as the "
        "reference's selector uses; name a smaller one, such as claude-haiku-4-5, to make "
        "them cheaper).")
    max_tokens: int = setting(8192, "Maximum output tokens of one model call.")
    max_turns: int = setting(25, "Maximum model calls in one agent turn.")
    cache_ttl: str = setting(
        "5m", "How long the prompt cache keeps what a turn writes: 5m (writes cost 1.25x "
        "input, as the reference's) or 1h (2x, and a pause of more than five minutes between "
        "prompts still reads the conversation from the cache).", choices=CACHE_TTLS)
    permission_mode: str = setting(
        "ask", "Running code and writing outside the memory folder: ask, allow or deny.",
        choices=PERMISSION_MODES)
    recall_mode: str = setting(
        "index", "index: MEMORY.md in every request; prefetch: relevant memories chosen per "
        "message.", choices=RECALL_MODES)
    maintain_index: bool = setting(
        False, "Keep MEMORY.md in step with topic files the agent writes (the reference "
        "leaves that to the agent).")
    provenance: bool = setting(
        True, "Record who wrote each memory (origin: user, agent, extraction or import) in "
        "its frontmatter; False writes memories in the reference's exact shape.")
    agents_md: bool = setting(False, "Also read AGENTS.md files as instructions.")
    extra_instruction_names: tuple[str, ...] = ()
    max_retries: int = 2
    timeout: float = 600.0
    cell_output_cap: int = setting(
        2_000, "Characters of each code cell's output passed to the agent.")
    wait_for_prefetch: bool = setting(
        False, "Wait for prefetched memories before the first model call (the reference "
        "does not, so an answer without tools misses them).")
    log_transcript: bool = True
    extraction: bool = setting(
        True, "After each completed turn (its final message asks for no tool), let a "
        "restricted background agent save durable facts as memories.")
    extraction_every: int = setting(1, "Run extraction every N eligible turns.")
    extraction_share_tools: bool = setting(
        True, "Send the extraction agent the main agent's full tool list, so it reads the main "
        "conversation's prompt cache as the reference's fork does (the tool layer still "
        "refuses every call outside its confinement); False offers only its five tools.")
    approval_mode: bool = setting(
        False, "Extracted memories wait in a pending area until you accept them "
        "(%memory pending).")
    auto_compact: bool = setting(
        True, "Compact the conversation automatically before a request that would pass "
        "the autocompact level.")
    microcompact_idle_minutes: float = setting(
        60.0, "Clear old tool outputs when the agent has been idle this long (the prompt "
        "cache is cold anyway; 0 switches it off).")
    session_memory: bool = setting(
        True, "Keep rolling session notes in the background; compaction uses them first, "
        "with no model call.")
    context_window: int = setting(
        0, "Compute the compaction levels for a window of this many tokens instead of the "
        "model's own (0). Only a smaller window counts; at least 60,000. For learning how "
        "compaction behaves, or an endpoint that holds less than the model table says.")
    cjk_trigger: bool = setting(
        False, "Let unspaced Chinese/Japanese questions trigger prefetch (the reference "
        "skips them as single words).")
    recall_selector: str = setting(
        "model", "Who picks prefetched memories: the small model, or an offline ranking "
        "of their descriptions (no model call).", choices=RECALL_SELECTORS)

    @property
    def instruction_names(self) -> tuple[str, ...]:
        """Instruction file names read besides ``CLAUDE.md`` (``agents_md`` adds AGENTS.md)."""
        extra = self.extra_instruction_names
        return (*extra, "AGENTS.md") if self.agents_md and "AGENTS.md" not in extra else extra

    def __post_init__(self) -> None:
        if self.recall_mode not in RECALL_MODES:
            raise ConfigError(
                f"recall_mode {self.recall_mode!r} is not one of {', '.join(RECALL_MODES)}; "
                "use 'index' (MEMORY.md in every request) or 'prefetch' (relevant files only)."
            )
        if self.recall_selector not in RECALL_SELECTORS:
            raise ConfigError(
                f"recall_selector {self.recall_selector!r} is not one of "
                f"{', '.join(RECALL_SELECTORS)}: 'model' asks the small model, 'offline' "
                "ranks descriptions locally with no model call."
            )
        if self.cache_ttl not in CACHE_TTLS:
            raise ConfigError(
                f"cache_ttl {self.cache_ttl!r} is not one of {', '.join(CACHE_TTLS)}: '5m' keeps "
                "cache entries five minutes, '1h' an hour (its writes cost more)."
            )
        if self.permission_mode not in PERMISSION_MODES:
            raise ConfigError(
                f"permission_mode {self.permission_mode!r} is not one of "
                f"{', '.join(PERMISSION_MODES)}."
            )
        if self.max_turns < 1 or self.max_tokens < 1:
            raise ConfigError("max_turns and max_tokens must be positive whole numbers.")
        if self.context_window and self.context_window < MIN_CONTEXT_WINDOW:
            raise ConfigError(
                f"context_window {self.context_window:,} is too small: use 0 (the model's own "
                f"window) or at least {MIN_CONTEXT_WINDOW:,}, so that the compaction levels "
                "(docs/compaction.md) stay above what every request carries."
            )

    @classmethod
    def from_env(cls, env: Mapping[str, str] | None = None, **overrides: Any) -> AgentConfig:
        """Defaults with the models chosen by ``JUPYTER_MEMORY_MODEL`` / ``_SMALL_MODEL``."""
        base = cls(model=default_model(env), small_model=default_small_model(env))
        return replace(base, **overrides) if overrides else base


def user_settings() -> tuple[Any, ...]:
    """The :class:`AgentConfig` fields people set, in declaration order."""
    return tuple(f for f in fields(AgentConfig) if "help" in f.metadata)


class _CostInRecord:
    """Puts the session's cost ledger so far into each turn record (``record["cost"]``),
    so a saved notebook can be priced without its kernel."""

    def __init__(self, session: Session) -> None:
        self.session = session

    def record_fields(self, turn: Any) -> dict[str, Any]:
        return {"cost": self.session.cost_ledger.to_json()}


@dataclass
class Session:
    """The state of one conversation with the agent, and the memory it can use."""

    cwd: Path
    config: AgentConfig = field(default_factory=AgentConfig.from_env)
    env: Mapping[str, str] | None = None
    notebook: str | None = None
    session_id: str = field(default_factory=lambda: str(uuid.uuid4()))
    messages: list[dict[str, Any]] = field(default_factory=list)
    last_usage: Usage | None = None
    total_usage: Usage = field(default_factory=Usage)
    turn_count: int = 0
    recall_override: str | None = None
    memory_override: bool | None = None
    #: The date requests carry instead of today's (a replay pins the recorded day).
    today_override: str | None = None
    #: Objects with optional ``before_turn(turn)``, ``before_call(turn, round)``,
    #: ``record_fields(turn)`` and ``after_turn(turn, result)`` methods (agent/hooks.py),
    #: called by ``agent.run_turn`` in order.
    hooks: list[Any] = field(default_factory=list)
    #: Builds the SDK client; replaced to replay a recording or use another endpoint.
    client_factory: Any = None
    #: The record of the last finished turn (what ``%context`` shows recall decisions from).
    last_record: dict[str, Any] | None = None
    #: Usage of every model call this session made, by kind (context/pricing.py).
    cost_ledger: CostLedger = field(default_factory=CostLedger)
    #: The sandbox (sessions/sandbox.py) this session's model calls were switched to, if any.
    sandbox: Any = None

    def __post_init__(self) -> None:
        self.cwd = Path(self.cwd).expanduser().resolve()
        # _location and _instructions are set by reload() below, before anything reads them.
        self._location: MemoryLocation
        self._instructions: InstructionSet
        self._store: MemoryStore | None = None
        self._registry: ToolRegistry | None = None
        self._tool_context: ToolContext | None = None
        self._snapshot: tuple[list[InstructionPart], IndexPart | None] | None = None
        self._team: TeamLocation | None = None
        self._team_index: IndexPart | None = None
        self._client = SharedClient()
        self.log: SessionLog | None = None
        if self.config.log_transcript:
            from jupyter_memory.transcript.mirror import SessionLog

            self.log = SessionLog(self)
            self.hooks.insert(0, self.log)
        from jupyter_memory.agent.extraction import ExtractionHook

        self.hooks.append(ExtractionHook(self))
        from jupyter_memory.agent.compaction import install as install_compaction

        install_compaction(self)
        self.hooks.append(_CostInRecord(self))
        self.reload()

    # ------------------------------------------------------------------ memory

    def reload(self) -> None:
        """Re-locate the memdir and re-read instruction files (session start, compaction)."""
        from jupyter_memory.context.instructions import load_instructions
        from jupyter_memory.memdir.location import locate
        from jupyter_memory.memdir.team import find as find_team

        self._ask_trust()
        self._location = locate(self.cwd, self.env)
        self._team = find_team(self._location, self.env)
        if self._team is not None:
            from jupyter_memory.memdir.team import register

            register(Path(self._location.memdir), Path(self._team.folder))
        self._store = None
        self._instructions = load_instructions(
            self.cwd,
            project_root=self._location.project_root,
            env=self.env,
            extra_names=self.config.instruction_names,
        )
        skipped = self._instructions.skipped_imports
        if skipped:
            from jupyter_memory.memdir.trust import request_external_imports

            files = sorted({str(target) for _, target in skipped})
            if request_external_imports(self._location.project_root, files, self.env).trusted:
                self._instructions = load_instructions(
                    self.cwd,
                    project_root=self._location.project_root,
                    env=self.env,
                    extra_names=self.config.instruction_names,
                    external_imports=True,
                )
        self.reset_tools()

    def _ask_trust(self) -> None:
        """Ask the person (when a front end can) to trust a folder whose settings want to
        run code or move paths; headless, nothing is asked and nothing untrusted runs."""
        from jupyter_memory.memdir.project import find_project_root
        from jupyter_memory.memdir.settings import load_settings
        from jupyter_memory.memdir.trust import request_trust

        root = find_project_root(self.cwd)
        wants = load_settings(root, self.env).needs_trust()
        if wants:
            request_trust(root, wants, self.env)

    def trust_notices(self) -> list[str]:
        """One line for each thing left out because its folder is not trusted."""
        from jupyter_memory.agent.lifecycle import skipped_notice

        notes = [n for n in self._location.notes
                 if "not trusted" in n or "outside the project" in n]
        hooks = skipped_notice(self)
        if hooks:
            notes.append(hooks)
        imports = self._instructions.skip_notice()
        if imports:
            notes.append(imports)
        return notes

    def reset_tools(self) -> None:
        """Forget the tool context and context snapshot (settings or memory on/off changed)."""
        self._tool_context = None
        self._snapshot = None
        self._team_index = None

    def refresh_context(self) -> None:
        """Re-read the index and instruction files before the next request.

        Like the reference, instruction files and ``MEMORY.md`` are read once and then
        kept for the whole session, so the cached prefix stays stable even when the
        agent saves memories mid-session. Compaction and memory changes the person makes
        through the front ends (``%%remember``, ``%memory forget``) call this.
        """
        self._snapshot = None
        self._team_index = None
        if self._team is None and self._location is not None:  # a team folder just made?
            from jupyter_memory.memdir.team import find as find_team
            from jupyter_memory.memdir.team import register

            self._team = find_team(self._location, self.env)
            if self._team is not None:
                register(Path(self._location.memdir), Path(self._team.folder))
                if self._tool_context is not None:  # keep what the agent has read
                    self._tool_context.team_dir = Path(os.path.realpath(self._team.folder))

    def context_pieces(self) -> tuple[list[InstructionPart], IndexPart | None]:
        """The instruction files and index of this session's ``messages[0]``."""
        if self._snapshot is None:
            self._snapshot = (self.instruction_parts(), self.index_part())
        return self._snapshot

    @property
    def location(self) -> MemoryLocation:
        return self._location

    @property
    def project_root(self) -> Path:
        return Path(self._location.project_root)

    @property
    def memory_enabled(self) -> bool:
        if self.memory_override is not None:
            return self.memory_override
        return bool(self._location.enabled)

    @property
    def recall_mode(self) -> str:
        return self.recall_override or self.config.recall_mode

    @property
    def memdir(self) -> Path | None:
        return Path(self._location.memdir) if self.memory_enabled else None

    @property
    def store(self) -> MemoryStore | None:
        """The ``MemoryStore`` of this project's memdir, or None when memory is off."""
        if not self.memory_enabled:
            return None
        if self._store is None:
            from jupyter_memory.memdir.team import open_store

            self._store = open_store(
                self._location,
                self.env,
                session_id=self.session_id,
                maintain_index=self.config.maintain_index,
                mark_provenance=self.config.provenance,
            )
        return self._store

    @property
    def team_dir(self) -> Path | None:
        """The team folder (SPEC §8) when team mode is on and memory is enabled."""
        if self.memdir is None or self._team is None:
            return None
        return Path(self._team.folder)

    def team_index_part(self) -> IndexPart | None:
        """The team ``MEMORY.md`` as the model receives it, read once like the private one."""
        folder = self.team_dir
        if folder is None:
            return None
        if self._team_index is None:
            from jupyter_memory.memdir.team import load_index

            loaded = load_index(folder)
            cut = "+".join(loaded.limits_hit) if loaded.limits_hit else None
            self._team_index = IndexPart(loaded.text, loaded.line_count, loaded.char_count, cut,
                                         loaded.warning)
        return self._team_index

    @property
    def instructions(self) -> InstructionSet:
        return self._instructions

    def index_part(self) -> IndexPart | None:
        """``MEMORY.md`` as the model would receive it now (None when memory is off)."""
        if self.memdir is None:
            return None
        from jupyter_memory.errors import SymlinkRefused
        from jupyter_memory.memdir.fsutil import read_no_follow
        from jupyter_memory.memdir.index import INDEX_NAME, load_for_model

        path = self.memdir / INDEX_NAME
        try:  # never through a link: it could put any file on disk into every request
            raw = read_no_follow(path, f"The memory index {INDEX_NAME}").decode(
                "utf-8", errors="replace"
            )
        except FileNotFoundError:
            raw = ""
        except SymlinkRefused as exc:
            return IndexPart("", 0, 0, None, f"{INDEX_NAME} was not loaded: {exc}")
        loaded = load_for_model(raw)
        cut = "+".join(loaded.limits_hit) if loaded.limits_hit else None
        return IndexPart(loaded.text, loaded.line_count, loaded.char_count, cut, loaded.warning)

    def instruction_parts(self) -> list[InstructionPart]:
        inst = self._instructions
        files = [*inst.files, *inst.activated]
        return [InstructionPart(str(f.path), f.scope, inst.render_block(f)) for f in files]

    def client(self) -> Any:
        """The model client every call of this session shares (``client_factory`` wins).

        Built on first use and kept, so connections are reused from turn to turn; built
        again only when the key, token, base URL, timeout, retries or ``client_factory``
        change. Raises ``NoModelConfigured`` when there is no model to talk to.
        """
        return self._client.get(self.env, max_retries=self.config.max_retries,
                                timeout=self.config.timeout, factory=self.client_factory)

    def make_client(self) -> Any:
        """The session's shared client: the same object as :meth:`client`."""
        return self.client()

    def close(self) -> None:
        """Close the session's client and its connections (kernel shutdown).

        The session stays usable: a later call builds a new client.
        """
        self._client.close()

    # ------------------------------------------------------------------ recall

    def start_prefetch(self, prompt: str, client: Any) -> Any:
        """Start relevance prefetch for this turn (prefetch mode), or return None."""
        if self.recall_mode != "prefetch" or self.memdir is None:
            return None
        from jupyter_memory.recall import start_prefetch

        return start_prefetch(self, prompt, client)

    # ------------------------------------------------------------------ tools

    @property
    def tools(self) -> ToolRegistry:
        if self._registry is None:
            from jupyter_memory.agent.tools import default_registry

            self._registry = default_registry()
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
                instructions=self._instructions,
                permission=PermissionPolicy(mode=self.config.permission_mode),
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
        return self.today_override or _dt.date.today().isoformat()

    def request_state(self, messages: list[dict[str, Any]] | None = None) -> RequestState:
        memdir = self.memdir
        instructions, index = self.context_pieces()
        return RequestState(
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
            team_dir=None if self.team_dir is None else str(self.team_dir),
            team_index=self.team_index_part() if self.recall_mode == "index" else None,
            cache_ttl=self.config.cache_ttl,
        )

    def assemble(self, messages: list[dict[str, Any]] | None = None) -> AssembledRequest:
        return assemble(self.request_state(messages))

    def context_report(self, *, counted_tokens: int | None = None) -> ContextReport:
        """What the next request would hold: the data behind ``%context``."""
        return report(
            self.assemble(),
            index=self.context_pieces()[1],
            last_usage=self.last_usage,
            counted_tokens=counted_tokens,
            notices=self.trust_notices(),
            context_window=self.config.context_window,
            since_usage=self._since_last_response(),
            warnings=tuple(self._instructions.warnings),
        )

    def _since_last_response(self) -> int:
        """Estimated tokens of the messages after the last assistant message: the part of
        the next request that the last response's usage does not cover."""
        from jupyter_memory.context.tokens import estimate_messages

        for i in range(len(self.messages) - 1, -1, -1):
            if self.messages[i].get("role") == "assistant":
                return estimate_messages(self.messages[i + 1 :])
        return 0


@functools.lru_cache(maxsize=1)
def _platform_name() -> str:
    """``"Linux x86_64"``: fixed for the process, and ``platform`` is slow to ask each call."""
    return f"{platform.system()} {platform.machine()}".strip()


def default_cwd(env: Mapping[str, str] | None = None) -> Path:
    """The folder a session starts in when no notebook path is known."""
    env = os.environ if env is None else env
    return Path(env.get("PWD") or os.getcwd())



if TYPE_CHECKING:
    # The layers below the agent describe what they read of a session as protocols
    # (recall/session_view.py, transcript/mirror.py). mypy checks here that a Session
    # satisfies them, so a renamed or retyped attribute fails the type check, not a turn.
    def _views_of(session: Session) -> tuple[RecallSession, LoggedSession]:
        return session, session
