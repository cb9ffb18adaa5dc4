"""One definition of each subcommand, from which the command line and the magic are built.

- :mod:`~jupyter_memory.commands.base`: the model (``command``, ``arg``, ``Args``,
  ``CommandContext``), the parsers, and the one shape of errors.
- :mod:`~jupyter_memory.commands.memory`: the memory subcommands (``jupyter-memory list``
  and ``%memory list`` are one definition; ``jupyter-memory add`` and ``%%remember`` too).
- :mod:`~jupyter_memory.commands.notebooks`: ``context`` (``%context`` in a notebook) and
  the command line's ``cost``.
- :mod:`~jupyter_memory.commands.request`: ``request`` (``%request``): any model call of
  any turn, exactly as sent, from the live session or a saved notebook.
- :mod:`~jupyter_memory.commands.agent`, :mod:`~jupyter_memory.commands.compact`,
  :mod:`~jupyter_memory.commands.sandbox`: the arguments of ``%agent`` (and its line
  subcommands), ``%compact`` and ``%sandbox``, which their magics run.
- :mod:`~jupyter_memory.commands.transcript`: the command line's ``transcript`` (session
  logs, and the exact requests of a saved turn).
- :mod:`~jupyter_memory.commands.bundle`: the command line's ``bundle``.

This package is a front-end layer that imports no front end: no IPython, no widgets
(pyproject.toml's import-linter contracts). ``jupyter_memory.cli`` and
``jupyter_memory.magics`` build their parsers from these declarations.
"""

from __future__ import annotations

import argparse
import textwrap

from jupyter_memory.commands import memory as _memory  # noqa: F401  (registers them)
from jupyter_memory.commands.base import (
    BOTH,
    CLI,
    COMMANDS,
    MAGIC,
    PROGS,
    Args,
    Argument,
    Command,
    CommandContext,
    CommandUsageError,
    CommonArgs,
    Failure,
    HelpShown,
    ScopedArgs,
    arg,
    command,
    command_help,
    command_parser,
    declare,
    error_line,
    failure,
    parse,
    parse_prompt,
    parse_words,
    printable,
    prompt,
    read_words,
    subparser,
)
from jupyter_memory.commands.base import build_parser as _build_parser
from jupyter_memory.commands.base import commands_for as _commands_for
from jupyter_memory.commands.base import commands_of as _commands_of

__all__ = [
    "BOTH",
    "CLI",
    "COMMANDS",
    "MAGIC",
    "MAGICS",
    "PROGRAMS",
    "PROGS",
    "Args",
    "Argument",
    "Command",
    "CommandContext",
    "CommandUsageError",
    "CommonArgs",
    "Failure",
    "HelpShown",
    "ScopedArgs",
    "arg",
    "build_parser",
    "command",
    "command_help",
    "command_named",
    "command_parser",
    "commands_for",
    "commands_of",
    "declare",
    "error_line",
    "failure",
    "load",
    "magic_reference",
    "parse",
    "parse_prompt",
    "parse_words",
    "printable",
    "prompt",
    "read_words",
    "reference",
    "usage_text",
]

MAGICS = ("%agent", "%context", "%request", "%%remember", "%compact", "%sandbox")
"""The magics declared here besides ``%memory``, in the order the docs list them."""

PROGRAMS = (PROGS[CLI], PROGS[MAGIC], *MAGICS)
"""Every program whose usage is generated: the command line and each magic."""


def load(front: str) -> None:
    """Register every command of ``front`` (the command line's also need the session
    modules, which the magics do not import). Each module imports the one whose
    subcommands precede its own in the help: notebooks, transcript, bundle."""
    from jupyter_memory.commands import notebooks, request  # noqa: F401

    if front == CLI:
        from jupyter_memory.commands import bundle, transcript  # noqa: F401
    else:
        from jupyter_memory.commands import agent, compact, sandbox  # noqa: F401


def commands_for(front: str) -> list[Command]:
    """The subcommands of one front end, in the order they were declared."""
    load(front)
    return _commands_for(front)


def build_parser(
    front: str, *, description: str | None = None, epilog: str | None = None
) -> argparse.ArgumentParser:
    """The argparse parser of one front end (:data:`CLI` or :data:`MAGIC`)."""
    load(front)
    return _build_parser(front, description=description, epilog=epilog)


def command_named(name: str) -> Command:
    """The command declared as ``name`` (``context``, ``add``, ``agent``...), with every
    magic's declarations loaded."""
    load(MAGIC)
    return COMMANDS[name]


def commands_of(program: str) -> list[Command]:
    """The commands a magic runs: ``%agent`` (the prompt, then its line subcommands),
    ``%context``, ``%%remember``..."""
    load(MAGIC)
    return _commands_of(program)


def magic_reference(program: str) -> str:
    """Everything ``PROGRAM -h`` prints for a magic declared here: its usage, help and
    options, then its line subcommands (``%agent``). ``%magic?`` shows it and the docs
    embed it (``scripts/command_docs.py``)."""
    return command_help(commands_of(program)[0])


def reference(front: str, parser: argparse.ArgumentParser | None = None) -> str:
    """The usage of every subcommand of ``front``, as its ``-h`` prints it: the text
    ``%memory?`` shows and the docs embed (``scripts/command_docs.py``)."""
    parser = parser or build_parser(front)
    commands = commands_for(front)
    width = max(len(c.name) for c in commands) + 2
    parts = [parser.format_usage().strip(), "", "subcommands:"]
    for cmd in commands:
        parts += textwrap.wrap(cmd.help, 88, initial_indent=f"  {cmd.name:<{width}}",
                               subsequent_indent=" " * (width + 2))
    for cmd in commands:
        sub = subparser(parser, cmd.name)
        assert sub is not None
        parts += ["", sub.format_help().strip()]
    return "\n".join(parts)


def usage_text(program: str) -> str:
    """The generated usage of one of :data:`PROGRAMS`, as the docs embed it."""
    if program == PROGS[CLI]:
        return reference(CLI)
    if program == PROGS[MAGIC]:
        return reference(MAGIC)
    if program not in MAGICS:
        raise KeyError(f"{program!r} is not one of {', '.join(PROGRAMS)}")
    return magic_reference(program)
