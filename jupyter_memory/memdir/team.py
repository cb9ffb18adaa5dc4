"""Team memory: the shared scope beside the private memdir, and its sync through git.

A memory is either *private* (the person's own memdir) or *team* (a folder the whole
team shares, SPEC §8). The team folder is ``<memdir>/team/`` as in the reference, or the
folder ``teamMemoryDirectory`` names. Everywhere a memory is shown its ``file`` starts
with ``team/`` when it lives in the team folder, wherever that folder is on disk, so one
name works in the CLI, the magics, the agent's tools and the recall explanation.

:class:`ScopedStore` is a :class:`~jupyter_memory.memdir.store.MemoryStore` over the private
memdir that sends every ``team/…`` path to a second store over the team folder, with
the team's own rules: no ``user`` memories, the author named in each file, the
credential guard with no way round it, and the team folder's own lock and index.

Sharing past one machine uses git, never a service of ours: :func:`clone`,
:func:`status` and :func:`sync`. The team ``MEMORY.md`` is rebuilt from the files on
every sync (and marked ``merge=union``), so it never holds conflict markers; two edits
of one memory keep both versions and the sync says so.
"""

from __future__ import annotations

import builtins
import contextlib
import getpass
import os
import re
import shutil
import socket
import subprocess
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path, PurePath
from typing import Any

from jupyter_memory.errors import ConfigError, InvalidPath, JupyterMemoryError
from jupyter_memory.memdir import frontmatter
from jupyter_memory.memdir.basedir import home_dir, validate_memory_dir
from jupyter_memory.memdir.fsutil import atomic_write, memdir_lock
from jupyter_memory.memdir.guard import check_no_secrets
from jupyter_memory.memdir.index import INDEX_NAME, load_for_model
from jupyter_memory.memdir.location import MemoryLocation
from jupyter_memory.memdir.record import Memory
from jupyter_memory.memdir.scan import FileStat, ScanCache, scan
from jupyter_memory.memdir.scopes import (
    MEMORY_SCOPES,
    TEAM_DIRNAME,
    TEAM_PREFIX,
    check_team_type,
    default_scope,
    scope_of,
)
from jupyter_memory.memdir.store import InvalidMemory, MemoryStore, WriteResult

__all__ = [
    "AUTHOR_FIELD",
    "TEAM_PREFIX",
    "ScopedStore",
    "SyncReport",
    "TeamError",
    "TeamFolderStore",
    "TeamLocation",
    "TeamStatus",
    "clone",
    "default_scope",
    "open_store",
    "rebuild_index",
    "scan_all",
    "scope_of",
    "status",
    "sync",
    "team_location",
]

SETTING = "teamMemoryDirectory"
AUTHOR_FIELD = "author"
#: Written into a team folder by :func:`clone` (and the first sync): the store's own
#: hidden files never travel, and the index merges line by line instead of conflicting.
GITIGNORE = "# jupyter-memory: the store's lock and unfinished writes stay local\n.*\n!.gitignore\n!.gitattributes\n"
GITATTRIBUTES = "# jupyter-memory rebuilds the index on every sync\nMEMORY.md merge=union\n"
CONFLICT_MARK = ".conflict-"


class TeamError(JupyterMemoryError):
    """A team operation that cannot go on (no repository, a git failure); says what to do."""


# ---------------------------------------------------------------------------- location


@dataclass(frozen=True)
class TeamLocation:
    """Where the team folder is, and which rule chose it."""

    folder: Path
    source: str  # "default" | "user" | "local" | "project"
    reason: str
    memdir: Path

    @property
    def nested(self) -> bool:
        """Whether the folder is ``<memdir>/team`` (the reference's layout)."""
        return os.path.realpath(self.folder) == os.path.realpath(self.memdir / TEAM_DIRNAME)

    @property
    def exists(self) -> bool:
        return self.folder.is_dir()

    @property
    def active(self) -> bool:
        """Team mode is on when the folder exists or a setting names one."""
        return self.source != "default" or self.exists

    def to_json(self) -> dict[str, Any]:
        return {
            "folder": str(self.folder),
            "index": str(self.folder / INDEX_NAME),
            "exists": self.exists,
            "active": self.active,
            "source": self.source,
            "source_reason": self.reason,
            "git": _git_toplevel(self.folder) is not None if self.exists else False,
        }


