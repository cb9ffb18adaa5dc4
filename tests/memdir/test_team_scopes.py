"""Scopes as the reference teaches them, and what the team folder shows (issue 28.2, 28.3).

In team mode each type's description carries its ``<scope>``; a ``user`` memory that this
session's own writers (the agent, extraction, ``%%remember``) file in the team folder is
moved to private memory and the move is reported, never deleted. ``list`` shows authors
and names team files ``team/…``; ``team status`` recognises a folder shared on disk;
``repair --scope team`` runs the sync's index merge.
"""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pytest
from extraction_router import Router
from sessions import make_session
from team_git import add, person, run, team_folder

from jupyter_memory.agent.loop import TurnEvents, run_turn
from jupyter_memory.agent.remember import remember_with_agent, scope_store
from jupyter_memory.context import prompts
from jupyter_memory.localapi import ToolCall, Turn
from jupyter_memory.memdir.team.index import LEGACY_PREAMBLE

USER_MEMO = "---\nname: me\ndescription: ana is an analyst on pricing\ntype: user\n---\nAnalyst.\n"


def test_each_type_says_its_scope_in_team_mode_only() -> None:
    team = prompts.memory_rules("/m", mode="index", team_dir="/m/team")
    for kind, scope in (("user", "<scope>always private"), ("feedback", "<scope>private, unless"),
                        ("project", "<scope>usually team"), ("reference", "<scope>usually team")):
        line = next(line for line in team.splitlines() if line.startswith(f"- **{kind}**"))
        assert scope in line and line.endswith("</scope>")
    assert "# Team memory" not in team  # no section of its own: the index has the heading
    assert "`/m/team`" in team
    private = prompts.memory_rules("/m", mode="index")
    assert "<scope>" not in private and "/m/team" not in private


