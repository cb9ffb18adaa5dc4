"""The command model: a command declared once, parsed and run by every front end.

A command is a typed view of its arguments — a frozen dataclass whose fields are declared
exactly as for argparse's ``add_argument`` (:func:`arg`) — one line of help, and the
function that runs it, a function of a :class:`CommandContext` returning an exit code::

    @dataclass(frozen=True, kw_only=True)
    class HelloArgs(CommonArgs):
        loud: bool = arg("--loud", action="store_true", help="shout")

    @command("hello", "Say hello.", HelloArgs, fronts=BOTH)
    def _hello(ctx: CommandContext[HelloArgs]) -> int:
        ctx.emit({"hello": True}, "HELLO" if ctx.args.loud else "hello")
        return 0

From one declaration come the ``jupyter-memory hello`` subcommand (``CLI``), its notebook
twin (``MAGIC``: ``%memory hello`` by default, or the magic named by ``magic=``, such as
``%context`` or ``%%remember``), the usage that ``-h`` and ``%magic?`` show, and
``ctx.args``, an instance of the dataclass, so the type checker knows every argument.
Both front ends parse with parsers built from the same fields, run the same function and
print the same text; only what a front end owns differs, and the :class:`CommandContext`
hides it: where the memory is (a folder and the environment, or the notebook's session),
how a question is asked, how a table, a file or a view is shown. An argument that only
makes sense in one front end says so with ``fronts=``.

A command declared without a function (:func:`declare`) is run by its magic, which reads
its arguments from the same declaration: ``%agent`` and its line subcommands,
``%compact``, ``%sandbox``. Magics whose line ends in free text (``%agent PROMPT``,
``%compact INSTRUCTIONS``) declare it with :func:`prompt`: options are read only before
the first word that is not an option, and the rest is kept exactly as typed
(:func:`parse_prompt`).

Errors have one shape everywhere, ``PROG SUBCOMMAND: message`` (:func:`error_line`): the
magic raises it as IPython's ``UsageError``; the command line prints it to standard error
(after the subcommand's usage when the arguments were wrong) and exits with the error's own
code (``errors.py``: 1 not found, 2 usage, 3 the model call failed, 70 a bug of ours).

Nothing here imports IPython (the import-linter contracts in pyproject.toml check it).
"""

from __future__ import annotations

import argparse
import datetime as _dt
import difflib
import inspect
import json
import re
import shlex
import sys
import textwrap
from collections.abc import Callable, Mapping, Sequence
from dataclasses import MISSING, Field, dataclass, field, fields, replace
from functools import cache, cached_property
from pathlib import Path
from typing import TYPE_CHECKING, Any, Generic, NoReturn, TextIO, TypeVar

from jupyter_memory.errors import (
    EXIT_FAILED,
    EXIT_OK,
    EXIT_USAGE,
    ConfigError,
    JupyterMemoryError,
    MemoryExists,
)
from jupyter_memory.memdir.scopes import DEFAULT_AGENT

if TYPE_CHECKING:
    from jupyter_memory.agent.remember import RememberResult
    from jupyter_memory.agent.session import Session
    from jupyter_memory.memdir.location import MemoryLocation
    from jupyter_memory.memdir.store import MemoryStore
    from jupyter_memory.memdir.team import ScopedStore, TeamLocation

__all__ = [
    "BOTH",
    "CLI",
    "COMMANDS",
    "EXIT_FAILED",
    "EXIT_OK",
    "EXIT_USAGE",
    "MAGIC",
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
    "command_parser",
    "commands_for",
    "commands_of",
    "declare",
    "error_line",
    "failure",
    "parse",
    "parse_prompt",
    "parse_words",
    "printable",
    "prompt",
    "split_options",
]

CLI = "cli"
MAGIC = "magic"
BOTH = (CLI, MAGIC)
PROGS = {CLI: "jupyter-memory", MAGIC: "%memory"}
"""How each front end's subcommands are called: the first word of their usage and errors."""

#: Set by jupyter_client in a kernel's environment, so inherited by its ``!`` commands.
KERNEL_CHILD = "JPY_PARENT_PID"


# --------------------------------------------------------------------------- arguments

