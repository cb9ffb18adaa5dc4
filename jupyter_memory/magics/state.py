"""Per-kernel state of the front end: the session and what the agent has seen."""

from __future__ import annotations

import os
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from jupyter_memory.agent.session import AgentConfig, Session
from jupyter_memory.memdir.basedir import config_base
from jupyter_memory.memdir.location import transcripts_dir
from jupyter_memory.widgets.roots import (
    DisplayRoots,
    current_display_roots,
    on_page,
    use_display_roots,
)

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
    """Drop the kernel's state, closing its session's model client."""
    st = _STATES.pop(id(shell), None)
    if st is not None and st.session is not None:
        st.session.close()
    use_display_roots(None)


def close_sessions() -> None:
    """Close the model client of every kernel session (registered with ``atexit``).

    IPython has no shutdown event; a kernel that shuts down exits its process, and this
    hook then closes the pooled connections cleanly instead of leaving them to the GC.
    """
    for st in list(_STATES.values()):
        if st.session is not None:
            st.session.close()


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
        _name_roots(st.session)  # before the notices, which name its folders
        notices = st.session.trust_notices()
        for notice in notices:
            print(on_page(notice), file=sys.stderr)
        if notices:
            # Sent now, so they come before what the cell prints next whatever the timing
            # (stdout and stderr are separate streams, each flushed on its own clock).
            sys.stderr.flush()
    elif st.session.config != config:
        st.session.config = config
        st.session.reset_tools()
    _name_roots(st.session)
    return st.session


def _name_roots(session: Session) -> None:
    """Name the session's folders on the page when ``Agent.display_roots`` asks for it."""
    roots = None
    if session.config.display_roots:
        roots = DisplayRoots.of(memdir=session.memdir, project=session.project_root,
                                base=config_base(session.env),
                                transcripts=transcripts_dir(session.cwd, session.env))
    if roots != current_display_roots():
        use_display_roots(roots)
