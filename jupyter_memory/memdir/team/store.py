"""The stores of team memory: the team folder's own, and the private one that routes to it.

:class:`ScopedStore` is a :class:`~jupyter_memory.memdir.store.MemoryStore` over the
private memdir that sends every ``team/…`` path to a :class:`TeamFolderStore` over the
team folder, with the team's own rules: no ``user`` memories, the author named in each
file, the credential guard with no way round it, and the team folder's own lock and index.
"""

from __future__ import annotations

import builtins
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path, PurePath
from typing import Any

from jupyter_memory.errors import InvalidPath
from jupyter_memory.memdir import frontmatter
from jupyter_memory.memdir.guard import check_no_secrets
from jupyter_memory.memdir.index import INDEX_NAME, parse_index, upsert_entry
from jupyter_memory.memdir.location import MemoryLocation
from jupyter_memory.memdir.record import Memory, provenance_from_env
from jupyter_memory.memdir.scopes import MEMORY_SCOPES, TEAM_PREFIX, check_team_type
from jupyter_memory.memdir.store import InvalidMemory, MemoryStore, WriteResult
from jupyter_memory.memdir.team.authorship import AUTHOR_FIELD, author
from jupyter_memory.memdir.team.listing import as_team, scan_all
from jupyter_memory.memdir.team.location import TeamLocation, team_location
from jupyter_memory.memdir.team.registry import register, scan_cache

__all__ = ["Moved", "ScopedStore", "TeamFolderStore", "open_store"]


@dataclass(frozen=True)
class Moved:
    """A memory filed in the wrong scope and moved: from ``file`` (in the team folder) to
    ``to`` (in private memory; None when it could not be moved), with a note for people."""

    file: str
    to: str | None
    note: str


class TeamFolderStore(MemoryStore):
    """The store of the team folder itself, with the team's rules on every write.

    No ``user`` memories (they describe one person), the writer named in ``author``,
    the credential guard with no way round it; its records carry ``scope="team"``.
    Files are named relative to the team folder (``db.md``); :class:`ScopedStore` shows
    them as ``team/db.md``.
    """

    scope = "team"
    ROOT_KIND = "team"

    def __init__(self, folder: Path | str, *, env: Mapping[str, str] | None = None,
                 private: MemoryStore | None = None, **options: Any) -> None:
        options.setdefault("cache", scan_cache(Path(folder)))
        options["maintain_index"] = True  # people write it; keep it in step with each write
        super().__init__(folder, **options)
        self.env = env
        #: The person's private store: where a ``user`` memory filed here by a model goes.
        self.private = private

    def author(self) -> str:
        return author(self.memdir, self.env)

    def normalize(self, file: str | PurePath, *, allow_index: bool = False) -> str:
        """As for any store, and a leading ``team/`` (how team memories are shown
        everywhere) names the same file."""
        raw = file.as_posix() if isinstance(file, PurePath) else file
        if isinstance(raw, str) and raw.startswith(TEAM_PREFIX):
            raw = raw[len(TEAM_PREFIX):]
        return super().normalize(raw, allow_index=allow_index)

    def list(self, limit: int | None = None) -> list[Memory]:
        return [replace(m, scope="team") for m in super().list(limit)]

    def get(self, name_or_file: str) -> Memory:
        return replace(super().get(name_or_file), scope="team")

    def create(self, name: str, description: str, type: str, body: str, **options: Any
               ) -> WriteResult:
        where = options.get("file") or name
        check_team_type(type, where)
        extra = dict(options.pop("extra", None) or {})
        extra.setdefault(AUTHOR_FIELD, self.author())
        check_no_secrets("\n".join([name, description, body, *map(str, extra.values())]),
                         f"team memory {where}")
        return super().create(name, description, type, body, extra=extra, **options)

    def update(self, file: str | PurePath, **changes: Any) -> WriteResult:
        if changes.get("type") is not None:
            check_team_type(changes["type"], str(file))
        changes.setdefault("extra", {})
        changes["extra"] = {AUTHOR_FIELD: self.author(), **changes["extra"]}
        return super().update(file, **changes)

    def write_file(self, file: str | PurePath, text: str, *,
                   provenance: str | None = None) -> WriteResult:
        rel = self.normalize(file, allow_index=True)
        if rel == INDEX_NAME:
            return self.write_index(text)
        doc = frontmatter.parse(text)
        check_team_type(doc.get("type"), rel)
        if doc.has_frontmatter:
            text = frontmatter.update(text, {AUTHOR_FIELD: self.author()})
        check_no_secrets(text, f"team memory {rel}")
        return super().write_file(rel, text, provenance=provenance)

    def settle(self, files: Sequence[str]) -> builtins.list[Moved]:
        """After a model wrote ``files`` through a plain store: enforce the team rules.

        A ``user`` memory is moved to the person's private memory (:attr:`private`), never
        deleted: it describes this person, who meant to keep it. Every other file gets
        its ``author``. Returns the moves, each with a note for the person.
        """
        moves = []
        for file in files:
            doc = frontmatter.parse(self.read(file))
            if str(doc.get("type") or "").lower() == "user":
                moves.append(self.move_to_private(file))
            elif doc.has_frontmatter and doc.get(AUTHOR_FIELD) != self.author():
                self.update(file)
        return moves

    def move_to_private(self, file: str) -> Moved:
        """Move a ``user`` memory from the team folder to private memory.

        Its bytes and index line go with it (:meth:`MemoryStore.place`). Without a private
        store the file stays where it is (out of the team index and recall, and no sync
        sends it).
        """
        rel = self.normalize(file)
        if self.private is None:
            return Moved(rel, None, (
                f"team/{rel} is a 'user' memory, which is always private; it stays where it "
                "is, out of the team index and recall, and no sync sends it. Move it to your "
                "private memory."))
        data = self.root.read(rel, follow=False)
        doc = frontmatter.parse(data.decode("utf-8", errors="replace"))
        entry = parse_index(self.read_index()).find(rel)
        name = str(doc.get("name") or PurePath(rel).stem)
        title = entry.title if entry is not None else name
        hook = entry.hook if entry is not None else str(doc.get("description") or "")
        target = self.private.free_name(PurePath(rel).name)
        self.private.place(target, data, title=title, hook=hook)
        self.forget(rel)
        return Moved(rel, target, (
            f"team/{rel} was a 'user' memory, which describes one person and is always "
            f"private: it was moved to your private memory as {target}."))