_ARGUMENT = "jupyter_memory.commands.argument"
_PROMPT = "jupyter_memory.commands.prompt"


@dataclass(frozen=True)
class Argument:
    """The arguments of one ``add_argument`` call, and the front ends that offer it."""

    flags: tuple[str, ...]
    options: dict[str, Any]
    fronts: tuple[str, ...] = BOTH
    per_front: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)
    """Options that differ in one front end, e.g. ``{CLI: {"required": True}}``."""

    @property
    def positional(self) -> bool:
        return not self.flags

    def options_for(self, front: str) -> dict[str, Any]:
        return {**self.options, **self.per_front.get(front, {})}


def arg(*flags: str, fronts: tuple[str, ...] = BOTH,
        per_front: Mapping[str, Mapping[str, Any]] | None = None, **options: Any) -> Any:
    """A field of an :class:`Args` dataclass: an argument exactly as for ``add_argument``.

    Give the flags of an option (``arg("--limit", type=int)``) and none for a positional
    argument, which is named by its field (``metavar`` names it in the usage). The field's
    default is argparse's: ``default=`` when given, else False for ``store_true``, an empty
    list for ``nargs="*"`` and ``action="append"``, None for an optional value; a positional
    argument that must be given has none. ``fronts`` limits where the argument is offered
    (it then needs a default: what the other front end reads).
    """
    argument = Argument(tuple(flags), dict(options), tuple(fronts),
                        {front: dict(o) for front, o in (per_front or {}).items()})
    metadata = {_ARGUMENT: argument}
    nargs, action = options.get("nargs"), options.get("action")
    if "default" in options:
        default = options["default"]
        if isinstance(default, list):
            return field(default_factory=lambda: list(default), metadata=metadata)
        return field(default=default, metadata=metadata)
    if argument.positional and nargs in (None, "+"):
        return field(metadata=metadata)
    if action == "store_true":
        return field(default=False, metadata=metadata)
    if nargs in ("*", "+") or action == "append":
        return field(default_factory=list, metadata=metadata)
    return field(default=None, metadata=metadata)


def prompt(help: str, metavar: str = "PROMPT") -> Any:
    """The free text that ends a magic's line (and continues in its cell body): read
    exactly as typed, after the options (:func:`parse_prompt`)."""
    argument = Argument((), {"nargs": "*", "metavar": metavar, "help": help})
    return field(default="", metadata={_ARGUMENT: argument, _PROMPT: True})


A = TypeVar("A", bound="Args")


@dataclass(frozen=True, kw_only=True)
class Args:
    """The parsed arguments of a command, typed: each command declares a subclass whose
    fields are :func:`arg` declarations (its own first, then those of its bases)."""

    @classmethod
    def declared(cls) -> list[tuple[str, Argument]]:
        """``(field name, argument)`` in the order of the usage: the class's own fields,
        then each base class's."""
        by_name = {f.name: f for f in fields(cls)}
        seen: list[str] = []
        for klass in cls.__mro__:
            for name in inspect.get_annotations(klass):
                if name in by_name and name not in seen:
                    seen.append(name)
        declared = []
        for name in seen:
            argument = by_name[name].metadata.get(_ARGUMENT)
            if not isinstance(argument, Argument):
                raise TypeError(f"{cls.__name__}.{name} is not declared with arg()")
            declared.append((name, argument))
        return declared

    @classmethod
    def prompt_field(cls) -> str | None:
        """The name of the field declared with :func:`prompt`, if any."""
        return next((f.name for f in fields(cls) if f.metadata.get(_PROMPT)), None)

    @classmethod
    def check(cls) -> None:
        """Refuse a declaration the parsers could not honour: an argument offered in one
        front end only must have a default, which the other one reads."""
        by_name = {f.name: f for f in fields(cls)}
        for name, argument in cls.declared():
            if set(argument.fronts) != set(BOTH) and not _has_default(by_name[name]):
                raise TypeError(f"{cls.__name__}.{name} is offered in {argument.fronts} "
                                "only, so it needs a default")

    @classmethod
    def from_namespace(cls: type[A], namespace: argparse.Namespace) -> A:
        """The typed arguments from what argparse parsed (fields it did not parse, such as
        another front end's options, keep their defaults)."""
        values: dict[str, Any] = {}
        for f in fields(cls):
            if f.metadata.get(_PROMPT) or not hasattr(namespace, f.name):
                continue
            value = getattr(namespace, f.name)
            values[f.name] = list(value) if isinstance(value, list) else value
        return cls(**values)


