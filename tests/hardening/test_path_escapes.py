"""Path traversal and symlink escapes through every file tool, the store and the CLI.

One hostile layout serves every test: symbolic links from the project and the memdir to
a folder outside both (a file link, a folder link, a dangling link), a hard link, and a
link from the memdir into the project. Each attack path is tried on Read, Write, Edit,
Grep and Glob with writes *allowed*, so only the path rules stand in the way; then on
the command line. Nothing outside may be read, listed, created or changed.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from jupyter_memory.agent.tools import PermissionPolicy, ToolContext, ToolResult, default_registry
from jupyter_memory.errors import InvalidPath, MemoryNotFound
from jupyter_memory.memdir.store import MemoryStore

from .conftest import Cli

SECRET = "TOP SECRET"


def snapshot(folder: Path) -> dict[str, bytes]:
    return {
        p.relative_to(folder).as_posix(): p.read_bytes()
        for p in sorted(folder.rglob("*"))
        if p.is_file() and not p.is_symlink()
    }


@pytest.fixture
def hostile(project: Path, memdir: Path, outside: Path) -> dict[str, Path]:
    """Links that lead out of the project and the memdir, and a memdir link into the project."""
    MemoryStore(memdir).create("good", "an honest memory", "user", "Honest.\n")
    (outside / "hard.md").write_text("---\nname: hard\n---\nOUTSIDE ORIGINAL\n", "utf-8")
    os.symlink(outside / "secret.md", project / "link_out.md")
    os.symlink(outside, project / "dir_out")
    os.symlink(outside / "secret.md", memdir / "link_out.md")
    os.symlink(outside, memdir / "dir_out")
    os.symlink(outside / "created_by_attack.md", memdir / "dangling.md")
    os.symlink(project / "analysis.py", memdir / "to_project.md")
    os.link(outside / "hard.md", memdir / "hard.md")
    return {"project": project, "memdir": memdir, "outside": outside}


def attack_paths(h: dict[str, Path]) -> list[str]:
    project, memdir, outside = h["project"], h["memdir"], h["outside"]
    return [
        "../outside/secret.md",
        str(outside / "secret.md"),
        f"{memdir}/../outside/secret.md",
        f"{project}/./sub/../../outside/secret.md",
        "~/../outside/secret.md",
        "link_out.md",
        "dir_out/secret.md",
        str(memdir / "link_out.md"),
        str(memdir / "dir_out" / "secret.md"),
        "/proc/self/root" + str(outside / "secret.md"),
        "/etc/passwd",
    ]


def run(tool: str, ctx: ToolContext, **args: object) -> ToolResult:
    return default_registry().run(tool, args, ctx)


def allow_all(h: dict[str, Path], **kwargs: object) -> ToolContext:
    return ToolContext(
        project_root=h["project"], memdir=h["memdir"], permission=PermissionPolicy(mode="allow"),
        **kwargs,
    )


def test_read_write_edit_refuse_every_escape(hostile: dict[str, Path]) -> None:
    outside = snapshot(hostile["outside"])
    ctx = allow_all(hostile)
    for path in attack_paths(hostile):
        read = run("Read", ctx, file_path=path)
        assert read.is_error and SECRET not in read.content, (path, read.content)
        write = run("Write", ctx, file_path=path, content="pwned\n")
        assert write.is_error, (path, write.content)
        edit = run("Edit", ctx, file_path=path, old_string=SECRET, new_string="pwned")
        assert edit.is_error, (path, edit.content)
    assert snapshot(hostile["outside"]) == outside
    assert sorted(os.listdir(hostile["outside"])) == ["hard.md", "secret.md"]


def test_grep_and_glob_never_reach_outside(hostile: dict[str, Path]) -> None:
    ctx = allow_all(hostile)
    outside = hostile["outside"]
    for path in [*attack_paths(hostile), str(outside), "../outside", "dir_out",
                 str(hostile["memdir"] / "dir_out")]:
        grep = run("Grep", ctx, pattern=SECRET, path=path, output_mode="content")
        assert grep.is_error or grep.meta["files"] == 0, (path, grep.content)
        glob = run("Glob", ctx, pattern="**/*", path=path)
        assert glob.is_error or "secret.md" not in glob.content, (path, glob.content)
    for root in (None, str(hostile["memdir"])):
        args = {"pattern": SECRET} | ({"path": root} if root else {})
        grep = run("Grep", ctx, **args)
        assert not grep.is_error and grep.meta["files"] == 0, grep.content
        glob = run("Glob", ctx, pattern="**/*.md", **({"path": root} if root else {}))
        assert str(outside) not in glob.content and "dir_out" not in glob.content
    for pattern in (f"{outside}/*.md", "/proc/self/root/**/secret.md", "../outside/*.md"):
        glob = run("Glob", ctx, pattern=pattern)
        assert glob.is_error or "secret.md" not in glob.content, (pattern, glob.content)


def test_dangling_link_in_memdir_creates_nothing_outside(hostile: dict[str, Path]) -> None:
    ctx = allow_all(hostile)
    memdir, outside = hostile["memdir"], hostile["outside"]
    content = "---\nname: trap\ndescription: follows a dangling link\ntype: user\n---\nx\n"
    assert run("Write", ctx, file_path=str(memdir / "dangling.md"), content=content).is_error
    with pytest.raises(InvalidPath):
        MemoryStore(memdir).write_file("dangling.md", content)
    with pytest.raises(InvalidPath):
        MemoryStore(memdir).create("trap", "x", "user", "x", file="dangling.md")
    assert not (outside / "created_by_attack.md").exists()


def test_hard_linked_memory_is_replaced_not_written_through(hostile: dict[str, Path]) -> None:
    """realpath cannot see a hard link, but an atomic write replaces the memdir's name only."""
    ctx = allow_all(hostile)
    memdir, outside = hostile["memdir"], hostile["outside"]
    assert not run("Read", ctx, file_path=str(memdir / "hard.md")).is_error
    edit = run("Edit", ctx, file_path=str(memdir / "hard.md"), old_string="OUTSIDE ORIGINAL",
               new_string="edited in the memdir")
    assert not edit.is_error, edit.content
    assert "edited in the memdir" in (memdir / "hard.md").read_text("utf-8")
    assert (outside / "hard.md").read_text("utf-8").endswith("OUTSIDE ORIGINAL\n")
    assert os.stat(memdir / "hard.md").st_ino != os.stat(outside / "hard.md").st_ino


