"""The team index merge (issue 28.1): reconcile with the files, and merge two edits."""

from __future__ import annotations

from pathlib import Path

from jupyter_memory.memdir.record import Memory
from jupyter_memory.memdir.team.index import (
    LEGACY_HEADING,
    LEGACY_PREAMBLE,
    merge3,
    reconcile,
    undo_legacy_rewrite,
)


def memory(file: str, name: str = "", description: str = "") -> Memory:
    return Memory(file=file, path=Path(file), name=name or file[:-3], description=description,
                  type="project", mtime=0.0, age_days=0, bytes=1, indexed=False, shape="flat")


def files(*names: str) -> dict[str, Memory]:
    return {name: memory(name, description=f"about {name[:-3]}") for name in names}


CURATED = (
    "Notes for the team: keep lines short.\n"
    "\n"
    "## Finance\n"
    "- [Fiscal year, as finance says](fy.md) — April to March\n"
    "- [Revenue](team/rev.md) — cents\n"
    "## Systems\n"
    "- [Board](board.md) — Looker\n"
)


def test_reconcile_keeps_every_line_of_an_existing_file_as_written() -> None:
    merge = reconcile(CURATED, files("fy.md", "rev.md", "board.md"))
    assert merge.text == CURATED and not merge.changed


def test_reconcile_adds_new_files_and_drops_removed_ones_only() -> None:
    merge = reconcile(CURATED, files("fy.md", "rev.md", "new.md"))
    assert merge.text == CURATED.replace("- [Board](board.md) — Looker\n", "") + (
        "- [new](new.md) — about new\n")
    assert merge.added == ["new.md"]
    assert merge.dropped == [("board.md", "the file no longer exists")]


def test_reconcile_never_drops_a_file_that_exists_and_keeps_one_line_per_file() -> None:
    text = CURATED + "- [Fiscal again](./fy.md) — a second line\n- [notes](notes.txt) — x\n"
    merge = reconcile(text, files("fy.md", "rev.md", "board.md"),
                      exists=lambda rel: rel == "notes.txt")
    assert merge.text == CURATED + "- [notes](notes.txt) — x\n"
    assert merge.dropped == [("fy.md", "a second line for the same file")]


def test_reconcile_hides_conflict_copies_and_held_back_files() -> None:
    text = CURATED + "- [copy](fy.conflict-bob.md) — x\n- [key](key.md) — y\n"
    merge = reconcile(text, files("fy.md", "rev.md", "board.md"),
                      hidden={"fy.conflict-bob.md": "a conflict copy", "key.md": "held back"})
    assert merge.text == CURATED
    assert {file for file, _ in merge.dropped} == {"fy.conflict-bob.md", "key.md"}


def test_reconcile_removes_the_old_generated_heading_once() -> None:
    old = f"{LEGACY_HEADING}\n\n{LEGACY_PREAMBLE}\n\n- [fy](fy.md) — about fy\n"
    merge = reconcile(old, files("fy.md"))
    assert merge.text == "- [fy](fy.md) — about fy\n" and merge.legacy_removed
    again = reconcile(merge.text, files("fy.md"))
    assert not again.changed and not again.legacy_removed
    own = "# Team memory\n\nour own words\n- [fy](fy.md) — about fy\n"
    assert reconcile("intro\n" + own, files("fy.md")).text == "intro\n" + own  # not generated


BASE = "## A\n- [a](a.md) — one\n- [b](b.md) — two\n- [c](c.md) — three\n"


def test_merge_takes_each_sides_changes_to_different_lines() -> None:
    mine = BASE.replace("— one", "— ONE").replace("## A\n", "## A (ours)\n")
    theirs = BASE.replace("— three", "— THREE") + "- [d](d.md) — four\n"
    merged, contests = merge3(BASE, mine, theirs, mine_newer=False)
    assert merged == ("## A (ours)\n- [a](a.md) — ONE\n- [b](b.md) — two\n"
                      "- [c](c.md) — THREE\n- [d](d.md) — four\n")
    assert contests == []


def test_merge_of_adjacent_changes_is_still_line_by_line() -> None:
    base = "- [a](a.md) — one\n- [b](b.md) — two\n"
    mine = "- [A](a.md) — one\n- [b](b.md) — two\n- [m](m.md) — mine\n"
    theirs = "- [a](a.md) — one\n- [B](b.md) — two\n- [t](t.md) — theirs\n"
    merged, contests = merge3(base, mine, theirs, mine_newer=True)
    assert merged == ("- [A](a.md) — one\n- [B](b.md) — two\n- [m](m.md) — mine\n"
                      "- [t](t.md) — theirs\n")
    assert contests == []


def test_two_edits_of_one_line_the_newer_wins_and_is_reported() -> None:
    mine = BASE.replace("- [b](b.md) — two", "- [Bee](b.md) — mine")
    theirs = BASE.replace("- [b](b.md) — two", "- [b](b.md) — theirs")
    for mine_newer, kept, dropped in ((True, "- [Bee](b.md) — mine", "- [b](b.md) — theirs"),
                                      (False, "- [b](b.md) — theirs", "- [Bee](b.md) — mine")):
        merged, contests = merge3(BASE, mine, theirs, mine_newer=mine_newer)
        assert merged == BASE.replace("- [b](b.md) — two", kept)
        assert [(c.file, c.kept, c.dropped) for c in contests] == [("b.md", kept, dropped)]


def test_a_line_removed_on_one_side_and_kept_on_the_other_is_removed() -> None:
    mine = BASE.replace("- [c](c.md) — three\n", "")
    merged, _ = merge3(BASE, mine, BASE + "- [d](d.md) — four\n", mine_newer=False)
    assert merged == "## A\n- [a](a.md) — one\n- [b](b.md) — two\n- [d](d.md) — four\n"


def test_an_older_versions_rewrite_keeps_only_its_added_and_removed_files() -> None:
    rewrite = (f"{LEGACY_HEADING}\n\n{LEGACY_PREAMBLE}\n\n- [a](a.md) — about a\n"
               "- [c](c.md) — about c\n- [e](e.md) — about e\n")
    assert undo_legacy_rewrite(BASE, rewrite) == (
        "## A\n- [a](a.md) — one\n- [c](c.md) — three\n- [e](e.md) — about e\n")
