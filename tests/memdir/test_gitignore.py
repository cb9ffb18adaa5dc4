"""A committed agent memory folder keeps the store's lock out of git (.gitignore merge)."""

from __future__ import annotations

from pathlib import Path

import pytest

from jupyter_memory.memdir.gateway import Root
from jupyter_memory.memdir.gitignore import OWN_FILES, ensure_ignored
from jupyter_memory.memdir.scopes import committed, scope_dir
from jupyter_memory.memdir.store import MemoryStore

NOTE = "---\nname: n\ndescription: a note\ntype: project\n---\nBody.\n"


def at(folder: Path) -> Root:
    return Root.declare("memdir", folder)


def lines(folder: Path) -> list[str]:
    return (folder / ".gitignore").read_text(encoding="utf-8").splitlines()


def test_a_new_ignore_file_lists_the_lock_and_unfinished_writes(tmp_path: Path) -> None:
    assert ensure_ignored(at(tmp_path))
    assert lines(tmp_path)[1:] == [".lock", ".*.tmp"] == list(OWN_FILES)
    assert lines(tmp_path)[0].startswith("# jupyter-memory")
    assert not ensure_ignored(at(tmp_path))  # nothing missing: not written again


def test_an_existing_ignore_file_is_kept_byte_for_byte(tmp_path: Path) -> None:
    before = b"# mine\r\n*.pyc\r\n.lock\r\nscratch/"  # CRLF, no newline at the end
    (tmp_path / ".gitignore").write_bytes(before)
    assert ensure_ignored(at(tmp_path))
    after = (tmp_path / ".gitignore").read_bytes()
    assert after.startswith(before + b"\n")
    added = after[len(before) + 1:].decode().splitlines()
    assert added[1:] == [".*.tmp"]  # .lock was there already
    assert not ensure_ignored(at(tmp_path))
    assert (tmp_path / ".gitignore").read_bytes() == after


def test_a_linked_ignore_file_is_never_written_through(tmp_path: Path) -> None:
    target = tmp_path / "elsewhere"
    target.write_text("*.log\n", encoding="utf-8")
    folder = tmp_path / "mem"
    folder.mkdir()
    (folder / ".gitignore").symlink_to(target)
    assert not ensure_ignored(at(folder))
    assert target.read_text(encoding="utf-8") == "*.log\n"


def test_the_first_write_of_a_committed_store_writes_it(tmp_path: Path) -> None:
    folder = tmp_path / "agent-memory" / "reviewer"
    store = MemoryStore(folder, ignore_own_files=True)
    assert not folder.exists()  # opening the store writes nothing
    store.write_file("project_n.md", NOTE, provenance="agent")
    assert lines(folder)[1:] == list(OWN_FILES)
    assert (folder / ".lock").exists()
    assert [m.file for m in store.list()] == ["project_n.md"]  # not a memory
    plain = MemoryStore(tmp_path / "private")
    plain.write_file("project_n.md", NOTE, provenance="agent")
    assert not (tmp_path / "private" / ".gitignore").exists()


@pytest.mark.parametrize(("scope", "ignored"), [("project", True), ("local", False),
                                                ("user", False)])
def test_only_the_project_scope_is_committed(scope: str, ignored: bool, project: Path,
                                             tmp_path: Path) -> None:
    assert committed(scope) is ignored
    folder = scope_dir(scope, memdir=tmp_path / "mem", project_root=project, agent="reviewer")
    MemoryStore(folder, ignore_own_files=committed(scope)).write_file(
        "project_n.md", NOTE, provenance="agent")
    assert (folder / ".gitignore").exists() is ignored
