"""The git repository a team folder is in: a runner with an identity, and what it holds.

:class:`Git` runs the commands of one status or sync in the repository, with an identity
when the person has configured none; the helpers read the folder's place in it, its
uncommitted changes and the remote it pushes to.
"""

from __future__ import annotations

import os
import socket
import subprocess
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

from jupyter_memory.memdir.team.authorship import author
from jupyter_memory.memdir.team.git import TeamError, git_available, git_config, run_git

__all__ = ["Git", "path_in_repo", "uncommitted", "upstream"]


@dataclass
class Git:
    """git in one repository, with an identity when the person has configured none."""

    cwd: Path
    env: Mapping[str, str] | None = None
    identity: tuple[str, ...] = field(default_factory=tuple)

    def __post_init__(self) -> None:
        if not git_available():
            raise TeamError("git is not installed; install git to share team memory.")
        if not git_config("user.name", self.cwd, self.env):
            user = author(None, self.env)
            host = socket.gethostname() or "localhost"
            self.identity = ("-c", f"user.name={user}", "-c", f"user.email={user}@{host}")

    def run(self, *args: str, check: bool = True, timeout: float = 120) -> subprocess.CompletedProcess[str]:
        try:
            done = run_git([*self.identity, *args], cwd=self.cwd, env=self.env, timeout=timeout)
        except subprocess.TimeoutExpired:
            raise TeamError(f"git {args[0]} took longer than {timeout:g}s and was stopped.") from None
        if check and done.returncode != 0:
            raise TeamError(f"git {' '.join(args)} failed: {(done.stderr or done.stdout).strip()}")
        return done

    def out(self, *args: str) -> str:
        return self.run(*args).stdout.strip()


def path_in_repo(repo: Path, folder: Path) -> str:
    """``folder`` relative to the repository's top (``.`` when it is the top), for pathspecs."""
    rel = os.path.relpath(os.path.realpath(folder), os.path.realpath(repo))
    return "." if rel == "." else rel


def uncommitted(git: Git, spec: str) -> list[tuple[str, str]]:
    """The uncommitted changes under ``spec``: (status code, path from the repository's top)."""
    out = git.run("status", "--porcelain", "--untracked-files=all", "--", spec).stdout
    found = []
    for line in out.splitlines():
        code, path = line[:2], line[3:]
        if " -> " in path:
            path = path.split(" -> ", 1)[1]
        found.append((code.strip() or "M", path.strip('"')))
    return found


def upstream(git: Git) -> tuple[str | None, str | None]:
    """The remote and branch a sync pushes to: the branch's own remote, else ``origin``."""
    branch = git.run("symbolic-ref", "--quiet", "--short", "HEAD", check=False).stdout.strip() or None
    remote = git.run("config", "--get", f"branch.{branch}.remote", check=False).stdout.strip() if branch else ""
    if not remote:
        remotes = git.run("remote", check=False).stdout.split()
        remote = "origin" if "origin" in remotes else (remotes[0] if remotes else "")
    return (remote or None), branch
