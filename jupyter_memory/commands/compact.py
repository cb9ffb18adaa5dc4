"""``%compact``'s arguments (the magic, ``jupyter_memory.magics.compact``, runs it)."""

from __future__ import annotations

from dataclasses import dataclass

from jupyter_memory.commands.base import MAGIC, Args, arg, declare, prompt

__all__ = ["COMPACT", "CompactArgs"]


@dataclass(frozen=True, kw_only=True)
class CompactArgs(Args):
    micro: bool = arg("--micro", action="store_true",
                      help="only clear old tool outputs (no model call)")
    undo: bool = arg("--undo", action="store_true",
                     help="restore the conversation from before the last compaction")
    status: bool = arg("--status", action="store_true",
                       help="show the levels, the current size, the circuit breaker and the "
                            "session notes")
    json: bool = arg("--json", action="store_true", help="with --status: print it as JSON")
    instructions: str = prompt(
        "what the summary must keep: the rest of the line, then the cell body, exactly as "
        "typed", metavar="INSTRUCTIONS")


COMPACT = declare(
    "compact",
    "Compact the agent's conversation so it fits the context window again: summarise it "
    "now (steered by INSTRUCTIONS), clear old tool outputs, or undo.",
    CompactArgs, fronts=(MAGIC,), magic="%compact")
