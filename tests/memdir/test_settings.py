"""The three settings files: reading, merging, per-source values and broken files."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from jupyter_memory.errors import ConfigError
from jupyter_memory.memdir.settings import (
    DEFAULT_CLEANUP_PERIOD_DAYS,
    SOURCES,
    load_settings,
    settings_paths,
)
from jupyter_memory.memdir.trust import trust_folder
from jupyter_memory.memdir.trust_table import UnknownField


@pytest.fixture
def files(project: Path, env: dict[str, str]) -> dict[str, Path]:
    return settings_paths(project, env)


def put(path: Path, data: object) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(data if isinstance(data, str) else json.dumps(data), encoding="utf-8")


def test_paths_of_the_three_files(project: Path, env: dict[str, str]) -> None:
    paths = settings_paths(project, env)
    assert paths == {
        "user": Path(env["CLAUDE_CONFIG_DIR"]) / "settings.json",
        "project": project / ".claude" / "settings.json",
        "local": project / ".claude" / "settings.local.json",
    }


def test_missing_files_are_empty(project: Path, env: dict[str, str]) -> None:
    s = load_settings(project, env)
    assert [src.name for src in s.sources] == list(SOURCES)
    assert all(not src.exists and src.values == {} for src in s.sources)
    assert s.merged == {}
    assert s.warnings == ()
    assert s.cleanup_period_days == DEFAULT_CLEANUP_PERIOD_DAYS == 30
    assert s.auto_memory_enabled is None
    assert s.memory_directory() is None
    assert s.ignored_memory_directory is None


def test_defaults_to_process_environment(project: Path, isolated_home: Path) -> None:
    put(isolated_home / ".claude" / "settings.json", {"cleanupPeriodDays": 9})
    assert load_settings(project).cleanup_period_days == 9


def test_merge_precedence_and_per_source_values(
    project: Path, env: dict[str, str], files: dict[str, Path]
) -> None:
    put(files["user"], {"a": "user", "b": "user", "c": "user", "nested": {"x": 1, "y": 1}})
    put(files["project"], {"b": "project", "c": "project", "nested": {"y": 2}, "list": [1]})
    put(files["local"], {"c": "local", "list": [2]})
    s = load_settings(project, env)
    assert s.merged == {
        "a": "user",
        "b": "project",
        "c": "local",
        "nested": {"x": 1, "y": 2},
        "list": [2],
    }
    assert s.user["c"] == "user" and s.project["c"] == "project" and s.local["c"] == "local"
    assert all(src.exists for src in s.sources)


def test_lookup_reads_through_the_trust_table(
    project: Path, env: dict[str, str], files: dict[str, Path]
) -> None:
    put(files["user"], {"cleanupPeriodDays": 1, "autoMemoryEnabled": True})
    put(files["project"], {"cleanupPeriodDays": 2, "hooks": {"Stop": []}})
    put(files["local"], {"cleanupPeriodDays": 3})
    s = load_settings(project, env)
    found = s.lookup("cleanupPeriodDays")
    assert found is not None and (found.value, found.source, found.file) == (3, "local", files["local"])
    assert s.get("autoMemoryEnabled") is True and s.get("teamMemoryDirectory", 5) == 5
    assert s.get("hooks") is None  # a project's hooks count only in a trusted folder
    reading = s.reading("hooks", "project")
    assert reading is not None and not reading.taken and reading.why == "this folder is not trusted"
    with pytest.raises(UnknownField, match="not in the trust table"):
        s.lookup("c")


@pytest.mark.parametrize(
    ("text", "fragment"),
    [
        ('{"cleanupPeriodDays": 5,}', "not valid JSON"),
        ("{broken", "not valid JSON"),
        ("[1, 2]", "not an object"),
        ('"just a string"', "not an object"),
        ("[" * 100_000, "not valid JSON"),
    ],
)
def test_broken_file_gives_a_warning_not_an_exception(
    project: Path, env: dict[str, str], files: dict[str, Path], text: str, fragment: str
) -> None:
    put(files["project"], text)
    put(files["user"], {"cleanupPeriodDays": 7})
    s = load_settings(project, env)
    assert s.project == {}
    assert s.source("project").exists
    assert s.cleanup_period_days == 7  # the other files still count
    assert len(s.warnings) == 1
    assert str(files["project"]) in s.warnings[0] and fragment in s.warnings[0]


def test_unreadable_file_gives_a_warning(
    project: Path, env: dict[str, str], files: dict[str, Path]
) -> None:
    files["local"].mkdir(parents=True)  # a folder where the file should be
    s = load_settings(project, env)
    assert s.local == {}
    assert len(s.warnings) == 1 and str(files["local"]) in s.warnings[0]


def test_invalid_utf8_gives_a_warning(
    project: Path, env: dict[str, str], files: dict[str, Path]
) -> None:
    files["user"].parent.mkdir(parents=True)
    files["user"].write_bytes(b'{"a": "\xff"}')
    s = load_settings(project, env)
    assert s.user == {} and len(s.warnings) == 1


def test_blank_file_is_empty_without_warning(
    project: Path, env: dict[str, str], files: dict[str, Path]
) -> None:
    put(files["user"], "  \n")
    s = load_settings(project, env)
    assert s.user == {} and s.warnings == ()


def test_cleanup_period_from_highest_precedence(
    project: Path, env: dict[str, str], files: dict[str, Path]
) -> None:
    put(files["user"], {"cleanupPeriodDays": 90})
    put(files["local"], {"cleanupPeriodDays": 0})
    assert load_settings(project, env).cleanup_period_days == 0


@pytest.mark.parametrize("value", ["14", -1, 2.5, True, None])
def test_bad_cleanup_period_falls_back_to_default(
    project: Path, env: dict[str, str], files: dict[str, Path], value: object
) -> None:
    put(files["local"], {"cleanupPeriodDays": value})
    s = load_settings(project, env)
    assert s.cleanup_period_days == 30
    if value is None:
        assert s.warnings == ()  # null means unset
    else:
        assert len(s.warnings) == 1
        assert "cleanupPeriodDays" in s.warnings[0] and str(files["local"]) in s.warnings[0]


def test_auto_memory_enabled_per_source(
    project: Path, env: dict[str, str], files: dict[str, Path]
) -> None:
    put(files["user"], {"autoMemoryEnabled": True})
    put(files["project"], {"autoMemoryEnabled": False})
    s = load_settings(project, env)
    assert s.auto_memory_enabled is not None
    assert (s.auto_memory_enabled.value, s.auto_memory_enabled.source) == (False, "project")
    put(files["local"], {"autoMemoryEnabled": "yes"})
    s = load_settings(project, env)
    assert s.auto_memory_enabled is not None
    assert s.auto_memory_enabled.source == "project"
    assert any("autoMemoryEnabled" in w and str(files["local"]) in w for w in s.warnings)


def test_memory_directory_from_local_then_user(
    project: Path, env: dict[str, str], files: dict[str, Path]
) -> None:
    put(files["user"], {"autoMemoryDirectory": "~/user-mem"})
    s = load_settings(project, env)
    chosen = s.memory_directory()
    assert chosen is not None
    assert (chosen.path, chosen.source, chosen.file, chosen.raw) == (
        Path(env["HOME"]) / "user-mem",
        "user",
        files["user"],
        "~/user-mem",
    )
    inside = project / "local-mem"
    put(files["local"], {"autoMemoryDirectory": str(inside)})
    chosen = load_settings(project, env).memory_directory()
    assert chosen is not None and chosen.source == "user"  # an untrusted folder's file
    trust_folder(project, env)
    chosen = load_settings(project, env).memory_directory()
    assert chosen is not None and (chosen.path, chosen.source) == (inside, "local")
    put(files["local"], {"autoMemoryDirectory": "/srv/local-mem"})  # outside the project
    s = load_settings(project, env)
    assert s.memory_directory() is not None and s.memory_directory().source == "user"
    assert any("outside the project" in n for n in s.memory_directory_notes())


def test_memory_directory_in_shared_project_file_is_ignored(
    project: Path, env: dict[str, str], files: dict[str, Path]
) -> None:
    put(files["project"], {"autoMemoryDirectory": "~/.ssh"})
    s = load_settings(project, env)
    assert s.memory_directory() is None
    assert s.ignored_memory_directory == files["project"]
    assert s.merged["autoMemoryDirectory"] == "~/.ssh"  # still visible in the raw merge
    assert s.get("autoMemoryDirectory") is None


def test_invalid_memory_directory_raises_only_when_asked(
    project: Path, env: dict[str, str], files: dict[str, Path]
) -> None:
    put(files["user"], {"autoMemoryDirectory": "relative/mem"})
    s = load_settings(project, env)  # loading never raises on content
    with pytest.raises(ConfigError, match="relative"):
        s.memory_directory()


def test_unknown_source_name_is_a_clear_error(project: Path, env: dict[str, str]) -> None:
    with pytest.raises(KeyError, match="user, project, local"):
        load_settings(project, env).source("managed")
