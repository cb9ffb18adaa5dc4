"""Read, Write and Edit over the project folder and the memdir (a real MemoryStore)."""

from __future__ import annotations

import os
import time
from pathlib import Path
from typing import Any

import pytest

from jupyter_memory.agent.tools import (
    PermissionPolicy,
    PermissionRequest,
    ToolContext,
    ToolResult,
    default_registry,
)
from jupyter_memory.agent.tools.files import DEFAULT_LINE_LIMIT, MAX_LINE_CHARS, MAX_READ_CHARS
from jupyter_memory.context.instructions import load_instructions

DAY = 86_400
SECRET = "AKIAIOSFODNN7Q2Z4K3J"  # shaped like an AWS access key id

TOPIC = """---
name: revenue-in-cents
description: The sales.revenue column is stored in cents, not dollars
type: project
---
The revenue column holds integer cents.

**Why:** the billing export writes cents.
**How to apply:** divide by 100 before showing totals.
"""


@pytest.fixture(autouse=True)
def notes(project: Path) -> Path:
    """Every test here starts with a three-line ``notes.txt`` in the project."""
    path = project / "notes.txt"
    path.write_text("alpha\nbeta\ngamma\n")
    return path


def make_ctx(project: Path, memdir: Path | None = None, **kwargs: Any) -> ToolContext:
    return ToolContext(project_root=project, memdir=memdir, **kwargs)


def run(tool: str, ctx: ToolContext, **input: Any) -> ToolResult:
    return default_registry().run(tool, input, ctx)


# ----------------------------------------------------------------------------- Read


def test_read_numbers_lines_like_cat_n(project: Path) -> None:
    ctx = make_ctx(project)
    result = run("Read", ctx, file_path="notes.txt")
    assert not result.is_error
    assert result.content == "     1\talpha\n     2\tbeta\n     3\tgamma"
    path = project / "notes.txt"
    assert ctx.read_files == {path: path.stat().st_mtime}
    assert result.meta["total_lines"] == 3 and result.meta["truncated"] is False


def test_read_absolute_offset_and_limit(project: Path) -> None:
    result = run("Read", make_ctx(project), file_path=str(project / "notes.txt"), offset=2, limit=1)
    assert result.content.splitlines()[0] == "     2\tbeta"
    assert "[Showing lines 2–2 of 3. Continue with offset=3.]" in result.content


def test_read_default_limit_and_continuation(project: Path) -> None:
    big = project / "big.txt"
    big.write_text("".join(f"row {i}\n" for i in range(1, 2501)))
    first = run("Read", make_ctx(project), file_path="big.txt")
    lines = first.content.splitlines()
    assert lines[DEFAULT_LINE_LIMIT - 1] == f"{DEFAULT_LINE_LIMIT:>6}\trow {DEFAULT_LINE_LIMIT}"
    assert lines[-1] == "[Showing lines 1–2000 of 2500. Continue with offset=2001.]"
    rest = run("Read", make_ctx(project), file_path="big.txt", offset=2001)
    assert rest.content.splitlines()[-1] == "  2500\trow 2500"
    assert rest.meta["truncated"] is False


def test_read_cuts_long_lines_and_caps_total(project: Path) -> None:
    (project / "wide.txt").write_text("x" * (MAX_LINE_CHARS + 500) + "\nshort\n")
    wide = run("Read", make_ctx(project), file_path="wide.txt").content
    first = wide.splitlines()[0]
    assert first.endswith(f"[line cut: {MAX_LINE_CHARS + 500:,} characters in all]")
    assert first.count("x") == MAX_LINE_CHARS

    (project / "one_line.json").write_text("[" + "1," * 500_000 + "1]\nnext\n")
    huge = run("Read", make_ctx(project), file_path="one_line.json").content.splitlines()
    assert huge[0].endswith("[line cut: 1,000,003 characters in all]")
    assert huge[1] == "     2\tnext"

    (project / "heavy.txt").write_text(("y" * 1900 + "\n") * 200)
    heavy = run("Read", make_ctx(project), file_path="heavy.txt")
    assert len(heavy.content) <= MAX_READ_CHARS + 200
    last_shown = heavy.meta["last_line"]
    assert 40 < last_shown < 200
    assert f"Continue with offset={last_shown + 1}" in heavy.content


