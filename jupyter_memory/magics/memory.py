"""``%memory`` (browse and manage memories) and ``%%remember`` (store one).

Every change goes through :class:`~jupyter_memory.memdir.store.MemoryStore` (or the pending
area and the archive module, which use its lock), so the index stays consistent. After a
change the person made, the session's context snapshot is refreshed so the next request
shows it.
"""

from __future__ import annotations

import datetime as _dt
import difflib
import json
import os
import shlex
import shutil
from pathlib import Path
from typing import Any

from IPython.core.magic import Magics, cell_magic, line_magic, magics_class
from IPython.core.magic_arguments import argument, magic_arguments
from IPython.display import display

from jupyter_memory.agent.remember import DEFAULT_AGENT, SCOPES, scope_store
from jupyter_memory.errors import JupyterMemoryError
from jupyter_memory.memdir.record import MEMORY_TYPES

SUBCOMMANDS = (
    "list", "show", "edit", "forget", "search", "doctor", "repair", "mode", "on", "off",
    "path", "export", "import", "why", "undo", "pending", "extraction",
)
OPEN_MIME = "application/vnd.jupyter-memory.open+json"
"""Asks the JupyterLab extension to open a file; other front ends show the path."""

_FLAGS = {"--json": "json", "-f": "force", "--force": "force", "--overwrite": "overwrite",
          "-y": "force", "--yes": "force"}
_OPTIONS = {"--scope": "scope", "--agent": "agent"}


class _Args:
    """The words of a ``%memory`` line split into subcommand, arguments and options."""

    def __init__(self, line: str) -> None:
        words = shlex.split(line)
        self.flags: set[str] = set()
        self.options: dict[str, str] = {"scope": "memdir", "agent": DEFAULT_AGENT}
        rest: list[str] = []
        i = 0
        while i < len(words):
            word = words[i]
            if word in _FLAGS:
                self.flags.add(_FLAGS[word])
            elif word in _OPTIONS or word.split("=", 1)[0] in _OPTIONS:
                key, _, value = word.partition("=")
                if not value:
                    i += 1
                    if i >= len(words):
                        raise JupyterMemoryError(f"{key} needs a value.")
                    value = words[i]
                self.options[_OPTIONS[key]] = value
            else:
                rest.append(word)
            i += 1
        self.sub = rest[0] if rest else "list"
        self.browse = not rest  # a bare `%memory` opens the browser widget
        self.rest = rest[1:]
        if self.options["scope"] not in SCOPES:
            raise JupyterMemoryError(
                f"unknown scope {self.options['scope']!r}; use one of {', '.join(SCOPES)}.")

    @property
    def json(self) -> bool:
        return "json" in self.flags

    @property
    def force(self) -> bool:
        return "force" in self.flags


def _print_json(data: Any) -> None:
    print(json.dumps(data, indent=2, ensure_ascii=False))


