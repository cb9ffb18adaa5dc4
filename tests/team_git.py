"""Shared helpers for team memory tests: people with their own HOME, the command line, git.

Each person is an environment (their own HOME, config base, memdir and git identity), so
two people in one test are two machines that share only a bare repository in ``tmp_path``.
"""

from __future__ import annotations

import io
import json
import os
import subprocess
from pathlib import Path
from typing import Any

from jupyter_memory.cli import app as cli


def run(*argv: str, env: dict[str, str], stdin: str = "") -> tuple[int, str, str]:
    """``jupyter-memory ARGV`` in-process: (exit code, stdout, stderr)."""
    out, err = io.StringIO(), io.StringIO()
    code = cli.main(list(argv), env=env, stdin=io.StringIO(stdin), stdout=out, stderr=err)
    assert "Traceback" not in err.getvalue(), err.getvalue()
    return code, out.getvalue(), err.getvalue()


def person(tmp_path: Path, name: str, *, identity: bool = True, **extra: str) -> dict[str, str]:
    """The environment of one person: their own HOME, config base and memdir.

    With ``identity=False`` git has no name or email for them, as on a fresh hub image.
    """
    home = tmp_path / name
    home.mkdir(exist_ok=True)
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("GIT_AUTHOR_", "GIT_COMMITTER_", "JUPYTERHUB_"))}
    env.update(HOME=str(home), CLAUDE_CONFIG_DIR=str(home / ".claude"), USER=name,
               LOGNAME=name, JUPYTER_MEMORY_DIR=str(home / "memory"),
               GIT_CONFIG_GLOBAL=str(home / ".gitconfig"), GIT_CONFIG_NOSYSTEM="1")
    if identity:
        env.update(GIT_AUTHOR_NAME=name, GIT_AUTHOR_EMAIL=f"{name}@example.invalid",
                   GIT_COMMITTER_NAME=name, GIT_COMMITTER_EMAIL=f"{name}@example.invalid")
    env.update(extra)
    return env


def team_folder(env: dict[str, str]) -> Path:
    return Path(env["JUPYTER_MEMORY_DIR"]) / "team"


def add(env: dict[str, str], name: str, description: str, kind: str = "project",
        body: str = "A fact.\n", scope: str = "team", *more: str) -> dict[str, Any]:
    code, out, err = run("add", "--name", name, "--description", description, "--type", kind,
                         "--body", body, "--scope", scope, "--json", *more, env=env)
    assert code == 0, err
    result: dict[str, Any] = json.loads(out)
    return result


def sync(env: dict[str, str]) -> tuple[int, dict[str, Any], str]:
    """``team sync --json``: (exit code, the report, standard error). The report carries
    the text people see as ``text``."""
    code, out, err = run("team", "sync", "--json", env=env)
    assert out, err
    report: dict[str, Any] = json.loads(out)
    return code, report, err


def bare_remote(tmp_path: Path, name: str = "team.git") -> Path:
    path = tmp_path / name
    subprocess.run(["git", "init", "--quiet", "--bare", "--initial-branch=main", str(path)],
                   check=True)
    return path


def git(folder: Path, *args: str, env: dict[str, str] | None = None) -> str:
    done = subprocess.run(["git", *args], cwd=folder, capture_output=True, text=True,
                          env=env, check=True)
    return done.stdout


def clone_for(env: dict[str, str], remote: Path) -> Path:
    code, _, err = run("team", "clone", str(remote), env=env)
    assert code == 0, err
    return team_folder(env)