def _has_default(f: Field[Any]) -> bool:
    return f.default is not MISSING or f.default_factory is not MISSING


def _default(f: Field[Any]) -> Any:
    if f.default_factory is not MISSING:
        return f.default_factory()
    return f.default


@dataclass(frozen=True, kw_only=True)
class CommonArgs(Args):
    """The options of every ``jupyter-memory`` subcommand."""

    project: str | None = arg(
        "--project", metavar="DIR", fronts=(CLI,),
        help="the project folder whose memory to use (default: the current folder)")
    json: bool = arg("--json", action="store_true", help="print machine-readable JSON")


def scope_name(value: str) -> str:
    """An argparse ``type`` for ``--scope``: one of the scopes, said plainly otherwise."""
    from jupyter_memory.memdir.scopes import WRITE_SCOPES

    if value not in WRITE_SCOPES:
        raise argparse.ArgumentTypeError(
            f"unknown scope {value!r}; use one of {', '.join(WRITE_SCOPES)}")
    return value


@dataclass(frozen=True, kw_only=True)
class ScopedArgs(CommonArgs):
    """``--scope`` and ``--agent``: whose memory a command works on. Declared here once, for
    every command that takes them (``ctx.store`` is the store they name)."""

    scope: str = arg(
        "--scope", type=scope_name, default="memdir", metavar="SCOPE",
        help="whose memory: memdir or private (the project's, the default), team (the "
             "shared team folder), or an agent's own: user, project or local")
    agent: str = arg(
        "--agent", default=DEFAULT_AGENT, metavar="NAME",
        help="the agent of --scope user|project|local (default: jupyter-memory)")


# --------------------------------------------------------------------------- commands


@dataclass(frozen=True)
class Command:
    """One command: its name, one line of help, its arguments and what it does."""

    name: str
    help: str
    args: type[Args]
    run: Callable[[CommandContext[Any]], int] | None = None
    """None when the magic runs it itself (its body needs IPython)."""
    fronts: tuple[str, ...] = (CLI,)
    magic: str | None = None
    """How a notebook calls it: ``%memory list``, ``%context``, ``%%remember``,
    ``%agent resume``; None when only the command line offers it."""

    def spelling(self, front: str) -> str:
        """The command as people type it in ``front``: ``jupyter-memory context``,
        ``%context``, ``%memory list``."""
        if front == CLI:
            return f"{PROGS[CLI]} {self.name}"
        return self.magic or f"{PROGS[MAGIC]} {self.name}"

    def program(self, front: str) -> str:
        """The first word of :meth:`spelling`: ``jupyter-memory``, ``%memory``, ``%agent``."""
        return self.spelling(front).split()[0]

    @property
    def takes_prompt(self) -> bool:
        return self.args.prompt_field() is not None


COMMANDS: dict[str, Command] = {}
"""Every declared command, in declaration order (see :func:`commands_for`)."""


def declare(name: str, help: str, args: type[Args], *,
            run: Callable[[CommandContext[Any]], int] | None = None,
            fronts: tuple[str, ...] = (CLI,), magic: str | None = None) -> Command:
    """Declare a command for ``fronts``; ``magic`` is its notebook spelling when that is
    not ``%memory NAME``. Without ``run`` the magic runs it (``fronts=(MAGIC,)``)."""
    if run is None and CLI in fronts:
        raise TypeError(f"{name}: the command line needs a function to run")
    if magic is None and MAGIC in fronts:
        magic = f"{PROGS[MAGIC]} {name}"
    args.check()
    cmd = Command(name, help, args, run, tuple(fronts), magic)
    COMMANDS[name] = cmd
    return cmd


def command(
    name: str, help: str, args: type[A], *, fronts: tuple[str, ...] = (CLI,),
    magic: str | None = None,
) -> Callable[[Callable[[CommandContext[A]], int]], Callable[[CommandContext[A]], int]]:
    """Register the decorated function as command ``name`` for ``fronts`` (default: the
    command line only)."""

    def register(run: Callable[[CommandContext[A]], int]) -> Callable[[CommandContext[A]], int]:
        declare(name, help, args, run=run, fronts=fronts, magic=magic)
        return run

    return register


