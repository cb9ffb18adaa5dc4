"""Where things live: the memdir, the per-project folder and the transcripts (docs/reference.md#location-and-key).

The location rules copy the reference exactly, because people use this project next to
Claude Code and both must find the same files: the project folder name is the project
root with every character outside ``[A-Za-z0-9]`` turned into ``-``, long names are cut
and given a hash suffix, and all worktrees of one repository share one memdir.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from jupyter_memory.memdir import trust_table
from jupyter_memory.memdir.basedir import (
    _environ,
    config_base,
    home_dir,
    validate_memory_dir,
)
from jupyter_memory.memdir.gateway import Root
from jupyter_memory.memdir.project import canonical_root, git_toplevel, start_folder

MAX_KEY_LENGTH = 200
"""Longest project key kept whole; longer keys are cut here and given a hash suffix."""

MEMORY_DIRNAME = "memory"
REGISTRY_FILENAME = "jupyter-memory-project.json"

ENV_MEMORY_DIR = "JUPYTER_MEMORY_DIR"
ENV_DISABLE = "CLAUDE_CODE_DISABLE_AUTO_MEMORY"

_TRUTHY = frozenset({"1", "true", "yes", "on"})
_FALSY = frozenset({"0", "false", "no", "off"})
_BASE36 = "0123456789abcdefghijklmnopqrstuvwxyz"


# --- the project key ---------------------------------------------------------------


def djb2_hash(s: str) -> int:
    """The reference's string hash, so long keys get the same suffix as Claude Code's.

    ``h = h * 31 + unit`` over the UTF-16 code units of *s*, wrapped to a signed 32-bit
    integer after every step, starting from 0; the absolute value is returned.
    """
    data = s.encode("utf-16-le", "surrogatepass")
    h = 0
    for i in range(0, len(data), 2):
        h = (h * 31 + (data[i] | data[i + 1] << 8)) & 0xFFFFFFFF
    if h >= 0x80000000:
        h -= 0x100000000
    return abs(h)


def _base36(n: int) -> str:
    digits = []
    while True:
        n, rem = divmod(n, 36)
        digits.append(_BASE36[rem])
        if n == 0:
            return "".join(reversed(digits))


def sanitize_key(path: str) -> str:
    """The folder name for a project path, as the reference builds it.

    Each UTF-16 code unit outside ``[A-Za-z0-9]`` becomes ``-`` (so a character outside
    the Basic Multilingual Plane, such as an emoji, gives two). Keys longer than 200
    characters keep their first 200, then ``-`` and the base-36 djb2 hash of *path*.
    """
    parts = []
    for ch in path:
        if ch.isascii() and ch.isalnum():
            parts.append(ch)
        elif ord(ch) > 0xFFFF:
            parts.append("--")
        else:
            parts.append("-")
    key = "".join(parts)
    if len(key) <= MAX_KEY_LENGTH:
        return key
    return f"{key[:MAX_KEY_LENGTH]}-{_base36(djb2_hash(path))}"


# --- base folders --------------------------------------------------------------------


def projects_dir(env: Mapping[str, str] | None = None) -> Path:
    """``<base>/projects``: one folder per project key."""
    return config_base(env) / "projects"


def project_dir(root: Path, env: Mapping[str, str] | None = None) -> Path:
    """``<base>/projects/<key>`` for a project root (memdir, transcripts, registry).

    For a key that had to be cut, an existing folder made by a runtime with a different
    hash (same 200-character prefix, then ``-``) is accepted, so both find one folder.
    """
    base = projects_dir(env)
    key = sanitize_key(str(root))
    exact = base / key
    if len(key) <= MAX_KEY_LENGTH or exact.is_dir():
        return exact
    prefix = key[:MAX_KEY_LENGTH] + "-"
    try:
        matches = sorted(
            entry.name
            for entry in Root.declare("projects", base).scandir()
            if entry.name.startswith(prefix) and entry.is_dir()
        )
    except OSError:
        matches = []
    return base / matches[0] if matches else exact


def transcripts_dir(cwd: Path, env: Mapping[str, str] | None = None) -> Path:
    """Where session logs go: keyed on the working directory itself, not its git root."""
    return project_dir(Path(os.path.realpath(cwd)), env)


# --- validation shared with settings.py ----------------------------------------------


# --- locate ----------------------------------------------------------------------------


@dataclass(frozen=True)
class MemoryLocation:
    """Everything the front ends need to say where memory lives and whether it is on."""

    memdir: Path
    project_root: Path
    source: str  # "env" | "setting" | "default"
    enabled: bool
    enabled_reason: str
    project_dir: Path | None = None  # <base>/projects/<key>: the registry lives here
    memdir_reason: str = ""  # in words: which variable, file or rule chose the memdir
    workspace_root: Path | None = None  # where .claude/settings*.json were read
    notes: tuple[str, ...] = field(default_factory=tuple)

    def to_json(self) -> dict[str, Any]:
        """The ``jupyter-memory path --json`` record (also served by the lab extension)."""
        from jupyter_memory.memdir.index import INDEX_NAME

        return {
            "memdir": str(self.memdir),
            "index": str(self.memdir / INDEX_NAME),
            "exists": self.memdir.is_dir(),
            "project_root": str(self.project_root),
            "project_dir": None if self.project_dir is None else str(self.project_dir),
            "source": self.source,
            "source_reason": self.memdir_reason,
            "enabled": self.enabled,
            "enabled_reason": self.enabled_reason,
            "notes": list(self.notes),
        }


def _enabled_from_env(environ: Mapping[str, str]) -> tuple[bool | None, str, str | None]:
    raw = trust_table.env(ENV_DISABLE, environ)
    if raw is None:
        return None, "", None
    value = raw.strip().lower()
    if value in _TRUTHY:
        return False, f"off: {ENV_DISABLE}={raw} switches auto memory off", None
    if value in _FALSY:
        return True, f"on: {ENV_DISABLE}={raw} forces auto memory on over any setting", None
    note = None
    if value:
        note = (
            f"{ENV_DISABLE}={raw!r} is neither true (1/true/yes/on) nor false "
            "(0/false/no/off), so it was ignored."
        )
    return None, "", note


def locate(project: Path | None = None, env: Mapping[str, str] | None = None) -> MemoryLocation:
    """Work out the memdir for *project* (default: the current folder) and whether it is on.

    The memdir is ``JUPYTER_MEMORY_DIR`` if set, else ``autoMemoryDirectory`` from the
    project-local or user settings, else ``<base>/projects/<key>/memory``. Raises
    ``ConfigError`` when the chosen override is not a usable path.
    """
    from jupyter_memory.memdir.settings import load_settings  # settings.py imports this module

    environ = _environ(env)
    folder = start_folder(Path.cwd() if project is None else Path(project))
    top = git_toplevel(folder)
    root = folder if top is None else canonical_root(top)
    workspace = top if top is not None else folder
    settings = load_settings(workspace, environ)
    notes = list(settings.warnings)
    pdir = project_dir(root, environ)

    env_dir = trust_table.env(ENV_MEMORY_DIR, environ)
    chosen = None if env_dir else settings.memory_directory()
    if env_dir:
        memdir = validate_memory_dir(
            env_dir, where=f"the {ENV_MEMORY_DIR} environment variable", home=home_dir(environ)
        )
        source, memdir_reason = "env", f"{ENV_MEMORY_DIR} environment variable"
    elif chosen is not None:
        memdir, source = chosen.path, "setting"
        memdir_reason = f"autoMemoryDirectory in {chosen.file}"
    else:
        memdir, source = pdir / MEMORY_DIRNAME, "default"
        memdir_reason = "default location for this project"
    notes += settings.memory_directory_notes()

    enabled, reason, env_note = _enabled_from_env(environ)
    if env_note:
        notes.append(env_note)
    if enabled is None:
        decided = settings.auto_memory_enabled
        if decided is not None:
            enabled = decided.value
            state = "on" if enabled else "off"
            reason = (
                f"{state}: autoMemoryEnabled is {str(enabled).lower()} in the "
                f"{decided.source} settings ({decided.file})"
            )
        else:
            enabled = True
            reason = "on: the default (no environment variable or setting decides)"

    return MemoryLocation(
        memdir=memdir,
        project_root=root,
        source=source,
        enabled=enabled,
        enabled_reason=reason,
        project_dir=pdir,
        memdir_reason=memdir_reason,
        workspace_root=workspace,
        notes=tuple(notes),
    )


# --- the project registry ------------------------------------------------------------


def _recorded_root(pdir: Path) -> Path | None:
    try:
        data = json.loads(Root.declare("projects", pdir).text(REGISTRY_FILENAME))
    except (OSError, ValueError):
        return None
    root = data.get("project_root") if isinstance(data, dict) else None
    return Path(root) if isinstance(root, str) and root else None


def record_project_root(project_dir: Path, project_root: Path) -> None:
    """Note which project a per-project folder belongs to, since the key is not reversible.

    ``doctor`` reads these notes to find memdirs whose project moved or vanished. The
    file is rewritten only when the recorded root changes.
    """
    if _recorded_root(project_dir) == Path(project_root):
        return
    payload = {
        "project_root": str(project_root),
        "recorded_at": datetime.now(timezone.utc).isoformat(timespec="seconds"),
    }
    Root.declare("projects", project_dir).write(REGISTRY_FILENAME,
                                                json.dumps(payload, indent=2) + "\n")


def iter_project_dirs(
    env: Mapping[str, str] | None = None,
) -> Iterator[tuple[Path, Path | None]]:
    """Every ``<base>/projects/<key>`` folder, in name order, with its recorded root or None."""
    base = projects_dir(env)
    try:
        names = sorted(entry.name for entry in Root.declare("projects", base).scandir()
                       if entry.is_dir())
    except OSError:
        return
    for name in names:
        yield base / name, _recorded_root(base / name)