def test_read_errors(project: Path) -> None:
    ctx = make_ctx(project)
    (project / "empty.txt").write_text("")
    (project / "blob.dat").write_bytes(b"abc\x00def")
    (project / "table.parquet").write_bytes(b"PAR1")
    (project / "sub").mkdir()
    assert run("Read", ctx, file_path="empty.txt").content == "(the file is empty)"
    for name, needle in [
        ("blob.dat", "binary file"),
        ("table.parquet", "binary file"),
        ("sub", "is a folder"),
        ("missing.txt", "does not exist"),
    ]:
        result = run("Read", ctx, file_path=name)
        assert result.is_error, name
        assert needle in result.content
    past = run("Read", ctx, file_path="notes.txt", offset=10)
    assert past.is_error and "has 3 lines; offset 10 is past the end" in past.content
    assert project / "blob.dat" not in ctx.read_files


def test_read_non_utf8_is_shown_with_replacements(project: Path) -> None:
    (project / "latin.txt").write_bytes("café\n".encode("latin-1"))
    result = run("Read", make_ctx(project), file_path="latin.txt")
    assert not result.is_error and result.content == "     1\tcaf\ufffd"


def test_read_memdir_staleness(project: Path, memdir: Path) -> None:
    memdir.mkdir()
    old = memdir / "project_old.md"
    fresh = memdir / "project_fresh.md"
    old.write_text(TOPIC)
    fresh.write_text(TOPIC)
    three_days_ago = time.time() - 3 * DAY - 60
    os.utime(old, (three_days_ago, three_days_ago))
    ctx = make_ctx(project, memdir)

    stale = run("Read", ctx, file_path=str(old))
    assert stale.content.startswith("<system-reminder>")
    assert "3 days" in stale.content.split("</system-reminder>")[0]
    assert "     1\t---" in stale.content
    assert stale.meta["age_days"] == 3 and stale.meta["in_memdir"] is True

    new = run("Read", ctx, file_path=str(fresh))
    assert new.content.startswith("     1\t---")
    assert "system-reminder" not in new.content

    old_project_file = project / "old.txt"
    old_project_file.write_text("kept\n")
    os.utime(old_project_file, (three_days_ago, three_days_ago))
    assert run("Read", ctx, file_path="old.txt").content == "     1\tkept"  # only memories age


def test_read_activates_instruction_files(project: Path) -> None:
    (project / "CLAUDE.md").write_text("Project rule: use pandas.\n")
    (project / "etl").mkdir()
    (project / "etl" / "CLAUDE.md").write_text("ETL rule: amounts are in cents.\n")
    (project / "etl" / "job.py").write_text("print('etl')\n")
    instructions = load_instructions(project, project_root=project)
    activated: list[Any] = []
    ctx = make_ctx(project, instructions=instructions, on_activate=activated.extend)

    run("Read", ctx, file_path="notes.txt")
    assert activated == []
    first = run("Read", ctx, file_path="etl/job.py")
    assert [f.path for f in activated] == [project / "etl" / "CLAUDE.md"]
    assert first.meta["activated"] == [str(project / "etl" / "CLAUDE.md")]
    run("Read", ctx, file_path="etl/job.py")
    assert len(activated) == 1  # each file comes in once


@pytest.mark.parametrize("tool", ["Read", "Write", "Edit"])
def test_file_tools_refuse_escapes(tool: str, project: Path, memdir: Path, tmp_path: Path) -> None:
    memdir.mkdir()
    outside = tmp_path / "outside.txt"
    outside.write_text("private\n")
    (project / "link.txt").symlink_to(outside)
    (project / "linkdir").symlink_to(tmp_path)
    (memdir / "sneaky.md").symlink_to(outside)
    ctx = make_ctx(project, memdir, permission=PermissionPolicy(mode="allow"))
    ctx.read_files[outside] = outside.stat().st_mtime  # even a recorded read must not help
    extra: dict[str, Any] = {"content": "x"} if tool == "Write" else {}
    if tool == "Edit":
        extra = {"old_string": "private", "new_string": "public"}
    for path, needle in [
        ("../outside.txt", "outside the project folder"),
        (str(outside), "outside the project folder"),
        (f"{memdir}/../outside.txt", "outside the project folder"),
        ("~/outside.txt", "outside the project folder"),
        ("link.txt", "symbolic link"),
        ("linkdir/outside.txt", "symbolic link"),
        (str(memdir / "sneaky.md"), "symbolic link"),
        ("bad\x00name", "NUL"),
        ("  ", "non-empty path"),
    ]:
        result = run(tool, ctx, file_path=path, **extra)
        assert result.is_error, (tool, path)
        assert needle in result.content, (tool, path, result.content)
        assert "memory directory" in result.content or needle in ("NUL", "non-empty path")
    assert outside.read_text() == "private\n"


