"""Team sync with two people and real git (issue 28 items 1 and 2).

Two clones of a bare repository in ``tmp_path``, two HOMEs. The team index is curated by
hand and survives every sync; two edits of one line are merged (the newer commit wins,
and the report says so); two edits of one memory keep a conflict copy that the report
names with its real file name and the author of its text. The report names what was
sent, received and removed; offline it gives git's reason and claims nothing sent; the
next sync says the waiting commits went out; without a git identity it commits as the
login name at ``localhost`` and says so once.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from team_git import add, bare_remote, clone_for, git, person, run, sync, team_folder

from jupyter_memory.memdir import frontmatter
from jupyter_memory.memdir.team.index import LEGACY_PREAMBLE

pytestmark = pytest.mark.skipif(shutil.which("git") is None, reason="needs git")


def at(env: dict[str, str], hour: int) -> dict[str, str]:
    """``env`` committing at a fixed time of 1 March 2026 (which commit is newer is the
    point of some tests; real clocks tick in whole seconds)."""
    stamp = f"2026-03-01T{hour:02d}:00:00+00:00"
    return {**env, "GIT_COMMITTER_DATE": stamp, "GIT_AUTHOR_DATE": stamp}


def index_of(env: dict[str, str]) -> str:
    return (team_folder(env) / "MEMORY.md").read_text(encoding="utf-8")


def edit_line(env: dict[str, str], file: str, line: str) -> None:
    """Replace the index line of ``file`` by hand, as a person curating the index does."""
    path = team_folder(env) / "MEMORY.md"
    lines = path.read_text(encoding="utf-8").splitlines(keepends=True)
    out = [line + "\n" if f"]({file})" in old else old for old in lines]
    assert out != lines
    path.write_text("".join(out), encoding="utf-8")


@pytest.fixture
def pair(tmp_path: Path) -> tuple[dict[str, str], dict[str, str], Path]:
    remote = bare_remote(tmp_path)
    ana, bob = person(tmp_path, "ana"), person(tmp_path, "bob")
    clone_for(ana, remote)
    clone_for(bob, remote)
    return ana, bob, remote


def test_two_people_keep_hand_written_titles_across_three_syncs(pair) -> None:
    ana, bob, _ = pair
    add(ana, "fiscal year", "the fiscal year starts in April")
    add(ana, "dashboard", "the sales dashboard is in Looker", "reference")
    sync(at(ana, 8))
    sync(at(bob, 8))
    fy = "- [Fiscal year, as finance defines it](project_fiscal_year.md) — April to March"
    board = "- [The Looker board](reference_dashboard.md) — where sales are charted"
    edit_line(ana, "project_fiscal_year.md", fy)
    edit_line(bob, "reference_dashboard.md", board)

    hour = 9
    for round_ in range(3):  # three syncs each, with new memories on both sides
        add(ana, f"ana fact {round_}", f"ana learned fact {round_}")
        add(bob, f"bob fact {round_}", f"bob learned fact {round_}")
        assert sync(at(ana, hour))[0] == 0
        assert sync(at(bob, hour + 1))[0] == 0
        assert sync(at(ana, hour + 2))[0] == 0
        hour += 3
        for env in (ana, bob):
            text = index_of(env)
            assert fy in text and board in text  # hand-written lines, as written
            assert "# Team memory" not in text  # no heading of the sync's own
            for n in range(round_ + 1):
                assert text.count(f"](project_ana_fact_{n}.md)") == 1
                assert text.count(f"](project_bob_fact_{n}.md)") == 1
    assert index_of(ana) == index_of(bob)

    # both change the line of one file once: the newer commit's line wins, and is said so
    edit_line(ana, "project_fiscal_year.md", "- [FY](project_fiscal_year.md) — ana's words")
    edit_line(bob, "project_fiscal_year.md", "- [Fiscal year](project_fiscal_year.md) — bob's")
    code, first, _ = sync(at(ana, 20))
    assert code == 0 and first["contested"] == []
    code, second, _ = sync(at(bob, 21))
    assert code == 0
    assert second["contested"] == [{
        "file": "team/project_fiscal_year.md", "kept_side": "mine", "by": "bob",
        "kept": "- [Fiscal year](project_fiscal_year.md) — bob's",
        "dropped": "- [FY](project_fiscal_year.md) — ana's words"}]
    assert "the newer edit (bob's) was kept" in second["text"]
    sync(at(ana, 22))
    for env in (ana, bob):
        text = index_of(env)
        assert text.count("](project_fiscal_year.md)") == 1
        assert "- [Fiscal year](project_fiscal_year.md) — bob's\n" in text
        assert board in text


def test_a_conflict_copy_is_reported_with_its_file_name_and_author(pair) -> None:
    ana, bob, _ = pair
    add(ana, "fiscal year", "the fiscal year starts in April", body="Starts in April.\n")
    sync(at(ana, 8))
    sync(at(bob, 8))
    run("add", "--name", "fiscal year", "--description", "the fiscal year starts in April",
        "--type", "project", "--body", "Starts on 1 April (ana).\n", "--scope", "team",
        "--update", env=ana)
    shared = team_folder(bob) / "project_fiscal_year.md"  # bob edits the file by hand
    shared.write_text(shared.read_text(encoding="utf-8").replace(
        "Starts in April.", "Starts in April; Q1 is April to June (bob)."), encoding="utf-8")
    assert "author: ana" in shared.read_text(encoding="utf-8")
    sync(at(ana, 9))
    code, report, _ = sync(at(bob, 10))
    assert code == 0
    copy = "team/project_fiscal_year.conflict-bob.md"
    assert report["conflicts"] == [{"file": "team/project_fiscal_year.md", "copy": copy,
                                    "author": "bob"}]
    assert report["sent"] == [copy]  # what went out is the copy, not the shared file
    assert f"Sent: {copy} (conflict copy of team/project_fiscal_year.md)" in report["text"]
    assert f"{copy} holds bob's" in report["text"]
    text = (team_folder(bob) / "project_fiscal_year.conflict-bob.md").read_text(encoding="utf-8")
    doc = frontmatter.parse(text)
    assert doc.get("author") == "bob" and "(bob)" in doc.body  # its author wrote its text
    assert "(ana)" in shared.read_text(encoding="utf-8")
    subjects = git(team_folder(bob), "log", "--format=%s", "-3")
    assert "team memory: keep project_fiscal_year.conflict-bob.md (a conflict copy)" in subjects
    code, report, _ = sync(at(ana, 11))
    assert report["received"] == [copy]
    code, out, _ = run("team", "status", env=ana)
    assert f"conflict copies to resolve: {copy}" in out
    assert "conflict-bob" not in index_of(ana)


def test_sent_received_and_removed_are_named(pair) -> None:
    ana, bob, _ = pair
    add(ana, "fiscal year", "the fiscal year starts in April")
    add(ana, "dashboard", "the sales dashboard is in Looker", "reference")
    _, report, _ = sync(ana)
    assert report["sent"] == ["team/project_fiscal_year.md", "team/reference_dashboard.md"]
    assert report["removed"] == [] and report["received"] == []
    assert "Sent: team/project_fiscal_year.md, team/reference_dashboard.md" in report["text"]
    _, report, _ = sync(bob)
    assert report["received"] == ["team/project_fiscal_year.md", "team/reference_dashboard.md"]
    assert report["sent"] == []
    assert run("forget", "team/reference_dashboard.md", "-f", env=bob)[0] == 0
    _, report, _ = sync(bob)
    assert report["removed"] == ["team/reference_dashboard.md"] and report["sent"] == []
    assert "Removed: team/reference_dashboard.md" in report["text"]
    assert "Sent:" not in report["text"]
    assert git(team_folder(bob), "log", "-1", "--format=%s").strip() == (
        "team memory: remove reference_dashboard.md")
    _, report, _ = sync(ana)
    assert report["removed_by_others"] == ["team/reference_dashboard.md"]
    assert "(reference_dashboard.md)" not in index_of(ana)


def test_offline_says_why_sends_nothing_and_the_next_sync_says_it_went_out(
        tmp_path: Path) -> None:
    remote = bare_remote(tmp_path)
    ana = person(tmp_path, "ana")
    clone_for(ana, remote)
    add(ana, "fiscal year", "the fiscal year starts in April")
    away = tmp_path / "away.git"
    remote.rename(away)
    code, report, _ = sync(ana)
    assert code == 1 and report["state"] == "offline"
    assert report["sent"] == [] and "Sent:" not in report["text"]
    assert "does not appear to be a git repository" in report["message"]  # git's words
    assert "and the repository exists" in report["message"]  # not cut short
    assert report["waiting"] and "add project_fiscal_year.md" in report["waiting"][-1]
    add(ana, "dashboard", "the sales dashboard is in Looker", "reference")
    code, report, _ = sync(ana)
    assert code == 1 and len(report["waiting"]) == 2
    away.rename(remote)
    code, report, _ = sync(ana)
    assert code == 0
    assert report["sent"] == ["team/project_fiscal_year.md", "team/reference_dashboard.md"]
    assert len(report["earlier_sent"]) == 2
    assert "Also sent 2 commits that waited since an earlier sync" in report["text"]
    code, report, _ = sync(ana)
    assert report["earlier_sent"] == [] and report["sent"] == []


def test_without_a_git_identity_it_commits_as_the_login_name_and_says_so_once(
        tmp_path: Path) -> None:
    remote = bare_remote(tmp_path)
    ana = person(tmp_path, "ana", identity=False, JUPYTERHUB_USER="ana-hub")
    clone_for(ana, remote)
    add(ana, "fiscal year", "the fiscal year starts in April")
    code, report, _ = sync(ana)
    assert code == 0
    assert report["identity"] == "ana-hub <ana-hub@localhost>"
    assert "commits were made as ana-hub <ana-hub@localhost>" in report["text"]
    assert git(remote, "log", "-1", "--format=%an <%ae>").strip() == "ana-hub <ana-hub@localhost>"
    add(ana, "dashboard", "the sales dashboard is in Looker", "reference")
    code, report, _ = sync(ana)
    assert report["identity"] is None and "identity:" not in report["text"]


def test_an_older_version_rewriting_the_index_is_noticed_and_undone(pair,
                                                                    tmp_path: Path) -> None:
    ana, bob, _ = pair
    add(ana, "fiscal year", "the fiscal year starts in April")
    add(ana, "dashboard", "the sales dashboard is in Looker", "reference")
    sync(at(ana, 8))
    edit_line(ana, "project_fiscal_year.md", "- [FY (finance)](project_fiscal_year.md) — Apr")
    sync(at(ana, 9))
    sync(at(bob, 9))
    # bob's old version adds a memory and rebuilds the whole index its way
    folder = team_folder(bob)
    (folder / "project_no_mocks.md").write_text(
        "---\nname: no mocks\ndescription: never mock the warehouse\ntype: project\n---\nx\n",
        encoding="utf-8")
    (folder / "MEMORY.md").write_text(
        f"# Team memory\n\n{LEGACY_PREAMBLE}\n\n"
        "- [dashboard](reference_dashboard.md) — the sales dashboard is in Looker\n"
        "- [fiscal year](project_fiscal_year.md) — the fiscal year starts in April\n"
        "- [no mocks](project_no_mocks.md) — never mock the warehouse\n", encoding="utf-8")
    git(folder, "add", "-A", env=bob)
    git(folder, "commit", "-qm", "team memory: update", env=at(bob, 10))
    git(folder, "push", "-q", "origin", "HEAD:main", env=bob)
    _, report, _ = sync(at(ana, 11))
    assert any("older version of jupyter-memory rewrote the whole team index" in note
               for note in report["index_notes"])
    text = index_of(ana)
    assert "- [FY (finance)](project_fiscal_year.md) — Apr\n" in text
    assert "(project_no_mocks.md)" in text and "# Team memory" not in text
    assert LEGACY_PREAMBLE not in text


def test_an_old_generated_index_loses_its_heading_once(tmp_path: Path) -> None:
    remote = bare_remote(tmp_path)
    ana = person(tmp_path, "ana")
    clone_for(ana, remote)
    add(ana, "fiscal year", "the fiscal year starts in April")
    path = team_folder(ana) / "MEMORY.md"
    path.write_text(f"# Team memory\n\n{LEGACY_PREAMBLE}\n\n" + path.read_text(encoding="utf-8"),
                    encoding="utf-8")
    _, out, _ = run("context", "--raw", env=ana)
    assert out.count("# Team memory") == 1 and LEGACY_PREAMBLE not in out  # shown once
    _, report, _ = sync(ana)
    assert any("removed the heading and preamble" in n for n in report["index_notes"])
    assert path.read_text(encoding="utf-8") == (
        "- [fiscal year](project_fiscal_year.md) — the fiscal year starts in April\n")
    _, report, _ = sync(ana)
    assert report["index_notes"] == []
