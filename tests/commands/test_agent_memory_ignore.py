"""Every front end that writes an agent's ``project`` memory keeps its lock out of git."""

from __future__ import annotations

import io
from pathlib import Path

import pytest
from shell_helpers import run

from jupyter_memory.cli import app as cli

pytestmark = pytest.mark.usefixtures("memdir")


def ignored(folder: Path) -> list[str]:
    return (folder / ".gitignore").read_text(encoding="utf-8").splitlines()


def test_remember_and_add_to_a_project_agent_memory_write_the_ignore_file(ip, project) -> None:
    folder = project / ".claude" / "agent-memory" / "reviewer"
    folder.mkdir(parents=True)
    (folder / ".gitignore").write_text("notes-draft.md\n", encoding="utf-8")
    run(ip, "%%remember --scope project --agent reviewer -t project -n joins -d 'join on order id'"
            "\nJoin orders and refunds on order id.")
    assert ignored(folder) == ["notes-draft.md",
                               "# jupyter-memory: the memory store's lock and unfinished "
                               "writes stay local", ".lock", ".*.tmp"]
    other = project / ".claude" / "agent-memory" / "writer"
    code = cli.main(["add", "--project", str(project), "--scope", "project", "--agent", "writer",
                     "--type", "project", "--name", "style", "--description", "short sentences",
                     "--body", "Short sentences."],
                    stdin=io.StringIO(""), stdout=io.StringIO(), stderr=io.StringIO())
    assert code == 0 and ignored(other)[1:] == [".lock", ".*.tmp"]
    run(ip, "%%remember --scope local --agent reviewer -t project -n x -d 'local note'\nLocal.")
    assert not (project / ".claude" / "agent-memory-local" / "reviewer" / ".gitignore").exists()
