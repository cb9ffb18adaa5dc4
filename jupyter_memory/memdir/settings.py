"""The three Claude Code settings files that steer memory (docs/reference.md#location-and-key).

User ``<base>/settings.json``, shared project ``.claude/settings.json`` and
project-local ``.claude/settings.local.json`` are read and merged, later ones winning.
A broken file never stops the kernel: it is treated as empty and a warning is kept for
``%memory`` and ``doctor`` to show.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from jupyter_memory.memdir.basedir import config_base, home_dir, validate_memory_dir
from jupyter_memory.memdir.trust import how_to_trust, is_trusted, untrusted_env

SOURCES = ("user", "project", "local")
"""Settings sources from lowest to highest precedence."""

DEFAULT_CLEANUP_PERIOD_DAYS = 30

_DIR_KEY = "autoMemoryDirectory"
_ENABLED_KEY = "autoMemoryEnabled"
_CLEANUP_KEY = "cleanupPeriodDays"


@dataclass(frozen=True)
class SettingsSource:
    """One settings file: where it is, whether it exists and what it holds."""

    name: str  # "user" | "project" | "local"
    path: Path
    values: dict[str, Any]
    exists: bool


@dataclass(frozen=True)
class SettingValue:
    """A value together with the file that decided it, so messages can name the file."""

    value: Any
    source: str
    file: Path


@dataclass(frozen=True)
class MemoryDirectorySetting:
    """A validated ``autoMemoryDirectory``: the normalised path and where it was written."""

    path: Path
    raw: str
    source: str
    file: Path


@dataclass(frozen=True)
class Settings:
    """Merged settings plus each file's own values and any problems met while reading."""

    sources: tuple[SettingsSource, ...]
    merged: dict[str, Any]
    warnings: tuple[str, ...]
    home: Path
    cleanup_period_days: int = DEFAULT_CLEANUP_PERIOD_DAYS
    auto_memory_enabled: SettingValue | None = None
    #: The folder whose ``.claude/`` was read (None: built by hand, no project files).
    root: Path | None = None
    #: Whether that folder is trusted (see ``trust.py``); project files count only then.
    trusted: bool = True
    #: False when ``JUPYTER_MEMORY_UNTRUSTED`` is set: not even the user files run hooks.
    user_trusted: bool = True

    def source(self, name: str) -> SettingsSource:
        for src in self.sources:
            if src.name == name:
                return src
        raise KeyError(f"no settings source {name!r}; expected one of {', '.join(SOURCES)}")

    @property
    def user(self) -> dict[str, Any]:
        return self.source("user").values

    @property
    def project(self) -> dict[str, Any]:
        return self.source("project").values

    @property
    def local(self) -> dict[str, Any]:
        return self.source("local").values

    def get(self, key: str, default: Any = None) -> Any:
        """The merged value of a top-level key."""
        return self.merged.get(key, default)

    def lookup(self, key: str) -> SettingValue | None:
        """The value of *key* from the highest-precedence file that sets it."""
        for src in reversed(self.sources):
            if key in src.values:
                return SettingValue(src.values[key], src.name, src.path)
        return None

    def source_trusted(self, name: str) -> bool:
        """Whether settings from source ``name`` may run code or move paths.

        The user file is the person's own; the project and local files arrive with the
        folder, so they count only in a trusted folder.
        """
        return self.user_trusted if name == "user" else self.trusted

    def memory_directory(self) -> MemoryDirectorySetting | None:
        """``autoMemoryDirectory`` from the local or user file (local first), validated.

        The shared project file is skipped on purpose: it arrives with a cloned
        repository, which must not be able to aim memory writes at, say, ``~/.ssh``.
        The local file counts only in a trusted folder and only for a folder inside the
        project (see :meth:`memory_directory_notes`). An empty string counts as unset.
        Raises ``ConfigError`` for an unusable value.
        """
        for name in ("local", "user"):
            src = self.source(name)
            raw = src.values.get(_DIR_KEY)
            if raw is None or raw == "" or not self.source_trusted(name):
                continue
            where = f"autoMemoryDirectory in {src.path}"
            path = validate_memory_dir(raw, where=where, home=self.home)
            if name == "local" and not self._inside_project(path):
                continue
            return MemoryDirectorySetting(path=path, raw=raw, source=name, file=src.path)
        return None

    def _inside_project(self, path: Path) -> bool:
        if self.root is None:
            return True
        root = Path(os.path.realpath(self.root))
        real = Path(os.path.realpath(path))
        return real == root or root in real.parents

    def memory_directory_notes(self) -> list[str]:
        """Why a project's ``autoMemoryDirectory`` was not obeyed, one sentence each."""
        notes = []
        project = self.ignored_memory_directory
        if project is not None:
            notes.append(
                f"autoMemoryDirectory in {project} was ignored: shared project settings come "
                "with the repository and may not move the memdir. Put it in "
                ".claude/settings.local.json or your user settings.json instead."
            )
        local = self.source("local")
        raw = local.values.get(_DIR_KEY)
        if raw in (None, ""):
            return notes
        if not self.trusted:
            notes.append(
                f"autoMemoryDirectory in {local.path} was ignored: this folder is not trusted. "
                + how_to_trust(self.root if self.root is not None else local.path.parent.parent)
            )
            return notes
        try:
            path = validate_memory_dir(raw, where=f"autoMemoryDirectory in {local.path}",
                                       home=self.home)
        except Exception:  # memory_directory() raises the full error
            return notes
        if not self._inside_project(path):
            notes.append(
                f"autoMemoryDirectory in {local.path} was ignored: {path} is outside the "
                "project, and project settings may not move memory out of it. Set it in your "
                "user settings.json or with JUPYTER_MEMORY_DIR instead."
            )
        return notes

    def needs_trust(self) -> list[str]:
        """What the project and local files would do once trusted (empty: nothing to ask)."""
        if self.trusted:
            return []
        wants = []
        for name in ("project", "local"):
            src = self.source(name)
            hooks = src.values.get("hooks")
            if isinstance(hooks, Mapping) and hooks:
                events = ", ".join(str(k) for k in hooks)
                wants.append(f"shell hooks ({events}) in {src.path}")
        raw = self.source("local").values.get(_DIR_KEY)
        if raw not in (None, ""):
            wants.append(f"autoMemoryDirectory {raw!r} in {self.source('local').path}")
        return wants

    def skipped_notice(self) -> str | None:
        """One line saying which project hooks were skipped and how to trust, or None."""
        if self.trusted:
            return None
        files = [str(s.path) for s in self.sources if s.name != "user"
                 and isinstance(s.values.get("hooks"), Mapping) and s.values.get("hooks")]
        if not files:
            return None
        where = self.root if self.root is not None else Path(files[0]).parent.parent
        return (f"Skipped the hooks in {' and '.join(files)}: this folder is not trusted. "
                + how_to_trust(where))

    @property
    def ignored_memory_directory(self) -> Path | None:
        """The shared project file, if it tries to set ``autoMemoryDirectory`` (ignored)."""
        src = self.source("project")
        return src.path if src.values.get(_DIR_KEY) not in (None, "") else None


