"""Fuzzing the path validators: the store's memory paths and the file tools' paths.

Inputs are built from the pieces escapes are made of (``..``, separators, ``~``, NUL,
control characters, drive letters, dots, spaces, multi-byte names) as well as from
arbitrary text. Whatever comes in, the answer is either a refusal with ``InvalidPath`` or
a path that, after following every symlink, is inside the allowed folders.
"""

from __future__ import annotations

import os
import tempfile
from collections.abc import Iterator
from pathlib import Path, PurePosixPath

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from jupyter_memory.agent.tools import ToolContext
from jupyter_memory.agent.tools._fs import resolve
from jupyter_memory.errors import InvalidPath
from jupyter_memory.memdir.store import MemoryStore

PIECES = [
    "..", ".", "/", "//", "\\", "~", "~root", "\x00", "\n", "\t", " ", "C:", "a", "b",
    "MEMORY.md", ".md", "x.md", ".hidden", "link_out", "dir_out", "mem", "proj", "outside",
    "数据", "é", "\u202e", "%2e%2e", "*", ":", "<", ">", "|", "\x7f",
]
paths = st.one_of(
    st.lists(st.sampled_from(PIECES), max_size=12).map("".join),
    st.text(max_size=60),
    st.lists(st.sampled_from([".", "..", "a", "x.md", "link_out", "dir_out", "mem"]),
             min_size=1, max_size=8).map("/".join),
)
FUZZ = settings(max_examples=300, deadline=None,
                suppress_health_check=[HealthCheck.function_scoped_fixture])


@pytest.fixture(scope="module")
def world() -> Iterator[dict[str, Path]]:
    """A project and a memdir with links that lead out of both (made once per module)."""
    with tempfile.TemporaryDirectory(prefix="fuzz-paths-") as tmp:
        root = Path(os.path.realpath(tmp))
        project, memdir, outside = root / "proj", root / "mem", root / "outside"
        for folder in (project, memdir, outside):
            folder.mkdir()
        (outside / "x.md").write_text("outside\n")
        for base in (project, memdir):
            os.symlink(outside / "x.md", base / "link_out")
            os.symlink(outside / "x.md", base / "link_out.md")
            os.symlink(outside, base / "dir_out")
        (memdir / "a").mkdir()
        os.symlink(memdir / "a", memdir / "inner_link")  # a link that stays inside
        yield {"project": project, "memdir": memdir, "outside": outside}


def _inside(path: str, root: Path) -> bool:
    return path == str(root) or path.startswith(str(root) + os.sep)


@FUZZ
@given(raw=paths)
def test_store_paths_stay_in_the_memdir(world: dict[str, Path], raw: str) -> None:
    store = MemoryStore(world["memdir"])
    try:
        rel = store.normalize(raw)
    except InvalidPath:
        return
    parts = PurePosixPath(rel).parts
    assert rel.endswith(".md") and rel != "MEMORY.md"
    assert not rel.startswith(("/", "~")) and ".." not in parts
    assert not any(p.startswith(".") for p in parts) and "\\" not in rel and "\x00" not in rel
    assert store.normalize(rel) == rel  # canonical: normalising again changes nothing
    try:
        path = store.resolve(raw)
    except InvalidPath:
        return  # a symlink out, or a folder
    assert _inside(os.path.realpath(path), world["memdir"]), (raw, path)


@FUZZ
@given(raw=paths)
def test_store_relative_accepts_only_memdir_files(world: dict[str, Path], raw: str) -> None:
    store = MemoryStore(world["memdir"])
    for candidate in (raw, f"{world['memdir']}/{raw}", f"{world['project']}/{raw}"):
        try:
            rel = store.relative(candidate)
        except InvalidPath:
            continue
        assert rel.endswith(".md") and ".." not in PurePosixPath(rel).parts
        assert _inside(os.path.normpath(world["memdir"] / rel), world["memdir"])


@FUZZ
@given(raw=paths, base=st.sampled_from(["", "memdir", "project", "outside"]))
def test_tool_paths_stay_in_the_roots(world: dict[str, Path], raw: str, base: str) -> None:
    ctx = ToolContext(project_root=world["project"], memdir=world["memdir"])
    given_path = f"{world[base]}/{raw}" if base else raw
    try:
        loc = resolve(ctx, given_path)
    except InvalidPath:
        return
    real = os.path.realpath(loc.path)
    assert real == str(loc.path)
    in_memdir = _inside(real, world["memdir"])
    assert in_memdir or _inside(real, world["project"]), (given_path, real)
    assert loc.in_memdir == in_memdir
    assert not _inside(real, world["outside"])