@magics_class
class MemoryMagics(Magics):
    def __init__(self, shell: Any = None, agent: Any = None, **kwargs: Any) -> None:
        super().__init__(shell=shell, **kwargs)
        self.agent = agent

    # ------------------------------------------------------------------ %memory

    @line_magic
    def memory(self, line: str = "") -> None:
        """Browse and manage the project's memories.

        Usage::

            %memory                       # the memory browser (widget with an HTML fallback)
            %memory list                  # table: type, name, description, age, size, indexed
            %memory show NAME             # one memory, whole
            %memory edit NAME             # open the file (JupyterLab) or print its path
            %memory search TEXT           # memories whose name, description or body match
            %memory forget NAME [-f]      # delete a memory and its index line (asks first)
            %memory doctor | repair       # check the memdir / fix what is safe to fix
            %memory why                   # why each memory is or is not in the next request
            %memory mode [index|prefetch] # how memories are recalled this session
            %memory on | off              # switch memory for this session
            %memory path                  # where the memdir is, and why
            %memory export [FILE.zip] [-f]          # the memdir as a zip, to share
            %memory import FILE.zip [--overwrite]   # unpack an export into the memdir
            %memory undo [RUN]            # take back what an extraction run saved
            %memory pending [show|accept|discard|edit ID|all] [-f]   # approval mode
            %memory extraction [on|off|every N|approval on|off|reset] # background saving

        ``--json`` gives machine-readable output for list, show, search, doctor, why,
        path, pending and extraction. ``--scope user|project|local --agent NAME`` works on
        an agent's own memory instead of the project's (list, show, edit, search, forget,
        doctor, path, export, import).
        """
        try:
            args = _Args(line)
        except (ValueError, JupyterMemoryError) as exc:
            print(f"%memory: could not read the arguments ({exc}).")
            return
        if args.sub not in SUBCOMMANDS:
            print(f"%memory: unknown subcommand {args.sub!r}. Use one of: "
                  f"{', '.join(SUBCOMMANDS)}.")
            return
        try:
            getattr(self, f"_memory_{args.sub}")(args)
        except JupyterMemoryError as exc:
            print(f"%memory {args.sub}: {exc}")

    # ------------------------------------------------------------------ helpers

    def _session(self) -> Any:
        return self.agent.session()

    def _store(self, args: _Args | None = None) -> Any:
        scope = args.options["scope"] if args else "memdir"
        agent = args.options["agent"] if args else DEFAULT_AGENT
        return scope_store(self._session(), scope, agent)

    def _changed(self, args: _Args | None = None) -> None:
        """The person changed the project memdir: the next request should show it."""
        if args is None or args.options["scope"] == "memdir":
            self._session().refresh_context()

    def _hook(self, *, create: bool = False) -> Any:
        from jupyter_memory.agent.extraction import hook_for, install

        session = self._session()
        hook = hook_for(session)
        if hook is None and create:
            hook = install(session)
        return hook

    # ------------------------------------------------------------------ browsing

    def _memory_list(self, args: _Args) -> None:
        if args.browse and not args.json and args.options["scope"] == "memdir":
            from jupyter_memory.widgets import show_memories

            show_memories(self._session())
            return
        memories = self._store(args).list()
        if args.json:
            _print_json([m.to_json() for m in memories])
            return
        display({"text/plain": memory_table(memories)}, raw=True)

    def _memory_show(self, args: _Args) -> None:
        if not args.rest:
            raise JupyterMemoryError("name the memory to show: %memory show NAME")
        store = self._store(args)
        memory = store.get(args.rest[0])
        if args.json:
            data = memory.to_json()
            data["text"] = store.read(memory.file)
            _print_json(data)
            return
        print(f"{memory.path}\n")
        print(store.read(memory.file))

    def _memory_edit(self, args: _Args) -> None:
        if not args.rest:
            raise JupyterMemoryError("name the memory to edit: %memory edit NAME")
        memory = self._store(args).get(args.rest[0])
        show_file(memory.path, memory.file)

    def _memory_path(self, args: _Args) -> None:
        session = self._session()
        loc = session.location
        store = self._store(args) if session.store is not None else None
        folder = store.memdir if store is not None else loc.memdir
        data = {"memdir": str(folder), "project_root": str(loc.project_root),
                "enabled": session.memory_enabled, "reason": loc.enabled_reason,
                "source": loc.source, "scope": args.options["scope"]}
        if args.json:
            _print_json(data)
            return
        print(f"{folder}\n(project {loc.project_root}; memory "
              f"{'on' if session.memory_enabled else 'off'}: {loc.enabled_reason})")

    def _memory_search(self, args: _Args) -> None:
        if not args.rest:
            raise JupyterMemoryError("say what to search for: %memory search TEXT")
        needle = " ".join(args.rest).lower()
        store = self._store(args)
        hits = [m for m in store.list(limit=None)
                if needle in f"{m.name}\n{m.description}\n{store.read(m.file)}".lower()]
        if args.json:
            _print_json([m.to_json() for m in hits])
            return
        print(memory_table(hits) if hits else f"No memory mentions {needle!r}.")

    def _memory_why(self, args: _Args) -> None:
        from jupyter_memory.recall.explain import explain, render_explain

        decisions = explain(self._session())
        if args.json:
            _print_json(decisions)
            return
        width = shutil.get_terminal_size((120, 24)).columns
        print(render_explain(decisions, width=width))

    # ------------------------------------------------------------------ changing

    def _memory_forget(self, args: _Args) -> None:
        if not args.rest:
            raise JupyterMemoryError("name the memory to forget: %memory forget NAME [-f]")
        store = self._store(args)
        memory = store.get(args.rest[0])
        if not args.force and not _confirm(
                f"Forget {memory.file} ({memory.description or 'no description'})? [y/N] "):
            return
        store.forget(memory.file)
        self._changed(args)
        print(f"Forgot {memory.file}.")

    def _memory_doctor(self, args: _Args) -> None:
        from jupyter_memory.memdir.doctor import doctor

        findings = doctor(self._store(args), env=self._session().env)
        if args.json:
            _print_json([f.to_json() for f in findings])
            return
        if not findings:
            print("No problems found.")
        for f in findings:
            print(f"[{f.severity}] {f.file or ''} {f.message}".replace("  ", " "))

    def _memory_repair(self, args: _Args) -> None:
        from jupyter_memory.memdir.doctor import repair

        result = repair(self._store(args), env=self._session().env)
        self._changed(args)
        if args.json:
            _print_json(result.to_json())
            return
        print(result.summary())

    def _memory_mode(self, args: _Args) -> None:
        session = self._session()
        if not args.rest:
            print(f"recall mode: {session.recall_mode}")
            return
        if args.rest[0] not in ("index", "prefetch"):
            raise JupyterMemoryError("the mode is 'index' or 'prefetch'.")
        session.recall_override = args.rest[0]
        print(f"recall mode for this session: {args.rest[0]}")

    def _memory_on(self, args: _Args) -> None:
        session = self._session()
        session.memory_override = True
        session.reset_tools()
        print(f"Memory on for this session: {session.location.memdir}")

    def _memory_off(self, args: _Args) -> None:
        session = self._session()
        session.memory_override = False
        session.reset_tools()
        print("Memory off for this session: no index, no recall, no memory writes.")

    # ------------------------------------------------------------------ export / import

    def _memory_export(self, args: _Args) -> None:
        from jupyter_memory.memdir.archive import export_memdir

        store = self._store(args)
        if args.rest:
            dest = Path(os.path.expanduser(args.rest[0]))
        else:
            dest = Path(f"memory-export-{_dt.date.today().isoformat()}.zip")
        report = export_memdir(store.memdir, dest.resolve(), overwrite=args.force)
        if args.json:
            _print_json(report.to_json())
            return
        print(report.summary())

    def _memory_import(self, args: _Args) -> None:
        from jupyter_memory.memdir.archive import import_archive

        if not args.rest:
            raise JupyterMemoryError("name the zip to import: %memory import FILE.zip")
        store = self._store(args)
        report = import_archive(store, Path(os.path.expanduser(args.rest[0])),
                                overwrite="overwrite" in args.flags)
        self._changed(args)
        if args.json:
            _print_json(report.to_json())
            return
        print(report.summary())

    # ------------------------------------------------------------------ extraction

    def _memory_undo(self, args: _Args) -> None:
        hook = self._hook()
        if hook is None:
            raise JupyterMemoryError("the extraction agent is not running in this session, "
                                     "so there is nothing to undo.")
        run_id = None
        if args.rest:
            try:
                run_id = int(args.rest[0])
            except ValueError:
                raise JupyterMemoryError(
                    f"{args.rest[0]!r} is not a run number; use %memory undo 3.") from None
        report = hook.undo(run_id)
        self._changed()
        print(report.summary())

    def _memory_extraction(self, args: _Args) -> None:
        words = args.rest
        action = words[0] if words else "status"
        if action == "on":
            hook = self._hook(create=True)
            hook.enabled_override = True
            hook.reset()
            print(f"Extraction on: after each turn that ends without a tool call "
                  f"(every {hook.every} such turn(s)).")
            return
        hook = self._hook()
        if hook is None:
            raise JupyterMemoryError("the extraction agent is not registered in this session; "
                                     "turn it on with %memory extraction on.")
        if action == "off":
            hook.enabled_override = False
            print("Extraction off for this session.")
        elif action == "every":
            try:
                every = int(words[1])
                if every < 1:
                    raise ValueError
            except (IndexError, ValueError):
                raise JupyterMemoryError(
                    "give a whole number ≥ 1: %memory extraction every 2") from None
            hook.every_override = every
            print(f"Extraction runs every {every} eligible turn(s).")
        elif action == "approval":
            choice = words[1] if len(words) > 1 else ""
            if choice not in ("on", "off"):
                raise JupyterMemoryError("use %memory extraction approval on|off")
            hook.approval_override = choice == "on"
            print("Approval mode " + ("on: extracted memories wait in %memory pending."
                                      if choice == "on" else "off: extracted memories are saved."))
        elif action == "reset":
            hook.reset()
            print("Extraction failure count reset; the circuit breaker is closed.")
        elif action == "status":
            status = hook.status()
            if args.json:
                _print_json(status)
                return
            print(extraction_status(status))
        else:
            raise JupyterMemoryError(
                f"unknown action {action!r}; use on, off, every N, approval on|off, reset.")

    def _memory_pending(self, args: _Args) -> None:
        from jupyter_memory.memdir.pending import PendingArea

        store = self._store()
        area = PendingArea(store.memdir)
        action = args.rest[0] if args.rest else "list"
        target = args.rest[1] if len(args.rest) > 1 else None
        if action == "list":
            items = area.list()
            if args.json:
                _print_json([i.to_json() for i in items])
                return
            print(pending_table(items))
            return
        if target is None:
            raise JupyterMemoryError(f"name the item: %memory pending {action} ID (or all)")
        chosen = area.list() if target == "all" else [area.get(target)]
        if action == "show":
            for item in chosen:
                print(pending_diff(item, store))
        elif action == "edit":
            for item in chosen:
                show_file(item.path, f"pending {item.id} ({item.file})")
            print("Accept the edited text with %memory pending accept ID.")
        elif action == "accept":
            for item in chosen:
                area.accept(item.id, store, force=args.force)
                print(f"Accepted {item.id}: saved {item.file}.")
            self._changed()
        elif action == "discard":
            for item in chosen:
                area.discard(item.id)
                print(f"Discarded {item.id} ({item.file}).")
        else:
            raise JupyterMemoryError(
                f"unknown action {action!r}; use show, edit, accept or discard.")

    # ---------------------------------------------------------------- %%remember

    @magic_arguments()
    @argument("--type", "-t", choices=MEMORY_TYPES, help="user, feedback, project or reference")
    @argument("--name", "-n", help="Short name, e.g. revenue-in-cents")
    @argument("--description", "-d", help="One specific line: what the memory is about")
    @argument("--file", help="File name inside the memdir (default: derived from type and name)")
    @argument("--scope", choices=SCOPES, default="memdir",
              help="memdir (the project's memory, default), or an agent's own memory: "
                   "user, project or local")
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
        from jupyter_memory.agent.extraction import describe_error
        from jupyter_memory.agent.loop import NoModelConfigured
        from jupyter_memory.agent.remember import (
            remember_direct,
            remember_offline,
            remember_with_agent,
        )

        try:
            # shlex, not IPython's arg_split: quotes around a value must not end up in it.
            args = self.remember.parser.parse_args(shlex.split(line))
        except Exception as exc:  # argparse errors and usage exits
            print(f"%%remember: could not read the options ({exc}).")
            return
        body = cell.strip("\n")
        if not body.strip():
            print("%%remember: the cell is empty; write the fact to remember in the cell body.")
            return
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
                    client = session.make_client()
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
                        print(f"%%remember: {describe_error(exc)} Nothing was saved; run the "
                              "cell again, or add --offline to save it without a model.")
                        return
        except JupyterMemoryError as exc:
            print(f"%%remember: {exc}")
            return
        if result.saved and args.scope == "memdir":
            session.refresh_context()
        print(result.summary())


