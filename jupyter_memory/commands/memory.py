"""The memory subcommands: ``jupyter-memory SUBCOMMAND`` and ``%memory SUBCOMMAND``.

Each one is declared once here, with the front ends that offer it: the shared ones
(``path``, ``list``, ``show``, ``forget``, ``search``, ``doctor``, ``repair``, ``export``,
``import``, ``trust``, ``team``) run the same function and print the same text in both;
``add`` is ``%%remember`` in a notebook (the memory text is the cell body there);
``index`` is the command line's; the ones that act on a notebook's running session
(``edit``, ``why``, ``mode``, ``on``, ``off``, ``undo``, ``pending``, ``extraction``) are
the magic's. Each declares its arguments as a dataclass (``ListArgs``...), so
``ctx.args`` is typed.
"""

from __future__ import annotations

import datetime as _dt
import difflib
import shutil
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from jupyter_memory.commands.base import (
    BOTH,
    CLI,
    EXIT_FAILED,
    EXIT_OK,
    EXIT_USAGE,
    MAGIC,
    CommandContext,
    CommandUsageError,
    CommonArgs,
    ScopedArgs,
    arg,
    command,
)
from jupyter_memory.errors import JupyterMemoryError, MemoryDisabled, MemoryNotFound
from jupyter_memory.memdir import frontmatter
from jupyter_memory.memdir.freshness import age_text
from jupyter_memory.memdir.index import load_for_model, parse_index
from jupyter_memory.memdir.record import MEMORY_TYPES, Memory

if TYPE_CHECKING:
    from jupyter_memory.agent.extraction import ExtractionHook
    from jupyter_memory.memdir.pending import PendingItem
    from jupyter_memory.memdir.store import MemoryStore

__all__ = ["RememberArgs", "extraction_status", "loaded_notes", "memory_table", "pending_diff",
           "pending_table"]

NAME_HELP = "a memory's name, its file (user_role.md, team/db.md) or the file's stem"
FORCE_FLAGS = ("-f", "--force", "-y", "--yes")

@dataclass(frozen=True, kw_only=True)
class NameArgs(ScopedArgs):
    name: str = arg(metavar="NAME", help=NAME_HELP)


# --------------------------------------------------------------------------- reading


@command("path", "Show where the memory lives, which rule chose it, and whether it is on.",
         ScopedArgs, fronts=BOTH)
def _path(ctx: CommandContext[ScopedArgs]) -> int:
    location = ctx.location
    enabled, reason = ctx.memory_state()
    scope = ctx.args.scope
    try:
        folder = ctx.store.memdir
    except MemoryDisabled:  # a session with memory off still says where it would be
        folder = Path(location.memdir)
    data = {**location.to_json(), "memdir": str(folder), "index": str(folder / "MEMORY.md"),
            "exists": folder.is_dir(), "enabled": enabled, "reason": location.enabled_reason,
            "scope": scope}
    ctx.emit(data, str(folder))
    if not ctx.json:
        ctx.note(f"project: {location.project_root}")
        if scope in ("memdir", "private"):
            chosen = location.memdir_reason or location.source
        elif scope == "team":
            chosen = f"--scope team: {ctx.team().reason}"
        else:
            chosen = f"--scope {scope} --agent {ctx.args.agent}"
        ctx.note(f"chosen by: {chosen}")
        ctx.note(f"memory {'on' if enabled else 'off'}: {reason}")
        for note in location.notes:
            ctx.note(f"note: {note}")
    return EXIT_OK


@dataclass(frozen=True, kw_only=True)
class ListArgs(ScopedArgs):
    type: str | None = arg("--type", choices=MEMORY_TYPES, help="only memories of this type")
    limit: int | None = arg("--limit", type=int, metavar="N", help="show at most N memories")
    manifest: bool = arg("--manifest", action="store_true",
                         help="one line per memory, as the recall selector and the "
                              "extraction agent are shown them: type, file, time, "
                              "description")
    mode: str | None = arg("--mode", choices=("index", "prefetch"),
                           help="judge whether each memory is loaded in this recall mode "
                                "(default: the session's in a notebook, index on the "
                                "command line)")


