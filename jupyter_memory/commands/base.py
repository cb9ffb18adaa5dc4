"""The command model: a subcommand declared once, run by every front end.

A subcommand is a function that takes a :class:`CommandContext` and returns an exit code,
registered with its help and its arguments (the arguments of argparse's
``add_argument``)::

    @command("hello", "Say hello.", arg("--loud", action="store_true"), fronts=BOTH)
    def _hello(ctx: CommandContext) -> int:
        ctx.emit({"hello": True}, "HELLO" if ctx.args.loud else "hello")
        return 0

From these definitions :func:`build_parser` makes the argparse parser of a front end: the
``jupyter-memory`` command line (``CLI``) or the ``%memory`` magic (``MAGIC``). Both parse
with the same parser, run the same function and print the same text; only what a front
end owns differs, and the :class:`CommandContext` hides it: where the memory is (a folder
and the environment, or the notebook's session), how a question is asked, how a table or a
file is shown.

Errors have one shape everywhere, ``PROG SUBCOMMAND: message`` (:func:`error_line`): the
magic raises it as IPython's ``UsageError``; the command line prints it to standard error
(after the subcommand's usage when the arguments were wrong) and exits 1 or 2.

Nothing here imports IPython (the import-linter contracts in pyproject.toml check it).
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import TYPE_CHECKING, Any, NoReturn, TextIO

from jupyter_memory.errors import (
    ConfigError,
    JupyterMemoryError,
    LockTimeout,
    MemoryExists,
    MemoryNotFound,
)

if TYPE_CHECKING:
    from jupyter_memory.agent.session import Session
    from jupyter_memory.memdir.location import MemoryLocation
    from jupyter_memory.memdir.store import MemoryStore
    from jupyter_memory.memdir.team import ScopedStore, TeamLocation

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
    "parse",
    "printable",
]

CLI = "cli"
MAGIC = "magic"
BOTH = (CLI, MAGIC)
PROGS = {CLI: "jupyter-memory", MAGIC: "%memory"}
"""How each front end is called: the first word of every usage line and error."""

EXIT_OK = 0
EXIT_FAILED = 1
EXIT_USAGE = 2


# --------------------------------------------------------------------------- definitions


@dataclass(frozen=True)
class Argument:
    """The arguments of one ``add_argument`` call, and the front ends that offer it."""

    flags: tuple[str, ...]
    options: dict[str, Any]
    fronts: tuple[str, ...] = BOTH


def arg(*flags: str, fronts: tuple[str, ...] = BOTH, **options: Any) -> Argument:
    """Describe an argument exactly as for ``add_argument`` (``fronts`` limits where)."""
    return Argument(flags, options, fronts)


@dataclass(frozen=True)
class Command:
    """One subcommand: its name, one line of help, its arguments and what it does."""

    name: str
    help: str
    run: Callable[[CommandContext], int]
    arguments: tuple[Argument, ...]
    fronts: tuple[str, ...] = (CLI,)
    common: bool = True
    """Whether the options every subcommand takes (``--json``, ``--project``) apply."""


COMMANDS: dict[str, Command] = {}
"""Every registered subcommand, in registration order (see :func:`commands_for`)."""


def command(
    name: str, help: str, *arguments: Argument, fronts: tuple[str, ...] = (CLI,)
) -> Callable[[Callable[[CommandContext], int]], Callable[[CommandContext], int]]:
    """Register a subcommand for ``fronts`` (default: the command line only)."""

    def register(run: Callable[[CommandContext], int]) -> Callable[[CommandContext], int]:
        COMMANDS[name] = Command(name, help, run, tuple(arguments), tuple(fronts))
        return run

    return register


def commands_for(front: str) -> list[Command]:
    """The registered subcommands of one front end, in the order they were declared."""
    return [c for c in COMMANDS.values() if front in c.fronts]


COMMON = (
    arg("--project", metavar="DIR", fronts=(CLI,),
        help="the project folder whose memory to use (default: the current folder)"),
    arg("--json", action="store_true", help="print machine-readable JSON"),
)
"""The options of every subcommand."""


# --------------------------------------------------------------------------- errors


class CommandUsageError(JupyterMemoryError):
    """The arguments of a subcommand are wrong: said with the subcommand's usage."""

    def __init__(self, message: str, usage: str = "", prog: str | None = None) -> None:
        super().__init__(message)
        self.usage = usage
        self.prog = prog


