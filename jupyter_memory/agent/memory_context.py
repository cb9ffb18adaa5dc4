"""The memory context of a session: where its memory lives and what of it requests carry.

Instruction files and ``MEMORY.md`` are read once and kept for the whole session, like the
reference does, so the cached prefix of every request stays the same even when the agent
saves memories mid-session; :meth:`MemoryContext.refresh` re-reads them (compaction, and
memory changes the person makes through a front end). A child session that runs as a
defined agent has an :class:`AgentMemory`: the agent's own folder, no team folder.
"""

from __future__ import annotations

import os
import time
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING

from jupyter_memory.context.assemble import IndexPart, InstructionPart

if TYPE_CHECKING:
    from jupyter_memory.agent.definitions import AgentDefinition
    from jupyter_memory.context.instructions import InstructionSet
    from jupyter_memory.memdir.gateway import Root, Roots
    from jupyter_memory.memdir.location import MemoryLocation
    from jupyter_memory.memdir.store import MemoryStore
    from jupyter_memory.memdir.team import TeamLocation

__all__ = ["AgentMemory", "MemoryContext"]


class MemoryContext:
    """Location, stores, instruction files, the index snapshot and the team folder.

    ``enabled_override`` is what ``%memory on|off`` set for this session (None: the
    location decides). :meth:`reload` must run before anything else is read.
    """

    def __init__(self, cwd: Path, env: Mapping[str, str] | None = None) -> None:
        self.cwd = cwd
        self.env = env
        self.enabled_override: bool | None = None
        # set by reload(), before anything reads them
        self._location: MemoryLocation
        self._instructions: InstructionSet
        self._team: TeamLocation | None = None
        self._team_notes: tuple[str, ...] = ()
        self._store: MemoryStore | None = None
        self._session_id = ""
        self._maintain_index = False
        self._mark_provenance = True
        self._snapshot: tuple[list[InstructionPart], IndexPart | None] | None = None
        #: When the snapshot was taken (``time.time()``, read before the files): a memory
        #: changed after it is not what the index in the requests shows.
        self.snapshot_at: float | None = None
        self._team_index: IndexPart | None = None
        self._notebook: str | None = None
        #: The folders this session may reach (memdir/gateway.py), declared by reload().
        self.roots: Roots

    # ------------------------------------------------------------------ reading

    def reload(self, *, session_id: str, notebook: str | None = None,
               instruction_names: tuple[str, ...] = (),
               maintain_index: bool = False, mark_provenance: bool = True) -> None:
        """Locate the memdir and read the instruction files (session start, compaction, a
        replay that takes the recorded session id)."""
        from jupyter_memory.memdir.location import locate

        self._session_id = session_id
        self._notebook = notebook
        self._maintain_index = maintain_index
        self._mark_provenance = mark_provenance
        self._ask_trust()
        self._location = locate(self.cwd, self.env)
        self._find_team()
        if self._team is not None:
            from jupyter_memory.memdir.team import register

            register(Path(self._location.memdir), Path(self._team.folder))
        self._store = None
        self.roots = self.declare_roots()
        self._instructions = self._load_instructions(instruction_names)
        self.forget_snapshot()

    def _load_instructions(self, instruction_names: tuple[str, ...]) -> InstructionSet:
        """The instruction files that apply here, asking (when a front end can) before
        imports from outside the project are read."""
        from jupyter_memory.context.instructions import load_instructions

        root = self._location.project_root
        loaded = load_instructions(self.cwd, project_root=root, env=self.env,
                                   extra_names=instruction_names)
        skipped = loaded.skipped_imports
        if skipped:
            from jupyter_memory.memdir.trust import request_external_imports

            files = sorted({str(target) for _, target in skipped})
            if request_external_imports(root, files, self.env).trusted:
                loaded = load_instructions(self.cwd, project_root=root, env=self.env,
                                           extra_names=instruction_names,
                                           external_imports=True)
        return loaded

    def declare_roots(self) -> Roots:
        """The folders this session may reach, each resolved once (memdir/gateway.py).

        The project, the memdir, the team folder, an agent's own memory folder, the config
        base's instruction files, the session-log folder and the notebook's folder. Every
        path that did not come from the person typing it (a tool's argument, a record in a
        notebook) is resolved against these; a folder a project file placed must lie inside
        the project.
        """
        from jupyter_memory.memdir.gateway import Root, Roots, config_root
        from jupyter_memory.memdir.location import transcripts_dir

        project = Root.declare("project", self._location.project_root)
        team = None if self._team is None else Root.declare("team", self._team.folder)
        notebook = None if not self._notebook else Root.declare(
            "notebook", Path(self._notebook).expanduser().parent)
        return Roots((project,)).plus(
            Root.declare("memdir", self._location.memdir), team, self._agent_root(project),
            config_root(self.env), Root.declare("transcripts", transcripts_dir(self.cwd, self.env)),
            notebook)

    def _agent_root(self, project: Root) -> Root | None:
        """The memory folder of the agent this session runs as (:class:`AgentMemory`)."""
        return None

    def tool_roots(self) -> Roots:
        """What the file tools may reach: the project, the memory folder (an agent's own
        for an agent session) and the team folder, as declared when the session started."""
        kinds = ["project"] if self.memdir is None else ["project", "memdir", "agent", "team"]
        roots = self.roots.only(kinds)
        if self.memdir is not None and roots.get("agent") is not None:
            roots = roots.only(["project", "agent"])  # an agent sees only its own memory
        return roots

    def team_notices(self) -> list[str]:
        """Why a project's ``teamMemoryDirectory`` was not obeyed, if it was not (as found
        when the team folder was last looked for: every request would re-read settings)."""
        return list(self._team_notes)

    def _find_team(self) -> None:
        """Look for the active team folder, keeping the notes of why a setting was not
        obeyed; a bad setting means no team folder."""
        from jupyter_memory.errors import ConfigError
        from jupyter_memory.memdir.team import team_location

        try:
            found = team_location(self._location, self.env)
        except ConfigError:
            self._team, self._team_notes = None, ()
            return
        self._team = found if found.active else None
        self._team_notes = tuple(found.notes)

    def _ask_trust(self) -> None:
        """Ask the person (when a front end can) to trust a folder whose settings want to
        run code or move paths; headless, nothing is asked and nothing untrusted runs."""
        from jupyter_memory.memdir.project import find_project_root
        from jupyter_memory.memdir.settings import load_settings
        from jupyter_memory.memdir.trust import request_trust

        root = find_project_root(self.cwd)
        wants = load_settings(root, self.env).needs_trust()
        if wants:
            request_trust(root, wants, self.env)

    def configure_store(self, *, maintain_index: bool, mark_provenance: bool) -> None:
        """Follow ``%config`` changes of the store's settings: a store made with other
        settings is dropped, so the next write uses the new ones."""
        if (maintain_index, mark_provenance) != (self._maintain_index, self._mark_provenance):
            self._maintain_index, self._mark_provenance = maintain_index, mark_provenance
            self._store = None

    def forget_snapshot(self) -> None:
        """Build ``messages[0]``'s instruction files and index anew on the next request."""
        self._snapshot = None
        self._team_index = None

    def refresh(self) -> bool:
        """Re-read the index and instruction files before the next request; True when a
        team folder was found that was not there before."""
        self.forget_snapshot()
        if self._team is not None:
            return False
        from jupyter_memory.memdir.team import register

        self._find_team()
        if self._team is None:
            return False
        register(Path(self._location.memdir), Path(self._team.folder))
        self.roots = self.declare_roots()
        return True

    def pieces(self) -> tuple[list[InstructionPart], IndexPart | None]:
        """The instruction files and index of the session's ``messages[0]``."""
        if self._snapshot is None:
            self.snapshot_at = time.time()
            self._snapshot = (self.instruction_parts(), self.index_part())
        return self._snapshot

    # ------------------------------------------------------------------ where

    @property
    def location(self) -> MemoryLocation:
        return self._location

    @property
    def instructions(self) -> InstructionSet:
        return self._instructions

    @property
    def project_root(self) -> Path:
        return Path(self._location.project_root)

    @property
    def enabled(self) -> bool:
        if self.enabled_override is not None:
            return self.enabled_override
        return bool(self._location.enabled)

    @property
    def memdir(self) -> Path | None:
        return Path(self._location.memdir) if self.enabled else None

    @property
    def store(self) -> MemoryStore | None:
        """The ``MemoryStore`` of this project's memdir (private and team), or None when
        memory is off."""
        if not self.enabled:
            return None
        if self._store is None:
            from jupyter_memory.memdir.team import open_store

            self._store = open_store(self._location, self.env, session_id=self._session_id,
                                     maintain_index=self._maintain_index,
                                     mark_provenance=self._mark_provenance)
        return self._store

    @property
    def team_dir(self) -> Path | None:
        """The team folder (docs/reference.md#team-mode) when team mode is on and memory is enabled."""
        if self.memdir is None or self._team is None:
            return None
        return Path(self._team.folder)

    # ------------------------------------------------------------------ what requests carry

    def index_part(self) -> IndexPart | None:
        """``MEMORY.md`` as the model would receive it now (None when memory is off)."""
        memdir = self.memdir
        if memdir is None:
            return None
        from jupyter_memory.errors import InvalidPath
        from jupyter_memory.memdir.gateway import Root
        from jupyter_memory.memdir.index import INDEX_NAME, load_for_model

        try:  # never through a link: it could put any file on disk into every request
            raw = Root.declare("memdir", memdir).read(
                INDEX_NAME, follow=False, what=f"The memory index {INDEX_NAME}"
            ).decode("utf-8", errors="replace")
        except FileNotFoundError:
            raw = ""
        except InvalidPath as exc:
            return IndexPart("", 0, 0, None, f"{INDEX_NAME} was not loaded: {exc}")
        loaded = load_for_model(raw)
        cut = "+".join(loaded.limits_hit) if loaded.limits_hit else None
        return IndexPart(loaded.text, loaded.line_count, loaded.char_count, cut, loaded.warning)

    def team_index_part(self) -> IndexPart | None:
        """The team ``MEMORY.md`` as the model receives it, read once like the private one."""
        folder = self.team_dir
        if folder is None:
            return None
        if self._team_index is None:
            from jupyter_memory.errors import InvalidPath
            from jupyter_memory.memdir.team import load_index

            try:  # never through a link, as the private index
                loaded = load_index(folder)
            except InvalidPath as exc:
                self._team_index = IndexPart("", 0, 0, None,
                                             f"The team index was not loaded: {exc}")
                return self._team_index
            cut = "+".join(loaded.limits_hit) if loaded.limits_hit else None
            warning = loaded.warning
            if os.path.islink(folder / "MEMORY.md"):
                warning = ("The team index was not loaded: its MEMORY.md is a symbolic link, "
                           "and an index is never read through a link (it could put any file "
                           "on disk into every request). Remove the link from the team folder "
                           "and the shared repository; the next sync rebuilds the index.")
            self._team_index = IndexPart(loaded.text, loaded.line_count, loaded.char_count, cut,
                                         warning)
        return self._team_index

    def instruction_parts(self) -> list[InstructionPart]:
        inst = self._instructions
        files = [*inst.files, *inst.activated]
        return [InstructionPart(str(f.path), f.scope, inst.render_block(f)) for f in files]