@pytest.fixture
def session(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    env = person(tmp_path, "ana")
    for key in ("HOME", "CLAUDE_CONFIG_DIR", "JUPYTER_MEMORY_DIR", "USER", "GIT_AUTHOR_NAME"):
        monkeypatch.setenv(key, env[key])
    monkeypatch.delenv("JUPYTER_MEMORY_EXTRACTION", raising=False)
    team_folder(env).mkdir(parents=True)  # team mode on
    return make_session(tmp_path / "proj", log_transcript=False)


def test_extraction_moves_a_user_memory_to_private_memory_and_says_so(session, fake_api) -> None:
    memdir = session.memdir
    hook = session.extraction
    router = Router(fake_api)
    router.main.append(Turn(text="Noted."))
    router.extract.extend([
        Turn(tool_calls=[ToolCall("Write", {"file_path": str(memdir / "team" / "user_me.md"),
                                            "content": USER_MEMO})]),
        Turn(text="Saved."),
    ])
    notices: list[tuple[str, dict]] = []
    result = run_turn(session, "I'm an analyst on pricing.",
                      events=TurnEvents(on_notice=lambda t, p: notices.append((t, p))))
    assert result.ok and hook.wait(120)
    assert not (memdir / "team" / "user_me.md").exists()
    assert "type: user" in (memdir / "user_me.md").read_text()
    assert "(user_me.md)" in (memdir / "MEMORY.md").read_text()
    team_index = memdir / "team" / "MEMORY.md"
    assert not team_index.exists() or "user_me.md" not in team_index.read_text()
    text, payload = notices[-1]
    assert "moved to your private memory as user_me.md" in text
    assert payload["files"] == ["user_me.md"]
    report = hook.undo()  # the move is part of the run: undo takes it back
    assert report.removed == ["user_me.md"] and not (memdir / "user_me.md").exists()


def test_remember_to_the_team_moves_a_user_memory_the_model_filed(session, fake_api) -> None:
    store = scope_store(session, "team")
    folder = store.memdir
    fake_api.script([
        Turn(tool_calls=[ToolCall("Write", {"file_path": str(folder / "user_me.md"),
                                            "content": USER_MEMO})]),
        Turn(text="Saved user_me.md"),
    ])
    result = remember_with_agent(session, session.client(), store, "I am an analyst.")
    assert not (folder / "user_me.md").exists()
    private = (session.memdir / "user_me.md").read_text()
    assert private.startswith("---\nname: me\n") and "type: user" in private
    assert any("moved to your private memory as user_me.md" in n for n in result.notes)
    assert result.files == []


def test_a_move_never_overwrites_a_private_memory(session) -> None:
    store = session.store
    store.create("me", "ana, as she described herself", "user", "Earlier words.\n")
    moved = store.write_file("team/user_me.md", USER_MEMO)
    assert moved.file == "user_me_2.md"
    assert "Earlier words." in (session.memdir / "user_me.md").read_text()
    assert (session.memdir / "user_me_2.md").exists()
    assert "(user_me_2.md)" in store.read_index()  # its line follows it, whatever the setting


def test_list_shows_authors_and_team_file_names(tmp_path: Path) -> None:
    env = person(tmp_path, "ana")
    add(env, "fiscal year", "the fiscal year starts in April")
    add(env, "plots", "ana likes small plots", "feedback", scope="private")
    code, out, _ = run("list", "--scope", "team", "--json", env=env)
    assert [(m["file"], m["author"], m["scope"]) for m in json.loads(out)] == [
        ("team/project_fiscal_year.md", "ana", "team")]
    code, out, _ = run("list", "--scope", "team", env=env)
    header, row = out.splitlines()[:2]
    assert header.split() == ["type", "name", "description", "age", "bytes", "indexed", "by",
                              "author", "scope", "file"]
    assert row.split()[-3:] == ["ana", "team", "team/project_fiscal_year.md"]
    code, out, _ = run("list", "--json", env=env)
    authors = {m["file"]: m["author"] for m in json.loads(out)}
    assert authors == {"team/project_fiscal_year.md": "ana", "feedback_plots.md": None}
    for name in ("team/project_fiscal_year.md", "project_fiscal_year.md", "fiscal year"):
        code, out, err = run("show", name, "--scope", "team", "--json", env=env)
        assert code == 0, err
        assert json.loads(out)["file"] == "team/project_fiscal_year.md"
    code, out, _ = run("search", "April", "--scope", "team", env=env)
    assert out.startswith("team/project_fiscal_year.md:")


def test_status_recognises_a_folder_shared_on_disk(tmp_path: Path) -> None:
    shared = tmp_path / "srv" / "sales-memory"
    env = person(tmp_path, "ana")
    settings = Path(env["CLAUDE_CONFIG_DIR"]) / "settings.json"
    settings.parent.mkdir(parents=True)
    settings.write_text(json.dumps({"teamMemoryDirectory": str(shared)}), encoding="utf-8")
    add(env, "fiscal year", "the fiscal year starts in April")
    os.chmod(shared, 0o755)
    _, out, _ = run("team", "status", "--json", env=env)
    assert json.loads(out)["shared"] is None
    _, out, _ = run("team", "status", env=env)
    assert "not shared" in out
    os.chmod(shared, 0o2775)  # the hub recipe in docs/team.md: g+rwXs
    _, out, _ = run("team", "status", "--json", env=env)
    state = json.loads(out)
    assert state["shared"] == "disk" and "group" in state["shared_reason"]
    _, out, _ = run("team", "status", env=env)
    assert "shared on disk" in out and "not shared" not in out
    os.chmod(shared, 0o755)
    hub = {**env, "JUPYTERHUB_USER": "ana"}  # a hub's shared volume, outside the home
    _, out, _ = run("team", "status", "--json", env=hub)
    assert json.loads(out)["shared"] == "disk"


def test_repair_of_the_team_scope_runs_the_sync_merge(tmp_path: Path) -> None:
    env = person(tmp_path, "ana")
    add(env, "fiscal year", "the fiscal year starts in April")
    folder = team_folder(env)
    (folder / "project_hand.md").write_text(
        "---\nname: hand\ndescription: written by hand\ntype: project\n---\nx\n", "utf-8")
    (folder / "project_fiscal_year.conflict-bob.md").write_text(
        "---\nname: fy (bob)\ndescription: bob's version\ntype: project\n---\nx\n", "utf-8")
    (folder / "MEMORY.md").write_text(
        f"# Team memory\n\n{LEGACY_PREAMBLE}\n\n- [FY](project_fiscal_year.md) — April\n"
        "- [copy](project_fiscal_year.conflict-bob.md) — bob's\n", "utf-8")
    code, out, err = run("repair", "--scope", "team", env=env)
    assert code == 0, err
    assert (folder / "MEMORY.md").read_text(encoding="utf-8") == (
        "- [FY](project_fiscal_year.md) — April\n- [hand](project_hand.md) — written by hand\n")
    assert "removed the heading and preamble" in out
    code, out, _ = run("doctor", "--scope", "team", "--json", env=env)
    codes = [(f["code"], f["file"]) for f in json.loads(out)["findings"]]
    assert codes == [("conflict_copy", "project_fiscal_year.conflict-bob.md")]


pytestmark = pytest.mark.skipif(shutil.which("git") is None, reason="needs git")
