"""Agent definitions with memory of their own (docs/reference.md#agent-memory).

An agent is a markdown file in ``.claude/agents/`` (the project's, then the user's
``<base>/agents/``) in the reference's format: YAML frontmatter with ``name``,
``description``, ``tools`` (comma-separated or a list; all tools when absent), ``model``
(an id, or ``inherit``) and ``memory: user | project | local``; the body is the agent's
system prompt. With ``memory`` set and auto memory on, the agent gets its own memdir:

==========  ===========================================
``user``    ``<base>/agent-memory/<name>/``
``project`` ``<project>/.claude/agent-memory/<name>/``
``local``   ``<project>/.claude/agent-memory-local/<name>/``
==========  ===========================================

Its system prompt then carries the memory rules for that folder and the folder's
``MEMORY.md`` (200 lines / 25,000 characters), and Read, Write and Edit are added to its
tools so it can keep that memory. An agent does not see the main memdir or the team
folder: what it knows it learned in its own runs.

``session.child(definition)`` (agent/session.py) makes the session that runs as an agent:
it shares its parent's model endpoint, background runner and cost ledger, and has its own
conversation, prompt, tools, model and memory (``agent/memory_context.AgentMemory``).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from jupyter_memory.agent.config import AgentConfig
from jupyter_memory.errors import ConfigError, MemoryNotFound
from jupyter_memory.memdir import frontmatter, trust_table
from jupyter_memory.memdir.basedir import config_base
from jupyter_memory.memdir.gateway import Root, config_root
from jupyter_memory.memdir.project import find_project_root
from jupyter_memory.memdir.scopes import AGENT_SCOPES, check_agent_name, scope_dir, scope_root
from jupyter_memory.memdir.trust import how_to_trust, is_trusted
from jupyter_memory.memdir.trust_table import PROJECT, USER

__all__ = ["MEMORY_TOOLS", "AgentDefinition", "find_agents", "load_agent"]

#: Tools an agent with memory always gets, so it can keep its memory folder.
MEMORY_TOOLS = ("Read", "Write", "Edit")
_NAME = re.compile(r"^[a-z0-9][a-z0-9-]*$")


@dataclass(frozen=True)
class AgentDefinition:
    """One agent file, parsed. ``tools`` is None when the file lists none (all tools)."""

    name: str
    description: str
    prompt: str
    path: Path
    scope: str  # "project" | "user": where the definition was found
    tools: tuple[str, ...] | None = None
    model: str | None = None
    memory: str | None = None
    warnings: tuple[str, ...] = field(default_factory=tuple)

    def memory_dir(self, project_root: Path, env: Mapping[str, str] | None = None) -> Path | None:
        """The agent's own memdir for its ``memory`` scope (None without one)."""
        if self.memory is None:
            return None
        return scope_dir(self.memory, memdir=Path(project_root), project_root=Path(project_root),
                         agent=self.name, env=env)

    def memory_root(self, project_root: Path, env: Mapping[str, str] | None = None) -> Root | None:
        """The agent's memory folder declared as a gateway root (None without ``memory:``).

        ``project`` and ``local`` folders are placed by the project's files, so they must
        really lie inside it: one that leads out through a link raises ``PathRefused``
        (:func:`~jupyter_memory.memdir.scopes.scope_root`).
        """
        if self.memory is None:
            return None
        return scope_root(self.memory, memdir=Path(project_root), project_root=Path(project_root),
                          agent=self.name, env=env)

    def to_json(self) -> dict[str, Any]:
        return {"name": self.name, "description": self.description, "path": str(self.path),
                "scope": self.scope, "tools": None if self.tools is None else list(self.tools),
                "model": self.model, "memory": self.memory, "warnings": list(self.warnings)}

    def config_for(self, base: AgentConfig) -> AgentConfig:
        """``base`` with this agent's model; index recall and no background extraction,
        because the agent keeps its own memory itself, as in the reference."""
        overrides: dict[str, Any] = {"extraction": False, "recall_mode": "index"}
        if self.model and self.model != "inherit":
            overrides["model"] = self.model
        return replace(base, **overrides)



def _tools(value: Any, where: Path) -> tuple[tuple[str, ...] | None, list[str]]:
    if value is None:
        return None, []
    items = value if isinstance(value, list) else str(value).split(",")
    names = [str(item).strip() for item in items if str(item).strip()]
    from jupyter_memory.agent.tools import default_registry

    known = set(default_registry().names())
    unknown = [n for n in names if n not in known]
    notes = [f"{where}: tool(s) {', '.join(unknown)} have no counterpart in jupyter-memory and "
             f"were left out (known: {', '.join(sorted(known))})."] if unknown else []
    return tuple(n for n in names if n in known), notes