def commands_for(front: str) -> list[Command]:
    """The subcommands of ``jupyter-memory`` (:data:`CLI`) or of ``%memory``
    (:data:`MAGIC`), in the order they were declared."""
    if front == CLI:
        return [c for c in COMMANDS.values() if CLI in c.fronts]
    return commands_of(PROGS[MAGIC])


def commands_of(program: str) -> list[Command]:
    """The commands a magic runs (``%agent``: the prompt and its line subcommands)."""
    return [c for c in COMMANDS.values() if MAGIC in c.fronts and c.program(MAGIC) == program]


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
    """The report of ``exc`` raised while running ``prog``, with the exit code its error
    class carries; None for anything else (a bug: the front end reports it as one)."""
    if isinstance(exc, CommandUsageError):
        return Failure(error_line(exc.prog or prog, str(exc)), EXIT_USAGE, exc.usage)
    if isinstance(exc, MemoryExists):
        hint = f" (`{update_hint}` updates it.)" if update_hint else ""
        return Failure(error_line(prog, f"{exc}{hint}"), exc.exit_code)
    if isinstance(exc, JupyterMemoryError):  # bad input, not found, the model, a bug
        return Failure(error_line(prog, str(exc)), exc.exit_code)
    if isinstance(exc, OSError):
        where = f" ({exc.filename})" if exc.filename else ""
        return Failure(error_line(prog, f"{exc.strerror or exc}{where}"), EXIT_FAILED)
    return None


# --------------------------------------------------------------------------- parsing


class _Formatter(argparse.HelpFormatter):
    """A fixed width, so the generated usage is the same on every terminal and in the docs."""

    def __init__(self, prog: str) -> None:
        super().__init__(prog, width=88, max_help_position=32)


_UNRECOGNIZED = "unrecognized arguments: "


class _Parser(argparse.ArgumentParser):
    """An argparse parser that raises instead of printing and exiting, and names the
    closest known option when it meets an unknown one."""

    command: Command | None = None
    """The command this parser reads, for a hint about another front end's options."""
    front: str = MAGIC

    def error(self, message: str) -> NoReturn:
        if message.startswith(_UNRECOGNIZED) and "(did you mean" not in message:
            unknown = next((w for w in message[len(_UNRECOGNIZED):].split()
                            if w.startswith("-")), None)
            if unknown is not None:
                message += self._hint(unknown)
        raise CommandUsageError(message, self.format_usage(), self.prog)

    def _hint(self, word: str) -> str:
        """The closest known option, or where an option of another front end lives."""
        close = closest_option(self, word)
        if close is not None:
            return f" (did you mean {close}?)"
        flag = word.split("=", 1)[0]
        if self.command is not None:
            for _, argument in self.command.args.declared():
                if flag in argument.flags and self.front not in argument.fronts:
                    where = " and ".join(self.command.spelling(f) for f in argument.fronts)
                    return f" ({flag} is an option of {where} only)"
        return ""

    def exit(self, status: int = 0, message: str | None = None) -> NoReturn:
        if message:
            sys.stderr.write(message)
        raise HelpShown(status)

    def format_help(self) -> str:
        """argparse's help, then the line subcommands of a magic that has some (``%agent``)."""
        text = super().format_help()
        subs = [c for c in commands_of(self.prog) if c.spelling(MAGIC) != self.prog]
        if not subs or self._subparsers is not None:
            return text
        lines = [f"line subcommands ({self.prog} SUBCOMMAND -h shows one):"]
        for sub in subs:
            usage = command_parser(sub).format_usage().strip().removeprefix("usage: ")
            lines.append("  " + usage.replace(" [-h]", "", 1))
            lines += textwrap.wrap(sub.help, 84, initial_indent="    ", subsequent_indent="    ")
        return text + "\n" + "\n".join(lines) + "\n"