def team_location(location: MemoryLocation, env: Mapping[str, str] | None = None) -> TeamLocation:
    """Find the team folder of a memory location.

    ``teamMemoryDirectory`` is read from the project-local, then the user settings (an
    absolute path or one starting ``~/``), then the shared project settings, where it
    may only name a folder inside the repository (relative to its root): a cloned
    repository must not aim team writes at, say, ``~/.ssh``. Otherwise the folder is
    ``<memdir>/team``. Raises :class:`ConfigError` for an unusable value.
    """
    from jupyter_memory.memdir.settings import load_settings

    environ = os.environ if env is None else env
    root = location.workspace_root or location.project_root
    settings = load_settings(Path(root), environ)
    for name in ("local", "user"):
        src = settings.source(name)
        raw = src.values.get(SETTING)
        if raw in (None, ""):
            continue
        where = f"{SETTING} in {src.path}"
        folder = validate_memory_dir(raw, where=where, home=home_dir(environ))
        return TeamLocation(folder, name, where, Path(location.memdir))
    src = settings.source("project")
    raw = src.values.get(SETTING)
    if raw not in (None, ""):
        where = f"{SETTING} in {src.path}"
        if not isinstance(raw, str) or "\0" in raw:
            raise ConfigError(f"{where} must be a folder path inside the repository.")
        real_root = os.path.realpath(root)
        real = os.path.realpath(os.path.join(real_root, raw))
        if not (real != real_root and real.startswith(real_root.rstrip(os.sep) + os.sep)):
            raise ConfigError(
                f"{where} is {raw!r}, which is outside the repository {real_root}. Shared "
                "project settings come with the repository and may only name a folder inside "
                "it (such as 'team-memory'); put an outside folder in .claude/settings.local.json "
                "or your user settings.json instead."
            )
        return TeamLocation(Path(real), "project", where, Path(location.memdir))
    folder = Path(location.memdir) / TEAM_DIRNAME
    return TeamLocation(folder, "default", "the team folder inside the memdir", Path(location.memdir))


# ---------------------------------------------------------------------------- authorship


def author(folder: Path | None = None, env: Mapping[str, str] | None = None) -> str:
    """Who is writing: the git author (``GIT_AUTHOR_NAME``, then ``user.name`` of the team
    repository), else the hub or OS user."""
    environ = os.environ if env is None else env
    name = environ.get("GIT_AUTHOR_NAME") or _git_config("user.name", folder, env)
    if name:
        return name
    for key in ("JUPYTERHUB_USER", "USER", "LOGNAME"):
        if environ.get(key):
            return environ[key]
    with contextlib.suppress(Exception):
        return getpass.getuser()
    return "unknown"


def _git_config(key: str, folder: Path | None, env: Mapping[str, str] | None) -> str | None:
    if shutil.which("git") is None:
        return None
    cwd = folder if folder is not None and folder.is_dir() else None
    try:
        out = subprocess.run(
            ["git", "config", "--get", key], cwd=cwd, capture_output=True, text=True,
            env=_git_env(env), timeout=30, check=False,
        )
    except (OSError, subprocess.SubprocessError):
        return None
    value = out.stdout.strip()
    return value or None


# ---------------------------------------------------------------------------- the store


_TEAM_DIRS: dict[str, Path] = {}
_CACHES: dict[str, ScanCache] = {}
_REGISTRY_LOCK = threading.Lock()


