"""The file gateway (``memdir/gateway.py``): roots, the link rules, and each operation."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from jupyter_memory.errors import PathRefused, SymlinkRefused
from jupyter_memory.memdir.gateway import Root, Roots, never_imported, person_root


@pytest.fixture
def layout(tmp_path: Path) -> dict[str, Path]:
    """A root with a link inside it, links out of it (file, folder, dangling, chain), and a
    folder outside holding a secret."""
    root = tmp_path / "root"
    (root / "sub").mkdir(parents=True)
    (root / "sub" / "notes.md").write_text("inside\n")
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "secret").write_text("SECRET\n")
    os.symlink(root / "sub" / "notes.md", root / "alias.md")
    os.symlink(outside / "secret", root / "out.md")
    os.symlink(outside, root / "out_dir")
    os.symlink(outside / "missing", root / "dangling.md")
    os.symlink(root / "out.md", root / "chain.md")
    return {"root": root, "outside": outside}


def test_a_read_follows_a_link_only_inside_its_root(layout: dict[str, Path]) -> None:
    root = Root.declare("project", layout["root"])
    assert root.text("alias.md") == "inside\n"
    assert root.text(layout["root"] / "sub" / "notes.md") == "inside\n"
    for name in ("out.md", "out_dir/secret", "chain.md", "dangling.md", "../outside/secret",
                 str(layout["outside"] / "secret")):
        with pytest.raises(PathRefused) as refused:
            root.read(name)
        assert str(root.real) in str(refused.value) and refused.value.why


def test_a_root_of_your_own_follows_links_anywhere(layout: dict[str, Path]) -> None:
    mine = Root.declare("config", layout["root"], links="any")
    assert mine.text("out.md") == "SECRET\n"
    with pytest.raises(PathRefused):  # still not a path outside the root itself
        mine.read("../outside/secret")


def test_a_write_never_goes_through_a_link(layout: dict[str, Path]) -> None:
    root = Root.declare("memdir", layout["root"])
    for name in ("alias.md", "out.md", "dangling.md", "out_dir/new.md", "chain.md"):
        with pytest.raises(PathRefused, match="symbolic link"):
            root.write(name, "pwned\n")
        with pytest.raises(PathRefused, match="symbolic link"):
            root.remove(name) if name != "out_dir/new.md" else root.make_folder(name)
    assert (layout["outside"] / "secret").read_text() == "SECRET\n"
    assert sorted(os.listdir(layout["outside"])) == ["secret"]
    root.write("sub/new.md", "fine\n")
    assert (layout["root"] / "sub" / "new.md").read_text() == "fine\n"


def test_a_folder_above_the_root_may_be_a_link(tmp_path: Path) -> None:
    real = tmp_path / "disk" / "memory"
    real.mkdir(parents=True)
    os.symlink(tmp_path / "disk", tmp_path / "claude")
    root = Root.declare("memdir", tmp_path / "claude" / "memory")
    root.write("a.md", "a\n")
    assert (real / "a.md").read_text() == "a\n"
    assert root.text(tmp_path / "claude" / "memory" / "a.md") == "a\n"


def test_a_root_a_project_file_places_must_lie_inside_the_project(tmp_path: Path) -> None:
    project = tmp_path / "proj"
    (project / "team").mkdir(parents=True)
    home = tmp_path / "home"
    home.mkdir()
    os.symlink(home, project / "linked")
    bound = Root.declare("project", project)
    assert Root.declare("team", project / "team", within=bound).real == (project / "team").resolve()
    for folder in (project / "linked", project / "linked" / "later", home, project / ".."):
        with pytest.raises(PathRefused, match="inside the project") as refused:
            Root.declare("team", folder, within=bound, placed_by="teamMemoryDirectory in x")
        assert str(bound.real) in str(refused.value)


def test_a_root_that_became_a_link_refuses_writes(tmp_path: Path) -> None:
    project = tmp_path / "proj"
    project.mkdir()
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    root = Root.declare("agent", project / "notes", within=Root.declare("project", project))
    os.symlink(elsewhere, project / "notes")  # swapped in after the session started
    with pytest.raises(PathRefused, match="symbolic link"):
        root.write("x.md", "x")
    assert os.listdir(elsewhere) == []


def test_special_files_are_never_opened(tmp_path: Path) -> None:
    os.mkfifo(tmp_path / "pipe")
    root = Root.declare("project", tmp_path)
    with pytest.raises(PathRefused, match="not a regular file"):
        root.read("pipe")
    with pytest.raises(IsADirectoryError):
        root.read("")


def test_the_store_files_are_never_read_through_a_link(tmp_path: Path) -> None:
    (tmp_path / "real.md").write_text("x")
    os.symlink(tmp_path / "real.md", tmp_path / "MEMORY.md")
    root = Root.declare("memdir", tmp_path)
    assert root.read("MEMORY.md") == b"x"  # an ordinary read may follow it inside
    with pytest.raises(SymlinkRefused):
        root.read("MEMORY.md", follow=False)


def test_append_keeps_a_log_private_and_starts_a_torn_line_afresh(tmp_path: Path) -> None:
    root = Root.declare("transcripts", tmp_path)
    root.append("log.jsonl", b'{"a": 1}\n', mode=0o600, fresh_line=True)
    assert (tmp_path / "log.jsonl").stat().st_mode & 0o777 == 0o600
    with open(tmp_path / "log.jsonl", "ab") as handle:
        handle.write(b'{"torn"')
    root.append("log.jsonl", b'{"b": 2}\n', fresh_line=True)
    assert (tmp_path / "log.jsonl").read_bytes().splitlines() == [b'{"a": 1}', b'{"torn"', b'{"b": 2}']


def test_move_copy_and_listing_stay_below_their_roots(layout: dict[str, Path], tmp_path: Path) -> None:
    root = Root.declare("memdir", layout["root"])
    other = Root.declare("memdir", tmp_path / "other")
    root.copy("sub/notes.md", "copied.md", to=other)
    assert other.text("copied.md") == "inside\n"
    other.move("copied.md", "moved/notes.md")
    assert other.listdir("moved") == ["notes.md"]
    with pytest.raises(FileExistsError):
        other.move("moved/notes.md", "moved/notes.md", replace=False)
    walked = sorted(name for _, _, files in root.walk() for name in files)
    assert "secret" not in walked  # a linked folder is never entered
    assert [p.name for p in root.matching("*.md")] == ["alias.md"]  # the links out are left out
    assert [p.name for p in root.matching("**/*.md")] == ["alias.md", "notes.md"]
    assert root.links_below() == sorted(
        layout["root"].resolve() / n for n in ("alias.md", "chain.md", "dangling.md", "out.md", "out_dir"))


def test_roots_find_the_deepest_root_and_refuse_the_rest(tmp_path: Path) -> None:
    memdir = tmp_path / "mem"
    (memdir / "team").mkdir(parents=True)
    project = tmp_path / "proj"
    project.mkdir()
    roots = Roots((Root.declare("project", project), Root.declare("memdir", memdir),
                   Root.declare("team", memdir / "team")))
    assert roots.holding(memdir / "team" / "x.md").kind == "team"
    assert roots.holding(memdir / "x.md").kind == "memdir"
    with pytest.raises(PathRefused, match="outside the project folder") as refused:
        roots.locate(tmp_path / "elsewhere.md")
    assert str(project.resolve()) in str(refused.value) and "memory directory" in str(refused.value)


def test_a_path_you_typed_is_yours(tmp_path: Path) -> None:
    target = tmp_path / "data" / "notes.txt"
    target.parent.mkdir()
    target.write_text("mine")
    os.symlink(target, tmp_path / "link.txt")
    assert person_root(tmp_path / "link.txt").text(tmp_path / "link.txt") == "mine"


def test_never_imported(isolated_home: Path) -> None:
    base = isolated_home / ".claude"
    for name in (".credentials.json", "settings.json", "settings.local.json", ".claude.json",
                 "projects/-x/memory/user.md", "notes.txt", "jupyter-memory-trust.json"):
        assert never_imported(base / name) is not None, name
    assert never_imported(isolated_home / ".claude.json") is not None
    assert never_imported(base / "my-instructions.md") is None
    assert never_imported(isolated_home / "notes.txt") is None  # outside <base>: asks instead


def test_a_relative_path_you_typed_starts_at_your_working_folder(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "saved").mkdir()
    (tmp_path / "saved" / "nb.ipynb").write_text("{}")
    monkeypatch.chdir(tmp_path)
    assert person_root("saved/nb.ipynb").text("saved/nb.ipynb") == "{}"
    assert Root.declare("project", tmp_path / "saved").text("nb.ipynb") == "{}"  # a root's own
