"""Scopes in the storage layer: their names, the folder each means, and the team's checks."""

from __future__ import annotations

from pathlib import Path

import pytest

from jupyter_memory.errors import ConfigError, InvalidMemory
from jupyter_memory.memdir.scopes import (
    AGENT_SCOPES,
    MEMORY_SCOPES,
    WRITE_SCOPES,
    check_agent_name,
    check_team_type,
    default_scope,
    scope_dir,
    scope_of,
)


def test_scope_dirs(tmp_path: Path):
    env = {"CLAUDE_CONFIG_DIR": str(tmp_path / "base"), "HOME": str(tmp_path)}
    mem, root = tmp_path / "mem", tmp_path / "proj"
    assert scope_dir("memdir", memdir=mem, project_root=root) == mem
    assert scope_dir("user", memdir=mem, project_root=root, agent="rev", env=env) == (
        tmp_path / "base" / "agent-memory" / "rev")
    assert scope_dir("project", memdir=mem, project_root=root, agent="rev") == (
        root / ".claude" / "agent-memory" / "rev")
    assert scope_dir("local", memdir=mem, project_root=root, agent="rev") == (
        root / ".claude" / "agent-memory-local" / "rev")
    for bad in ("../x", "a/b", "", ".hidden"):
        with pytest.raises(ConfigError):
            scope_dir("user", memdir=mem, project_root=root, agent=bad, env=env)
    assert scope_dir("team", memdir=mem, project_root=root) == mem / "team"  # docs/reference.md#team-mode
    shared = tmp_path / "shared-team"
    assert scope_dir("team", memdir=mem, project_root=root, team_dir=shared) == shared
    assert scope_dir("private", memdir=mem, project_root=root) == mem
    with pytest.raises(ConfigError, match="use one of memdir, private, team, user"):
        scope_dir("everyone", memdir=mem, project_root=root)


def test_the_scope_families_have_one_meaning_each():
    assert MEMORY_SCOPES == ("private", "team")
    assert AGENT_SCOPES == ("user", "project", "local")
    assert WRITE_SCOPES == ("memdir", "private", "team", "user", "project", "local")
    assert not set(MEMORY_SCOPES) & set(AGENT_SCOPES)


def test_scope_of_a_file_and_the_default_scope_of_a_type():
    assert scope_of("team/db.md") == "team"
    assert scope_of("project_db.md") == "private"
    assert scope_of("teams/db.md") == "private"
    assert [default_scope(t) for t in ("user", "feedback", "project", "reference", None)] == [
        "private", "private", "team", "team", "private"]


def test_team_checks_refuse_user_memories_and_bad_agent_names():
    with pytest.raises(InvalidMemory, match="always private"):
        check_team_type(" User ", "team/me.md")
    check_team_type("project", "team/db.md")
    check_team_type(None, "team/db.md")
    assert check_agent_name("data-reviewer") == "data-reviewer"
    for bad in ("..", "a..b", "-x", 3, "x" * 129):
        with pytest.raises(ConfigError, match="is not an agent name"):
            check_agent_name(bad)