def closest_option(parser: argparse.ArgumentParser, word: str) -> str | None:
    """The option of ``parser`` that ``word`` most likely meant (``--agnet``: ``--agent``;
    ``--ag``, the start of one option only: ``--agent``).

    Compared without the dashes, which every option shares and which would make any two
    short options look alike."""
    known = {s.lstrip("-"): s for s in parser._option_string_actions if s.startswith("--")}
    typed = word.split("=", 1)[0].lstrip("-")
    starts = [name for name in known if typed and name.startswith(typed)]
    if len(starts) == 1:
        return known[starts[0]]
    found = difflib.get_close_matches(typed, list(known), n=1, cutoff=0.7)
    return known[found[0]] if found else None


def _escape(text: str) -> str:
    """Help text as argparse expands it: ``%`` is its format character."""
    return text.replace("%", "%%")


def add_arguments(parser: argparse.ArgumentParser, args: type[Args], front: str) -> None:
    """Add the arguments ``args`` declares for ``front`` to ``parser``."""
    by_name = {f.name: f for f in fields(args)}
    for name, argument in args.declared():
        if front not in argument.fronts:
            continue
        options = argument.options_for(front)
        if "default" not in options and _has_default(by_name[name]):
            options["default"] = _default(by_name[name])
        if isinstance(options.get("help"), str):
            options["help"] = _escape(options["help"])
        if argument.positional:
            parser.add_argument(name, **options)
        else:
            parser.add_argument(*argument.flags, dest=name, **options)


def build_parser(
    front: str, *, description: str | None = None, epilog: str | None = None
) -> argparse.ArgumentParser:
    """The parser of ``jupyter-memory`` or ``%memory``: one subparser per subcommand."""
    prog = PROGS[front]
    parser = _Parser(prog=prog, description=description, epilog=epilog,
                     formatter_class=_Formatter)
    if front == CLI:
        from jupyter_memory._version import __version__

        parser.add_argument("--version", action="version", version=f"%(prog)s {__version__}")
    subparsers = parser.add_subparsers(dest="command", metavar="COMMAND")
    for cmd in commands_for(front):
        sub = subparsers.add_parser(cmd.name, help=_escape(cmd.help), description=cmd.help,
                                    formatter_class=_Formatter)
        if isinstance(sub, _Parser):
            sub.command, sub.front = cmd, front
        add_arguments(sub, cmd.args, front)
        sub.set_defaults(_command=cmd)
    return parser


@cache
def command_parser(cmd: Command, front: str = MAGIC) -> argparse.ArgumentParser:
    """The parser of one command on its own, as a magic reads its line: ``%context``,
    ``%%remember``, ``%agent resume``. A magic that takes a prompt accepts no
    abbreviated options, so every option word is known before the prompt begins."""
    parser = _Parser(prog=cmd.spelling(front), description=cmd.help,
                     formatter_class=_Formatter, allow_abbrev=not cmd.takes_prompt)
    parser.command, parser.front = cmd, front
    add_arguments(parser, cmd.args, front)
    return parser


def subparser(parser: argparse.ArgumentParser, name: str) -> argparse.ArgumentParser | None:
    """The subparser of subcommand ``name``, or None."""
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction) and name in action.choices:
            sub: argparse.ArgumentParser = action.choices[name]
            return sub
    return None


class _Streams:
    """argparse prints help and versions to ``sys.stdout``/``sys.stderr``: point them at the
    front end's streams while it parses."""

    def __init__(self, stdout: TextIO, stderr: TextIO) -> None:
        self.streams = stdout, stderr

    def __enter__(self) -> None:
        self.saved = sys.stdout, sys.stderr
        sys.stdout, sys.stderr = self.streams

    def __exit__(self, *exc: object) -> None:
        sys.stdout, sys.stderr = self.saved


