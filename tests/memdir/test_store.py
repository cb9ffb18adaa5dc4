"""The memory store: file naming, index upkeep, path and credential refusals."""

from __future__ import annotations

import json
import os
import threading
from pathlib import Path

import pytest

from jupyter_memory.errors import InvalidPath, MemoryExists, MemoryNotFound, SecretRefused
from jupyter_memory.memdir import frontmatter
from jupyter_memory.memdir.index import parse_index
from jupyter_memory.memdir.location import REGISTRY_FILENAME, sanitize_key
from jupyter_memory.memdir.store import AmbiguousMemory, InvalidMemory, MemoryStore, slugify

SECRET = "sk-ant-api03-" + "Ab12Cd34Ef56Gh78Ij90" * 3


@pytest.fixture
def store(tmp_path: Path) -> MemoryStore:
    return MemoryStore(tmp_path / "memory")


def snapshot(root: Path) -> dict[str, bytes]:
    """Every file under ``root`` (the lock file aside) with its bytes."""
    if not root.exists():
        return {}
    return {
        str(p.relative_to(root)): p.read_bytes()
        for p in sorted(root.rglob("*"))
        if p.is_file() and p.name != ".lock"
    }


def index_files(store: MemoryStore) -> list[str]:
    return [e.file for e in parse_index(store.read_index()).entries]


# --------------------------------------------------------------------------- create


def test_create_writes_file_and_pointer(store: MemoryStore) -> None:
    result = store.create(
        "revenue-in-cents",
        "The sales.revenue column is stored in cents, not dollars",
        "project",
        "The `revenue` column holds integer cents.\n\n**Why:** billing.\n**How to apply:** /100",
    )
    assert result.file == "project_revenue_in_cents.md"
    assert result.created and result.index_changed
    assert result.index_check is not None and result.index_check.status == "ok"
    text = (store.memdir / result.file).read_text(encoding="utf-8")
    doc = frontmatter.parse(text)
    assert doc.fields == {
        "name": "revenue-in-cents",
        "description": "The sales.revenue column is stored in cents, not dollars",
        "type": "project",
        "origin": "user",
    }
    assert doc.body.endswith("**How to apply:** /100\n")
    assert store.read_index() == (
        "- [revenue-in-cents](project_revenue_in_cents.md) — "
        "The sales.revenue column is stored in cents, not dollars\n"
    )
    memory = store.get("revenue-in-cents")
    assert memory.indexed and memory.provenance == "user"


def test_create_with_session_and_provenance(tmp_path: Path) -> None:
    store = MemoryStore(tmp_path, session_id="sess-1", provenance_default="agent")
    result = store.create("Plots", "Label axes", "feedback", "body", hook="units on both axes")
    memory = store.get(result.file)
    assert memory.origin_session_id == "sess-1" and memory.shape == "flat+origin"
    assert memory.provenance == "agent"
    assert parse_index(store.read_index()).entries[0].hook == "units on both axes"
    other = store.create("X", "y", "user", "z", provenance="extraction", session_id="s2")
    assert store.get(other.file).provenance == "extraction"
    assert store.get(other.file).origin_session_id == "s2"
    plain = MemoryStore(tmp_path / "ref", mark_provenance=False)
    res = plain.create("Y", "y", "user", "z")
    assert "origin" not in frontmatter.parse(plain.read(res.file)).fields


def test_create_multibyte_names(store: MemoryStore) -> None:
    result = store.create("数据 口径", "收入以分为单位", "project", "正文")
    assert result.file == "project_数据_口径.md"
    assert store.get("数据 口径").description == "收入以分为单位"
    assert slugify("  Revenue -- in Cents!! ") == "revenue_in_cents"
    assert slugify("???") == "memory"
    assert store.create("project plans", "d", "project", "b").file == "project_plans.md"


def test_create_refuses_to_overwrite(store: MemoryStore) -> None:
    store.create("plots", "Label axes", "feedback", "one")
    before = snapshot(store.memdir)
    with pytest.raises(MemoryExists, match="Update that memory"):
        store.create("plots", "Other", "feedback", "two")
    assert snapshot(store.memdir) == before


