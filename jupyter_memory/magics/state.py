"""Per-kernel state of the front end: the session and what the agent has seen."""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from jupyter_memory.agent.session import AgentConfig, Session

_STATES: dict[int, KernelState] = {}


@dataclass
class KernelState:
    """What one kernel remembers between cells."""

    shell: Any
    session: Session | None = None
    last_agent_count: int = 0
    cell_outputs: dict[int, str] = field(default_factory=dict)


def state_for(shell: Any) -> KernelState:
    st = _STATES.get(id(shell))
    if st is None or st.shell is not shell:
        st = KernelState(shell=shell)
        _STATES[id(shell)] = st
    return st


def forget_state(shell: Any) -> None:
    _STATES.pop(id(shell), None)


def notebook_folder(shell: Any) -> tuple[Path, str | None]:
    """The notebook's folder and path when known, else the kernel's working folder."""
    try:
        from jupyter_memory.notebook_path import current_notebook_path

        path = current_notebook_path(getattr(shell, "user_ns", None))
    except ImportError:  # the lab extension's module is optional for the kernel
        path = None
    if path is not None:
        path = Path(path)
        if not path.is_absolute():
            path = Path(os.getcwd()) / path
        return path.parent, str(path)
    return Path(os.getcwd()), None


def session_for(shell: Any, config: AgentConfig) -> Session:
    """The kernel's session, created on first use and kept in step with ``config``."""
    st = state_for(shell)
    if st.session is None:
        folder, notebook = notebook_folder(shell)
        st.session = Session(folder, config=config, notebook=notebook)
    elif st.session.config != config:
        st.session.config = config
        st.session.reset_tools()
    return st.session