def parse(
    parser: argparse.ArgumentParser, argv: Sequence[str], *, stdout: TextIO, stderr: TextIO
) -> tuple[Command, Args]:
    """Parse ``argv`` (subcommand first) with a parser from :func:`build_parser`.

    Returns the subcommand and its typed arguments. Raises :class:`CommandUsageError`
    (unknown subcommand, unknown or missing argument, bad value: the message names it and
    carries the usage of the parser that found it) or :class:`HelpShown` after printing
    help to ``stdout``.
    """
    words = list(argv)
    prog = parser.prog
    names = [c.name for c in COMMANDS.values() if subparser(parser, c.name) is not None]
    if words and not words[0].startswith("-") and words[0] not in names:
        raise CommandUsageError(
            f"unknown subcommand {words[0]!r}{_elsewhere(words[0], prog)}. Use one of: "
            f"{', '.join(names)}.", parser.format_usage(), prog)
    with _Streams(stdout, stderr):
        namespace, extra = parser.parse_known_args(words)
        cmd: Command | None = getattr(namespace, "_command", None)
        if cmd is None:
            if extra:
                parser.error(f"unrecognized arguments: {' '.join(extra)} (a COMMAND comes first)")
            parser.error(f"a COMMAND is required; `{prog} -h` lists them")
        if extra:  # name the bad argument with the usage of the subcommand it was given to
            sub = subparser(parser, cmd.name) or parser
            sub.error(f"{_UNRECOGNIZED}{' '.join(extra)}")
        return cmd, cmd.args.from_namespace(namespace)


def _elsewhere(name: str, prog: str) -> str:
    """Where a subcommand this program does not have lives: ``(add is a subcommand of
    jupyter-memory; in a notebook it is %%remember)``."""
    cmd = COMMANDS.get(name)
    if cmd is None:
        return ""
    places = []
    if CLI in cmd.fronts and prog != PROGS[CLI]:
        places.append(f"{name} is a subcommand of {PROGS[CLI]}")
    if MAGIC in cmd.fronts and cmd.program(MAGIC) != prog:
        places.append(f"in a notebook it is {cmd.spelling(MAGIC)}")
    return f" ({'; '.join(places)})" if places else ""


def parse_words(cmd: Command, words: Sequence[str], *, stdout: TextIO, stderr: TextIO,
                front: str = MAGIC) -> Args:
    """The typed arguments of one command from its words (a magic's line, split)."""
    parser = command_parser(cmd, front)
    with _Streams(stdout, stderr):
        return cmd.args.from_namespace(parser.parse_args(list(words)))


def read_words(line: str, prog: str) -> list[str]:
    """A magic's line as words, shell-style (quotes group, and are not kept)."""
    try:
        return shlex.split(line)
    except ValueError as exc:
        raise CommandUsageError(f"could not read the arguments ({exc}).", prog=prog) from None


# A word of a command line: runs of plain characters, escaped characters and quoted parts.
_WORD = re.compile(r"""(?:[^\s'"\\]+|\\.|'[^']*'|"(?:[^"\\]|\\.)*")+""", re.DOTALL)


def split_options(parser: argparse.ArgumentParser, line: str) -> tuple[list[str], str]:
    """The option words at the start of ``line``, and the rest of it exactly as typed.

    Options end at the first word that does not start with ``-`` (the rest begins there,
    with every quote, backslash and later ``--flag`` as typed) or at ``--`` (the rest
    begins after it). An option that takes a value takes the next word with it.
    """
    words: list[str] = []
    pos = _skip_space(line, 0)
    while True:
        match = _WORD.match(line, pos)
        if match is None or not match.group().startswith("-"):
            return words, line[pos:]
        word = _unquote(match.group())
        pos = _skip_space(line, match.end())
        if word == "--":
            return words, line[pos:]
        words.append(word)
        action = parser._option_string_actions.get(word)
        if action is not None and action.nargs != 0 and "=" not in word:
            value = _WORD.match(line, pos)
            if value is not None and not value.group().startswith("-"):
                words.append(_unquote(value.group()))
                pos = _skip_space(line, value.end())


def _skip_space(line: str, pos: int) -> int:
    while pos < len(line) and line[pos].isspace():
        pos += 1
    return pos


def _unquote(word: str) -> str:
    try:
        parts = shlex.split(word)
    except ValueError:
        return word
    return parts[0] if len(parts) == 1 else word


def join_prompt(rest: str, cell: str | None) -> str:
    """The prompt of a line magic (the rest of its line) or of a cell magic (the rest of
    its first line, then the cell body): as typed, without the blank space around it."""
    if cell is None:
        return rest.strip()
    if rest.strip():
        return f"{rest.strip()}\n{cell}".strip()
    return cell.strip()