def test_create_exist_ok_updates_in_place(store: MemoryStore) -> None:
    path = store.memdir / "feedback_plots.md"
    path.parent.mkdir(parents=True)
    path.write_text("---\nname: plots\ncustom: keep me  # note\ntype: feedback\n---\nold\n")
    result = store.create("plots", "Label axes", "feedback", "new body", exist_ok=True)
    assert not result.created
    text = path.read_text()
    assert "custom: keep me  # note\n" in text
    assert text.endswith("new body\n")
    assert index_files(store) == ["feedback_plots.md"]


def test_create_validates_fields(store: MemoryStore) -> None:
    with pytest.raises(InvalidMemory, match="one of user, feedback, project, reference"):
        store.create("x", "y", "musing", "z")
    with pytest.raises(InvalidMemory, match="name"):
        store.create("  ", "y", "user", "z")
    with pytest.raises(InvalidMemory, match="provenance"):
        store.create("x", "y", "user", "z", provenance="robot")
    result = store.create("x", "", "user", "z")
    assert any("description" in w for w in result.warnings)
    assert not store.memdir.joinpath("user_x.md").read_text().count("origin: robot")


# --------------------------------------------------------------------------- update


NESTED = (
    "---\n"
    "name: 테이블-크기\n"
    "description: 'old description'   # quoted on purpose\n"
    "x-custom: {a: 1, b: [2, 3]}\n"
    "metadata:\n"
    "  type: feedback\n"
    "  originSessionId: 0c9d-11\n"
    "  node_type: memory\n"
    "  modified: 2026-03-01T10:00:00Z\n"
    "  weird_key:   spaced   value\n"
    "tags:\n"
    "  - one\n"
    "  - two\n"
    "---\n"
    "전체 표를 출력하지 마세요.\n"
)


def test_update_keeps_unknown_fields_byte_for_byte(store: MemoryStore) -> None:
    path = store.memdir / "feedback_table.md"
    path.parent.mkdir(parents=True)
    path.write_text(NESTED, encoding="utf-8")
    result = store.update("feedback_table.md", description="큰 테이블은 처음 몇 줄만")
    assert not result.created
    new = path.read_text(encoding="utf-8")
    old_lines, new_lines = NESTED.split("\n"), new.split("\n")
    changed = [i for i, (a, b) in enumerate(zip(old_lines, new_lines, strict=True)) if a != b]
    assert changed == [2, 8]  # the description and the nested modified, nothing else
    assert new_lines[2] == "description: 큰 테이블은 처음 몇 줄만"
    assert new_lines[8].startswith("  modified: ") and "2026-03-01" not in new_lines[8]
    doc = frontmatter.parse(new)
    assert doc.get("x-custom") == {"a": 1, "b": [2, 3]} and doc.get("tags") == ["one", "two"]
    # the body can change alone, the header staying as it was apart from modified
    store.update("feedback_table.md", body="새 본문\n")
    again = path.read_text(encoding="utf-8")
    assert again.endswith("---\n새 본문\n")
    assert again.split("\n")[:8] == new_lines[:8]


def test_update_without_frontmatter_adds_none(store: MemoryStore) -> None:
    path = store.memdir / "notes.md"
    path.parent.mkdir(parents=True)
    path.write_text("plain notes\n")
    store.update("notes.md", body="plain notes, revised\n")
    assert path.read_text() == "plain notes, revised\n"
    assert index_files(store) == []  # no header, so nothing to index from
    result = store.update("notes.md", name="notes", description="My notes")
    assert any("no frontmatter" in w for w in result.warnings)
    doc = frontmatter.parse(path.read_text())
    assert doc.fields == {"name": "notes", "description": "My notes"}
    assert index_files(store) == ["notes.md"]