@command(
    "list",
    "List memories, newest first: type, name, description, age, size, whether the index "
    "points at it and whether the model receives that line, who wrote it, and the file.",
    ListArgs,
    fronts=BOTH,
)
def _list(ctx: CommandContext[ListArgs]) -> int:
    if ctx.args.limit is not None and ctx.args.limit < 0:
        raise CommandUsageError("--limit must be 0 or more.")
    memories = _memories(ctx, ctx.args.mode)
    if ctx.args.type:
        memories = [m for m in memories if m.type == ctx.args.type]
    if ctx.args.limit is not None:
        memories = memories[: ctx.args.limit]
    if ctx.args.manifest:
        from jupyter_memory.memdir.scan import manifest

        ctx.emit([m.to_json() for m in memories], manifest(memories))
    else:
        ctx.show([m.to_json() for m in memories], memory_table(memories, ctx))
    return EXIT_OK


def _recall_mode(ctx: CommandContext[Any], mode: str | None = None) -> str:
    """The recall mode ``loaded`` is judged in: ``mode`` when given; an agent's own memory
    is always loaded as an index (its system prompt carries it); else the context's."""
    if mode:
        return mode
    if ctx.args.scope in ("user", "project", "local"):
        return "index"
    return ctx.recall_mode()


def _memories(ctx: CommandContext[Any], mode: str | None = None) -> list[Memory]:
    """The memories of the subcommand's ``--scope``, named as everywhere else: a team
    memory's file starts with ``team/`` (conflict copies and held-back files are listed
    by ``team status`` instead); ``loaded`` judged in :func:`_recall_mode`."""
    if ctx.args.scope == "team":
        found = [m for m in ctx.project_store().list() if m.scope == "team"]
    else:
        found = ctx.store.list()
    judged = _recall_mode(ctx, mode)
    return [m.in_mode(judged) for m in found]


def _shown(ctx: CommandContext[Any], memory: Memory) -> Memory:
    """``memory`` named as people see it (``team/…`` under ``--scope team``), with
    ``loaded`` judged in the context's recall mode."""
    from jupyter_memory.memdir.team import as_team

    if ctx.args.scope == "team" and not memory.file.startswith("team/"):
        memory = as_team(memory)
    return memory.in_mode(_recall_mode(ctx))


@command("show", "Print one memory, whole (by name, file or file stem).", NameArgs,
         fronts=BOTH)
def _show(ctx: CommandContext[NameArgs]) -> int:
    store = ctx.store
    memory = store.get(ctx.args.name)
    text = store.read(memory.file)
    if not ctx.json:
        ctx.note(f"{memory.path} ({age_text(memory.age_days)})")
    ctx.emit({**_shown(ctx, memory).to_json(), "text": text}, text.rstrip("\n"))
    return EXIT_OK


@dataclass(frozen=True, kw_only=True)
class SearchArgs(ScopedArgs):
    text: list[str] = arg(metavar="TEXT", nargs="+",
                          help="the text to find (several words: one phrase)")


@command(
    "search",
    "Find memories whose name, description or text contains TEXT (any case); each hit "
    "shows the first place it matched.",
    SearchArgs,
    fronts=BOTH,
)
def _search(ctx: CommandContext[SearchArgs]) -> int:
    phrase = " ".join(ctx.args.text)
    needle = phrase.casefold()
    if not needle.strip():
        raise CommandUsageError("give some text to search for.")
    store = ctx.project_store() if ctx.args.scope == "team" else ctx.store
    hits = []
    for memory in _memories(ctx):
        text = store.read(memory.file)
        body = frontmatter.parse(text).body
        first_body_line = text[: len(text) - len(body)].count("\n") + 1 if body else 1
        fields = [
            (f, value)
            for f, value in (("name", memory.name), ("description", memory.description or ""))
            if needle in value.casefold()
        ]
        lines = [
            {"line": number, "text": line.strip()}
            for number, line in enumerate(body.splitlines(), start=first_body_line)
            if needle in line.casefold()
        ]
        if fields or lines:
            hits.append((memory, fields, lines))
    data = [
        {**memory.to_json(), "matched": [f for f, _ in fields] + (["body"] if lines else []),
         "lines": lines}
        for memory, fields, lines in hits
    ]
    rendered = []
    for memory, fields, lines in hits:
        first = fields[0][1] if fields else lines[0]["text"]
        rendered.append(f"{memory.file}: {first}")
    ctx.emit(data, "\n".join(rendered) if rendered else f"No memory mentions {phrase!r}.")
    return EXIT_OK if hits else EXIT_FAILED