# ------------------------------------------------------------ Write outside the memdir


def test_write_outside_memdir_permission_matrix(project: Path) -> None:
    target = project / "out" / "result.py"

    denied = run(
        "Write",
        make_ctx(project, permission=PermissionPolicy(mode="deny")),
        file_path="out/result.py",
        content="x = 1\n",
    )
    assert denied.is_error and "'deny'" in denied.content and not target.exists()

    allowed_ctx = make_ctx(project, permission=PermissionPolicy(mode="allow"))
    allowed = run("Write", allowed_ctx, file_path="out/result.py", content="x = 1\n")
    assert not allowed.is_error, allowed.content
    assert target.read_text() == "x = 1\n" and allowed.content.startswith("Created")
    assert allowed_ctx.read_files[target] == target.stat().st_mtime
    assert allowed_ctx.written_memdir_files == set()
    target.unlink()

    asked: list[PermissionRequest] = []
    policy = PermissionPolicy(mode="ask", prompt=lambda r: asked.append(r) or "y")
    run("Write", make_ctx(project, permission=policy), file_path="out/result.py", content="x = 2\n")
    assert target.read_text() == "x = 2\n"
    assert (
        asked[0].tool == "Write" and str(target) in asked[0].action and asked[0].detail == "x = 2\n"
    )
    target.unlink()

    def nobody(request: PermissionRequest) -> str:
        raise EOFError

    blind = run(
        "Write",
        make_ctx(project, permission=PermissionPolicy(mode="ask", prompt=nobody)),
        file_path="out/result.py",
        content="x = 3\n",
    )
    assert blind.is_error and "%config Agent.permission_mode = 'allow'" in blind.content
    assert not target.exists()


def test_overwrite_requires_a_fresh_read(project: Path) -> None:
    ctx = make_ctx(project, permission=PermissionPolicy(mode="allow"))
    unread = run("Write", ctx, file_path="notes.txt", content="new\n")
    assert unread.is_error and "have not read it" in unread.content
    assert (project / "notes.txt").read_text() == "alpha\nbeta\ngamma\n"

    run("Read", ctx, file_path="notes.txt")
    later = time.time() + 5
    os.utime(project / "notes.txt", (later, later))  # someone else touched it
    changed = run("Write", ctx, file_path="notes.txt", content="new\n")
    assert changed.is_error and "changed on disk" in changed.content

    run("Read", ctx, file_path="notes.txt")
    ok = run("Write", ctx, file_path="notes.txt", content="new\n")
    assert not ok.is_error and ok.content.startswith("Overwrote")
    assert (project / "notes.txt").read_text() == "new\n"


def test_write_keeps_file_mode(project: Path) -> None:
    script = project / "run.sh"
    script.write_text("echo 1\n")
    script.chmod(0o755)
    ctx = make_ctx(project, permission=PermissionPolicy(mode="allow"))
    run("Read", ctx, file_path="run.sh")
    run("Write", ctx, file_path="run.sh", content="echo 2\n")
    assert script.read_text() == "echo 2\n" and (script.stat().st_mode & 0o777) == 0o755


def test_write_to_folder_refused(project: Path) -> None:
    (project / "sub").mkdir()
    result = run(
        "Write",
        make_ctx(project, permission=PermissionPolicy(mode="allow")),
        file_path="sub",
        content="x",
    )
    assert result.is_error and "is a folder" in result.content


# ------------------------------------------------------------ Write inside the memdir


def test_write_memory_goes_through_the_store(project: Path, memdir: Path) -> None:
    ctx = make_ctx(project, memdir, permission=PermissionPolicy(mode="deny"))  # memdir needs none
    result = run("Write", ctx, file_path=str(memdir / "project_revenue_in_cents.md"), content=TOPIC)
    assert not result.is_error, result.content
    saved = memdir / "project_revenue_in_cents.md"
    assert "revenue column holds integer cents" in saved.read_text()
    index = (memdir / "MEMORY.md").read_text()
    assert "(project_revenue_in_cents.md)" in index
    assert ctx.written_memdir_files == {"project_revenue_in_cents.md"}
    assert ctx.read_files[saved] == saved.stat().st_mtime
    assert result.meta["in_memdir"] is True


