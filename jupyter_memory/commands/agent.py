"""``%agent``: a turn of the agent, and its line subcommands (the magic runs them).

The line form's rule (:func:`read_agent_line`): a line whose first word names a
subcommand and whose other words fit its arguments is that subcommand (``%agent resume``,
``%agent replay --strict x.json``); any other line is a prompt, so ``%agent resume the
analysis of last week`` is a question, and ``%agent -- resume my work`` always is. The
cell form (``%%agent``) is always a prompt. Options (``--agent NAME``, ``-h``) come
before the prompt; the prompt is the rest of the line, then the cell body, exactly as
typed.
"""

from __future__ import annotations

import shlex
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, TextIO

from jupyter_memory.commands.base import (
    MAGIC,
    Args,
    Command,
    CommandUsageError,
    arg,
    declare,
    parse_prompt,
    parse_words,
    prompt,
)

__all__ = ["AGENT", "SUBCOMMANDS", "AgentArgs", "AgentLine", "NewArgs", "RecordArgs",
           "ReplayArgs", "ResumeArgs", "StatusArgs", "defined_agent", "read_agent_line"]


def defined_agent(help: str) -> Any:
    """``--agent NAME``: an agent defined in ``.claude/agents/NAME.md`` (``%agent`` and
    ``context`` take it)."""
    return arg("--agent", metavar="NAME", help=help)


@dataclass(frozen=True, kw_only=True)
class AgentArgs(Args):
    agent: str | None = defined_agent(
        "run as the agent defined in .claude/agents/NAME.md, with its own prompt, tools and "
        "memory")
    prompt: str = prompt(
        "your message: the rest of the line, then the cell body, exactly as typed (one that "
        "starts with '-' goes after '--')")


AGENT = declare("agent", "Talk to the agent: the rest of the line, or the cell body, is your "
                "message.", AgentArgs, fronts=(MAGIC,), magic="%agent")


@dataclass(frozen=True, kw_only=True)
class ResumeArgs(Args):
    path: str | None = arg(nargs="?", metavar="PATH",
                           help="a saved notebook or a session log (.jsonl); default: this "
                                "notebook")


@dataclass(frozen=True, kw_only=True)
class RecordArgs(Args):
    target: str | None = arg(nargs="?", metavar="FILE|off",
                             help="where to keep every model exchange (default: "
                                  "<notebook>.recording.json beside the notebook); off stops")


@dataclass(frozen=True, kw_only=True)
class ReplayArgs(Args):
    strict: bool = arg("--strict", action="store_true",
                       help="refuse any request that is not byte for byte the recorded one")
    target: str | None = arg(nargs="?", metavar="FILE|off",
                             help="the recording to answer from (default: "
                                  "<notebook>.recording.json); off stops replaying")


@dataclass(frozen=True, kw_only=True)
class StatusArgs(Args):
    """``%agent status`` takes no argument."""


@dataclass(frozen=True, kw_only=True)
class NewArgs(Args):
    """``%agent new`` takes no argument."""


SUBCOMMANDS: tuple[Command, ...] = (
    declare("resume", "Continue the conversation saved in this notebook, or in PATH (a "
            "notebook or a JSONL session log).", ResumeArgs, fronts=(MAGIC,),
            magic="%agent resume"),
    declare("record", "Record every model exchange in FILE, to replay it later with no key.",
            RecordArgs, fronts=(MAGIC,), magic="%agent record"),
    declare("replay", "Answer every model call from a recording: no key, no network.",
            ReplayArgs, fronts=(MAGIC,), magic="%agent replay"),
    declare("status", "Show the session: id, turns, messages, model, notebook, memory, log, "
            "recording and the lifecycle hooks it loaded.", StatusArgs, fronts=(MAGIC,), magic="%agent status"),
    declare("new", "Start a fresh conversation in this kernel: a new session id, the same "
            "memory.", NewArgs, fronts=(MAGIC,), magic="%agent new"),
)
"""The line subcommands, in the order the help lists them."""


@dataclass(frozen=True)
class AgentLine:
    """What an ``%agent`` line asks for: a turn (:data:`AGENT`, with :class:`AgentArgs`)
    or one of the :data:`SUBCOMMANDS` with its arguments."""

    command: Command
    args: Args


def read_agent_line(line: str, cell: str | None = None, *, stdout: TextIO, stderr: TextIO,
                    expand: Callable[[str], str] | None = None) -> AgentLine:
    """What ``%agent LINE`` (``cell`` None) or ``%%agent LINE`` + ``cell`` asks for.

    ``expand`` is what the front end does to a command's line (IPython: ``$name`` and
    ``{expression}``); it applies to a line subcommand (``%agent replay $RECORDING``) and
    never to a prompt, which is kept exactly as typed. Raises :class:`CommandUsageError`
    for an unknown option before the prompt (naming the closest known one) and
    ``HelpShown`` after printing the help for ``-h``.
    """
    if cell is None and not line.lstrip().startswith("-"):
        sub = _subcommand(expand(line) if expand is not None else line, stdout=stdout,
                          stderr=stderr)
        if sub is not None:
            return sub
    return AgentLine(AGENT, parse_prompt(AGENT, line, cell=cell, stdout=stdout,
                                         stderr=stderr))


def _subcommand(line: str, *, stdout: TextIO, stderr: TextIO) -> AgentLine | None:
    """The subcommand ``line`` names, when its arguments fit; None for a prompt."""
    try:
        words = shlex.split(line)
    except ValueError:  # an unbalanced quote: people's prose, not a command
        return None
    cmd = next((c for c in SUBCOMMANDS if words and c.name == words[0]), None)
    if cmd is None:
        return None
    try:
        args = parse_words(cmd, words[1:], stdout=stdout, stderr=stderr)
    except CommandUsageError:  # the words do not fit: a question that starts with the name
        return None
    return AgentLine(cmd, args)
