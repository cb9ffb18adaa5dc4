"""Sessions for tests: one way to make the agent's ``Session`` (tests/conftest.py has
the IPython side, ``make_ip``). Import it as ``from sessions import make_session``."""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from jupyter_memory.agent.session import AgentConfig, Session


def make_session(project: Path, *, memdir: Path | None = None,
                 env: Mapping[str, str] | None = None, max_retries: int = 0,
                 **config: Any) -> Session:
    """A :class:`Session` in ``project`` with ``AgentConfig.from_env(env, **config)``.

    Failed model calls are not retried unless ``max_retries`` says so. With ``memdir``, the
    project folder is created and the session gets its own environment (``env`` or the
    process's, plus ``JUPYTER_MEMORY_DIR=memdir``), so the process's variables stay as they
    are; without it, the session reads ``env`` (default: the process's, when used).
    """
    if memdir is not None:
        project.mkdir(parents=True, exist_ok=True)
        env = {**(os.environ if env is None else env), "JUPYTER_MEMORY_DIR": str(memdir)}
    cfg = AgentConfig.from_env(env, max_retries=max_retries, **config)
    return Session(project, config=cfg, env=env)
