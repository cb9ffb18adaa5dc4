"""``jupyter-memory``: the memdir from a terminal or a script.

Every subcommand takes ``--project DIR`` (default: the current folder) and ``--json``
for machine-readable output. Exit codes: 0 success, 1 not found or the doctor found
errors, 2 bad usage or bad input (the message goes to stderr, never a traceback).

A subcommand is one decorated function::

    @command("hello", "Say hello.", arg("--loud", action="store_true"))
    def _hello(ctx: Context) -> int:
        ctx.emit({"hello": True}, "HELLO" if ctx.args.loud else "hello")
        return 0
"""

from __future__ import annotations

import argparse
import json
import os
import re
import sys
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path
from typing import TYPE_CHECKING, Any, TextIO

from jupyter_memory._version import __version__
from jupyter_memory.errors import JupyterMemoryError, LockTimeout, MemoryExists, MemoryNotFound
from jupyter_memory.memdir import frontmatter
from jupyter_memory.memdir.freshness import age_text
from jupyter_memory.memdir.index import load_for_model, parse_index
from jupyter_memory.memdir.record import MEMORY_TYPES, Memory
from jupyter_memory.memdir.store import MemoryStore

if TYPE_CHECKING:
    from jupyter_memory.memdir.team import ScopedStore

__all__ = ["Context", "arg", "build_parser", "command", "main"]

EXIT_OK = 0
EXIT_FAILED = 1
EXIT_USAGE = 2


@dataclass(frozen=True)
class Argument:
    """The arguments of one ``add_argument`` call."""

    flags: tuple[str, ...]
    options: dict[str, Any]


def arg(*flags: str, **options: Any) -> Argument:
    """Describe an argument for :func:`command` exactly as for ``add_argument``."""
    return Argument(flags, options)


@dataclass(frozen=True)
class _Command:
    name: str
    help: str
    run: Callable[[Context], int]
    arguments: tuple[Argument, ...]


_COMMANDS: dict[str, _Command] = {}


def command(
    name: str, help: str, *arguments: Argument
) -> Callable[[Callable[[Context], int]], Callable[[Context], int]]:
    """Register a subcommand; ``--project`` and ``--json`` are added to every one."""

    def register(run: Callable[[Context], int]) -> Callable[[Context], int]:
        _COMMANDS[name] = _Command(name, help, run, arguments)
        return run

    return register


class UsageError(JupyterMemoryError):
    """Bad command-line input found after parsing (exit code 2)."""


@dataclass
class Context:
    """What a subcommand gets: its arguments, the environment and the output streams."""

    args: argparse.Namespace
    env: Mapping[str, str]
    stdin: TextIO
    stdout: TextIO
    stderr: TextIO

    @property
    def json(self) -> bool:
        return bool(getattr(self.args, "json", False))

    @property
    def project(self) -> Path | None:
        raw = getattr(self.args, "project", None)
        if raw is None:
            return None
        path = Path(raw).expanduser()
        if not path.is_dir():
            raise UsageError(f"--project {raw}: no such folder. Give the project's folder.")
        return path

    @cached_property
    def store(self) -> ScopedStore:
        from jupyter_memory.memdir.location import locate
        from jupyter_memory.memdir.team import open_store

        return open_store(locate(self.project, self.env), self.env)

    def out(self, text: str = "") -> None:
        self.stdout.write(text + "\n")

    def err(self, text: str) -> None:
        self.stderr.write(text + "\n")

    def emit(self, data: Any, text: str | None) -> None:
        """JSON when ``--json`` was given, else the human text (nothing when ``None``)."""
        if self.json:
            self.out(json.dumps(data, ensure_ascii=False, indent=2))
        elif text is not None:
            self.out(printable(text))


# --------------------------------------------------------------------------- parser