def settings_paths(project_root: Path, env: Mapping[str, str] | None = None) -> dict[str, Path]:
    """The path of each settings file, keyed by source name."""
    claude = Path(project_root) / ".claude"
    return {
        "user": config_base(env) / "settings.json",
        "project": claude / "settings.json",
        "local": claude / "settings.local.json",
    }


def _read(name: str, path: Path, warnings: list[str]) -> SettingsSource:
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return SettingsSource(name, path, {}, exists=False)
    except (OSError, UnicodeDecodeError) as exc:
        warnings.append(f"Could not read {path} ({exc}); its settings were skipped.")
        return SettingsSource(name, path, {}, exists=True)
    if not text.strip():
        return SettingsSource(name, path, {}, exists=True)
    try:
        data = json.loads(text)
    except (ValueError, RecursionError) as exc:
        warnings.append(
            f"{path} is not valid JSON ({exc}); its settings were skipped. "
            "Fix the syntax (a trailing comma or a missing quote is the usual cause)."
        )
        return SettingsSource(name, path, {}, exists=True)
    if not isinstance(data, dict):
        warnings.append(
            f"{path} holds a JSON {type(data).__name__}, not an object; its settings were "
            'skipped. Wrap them in {"key": value, ...}.'
        )
        return SettingsSource(name, path, {}, exists=True)
    return SettingsSource(name, path, data, exists=True)


def _merge(low: dict[str, Any], high: Mapping[str, Any]) -> dict[str, Any]:
    """Nested objects merge key by key; any other value from *high* replaces *low*'s."""
    out = dict(low)
    for key, value in high.items():
        if isinstance(value, Mapping) and isinstance(out.get(key), dict):
            out[key] = _merge(out[key], value)
        else:
            out[key] = value
    return out


def _enabled(sources: tuple[SettingsSource, ...], warnings: list[str]) -> SettingValue | None:
    for src in reversed(sources):
        if _ENABLED_KEY not in src.values:
            continue
        value = src.values[_ENABLED_KEY]
        if isinstance(value, bool):
            return SettingValue(value, src.name, src.path)
        warnings.append(
            f"autoMemoryEnabled in {src.path} is {value!r}; it must be true or false, "
            "so it was ignored."
        )
    return None


def _cleanup_days(
    merged: Mapping[str, Any], sources: tuple[SettingsSource, ...], warnings: list[str]
) -> int:
    value = merged.get(_CLEANUP_KEY)
    if value is None:
        return DEFAULT_CLEANUP_PERIOD_DAYS
    if isinstance(value, int) and not isinstance(value, bool) and value >= 0:
        return value
    where = next(str(s.path) for s in reversed(sources) if _CLEANUP_KEY in s.values)
    warnings.append(
        f"cleanupPeriodDays in {where} is {value!r}; it must be a whole number of days "
        f"(0 or more), so the default of {DEFAULT_CLEANUP_PERIOD_DAYS} is used."
    )
    return DEFAULT_CLEANUP_PERIOD_DAYS


def load_settings(project_root: Path, env: Mapping[str, str] | None = None) -> Settings:
    """Read and merge the user, project and project-local settings; never raises on content.

    Missing files count as empty; unreadable or malformed ones count as empty too and
    leave a message in ``Settings.warnings``.
    """
    warnings: list[str] = []
    paths = settings_paths(project_root, env)
    sources = tuple(_read(name, paths[name], warnings) for name in SOURCES)
    merged: dict[str, Any] = {}
    for src in sources:
        merged = _merge(merged, src.values)
    enabled = _enabled(sources, warnings)
    cleanup = _cleanup_days(merged, sources, warnings)
    return Settings(
        sources=sources,
        merged=merged,
        warnings=tuple(warnings),
        home=home_dir(env),
        cleanup_period_days=cleanup,
        auto_memory_enabled=enabled,
        root=Path(project_root),
        trusted=is_trusted(project_root, env).trusted,
        user_trusted=not untrusted_env(env),
    )
