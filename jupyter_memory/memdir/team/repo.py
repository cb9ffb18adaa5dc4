"""The git repository a team folder is in: a runner with an identity, and what it holds.

:class:`Git` runs the commands of one status or sync in the repository. Every command
runs with ``core.symlinks=false``, so git never makes a symbolic link in the team folder
(a link a remote committed is checked out as a plain file holding its text), and with
an identity when the person has configured none. The helpers read the folder's place in
the repository, its uncommitted changes, the links the repository records and the
remote a sync pushes to.
"""

from __future__ import annotations

import contextlib
import getpass
import os
import subprocess
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from jupyter_memory.memdir import trust_table
from jupyter_memory.memdir.gateway import Root
from jupyter_memory.memdir.team.git import TeamError, git_available, git_config, run_git

__all__ = ["Git", "links_in", "path_in_repo", "uncommitted", "upstream"]

#: The id of git's empty tree: what a branch that does not exist yet is compared with.
EMPTY_TREE = "4b825dc642cb6eb9a060e54bf8d69288fbee4904"


def _login(environ: Mapping[str, str]) -> str:
    """The hub user, else the login name (never a made-up one when the system knows it)."""
    for key in ("JUPYTERHUB_USER", "USER", "LOGNAME"):
        if environ.get(key):
            return environ[key]
    with contextlib.suppress(Exception):
        return getpass.getuser()
    return "jupyter-memory"


@dataclass
class Git:
    """git in one repository, with an identity when the person has configured none.

    ``assumed`` is that identity (``ana <ana@localhost>``) when git has none of its own
    (no ``user.name``/``user.email`` and no ``GIT_AUTHOR_NAME`` in the environment): the
    hub user or login name at ``localhost``, which a sync says it used.
    """

    cwd: Path
    env: Mapping[str, str] | None = None
    identity: tuple[str, ...] = field(default_factory=tuple)
    assumed: str | None = None
    index_file: str | None = None

    def __post_init__(self) -> None:
        if not git_available():
            raise TeamError("git is not installed; install git to share team memory.")
        environ = os.environ if self.env is None else self.env
        name = git_config("user.name", self.cwd, self.env)
        email = git_config("user.email", self.cwd, self.env)
        if name and email:
            return
        user = name or _login(environ)
        address = email or f"{user}@localhost"
        self.identity = ("-c", f"user.name={user}", "-c", f"user.email={address}")
        if not trust_table.env("GIT_AUTHOR_NAME", environ):
            self.assumed = f"{user} <{address}>"

    def run(self, *args: str, check: bool = True, timeout: float = 120,
            stdin: str | None = None) -> subprocess.CompletedProcess[str]:
        extra = {} if self.index_file is None else {"GIT_INDEX_FILE": self.index_file}
        try:
            done = run_git([*self.identity, *args], cwd=self.cwd, env=self.env, timeout=timeout,
                           stdin=stdin, extra_env=extra)
        except subprocess.TimeoutExpired:
            raise TeamError(f"git {args[0]} took longer than {timeout:g}s and was stopped.") from None
        if check and done.returncode != 0:
            raise TeamError(f"git {' '.join(args)} failed: {(done.stderr or done.stdout).strip()}")
        return done

    def out(self, *args: str) -> str:
        return self.run(*args).stdout.strip()

    def has(self, rev: str) -> bool:
        """Whether ``rev`` names a commit here."""
        return self.run("rev-parse", "--verify", "--quiet", f"{rev}^{{commit}}",
                        check=False).returncode == 0

    @contextlib.contextmanager
    def own_index(self) -> Iterator[Git]:
        """This repository with an index of its own, starting from ``HEAD``: what is staged
        there is exactly what a commit holds, whatever the person has staged elsewhere."""
        path = self.out("rev-parse", "--git-path", "jupyter-memory-index")
        full = path if os.path.isabs(path) else str(self.cwd / path)
        git_dir = Root.declare("git", os.path.dirname(full))  # the repository's own folder
        name = os.path.basename(full)
        git_dir.remove(name, missing_ok=True)
        other = Git.__new__(Git)
        other.__dict__.update(self.__dict__)
        other.index_file = full
        try:
            if self.has("HEAD"):
                other.run("read-tree", "HEAD")
            yield other
        finally:
            git_dir.remove(name, missing_ok=True)


def path_in_repo(repo: Path, folder: Path) -> str:
    """``folder`` relative to the repository's top (``.`` when it is the top), for pathspecs."""
    rel = os.path.relpath(os.path.realpath(folder), os.path.realpath(repo))
    return "." if rel == "." else rel


def uncommitted(git: Git, spec: str) -> list[tuple[str, str]]:
    """The uncommitted changes under ``spec``: (status code, path from the repository's top)."""
    out = git.run("status", "--porcelain=v1", "-z", "--untracked-files=all", "--no-renames",
                  "--", spec).stdout
    found = []
    for item in out.split("\0"):
        if len(item) < 4:
            continue
        code, path = item[:2], item[3:]
        found.append((code.strip() or "M", path))
    return found


def links_in(git: Git, rev: str, paths: Sequence[str]) -> dict[str, str]:
    """Paths ``rev`` records as symbolic links (mode 120000), each with its link text."""
    if not git.has(rev):
        return {}
    out = git.run("ls-tree", "-r", "-z", "--full-tree", rev, "--", *paths).stdout
    found = {}
    for item in out.split("\0"):
        meta, _, path = item.partition("\t")
        parts = meta.split()
        if len(parts) == 3 and parts[0] == "120000":
            found[path] = git.run("cat-file", "blob", parts[2]).stdout
    return found


def upstream(git: Git) -> tuple[str | None, str | None]:
    """The remote and branch a sync pushes to: the branch's own remote, else ``origin``."""
    branch = git.run("symbolic-ref", "--quiet", "--short", "HEAD", check=False).stdout.strip() or None
    remote = git.run("config", "--get", f"branch.{branch}.remote", check=False).stdout.strip() if branch else ""
    if not remote:
        remotes = git.run("remote", check=False).stdout.split()
        remote = "origin" if "origin" in remotes else (remotes[0] if remotes else "")
    return (remote or None), branch
