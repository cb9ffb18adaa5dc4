"""One definition of each subcommand, from which the command line and the magic are built.

- :mod:`~jupyter_memory.commands.base`: the model (``command``, ``arg``,
  ``CommandContext``), the parser, and the one shape of errors.
- :mod:`~jupyter_memory.commands.memory`: the memory subcommands (``jupyter-memory list``
  and ``%memory list`` are one definition).
- :mod:`~jupyter_memory.commands.notebooks`: the command line's ``context`` and ``cost``.
- :mod:`~jupyter_memory.commands.transcript`: the command line's ``transcript`` (session
  logs, and the exact requests of a saved turn).
- :mod:`~jupyter_memory.commands.bundle`: the command line's ``bundle``.

This package is a front-end layer that imports no front end: no IPython, no widgets
(pyproject.toml's import-linter contracts). ``jupyter_memory.cli`` and
``jupyter_memory.magics`` build their parsers with :func:`build_parser`.
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
    Argument,
    Command,
    CommandContext,
    CommandUsageError,
    Failure,
    HelpShown,
    arg,
    command,
    error_line,
    failure,
    parse,
    printable,
    subparser,
)
from jupyter_memory.commands.base import build_parser as _build_parser
from jupyter_memory.commands.base import commands_for as _commands_for

__all__ = [
    "BOTH",
    "CLI",
    "COMMANDS",
    "MAGIC",
    "PROGS",
    "Argument",
    "Command",
    "CommandContext",
    "CommandUsageError",
    "Failure",
    "HelpShown",
    "arg",
    "build_parser",
    "command",
    "commands_for",
    "error_line",
    "failure",
    "load",
    "parse",
    "printable",
    "reference",
]


def load(front: str) -> None:
    """Register every subcommand of ``front`` (the command line's also need the session
    modules, which the magic does not import). Each module imports the one whose
    subcommands precede its own in the help: notebooks, transcript, bundle."""
    if front == CLI:
        from jupyter_memory.commands import bundle, notebooks, transcript  # noqa: F401


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
