"""The team folder as a boundary (issue 26, breaks 3, 7 and 9).

* Break 9: ``repair --scope team`` deleted every pointer of the team index, since doctor
  compared ``team/x.md`` with the index's bare ``x.md``; on a shared disk there was no way
  back. Doctor and repair must never delete a pointer to a file that exists, under any
  reading of its path.
* Break 7: ``team sync`` committed with ``git add -A`` and pushed whatever the folder held,
  a credential placed there by hand included, and never checked what it received.
* Break 3: a hostile remote that commits ``MEMORY.md`` as a symbolic link made the sync
  rebuild the index through the link, writing outside the memdir.

Each break is reproduced with variants; every test here failed before the fix.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest
from team_git import add, bare_remote, clone_for, git, person, run, sync, team_folder

from jupyter_memory.memdir.store import MemoryStore

pytestmark = pytest.mark.skipif(shutil.which("git") is None, reason="needs git")

SECRET = "ghp_" + "Zx9Qw3Er7Ty1Ui5Op2As8Df4Gh6Jk0Lz3Xc7V"  # shaped like a GitHub token
CURATED = (
    "## Finance\n"
    "- [Fiscal year, as finance defines it](project_fiscal_year.md) — April to March\n"
    "- [Revenue unit](project_revenue_in_cents.md) — cents, divide by 100\n"
    "## Systems\n"
    "- [The Looker board](reference_dashboard.md) — where sales are charted\n"
)


def curated_team(env: dict[str, str]) -> Path:
    add(env, "fiscal year", "the fiscal year starts in April")
    add(env, "revenue in cents", "revenue is stored in cents")
    add(env, "dashboard", "the sales dashboard is in Looker", "reference")
    folder = team_folder(env)
    (folder / "MEMORY.md").write_text(CURATED, encoding="utf-8")
    return folder


# ---------------------------------------------------------------------------- break 9


def test_repair_of_the_team_scope_keeps_every_pointer(tmp_path: Path) -> None:
    env = person(tmp_path, "ana")
    folder = curated_team(env)
    code, out, _ = run("doctor", "--scope", "team", "--json", env=env)
    assert not [f for f in json.loads(out)["findings"] if f["code"] == "dangling_pointer"]
    code, out, err = run("repair", "--scope", "team", env=env)
    assert code == 0, err
    assert (folder / "MEMORY.md").read_text(encoding="utf-8") == CURATED
    code, out, _ = run("list", "--scope", "team", "--json", env=env)
    assert all(m["indexed"] for m in json.loads(out))


def test_repair_on_a_shared_disk_keeps_the_team_index(tmp_path: Path) -> None:
    shared = tmp_path / "srv" / "sales-memory"
    env = person(tmp_path, "ana")
    settings = Path(env["CLAUDE_CONFIG_DIR"]) / "settings.json"
    settings.parent.mkdir(parents=True)
    settings.write_text(json.dumps({"teamMemoryDirectory": str(shared)}), encoding="utf-8")
    add(env, "fiscal year", "the fiscal year starts in April")
    (shared / "MEMORY.md").write_text(CURATED, encoding="utf-8")
    (shared / "project_revenue_in_cents.md").write_text(
        "---\nname: revenue\ndescription: cents\ntype: project\n---\nCents.\n", encoding="utf-8")
    (shared / "reference_dashboard.md").write_text(
        "---\nname: dash\ndescription: Looker\ntype: reference\n---\nLooker.\n", encoding="utf-8")
    run("repair", "--scope", "team", env=env)
    assert (shared / "MEMORY.md").read_text(encoding="utf-8") == CURATED
    _, out, _ = run("doctor", "--scope", "team", env=env)
    assert "dangling" not in out


def test_a_pointer_written_as_team_slash_is_a_pointer_to_an_existing_file(tmp_path: Path) -> None:
    env = person(tmp_path, "ana")
    folder = curated_team(env)
    text = CURATED.replace("](project_revenue_in_cents.md)", "](team/project_revenue_in_cents.md)")
    (folder / "MEMORY.md").write_text(text, encoding="utf-8")
    _, out, _ = run("doctor", "--scope", "team", "--json", env=env)
    assert not [f for f in json.loads(out)["findings"] if f["code"] == "dangling_pointer"]
    run("repair", "--scope", "team", env=env)
    assert (folder / "MEMORY.md").read_text(encoding="utf-8") == text


def test_private_repair_keeps_pointers_into_the_team_folder(tmp_path: Path) -> None:
    env = person(tmp_path, "ana")
    curated_team(env)
    add(env, "plots", "ana likes small plots", "feedback", scope="private")
    memdir = Path(env["JUPYTER_MEMORY_DIR"])
    index = memdir / "MEMORY.md"
    text = index.read_text(encoding="utf-8") + (
        "- [fiscal year](team/project_fiscal_year.md) — written by the extraction agent\n")
    index.write_text(text, encoding="utf-8")
    run("repair", env=env)
    assert index.read_text(encoding="utf-8") == text


@pytest.mark.parametrize("link", ["my%20notes.md", "team/../my%20notes.md"])
def test_any_reading_of_an_existing_file_keeps_its_pointer(tmp_path: Path, link: str) -> None:
    memdir = tmp_path / "mem"
    store = MemoryStore(memdir)
    store.create("notes", "my notes", "project", "x", file="my notes.md")
    store.create("other", "another memory", "project", "y")
    text = f"- [Notes]({link}) — mine\n- [Gone](project_gone.md) — deleted long ago\n"
    store.write_index(text)
    from jupyter_memory.memdir.doctor import repair

    report = repair(store)
    after = store.read_index()
    assert f"- [Notes]({link}) — mine\n" in after
    assert "project_gone.md" not in after  # a real dangling pointer still goes
    assert "(project_other.md)" in after
    assert any("project_gone.md" in item for item in report.fixed)


# ---------------------------------------------------------------------------- break 7


def test_sync_refuses_to_push_a_credential_placed_by_hand(tmp_path: Path) -> None:
    remote = bare_remote(tmp_path)
    ana = person(tmp_path, "ana")
    folder = clone_for(ana, remote)
    add(ana, "fiscal year", "the fiscal year starts in April")
    (folder / "reference_ci.md").write_text(
        f"---\nname: ci\ndescription: the CI token\ntype: reference\n---\nToken: {SECRET}\n",
        encoding="utf-8")
    (folder / "notes.txt").write_text(f"token {SECRET}\n", encoding="utf-8")
    _, report, _ = sync(ana)
    pushed = git(remote, "log", "--all", "-p").replace("\n", " ")
    assert SECRET not in pushed
    assert "project_fiscal_year.md" in git(remote, "ls-tree", "-r", "--name-only", "main")
    refused = {r["file"]: r["reason"] for r in report["not_sent"]}
    assert set(refused) == {"team/reference_ci.md", "team/notes.txt"}
    assert "credential" in refused["team/reference_ci.md"]
    assert SECRET not in json.dumps(report)
    assert (folder / "reference_ci.md").exists()  # left where it is, for the person to fix
    _, out, _ = run("list", "--json", env=ana)
    assert "team/reference_ci.md" not in {m["file"] for m in json.loads(out)}  # out of recall
    assert "reference_ci.md" not in (folder / "MEMORY.md").read_text(encoding="utf-8")
    _, out, _ = run("team", "status", env=ana)
    assert "reference_ci.md" in out and SECRET not in out


def test_sync_refuses_to_push_a_user_memory_and_never_moves_it(tmp_path: Path) -> None:
    remote = bare_remote(tmp_path)
    ana = person(tmp_path, "ana")
    folder = clone_for(ana, remote)
    (folder / "user_role.md").write_text(
        "---\nname: role\ndescription: bob is a data engineer\ntype: user\n---\nBob.\n",
        encoding="utf-8")
    add(ana, "fiscal year", "the fiscal year starts in April")
    _, report, _ = sync(ana)
    assert "user_role.md" not in git(remote, "ls-tree", "-r", "--name-only", "main")
    assert [r["file"] for r in report["not_sent"]] == ["team/user_role.md"]
    assert (folder / "user_role.md").exists()
    assert not (Path(ana["JUPYTER_MEMORY_DIR"]) / "user_role.md").exists()


def test_a_received_credential_stays_on_disk_out_of_the_index_and_recall(tmp_path: Path) -> None:
    remote = bare_remote(tmp_path)
    ana, eve = person(tmp_path, "ana"), person(tmp_path, "eve")
    clone_for(ana, remote)
    add(ana, "fiscal year", "the fiscal year starts in April")
    sync(ana)
    work = tmp_path / "eve-work"  # eve pushes with plain git, past any check of ours
    subprocess.run(["git", "clone", "--quiet", str(remote), str(work)], check=True, env=eve)
    (work / "reference_ci.md").write_text(
        f"---\nname: ci\ndescription: the CI token\ntype: reference\n---\n{SECRET}\n",
        encoding="utf-8")
    (work / "user_eve.md").write_text(
        "---\nname: eve\ndescription: eve is new here\ntype: user\n---\nEve.\n", encoding="utf-8")
    with (work / "MEMORY.md").open("a", encoding="utf-8") as index:
        index.write("- [CI token](reference_ci.md) — the token\n- [eve](user_eve.md) — eve\n")
    git(work, "add", "-A", env=eve)
    git(work, "commit", "-qm", "add things", env=eve)
    git(work, "push", "-q", "origin", "HEAD:main", env=eve)

    code, report, _ = sync(ana)
    assert code == 0
    folder = team_folder(ana)
    assert (folder / "reference_ci.md").exists() and (folder / "user_eve.md").exists()
    assert not (Path(ana["JUPYTER_MEMORY_DIR"]) / "user_eve.md").exists()  # never made private
    index = (folder / "MEMORY.md").read_text(encoding="utf-8")
    assert "reference_ci.md" not in index and "user_eve.md" not in index
    code, out, _ = run("list", "--json", env=ana)
    assert {m["file"] for m in json.loads(out)} == {"team/project_fiscal_year.md"}
    code, out, _ = run("context", "--raw", env=ana)
    assert "reference_ci.md" not in out and SECRET not in out
    held = {h["file"]: h["reason"] for h in report["held_back"]}
    assert set(held) == {"team/reference_ci.md", "team/user_eve.md"}
    assert SECRET not in json.dumps(report)
    code, out, _ = run("team", "status", "--json", env=ana)
    assert {h["file"] for h in json.loads(out)["held_back"]} == set(held)
    code, out, _ = run("doctor", "--scope", "team", "--json", env=ana)
    codes = {(f["code"], f["file"]) for f in json.loads(out)["findings"]}
    assert ("held_back", "reference_ci.md") in codes and ("held_back", "user_eve.md") in codes
    assert SECRET not in out
    # fixed by hand: it comes back at once
    (folder / "reference_ci.md").write_text(
        "---\nname: ci\ndescription: the CI token\ntype: reference\n---\nIn the vault.\n",
        encoding="utf-8")
    code, out, _ = run("list", "--json", env=ana)
    assert "team/reference_ci.md" in {m["file"] for m in json.loads(out)}


# ---------------------------------------------------------------------------- break 3


def hostile_push(tmp_path: Path, remote: Path, link: str, *, name: str = "MEMORY.md") -> None:
    """Eve pushes ``name`` as a symbolic link whose text is ``link``."""
    eve = person(tmp_path, "eve")
    work = tmp_path / "eve-work"
    subprocess.run(["git", "clone", "--quiet", str(remote), str(work)], check=True, env=eve)
    (work / name).unlink(missing_ok=True)
    os.symlink(link, work / name)
    git(work, "add", "-A", env=eve)
    git(work, "commit", "-qm", "index", env=eve)
    git(work, "push", "-q", "origin", "HEAD:main", env=eve)


@pytest.mark.parametrize("name", ["MEMORY.md", "project_fiscal_year.md"])
def test_a_hostile_remote_cannot_make_sync_write_through_a_link(tmp_path: Path,
                                                                name: str) -> None:
    remote = bare_remote(tmp_path)
    ana = person(tmp_path, "ana")
    folder = clone_for(ana, remote)
    add(ana, "fiscal year", "the fiscal year starts in April")
    sync(ana)
    victim = tmp_path / "ana" / ".bashrc"
    victim.write_text("alias ll='ls -l'\n", encoding="utf-8")
    hostile_push(tmp_path, remote, os.path.relpath(victim, folder), name=name)
    add(ana, "dashboard", "the sales dashboard is in Looker", "reference")
    _, out, _ = run("team", "sync", "--json", env=ana)
    assert victim.read_text(encoding="utf-8") == "alias ll='ls -l'\n"
    assert not any(p.is_symlink() for p in folder.rglob("*"))
    report = json.loads(out)
    held = {h["file"]: h["reason"] for h in report["held_back"]}
    assert f"team/{name}" in held and "link" in held[f"team/{name}"]
    modes = {line.split("\t")[1]: line.split()[0]
             for line in git(remote, "ls-tree", "-r", "main").splitlines()}
    assert modes["MEMORY.md"] == "100644"  # the index went back as a regular file
    index = (folder / "MEMORY.md").read_text(encoding="utf-8")
    assert "(reference_dashboard.md)" in index and ".bashrc" not in index
    # the team folder clone does not follow links either
    bob = person(tmp_path, "bob")
    bob_folder = clone_for(bob, remote)
    assert not any(p.is_symlink() for p in bob_folder.rglob("*"))
    add(bob, "plots", "small plots for the team", "feedback")
    sync(bob)
    assert victim.read_text(encoding="utf-8") == "alias ll='ls -l'\n"


def test_sync_never_commits_a_link_made_in_the_team_folder(tmp_path: Path) -> None:
    remote = bare_remote(tmp_path)
    ana = person(tmp_path, "ana")
    folder = clone_for(ana, remote)
    add(ana, "fiscal year", "the fiscal year starts in April")
    secret = tmp_path / "ana" / ".netrc"
    secret.write_text("machine example.com password hunter2\n", encoding="utf-8")
    os.symlink(secret, folder / "reference_netrc.md")
    _, report, _ = sync(ana)
    assert "reference_netrc.md" not in git(remote, "ls-tree", "-r", "--name-only", "main")
    assert "hunter2" not in git(remote, "log", "--all", "-p")
    assert [r["file"] for r in report["not_sent"]] == ["team/reference_netrc.md"]
    assert "link" in report["not_sent"][0]["reason"]