def build_parser() -> argparse.ArgumentParser:
    """The full parser, one subparser per registered command."""
    common = argparse.ArgumentParser(add_help=False)
    common.add_argument(
        "--project",
        metavar="DIR",
        help="the project folder whose memory to use (default: the current folder)",
    )
    common.add_argument("--json", action="store_true", help="print machine-readable JSON")
    parser = argparse.ArgumentParser(
        prog="jupyter-memory",
        description="Inspect and edit the long-term memory (memdir) of a project.",
        epilog="Environment: JUPYTER_MEMORY_DIR uses that memdir; CLAUDE_CONFIG_DIR sets the "
        "base folder (default ~/.claude).",
    )
    parser.add_argument("--version", action="version", version=f"%(prog)s {__version__}")
    subparsers = parser.add_subparsers(dest="command", metavar="COMMAND")
    subparsers.required = False  # _parse says which is missing or unknown, with the usage
    for cmd in _COMMANDS.values():
        sub = subparsers.add_parser(
            cmd.name, help=cmd.help.replace("%", "%%"), description=cmd.help, parents=[common]
        )
        for argument in cmd.arguments:
            sub.add_argument(*argument.flags, **argument.options)
        sub.set_defaults(_run=cmd.run)
    return parser


def main(
    argv: Sequence[str] | None = None,
    *,
    env: Mapping[str, str] | None = None,
    stdin: TextIO | None = None,
    stdout: TextIO | None = None,
    stderr: TextIO | None = None,
) -> int:
    """Run the command line; returns the exit code (0 ok, 1 not found/errors, 2 usage)."""
    out = stdout if stdout is not None else _tolerant(sys.stdout)
    err = stderr if stderr is not None else _tolerant(sys.stderr)
    parser = build_parser()
    try:
        args = _parse(parser, list(sys.argv[1:] if argv is None else argv), out, err)
    except _Exit as done:
        return done.code
    ctx = Context(args, os.environ if env is None else env, stdin or sys.stdin, out, err)
    try:
        return int(args._run(ctx))
    except MemoryNotFound as exc:
        ctx.err(f"jupyter-memory: {exc}")
        return EXIT_FAILED
    except MemoryExists as exc:
        ctx.err(f"jupyter-memory: {exc} (`jupyter-memory {args.command} --update` updates it.)")
        return EXIT_USAGE
    except LockTimeout as exc:
        ctx.err(f"jupyter-memory: {exc}")
        return EXIT_FAILED
    except JupyterMemoryError as exc:  # bad input: paths, secrets, settings, usage
        ctx.err(f"jupyter-memory: {exc}")
        return EXIT_USAGE
    except OSError as exc:
        where = f" ({exc.filename})" if exc.filename else ""
        ctx.err(f"jupyter-memory: {exc.strerror or exc}{where}")
        return EXIT_FAILED


class _Exit(Exception):
    def __init__(self, code: int) -> None:
        self.code = code


def _parse(
    parser: argparse.ArgumentParser, argv: list[str], out: TextIO, err: TextIO
) -> argparse.Namespace:
    """``parse_args`` that writes to our streams and never exits the interpreter."""
    saved = sys.stdout, sys.stderr
    sys.stdout, sys.stderr = out, err  # argparse prints help and errors to these
    try:
        args, extra = parser.parse_known_args(argv)
        if getattr(args, "command", None) is None:
            if extra:
                parser.error(f"unrecognized arguments: {' '.join(extra)} (a COMMAND comes first)")
            parser.error("a COMMAND is required; `jupyter-memory -h` lists them")
        if extra:
            # Name the bad flag with the usage of the command it was given to.
            sub = _subparser(parser, getattr(args, "command", None))
            sub.error(f"unrecognized arguments: {' '.join(extra)}")
        return args
    except SystemExit as exc:
        code = exc.code if isinstance(exc.code, int) else EXIT_USAGE
        raise _Exit(code) from None
    finally:
        sys.stdout, sys.stderr = saved


def _subparser(parser: argparse.ArgumentParser, name: str | None) -> argparse.ArgumentParser:
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction) and name in action.choices:
            sub: argparse.ArgumentParser = action.choices[name]
            return sub
    return parser


def _tolerant(stream: TextIO) -> TextIO:
    """Never fail on a character the terminal's encoding cannot show."""
    reconfigure = getattr(stream, "reconfigure", None)
    if reconfigure is not None:
        try:
            reconfigure(errors="backslashreplace")
        except (ValueError, OSError):
            pass
    return stream


# --------------------------------------------------------------------------- helpers

_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]")


def printable(text: str) -> str:
    """``text`` with control characters shown as escapes, so a memory cannot drive the
    terminal (colour codes, cursor moves, a fake prompt) when it is listed or shown."""
    return _CONTROL.sub(lambda m: repr(m.group())[1:-1], text)