class AgentMemory(MemoryContext):
    """The memory of a session that runs as a defined agent: the agent's own folder for its
    ``memory:`` scope (docs/reference.md#agent-memory), no team folder, and a store that
    keeps its index. Like a subagent of the reference it gets the instruction files that
    apply, unless its definition says ``omitClaudeMd: true``; never the main session's
    memory (docs/reference.md#delegation)."""

    def __init__(self, cwd: Path, env: Mapping[str, str] | None,
                 definition: AgentDefinition) -> None:
        super().__init__(cwd, env)
        self.definition = definition

    def _load_instructions(self, instruction_names: tuple[str, ...]) -> InstructionSet:
        if not self.definition.omit_claude_md:
            return super()._load_instructions(instruction_names)
        from jupyter_memory.context.instructions import InstructionSet

        return InstructionSet(self.cwd, self.project_root)  # none, and none to activate

    @property
    def memdir(self) -> Path | None:
        """The agent's own memdir, as declared when the session started; None without
        ``memory:`` or when auto memory is off."""
        root = self.roots.get("agent") if self.enabled else None
        return None if root is None else root.path

    def _agent_root(self, project: Root) -> Root | None:
        """The agent's memory folder, declared once; ``project`` and ``local`` folders are
        placed by the project's files, so they must really lie inside it."""
        return self.definition.memory_root(project.path, self.env)

    @property
    def team_dir(self) -> Path | None:
        return None

    @property
    def store(self) -> MemoryStore | None:
        memdir = self.memdir
        if memdir is None:
            return None
        if self._store is None:
            from jupyter_memory.memdir.scopes import committed
            from jupyter_memory.memdir.store import MemoryStore

            self._store = MemoryStore(memdir, session_id=self._session_id,
                                      provenance_default="agent", maintain_index=True,
                                      mark_provenance=self._mark_provenance,
                                      ignore_own_files=committed(self.definition.memory))
        return self._store

    def refresh(self) -> bool:
        self.forget_snapshot()
        return False