def parse_prompt(cmd: Command, line: str, *, cell: str | None = None, stdout: TextIO,
                 stderr: TextIO) -> Args:
    """The typed arguments of a magic that ends in free text: the options before it, and
    its prompt field holding the rest of the line (and the cell body) exactly as typed.

    An unknown option is a :class:`CommandUsageError` naming it and the closest known
    one; ``-h`` prints the help (:class:`HelpShown`). A prompt that starts with ``-``
    goes after ``--``.
    """
    name = cmd.args.prompt_field()
    if name is None:
        raise TypeError(f"{cmd.name} declares no prompt")
    parser = command_parser(cmd, MAGIC)
    words, rest = split_options(parser, line)
    try:
        with _Streams(stdout, stderr):
            namespace = parser.parse_args(words)
            stray = getattr(namespace, name)  # option-like words argparse took for text: -5
            if stray:
                parser.error(f"{_UNRECOGNIZED}{' '.join(stray)}")
    except CommandUsageError as exc:
        message = str(exc)
        if message.startswith(_UNRECOGNIZED) and "(did you mean" not in message:
            text = next(a.options["metavar"] for n, a in cmd.args.declared() if n == name)
            message += (f". Options come first; {text} that starts with '-' goes after "
                        f"'--': {cmd.spelling(MAGIC)} -- {text}")
        raise CommandUsageError(message, exc.usage, exc.prog) from None
    return replace(cmd.args.from_namespace(namespace), **{name: join_prompt(rest, cell)})


# --------------------------------------------------------------------------- help


def command_help(cmd: Command, front: str = MAGIC) -> str:
    """What ``-h`` prints for one command: its usage, help and arguments."""
    return command_parser(cmd, front).format_help().strip()


# --------------------------------------------------------------------------- output

_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]")


def printable(text: str) -> str:
    """``text`` with control characters shown as escapes, so a memory cannot drive the
    terminal (colour codes, cursor moves, a fake prompt) when it is listed or shown."""
    return _CONTROL.sub(lambda m: repr(m.group())[1:-1], text)


# --------------------------------------------------------------------------- the context