class HelpShown(Exception):
    """``-h``, ``--help`` or ``--version`` printed what was asked; nothing more to run."""

    def __init__(self, status: int = 0) -> None:
        super().__init__(status)
        self.status = status


def error_line(prog: str, message: str) -> str:
    """The one shape of every error: ``PROG SUBCOMMAND: message`` on one line."""
    message = " ".join(str(message).split("\n")).strip()
    return f"{prog}: {message}"


@dataclass(frozen=True)
class Failure:
    """How a front end reports an error: the line, the exit code, and the usage to show."""

    line: str
    code: int
    usage: str = ""


def failure(exc: BaseException, prog: str, *, update_hint: str | None = None) -> Failure | None:
    """The report of ``exc`` raised while running ``prog``; None for a bug (let it raise)."""
    if isinstance(exc, CommandUsageError):
        return Failure(error_line(exc.prog or prog, str(exc)), EXIT_USAGE, exc.usage)
    if isinstance(exc, MemoryNotFound | LockTimeout):
        return Failure(error_line(prog, str(exc)), EXIT_FAILED)
    if isinstance(exc, MemoryExists):
        hint = f" (`{update_hint}` updates it.)" if update_hint else ""
        return Failure(error_line(prog, f"{exc}{hint}"), EXIT_USAGE)
    if isinstance(exc, JupyterMemoryError):  # bad input: paths, secrets, settings
        return Failure(error_line(prog, str(exc)), EXIT_USAGE)
    if isinstance(exc, OSError):
        where = f" ({exc.filename})" if exc.filename else ""
        return Failure(error_line(prog, f"{exc.strerror or exc}{where}"), EXIT_FAILED)
    return None


# --------------------------------------------------------------------------- parsing


class _Formatter(argparse.HelpFormatter):
    """A fixed width, so the generated usage is the same on every terminal and in the docs."""

    def __init__(self, prog: str) -> None:
        super().__init__(prog, width=88, max_help_position=32)


class _Parser(argparse.ArgumentParser):
    """An argparse parser that raises instead of printing and exiting."""

    def error(self, message: str) -> NoReturn:
        raise CommandUsageError(message, self.format_usage(), self.prog)

    def exit(self, status: int = 0, message: str | None = None) -> NoReturn:
        if message:
            sys.stderr.write(message)
        raise HelpShown(status)


def build_parser(
    front: str, *, description: str | None = None, epilog: str | None = None
) -> argparse.ArgumentParser:
    """The parser of one front end: one subparser per subcommand it offers."""
    prog = PROGS[front]
    parser = _Parser(prog=prog, description=description, epilog=epilog,
                     formatter_class=_Formatter)
    if front == CLI:
        from jupyter_memory._version import __version__

        parser.add_argument("--version", action="version", version=f"%(prog)s {__version__}")
    subparsers = parser.add_subparsers(dest="command", metavar="COMMAND")
    for cmd in commands_for(front):
        sub = subparsers.add_parser(
            cmd.name, help=cmd.help.replace("%", "%%"), description=cmd.help.replace("%", "%%"),
            formatter_class=_Formatter,
        )
        arguments = cmd.arguments + (COMMON if cmd.common else ())
        for argument in arguments:
            if front in argument.fronts:
                options = dict(argument.options)
                if isinstance(options.get("help"), str):
                    options["help"] = options["help"].replace("%", "%%")
                sub.add_argument(*argument.flags, **options)
        sub.set_defaults(_command=cmd)
    return parser


def subparser(parser: argparse.ArgumentParser, name: str) -> argparse.ArgumentParser | None:
    """The subparser of subcommand ``name``, or None."""
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction) and name in action.choices:
            sub: argparse.ArgumentParser = action.choices[name]
            return sub
    return None


