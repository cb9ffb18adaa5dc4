"""Where the team folder is: ``<memdir>/team`` or the folder ``teamMemoryDirectory`` names."""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from jupyter_memory.errors import ConfigError
from jupyter_memory.memdir.basedir import home_dir, validate_memory_dir
from jupyter_memory.memdir.gateway import PathRefused, Root
from jupyter_memory.memdir.index import INDEX_NAME
from jupyter_memory.memdir.location import MemoryLocation
from jupyter_memory.memdir.scopes import TEAM_DIRNAME
from jupyter_memory.memdir.team.git import git_toplevel

__all__ = ["SETTING", "TeamLocation", "team_location"]

SETTING = "teamMemoryDirectory"


@dataclass(frozen=True)
class TeamLocation:
    """Where the team folder is, and which rule chose it."""

    folder: Path
    source: str  # "default" | "user" | "local" | "project"
    reason: str
    memdir: Path
    #: Settings that were ignored (an untrusted project's, or one leading out of it).
    notes: tuple[str, ...] = ()

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
            "notes": list(self.notes),
            "git": git_toplevel(self.folder) is not None if self.exists else False,
        }


def team_location(location: MemoryLocation, env: Mapping[str, str] | None = None) -> TeamLocation:
    """Find the team folder of a memory location.

    ``teamMemoryDirectory`` is read through the trust table from the project-local, then
    the user settings (an absolute path or one starting ``~/``), then the shared project
    settings, where it names a folder relative to the repository's root. The person's
    own value may point anywhere; a project file's counts only in a trusted folder and
    only for a folder that really lies inside the project (no link leading out), so a
    cloned repository cannot aim team writes at, say, ``~/.ssh``: such a value is ignored
    with a note and the folder is ``<memdir>/team``. Raises :class:`ConfigError` for an
    unusable value that would otherwise take effect.
    """
    from jupyter_memory.memdir.settings import load_settings
    from jupyter_memory.memdir.trust import how_to_trust

    environ = os.environ if env is None else env
    root = location.workspace_root or location.project_root
    settings = load_settings(Path(root), environ)
    notes: list[str] = []
    for name in ("local", "user", "project"):
        src = settings.source(name)
        reading = settings.reading(SETTING, name)
        if reading is None or reading.value in (None, ""):
            continue
        where = f"{SETTING} in {src.path}"
        if not reading.taken:
            notes.append(f"{where} was ignored: {reading.why}. {how_to_trust(root)}")
            continue
        raw = reading.value
        if name == "project":
            if not isinstance(raw, str) or "\0" in raw:
                raise ConfigError(f"{where} must be a folder path inside the repository.")
            folder = Path(os.path.normpath(os.path.join(os.path.realpath(root), raw)))
        else:
            folder = validate_memory_dir(raw, where=where, home=home_dir(environ))
        if name != "user":
            try:
                Root.declare("team", folder, within=Root.declare("project", root),
                             placed_by=where)
            except PathRefused as exc:
                notes.append(f"{where} was ignored: {folder} is outside the project ({exc.why}). "
                             "A folder elsewhere belongs in your user settings.json.")
                continue
        return TeamLocation(folder, name, where, Path(location.memdir), tuple(notes))
    folder = Path(location.memdir) / TEAM_DIRNAME
    return TeamLocation(folder, "default", "the team folder inside the memdir",
                        Path(location.memdir), tuple(notes))