def test_update_repoints_index_line_in_place(store: MemoryStore) -> None:
    store.memdir.mkdir(parents=True)
    store.index_path.write_text(
        "# Index\n\n## Data\n- [Plots](feedback_plots.md) — custom hook\n## Other\n"
    )
    (store.memdir / "feedback_plots.md").write_text("---\nname: Plots\ndescription: d\n---\nx\n")
    store.update("feedback_plots.md", body="y\n")
    assert "— custom hook" in store.read_index()  # hook kept when nothing it shows changed
    store.update("feedback_plots.md", name="Charts", description="Label axes with units")
    entry = parse_index(store.read_index()).find("feedback_plots.md")
    assert entry is not None
    # the title was the name, so it follows the name; the hook was written by hand and stays
    assert (entry.title, entry.hook, entry.group, entry.line) == (
        "Charts",
        "custom hook",
        "Data",
        4,
    )
    store.update("feedback_plots.md", hook="Label axes with units")
    entry = parse_index(store.read_index()).find("feedback_plots.md")
    assert entry is not None and entry.hook == "Label axes with units"
    store.update("feedback_plots.md", description="Axes carry their units")
    entry = parse_index(store.read_index()).find("feedback_plots.md")
    assert entry is not None and entry.hook == "Axes carry their units"  # made from the old one


def test_update_missing_and_non_utf8(store: MemoryStore) -> None:
    with pytest.raises(MemoryNotFound):
        store.update("nope.md", body="x")
    store.memdir.mkdir(parents=True)
    raw = b"---\nname: latin\n---\ncaf\xe9\n"
    (store.memdir / "latin.md").write_bytes(raw)
    with pytest.raises(InvalidMemory, match="UTF-8"):
        store.update("latin.md", body="x")
    assert (store.memdir / "latin.md").read_bytes() == raw


# --------------------------------------------------------------------------- write_file


def test_write_file_maintains_index(store: MemoryStore) -> None:
    text = "---\nname: db\ndescription: Warehouse tables live in the wh database\ntype: reference\n---\nbody\n"
    result = store.write_file("reference_db.md", text, provenance="agent")
    assert result.created and result.index_changed
    assert index_files(store) == ["reference_db.md"]
    written = (store.memdir / "reference_db.md").read_text()
    doc = frontmatter.parse(written)
    assert doc.get("origin") == "agent" and doc.get("modified")
    assert written.startswith(text.split("---\nbody")[0])  # agent's lines kept, fields appended
    again = store.write_file("reference_db.md", text.replace("body", "body 2"), provenance="agent")
    assert not again.created and not again.index_changed
    assert index_files(store) == ["reference_db.md"]
    store.write_file("loose.md", "no header at all\n")
    assert (store.memdir / "loose.md").read_text() == "no header at all\n"
    assert index_files(store) == ["reference_db.md"]


def test_write_file_reference_mode_leaves_index(tmp_path: Path) -> None:
    store = MemoryStore(tmp_path, maintain_index=False)
    store.write_file("a.md", "---\nname: a\ndescription: d\n---\n")
    assert not store.index_path.exists()


def test_write_file_to_index_goes_to_write_index(store: MemoryStore) -> None:
    big = "".join(f"- [m{i}](m{i}.md) — hook\n" for i in range(205))
    result = store.write_file("MEMORY.md", big, provenance="agent")
    assert result.file == "MEMORY.md"
    assert store.index_path.read_text() == big  # the write lands
    assert result.index_check is not None and result.index_check.status == "over"
    assert any("Rewrite" in m for m in result.messages)
    near = store.write_index("".join(f"line {i}\n" for i in range(185)))
    assert near.index_check is not None and near.index_check.status == "near"


REFUSED = [
    "/etc/passwd.md",
    "~/notes.md",
    "C:/notes.md",
    "../escape.md",
    "team/../../escape.md",
    "a/../b.md",
    "team\\db.md",
    "bad\x00name.md",
    "bad\nname.md",
    ".hidden.md",
    ".pending/draft.md",
    "team/.secret/x.md",
    "notes.txt",
    "notes",
    "notes.md.bak",
    "",
    "   ",
    " padded.md",
    "a<b>.md",
    "x" * 300 + ".md",
    "link_out.md",
    "dir_out/inner.md",
]


@pytest.mark.parametrize("bad", REFUSED)
def test_refused_paths_write_nothing(store: MemoryStore, tmp_path: Path, bad: str) -> None:
    store.memdir.mkdir(parents=True)
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "target.md").write_text("outside\n")
    (store.memdir / "link_out.md").symlink_to(outside / "target.md")
    (store.memdir / "dir_out").symlink_to(outside)
    before, before_outside = snapshot(store.memdir), snapshot(outside)
    text = "---\nname: x\ndescription: y\n---\nbody\n"
    with pytest.raises(InvalidPath) as excinfo:
        store.write_file(bad, text, provenance="agent")
    assert str(excinfo.value)  # a message for people, not an empty error
    with pytest.raises(InvalidPath):
        store.resolve(bad)
    assert snapshot(store.memdir) == before
    assert snapshot(outside) == before_outside
    assert not (tmp_path / "escape.md").exists()