@command("index", "Print MEMORY.md exactly as the model receives it (after the limits).",
         CommonArgs, fronts=(CLI,))
def _index(ctx: CommandContext[CommonArgs]) -> int:
    store = ctx.store
    loaded = load_for_model(store.read_index())
    data = {"path": str(store.index_path), **loaded.to_json()}
    ctx.emit(data, loaded.text if loaded.text else None)
    if not ctx.json and not loaded.text:
        ctx.note(f"{store.index_path} is empty or missing.")
    return EXIT_OK


# --------------------------------------------------------------------------- changing


@dataclass(frozen=True, kw_only=True)
class RememberArgs(ScopedArgs):
    """``jupyter-memory add`` and ``%%remember``: one command. The command line has no
    model to file a memory with, so it needs the three fields."""

    type: str | None = arg("--type", "-t", choices=MEMORY_TYPES, metavar="TYPE",
                           per_front={CLI: {"required": True}},
                           help="the kind of memory: user, feedback, project or reference")
    name: str | None = arg("--name", "-n", per_front={CLI: {"required": True}},
                           help="a short name, e.g. revenue-in-cents")
    description: str | None = arg(
        "--description", "-d", per_front={CLI: {"required": True}},
        help="one specific line: what the memory is about (what recall picks it by)")
    file: str | None = arg("--file", help="the file name in the memory folder (default: "
                                          "<type>_<name>.md)")
    body: str | None = arg("--body", fronts=(CLI,),
                           help="the memory text (default: read standard input)")
    hook: str | None = arg("--hook", fronts=(CLI,),
                           help="the index line's text (default: the description)")
    update: bool = arg("--update", action="store_true", fronts=(CLI,),
                       help="update the memory if the file already exists")
    offline: bool = arg("--offline", action="store_true", fronts=(MAGIC,),
                        help="do not ask the model: derive what is missing by fixed rules")


@command(
    "add",
    "Save a memory: the cell body in a notebook, --body or standard input on the command "
    "line.",
    RememberArgs,
    fronts=BOTH,
    magic="%%remember",
)
def _add(ctx: CommandContext[RememberArgs]) -> int:
    from jupyter_memory.agent.remember import remember_direct, remember_offline

    args = ctx.args
    body = ctx.read_body(args.body)
    store = ctx.store
    today = ctx.today()
    if args.name and args.description and args.type:
        result = remember_direct(store, body, name=args.name, description=args.description,
                                 type=args.type, file=args.file, hook=args.hook,
                                 exist_ok=args.update, today=today)
    elif args.offline:
        result = remember_offline(store, body, name=args.name, description=args.description,
                                  type=args.type, file=args.file, today=today)
    else:
        result = ctx.file_with_model(store, body, today=today, name=args.name,
                                     description=args.description, type=args.type,
                                     file=args.file)
    if result.saved:
        ctx.changed(args.scope)
    ctx.emit(result.to_json(), result.summary())
    location = getattr(store, "location", None)
    if location is not None and not location.enabled:
        ctx.note(f"Note: auto memory is {location.enabled_reason}; the agent will not use it.")
    return EXIT_OK


@dataclass(frozen=True, kw_only=True)
class ForgetArgs(ScopedArgs):
    name: str = arg(metavar="NAME", help=NAME_HELP)
    force: bool = arg(*FORCE_FLAGS, action="store_true", help="do not ask for confirmation")


@command("forget", "Delete a memory and its index line (asks first unless -f).", ForgetArgs,
         fronts=BOTH)
