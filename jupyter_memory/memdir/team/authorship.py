"""Who wrote a team memory: the ``author`` field and the name that goes into it."""

from __future__ import annotations

import contextlib
import getpass
import os
from collections.abc import Mapping
from pathlib import Path

from jupyter_memory.memdir import trust_table
from jupyter_memory.memdir.record import AUTHOR_FIELD
from jupyter_memory.memdir.team.git import git_config

__all__ = ["AUTHOR_FIELD", "author"]


def author(folder: Path | None = None, env: Mapping[str, str] | None = None) -> str:
    """Who is writing: the git author (``GIT_AUTHOR_NAME``, then ``user.name`` of the team
    repository), else the hub or OS user."""
    environ = os.environ if env is None else env
    name = trust_table.env("GIT_AUTHOR_NAME", environ) or git_config("user.name", folder, env)
    if name:
        return name
    for key in ("JUPYTERHUB_USER", "USER", "LOGNAME"):
        user = trust_table.env(key, environ)
        if user:
            return user
    with contextlib.suppress(Exception):
        return getpass.getuser()
    return "unknown"