def register(memdir: Path, folder: Path) -> None:
    """Remember the team folder of ``memdir`` for readers that only know the memdir."""
    with _REGISTRY_LOCK:
        _TEAM_DIRS[os.path.realpath(memdir)] = Path(folder)


def folder_of(memdir: Path) -> Path:
    """The team folder registered for ``memdir`` (default ``<memdir>/team``)."""
    with _REGISTRY_LOCK:
        return _TEAM_DIRS.get(os.path.realpath(memdir), Path(memdir) / TEAM_DIRNAME)


def _cache(folder: Path) -> ScanCache:
    key = os.path.realpath(folder)
    with _REGISTRY_LOCK:
        return _CACHES.setdefault(key, ScanCache())


def as_team(memory: Memory) -> Memory:
    """A team folder's record renamed into the shared namespace (``team/<file>``)."""
    return replace(memory, file=TEAM_PREFIX + memory.file, scope="team")


def scan_all(
    memdir: Path,
    *,
    limit: int | None = 200,
    cache: ScanCache | None = None,
    folder: Path | None = None,
) -> list[Memory]:
    """Private and team memories together, newest first, each with its ``scope``.

    The private scan skips the nested ``team/`` folder; the team folder is scanned on its
    own (against its own index) wherever it lives, and its files are named ``team/…``.
    """
    team_folder = folder_of(memdir) if folder is None else folder
    if limit is None:
        private = [m for m in scan(memdir, limit=None, cache=cache)
                   if not m.file.startswith(TEAM_PREFIX)]
        shared = [as_team(m) for m in scan(team_folder, limit=None, cache=_cache(team_folder))]
        return sorted(private + shared, key=lambda m: (-m.mtime, m.file))
    # Choose the newest ``limit`` files from the two sorted listings first, then build records
    # for those only: a turn's manifest costs the same at 200 memories as at 10,000.
    cache = cache if cache is not None else ScanCache()
    team_cache = _cache(team_folder)
    every, every_team = cache.files(memdir), team_cache.files(team_folder)
    private_files = _newest(every, limit, skip=TEAM_PREFIX)
    team_files = _newest(every_team, limit)
    cache.forget_missing((e.abspath for e in every), len(every))
    team_cache.forget_missing((e.abspath for e in every_team), len(every_team))
    now = time.time()
    private = cache.memories(private_files, cache.pointed(Path(memdir)), now)
    shared = [as_team(m) for m in
              team_cache.memories(team_files, team_cache.pointed(team_folder), now)]
    merged = sorted(private + shared, key=lambda m: (-m.mtime, m.file))
    return merged[: max(limit, 0)]


def _newest(files: list[FileStat], limit: int, *, skip: str | None = None) -> list[FileStat]:
    """The first ``limit`` of ``files`` (already newest first), leaving out names under
    ``skip``; stops as soon as it has them."""
    if skip is None:
        return files[: max(limit, 0)]
    out: list[FileStat] = []
    for entry in files:
        if len(out) >= limit:
            break
        if not entry.file.startswith(skip):
            out.append(entry)
    return out


def team_path(memdir: Path, file: str) -> Path:
    """The absolute path of a memory named memdir-style (``team/x.md`` → the team folder)."""
    if file.startswith(TEAM_PREFIX):
        return folder_of(memdir) / file[len(TEAM_PREFIX):]
    return Path(memdir) / file