def _forget(ctx: CommandContext[ForgetArgs]) -> int:
    store = ctx.store
    file = _find_for_forget(store, ctx.args.name)
    if not ctx.args.force:
        try:
            description = store.get(file).description or "no description"
        except MemoryNotFound:
            description = "only its index line is left"
        answer = ctx.confirm(f"Forget {file} ({description})? [y/N] ")
        if answer is None:
            ctx.note("Not deleted: nobody could confirm. Add -f (--force) to skip the question.")
            return EXIT_USAGE
        if not answer:
            ctx.note("Kept. Nothing deleted.")
            return EXIT_OK
    result = store.forget(file)
    ctx.changed(ctx.args.scope)
    what = ("Deleted the file and its index line." if result.deleted
            else "Removed its index line (the file was already gone).")
    ctx.emit(result.to_json(), f"Forgot {file}. {what}")
    for message in result.messages:
        ctx.note(message)
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


@command("doctor", "Check the memdir and the index for problems.", ScopedArgs, fronts=BOTH)
def _doctor(ctx: CommandContext[ScopedArgs]) -> int:
    from jupyter_memory.memdir.doctor import doctor

    store = ctx.store
    findings = doctor(store, env=ctx.env)
    errors = sum(1 for f in findings if f.severity == "error")
    data = {
        "memdir": str(store.memdir),
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
        text = f"No problems found in {store.memdir}."
    ctx.emit(data, text)
    return EXIT_FAILED if errors else EXIT_OK


@dataclass(frozen=True, kw_only=True)
class RepairArgs(ScopedArgs):
    reattach: str | None = arg("--reattach", metavar="MEMDIR",
                               help="move the memories of this orphaned memdir here")


@command(
    "repair",
    "Fix the index (pointers for orphan files, no dangling lines); optionally reattach "
    "the memories of a moved project.",
    RepairArgs,
    fronts=BOTH,
)
def _repair(ctx: CommandContext[RepairArgs]) -> int:
    from jupyter_memory.memdir.doctor import repair

    source = Path(ctx.args.reattach).expanduser() if ctx.args.reattach else None
    report = repair(ctx.store, reattach_from=source, env=ctx.env)
    ctx.changed(ctx.args.scope)
    ctx.emit(report.to_json(), report.summary())
    return EXIT_FAILED if any(f.severity == "error" for f in report.left) else EXIT_OK


@dataclass(frozen=True, kw_only=True)
class ExportArgs(ScopedArgs):
    file: str | None = arg(metavar="FILE.zip", nargs="?", help="the zip to write")
    force: bool = arg(*FORCE_FLAGS, action="store_true", help="replace the zip if it exists")


@command(
    "export",
    "Write the memdir as a zip, to share (default: memory-export-DATE.zip here).",
    ExportArgs,
    fronts=BOTH,
)
def _export(ctx: CommandContext[ExportArgs]) -> int:
    from jupyter_memory.memdir.archive import export_memdir

    store = ctx.store
    if ctx.args.file:
        dest = Path(ctx.args.file).expanduser()
    else:
        dest = Path(f"memory-export-{_dt.date.today().isoformat()}.zip")
    report = export_memdir(store.memdir, dest.resolve(), overwrite=ctx.args.force)
    ctx.emit(report.to_json(), report.summary())
    return EXIT_OK


@dataclass(frozen=True, kw_only=True)
class ImportArgs(ScopedArgs):
    file: str = arg(metavar="FILE.zip", help="a zip written by export")
    overwrite: bool = arg("--overwrite", action="store_true", help="replace files that differ")


@command(
    "import",
    "Unpack an export into the memdir (new files added, identical ones skipped, "
    "differing ones kept unless --overwrite).",
    ImportArgs,
    fronts=BOTH,
)
def _import(ctx: CommandContext[ImportArgs]) -> int:
    from jupyter_memory.memdir.archive import import_archive

    report = import_archive(ctx.store, Path(ctx.args.file).expanduser(),
                            overwrite=ctx.args.overwrite)
    ctx.changed(ctx.args.scope)
    ctx.emit(report.to_json(), report.summary())
    return EXIT_OK


@dataclass(frozen=True, kw_only=True)
class TrustArgs(CommonArgs):
    path: list[str] = arg(metavar="PATH", nargs="*",
                          help="the folder to trust or revoke (default: the project)")
    list: bool = arg("--list", action="store_true", help="list the trusted folders")
    revoke: bool = arg("--revoke", action="store_true", help="stop trusting PATH")


@command(
    "trust",
    "Let a folder's .claude/ hooks and settings take effect, or list and revoke trust.",
    TrustArgs,
    fronts=BOTH,
)
def _trust(ctx: CommandContext[TrustArgs]) -> int:
    from jupyter_memory.memdir.trust import trust_command

    shape = (f"use {ctx.cmd('trust [PATH]')}, {ctx.cmd('trust --list')} or "
             f"{ctx.cmd('trust --revoke [PATH]')}.")
    if ctx.args.list and ctx.args.revoke:
        raise CommandUsageError(f"give either --list or --revoke, not both: {shape}")
    if len(ctx.args.path) > 1:
        raise CommandUsageError(f"give one folder: {shape}")
    action = "list" if ctx.args.list else "revoke" if ctx.args.revoke else "trust"
    if ctx.args.path:
        folder: Path = Path(ctx.args.path[0]).expanduser()
        if not folder.is_dir():
            raise CommandUsageError(
                f"{ctx.args.path[0]}: no such folder. Give the folder to {action}.")
    else:
        folder = ctx.project_root
    data, text = trust_command(action, folder, ctx.env)
    if action != "list":
        ctx.reload(hooks=True)  # settings, memdir and imports as the new trust allows
    ctx.emit(data, text)
    return EXIT_OK


@dataclass(frozen=True, kw_only=True)
class TeamArgs(CommonArgs):
    action: str = arg(nargs="?", default="status", choices=("path", "clone", "status", "sync"),
                      help="path: where the team folder is; clone URL: share it through that "
                           "git repository; status: how it is shared and what is not synced "
                           "yet; sync: check, commit, pull, merge the index, push")
    url: str | None = arg(nargs="?", help="for clone: the address of the team's shared "
                                          "repository")


@command(
    "team",
    "Share team memory through git: path, clone URL, status (the default), sync.",
    TeamArgs,
    fronts=BOTH,
)
def _team(ctx: CommandContext[TeamArgs]) -> int:
    from jupyter_memory.memdir.team import clone, status, sync

    ctx.project_store()  # the magic refuses here when memory is off for the session
    team = ctx.team()
    for note in team.notes:  # a project's setting that was not obeyed, and why
        ctx.note(note)
    action = ctx.args.action
    if action != "clone" and ctx.args.url:
        raise CommandUsageError(f"`team {action}` takes no URL; only `team clone URL` does.")
    if action == "path":
        ctx.emit(team.to_json(), str(team.folder))
        if not ctx.json:
            ctx.note(f"chosen by: {team.reason}")
        return EXIT_OK
    if action == "status":
        state = status(team.folder, ctx.env)
        ctx.emit(state.to_json(), state.text())
        return EXIT_OK
    if action == "clone":
        if not ctx.args.url:
            raise CommandUsageError("give the address of the team's repository: "
                                    f"{ctx.cmd('team clone URL')}")
        text = clone(ctx.args.url, team.folder, ctx.env)
        ctx.reload()  # the team folder has just appeared
        ctx.emit({"folder": str(team.folder), "url": ctx.args.url}, text)
        return EXIT_OK
    report = sync(team.folder, ctx.env)
    ctx.reload()  # the sync may have brought memories and a new index
    ctx.emit(report.to_json(), report.text())
    return EXIT_OK if report.ok else EXIT_FAILED


# --------------------------------------------------------------------------- the session's


@command("edit", "Open a memory's file (JupyterLab opens it; elsewhere its path is shown).",
         NameArgs, fronts=(MAGIC,))
def _edit(ctx: CommandContext[NameArgs]) -> int:
    memory = ctx.store.get(ctx.args.name)
    ctx.offer_file(memory.path, memory.file)
    return EXIT_OK


@command("why", "Why each memory is or is not in the next request.", CommonArgs,
         fronts=(MAGIC,))
def _why(ctx: CommandContext[CommonArgs]) -> int:
    from jupyter_memory.recall.explain import explain, render_explain

    decisions = explain(ctx.session)
    width = shutil.get_terminal_size((120, 24)).columns
    ctx.emit(decisions, render_explain(decisions, width=width))
    return EXIT_OK


@dataclass(frozen=True, kw_only=True)
class ModeArgs(CommonArgs):
    mode: str | None = arg(nargs="?", choices=("index", "prefetch"),
                           help="index: the index in every request; prefetch: pick memories "
                                "per message")


@command("mode", "Show or set how memories are recalled in this session.", ModeArgs,
         fronts=(MAGIC,))
def _mode(ctx: CommandContext[ModeArgs]) -> int:
    session = ctx.session
    if ctx.args.mode is None:
        ctx.emit({"recall_mode": session.recall_mode}, f"recall mode: {session.recall_mode}")
        return EXIT_OK
    session.recall_override = ctx.args.mode
    ctx.emit({"recall_mode": ctx.args.mode}, f"recall mode for this session: {ctx.args.mode}")
    return EXIT_OK


@command("on", "Switch memory on for this session.", CommonArgs, fronts=(MAGIC,))
def _on(ctx: CommandContext[CommonArgs]) -> int:
    session = ctx.session
    session.memory.enabled_override = True
    session.reset_tools()
    where = session.location.memdir
    ctx.emit({"enabled": True, "memdir": str(where)}, f"Memory on for this session: {where}")
    return EXIT_OK


@command("off", "Switch memory off for this session: no index, no recall, no memory writes.",
         CommonArgs, fronts=(MAGIC,))
def _off(ctx: CommandContext[CommonArgs]) -> int:
    session = ctx.session
    session.memory.enabled_override = False
    session.reset_tools()
    ctx.emit({"enabled": False},
             "Memory off for this session: no index, no recall, no memory writes.")
    return EXIT_OK


def _hook(ctx: CommandContext[Any]) -> ExtractionHook:
    extraction: ExtractionHook = ctx.session.extraction
    return extraction


@dataclass(frozen=True, kw_only=True)
class UndoArgs(CommonArgs):
    run: str | None = arg(metavar="RUN", nargs="?",
                          help="the run's number, as the notice shows it")


@command("undo", "Take back what an extraction run saved (default: the latest that saved).",
         UndoArgs, fronts=(MAGIC,))
def _undo(ctx: CommandContext[UndoArgs]) -> int:
    hook = _hook(ctx)
    run_id = None
    if ctx.args.run is not None:
        try:
            run_id = int(ctx.args.run)
        except ValueError:
            raise CommandUsageError(
                f"{ctx.args.run!r} is not a run number; use {ctx.cmd('undo 3')}.") from None
    report = hook.undo(run_id)
    ctx.changed()
    ctx.emit({"run": report.run, "removed": report.removed, "restored": report.restored,
              "kept": report.kept, "index_restored": report.index_restored}, report.summary())
    return EXIT_OK


EXTRACTION_WAIT_SECONDS = 120
"""How long ``extraction wait`` waits for a run (a scripted run takes well under a second)."""


@dataclass(frozen=True, kw_only=True)
class ExtractionArgs(CommonArgs):
    action: str = arg(nargs="?", default="status",
                      choices=("status", "wait", "on", "off", "every", "approval", "reset"),
                      help="what to do (default: show the state, counters and recent runs; "
                           "wait: the same once the run under way has finished)")
    value: str | None = arg(nargs="?", help="every: N, a whole number ≥ 1; approval: on or off")


@command(
    "extraction",
    "Show or change the background extraction agent: on, off, every N, approval on|off, "
    "reset; wait: until the run under way has finished.",
    ExtractionArgs,
    fronts=(MAGIC,),
)
def _extraction(ctx: CommandContext[ExtractionArgs]) -> int:
    action, value = ctx.args.action, ctx.args.value
    if action in ("status", "wait", "on", "off", "reset") and value is not None:
        raise CommandUsageError(f"`extraction {action}` takes no value.")
    if action == "on":
        hook = _hook(ctx)
        hook.enabled_override = True
        hook.reset()
        ctx.emit({"enabled": True, "every": hook.every},
                 f"Extraction on: after each turn that ends without a tool call "
                 f"(every {hook.every} such turn(s)).")
        return EXIT_OK
    hook = _hook(ctx)
    if action == "off":
        hook.enabled_override = False
        ctx.emit({"enabled": False}, "Extraction off for this session.")
    elif action == "every":
        try:
            every = int(value or "")
            if every < 1:
                raise ValueError
        except ValueError:
            raise CommandUsageError(
                f"give a whole number ≥ 1: {ctx.cmd('extraction every 2')}") from None
        hook.every_override = every
        ctx.emit({"every": every}, f"Extraction runs every {every} eligible turn(s).")
    elif action == "approval":
        if value not in ("on", "off"):
            raise CommandUsageError(f"use {ctx.cmd('extraction approval on|off')}")
        hook.approval_override = value == "on"
        ctx.emit({"approval_mode": value == "on"}, "Approval mode " + (
            f"on: extracted memories wait in {ctx.cmd('pending')}." if value == "on"
            else "off: extracted memories are saved."))
    elif action == "reset":
        hook.reset()
        ctx.emit({"broken": False},
                 "Extraction failure count reset; the circuit breaker is closed.")
    else:
        if action == "wait" and not hook.wait(EXTRACTION_WAIT_SECONDS):
            raise JupyterMemoryError(
                f"The extraction run still runs after {EXTRACTION_WAIT_SECONDS} s: run "
                f"{ctx.cmd('extraction wait')} again, or {ctx.cmd('extraction off')}.")
        status = hook.status()
        ctx.emit(status, extraction_status(status, ctx))
    return EXIT_OK


@dataclass(frozen=True, kw_only=True)
class PendingArgs(CommonArgs):
    action: str = arg(nargs="?", default="list",
                      choices=("list", "show", "edit", "accept", "discard"),
                      help="what to do (default: list them)")
    id: str | None = arg(metavar="ID", nargs="?",
                         help="the item's id (or a unique prefix), or all")
    force: bool = arg(*FORCE_FLAGS, action="store_true",
                      help="accept even over a memory that changed after the item was "
                           "proposed")


@command(
    "pending",
    "Memories the extraction agent proposed in approval mode: list, show, edit, accept, "
    "discard.",
    PendingArgs,
    fronts=(MAGIC,),
)
def _pending(ctx: CommandContext[PendingArgs]) -> int:
    from jupyter_memory.memdir.pending import PendingArea

    store = ctx.store_for("memdir")
    area = PendingArea(store.memdir)
    action, target = ctx.args.action, ctx.args.id
    if action == "list":
        items = area.list()
        ctx.emit([i.to_json() for i in items], pending_table(items, ctx))
        return EXIT_OK
    if target is None:
        raise CommandUsageError(f"name the item: {ctx.cmd(f'pending {action} ID')} (or all)")
    chosen = area.list() if target == "all" else [area.get(target)]
    if action == "show":
        ctx.emit([i.to_json() for i in chosen],
                 "\n".join(pending_diff(item, store) for item in chosen))
    elif action == "edit":
        for item in chosen:
            ctx.offer_file(item.path, f"pending {item.id} ({item.file})")
        ctx.note(f"Accept the edited text with {ctx.cmd('pending accept ID')}.")
    elif action == "accept":
        lines = []
        for item in chosen:
            area.accept(item.id, store, force=ctx.args.force)
            lines.append(f"Accepted {item.id}: saved {item.file}.")
        ctx.changed()
        ctx.emit({"accepted": [i.id for i in chosen]}, "\n".join(lines))
    else:
        lines = []
        for item in chosen:
            area.discard(item.id)
            lines.append(f"Discarded {item.id} ({item.file}).")
        ctx.emit({"discarded": [i.id for i in chosen]}, "\n".join(lines))
    return EXIT_OK


# --------------------------------------------------------------------------- rendering


def memory_table(memories: Sequence[Memory], ctx: CommandContext[Any] | None = None) -> str:
    """A fixed-width table: type, name, description, age, size, indexed, written by, the
    author once any memory names one, the scope once any memory is a team one, and the
    file."""
    if not memories:
        return "No memories yet."
    # The scope column appears once the project has team memories (docs/reference.md#team-mode), the author
    # column once a memory names who wrote it (every team write does).
    scoped = any(m.scope != "private" for m in memories)
    authored = any(m.author for m in memories)
    rows = [("type", "name", "description", "age", "bytes", "indexed", "loaded", "by")
            + (("author",) if authored else ()) + (("scope",) if scoped else ()) + ("file",)]
    for m in memories:
        desc = " ".join((m.description or "").split())
        rows.append((m.type or "-", m.name, desc if len(desc) <= 60 else desc[:59] + "…",
                     age_text(m.age_days), str(m.bytes), "yes" if m.indexed else "NO",
                     "yes" if m.loaded else "NO", m.provenance or "?")
                    + ((m.author or "-",) if authored else ())
                    + ((m.scope,) if scoped else ()) + (m.file,))
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    lines = ["  ".join(c.ljust(w) for c, w in zip(r, widths, strict=True)).rstrip() for r in rows]
    lines.extend(loaded_notes(memories, ctx.cmd("repair") if ctx is not None else "repair"))
    return "\n".join(lines)


def loaded_notes(memories: Sequence[Memory], repair: str = "repair") -> list[str]:
    """What the ``indexed`` and ``loaded`` columns' NO mean for these memories, one line
    each (none when every memory is indexed and loaded)."""
    notes = []
    if any(not m.indexed for m in memories):
        notes.append(f"indexed NO: MEMORY.md has no line for it, so index recall never shows "
                     f"it; {repair} adds one.")
    cut = [m for m in memories if m.indexed and not m.loaded and m.recall_mode == "index"]
    if cut:
        notes.append(f"loaded NO: {len(cut):,} pointer line{'s are' if len(cut) != 1 else ' is'}"
                     f" past the limit of what the model receives (the first was "
                     f"{cut[0].file}: {cut[0].loaded_reason}); shorten the index.")
    if any(m.recall_mode != "index" for m in memories):
        notes.append(f"loaded NO: {memories[0].in_mode('prefetch').loaded_reason}.")
    return notes


def pending_table(items: Sequence[PendingItem], ctx: CommandContext[Any]) -> str:
    """The pending area as a table: id, file, new or update, description."""
    if not items:
        return "No memories are waiting for approval."
    rows = [("id", "file", "change", "description")]
    for item in items:
        desc = item.description()
        rows.append((item.id, item.file, "new" if item.is_new else "update",
                     desc if len(desc) <= 60 else desc[:59] + "…"))
    widths = [max(len(r[i]) for r in rows) for i in range(4)]
    lines = ["  ".join(c.ljust(w) for c, w in zip(r, widths, strict=True)).rstrip() for r in rows]
    lines.append(f"\nAccept: {ctx.cmd('pending accept ID|all')}   Discard: "
                 f"{ctx.cmd('pending discard ID|all')}   Edit first: {ctx.cmd('pending edit ID')}")
    return "\n".join(lines)


def pending_diff(item: PendingItem, store: MemoryStore) -> str:
    """A pending item's text, or for an update the difference from the current memory."""
    proposed = item.text()
    path = store.memdir / item.file
    if not path.is_file():
        return f"{item.id}: new memory {item.file}\n\n{proposed}"
    current = store.root.read(path).decode("utf-8", errors="replace")
    diff = "".join(difflib.unified_diff(current.splitlines(keepends=True),
                                        proposed.splitlines(keepends=True),
                                        f"{item.file} (now)", f"{item.file} (proposed)"))
    return f"{item.id}: update of {item.file}\n\n{diff or '(no difference)'}"


def extraction_status(status: dict[str, Any], ctx: CommandContext[Any]) -> str:
    """``extraction`` as lines for people."""
    state = "on" if status["enabled"] else "off"
    if status["broken"]:
        state = f"stopped by the circuit breaker ({ctx.cmd('extraction on')} restarts it)"
    lines = [
        f"Extraction: {state}; every {status['every']} eligible turn(s); approval mode "
        f"{'on' if status['approval_mode'] else 'off'}.",
        f"Runs {status['runs']}, skipped (main agent wrote memory) {status['skipped']}, "
        f"throttled {status['throttled']}, stashed {status['stashed']}, failed "
        f"{status['failed']} ({status['failures_in_a_row']} in a row)."
        + (" A run is under way." if status["running"] else ""),
    ]
    for run in status["recent"]:
        files = ", ".join(run["files"]) or "-"
        extra = f" — {run['error']}" if run["error"] else ""
        undone = " (undone)" if run["undone"] else ""
        lines.append(f"  run {run['id']}: {run['status']}{undone}, {run['calls']} call(s), "
                     f"files: {files}{extra}")
    return "\n".join(lines)