def test_write_memory_in_a_subfolder_and_the_index(project: Path, memdir: Path) -> None:
    ctx = make_ctx(project, memdir)
    sub = run("Write", ctx, file_path=str(memdir / "team" / "db.md"), content=TOPIC)
    assert not sub.is_error, sub.content
    assert (memdir / "team" / "db.md").exists()
    run("Read", ctx, file_path=str(memdir / "MEMORY.md"))
    index = "# Memory\n\n- [DB](team/db.md) — where the warehouse lives\n"
    written = run("Write", ctx, file_path=str(memdir / "MEMORY.md"), content=index)
    assert not written.is_error, written.content
    assert (memdir / "MEMORY.md").read_text() == index
    assert ctx.written_memdir_files == {"team/db.md", "MEMORY.md"}


def test_write_memory_with_a_credential_is_refused(project: Path, memdir: Path) -> None:
    ctx = make_ctx(project, memdir)
    body = TOPIC + f"\nThe AWS key is {SECRET}\n"
    result = run("Write", ctx, file_path=str(memdir / "reference_aws.md"), content=body)
    assert result.is_error
    assert SECRET not in result.content
    assert not (memdir / "reference_aws.md").exists()
    assert (
        not (memdir / "MEMORY.md").exists()
        or "reference_aws" not in (memdir / "MEMORY.md").read_text()
    )
    assert ctx.written_memdir_files == set()


def test_write_memory_must_be_markdown(project: Path, memdir: Path) -> None:
    result = run(
        "Write", make_ctx(project, memdir), file_path=str(memdir / "notes.txt"), content="x"
    )
    assert result.is_error and not (memdir / "notes.txt").exists()


def test_restricted_agent_writes_only_in_memdir(project: Path, memdir: Path) -> None:
    ctx = make_ctx(
        project, memdir, restrict_to_memdir=True, permission=PermissionPolicy(mode="allow")
    )
    outside = run("Write", ctx, file_path="new.py", content="x = 1\n")
    assert outside.is_error and "only write inside the memory directory" in outside.content
    assert not (project / "new.py").exists()
    run("Read", ctx, file_path="notes.txt")  # reading the project is fine
    edit = run("Edit", ctx, file_path="notes.txt", old_string="beta", new_string="BETA")
    assert edit.is_error and (project / "notes.txt").read_text() == "alpha\nbeta\ngamma\n"
    inside = run("Write", ctx, file_path=str(memdir / "project_x.md"), content=TOPIC)
    assert not inside.is_error, inside.content
    assert ctx.written_memdir_files == {"project_x.md"}


# ----------------------------------------------------------------------------- Edit


def test_edit_requires_a_prior_read(project: Path) -> None:
    ctx = make_ctx(project, permission=PermissionPolicy(mode="allow"))
    result = run("Edit", ctx, file_path="notes.txt", old_string="beta", new_string="BETA")
    assert (
        result.is_error
        and "have not read it" in result.content
        and "Read it first" in result.content
    )
    assert (project / "notes.txt").read_text() == "alpha\nbeta\ngamma\n"


def test_edit_replaces_a_unique_string(project: Path) -> None:
    asked: list[PermissionRequest] = []
    ctx = make_ctx(
        project, permission=PermissionPolicy(mode="ask", prompt=lambda r: asked.append(r) or True)
    )
    run("Read", ctx, file_path="notes.txt")
    result = run("Edit", ctx, file_path="notes.txt", old_string="beta", new_string="BETA")
    assert not result.is_error, result.content
    assert (project / "notes.txt").read_text() == "alpha\nBETA\ngamma\n"
    assert "     2\tBETA" in result.content
    assert asked and "-beta" in asked[0].detail and "+BETA" in asked[0].detail
    again = run("Edit", ctx, file_path="notes.txt", old_string="gamma", new_string="GAMMA")
    assert not again.is_error  # our own write keeps the read record fresh


