"""Where the team folder is: ``<memdir>/team`` or the folder ``teamMemoryDirectory`` names."""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from jupyter_memory.errors import ConfigError
from jupyter_memory.memdir.basedir import home_dir, validate_memory_dir
from jupyter_memory.memdir.index import INDEX_NAME
from jupyter_memory.memdir.location import MemoryLocation
from jupyter_memory.memdir.scopes import TEAM_DIRNAME
from jupyter_memory.memdir.team.git import git_toplevel

__all__ = ["SETTING", "TeamLocation", "find", "team_location"]

SETTING = "teamMemoryDirectory"


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
            "git": git_toplevel(self.folder) is not None if self.exists else False,
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


def find(location: MemoryLocation, env: Mapping[str, str] | None = None) -> TeamLocation | None:
    """The active team folder of a location, or None (no team folder, or a bad setting)."""
    try:
        team = team_location(location, env)
    except ConfigError:
        return None
    return team if team.active else None