def parse(
    parser: argparse.ArgumentParser, argv: Sequence[str], *, stdout: TextIO, stderr: TextIO
) -> argparse.Namespace:
    """Parse ``argv`` (subcommand first) with a parser from :func:`build_parser`.

    Raises :class:`CommandUsageError` (unknown subcommand, unknown or missing argument,
    bad value: the message names it and carries the usage of the parser that found it)
    or :class:`HelpShown` after printing help to ``stdout``.
    """
    words = list(argv)
    prog = parser.prog
    names = [c.name for c in COMMANDS.values() if subparser(parser, c.name) is not None]
    if words and not words[0].startswith("-") and words[0] not in names:
        elsewhere = COMMANDS.get(words[0])
        hint = ""
        if elsewhere is not None:
            others = " and ".join(PROGS[f] for f in elsewhere.fronts)
            hint = f" ({words[0]} is a subcommand of {others})"
        raise CommandUsageError(
            f"unknown subcommand {words[0]!r}{hint}. Use one of: {', '.join(names)}.",
            parser.format_usage(), prog)
    saved = sys.stdout, sys.stderr
    sys.stdout, sys.stderr = stdout, stderr  # argparse prints help and version to these
    try:
        args, extra = parser.parse_known_args(words)
        if getattr(args, "_command", None) is None:
            if extra:
                parser.error(f"unrecognized arguments: {' '.join(extra)} (a COMMAND comes first)")
            parser.error(f"a COMMAND is required; `{prog} -h` lists them")
        if extra:  # name the bad argument with the usage of the subcommand it was given to
            sub = subparser(parser, args._command.name) or parser
            sub.error(f"unrecognized arguments: {' '.join(extra)}")
        return args
    finally:
        sys.stdout, sys.stderr = saved


def scope_name(value: str) -> str:
    """An argparse ``type`` for ``--scope``: one of the scopes, said plainly otherwise."""
    from jupyter_memory.memdir.scopes import WRITE_SCOPES

    if value not in WRITE_SCOPES:
        raise argparse.ArgumentTypeError(
            f"unknown scope {value!r}; use one of {', '.join(WRITE_SCOPES)}")
    return value


# --------------------------------------------------------------------------- output

_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]")


def printable(text: str) -> str:
    """``text`` with control characters shown as escapes, so a memory cannot drive the
    terminal (colour codes, cursor moves, a fake prompt) when it is listed or shown."""
    return _CONTROL.sub(lambda m: repr(m.group())[1:-1], text)


# --------------------------------------------------------------------------- the context