class ScopedStore(MemoryStore):
    """The private memdir's store, with ``team/…`` paths sent to the team folder.

    The team half always maintains its index (the sync rebuilds it anyway), locks the
    team folder itself (two people on one shared disk), records who wrote each memory
    and refuses ``user`` memories and credentials.
    """

    def __init__(
        self,
        memdir: Path | str,
        team: TeamLocation | Path,
        *,
        env: Mapping[str, str] | None = None,
        **options: Any,
    ) -> None:
        super().__init__(memdir, **options)
        self.env = env
        folder = team.folder if isinstance(team, TeamLocation) else Path(team)
        self.team_location = team if isinstance(team, TeamLocation) else None
        self.team_dir = folder
        self.team = TeamFolderStore(
            folder,
            env=env,
            session_id=self.session_id,
            provenance_default=self.provenance_default,
            mark_provenance=self.mark_provenance,
            lock_timeout=self.lock_timeout,
            private=self,
        )
        register(self.memdir, folder)

    # -- routing

    def _team_rel(self, file: str | PurePath) -> str | None:
        raw = file.as_posix() if isinstance(file, PurePath) else str(file)
        if raw.startswith(TEAM_PREFIX):
            return raw[len(TEAM_PREFIX):]
        return None

    def _mapped(self, result: WriteResult) -> WriteResult:
        return replace(result, file=TEAM_PREFIX + result.file)

    def normalize(self, file: str | PurePath, *, allow_index: bool = False) -> str:
        rel = self._team_rel(file)
        if rel is not None:
            return TEAM_PREFIX + self.team.normalize(rel, allow_index=allow_index)
        return super().normalize(file, allow_index=allow_index)

    def resolve(self, file: str | PurePath, *, allow_index: bool = False) -> Path:
        rel = self._team_rel(file)
        if rel is not None:
            return self.team.resolve(rel, allow_index=allow_index)
        return super().resolve(file, allow_index=allow_index)

    def relative(self, path: str | os.PathLike[str]) -> str:
        text = os.fspath(path)
        if os.path.isabs(text):
            for base in (str(self.team_dir), os.path.realpath(self.team_dir)):
                rel = os.path.relpath(os.path.normpath(text), base)
                if rel not in ("..", ".") and not rel.startswith("../"):
                    return TEAM_PREFIX + self.team.normalize(rel, allow_index=True)
        return super().relative(path)

    # -- reads

    def list(self, limit: int | None = None) -> list[Memory]:
        return scan_all(self.memdir, limit=limit, cache=self.cache, folder=self.team_dir)

    def get(self, name_or_file: str) -> Memory:
        rel = self._team_rel(name_or_file) if isinstance(name_or_file, str) else None
        if rel is not None:
            return as_team(self.team.get(rel))
        return super().get(name_or_file)

    def read(self, file: str | PurePath) -> str:
        rel = self._team_rel(file)
        return self.team.read(rel) if rel is not None else super().read(file)

    def read_team_index(self) -> str:
        return self.team.read_index()

    # -- writes

    def create(self, name: str, description: str, type: str, body: str, *,
               file: str | None = None, scope: str = "private", **options: Any) -> WriteResult:
        """Create a memory; ``scope="team"`` (or a ``team/…`` file) puts it in the team folder."""
        if scope not in MEMORY_SCOPES:
            raise InvalidMemory(f"Unknown scope {scope!r}; use 'private' or 'team'.")
        rel = self._team_rel(file) if file is not None else None
        if scope == "team" or rel is not None:
            return self._mapped(self.team.create(name, description, type, body, file=rel,
                                                 **options))
        return super().create(name, description, type, body, file=file, **options)

    def update(self, file: str | PurePath, **changes: Any) -> WriteResult:
        rel = self._team_rel(file)
        if rel is None:
            return super().update(file, **changes)
        return self._mapped(self.team.update(rel, **changes))

    def write_file(self, file: str | PurePath, text: str, *,
                   provenance: str | None = None) -> WriteResult:
        """Write a whole file (the agent's Write and Edit). A ``user`` memory written into
        the team folder is saved in private memory instead, and the result says so: it
        describes this person, so the team must not read it, and nothing is lost."""
        rel = self._team_rel(file)
        if rel is None:
            return super().write_file(file, text, provenance=provenance)
        if str(frontmatter.parse(text).get("type") or "").strip().lower() == "user":
            team_rel = self.team.normalize(rel)
            existed = self.team.resolve(team_rel).exists()  # an edit of a team memory
            entry = parse_index(self.team.read_index()).find(team_rel) if existed else None
            target = self.free_name(PurePath(team_rel).name)
            with self.writing():
                result = super().write_file(target, text, provenance=provenance)
                before = self.read_index_for_edit()  # its line follows it, as in a move
                doc = frontmatter.parse(self.read(target))
                after = before if parse_index(before).find(target) else upsert_entry(
                    before, target,
                    entry.title if entry else str(doc.get("name") or PurePath(target).stem),
                    entry.hook if entry else str(doc.get("description") or ""))
                changed, index_check = self._save_index(before, after)
            if existed:  # a move, as move_to_private makes: the team keeps no copy of it
                self.team.forget(team_rel)
                note = (f"team/{team_rel} became a 'user' memory, which describes one person "
                        f"and is always private: it was moved to your private memory as "
                        f"{target}, and the team folder no longer holds it.")
            else:
                note = (f"team/{team_rel} is a 'user' memory, which describes one person and "
                        f"is always private: it was saved in your private memory as {target} "
                        "instead.")
            return replace(result, warnings=(*result.warnings, note), index_check=index_check,
                           index_changed=result.index_changed or changed)
        return self._mapped(self.team.write_file(rel, text, provenance=provenance))

    def forget(self, file: str | PurePath) -> WriteResult:
        rel = self._team_rel(file)
        return self._mapped(self.team.forget(rel)) if rel is not None else super().forget(file)

    def rename(self, file: str | PurePath, new_file: str | PurePath) -> WriteResult:
        old, new = self._team_rel(file), self._team_rel(new_file)
        if (old is None) != (new is None):
            raise InvalidPath(
                "A rename cannot move a memory between the private and the team scope. Copy "
                "it with `jupyter-memory add --scope team` (or --scope private) and forget "
                "the old one."
            )
        if old is not None and new is not None:
            return self._mapped(self.team.rename(old, new))
        return super().rename(file, new_file)


def open_store(
    location: MemoryLocation, env: Mapping[str, str] | None = None, **options: Any
) -> ScopedStore:
    """The store of a memory location, private and team scopes together. Without
    ``mark_provenance`` it follows ``$JUPYTER_MEMORY_PROVENANCE``."""
    options.setdefault("mark_provenance", provenance_from_env(env))
    team = team_location(location, env)
    return ScopedStore(location.memdir, team, env=env, location=location, **options)
