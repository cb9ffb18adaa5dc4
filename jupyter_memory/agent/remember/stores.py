"""The store a ``--scope`` writes to, for a session: the one part of scopes that needs one.

Which folder each scope means is :func:`jupyter_memory.memdir.scopes.scope_dir`; here the
project's scopes come from the session's own stores, and memory switched off refuses all.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from jupyter_memory.errors import ConfigError, MemoryDisabled
from jupyter_memory.memdir.scopes import DEFAULT_AGENT, scope_root
from jupyter_memory.memdir.store import MemoryStore

if TYPE_CHECKING:
    from jupyter_memory.agent.session import Session

__all__ = ["scope_store"]


def scope_store(session: Session, scope: str = "memdir", agent: str = DEFAULT_AGENT) -> MemoryStore:
    """The store of ``scope`` for ``session``; refuses when auto memory is off.

    With auto memory off, agent scopes have no effect either (docs/reference.md#agent-memory), so they are
    refused with the same message.
    """
    memdir = session.memdir
    if session.store is None or memdir is None:
        follows = "" if scope == "memdir" else ", and agent-scoped memory follows it"
        raise MemoryDisabled(
            f"Memory is off for this project ({session.location.enabled_reason}){follows}. "
            "Switch it on for this session with %memory on."
        )
    if scope in ("memdir", "private"):
        store: MemoryStore = session.store
        return store
    if scope == "team":
        team: MemoryStore | None = getattr(session.store, "team", None)
        if team is None:
            raise ConfigError("This session has no team folder; team memory needs the "
                              "project's memory store (see docs/team.md).")
        return team
    root = scope_root(scope, memdir=memdir, project_root=session.project_root,
                      agent=agent, env=session.env)
    return MemoryStore(root.path, session_id=session.session_id, maintain_index=True,
                       mark_provenance=session.config.provenance, root=root)