class TeamFolderStore(MemoryStore):
    """The store of the team folder itself, with the team's rules on every write.

    No ``user`` memories (they describe one person), the writer named in ``author``,
    the credential guard with no way round it; its records carry ``scope="team"``.
    Files are named relative to the team folder (``db.md``); :class:`ScopedStore` shows
    them as ``team/db.md``.
    """

    def __init__(self, folder: Path | str, *, env: Mapping[str, str] | None = None,
                 **options: Any) -> None:
        options.setdefault("cache", _cache(Path(folder)))
        options["maintain_index"] = True  # the sync rebuilds it anyway; keep it right now
        super().__init__(folder, **options)
        self.env = env

    def author(self) -> str:
        return author(self.memdir, self.env)

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

    def settle(self, files: Sequence[str]) -> builtins.list[str]:
        """After a model wrote ``files`` through a plain store: enforce the team rules.

        A ``user`` memory is taken back out (it belongs in private memory) and every
        other file gets its ``author``. Returns notes for the person.
        """
        notes = []
        for file in files:
            doc = frontmatter.parse(self.read(file))
            if str(doc.get("type") or "").lower() == "user":
                self.forget(file)
                notes.append(f"{file} was a 'user' memory, which is always private; it was "
                             "taken out of the team folder. Save it without --scope team.")
            elif doc.has_frontmatter and doc.get(AUTHOR_FIELD) != self.author():
                self.update(file)
        return notes


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
        rel = self._team_rel(file)
        if rel is None:
            return super().write_file(file, text, provenance=provenance)
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
    """The store of a memory location, private and team scopes together."""
    team = team_location(location, env)
    return ScopedStore(location.memdir, team, env=env, location=location, **options)


def index_text(folder: Path) -> str:
    """The raw team ``MEMORY.md`` ('' when there is none)."""
    try:
        return (folder / INDEX_NAME).read_bytes().decode("utf-8", errors="replace")
    except OSError:
        return ""


def load_index(folder: Path) -> Any:
    """The team index as the model receives it: the same 200-line / 25,000-character limits."""
    return load_for_model(index_text(folder))


def find(location: MemoryLocation, env: Mapping[str, str] | None = None) -> TeamLocation | None:
    """The active team folder of a location, or None (no team folder, or a bad setting)."""
    try:
        team = team_location(location, env)
    except ConfigError:
        return None
    return team if team.active else None


# ---------------------------------------------------------------------------- the index


def rebuild_index(folder: Path) -> bool:
    """Write the team ``MEMORY.md`` afresh from the files; True when it changed.

    One line per memory, sorted by file, so two people who rebuild from the same files
    get the same bytes and the index never needs a merge.
    """
    memories = sorted(scan(folder, limit=None, cache=ScanCache()), key=lambda m: m.file)
    lines = ["# Team memory", "",
             "Shared by everyone who syncs this folder; rebuilt from the files on every sync.", ""]
    for memory in memories:
        hook = " ".join((memory.description or "").split()) or "(no description)"
        title = " ".join(memory.name.split()).replace("[", "(").replace("]", ")")
        lines.append(f"- [{title}]({memory.file}) — {hook}"[:300])
    text = "\n".join(lines) + "\n"
    path = folder / INDEX_NAME
    old = index_text(folder) if path.exists() else None
    if old == text:
        return False
    atomic_write(path, text)
    return True


# ---------------------------------------------------------------------------- git


def _git_env(env: Mapping[str, str] | None = None) -> dict[str, str]:
    base = dict(os.environ if env is None else env)
    base.setdefault("PATH", os.environ.get("PATH", "/usr/bin:/bin"))
    base["GIT_TERMINAL_PROMPT"] = "0"
    base["GIT_EDITOR"] = "true"
    base.setdefault("LC_ALL", "C")
    return base


@dataclass
class _Git:
    """git in one repository, with an identity when the person has configured none."""

    cwd: Path
    env: Mapping[str, str] | None = None
    identity: tuple[str, ...] = field(default_factory=tuple)

    def __post_init__(self) -> None:
        if shutil.which("git") is None:
            raise TeamError("git is not installed; install git to share team memory.")
        if not _git_config("user.name", self.cwd, self.env):
            user = author(None, self.env)
            host = socket.gethostname() or "localhost"
            self.identity = ("-c", f"user.name={user}", "-c", f"user.email={user}@{host}")

    def run(self, *args: str, check: bool = True, timeout: float = 120) -> subprocess.CompletedProcess[str]:
        try:
            done = subprocess.run(
                ["git", *self.identity, *args], cwd=self.cwd, capture_output=True, text=True,
                env=_git_env(self.env), timeout=timeout, check=False,
            )
        except subprocess.TimeoutExpired:
            raise TeamError(f"git {args[0]} took longer than {timeout:g}s and was stopped.") from None
        if check and done.returncode != 0:
            raise TeamError(f"git {' '.join(args)} failed: {(done.stderr or done.stdout).strip()}")
        return done

    def out(self, *args: str) -> str:
        return self.run(*args).stdout.strip()


