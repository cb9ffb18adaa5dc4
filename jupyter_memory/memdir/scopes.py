"""Scopes: which memory a write or a record belongs to, and the folder each one means.

Two families of scope, named apart because they answer different questions:

* :data:`MEMORY_SCOPES` — where one of the project's memories lives: ``private`` (the
  person's memdir) or ``team`` (the folder the team shares, docs/reference.md#team-mode). Every record has
  one (``Memory.scope``), and a team memory's ``file`` starts with ``team/``.
* :data:`AGENT_SCOPES` — an agent's own memory (docs/reference.md#agent-memory): ``user``
  (``<base>/agent-memory/<agent>/``), ``project`` and ``local`` (under the project's
  ``.claude/``), the values an agent file's ``memory:`` field may take.

:data:`WRITE_SCOPES` is every place ``%%remember --scope`` and the CLI's ``--scope``
can write: the project's memdir (``memdir``, or ``private``), the team folder, or an
agent's memory. :func:`scope_dir` turns one into a folder from plain values, so the
storage layer answers it without a session.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from jupyter_memory.errors import ConfigError, InvalidMemory
from jupyter_memory.memdir.basedir import config_base
from jupyter_memory.memdir.gateway import Root

__all__ = [
    "AGENT_SCOPES",
    "DEFAULT_AGENT",
    "MEMORY_SCOPES",
    "TEAM_DIRNAME",
    "TEAM_PREFIX",
    "WRITE_SCOPES",
    "check_agent_name",
    "check_team_type",
    "default_scope",
    "scope_dir",
    "scope_of",
    "scope_root",
]

MEMORY_SCOPES = ("private", "team")
"""Where a memory of the project lives: the private memdir or the team folder."""

AGENT_SCOPES = ("user", "project", "local")
"""Where an agent's own memory lives, as an agent file's ``memory:`` names it."""

WRITE_SCOPES = ("memdir", *MEMORY_SCOPES, *AGENT_SCOPES)
"""Where ``--scope`` can write: the project's memdir (``private`` is another name for it),
the team folder, or an agent's own memory."""

DEFAULT_AGENT = "jupyter-memory"
"""The agent name used for agent-scoped memory when ``--agent`` is not given."""

TEAM_DIRNAME = "team"
"""The team folder's name inside the memdir, the reference's layout."""

TEAM_PREFIX = TEAM_DIRNAME + "/"
"""How a team memory's ``file`` starts, wherever the team folder is on disk."""

_AGENT_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]{0,127}")


def scope_of(file: str) -> str:
    """``team`` for a ``team/…`` memory path, else ``private``."""
    return "team" if str(file).startswith(TEAM_PREFIX) else "private"


def default_scope(type: str | None, text: str = "") -> str:
    """The scope the reference's rules give a memory of ``type`` (docs/reference.md#team-mode).

    ``user`` is always private; ``feedback`` is private unless it states a convention
    for the whole project (which only the writer can judge, so this returns private);
    ``project`` and ``reference`` lean team.
    """
    del text
    return "team" if type in ("project", "reference") else "private"


def check_team_type(type: Any, file: str) -> None:
    """Refuse a ``user`` memory in the team folder, saying why."""
    if str(type or "").strip().lower() == "user":
        raise InvalidMemory(
            f"{file}: a 'user' memory describes one person (their role, goals, preferences) "
            "and is always private; it cannot go into the team folder, where everyone would "
            "read it as their own. Save it without --scope team (in your private memory), "
            "or, if it is really a team convention, give it type feedback or project."
        )


def check_agent_name(agent: object) -> str:
    """``agent`` when it is a name (never a path), else a :class:`ConfigError`.

    A name is ``[A-Za-z0-9][A-Za-z0-9_.-]*`` (at most 128 characters, no ``..``): it is
    looked up in ``.claude/agents/`` and ``<base>/agents/`` and names the agent's own
    memory folder, so a path could load any file as an agent or put its memory anywhere.
    """
    if not isinstance(agent, str) or not _AGENT_NAME.fullmatch(agent) or ".." in agent:
        raise ConfigError(
            f"{agent!r} is not an agent name: a name may contain letters, digits, '-', '_' "
            "and '.', starts with a letter or digit and has no '/' (for example "
            "'data-reviewer'). Agents are found by name in .claude/agents/ and "
            "<base>/agents/, never by path."
        )
    return agent


def scope_dir(
    scope: str,
    *,
    memdir: Path,
    project_root: Path,
    team_dir: Path | None = None,
    agent: str = DEFAULT_AGENT,
    env: Mapping[str, str] | None = None,
) -> Path:
    """The folder one of :data:`WRITE_SCOPES` stands for.

    ``memdir`` and ``private`` are the project's auto memory; ``team`` is ``team_dir``
    (default ``<memdir>/team``); ``user`` is ``<base>/agent-memory/<agent>/``,
    ``project`` is ``<project>/.claude/agent-memory/<agent>/`` and ``local`` is
    ``<project>/.claude/agent-memory-local/<agent>/``, as the reference lays out an
    agent's own memory.
    """
    if scope not in WRITE_SCOPES:
        raise ConfigError(f"Unknown scope {scope!r}; use one of {', '.join(WRITE_SCOPES)}.")
    if scope in ("memdir", "private"):
        return Path(memdir)
    if scope == "team":
        return Path(team_dir) if team_dir is not None else Path(memdir) / TEAM_DIRNAME
    name = check_agent_name(agent)
    if scope == "user":
        return config_base(env) / "agent-memory" / name
    folder = "agent-memory" if scope == "project" else "agent-memory-local"
    return Path(project_root) / ".claude" / folder / name


def scope_root(
    scope: str,
    *,
    memdir: Path,
    project_root: Path,
    team_dir: Path | None = None,
    agent: str = DEFAULT_AGENT,
    env: Mapping[str, str] | None = None,
) -> Root:
    """The folder of :func:`scope_dir` declared as a gateway root, once.

    An agent's ``project`` and ``local`` folders are placed by the project's files (under
    its ``.claude/``), so they must really lie inside the project: one reached through a
    link that leads out is refused with :class:`~jupyter_memory.errors.PathRefused`.
    """
    folder = scope_dir(scope, memdir=memdir, project_root=project_root, team_dir=team_dir,
                       agent=agent, env=env)
    if scope in ("project", "local"):
        return Root.declare("agent", folder, within=Root.declare("project", project_root),
                            placed_by=f"the {scope} memory folder of the agent {agent!r}")
    kind = {"team": "team", "user": "agent"}.get(scope, "memdir")
    return Root.declare(kind, folder)