def _table(memories: Sequence[Memory]) -> str:
    if not memories:
        return "(no memories)"
    width = min(max(len(m.file) for m in memories), 48)
    scoped = any(m.scope != "private" for m in memories)  # a column once team memories exist
    lines = []
    for m in memories:
        mark = " " if m.indexed else "!"
        kind = (m.type or "-")[:10]
        description = m.description or m.name
        scope = f"{m.scope:<7}  " if scoped else ""
        lines.append(
            f"{mark} {m.file:<{width}}  {kind:<9}  {scope}{age_text(m.age_days):<12}  {description}"
        )
    if any(not m.indexed for m in memories):
        lines.append("! = no line in MEMORY.md (run `jupyter-memory repair` to add them)")
    return "\n".join(lines)


def _print_messages(ctx: Context, messages: Sequence[str]) -> None:
    for message in messages:
        ctx.err(message)


# --------------------------------------------------------------------------- commands


@command("path", "Show where this project's memory lives and whether it is on.")
def _path(ctx: Context) -> int:
    store = ctx.store
    location = store.location
    assert location is not None
    ctx.emit(location.to_json(), str(store.memdir))
    if not ctx.json:
        ctx.err(f"project: {location.project_root}")
        ctx.err(f"chosen by: {location.memdir_reason or location.source}")
        ctx.err(f"auto memory: {location.enabled_reason}")
        for note in location.notes:
            ctx.err(f"note: {note}")
    return EXIT_OK


@command(
    "list",
    "List memories, newest first.",
    arg("--limit", type=int, default=None, help="show at most N memories"),
    arg("--type", choices=MEMORY_TYPES, help="only memories of this type"),
)
def _list(ctx: Context) -> int:
    memories = ctx.store.list()
    if ctx.args.type:
        memories = [m for m in memories if m.type == ctx.args.type]
    if ctx.args.limit is not None:
        if ctx.args.limit < 0:
            raise UsageError("--limit must be 0 or more.")
        memories = memories[: ctx.args.limit]
    ctx.emit([m.to_json() for m in memories], _table(memories))
    return EXIT_OK


@command(
    "show",
    "Print one memory (by name, file or file stem).",
    arg("name", metavar="NAME"),
)
def _show(ctx: Context) -> int:
    memory = ctx.store.get(ctx.args.name)
    text = ctx.store.read(memory.file)
    ctx.emit({**memory.to_json(), "text": text}, text.rstrip("\n"))
    if not ctx.json:
        ctx.err(f"{memory.path} ({age_text(memory.age_days)})")
    return EXIT_OK


@command(
    "add",
    "Save a new memory (body from --body or standard input).",
    arg("--name", required=True, help="short name, e.g. revenue-in-cents"),
    arg("--description", required=True, help="one line: what recall sees to pick it"),
    arg("--type", required=True, choices=MEMORY_TYPES, help="kind of memory"),
    arg("--body", help="the memory text (default: read standard input)"),
    arg("--file", help="file name in the memdir (default: <type>_<name>.md)"),
    arg("--hook", help="index line text (default: the description)"),
    arg("--update", action="store_true", help="update the memory if the file already exists"),
    arg("--scope", choices=("private", "team"), default="private",
        help="private (your memdir, the default) or team (the shared team folder)"),
)
def _add(ctx: Context) -> int:
    body = ctx.args.body
    if body is None:
        if ctx.stdin.isatty():
            raise UsageError("Give the memory text with --body TEXT or pipe it on standard input.")
        body = ctx.stdin.read()
    if not body.strip():
        raise UsageError("The memory text is empty; give it with --body or on standard input.")
    store = ctx.store
    result = store.create(
        ctx.args.name,
        ctx.args.description,
        ctx.args.type,
        body,
        file=ctx.args.file,
        hook=ctx.args.hook,
        provenance="user",
        exist_ok=ctx.args.update,
        scope=ctx.args.scope,
    )
    verb = "Saved" if result.created else "Updated"
    ctx.emit(result.to_json(), f"{verb} {store.resolve(result.file)}")
    _print_messages(ctx, result.messages)
    location = store.location
    if location is not None and not location.enabled:
        ctx.err(f"Note: auto memory is {location.enabled_reason}; the agent will not use it.")
    return EXIT_OK