@dataclass
class CommandContext:
    """What a subcommand gets: its arguments, the environment and the output streams.

    This class is the command line's: the project is a folder (``--project``, default
    the current one) and the memory is found from it and the environment. The magic
    subclasses it to use the notebook's session instead (``jupyter_memory.magics.memory``).
    Text for people that is not the answer (where a file is, a note, a question) goes
    through :meth:`note`: standard error on the command line, so standard output stays
    the answer alone; in line with the output in a notebook.
    """

    args: argparse.Namespace
    env: Mapping[str, str]
    stdin: TextIO
    stdout: TextIO
    stderr: TextIO
    front: str = CLI
    _stores: dict[tuple[str, str], Any] = field(default_factory=dict, repr=False)

    # ------------------------------------------------------------------ who we are

    @property
    def prog(self) -> str:
        """How this front end is called: ``jupyter-memory`` or ``%memory``."""
        return PROGS[self.front]

    def cmd(self, words: str) -> str:
        """A command line of this front end, for messages: ``ctx.cmd("repair")``."""
        return f"{self.prog} {words}"

    @property
    def subcommand(self) -> str:
        cmd = getattr(self.args, "_command", None)
        return cmd.name if cmd is not None else str(getattr(self.args, "command", ""))

    @property
    def json(self) -> bool:
        return bool(getattr(self.args, "json", False))

    # ------------------------------------------------------------------ output

    def out(self, text: str = "") -> None:
        self.stdout.write(text + "\n")

    def note(self, text: str) -> None:
        """A message for people beside the answer (standard error here)."""
        self.stderr.write(printable(text) + "\n")

    err = note

    def emit(self, data: Any, text: str | None) -> None:
        """JSON when ``--json`` was given, else the human text (nothing when ``None``)."""
        if self.json:
            self.out(json.dumps(data, ensure_ascii=False, indent=2))
        elif text is not None:
            self.out(printable(text))

    def show(self, data: Any, text: str) -> None:
        """Like :meth:`emit`, for a table: the notebook shows it as an output of its own."""
        self.emit(data, text)

    def offer_file(self, path: Path, label: str) -> None:
        """Point the person at a file to edit (JupyterLab opens it; here, its path)."""
        self.emit({"path": str(path), "label": label}, f"Edit {label}: {path}")

    def confirm(self, question: str) -> bool | None:
        """Ask a yes/no question; None when nobody can answer (no terminal)."""
        if not self.stdin.isatty():
            return None
        self.stderr.write(question)
        self.stderr.flush()
        return self.stdin.readline().strip().lower() in ("y", "yes")

    # ------------------------------------------------------------------ where the memory is

    @property
    def project(self) -> Path | None:
        """The folder given with ``--project``, if any."""
        raw = getattr(self.args, "project", None)
        if raw is None:
            return None
        path = Path(raw).expanduser()
        if not path.is_dir():
            raise CommandUsageError(f"--project {raw}: no such folder. Give the project's folder.")
        return path

    @property
    def folder(self) -> Path:
        """The folder commands start from: ``--project`` or the current folder."""
        return self.project or Path.cwd()

    @cached_property
    def location(self) -> MemoryLocation:
        from jupyter_memory.memdir.location import locate

        return locate(self.project, self.env)

    def memory_state(self) -> tuple[bool, str]:
        """Whether memory is on, and why (without the leading ``on:`` / ``off:``)."""
        location = self.location
        return location.enabled, _without_state(location.enabled_reason)

    def project_store(self) -> ScopedStore:
        """The project's store: the private memdir, with ``team/`` paths in the team folder."""
        key = ("memdir", "")
        if key not in self._stores:
            from jupyter_memory.memdir.team import open_store

            self._stores[key] = open_store(self.location, self.env)
        store: ScopedStore = self._stores[key]
        return store

    def store_for(self, scope: str = "memdir", agent: str | None = None) -> MemoryStore:
        """The store of a ``--scope``: the project's memory, the team folder or an agent's."""
        from jupyter_memory.memdir.scopes import DEFAULT_AGENT, scope_root
        from jupyter_memory.memdir.store import MemoryStore

        base = self.project_store()
        if scope in ("memdir", "private"):
            return base
        if scope == "team":
            return base.team
        key = (scope, agent or DEFAULT_AGENT)
        if key not in self._stores:
            root = scope_root(scope, memdir=base.memdir, project_root=self.location.project_root,
                              agent=agent or DEFAULT_AGENT, env=self.env)
            self._stores[key] = MemoryStore(root.path, maintain_index=True, root=root)
        store: MemoryStore = self._stores[key]
        return store

    @property
    def store(self) -> MemoryStore:
        """The store the subcommand works on: its ``--scope`` (default the project's)."""
        return self.store_for(getattr(self.args, "scope", "memdir") or "memdir",
                              getattr(self.args, "agent", None))

    def team(self) -> TeamLocation:
        """Where the team folder is, and which rule chose it."""
        from jupyter_memory.memdir.team import team_location

        team = getattr(self.project_store(), "team_location", None)
        return team if team is not None else team_location(self.location, self.env)

    @property
    def project_root(self) -> Path:
        return Path(self.location.project_root)

    @property
    def session(self) -> Session:
        """The notebook's agent session: only the magic has one."""
        raise ConfigError(f"{self.subcommand} works on a notebook's agent session: run "
                          f"%memory {self.subcommand} in a notebook.")

    # ------------------------------------------------------------------ after a change

    def changed(self, scope: str = "memdir") -> None:
        """The person changed memories: a notebook session shows it in its next request."""

    def reload(self, *, hooks: bool = False) -> None:
        """Settings, trust or the team folder changed: a notebook session reads them again."""


def _without_state(reason: str) -> str:
    """``on: the default`` → ``the default``: the state is said by the caller."""
    head, sep, rest = reason.partition(":")
    return rest.strip() if sep and head in ("on", "off") else reason
