"""doctor finds what hides or confuses memories; repair fixes only what is safe."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from jupyter_memory.errors import InvalidPath
from jupyter_memory.memdir.doctor import doctor, orphaned_projects, repair
from jupyter_memory.memdir.index import parse_index
from jupyter_memory.memdir.store import MemoryStore


def codes(findings: list) -> list[tuple[str, str | None]]:
    return sorted((f.code, f.file) for f in findings)


@pytest.fixture
def store(tmp_path: Path) -> MemoryStore:
    store = MemoryStore(tmp_path / "memory")
    store.create("revenue", "Revenue is in cents", "project", "b")
    store.create("plots", "Label both axes", "feedback", "b")
    return store


def test_clean_memdir_has_no_findings(store: MemoryStore) -> None:
    assert doctor(store) == []


def test_orphan_and_dangling(store: MemoryStore) -> None:
    (store.memdir / "notes").mkdir()
    (store.memdir / "notes" / "ghost.md").write_text(
        "---\nname: ghost\ndescription: Written without an index line\ntype: user\n---\n"
    )
    store.index_path.write_text(
        store.read_index() + "- [Gone](gone.md) — deleted by hand\n- [Out](../x.md)\n"
    )
    findings = doctor(store)
    assert codes(findings) == [
        ("dangling_pointer", "../x.md"),
        ("dangling_pointer", "gone.md"),
        ("orphan_file", "notes/ghost.md"),
    ]
    assert all(f.fixable and f.severity == "warning" for f in findings)
    orphan = next(f for f in findings if f.code == "orphan_file")
    assert "MEMORY.md" in orphan.message
    assert orphan.to_json() == {
        "code": "orphan_file",
        "severity": "warning",
        "file": "notes/ghost.md",
        "message": orphan.message,
        "fixable": True,
    }

    report = repair(store)
    assert report.left == []
    assert "added a pointer line for notes/ghost.md" in report.fixed
    entry = parse_index(store.read_index()).find("notes/ghost.md")
    assert entry is not None
    assert (entry.title, entry.hook) == ("ghost", "Written without an index line")
    assert parse_index(store.read_index()).find("gone.md") is None
    assert (store.memdir / "notes" / "ghost.md").exists()
    assert doctor(store) == []


def test_duplicates(store: MemoryStore) -> None:
    store.write_file("copy.md", "---\nname: Revenue\ndescription: other words\n---\n")
    store.write_file("again.md", "---\nname: unique\ndescription: Label both axes\n---\n")
    store.index_path.write_text(
        store.read_index() + "- [Plots again](feedback_plots.md) — same file twice\n"
    )
    found = codes(doctor(store))
    assert ("duplicate_name", "copy.md") in found
    assert ("duplicate_description", "again.md") in found
    assert ("duplicate_pointer", "feedback_plots.md") in found
    report = repair(store)
    assert [e.file for e in parse_index(store.read_index()).entries].count("feedback_plots.md") == 1
    assert {f.code for f in report.left} == {"duplicate_name", "duplicate_description"}


def test_index_limits(store: MemoryStore) -> None:
    lines = store.read_index() + "".join(f"note line {i}\n" for i in range(185))
    store.write_index(lines)
    assert [f.code for f in doctor(store)] == ["index_near_limit"]
    store.write_index(lines + "".join(f"more {i}\n" for i in range(30)))
    findings = doctor(store)
    assert [(f.code, f.severity) for f in findings] == [("index_over_limit", "error")]
    assert not findings[0].fixable


def test_bad_files(store: MemoryStore) -> None:
    (store.memdir / "latin.md").write_bytes(b"---\nname: latin\ndescription: caf\xe9\n---\nx\n")
    (store.memdir / "broken.md").write_text("---\nname: [oops\ndescription: x: y: z\n---\nbody\n")
    (store.memdir / "nodesc.md").write_text("---\nname: nodesc\ntype: musing\n---\nbody\n")
    repair(store)
    found = {(f.code, f.file): f for f in doctor(store)}
    assert found[("not_utf8", "latin.md")].severity == "error"
    assert found[("malformed_frontmatter", "broken.md")].severity == "warning"
    assert ("no_description", "nodesc.md") in found
    assert ("unknown_type", "nodesc.md") in found
    assert (store.memdir / "latin.md").read_bytes().endswith(b"caf\xe9\n---\nx\n")


def test_repair_skips_pointer_that_would_leak_a_secret(store: MemoryStore) -> None:
    secret = "ghp_" + "a1B2c3D4e5F6g7H8i9J0" * 2
    (store.memdir / "leaky.md").write_text(f"---\nname: leaky\ndescription: {secret}\n---\n")
    report = repair(store)
    assert secret not in store.read_index()
    assert ("orphan_file", "leaky.md") in codes(report.left)


def _project_store(project: Path, env: dict[str, str]) -> MemoryStore:
    return MemoryStore.for_project(project, env)


def test_orphaned_project_found_and_reattached(tmp_path: Path) -> None:
    env = {"HOME": str(tmp_path / "home"), "CLAUDE_CONFIG_DIR": str(tmp_path / "cfg")}
    old_root = tmp_path / "old" / "sales"
    old_root.mkdir(parents=True)
    old = _project_store(old_root, env)
    old.create("revenue", "Revenue is in cents", "project", "old body")
    old.create("shared", "Same file in both", "user", "identical")
    old.create("clash", "Old wording", "user", "old clash body")
    old_memdir = old.memdir

    new_root = tmp_path / "new" / "sales"
    new_root.parent.mkdir(parents=True)
    shutil.move(str(old_root), str(new_root))
    new = _project_store(new_root, env)
    new.create("clash", "New wording", "user", "new clash body")
    (new.memdir / "user_shared.md").write_bytes((old_memdir / "user_shared.md").read_bytes())
    new.write_index(new.read_index() + "- [shared](user_shared.md) — Same file in both\n")

    assert orphaned_projects(env) == [(old_memdir, old_root.resolve())]
    findings = doctor(new, env=env)
    orphaned = [f for f in findings if f.code == "orphaned_project"]
    assert len(orphaned) == 1
    assert orphaned[0].file == str(old_memdir)
    assert "--reattach" in orphaned[0].message and "same folder name" in orphaned[0].message

    report = repair(new, reattach_from=old_memdir, env=env)
    moved = dict(report.moved)
    assert moved == {
        str(old_memdir / "project_revenue.md"): "project_revenue.md",
        str(old_memdir / "user_clash.md"): "user_clash_reattached.md",
    }
    assert (new.memdir / "user_clash.md").read_text().endswith("new clash body\n")
    assert (new.memdir / "user_clash_reattached.md").read_text().endswith("old clash body\n")
    assert (new.memdir / "project_revenue.md").read_text().endswith("old body\n")
    index = parse_index(new.read_index())
    assert {e.file for e in index.entries} == {
        "user_clash.md",
        "user_clash_reattached.md",
        "project_revenue.md",
        "user_shared.md",
    }
    assert index.find("user_clash_reattached.md").hook == "Old wording"  # type: ignore[union-attr]
    # nothing was lost: the identical file is still in the old memdir, as is its index
    assert (old_memdir / "user_shared.md").exists() and (old_memdir / "MEMORY.md").exists()
    # the old folder now records the new project, so it is no longer reported as orphaned
    assert orphaned_projects(env) == []
    assert [f.code for f in report.left] == [
        "duplicate_name"
    ]  # clash and its copy: a person merges


def test_reattach_refuses_own_memdir(store: MemoryStore, tmp_path: Path) -> None:
    with pytest.raises(InvalidPath, match="own memdir"):
        repair(store, reattach_from=store.memdir)
    with pytest.raises(InvalidPath, match="not a folder"):
        repair(store, reattach_from=tmp_path / "nope")


def test_project_whose_root_exists_is_not_orphaned(tmp_path: Path) -> None:
    env = {"HOME": str(tmp_path / "home"), "CLAUDE_CONFIG_DIR": str(tmp_path / "cfg")}
    root = tmp_path / "alive"
    root.mkdir()
    _project_store(root, env).create("a", "b", "user", "c")
    assert orphaned_projects(env) == []
    other = tmp_path / "other"
    other.mkdir()
    assert [f.code for f in doctor(_project_store(other, env), env=env)] == []


def test_stale_temp_files_are_reported_and_repaired(tmp_path):
    import os
    import time

    from jupyter_memory.memdir.doctor import doctor, repair
    from jupyter_memory.memdir.store import MemoryStore

    store = MemoryStore(tmp_path / "mem")
    store.create("a", "a fact", "project", "A.")
    old = store.memdir / ".project_a.md.abc123.tmp"
    old.write_text("half a write")
    past = time.time() - 2 * 3600
    os.utime(old, (past, past))
    fresh = store.memdir / ".project_b.md.def456.tmp"
    fresh.write_text("a write in progress elsewhere")
    codes = [(f.code, f.file) for f in doctor(store)]
    assert ("stale_temp_file", ".project_a.md.abc123.tmp") in codes
    assert all(file != ".project_b.md.def456.tmp" for _, file in codes)
    report = repair(store)
    assert not old.exists() and fresh.exists()
    assert any("interrupted write" in line for line in report.fixed)
