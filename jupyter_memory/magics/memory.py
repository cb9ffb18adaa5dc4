"""``%memory`` (browse and manage memories) and ``%%remember`` (store one).

``%memory`` is built from the same subcommand definitions as the ``jupyter-memory``
command line (:mod:`jupyter_memory.commands`): ``%memory search TEXT`` and
``jupyter-memory search TEXT`` parse the same arguments, run the same function and print
the same text. This module only supplies what a notebook owns
(:class:`MagicCommandContext`): the session and its memory, a question asked through the
front end, tables and files shown as outputs, and the session refreshed after a change, so
the next request shows it.
Every change goes through :class:`~jupyter_memory.memdir.store.MemoryStore`, so the index
stays consistent.
"""

from __future__ import annotations

import datetime as _dt
import shlex
import sys
import textwrap
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from IPython.core.error import UsageError
from IPython.core.magic import Magics, cell_magic, line_magic, magics_class
from IPython.core.magic_arguments import argument, magic_arguments
from IPython.display import display

from jupyter_memory.agent.remember import scope_store
from jupyter_memory.commands import (
    MAGIC,
    PROGS,
    CommandContext,
    CommandUsageError,
    HelpShown,
    build_parser,
    commands_for,
    failure,
    parse,
    printable,
    reference,
)
from jupyter_memory.errors import JupyterMemoryError
from jupyter_memory.memdir.record import MEMORY_TYPES
from jupyter_memory.memdir.scopes import DEFAULT_AGENT, WRITE_SCOPES
from jupyter_memory.widgets.safe import md_link, md_text

OPEN_MIME = "application/vnd.jupyter-memory.open+json"
"""Asks the JupyterLab extension to open a file; other front ends show the path."""

_PARSER = build_parser(MAGIC)
SUBCOMMANDS = tuple(c.name for c in commands_for(MAGIC))