@command(
    "forget",
    "Delete a memory and its index line.",
    arg("name", metavar="NAME"),
    arg("-f", "--force", action="store_true", help="do not ask for confirmation"),
)
def _forget(ctx: Context) -> int:
    store = ctx.store
    memory = _find_for_forget(store, ctx.args.name)
    if not ctx.args.force:
        if not ctx.stdin.isatty():
            raise UsageError(
                f"Refusing to delete {memory} without confirmation: add --force (-f) when "
                "running without a terminal."
            )
        ctx.stderr.write(f"Delete {store.memdir / memory}? [y/N] ")
        ctx.stderr.flush()
        if ctx.stdin.readline().strip().lower() not in ("y", "yes"):
            ctx.err("Nothing deleted.")
            return EXIT_OK
    result = store.forget(memory)
    what = "Deleted" if result.deleted else "Removed the index line for"
    ctx.emit(result.to_json(), f"{what} {memory}")
    _print_messages(ctx, result.messages)
    return EXIT_OK


def _find_for_forget(store: MemoryStore, key: str) -> str:
    try:
        return store.get(key).file
    except MemoryNotFound:
        if not key.endswith(".md"):
            raise
        # a pointer to a file that is gone can still be forgotten by its file name
        if parse_index(store.read_index()).find(store.normalize(key)) is not None:
            return store.normalize(key)
        raise


@command(
    "search",
    "Find memories whose name, description or text contains TEXT (any case).",
    arg("text", metavar="TEXT"),
)
def _search(ctx: Context) -> int:
    needle = ctx.args.text.casefold()
    if not needle.strip():
        raise UsageError("Give some text to search for.")
    hits = []
    for memory in ctx.store.list():
        text = ctx.store.read(memory.file)
        body = frontmatter.parse(text).body
        first_body_line = text[: len(text) - len(body)].count("\n") + 1 if body else 1
        fields = [
            f
            for f, value in (("name", memory.name), ("description", memory.description or ""))
            if needle in value.casefold()
        ]
        lines = [
            {"line": number, "text": line.strip()}
            for number, line in enumerate(body.splitlines(), start=first_body_line)
            if needle in line.casefold()
        ]
        if lines:
            fields.append("body")
        if fields:
            hits.append((memory, fields, lines))
    data = [
        {**memory.to_json(), "matched": fields, "lines": lines} for memory, fields, lines in hits
    ]
    rendered = []
    for memory, _fields, lines in hits:
        first = lines[0]["text"] if lines else memory.description or memory.name
        rendered.append(f"{memory.file}: {first}")
    ctx.emit(data, "\n".join(rendered) if rendered else f"No memory mentions {ctx.args.text!r}.")
    return EXIT_OK if hits else EXIT_FAILED


@command("doctor", "Check the memdir and the index for problems.")
def _doctor(ctx: Context) -> int:
    from jupyter_memory.memdir.doctor import doctor

    findings = doctor(ctx.store, env=ctx.env)
    errors = sum(1 for f in findings if f.severity == "error")
    data = {
        "memdir": str(ctx.store.memdir),
        "findings": [f.to_json() for f in findings],
        "errors": errors,
        "warnings": sum(1 for f in findings if f.severity == "warning"),
        "infos": sum(1 for f in findings if f.severity == "info"),
    }
    if findings:
        text = "\n".join(
            f"{f.severity:<7} {f.code}: {f.message}" + (" [fixable]" if f.fixable else "")
            for f in findings
        )
    else:
        text = f"No problems found in {ctx.store.memdir}."
    ctx.emit(data, text)
    return EXIT_FAILED if errors else EXIT_OK


@command(
    "repair",
    "Fix the index (pointers for orphan files, no dangling lines); optionally reattach "
    "the memories of a moved project.",
    arg("--reattach", metavar="MEMDIR", help="move the memories of this orphaned memdir here"),
)
def _repair(ctx: Context) -> int:
    from jupyter_memory.memdir.doctor import repair

    source = Path(ctx.args.reattach).expanduser() if ctx.args.reattach else None
    report = repair(ctx.store, reattach_from=source, env=ctx.env)
    ctx.emit(report.to_json(), report.summary())
    return EXIT_FAILED if any(f.severity == "error" for f in report.left) else EXIT_OK