def _git_toplevel(folder: Path) -> Path | None:
    if shutil.which("git") is None or not Path(folder).is_dir():
        return None
    done = subprocess.run(["git", "rev-parse", "--show-toplevel"], cwd=folder,
                          capture_output=True, text=True, env=_git_env(), check=False)
    return Path(done.stdout.strip()) if done.returncode == 0 and done.stdout.strip() else None


def clone(url: str, folder: Path, env: Mapping[str, str] | None = None) -> str:
    """Make ``folder`` a clone of the shared repository ``url``; returns what was done.

    The folder must be missing or empty (a team folder that already holds memories is
    refused, so nothing is overwritten). The clone gets a ``.gitignore`` for the store's
    own files and a ``.gitattributes`` that merges the index line by line.
    """
    folder = Path(folder)
    if folder.exists() and any(p.name != ".lock" for p in folder.iterdir()):
        raise TeamError(
            f"The team folder {folder} is not empty, so it cannot be cloned into. If it "
            "already is a clone, run `jupyter-memory team sync`; otherwise move its files "
            "aside, clone, copy them back and sync."
        )
    folder.parent.mkdir(parents=True, exist_ok=True)
    lock = folder / ".lock"
    if lock.exists():
        lock.unlink()
    if folder.exists():
        folder.rmdir()
    done = subprocess.run(["git", "clone", "--quiet", url, str(folder)], capture_output=True,
                          text=True, env=_git_env(env), timeout=300, check=False)
    if done.returncode != 0:
        raise TeamError(f"git clone {url} failed: {done.stderr.strip()}. Check the address "
                        "and your access to it, then retry.")
    _ensure_git_files(folder)
    return f"Cloned {url} into {folder}."


def _ensure_git_files(folder: Path) -> None:
    for name, text in ((".gitignore", GITIGNORE), (".gitattributes", GITATTRIBUTES)):
        path = folder / name
        if not path.exists():
            atomic_write(path, text)


@dataclass
class TeamStatus:
    """What ``team status`` shows: where the folder syncs to and what is not synced yet."""

    folder: Path
    repository: Path | None
    remote: str | None
    branch: str | None
    changed: list[str]
    ahead: int
    conflicts: list[str]

    def to_json(self) -> dict[str, Any]:
        return {
            "folder": str(self.folder),
            "repository": None if self.repository is None else str(self.repository),
            "remote": self.remote,
            "branch": self.branch,
            "unsynced_changes": self.changed,
            "unpushed_commits": self.ahead,
            "conflict_copies": self.conflicts,
        }

    def text(self) -> str:
        if self.repository is None:
            return (f"Team folder {self.folder} is not in a git repository: it is not shared. "
                    "Run `jupyter-memory team clone URL` to share it through a git remote.")
        lines = [f"Team folder {self.folder}",
                 f"  repository: {self.repository}" + ("" if self.repository == self.folder
                                                        else " (the project's own repository)"),
                 f"  remote: {self.remote or '(none: sync commits locally only)'}"
                 + (f", branch {self.branch}" if self.branch else "")]
        if self.changed:
            lines.append(f"  {len(self.changed)} change(s) not synced yet: " + ", ".join(self.changed))
        if self.ahead:
            lines.append(f"  {self.ahead} commit(s) not pushed yet")
        if not self.changed and not self.ahead:
            lines.append("  nothing to sync (as of the last fetch)")
        if self.conflicts:
            lines.append("  conflict copies to resolve: " + ", ".join(self.conflicts))
        return "\n".join(lines)


