"""``loaded``: whether the model receives a memory's pointer line, beside ``indexed``.

With 303 memories the 103 pointer lines past line 200 of ``MEMORY.md`` exist (indexed) but
are never loaded in index mode; a long index is cut by characters instead; the team folder's
index has its own limit; prefetch mode sends no index at all. Every record says which, and
why (docs/store.md#indexed-and-loaded).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from jupyter_memory.memdir.index import MAX_CHARS, MAX_LINES, loaded_through
from jupyter_memory.memdir.location import locate
from jupyter_memory.memdir.record import Memory
from jupyter_memory.memdir.store import MemoryStore
from jupyter_memory.memdir.team import open_store, scan_all


def fill(memdir: Path, count: int, *, prefix: str = "note", hook: str = "a note") -> list[str]:
    """``count`` memories and an index with one pointer line each, in file order."""
    memdir.mkdir(parents=True, exist_ok=True)
    files = [f"project_{prefix}_{i:04d}.md" for i in range(count)]
    for i, file in enumerate(files):
        (memdir / file).write_text(
            f"---\nname: {prefix}-{i:04d}\ndescription: {prefix} number {i}\ntype: project\n"
            f"---\nBody {i}.\n", encoding="utf-8")
    lines = [f"- [{prefix} {i}]({file}) — {hook}" for i, file in enumerate(files)]
    (memdir / "MEMORY.md").write_text("\n".join(lines) + "\n", encoding="utf-8")
    return files


def by_file(memories: list[Memory]) -> dict[str, Memory]:
    return {m.file: m for m in memories}


def test_pointer_lines_past_line_200_are_indexed_but_not_loaded(tmp_path: Path) -> None:
    files = fill(tmp_path / "mem", 303)
    listed = by_file(MemoryStore(tmp_path / "mem").list())
    assert len(listed) == 303 and all(m.indexed for m in listed.values())
    loaded = [f for f in files if listed[f].loaded]
    assert loaded == files[:MAX_LINES]
    first_cut = listed[files[MAX_LINES]]
    assert (first_cut.index_line, first_cut.index_cut) == (201, "lines")
    assert first_cut.loaded_reason == (
        "its pointer is on line 201 of MEMORY.md, past the 200-line limit: the model never "
        "sees it")
    assert listed[files[0]].loaded_reason == "its pointer on line 1 of MEMORY.md is in every request"
    data = first_cut.to_json()
    assert data["indexed"] is True and data["loaded"] is False
    assert data["loaded_reason"] == first_cut.loaded_reason
    json.dumps(data)


def test_a_long_index_is_cut_by_characters(tmp_path: Path) -> None:
    hook = "x" * 200  # about 240 characters a line: 25,000 are reached near line 104
    files = fill(tmp_path / "mem", 150, hook=hook)
    lines = loaded_through((tmp_path / "mem" / "MEMORY.md").read_text(encoding="utf-8"))
    assert lines.limits == ("chars",) and 90 < lines.through < 110
    listed = by_file(MemoryStore(tmp_path / "mem").list())
    assert [f for f in files if listed[f].loaded] == files[: lines.through]
    cut = listed[files[lines.through]]
    assert cut.index_cut == "chars"
    assert f"past the {MAX_CHARS:,}-character limit" in cut.loaded_reason


def test_both_limits_name_the_one_that_cut_each_line(tmp_path: Path) -> None:
    lines = loaded_through("\n\n" + "\n".join(f"- [n{i}](n{i}.md) — " + "y" * 150
                                              for i in range(260)))
    assert set(lines.limits) == {"lines", "chars"}
    assert lines.cut_by(lines.through) is None
    assert lines.cut_by(lines.through + 1) == "chars"
    assert lines.cut_by(lines.line_limit + 1) == "lines"


def test_a_memory_without_a_pointer_is_neither(tmp_path: Path) -> None:
    fill(tmp_path / "mem", 2)
    (tmp_path / "mem" / "orphan.md").write_text("---\nname: orphan\n---\nx\n", encoding="utf-8")
    orphan = by_file(MemoryStore(tmp_path / "mem").list())["orphan.md"]
    assert (orphan.indexed, orphan.loaded) == (False, False)
    assert orphan.loaded_reason == "MEMORY.md has no pointer line for it"


def test_blank_lines_before_the_index_count_as_the_model_trims_them(tmp_path: Path) -> None:
    memdir = tmp_path / "mem"
    files = fill(memdir, 205)
    index = memdir / "MEMORY.md"
    index.write_text("\n\n\n" + index.read_text(encoding="utf-8"), encoding="utf-8")
    listed = by_file(MemoryStore(memdir).list())
    assert [f for f in files if listed[f].loaded] == files[:MAX_LINES]
    assert listed[files[MAX_LINES]].index_line == 204


def test_prefetch_mode_sends_no_index(tmp_path: Path) -> None:
    files = fill(tmp_path / "mem", 3)
    memory = by_file(MemoryStore(tmp_path / "mem").list())[files[0]]
    assert memory.loaded
    judged = memory.in_mode("prefetch")
    assert judged.indexed and not judged.loaded
    assert judged.loaded_reason.startswith("prefetch mode sends no index")
    assert judged.in_mode("index").loaded


def test_the_team_index_has_its_own_limit(tmp_path: Path) -> None:
    memdir = tmp_path / "mem"
    private = fill(memdir, 5)
    shared = fill(memdir / "team", 230, prefix="shared")
    listed = by_file(scan_all(memdir, limit=None))
    assert all(listed[f].loaded for f in private)
    team = [listed["team/" + f] for f in shared]
    assert [m.loaded for m in team] == [True] * MAX_LINES + [False] * 30
    assert team[MAX_LINES].loaded_reason == (
        "its pointer is on line 201 of team/MEMORY.md, past the 200-line limit: the model "
        "never sees it")
    assert team[0].scope == "team" and "team/MEMORY.md" in team[0].loaded_reason


def test_the_project_store_judges_each_scope_against_its_index(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    memdir = tmp_path / "mem"
    fill(memdir, 3)
    fill(memdir / "team", 210, prefix="shared")
    monkeypatch.setenv("JUPYTER_MEMORY_DIR", str(memdir))
    project = tmp_path / "proj"
    project.mkdir()
    store = open_store(locate(project))
    listed = by_file(store.list())
    assert sum(m.loaded for m in listed.values()) == 3 + MAX_LINES
    one = store.get("team/project_shared_0205.md")
    assert one.indexed and not one.loaded and one.index_line == 206