# ----------------------------------------------------------------------------- rendering


def _confirm(question: str) -> bool:
    try:
        answer = input(question)
    except Exception:  # no one can answer (a headless run): do nothing
        print("Not changed: nobody could confirm. Add -f to skip the question.")
        return False
    if answer.strip().lower() not in ("y", "yes"):
        print("Kept.")
        return False
    return True


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
        bundle["text/markdown"] = f"Edit {label}: [{rel.as_posix()}]({rel.as_posix()})"
    display(bundle, raw=True)


def memory_table(memories: list[Any]) -> str:
    """A fixed-width table: type, name, description, age, size, indexed, written by."""
    from jupyter_memory.memdir.freshness import age_text

    if not memories:
        return "No memories yet. Save one with %%remember or ask the agent to remember something."
    rows = [("type", "name", "description", "age", "bytes", "indexed", "by")]
    for m in memories:
        desc = m.description or ""
        rows.append((m.type or "-", m.name, desc if len(desc) <= 60 else desc[:59] + "…",
                     age_text(m.age_days), str(m.bytes), "yes" if m.indexed else "NO",
                     m.provenance or "?"))
    widths = [max(len(str(r[i])) for r in rows) for i in range(len(rows[0]))]
    return "\n".join("  ".join(str(c).ljust(w) for c, w in zip(r, widths, strict=True)) for r in rows)


def pending_table(items: list[Any]) -> str:
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
    lines.append("\nAccept: %memory pending accept ID|all   Discard: %memory pending discard "
                 "ID|all   Edit first: %memory pending edit ID")
    return "\n".join(lines)


def pending_diff(item: Any, store: Any) -> str:
    """A pending item's text, or for an update the difference from the current memory."""
    proposed = item.text()
    path = store.memdir / item.file
    if not path.is_file():
        return f"{item.id}: new memory {item.file}\n\n{proposed}"
    current = path.read_bytes().decode("utf-8", errors="replace")
    diff = "".join(difflib.unified_diff(current.splitlines(keepends=True),
                                        proposed.splitlines(keepends=True),
                                        f"{item.file} (now)", f"{item.file} (proposed)"))
    return f"{item.id}: update of {item.file}\n\n{diff or '(no difference)'}"


def extraction_status(status: dict[str, Any]) -> str:
    """``%memory extraction`` as lines for people."""
    state = "on" if status["enabled"] else "off"
    if status["broken"]:
        state = "stopped by the circuit breaker (%memory extraction on restarts it)"
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