def _rel_to_repo(repo: Path, folder: Path) -> str:
    rel = os.path.relpath(os.path.realpath(folder), os.path.realpath(repo))
    return "." if rel == "." else rel


def _changes(git: _Git, spec: str) -> list[tuple[str, str]]:
    out = git.run("status", "--porcelain", "--untracked-files=all", "--", spec).stdout
    changes = []
    for line in out.splitlines():
        code, path = line[:2], line[3:]
        if " -> " in path:
            path = path.split(" -> ", 1)[1]
        changes.append((code.strip() or "M", path.strip('"')))
    return changes


def _upstream(git: _Git) -> tuple[str | None, str | None]:
    branch = git.run("symbolic-ref", "--quiet", "--short", "HEAD", check=False).stdout.strip() or None
    remote = git.run("config", "--get", f"branch.{branch}.remote", check=False).stdout.strip() if branch else ""
    if not remote:
        remotes = git.run("remote", check=False).stdout.split()
        remote = "origin" if "origin" in remotes else (remotes[0] if remotes else "")
    return (remote or None), branch


def _conflict_copies(folder: Path) -> list[str]:
    return sorted(p.relative_to(folder).as_posix() for p in folder.rglob(f"*{CONFLICT_MARK}*.md")
                  if not any(part.startswith(".") for part in p.relative_to(folder).parts))


def status(folder: Path, env: Mapping[str, str] | None = None) -> TeamStatus:
    """The sync state of the team folder, from what git knows locally (no network)."""
    folder = Path(folder)
    repo = _git_toplevel(folder) if folder.is_dir() else None
    if repo is None:
        return TeamStatus(folder, None, None, None, [], 0, [])
    git = _Git(repo, env)
    spec = _rel_to_repo(repo, folder)
    remote, branch = _upstream(git)
    changed = [p for _, p in _changes(git, spec) if not PurePath(p).name.startswith(".")]
    ahead = 0
    if remote and branch:
        tracking = git.run("rev-parse", "--verify", "--quiet", f"{remote}/{branch}", check=False)
        if tracking.returncode == 0:
            ahead = int(git.out("rev-list", "--count", f"{remote}/{branch}..HEAD") or 0)
        else:
            ahead = int(git.run("rev-list", "--count", "HEAD", check=False).stdout.strip() or 0)
    return TeamStatus(folder, repo, remote, branch, changed, ahead, _conflict_copies(folder))


@dataclass
class SyncReport:
    """What a sync did: ``state`` is ``synced``, ``offline`` or ``local`` (no remote)."""

    state: str
    committed: list[str] = field(default_factory=list)
    received: list[str] = field(default_factory=list)
    conflicts: list[dict[str, str]] = field(default_factory=list)
    message: str = ""

    @property
    def ok(self) -> bool:
        return self.state != "offline"

    def to_json(self) -> dict[str, Any]:
        return {"state": self.state, "committed": self.committed, "received": self.received,
                "conflicts": self.conflicts, "message": self.message}

    def text(self) -> str:
        lines = [self.message]
        if self.committed:
            lines.append("Sent: " + ", ".join(self.committed))
        if self.received:
            lines.append("Received: " + ", ".join(self.received))
        for c in self.conflicts:
            lines.append(
                f"conflict: {c['file']} was changed both here and by someone else. Both "
                f"versions are kept: {c['file']} holds the version already shared, "
                f"{c['copy']} holds yours. Merge them into {c['file']}, delete "
                f"{c['copy']}, then run `jupyter-memory team sync` again."
            )
        return "\n".join(line for line in lines if line)


