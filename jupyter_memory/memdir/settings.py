"""The three Claude Code settings files that steer memory (docs/reference.md#location-and-key).

User ``<base>/settings.json``, shared project ``.claude/settings.json`` and
project-local ``.claude/settings.local.json`` are read and merged, later ones winning.
A broken file never stops the kernel: it is treated as empty and a warning is kept for
``%memory`` and ``doctor`` to show.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from jupyter_memory.memdir import trust_table
from jupyter_memory.memdir.basedir import config_base, home_dir, validate_memory_dir
from jupyter_memory.memdir.gateway import PathRefused, Root, config_root
from jupyter_memory.memdir.trust import how_to_trust, is_trusted, untrusted_env

SOURCES = ("user", "project", "local")
"""Settings sources from lowest to highest precedence."""

DEFAULT_CLEANUP_PERIOD_DAYS = 30

_DIR_KEY = "autoMemoryDirectory"
_ENABLED_KEY = "autoMemoryEnabled"
_CLEANUP_KEY = "cleanupPeriodDays"
_TEAM_KEY = "teamMemoryDirectory"


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
        """The value of ``key`` that takes effect (see :meth:`lookup`), else ``default``."""
        found = self.lookup(key)
        return default if found is None else found.value

    def lookup(self, key: str) -> SettingValue | None:
        """``key`` from the highest-precedence file that sets it and may.

        Read through the trust table (:func:`~jupyter_memory.memdir.trust_table.read`): a
        project file's value that can do more than be data counts only in a trusted
        folder, and a key the table does not list raises ``UnknownField``.
        """
        for src in reversed(self.sources):
            reading = self.reading(key, src.name)
            if reading is not None and reading.taken:
                return SettingValue(reading.value, src.name, src.path)
        return None

    def reading(self, key: str, source: str) -> trust_table.Reading | None:
        """``key`` as one file set it, and whether it takes effect (None when unset)."""
        src = self.source(source)
        return trust_table.read(key, src.values, source, trusted=self.source_trusted(source))

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
            reading = self.reading(_DIR_KEY, name)
            if reading is None or reading.value == "" or not reading.taken:
                continue
            raw = reading.value
            where = f"autoMemoryDirectory in {src.path}"
            path = validate_memory_dir(raw, where=where, home=self.home)
            if name == "local" and not self._inside_project(path, where):
                continue
            return MemoryDirectorySetting(path=path, raw=raw, source=name, file=src.path)
        return None

    def _inside_project(self, path: Path, placed_by: str) -> bool:
        """Whether a folder a project file names really lies inside the project."""
        if self.root is None:
            return True
        try:
            Root.declare("memdir", path, within=Root.declare("project", self.root),
                         placed_by=placed_by)
        except PathRefused:
            return False
        return True

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
        reading = self.reading(_DIR_KEY, "local")
        if reading is None or reading.value in (None, ""):
            return notes
        raw = reading.value
        if not reading.taken:
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
        if not self._inside_project(path, f"autoMemoryDirectory in {local.path}"):
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
            hooks = self.reading("hooks", name)
            if hooks is not None and isinstance(hooks.value, Mapping) and hooks.value:
                events = ", ".join(str(k) for k in hooks.value)
                wants.append(f"shell hooks ({events}) in {src.path}")
        for reading in (self.reading(_DIR_KEY, "local"), self.reading(_TEAM_KEY, "project"),
                        self.reading(_TEAM_KEY, "local")):
            if reading is not None and reading.value not in (None, ""):
                where = self.source(reading.origin).path
                wants.append(f"{reading.key} {reading.value!r} in {where}")
        return wants

    def skipped_notice(self) -> str | None:
        """One line saying which project hooks were skipped and how to trust, or None."""
        if self.trusted:
            return None
        files = []
        for src in self.sources[1:]:
            hooks = self.reading("hooks", src.name)
            if hooks is not None and isinstance(hooks.value, Mapping) and hooks.value:
                files.append(str(src.path))
        if not files:
            return None
        where = self.root if self.root is not None else Path(files[0]).parent.parent
        return (f"Skipped the hooks in {' and '.join(files)}: this folder is not trusted. "
                + how_to_trust(where))

    @property
    def ignored_memory_directory(self) -> Path | None:
        """The shared project file, if it tries to set ``autoMemoryDirectory`` (ignored)."""
        reading = self.reading(_DIR_KEY, "project")
        return self.source("project").path if reading is not None and reading.value not in (
            None, "") else None


def settings_paths(project_root: Path, env: Mapping[str, str] | None = None) -> dict[str, Path]:
    """The path of each settings file, keyed by source name."""
    claude = Path(project_root) / ".claude"
    return {
        "user": config_base(env) / "settings.json",
        "project": claude / "settings.json",
        "local": claude / "settings.local.json",
    }


def _read(name: str, path: Path, root: Root, warnings: list[str]) -> SettingsSource:
    try:
        text = root.text(path)
    except FileNotFoundError:
        return SettingsSource(name, path, {}, exists=False)
    except PathRefused as exc:
        warnings.append(f"{path} was not read: {exc.why}; its settings were skipped.")
        return SettingsSource(name, path, {}, exists=True)
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
        value = trust_table.value(_ENABLED_KEY, src.values, src.name)
        if value is None:
            continue
        if isinstance(value, bool):
            return SettingValue(value, src.name, src.path)
        warnings.append(
            f"autoMemoryEnabled in {src.path} is {value!r}; it must be true or false, "
            "so it was ignored."
        )
    return None


def _cleanup_days(sources: tuple[SettingsSource, ...], warnings: list[str]) -> int:
    found = [(value, src.path) for src in reversed(sources)
             if (value := trust_table.value(_CLEANUP_KEY, src.values, src.name)) is not None]
    if not found:
        return DEFAULT_CLEANUP_PERIOD_DAYS
    value, where = found[0]
    if isinstance(value, int) and not isinstance(value, bool) and value >= 0:
        return value
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
    roots = {"user": config_root(env), "project": Root.declare("project", project_root)}
    sources = tuple(_read(name, paths[name], roots.get(name, roots["project"]), warnings)
                    for name in SOURCES)
    merged: dict[str, Any] = {}
    for src in sources:
        merged = _merge(merged, src.values)
    enabled = _enabled(sources, warnings)
    cleanup = _cleanup_days(sources, warnings)
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