@dataclass
class MagicCommandContext(CommandContext):
    """A subcommand's context in a notebook: the memory is the agent session's."""

    magics: Any = None

    @property
    def session(self) -> Any:
        return self.magics.agent.session()

    # ------------------------------------------------------------------ output

    def out(self, text: str = "") -> None:
        print(text)

    def note(self, text: str) -> None:
        """In line with the answer; to standard error only beside JSON, which must parse."""
        if self.json:
            print(printable(text), file=sys.stderr)
        else:
            print(printable(text))

    err = note

    def show(self, data: Any, text: str) -> None:
        if self.json:
            self.emit(data, text)
        else:
            display({"text/plain": printable(text)}, raw=True)

    def offer_file(self, path: Path, label: str) -> None:
        if self.json:
            self.emit({"path": str(path), "label": label}, None)
        else:
            show_file(path, label)

    def confirm(self, question: str) -> bool | None:
        try:
            answer = input(question)
        except Exception:  # no one can answer (a headless run)
            return None
        return answer.strip().lower() in ("y", "yes")

    # ------------------------------------------------------------------ the memory

    @property
    def location(self) -> Any:
        return self.session.location

    @property
    def project_root(self) -> Path:
        return Path(self.session.project_root)

    def memory_state(self) -> tuple[bool, str]:
        session = self.session
        if session.memory_override is not None:
            state = "on" if session.memory_override else "off"
            return session.memory_enabled, f"switched {state} for this session ({self.cmd(state)})"
        return super().memory_state()

    def project_store(self) -> Any:
        return scope_store(self.session, "memdir")

    def store_for(self, scope: str = "memdir", agent: str | None = None) -> Any:
        return scope_store(self.session, scope, agent or DEFAULT_AGENT)

    # ------------------------------------------------------------------ after a change

    def changed(self, scope: str = "memdir") -> None:
        if scope in ("memdir", "private", "team"):
            self.session.refresh_context()

    def reload(self, *, hooks: bool = False) -> None:
        session = self.session
        session.reload()
        if hooks:
            from jupyter_memory.agent.lifecycle import reload_hooks

            reload_hooks(session)
        session.refresh_context()


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
            words = shlex.split(line)
        except ValueError as exc:
            raise UsageError(f"%memory: could not read the arguments ({exc}).") from None
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
            args = parse(_PARSER, words, stdout=sys.stdout, stderr=sys.stderr)
        except HelpShown:
            return
        except CommandUsageError as exc:
            report = failure(exc, PROGS[MAGIC])
            assert report is not None
            raise UsageError(report.line) from None
        ctx = MagicCommandContext(args, {}, sys.stdin, sys.stdout, sys.stderr, front=MAGIC,
                                  magics=self)
        prog = f"{PROGS[MAGIC]} {ctx.subcommand}"
        try:
            ctx.env = self.agent.session().env
            args._command.run(ctx)
        except (JupyterMemoryError, OSError) as exc:
            report = failure(exc, prog)
            if report is None:
                raise
            raise UsageError(printable(report.line)) from None

    def _session(self) -> Any:
        return self.agent.session()

    # ---------------------------------------------------------------- %%remember

    @magic_arguments()
    @argument("--type", "-t", choices=MEMORY_TYPES, help="user, feedback, project or reference")
    @argument("--name", "-n", help="Short name, e.g. revenue-in-cents")
    @argument("--description", "-d", help="One specific line: what the memory is about")
    @argument("--file", help="File name inside the memdir (default: derived from type and name)")
    @argument("--scope", choices=WRITE_SCOPES, default="memdir",
              help="memdir or private (the project's memory, default), team (the shared "
                   "team folder), or an agent's own memory: user, project or local")
    @argument("--agent", default=DEFAULT_AGENT, help="Agent name for --scope user|project|local")
    @argument("--offline", action="store_true",
              help="Do not ask the model: derive what is missing by fixed rules")
    @cell_magic
    def remember(self, line: str, cell: str) -> None:
        """Store the cell body as a memory.

        With --type, --name and --description the memory is written as given, no model
        needed. Otherwise the model files it (chooses the type, writes a specific
        description, updates an existing memory instead of adding a duplicate); without
        a model, or with --offline, the missing fields are derived by fixed rules and the
        cell says what was guessed. Relative dates ("yesterday", "上周") are flagged.

        Example::

            %%remember --type project --name revenue-in-cents -d "sales.revenue is in cents"
            The revenue column of the sales table holds integer cents.

            **Why:** the billing export writes cents.
            **How to apply:** divide by 100 before showing money to people.
        """
        from jupyter_memory.agent.client import NoModelConfigured
        from jupyter_memory.agent.extraction import describe_error
        from jupyter_memory.agent.remember import (
            remember_direct,
            remember_offline,
            remember_with_agent,
        )

        try:
            # shlex, not IPython's arg_split: quotes around a value must not end up in it.
            args = self.remember.parser.parse_args(shlex.split(line))
        except BaseException as exc:  # argparse errors and usage exits (SystemExit)
            if isinstance(exc, KeyboardInterrupt):
                raise
            raise UsageError(f"%%remember: could not read the options ({exc}); see "
                             "%%remember? for them.") from None
        body = cell.strip("\n")
        if not body.strip():
            raise UsageError("%%remember: the cell is empty; write the fact to remember in "
                             "the cell body.")
        fields = {"name": args.name, "description": args.description, "type": args.type}
        try:
            session = self._session()
            # The session's date, not the clock's: a replay on a later day must match.
            today = _dt.date.fromisoformat(session.today())
            store = scope_store(session, args.scope, args.agent)
            if all(fields.values()):
                result = remember_direct(store, body, file=args.file, today=today, **fields)
            elif args.offline:
                result = remember_offline(store, body, file=args.file, today=today, **fields)
            else:
                try:
                    client = session.client()
                except NoModelConfigured:
                    result = remember_offline(store, body, file=args.file, today=today,
                                              reason="No model is connected.", **fields)
                else:
                    try:
                        result = remember_with_agent(session, client, store, body,
                                                     today=today, **fields)
                    except JupyterMemoryError:
                        raise
                    except Exception as exc:  # the model call failed: nothing was saved
                        raise UsageError(
                            f"%%remember: {describe_error(exc)} Nothing was saved; run the "
                            "cell again, or add --offline to save it without a model."
                        ) from None
        except JupyterMemoryError as exc:
            raise UsageError(f"%%remember: {exc}") from None
        if result.saved and args.scope in ("memdir", "private", "team"):
            session.refresh_context()
        print(result.summary())




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


# ----------------------------------------------------------------------------- rendering


def show_file(path: Path, label: str) -> None:
    """Offer a file for editing: JupyterLab opens it (through the extension); else its path.

    The bundle carries :data:`OPEN_MIME` for the lab extension, a relative Markdown link
    when the file is under the kernel's working folder (JupyterLab opens those), and the
    plain path for every other front end.
    """
    path = Path(path)
    text = f"Edit {label}: {path}"
    bundle: dict[str, Any] = {"text/plain": text,
                              OPEN_MIME: {"path": str(path), "label": label}}
    try:
        rel = path.resolve().relative_to(Path.cwd().resolve())
    except ValueError:
        rel = None
    if rel is not None:
        # The label and the file name are memory text: literal, and a link only if safe.
        bundle["text/markdown"] = (f"{md_text(f'Edit {label}:')} "
                                   f"{md_link(rel.as_posix(), rel.as_posix())}")
    display(bundle, raw=True)