@command(
    "cost",
    "What a saved notebook's model calls cost: calls and tokens by kind of call (main, "
    "selector, extraction, summaries, notes), priced; usage from the local scripted server "
    "is labelled simulated.",
    arg("notebook", metavar="NOTEBOOK.ipynb"),
)
def _cost(ctx: Context) -> int:
    from jupyter_memory.context.pricing import notebook_ledger, report

    path = Path(ctx.args.notebook).expanduser()
    ledger, note = notebook_ledger(path)
    rep = report(ledger, f"the turn records saved in {path.name}", note)
    if not rep.rows:
        ctx.emit(rep.to_json(), f"{path.name} has no agent turns in its saved outputs: "
                 "nothing was called, or the notebook was saved without outputs.")
        return EXIT_OK
    ctx.emit(rep.to_json(), rep.render_text())
    return EXIT_OK


@command("index", "Print MEMORY.md exactly as the model receives it (after the limits).")
def _index(ctx: Context) -> int:
    loaded = load_for_model(ctx.store.read_index())
    data = {"path": str(ctx.store.index_path), **loaded.to_json()}
    ctx.emit(data, loaded.text if loaded.text else None)
    if not ctx.json and not loaded.text:
        ctx.err(f"{ctx.store.index_path} is empty or missing.")
    return EXIT_OK


@command(
    "context",
    "Show the next request exactly as it would be sent, with its token breakdown.",
    arg("--raw", action="store_true", help="print the exact request body as JSON"),
    arg("--model", help="the model to budget for (default: $JUPYTER_MEMORY_MODEL)"),
    arg("--mode", choices=("index", "prefetch"), help="recall mode (default: index)"),
    arg("--count", action="store_true",
        help="ask the endpoint's count-tokens API for the exact size (needs a model)"),
    arg("--brief", action="store_true", help="only the totals and the categories, no detail"),
    arg("--agent", metavar="NAME",
        help="the request of the agent defined in .claude/agents/NAME.md"),
)
def _context(ctx: Context) -> int:
    from jupyter_memory.agent.session import AgentConfig, Session
    from jupyter_memory.context.assemble import render_text

    overrides: dict[str, Any] = {}
    if ctx.args.model:
        overrides["model"] = ctx.args.model
    if ctx.args.mode:
        overrides["recall_mode"] = ctx.args.mode
    config = AgentConfig.from_env(ctx.env, log_transcript=False, **overrides)
    session = Session(ctx.project or Path.cwd(), config=config, env=ctx.env)
    if ctx.args.agent:
        from jupyter_memory.agent.definitions import load_agent

        session = load_agent(session.project_root, ctx.args.agent, env=ctx.env).session(
            ctx.project or Path.cwd(), config=config, env=ctx.env)
    assembled = session.assemble()
    if ctx.args.raw:
        ctx.out(json.dumps(assembled.body, ensure_ascii=False, indent=2))
        return EXIT_OK
    counted = None
    if ctx.args.count:
        from jupyter_memory.context.tokens import count_tokens_remote

        counted = count_tokens_remote(session.client(), assembled.body)
    report = session.context_report(counted_tokens=counted)
    ctx.emit({**report.to_json(), "request": assembled.body},
             render_text(report, detail=not ctx.args.brief))
    return EXIT_OK


@command(
    "trust",
    "Let a folder's .claude/ hooks and settings take effect, or list and revoke trust.",
    arg("path", nargs="?", help="the folder to trust (default: the project of --project or "
        "the current folder)"),
    arg("--list", action="store_true", help="list the trusted folders"),
    arg("--revoke", action="store_true", help="stop trusting PATH"),
)
def _trust(ctx: Context) -> int:
    from jupyter_memory.memdir.trust import trust_command

    if ctx.args.list and ctx.args.revoke:
        raise UsageError("give either --list or --revoke, not both.")
    action = "list" if ctx.args.list else "revoke" if ctx.args.revoke else "trust"
    if ctx.args.path is not None:
        folder: Path = Path(ctx.args.path).expanduser()
        if not folder.is_dir():
            raise UsageError(f"{ctx.args.path}: no such folder. Give the folder to {action}.")
    else:
        folder = ctx.project or Path.cwd()
    data, text = trust_command(action, folder, ctx.env)
    ctx.emit(data, text)
    return EXIT_OK


def _register_session_commands() -> None:
    """``transcript`` and ``bundle`` live beside the session code they drive."""
    from jupyter_memory.cli.team import register_team_command
    from jupyter_memory.sessions.bundle import register_bundle_command
    from jupyter_memory.sessions.resume import register_transcript_command

    register_transcript_command(command, arg)
    register_bundle_command(command, arg)
    register_team_command(command, arg)


_register_session_commands()
