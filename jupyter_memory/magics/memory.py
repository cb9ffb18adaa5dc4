"""``%memory`` (browse and manage memories) and ``%%remember`` (store one).

Both are built from the same declarations as the ``jupyter-memory`` command line
(:mod:`jupyter_memory.commands`): ``%memory search TEXT`` and ``jupyter-memory search
TEXT`` parse the same arguments, run the same function and print the same text, and so do
``%%remember`` and ``jupyter-memory add`` (the memory text is the cell body here). What a
notebook owns is :class:`~jupyter_memory.magics.commands.MagicCommandContext`'s.
Every change goes through :class:`~jupyter_memory.memdir.store.MemoryStore`, so the index
stays consistent.
"""

from __future__ import annotations

import sys
import textwrap
from typing import Any

from IPython.core.magic import Magics, cell_magic, line_magic, magics_class

from jupyter_memory.commands import (
    MAGIC,
    PROGS,
    HelpShown,
    build_parser,
    command_named,
    commands_for,
    parse,
    read_words,
    reference,
)
from jupyter_memory.errors import JupyterMemoryError
from jupyter_memory.magics.commands import magic_doc, read_line, run_command, usage_error

_PARSER = build_parser(MAGIC)
SUBCOMMANDS = tuple(c.name for c in commands_for(MAGIC))
REMEMBER = command_named("add")


@magics_class
class MemoryMagics(Magics):
    def __init__(self, shell: Any = None, agent: Any = None, **kwargs: Any) -> None:
        super().__init__(shell=shell, **kwargs)
        self.agent = agent

    # ------------------------------------------------------------------ %memory

    @line_magic
    def memory(self, line: str = "") -> None:
        # The docstring is generated from the subcommand definitions: see _usage below.
        try:
            words = read_words(line, PROGS[MAGIC])
        except JupyterMemoryError as exc:
            raise usage_error(exc, PROGS[MAGIC]) from None
        if not words:  # a bare %memory opens the browser widget
            from jupyter_memory.widgets import show_memories

            show_memories(self.agent.session())
            return
        if words[0].startswith("-") and words[0] not in ("-h", "--help"):
            words = _subcommand_first(words)
        if words[0] in ("-h", "--help"):
            print(_usage())
            return
        try:
            cmd, args = parse(_PARSER, words, stdout=sys.stdout, stderr=sys.stderr)
        except HelpShown:
            return
        except JupyterMemoryError as exc:
            raise usage_error(exc, PROGS[MAGIC]) from None
        run_command(self, cmd, args)

    # ---------------------------------------------------------------- %%remember

    @cell_magic
    def remember(self, line: str, cell: str) -> None:
        # The docstring is generated from the declaration (magic_doc, at the end).
        args = read_line(REMEMBER, line)
        if args is not None:
            run_command(self, REMEMBER, args, cell=cell)


def _subcommand_first(words: list[str]) -> list[str]:
    """``%memory --json doctor`` is ``%memory doctor --json``; options alone mean ``list``."""
    for i, word in enumerate(words):
        if not word.startswith("-"):
            if word in SUBCOMMANDS:
                return [word, *words[:i], *words[i + 1:]]
            break
    return ["list", *words]


def _usage() -> str:
    """``%memory?``: what the magic does, then every subcommand's usage, generated."""
    intro = textwrap.fill(
        "%memory with no argument shows the memory browser (a widget, with a text copy for "
        "other front ends); options alone (%memory --json) mean %memory list. Every "
        "subcommand takes --json. The subcommands shared with the jupyter-memory command "
        "line run the same code and print the same text. Errors read '%memory SUBCOMMAND: "
        "message'.", 88)
    usage = "\n".join("  " + line if line else "" for line in
                      reference(MAGIC, _PARSER).splitlines())
    return (f"Browse and manage the project's memories (the notebook's /memory).\n\n{intro}\n\n"
            f"Examples::\n\n{_EXAMPLES}\nUsage (generated from the definitions)::\n\n{usage}\n")


_EXAMPLES = """\
    %memory                                   # the memory browser
    %memory list --type feedback              # a table, newest first
    %memory search revenue cents              # where a phrase appears
    %memory forget user_role.md -f            # without the question
    %memory list --scope user --agent reviewer --json
    %memory search -h                         # one subcommand's usage
"""


MemoryMagics.memory.__doc__ = _usage()

MemoryMagics.remember.__doc__ = magic_doc("%%remember", """
Store the cell body as a memory, exactly as written (jupyter-memory add is the same
command on the command line).

With --type, --name and --description the memory is written as given, no model needed.
Otherwise the model files it (chooses the type, writes a specific description, updates
an existing memory instead of adding a duplicate); without a model, under %sandbox echo,
or with --offline, the missing fields are derived by fixed rules and the cell says what was
guessed. A model that files nothing (an echoing endpoint) fails the cell, saying how to save
it by hand. Relative dates ("yesterday", "上周") are flagged. Errors read '%%remember: message'.
""", """
%%remember --type project --name revenue-in-cents -d "sales.revenue is in cents"
The revenue column of the sales table holds integer cents.

**Why:** the billing export writes cents.
**How to apply:** divide by 100 before showing money to people.

%%remember --scope team --offline
Fiscal quarters start in April.
""")
