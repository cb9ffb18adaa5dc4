"""A memory changed on one side and removed on the other is kept, and the sync says so on
both sides (issue 28.2): the person whose removal was undone learns it, and the person
whose change brought it back is not told it was removed by others."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from team_git import add, bare_remote, clone_for, person, run, sync, team_folder

pytestmark = pytest.mark.skipif(shutil.which("git") is None, reason="needs git")

FILE = "team/reference_dashboard.md"


@pytest.fixture
def pair(tmp_path: Path) -> tuple[dict[str, str], dict[str, str]]:
    remote = bare_remote(tmp_path)
    ana, bob = person(tmp_path, "ana"), person(tmp_path, "bob")
    clone_for(ana, remote)
    clone_for(bob, remote)
    add(ana, "dashboard", "the sales dashboard is in Looker", "reference")
    sync(ana)
    sync(bob)
    return ana, bob


def change(env: dict[str, str]) -> None:
    code, _, err = run("add", "--name", "dashboard", "--description",
                       "the sales dashboard moved to Tableau", "--type", "reference",
                       "--body", "Tableau.\n", "--scope", "team", "--update", env=env)
    assert code == 0, err


def forget(env: dict[str, str]) -> None:
    assert run("forget", FILE, "-f", env=env)[0] == 0


def test_a_removal_undone_by_a_newer_change_is_told(pair) -> None:
    ana, bob = pair
    change(ana)
    sync(ana)
    forget(bob)
    code, report, _ = sync(bob)
    assert code == 0
    assert report["kept"] == [{"file": FILE, "by": "ana", "kept_side": "theirs"}]
    assert report["removed"] == [] and report["received"] == [FILE]
    assert (f"kept: {FILE}: it was removed here, but ana changed it meanwhile, so their "
            f"version stays. If it should go, run `jupyter-memory forget {FILE}`") in report["text"]
    text = (team_folder(bob) / "reference_dashboard.md").read_text(encoding="utf-8")
    assert "Tableau" in text
    assert "(reference_dashboard.md)" in (team_folder(bob) / "MEMORY.md").read_text("utf-8")


def test_a_change_that_keeps_a_removed_memory_is_told(pair) -> None:
    ana, bob = pair
    forget(bob)
    sync(bob)
    change(ana)
    code, report, _ = sync(ana)
    assert code == 0
    assert report["kept"] == [{"file": FILE, "by": "bob", "kept_side": "mine"}]
    assert report["sent"] == [FILE] and report["removed_by_others"] == []
    assert "Removed by others" not in report["text"]
    assert f"kept: {FILE}: bob removed it, but it was changed here, so your version stays" in (
        report["text"])
    _, report, _ = sync(bob)
    assert report["received"] == [FILE] and report["kept"] == []
    assert "Tableau" in (team_folder(bob) / "reference_dashboard.md").read_text("utf-8")