@dataclass
class CommandContext(Generic[A]):
    """What a command gets: its typed arguments, the environment and the output streams.

    This class is the command line's: the project is a folder (``--project``, default
    the current one) and the memory is found from it and the environment. The magics
    subclass it to use the notebook's session instead (``jupyter_memory.magics.commands``).
    Text for people that is not the answer (where a file is, a note, a question) goes
    through :meth:`note`: standard error on the command line, so standard output stays
    the answer alone; in line with the output in a notebook.
    """

    command: Command
    args: A
    env: Mapping[str, str]
    stdin: TextIO
    stdout: TextIO
    stderr: TextIO
    front: str = CLI
    _stores: dict[tuple[str, str], Any] = field(default_factory=dict, repr=False)

    # ------------------------------------------------------------------ who we are

    @property
    def prog(self) -> str:
        """How this front end is called: ``jupyter-memory``, ``%memory``, ``%context``."""
        return self.command.program(self.front)

    @property
    def spelling(self) -> str:
        """The command as this front end spells it, the start of its errors:
        ``jupyter-memory list``, ``%memory list``, ``%%remember``."""
        return self.command.spelling(self.front)

    def cmd(self, words: str) -> str:
        """A command line of this front end, for messages: ``ctx.cmd("repair")``."""
        return f"{self.prog} {words}"

    @property
    def subcommand(self) -> str:
        return self.command.name

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

    def show_request_view(self, session: Session, *, counted_tokens: int | None) -> bool:
        """Show the next request of ``session`` as a view (``context``), if this front end
        has one: the notebook's widget. False here: the text is printed instead."""
        return False

    def offer_file(self, path: Path, label: str) -> None:
        """Point the person at a file to edit (JupyterLab opens it; here, its path)."""
        self.emit({"path": str(path), "label": label}, f"Edit {label}: {path}")

    def confirm(self, question: str) -> bool | None:
        """Ask a yes/no question; None when nobody can answer (no terminal).

        A notebook's ``!`` command runs under a pseudo-terminal that nobody types into (a
        read would wait for ever): jupyter_client marks a kernel, and so everything it
        starts, with ``JPY_PARENT_PID``, and that counts as no terminal too.
        """
        if not self.stdin.isatty() or self.env.get(KERNEL_CHILD):
            return None
        self.stderr.write(question)
        self.stderr.flush()
        return self.stdin.readline().strip().lower() in ("y", "yes")

    # ------------------------------------------------------------------ what it works on

    def read_body(self, given: str | None) -> str:
        """The text a command stores (``add``): ``--body``, else standard input."""
        body = given
        if body is None:
            if self.stdin.isatty():
                raise CommandUsageError(
                    "give the memory text with --body TEXT or pipe it on standard input.")
            body = self.stdin.read()
        if not body.strip():
            raise CommandUsageError(
                "the memory text is empty; give it with --body or on standard input.")
        return body

    def today(self) -> _dt.date:
        """The date relative dates are counted from (a notebook's session may pin it)."""
        return _dt.date.today()

    def request_session(self, *, model: str | None = None, mode: str | None = None,
                        agent: str | None = None) -> Session:
        """The session whose next request ``context`` shows: here a new one for the
        project, budgeted for ``model`` and ``mode``, or the defined agent's."""
        from jupyter_memory.agent.session import AgentConfig, Session

        overrides: dict[str, Any] = {}
        if model:
            overrides["model"] = model
        if mode:
            overrides["recall_mode"] = mode
        config = AgentConfig.from_env(self.env, log_transcript=False, **overrides)
        session = Session(self.folder, config=config, env=self.env)
        if agent:
            from jupyter_memory.agent.definitions import load_agent

            session = session.child(load_agent(session.project_root, agent, env=self.env))
        return session

    def file_with_model(self, store: MemoryStore, body: str, *, today: _dt.date,
                        name: str | None, description: str | None, type: str | None,
                        file: str | None = None) -> RememberResult:
        """Let the session's model file a memory whose fields were not all given."""
        raise ConfigError(f"{self.spelling} needs --name, --description and --type here; "
                          "in a notebook %%remember lets the model choose them.")

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
        from jupyter_memory.memdir.record import provenance_from_env
        from jupyter_memory.memdir.scopes import DEFAULT_AGENT, committed, scope_root
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
            self._stores[key] = MemoryStore(root.path, maintain_index=True, root=root,
                                            ignore_own_files=committed(scope),
                                            mark_provenance=provenance_from_env(self.env))
        store: MemoryStore = self._stores[key]
        return store

    @property
    def scope(self) -> str:
        """The ``--scope`` given (``memdir`` for a command that takes none)."""
        return self.args.scope if isinstance(self.args, ScopedArgs) else "memdir"

    @property
    def store(self) -> MemoryStore:
        """The store the command works on: its ``--scope`` (default the project's)."""
        agent = self.args.agent if isinstance(self.args, ScopedArgs) else None
        return self.store_for(self.scope, agent)

    def team(self) -> TeamLocation:
        """Where the team folder is, and which rule chose it."""
        from jupyter_memory.memdir.team import team_location

        team = getattr(self.project_store(), "team_location", None)
        return team if team is not None else team_location(self.location, self.env)

    @property
    def project_root(self) -> Path:
        return Path(self.location.project_root)

    def recall_mode(self) -> str:
        """The recall mode a memory's ``loaded`` is judged in: here the default, ``index``
        (a notebook's session has its own, ``%memory mode``)."""
        return "index"

    @property
    def session(self) -> Session:
        """The notebook's agent session: only the magic has one."""
        raise ConfigError(f"{self.subcommand} works on a notebook's agent session: run "
                          f"{self.command.spelling(MAGIC)} in a notebook.")

    # ------------------------------------------------------------------ after a change

    def changed(self, scope: str = "memdir") -> None:
        """The person changed memories: a notebook session shows it in its next request."""

    def reload(self, *, hooks: bool = False) -> None:
        """Settings, trust or the team folder changed: a notebook session reads them again."""


def _without_state(reason: str) -> str:
    """``on: the default`` → ``the default``: the state is said by the caller."""
    head, sep, rest = reason.partition(":")
    return rest.strip() if sep and head in ("on", "off") else reason