def test_index_is_not_a_memory(store: MemoryStore) -> None:
    with pytest.raises(InvalidPath, match="index"):
        store.update("MEMORY.md", body="x")
    with pytest.raises(InvalidPath, match="index"):
        store.create("x", "y", "user", "z", file="MEMORY.md")
    assert store.resolve("MEMORY.md", allow_index=True) == store.index_path


def test_a_link_inside_the_memdir_is_read_but_never_written_through(store: MemoryStore) -> None:
    """The gateway follows a link for a read while it stays in the memdir; a write never
    goes through a link, wherever it leads."""
    (store.memdir / "real").mkdir(parents=True)
    (store.memdir / "alias").symlink_to(store.memdir / "real")
    store.write_file("real/x.md", "hello\n")
    assert store.read("alias/x.md") == "hello\n"
    with pytest.raises(InvalidPath, match="symbolic link"):
        store.write_file("alias/x.md", "changed\n")
    assert (store.memdir / "real" / "x.md").read_text() == "hello\n"


def test_resolve_normalises(store: MemoryStore) -> None:
    assert store.normalize("./team//db.md") == "team/db.md"
    assert store.resolve("team/db.md") == store.memdir / "team" / "db.md"
    assert store.relative(store.memdir / "team" / "db.md") == "team/db.md"
    assert store.relative(str(store.memdir / "MEMORY.md")) == "MEMORY.md"
    with pytest.raises(InvalidPath, match="outside"):
        store.relative("/tmp/elsewhere.md")


@pytest.mark.parametrize("where", ["create", "update", "write_file", "write_index"])
def test_credentials_are_refused_before_writing(store: MemoryStore, where: str) -> None:
    store.create("db", "Warehouse", "reference", "old body")
    before = snapshot(store.memdir)
    with pytest.raises(SecretRefused, match="credential"):
        if where == "create":
            store.create("key", "The key", "reference", f"key is {SECRET}")
        elif where == "update":
            store.update("reference_db.md", description=f"token {SECRET}")
        elif where == "write_file":
            store.write_file("reference_key.md", f"---\nname: k\n---\n{SECRET}\n")
        else:
            store.write_index(f"- [k](k.md) — {SECRET}\n")
    assert snapshot(store.memdir) == before


# --------------------------------------------------------------------------- get / read


def test_get_by_file_name_and_stem(store: MemoryStore) -> None:
    store.create("Revenue In Cents", "cents", "project", "b")
    store.write_file("team/db.md", "---\nname: warehouse\n---\n")
    assert store.get("project_revenue_in_cents.md").name == "Revenue In Cents"
    assert store.get("Revenue In Cents").file == "project_revenue_in_cents.md"
    assert store.get("revenue in cents").file == "project_revenue_in_cents.md"
    assert store.get("project_revenue_in_cents").file == "project_revenue_in_cents.md"
    assert store.get("warehouse").file == "team/db.md"
    assert store.get("team/db").file == "team/db.md"
    assert store.get("db").file == "team/db.md"
    assert store.read("team/db.md") == store.read(store.get("db").file)


def test_get_suggests_close_matches(store: MemoryStore) -> None:
    store.create("revenue-in-cents", "cents", "project", "b")
    with pytest.raises(MemoryNotFound) as excinfo:
        store.get("revenue-in-cent")
    assert "project_revenue_in_cents.md" in str(excinfo.value)
    with pytest.raises(MemoryNotFound, match="no memories yet"):
        MemoryStore(store.memdir.parent / "empty").get("x")
    with pytest.raises(MemoryNotFound):
        store.read("missing.md")


def test_get_ambiguous_name(store: MemoryStore) -> None:
    store.write_file("a.md", "---\nname: twin\n---\n")
    store.write_file("b.md", "---\nname: twin\n---\n")
    with pytest.raises(AmbiguousMemory, match=r"a\.md, b\.md"):
        store.get("twin")