def _summary(changes: Sequence[tuple[str, str]], prefix: str) -> tuple[str, list[str]]:
    words = {"A": "add", "?": "add", "??": "add", "M": "update", "D": "remove", "R": "rename"}
    parts, names = [], []
    for code, path in changes:
        rel = path[len(prefix):] if prefix and path.startswith(prefix) else path
        if PurePath(rel).name.startswith(".") or rel == INDEX_NAME:
            continue
        verb = words.get(code, words.get(code[:1], "update"))
        parts.append(f"{verb} {rel}")
        names.append(rel)
    parts = parts or ["rebuild the index"]
    return ("team memory: " + "; ".join(parts[:8]) + (f"; and {len(parts) - 8} more" if len(parts) > 8 else "")), names


def _commit(git: _Git, spec: str, prefix: str, who: str) -> list[str]:
    changes = _changes(git, spec)
    if not changes:
        return []
    message, names = _summary(changes, prefix)
    git.run("add", "-A", "--", spec)
    if not git.run("diff", "--cached", "--quiet", "--", spec, check=False).returncode:
        return []
    git.run("commit", "--quiet", "-m", message, "-m", f"Written by {who} with jupyter-memory.",
            "--", spec)
    return names


def _in_rebase(git: _Git) -> bool:
    for name in ("rebase-merge", "rebase-apply"):
        path = git.out("rev-parse", "--git-path", name)
        if (git.cwd / path).exists():
            return True
    return False


def _stage(git: _Git, n: int, path: str) -> str | None:
    done = git.run("show", f":{n}:{path}", check=False)
    return done.stdout if done.returncode == 0 else None


def _copy_name(repo: Path, path: str, who: str) -> str:
    slug = re.sub(r"[^A-Za-z0-9]+", "-", who).strip("-").lower() or "local"
    stem = path[:-3] if path.endswith(".md") else path
    candidate, n = f"{stem}{CONFLICT_MARK}{slug}.md", 2
    while (repo / candidate).exists():
        candidate, n = f"{stem}{CONFLICT_MARK}{slug}-{n}.md", n + 1
    return candidate


def _resolve_conflicts(git: _Git, folder: Path, prefix: str, who: str) -> list[dict[str, str]]:
    """Settle every conflicted path of the current rebase step, losing nothing."""
    found: list[dict[str, str]] = []
    paths = git.out("diff", "--name-only", "--diff-filter=U").splitlines()
    for path in paths:
        if prefix and not path.startswith(prefix):
            git.run("rebase", "--abort", check=False)
            raise TeamError(
                f"The sync met a conflict in {path}, outside the team folder; it was undone. "
                "Resolve it with git in the project's repository, then sync again."
            )
        shared, mine = _stage(git, 2, path), _stage(git, 3, path)
        target = git.cwd / path
        if PurePath(path).name == INDEX_NAME or not path.endswith(".md"):
            target.write_text(shared if shared is not None else (mine or ""), encoding="utf-8")
            git.run("add", "--", path)
            continue
        if shared is None or mine is None:  # edited on one side, deleted on the other
            kept = shared if shared is not None else mine
            target.write_text(kept or "", encoding="utf-8")
            git.run("add", "--", path)
            continue
        target.write_text(shared, encoding="utf-8")
        copy = _copy_name(git.cwd, path, who)
        doc = frontmatter.parse(mine)
        text = mine
        if doc.has_frontmatter:
            label = str(doc.get("name") or PurePath(path).stem)
            text = frontmatter.update(mine, {"name": f"{label} (conflicting version by {who})"})
        (git.cwd / copy).write_text(text, encoding="utf-8")
        git.run("add", "--", path, copy)
        rel: Callable[[str], str] = lambda p: TEAM_PREFIX + (p[len(prefix):] if prefix else p)  # noqa: E731
        found.append({"file": rel(path), "copy": rel(copy)})
    rebuild_index(folder)
    git.run("add", "--", _rel_to_repo(git.cwd, folder / INDEX_NAME))
    return found


