"""Grep and Glob: matching, modes, caps, skipped folders, and path escapes."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest

from jupyter_memory.agent.tools import ToolContext, ToolResult, default_registry
from jupyter_memory.agent.tools.search import GLOB_LIMIT, compile_glob


@pytest.fixture(autouse=True)
def sources(project: Path) -> Path:
    """Every test here searches a project of sources, a notebook, a binary file and the
    folders Grep and Glob skip, with known modification times."""
    root = project
    (root / "src" / "deep").mkdir(parents=True)
    (root / "notebooks").mkdir()
    (root / "src" / "load.py").write_text(
        "import pandas as pd\n\ndef load_sales():\n    return 1\n"
    )
    (root / "src" / "deep" / "clean.py").write_text(
        "def clean():\n    # Load_Sales later\n    pass\n"
    )
    (root / "notebooks" / "eda.ipynb").write_text('{"cells": ["load_sales()"]}\n')
    (root / "README.md").write_text("# Sales\nload_sales reads the export\n")
    (root / "data.parquet").write_bytes(b"PAR1\x00\x01load_sales\x00")
    for skipped in (".git", "node_modules", ".ipynb_checkpoints", ".venv", "__pycache__"):
        (root / skipped).mkdir()
        (root / skipped / "x.py").write_text("load_sales\n")
    times = {
        "src/load.py": 3000,
        "src/deep/clean.py": 1000,
        "notebooks/eda.ipynb": 2000,
        "README.md": 500,
    }
    for rel, t in times.items():
        os.utime(root / rel, (t, t))
    return root


def run(tool: str, ctx: ToolContext, **input: Any) -> ToolResult:
    return default_registry().run(tool, input, ctx)


@pytest.fixture
def ctx(project: Path) -> ToolContext:
    return ToolContext(project_root=project)


# ----------------------------------------------------------------------------- globs


@pytest.mark.parametrize(
    ("pattern", "path", "expected"),
    [
        ("*.py", "a.py", True),
        ("*.py", "src/a.py", False),
        ("**/*.py", "a.py", True),
        ("**/*.py", "src/deep/a.py", True),
        ("src/**", "src/deep/a.py", True),
        ("*.{py,ipynb}", "eda.ipynb", True),
        ("*.{py,ipynb}", "eda.md", False),
        ("data_?.csv", "data_1.csv", True),
        ("data_[!0].csv", "data_0.csv", False),
        ("./notes.md", "notes.md", True),
        ("a+b(1).txt", "a+b(1).txt", True),
    ],
)
def test_compile_glob(pattern: str, path: str, expected: bool) -> None:
    assert bool(compile_glob(pattern).match(path)) is expected


# ----------------------------------------------------------------------------- Glob


def test_glob_recursive_newest_first(ctx: ToolContext, project: Path) -> None:
    result = run("Glob", ctx, pattern="**/*.py")
    assert not result.is_error
    assert result.content.splitlines() == [
        str(project / "src/load.py"),
        str(project / "src/deep/clean.py"),
    ]


def test_glob_top_level_only_and_hint(ctx: ToolContext, project: Path) -> None:
    assert run("Glob", ctx, pattern="*.md").content == str(project / "README.md")
    none = run("Glob", ctx, pattern="*.py")
    assert not none.is_error and "use **/*.py" in none.content


def test_glob_path_and_absolute_pattern(ctx: ToolContext, project: Path) -> None:
    assert run("Glob", ctx, pattern="*.py", path="src").content == str(project / "src/load.py")
    absolute = run("Glob", ctx, pattern=f"{project}/src/**/*.py")
    assert absolute.content.splitlines() == [
        str(project / "src/load.py"),
        str(project / "src/deep/clean.py"),
    ]
    both = run("Glob", ctx, pattern=f"{project}/*.md", path="src")
    assert both.is_error


def test_glob_caps_results(ctx: ToolContext, project: Path) -> None:
    many = project / "many"
    many.mkdir()
    for i in range(GLOB_LIMIT + 20):
        (many / f"f{i:03}.txt").write_text("x")
    result = run("Glob", ctx, pattern="many/*.txt")
    lines = result.content.splitlines()
    assert len(lines) == GLOB_LIMIT + 1
    assert lines[-1].startswith("[20 more files not shown")
    assert result.meta["truncated"] is True


def test_glob_refuses_outside_and_non_folder(
    ctx: ToolContext, project: Path, tmp_path: Path
) -> None:
    outside = run("Glob", ctx, pattern="*", path=str(tmp_path))
    assert outside.is_error and "outside the project folder" in outside.content
    up = run("Glob", ctx, pattern="*", path="../")
    assert up.is_error
    file = run("Glob", ctx, pattern="*", path="README.md")
    assert file.is_error and "not a folder" in file.content


def test_glob_does_not_follow_symlinked_folders(
    ctx: ToolContext, project: Path, tmp_path: Path
) -> None:
    secret = tmp_path / "secret"
    secret.mkdir()
    (secret / "key.py").write_text("TOKEN = 1\n")
    (project / "link").symlink_to(secret)
    (project / "leak.py").symlink_to(secret / "key.py")
    result = run("Glob", ctx, pattern="**/*.py")
    assert "key.py" not in result.content and "leak.py" not in result.content
    via_link = run("Glob", ctx, pattern="*", path="link")
    assert via_link.is_error and "symbolic link" in via_link.content


# ----------------------------------------------------------------------------- Grep


def test_grep_files_with_matches_default(ctx: ToolContext, project: Path) -> None:
    result = run("Grep", ctx, pattern="load_sales")
    assert not result.is_error
    lines = result.content.splitlines()
    assert lines[0] == "Found 3 files:"
    assert lines[1:] == [
        str(project / "src/load.py"),
        str(project / "notebooks/eda.ipynb"),
        str(project / "README.md"),
    ]
    # skipped: binary parquet, .git, node_modules, checkpoints, .venv, __pycache__


def test_grep_case_insensitive_glob_and_path(ctx: ToolContext, project: Path) -> None:
    loose = run("Grep", ctx, pattern="load_sales", case_insensitive=True, glob="*.py")
    assert loose.content.splitlines()[1:] == [
        str(project / "src/load.py"),
        str(project / "src/deep/clean.py"),
    ]
    scoped = run("Grep", ctx, pattern="def", path="src/deep")
    assert scoped.content.splitlines()[1:] == [str(project / "src/deep/clean.py")]
    pathglob = run("Grep", ctx, pattern="load", glob="notebooks/*.ipynb")
    assert pathglob.content.splitlines()[1:] == [str(project / "notebooks/eda.ipynb")]
    single = run("Grep", ctx, pattern="pandas", path="src/load.py", output_mode="content")
    assert single.content.splitlines()[1] == f"{project / 'src/load.py'}:1:import pandas as pd"


def test_grep_content_and_context(ctx: ToolContext, project: Path) -> None:
    result = run("Grep", ctx, pattern="^def ", output_mode="content", glob="**/*.py")
    lines = result.content.splitlines()
    assert lines[0] == "2 matching lines in 2 files:"
    assert f"{project / 'src/deep/clean.py'}:1:def clean():" in lines
    assert f"{project / 'src/load.py'}:3:def load_sales():" in lines
    around = run(
        "Grep", ctx, pattern="def load", output_mode="content", context=1, path="src/load.py"
    )
    assert around.content.splitlines()[1:] == [
        f"{project / 'src/load.py'}-2-",
        f"{project / 'src/load.py'}:3:def load_sales():",
        f"{project / 'src/load.py'}-4-    return 1",
    ]


def test_grep_count_and_head_limit(ctx: ToolContext, project: Path) -> None:
    (project / "many.txt").write_text("hit\n" * 10)
    count = run("Grep", ctx, pattern="hit", output_mode="count")
    assert count.content.splitlines()[1] == f"{project / 'many.txt'}:10"
    limited = run("Grep", ctx, pattern="hit", output_mode="content", head_limit=3)
    lines = limited.content.splitlines()
    assert len(lines) == 5 and lines[-1].startswith("[Showing 3 of 10 lines (head_limit=3)")
    assert limited.meta["truncated"] is True


def test_grep_no_match_and_bad_regex(ctx: ToolContext) -> None:
    none = run("Grep", ctx, pattern="zzz_absent")
    assert not none.is_error and none.content.startswith("No matches")
    bad = run("Grep", ctx, pattern="load(")
    assert bad.is_error and "Invalid regular expression" in bad.content


def test_grep_refuses_escapes(ctx: ToolContext, tmp_path: Path, project: Path) -> None:
    (tmp_path / "outside.txt").write_text("load_sales\n")
    for path in (str(tmp_path), "../outside.txt", "/etc"):
        result = run("Grep", ctx, pattern="load", path=path)
        assert result.is_error and "outside" in result.content
    (project / "escape.txt").symlink_to(tmp_path / "outside.txt")
    via_link = run("Grep", ctx, pattern="load", path="escape.txt")
    assert via_link.is_error and "symbolic link" in via_link.content
    everywhere = run("Grep", ctx, pattern="load_sales")
    assert "escape.txt" not in everywhere.content


def test_grep_and_glob_search_the_memdir_by_path(tmp_path: Path, project: Path) -> None:
    memdir = tmp_path / "mem"
    memdir.mkdir()
    (memdir / "project_cents.md").write_text("revenue is stored in cents\n")
    (memdir / ".MEMORY.md.abc.tmp").write_text("revenue leftover of a crashed write\n")
    ctx = ToolContext(project_root=project, memdir=memdir)
    assert run("Grep", ctx, pattern="cents").content.startswith("No matches")  # default: project
    found = run("Grep", ctx, pattern="revenue", path=str(memdir))
    assert found.content.splitlines()[1:] == [str(memdir / "project_cents.md")]
    listed = run("Glob", ctx, pattern="*", path=str(memdir))
    assert listed.content == str(memdir / "project_cents.md")