# --------------------------------------------------------------------------- rename / forget


def test_rename_repoints_in_place(store: MemoryStore) -> None:
    store.memdir.mkdir(parents=True)
    store.index_path.write_text("## G\n- [A](a.md) — hook a\n- [B](b.md) — hook b\n")
    (store.memdir / "a.md").write_text("---\nname: A\n---\n")
    (store.memdir / "b.md").write_text("---\nname: B\n---\n")
    result = store.rename("a.md", "team/a2.md")
    assert result.file == "team/a2.md"
    assert store.read_index() == "## G\n- [A](team/a2.md) — hook a\n- [B](b.md) — hook b\n"
    assert not (store.memdir / "a.md").exists()
    with pytest.raises(MemoryExists):
        store.rename("b.md", "team/a2.md")
    with pytest.raises(MemoryNotFound):
        store.rename("gone.md", "x.md")


def test_forget_removes_file_and_pointer(store: MemoryStore) -> None:
    kept = store.create("keep", "k", "user", "b")
    gone = store.create("gone", "g", "user", "b")
    result = store.forget(gone.file)
    assert result.deleted and result.index_changed
    assert not (store.memdir / gone.file).exists()
    assert index_files(store) == [kept.file]
    store.index_path.write_text(store.read_index() + "- [Ghost](ghost.md) — gone\n")
    ghost = store.forget("ghost.md")  # a dangling pointer alone can be forgotten
    assert not ghost.deleted and index_files(store) == [kept.file]
    with pytest.raises(MemoryNotFound):
        store.forget("ghost.md")


# --------------------------------------------------------------------------- location


def test_for_project_records_the_root(tmp_path: Path) -> None:
    project = tmp_path / "work" / "sales.v2"
    project.mkdir(parents=True)
    env = {"HOME": str(tmp_path / "home"), "CLAUDE_CONFIG_DIR": str(tmp_path / "cfg")}
    store = MemoryStore.for_project(project, env)
    key = sanitize_key(str(project.resolve()))
    assert store.memdir == tmp_path / "cfg" / "projects" / key / "memory"
    assert store.location is not None and store.location.source == "default"
    registry = store.memdir.parent / REGISTRY_FILENAME
    assert not registry.exists()  # reading creates nothing
    assert store.list() == []
    store.create("a", "b", "user", "c")
    recorded = json.loads(registry.read_text())
    assert recorded["project_root"] == str(project.resolve())


def test_for_project_honours_env_memdir(tmp_path: Path) -> None:
    env = {"HOME": str(tmp_path), "JUPYTER_MEMORY_DIR": str(tmp_path / "mine")}
    store = MemoryStore.for_project(tmp_path, env)
    store.create("a", "b", "user", "c")
    assert (tmp_path / "mine" / "user_a.md").exists()
    assert not (tmp_path / "mine").parent.joinpath(REGISTRY_FILENAME).exists()


def test_threads_do_not_lose_writes(store: MemoryStore) -> None:
    def worker(n: int) -> None:
        for i in range(15):
            store.create(f"t{n}-{i}", f"thread {n} item {i}", "project", "x")

    threads = [threading.Thread(target=worker, args=(n,)) for n in range(3)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert len(store.list()) == 45
    assert len(set(index_files(store))) == 45
    assert all(m.indexed for m in store.list())
    assert not [n for n in os.listdir(store.memdir) if n.endswith(".tmp")]


def test_oversized_memory_is_refused_and_nothing_written(tmp_path):
    from jupyter_memory.memdir.store import MAX_MEMORY_BYTES, InvalidMemory, MemoryStore

    store = MemoryStore(tmp_path / "mem")
    big = "x" * (MAX_MEMORY_BYTES + 1)
    with pytest.raises(InvalidMemory, match="at most 1,048,576"):
        store.create("big", "too big", "project", big)
    with pytest.raises(InvalidMemory):
        store.write_file("project_big.md", "---\nname: big\n---\n" + big, provenance="agent")
    mem = tmp_path / "mem"
    assert not mem.exists() or not list(mem.glob("*.md"))