def sync(folder: Path, env: Mapping[str, str] | None = None, *, lock_timeout: float = 120.0) -> SyncReport:
    """Commit the team folder's changes, pull with rebase, rebuild the index and push.

    Holds the team folder's lock throughout, so no memory is written half-way through a
    rebase. Offline, the commit stays local and the report says the sync waits; the next
    sync pushes it. Two edits of one memory keep both versions (see :class:`SyncReport`).
    """
    folder = Path(folder)
    repo = _git_toplevel(folder) if folder.is_dir() else None
    if repo is None:
        raise TeamError(
            f"The team folder {folder} is not in a git repository, so there is nothing to "
            "sync with. Run `jupyter-memory team clone URL` with the address of the team's "
            "shared repository (an empty bare repository works), or keep the team folder "
            "inside the project's repository."
        )
    git = _Git(repo, env)
    spec = _rel_to_repo(repo, folder)
    prefix = "" if spec == "." else spec.rstrip("/") + "/"
    who = author(folder, env)
    with memdir_lock(folder, timeout=lock_timeout):
        _ensure_git_files(folder)  # a nested .gitignore also works in the project's repo
        rebuild_index(folder)
        committed = _commit(git, spec, prefix, who)
        remote, branch = _upstream(git)
        if remote is None or branch is None:
            return SyncReport("local", committed, message=(
                "Committed locally; this repository has no remote to share with. Add one "
                "(git remote add origin URL) and sync again."))
        report = SyncReport("synced", committed)
        for _attempt in range(3):
            fetched = git.run("fetch", "--quiet", remote, check=False)
            if fetched.returncode != 0:
                return SyncReport("offline", committed, message=(
                    f"Sync waits: could not reach {remote} "
                    f"({(fetched.stderr.strip().splitlines() or ['no answer'])[-1]}). Your "
                    "changes are committed here and will be sent by the next sync."))
            tracking = f"{remote}/{branch}"
            has_remote_branch = git.run("rev-parse", "--verify", "--quiet", tracking,
                                        check=False).returncode == 0
            if has_remote_branch:
                before = git.out("rev-parse", "HEAD")
                incoming = git.run("diff", "--name-only", f"HEAD...{tracking}", "--", spec,
                                   check=False).stdout.split()
                report.received = sorted({
                    (p[len(prefix):] if prefix else p) for p in incoming
                    if p.endswith(".md") and PurePath(p).name != INDEX_NAME} | set(report.received))
                step = git.run("rebase", "--autostash", tracking, check=False)
                guard = 0
                while step.returncode != 0 and _in_rebase(git) and guard < 1000:
                    guard += 1
                    report.conflicts += _resolve_conflicts(git, folder, prefix, who)
                    step = git.run("rebase", "--continue", check=False)
                    if step.returncode != 0 and "nothing to commit" in (step.stdout + step.stderr):
                        step = git.run("rebase", "--skip", check=False)
                if _in_rebase(git):
                    git.run("rebase", "--abort", check=False)
                    raise TeamError(f"The sync could not finish a rebase: {step.stderr.strip()}. "
                                    "Nothing was lost; your commits are as before the sync.")
                del before
            if rebuild_index(folder):
                _commit(git, spec, prefix, who)
            pushed = git.run("push", "--quiet", remote, f"HEAD:{branch}", check=False)
            if pushed.returncode == 0:
                git.run("branch", "--quiet", f"--set-upstream-to={tracking}", check=False)
                break
            if "rejected" not in pushed.stderr and "fetch first" not in pushed.stderr:
                return SyncReport("offline", committed, report.received, report.conflicts, (
                    f"Sync waits: could not push to {remote} "
                    f"({(pushed.stderr.strip().splitlines() or ['no answer'])[-1]}). Your "
                    "changes are committed here and will be sent by the next sync."))
        else:
            raise TeamError("Someone else kept pushing while this sync ran; run sync again.")
    n = len(report.conflicts)
    report.message = (f"Team memory synced with {remote}/{branch}"
                      + (f"; {n} conflict{'s' if n != 1 else ''} kept both versions." if n else "."))
    return report