def parse_agent(path: Path, scope: str, root: Root | None = None) -> AgentDefinition:
    """Read one agent file (through ``root``, default its own folder); raises
    :class:`ConfigError` naming the field that is wrong."""
    root = root if root is not None else Root.declare("project", Path(path).parent)
    text = root.text(path, errors="replace")
    doc = frontmatter.parse(text)
    if not doc.has_frontmatter:
        raise ConfigError(f"{path} has no frontmatter; an agent file starts with ---, then "
                          "name:, description: and optionally tools:, model:, memory:.")
    name = str(doc.get("name") or path.stem).strip()
    if not _NAME.match(name):
        raise ConfigError(f"{path}: agent name {name!r} must be lower-case letters, digits "
                          "and hyphens (e.g. data-reviewer).")
    origin = USER if scope == "user" else PROJECT
    given = trust_table.value("memory", doc.fields, origin)
    memory = None if given is None else str(given).strip().lower()
    if memory is not None and memory not in AGENT_SCOPES:
        raise ConfigError(f"{path}: memory: {given!r} is not one of "
                          f"{', '.join(AGENT_SCOPES)}.")
    tools, notes = _tools(trust_table.value("tools", doc.fields, origin), path)
    model = trust_table.value("model", doc.fields, origin)
    return AgentDefinition(
        name=name,
        description=" ".join(str(doc.get("description") or "").split()),
        prompt=doc.body.strip(),
        path=Path(path),
        scope=scope,
        tools=tools,
        model=None if model in (None, "") else str(model).strip(),
        memory=memory,
        warnings=tuple(notes),
    )


def agent_folders(project_root: Path, env: Mapping[str, str] | None = None) -> list[tuple[str, Path]]:
    """Where agent files are looked for, the project's first (it wins on a name clash)."""
    return [("project", Path(project_root) / ".claude" / "agents"),
            ("user", config_base(env) / "agents")]


def _folder_roots(project_root: Path, env: Mapping[str, str] | None) -> list[tuple[str, Path, Root]]:
    """Each agent folder with the root it is read through: the project's (links stay
    inside it) and the person's config base (their own files)."""
    roots = {"project": Root.declare("project", project_root), "user": config_root(env)}
    return [(scope, folder, roots[scope]) for scope, folder in agent_folders(project_root, env)]


def _refused(scope: str, project_root: Path, env: Mapping[str, str] | None) -> str | None:
    """Why the agents of ``scope`` are not offered here (a project's, untrusted), or None."""
    if scope == "user":
        return None
    trusted = is_trusted(project_root, env).trusted
    return trust_table.refusal("agent definition", PROJECT, trusted=trusted)


def _definitions(scope: str, folder: Path, root: Root) -> list[AgentDefinition]:
    found = []
    for dirpath, dirnames, filenames in root.walk(folder) if root.is_dir(folder) else ():
        dirnames.sort()
        for file in sorted(f for f in filenames if f.endswith(".md")):
            try:
                found.append(parse_agent(Path(dirpath) / file, scope, root))
            except (ConfigError, OSError):
                continue
    return found


def find_agents(project_root: Path, env: Mapping[str, str] | None = None) -> list[AgentDefinition]:
    """Every agent offered for the project, one per name (project before user).

    A project's own agents are offered only when the folder is trusted: an agent
    definition directs a model that runs tools in the kernel (the trust table).
    """
    found: dict[str, AgentDefinition] = {}
    for scope, folder, root in _folder_roots(project_root, env):
        if _refused(scope, project_root, env) is None:
            for agent in _definitions(scope, folder, root):
                found.setdefault(agent.name, agent)
    return list(found.values())


def load_agent(project_root: Path, name: str, env: Mapping[str, str] | None = None) -> AgentDefinition:
    """The agent called ``name`` (by its ``name`` field, or its file name).

    ``name`` is a name, never a path (:func:`~jupyter_memory.memdir.scopes.check_agent_name`):
    it is looked up in the project's ``.claude/agents/``, then in ``<base>/agents/``. An
    agent the project defines is refused in a folder that is not trusted, saying how to
    trust it.
    """
    check_agent_name(name)
    for scope, folder, root in _folder_roots(project_root, env):
        path = folder / f"{name}.md"
        named = [path] if root.is_file(path) else [
            a.path for a in _definitions(scope, folder, root) if a.name == name]
        if not named:
            continue
        why = _refused(scope, project_root, env)
        if why is not None:
            real_root = find_project_root(Path(project_root))
            raise ConfigError(
                f"The agent {name!r} is defined by this project ({named[0]}), and {why}: "
                "agents a project defines run only in a folder you trust, because their "
                f"instructions direct a model that runs tools here. {how_to_trust(real_root)}"
            )
        return parse_agent(named[0], scope, root)
    names = ", ".join(a.name for a in find_agents(project_root, env)) or "none yet"
    raise MemoryNotFound(
        f"No agent named {name!r} in {Path(project_root) / '.claude' / 'agents'} or "
        f"{config_base(env) / 'agents'} (offered: {names}). Create .claude/agents/{name}.md "
        "with name:, description: and the agent's instructions."
    )