def test_edit_errors(project: Path) -> None:
    (project / "dup.txt").write_text("x = 1\nx = 1\n")
    ctx = make_ctx(project, permission=PermissionPolicy(mode="allow"))
    run("Read", ctx, file_path="dup.txt")
    for kwargs, needle in [
        ({"old_string": "x = 1", "new_string": "x = 2"}, "occurs 2 times"),
        ({"old_string": "y", "new_string": "z"}, "was not found"),
        ({"old_string": "x = 1", "new_string": "x = 1"}, "the same"),
        ({"old_string": "", "new_string": "z"}, "old_string is empty"),
    ]:
        result = run("Edit", ctx, file_path="dup.txt", **kwargs)
        assert result.is_error and needle in result.content, kwargs
    assert (project / "dup.txt").read_text() == "x = 1\nx = 1\n"
    missing = run("Edit", ctx, file_path="nope.txt", old_string="a", new_string="b")
    assert missing.is_error and "Use Write" in missing.content
    every = run(
        "Edit", ctx, file_path="dup.txt", old_string="x = 1", new_string="x = 2", replace_all=True
    )
    assert not every.is_error and every.meta["replacements"] == 2
    assert (project / "dup.txt").read_text() == "x = 2\nx = 2\n"


def test_edit_denied_leaves_file(project: Path) -> None:
    ctx = make_ctx(project, permission=PermissionPolicy(mode="deny"))
    run("Read", ctx, file_path="notes.txt")
    result = run("Edit", ctx, file_path="notes.txt", old_string="beta", new_string="BETA")
    assert result.is_error and "'deny'" in result.content
    assert (project / "notes.txt").read_text() == "alpha\nbeta\ngamma\n"


def test_edit_keeps_crlf(project: Path) -> None:
    (project / "win.txt").write_bytes(b"one\r\ntwo\r\nthree\r\n")
    ctx = make_ctx(project, permission=PermissionPolicy(mode="allow"))
    run("Read", ctx, file_path="win.txt")
    result = run("Edit", ctx, file_path="win.txt", old_string="one\ntwo", new_string="1\n2")
    assert not result.is_error, result.content
    assert (project / "win.txt").read_bytes() == b"1\r\n2\r\nthree\r\n"


def test_edit_memory_goes_through_the_store(project: Path, memdir: Path) -> None:
    ctx = make_ctx(project, memdir)
    path = memdir / "project_revenue_in_cents.md"
    run("Write", ctx, file_path=str(path), content=TOPIC)
    ctx.written_memdir_files.clear()
    edited = run(
        "Edit", ctx, file_path=str(path), old_string="divide by 100", new_string="divide by 100.0"
    )
    assert not edited.is_error, edited.content
    assert "divide by 100.0" in path.read_text()
    assert ctx.written_memdir_files == {"project_revenue_in_cents.md"}
    leak = run(
        "Edit",
        ctx,
        file_path=str(path),
        old_string="integer cents.",
        new_string=f"integer cents. key {SECRET}",
    )
    assert leak.is_error and SECRET not in path.read_text()


def test_edit_snippet_follows_header_lines_added_by_the_store(project: Path, memdir: Path) -> None:
    memdir.mkdir()
    path = memdir / "feedback_plots.md"
    path.write_text(
        "---\nname: plots\ndescription: how to plot\ntype: feedback\n---\nUse seaborn.\n"
    )
    ctx = make_ctx(project, memdir, provenance="extraction")
    run("Read", ctx, file_path=str(path))
    result = run(
        "Edit", ctx, file_path=str(path), old_string="Use seaborn.", new_string="Use plotly."
    )
    assert not result.is_error, result.content
    on_disk = path.read_text().splitlines()
    number = on_disk.index("Use plotly.") + 1
    assert f"{number:>6}\tUse plotly." in result.content
    assert "origin: extraction" in on_disk and "Read the file again" in result.content


def test_memdir_inside_the_project_is_still_the_memdir(project: Path) -> None:
    memdir = project / ".memory"
    memdir.mkdir()
    ctx = make_ctx(project, memdir, permission=PermissionPolicy(mode="deny"))
    saved = run("Write", ctx, file_path=".memory/project_x.md", content=TOPIC)
    assert not saved.is_error, saved.content
    assert ctx.written_memdir_files == {"project_x.md"}
    other = run("Write", ctx, file_path="other.md", content=TOPIC)
    assert other.is_error and "'deny'" in other.content


def test_read_refuses_a_pipe(project: Path) -> None:
    os.mkfifo(project / "pipe")
    result = run("Read", make_ctx(project), file_path="pipe")
    assert result.is_error and "not a regular file" in result.content
    assert run("Grep", make_ctx(project), pattern="x").content.startswith("No matches")
