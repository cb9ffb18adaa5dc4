"""git for the team folder: the environment every call gets, a config value, the repository.

The team folder is shared through git, never a service of ours. These are one-shot
calls; :mod:`~jupyter_memory.memdir.team.repo` runs the commands of a status or a sync.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from collections.abc import Mapping, Sequence
from pathlib import Path

from jupyter_memory.errors import JupyterMemoryError
from jupyter_memory.memdir import trust_table

__all__ = ["NO_SYMLINKS", "TeamError", "git_available", "git_config", "git_env", "git_toplevel",
           "run_git"]


class TeamError(JupyterMemoryError):
    """A team operation that cannot go on (no repository, a git failure); says what to do."""


def git_env(env: Mapping[str, str] | None = None) -> dict[str, str]:
    """The environment of every git call: never a prompt or an editor, messages in English."""
    base = dict(os.environ if env is None else env)
    base["PATH"] = trust_table.env("PATH", base) or trust_table.env("PATH") or "/usr/bin:/bin"
    base["GIT_TERMINAL_PROMPT"] = "0"
    base["GIT_EDITOR"] = "true"
    base.setdefault("LC_ALL", "C")
    return base


#: Every git call checks symbolic links out as plain files holding the link's target: a
#: link a teammate (or a hostile remote) committed never becomes a link on this disk.
NO_SYMLINKS = ("-c", "core.symlinks=false")


def git_available() -> bool:
    """Whether a ``git`` program is on ``PATH``."""
    return shutil.which("git") is not None


def run_git(args: Sequence[str], *, cwd: Path | None, env: Mapping[str, str] | None,
            timeout: float | None = None, stdin: str | None = None,
            extra_env: Mapping[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    """The one place team git runs: ``git -c core.symlinks=false ARGS`` in ``cwd``.

    What it writes into the team folder is checked through the gateway afterwards
    (``Root.links_below``). Raises ``OSError`` when git cannot start and
    ``subprocess.TimeoutExpired`` past ``timeout``.
    """
    full = git_env(env)
    full.update(extra_env or {})
    return subprocess.run(["git", *NO_SYMLINKS, *args], cwd=cwd, capture_output=True,
                          text=True, env=full, timeout=timeout, check=False, input=stdin)


def git_config(key: str, folder: Path | None, env: Mapping[str, str] | None) -> str | None:
    """A git config value as seen from ``folder`` (None: unset, or no git)."""
    if not git_available():
        return None
    cwd = folder if folder is not None and folder.is_dir() else None
    try:
        out = run_git(["config", "--get", key], cwd=cwd, env=env, timeout=30)
    except (OSError, subprocess.SubprocessError):
        return None
    value = out.stdout.strip()
    return value or None


def git_toplevel(folder: Path) -> Path | None:
    """The top of the git repository ``folder`` is in, or None."""
    if not git_available() or not Path(folder).is_dir():
        return None
    done = run_git(["rev-parse", "--show-toplevel"], cwd=folder, env=None)
    return Path(done.stdout.strip()) if done.returncode == 0 and done.stdout.strip() else None
