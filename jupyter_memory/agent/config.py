"""The agent's settings: one frozen ``AgentConfig`` per session.

Every setting people change (``%config Agent.NAME``) is declared once here with
:func:`setting`, with its help and choices; the magics build their traits from it.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, fields, replace
from typing import Any

from jupyter_memory.context.assemble import CACHE_TTLS
from jupyter_memory.context.models import (
    DEFAULT_MODEL,
    DEFAULT_SMALL_MODEL,
    MIN_CONTEXT_WINDOW,
    default_model,
    default_small_model,
)
from jupyter_memory.errors import ConfigError
from jupyter_memory.memdir.record import provenance_from_env

__all__ = [
    "PERMISSION_MODES",
    "RECALL_MODES",
    "RECALL_SELECTORS",
    "AgentConfig",
    "setting",
    "user_settings",
]

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
        "its frontmatter; False writes memories in the reference's exact shape. Default: "
        "off when $JUPYTER_MEMORY_PROVENANCE is 0, false, no or off.")
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
    display_roots: bool = setting(
        False, "Name the memory folder, the project folder and the temporary folder "
        "<memdir>, <project> and <tmp> in what the page shows (requests and recordings keep "
        "the paths), so a saved notebook carries no machine paths.")
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
        """Defaults with the models chosen by ``JUPYTER_MEMORY_MODEL`` / ``_SMALL_MODEL``
        and provenance by ``JUPYTER_MEMORY_PROVENANCE``."""
        base = cls(model=default_model(env), small_model=default_small_model(env),
                   provenance=provenance_from_env(env))
        return replace(base, **overrides) if overrides else base


def user_settings() -> tuple[Any, ...]:
    """The :class:`AgentConfig` fields people set, in declaration order."""
    return tuple(f for f in fields(AgentConfig) if "help" in f.metadata)
