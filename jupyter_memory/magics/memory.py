"""``%memory`` (browse and manage memories) and ``%%remember`` (store one)."""

from __future__ import annotations

import json
import shlex
from typing import Any

from IPython.core.magic import Magics, cell_magic, line_magic, magics_class
from IPython.core.magic_arguments import argument, magic_arguments, parse_argstring
from IPython.display import display

from ..errors import JupyterMemoryError
from ..memory import MEMORY_TYPES

SUBCOMMANDS = ("list", "show", "path", "forget", "search", "doctor", "repair", "mode", "on", "off")


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

            %memory                     # table of memories
            %memory show NAME           # one memory, whole
            %memory search TEXT         # memories whose name, description or body match
            %memory forget NAME [-f]    # delete a memory and its index line
            %memory doctor              # check index and files for problems
            %memory repair              # fix what is safe to fix
            %memory mode [index|prefetch]
            %memory on | off            # switch memory for this session
            %memory path                # where the memdir is, and why

        Add ``--json`` to list, show, search and doctor for machine-readable output.
        """
        try:
            words = shlex.split(line)
        except ValueError as exc:
            print(f"%memory: could not read the arguments ({exc}).")
            return
        as_json = "--json" in words
        words = [w for w in words if w != "--json"]
        sub = words[0] if words else "list"
        rest = words[1:]
        if sub not in SUBCOMMANDS:
            print(f"%memory: unknown subcommand {sub!r}. Use one of: {', '.join(SUBCOMMANDS)}.")
            return
        try:
            getattr(self, f"_memory_{sub}")(rest, as_json)
        except JupyterMemoryError as exc:
            print(f"%memory {sub}: {exc}")

    def _session(self) -> Any:
        return self.agent.session()

    def _store(self) -> Any:
        session = self._session()
        store = session.store
        if store is None:
            raise JupyterMemoryError(
                f"memory is off for this project ({session.location.enabled_reason}). "
                "Switch it on for this session with %memory on."
            )
        return store

    def _memory_list(self, rest: list[str], as_json: bool) -> None:
        memories = self._store().list()
        if as_json:
            print(json.dumps([m.to_json() for m in memories], indent=2, ensure_ascii=False))
            return
        display({"text/plain": memory_table(memories)}, raw=True)

    def _memory_show(self, rest: list[str], as_json: bool) -> None:
        if not rest:
            raise JupyterMemoryError("name the memory to show: %memory show NAME")
        store = self._store()
        memory = store.get(rest[0])
        if as_json:
            data = memory.to_json()
            data["text"] = store.read(memory.file)
            print(json.dumps(data, indent=2, ensure_ascii=False))
            return
        print(f"{memory.path}\n")
        print(store.read(memory.file))

    def _memory_path(self, rest: list[str], as_json: bool) -> None:
        session = self._session()
        loc = session.location
        data = {"memdir": str(loc.memdir), "project_root": str(loc.project_root),
                "enabled": session.memory_enabled, "reason": loc.enabled_reason,
                "source": loc.source}
        if as_json:
            print(json.dumps(data, indent=2))
            return
        print(f"{loc.memdir}\n(project {loc.project_root}; memory "
              f"{'on' if session.memory_enabled else 'off'}: {loc.enabled_reason})")

    def _memory_search(self, rest: list[str], as_json: bool) -> None:
        if not rest:
            raise JupyterMemoryError("say what to search for: %memory search TEXT")
        needle = " ".join(rest).lower()
        store = self._store()
        hits = [m for m in store.list()
                if needle in f"{m.name}\n{m.description}\n{store.read(m.file)}".lower()]
        if as_json:
            print(json.dumps([m.to_json() for m in hits], indent=2, ensure_ascii=False))
            return
        print(memory_table(hits) if hits else f"No memory mentions {needle!r}.")

    def _memory_forget(self, rest: list[str], as_json: bool) -> None:
        force = "-f" in rest or "--force" in rest
        names = [r for r in rest if r not in ("-f", "--force")]
        if not names:
            raise JupyterMemoryError("name the memory to forget: %memory forget NAME [-f]")
        store = self._store()
        memory = store.get(names[0])
        if not force:
            try:
                answer = input(f"Forget {memory.file} ({memory.description})? [y/N] ")
            except Exception:  # no one can answer (a headless run): do nothing
                print("Not forgotten: nobody could confirm. Add -f to forget without asking.")
                return
            if answer.strip().lower() not in ("y", "yes"):
                print("Kept.")
                return
        store.forget(memory.file)
        self._session().refresh_context()
        print(f"Forgot {memory.file}.")

    def _memory_doctor(self, rest: list[str], as_json: bool) -> None:
        from ..doctor import doctor

        findings = doctor(self._store())
        if as_json:
            print(json.dumps([f.to_json() for f in findings], indent=2, ensure_ascii=False))
            return
        if not findings:
            print("No problems found.")
        for f in findings:
            print(f"[{f.severity}] {f.file or ''} {f.message}".replace("  ", " "))

    def _memory_repair(self, rest: list[str], as_json: bool) -> None:
        from ..doctor import repair

        result = repair(self._store())
        self._session().refresh_context()
        print(result.summary() if hasattr(result, "summary") else result)

    def _memory_mode(self, rest: list[str], as_json: bool) -> None:
        session = self._session()
        if not rest:
            print(f"recall mode: {session.recall_mode}")
            return
        if rest[0] not in ("index", "prefetch"):
            raise JupyterMemoryError("the mode is 'index' or 'prefetch'.")
        session.recall_override = rest[0]
        print(f"recall mode for this session: {rest[0]}")

    def _memory_on(self, rest: list[str], as_json: bool) -> None:
        session = self._session()
        session.memory_override = True
        session.reset_tools()
        print(f"Memory on for this session: {session.location.memdir}")

    def _memory_off(self, rest: list[str], as_json: bool) -> None:
        session = self._session()
        session.memory_override = False
        session.reset_tools()
        print("Memory off for this session: no index, no recall, no memory writes.")

    # ---------------------------------------------------------------- %%remember

    @magic_arguments()
    @argument("--type", "-t", choices=MEMORY_TYPES, help="user, feedback, project or reference")
    @argument("--name", "-n", help="Short name, e.g. revenue-in-cents")
    @argument("--description", "-d", help="One specific line: what the memory is about")
    @argument("--file", help="File name inside the memdir (default: derived from type and name)")
    @cell_magic
    def remember(self, line: str, cell: str) -> None:
        """Store the cell body as a memory.

        Example::

            %%remember --type project --name revenue-in-cents -d "sales.revenue is in cents"
            The revenue column of the sales table holds integer cents.

            **Why:** the billing export writes cents.
            **How to apply:** divide by 100 before showing money to people.
        """
        args = parse_argstring(self.remember, line)
        body = cell.strip("\n")
        if not body.strip():
            print("%%remember: the cell is empty; write the fact to remember in the cell body.")
            return
        missing = [n for n in ("type", "name", "description") if not getattr(args, n)]
        if missing:
            print("%%remember needs " + ", ".join(f"--{m}" for m in missing) +
                  " to write without a model.")
            return
        try:
            result = self._store().create(args.name, args.description, args.type, body,
                                          file=args.file, provenance="user")
        except JupyterMemoryError as exc:
            print(f"%%remember: {exc}")
            return
        self._session().refresh_context()
        print(f"Saved {result.file}.")


def memory_table(memories: list[Any]) -> str:
    """A fixed-width table: type, name, description, age, size, indexed."""
    from ..freshness import age_text

    if not memories:
        return "No memories yet. Save one with %%remember or ask the agent to remember something."
    rows = [("type", "name", "description", "age", "bytes", "indexed")]
    for m in memories:
        desc = m.description or ""
        rows.append((m.type or "-", m.name, desc if len(desc) <= 60 else desc[:59] + "…",
                     age_text(m.age_days), str(m.bytes), "yes" if m.indexed else "NO"))
    widths = [max(len(str(r[i])) for r in rows) for i in range(len(rows[0]))]
    return "\n".join("  ".join(str(c).ljust(w) for c, w in zip(r, widths, strict=True)) for r in rows)
