"""git for the team folder: the environment every call gets, a config value, the repository.

The team folder is shared through git, never a service of ours. These are one-shot
calls; :mod:`~jupyter_memory.memdir.team.repo` runs the commands of a status or a sync.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from collections.abc import Mapping
from pathlib import Path

from jupyter_memory.errors import JupyterMemoryError

__all__ = ["TeamError", "git_config", "git_env", "git_toplevel"]


class TeamError(JupyterMemoryError):
    """A team operation that cannot go on (no repository, a git failure); says what to do."""


def git_env(env: Mapping[str, str] | None = None) -> dict[str, str]:
    """The environment of every git call: never a prompt or an editor, messages in English."""
    base = dict(os.environ if env is None else env)
    base.setdefault("PATH", os.environ.get("PATH", "/usr/bin:/bin"))
    base["GIT_TERMINAL_PROMPT"] = "0"
    base["GIT_EDITOR"] = "true"
    base.setdefault("LC_ALL", "C")
    return base


def git_config(key: str, folder: Path | None, env: Mapping[str, str] | None) -> str | None:
    """A git config value as seen from ``folder`` (None: unset, or no git)."""
    if shutil.which("git") is None:
        return None
    cwd = folder if folder is not None and folder.is_dir() else None
    try:
        out = subprocess.run(
            ["git", "config", "--get", key], cwd=cwd, capture_output=True, text=True,
            env=git_env(env), timeout=30, check=False,
        )
    except (OSError, subprocess.SubprocessError):
        return None
    value = out.stdout.strip()
    return value or None


def git_toplevel(folder: Path) -> Path | None:
    """The top of the git repository ``folder`` is in, or None."""
    if shutil.which("git") is None or not Path(folder).is_dir():
        return None
    done = subprocess.run(["git", "rev-parse", "--show-toplevel"], cwd=folder,
                          capture_output=True, text=True, env=git_env(), check=False)
    return Path(done.stdout.strip()) if done.returncode == 0 and done.stdout.strip() else None