def test_memdir_link_into_the_project_is_neither_read_nor_written(
    hostile: dict[str, Path],
) -> None:
    """A link from one root into another is followed by neither a read nor a write (the
    gateway follows a link for a read only while it stays in the same root)."""
    project, memdir = hostile["project"], hostile["memdir"]
    before = (project / "analysis.py").read_bytes()
    ask = ToolContext(project_root=project, memdir=memdir,
                      permission=PermissionPolicy(mode="ask", interactive=False))
    read = run("Read", ask, file_path=str(memdir / "to_project.md"))
    assert read.is_error and "symbolic link" in read.content
    result = run("Write", ask, file_path=str(memdir / "to_project.md"), content="pwned\n")
    assert result.is_error and "symbolic link" in result.content
    confined = allow_all(hostile, restrict_to_memdir=True)
    result = run("Write", confined, file_path=str(memdir / "to_project.md"), content="pwned\n")
    assert result.is_error and "symbolic link" in result.content
    assert (project / "analysis.py").read_bytes() == before


def test_confined_agent_cannot_write_the_project_even_when_allowed(
    hostile: dict[str, Path],
) -> None:
    ctx = allow_all(hostile, restrict_to_memdir=True)
    project = hostile["project"]
    for target in ("analysis.py", "new.py", ".claude/settings.json", "CLAUDE.md"):
        run("Read", ctx, file_path=target)
        result = run("Write", ctx, file_path=target, content="pwned\n")
        assert result.is_error, target
    assert not (project / "new.py").exists() and not (project / ".claude").exists()
    assert run("RunPython", ctx, code="open('x', 'w')").is_error


def test_store_refuses_every_escape(hostile: dict[str, Path]) -> None:
    store = MemoryStore(hostile["memdir"])
    outside = snapshot(hostile["outside"])
    for file in ("../outside/secret.md", "/etc/x.md", "~/x.md", "link_out.md",
                 "dir_out/secret.md", "dir_out/new.md", "sub/../../x.md", "a\\..\\b.md",
                 ".hidden.md", "x.txt", "MEMORY.md", "C:/x.md", "a/\x00.md", " x.md"):
        with pytest.raises(InvalidPath):
            store.resolve(file)
        with pytest.raises((InvalidPath, MemoryNotFound)):
            store.update(file, body="pwned\n")
        with pytest.raises((InvalidPath, MemoryNotFound)):
            store.forget(file)
        if file != "MEMORY.md":  # the index itself is writable through write_file
            with pytest.raises(InvalidPath):
                store.write_file(file, "pwned\n")
    assert snapshot(hostile["outside"]) == outside
    assert {m.file for m in store.list()} == {"user_good.md", "hard.md"}  # links leading out are not memories


def test_get_does_not_describe_a_file_outside(hostile: dict[str, Path]) -> None:
    store = MemoryStore(hostile["memdir"])
    with pytest.raises((InvalidPath, MemoryNotFound)):
        found = store.get("link_out.md")
        pytest.fail(f"get() described {found.path}, outside the memdir, as {found.name!r}")


def test_cli_refuses_every_escape(hostile: dict[str, Path], run_cli: Cli) -> None:
    outside, memdir = hostile["outside"], hostile["memdir"]
    before_outside, before_memdir = snapshot(outside), snapshot(memdir)
    for file in ("../evil.md", str(outside / "evil.md"), "sub/../../evil.md", ".hidden.md",
                 "evil.txt", "MEMORY.md", "link_out.md", "dir_out/new.md", "dangling.md"):
        code, out, err = run_cli("add", "--name", "evil", "--description", "x", "--type", "user",
                                 "--body", "pwned", "--file", file)
        assert code == 2 and "memory" in err.lower(), (file, code, err)
    for name in ("../outside/secret.md", str(outside / "secret.md"), "link_out.md",
                 "dir_out/secret.md", "/etc/passwd"):
        code, out, err = run_cli("show", name)
        assert code != 0 and SECRET not in out + err, (name, out, err)
        code, out, err = run_cli("forget", name, "-f")
        assert code != 0, (name, out)
    code, out, _ = run_cli("search", SECRET, "--json")
    assert code == 1 and json.loads(out) == []
    code, out, _ = run_cli("list", "--json")
    listed = {m["file"] for m in json.loads(out)}
    assert listed == {"user_good.md", "hard.md"}  # links leading out are not memories
    assert snapshot(outside) == before_outside and snapshot(memdir) == before_memdir
    assert (memdir / "link_out.md").is_symlink() and (memdir / "dir_out").is_symlink()
