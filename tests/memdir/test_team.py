"""Team memory (docs/reference.md#team-mode): scopes, the scoped store, the team index in requests, and
sharing through real git with a bare repository, two people in two HOMEs."""

from __future__ import annotations

import io
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from jupyter_memory.cli import app as cli
from jupyter_memory.context.request_parts import readable
from jupyter_memory.errors import ConfigError, SecretRefused
from jupyter_memory.memdir import team
from jupyter_memory.memdir.location import locate
from jupyter_memory.memdir.store import InvalidMemory
from jupyter_memory.memdir.trust import trust_folder

pytestmark = pytest.mark.skipif(shutil.which("git") is None, reason="needs git")


def run(*argv: str, env: dict[str, str]) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    code = cli.main(list(argv), env=env, stdin=io.StringIO(""), stdout=out, stderr=err)
    return code, out.getvalue(), err.getvalue()


def person(tmp_path: Path, name: str, **extra: str) -> dict[str, str]:
    """The environment of one person: their own HOME, config base and memdir."""
    home = tmp_path / name
    home.mkdir(exist_ok=True)
    env = dict(os.environ)
    env.update(HOME=str(home), CLAUDE_CONFIG_DIR=str(home / ".claude"), USER=name,
               JUPYTER_MEMORY_DIR=str(home / "memory"), GIT_AUTHOR_NAME=name,
               GIT_AUTHOR_EMAIL=f"{name}@example.invalid", GIT_COMMITTER_NAME=name,
               GIT_COMMITTER_EMAIL=f"{name}@example.invalid")
    env.update(extra)
    return env


def add(env: dict[str, str], name: str, description: str, kind: str = "project",
        body: str = "A fact.\n", scope: str = "team") -> dict:
    code, out, err = run("add", "--name", name, "--description", description, "--type", kind,
                         "--body", body, "--scope", scope, "--json", env=env)
    assert code == 0, err
    return json.loads(out)


@pytest.fixture
def remote(tmp_path: Path) -> Path:
    path = tmp_path / "team.git"
    subprocess.run(["git", "init", "--quiet", "--bare", str(path)], check=True)
    return path


# ---------------------------------------------------------------------------- scopes


def test_team_folder_defaults_to_memdir_team(tmp_path: Path) -> None:
    env = person(tmp_path, "ana")
    location = locate(tmp_path, env)
    where = team.team_location(location, env)
    assert where.folder == Path(env["JUPYTER_MEMORY_DIR"]) / "team"
    assert where.source == "default" and where.nested and not where.active


def test_team_setting_user_and_project_rules(tmp_path: Path) -> None:
    env = person(tmp_path, "ana")
    project = tmp_path / "proj"
    (project / ".claude").mkdir(parents=True)
    subprocess.run(["git", "init", "--quiet", str(project)], check=True)
    settings = project / ".claude" / "settings.json"
    settings.write_text(json.dumps({"teamMemoryDirectory": "team-memory"}))
    where = team.team_location(locate(project, env), env)  # a clone: not trusted yet
    assert where.source == "default" and "not trusted" in where.notes[0]
    trust_folder(project, env)
    where = team.team_location(locate(project, env), env)
    assert where.folder == project.resolve() / "team-memory" and where.source == "project"
    assert where.active  # a setting turns team mode on even before the folder exists

    settings.write_text(json.dumps({"teamMemoryDirectory": "../../elsewhere"}))
    where = team.team_location(locate(project, env), env)
    assert where.source == "default" and "outside the project" in where.notes[0]

    user = Path(env["CLAUDE_CONFIG_DIR"]) / "settings.json"
    user.parent.mkdir(parents=True, exist_ok=True)  # the trust record made it
    user.write_text(json.dumps({"teamMemoryDirectory": str(tmp_path / "shared")}))
    where = team.team_location(locate(project, env), env)  # user settings win over project
    assert where.folder == tmp_path / "shared" and where.source == "user"
    user.write_text(json.dumps({"teamMemoryDirectory": "relative/path"}))
    with pytest.raises(ConfigError, match="relative"):
        team.team_location(locate(project, env), env)


def test_scope_shown_and_user_memories_stay_private(tmp_path: Path) -> None:
    env = person(tmp_path, "ana")
    add(env, "revenue in cents", "revenue column is stored in cents")
    add(env, "role", "ana is a senior analyst", kind="user", scope="private")
    code, _, err = run("add", "--name", "role2", "--description", "ana likes SQL", "--type",
                       "user", "--body", "x", "--scope", "team", env=env)
    assert code == 2 and "always private" in err
    code, out, _ = run("list", "--json", env=env)
    scopes = {m["file"]: m["scope"] for m in json.loads(out)}
    assert scopes == {"team/project_revenue_in_cents.md": "team", "user_role.md": "private"}
    text = (Path(env["JUPYTER_MEMORY_DIR"]) / "team" / "project_revenue_in_cents.md").read_text()
    assert "author: ana" in text
    team_index = (Path(env["JUPYTER_MEMORY_DIR"]) / "team" / "MEMORY.md").read_text()
    private_index = (Path(env["JUPYTER_MEMORY_DIR"]) / "MEMORY.md").read_text()
    assert "(project_revenue_in_cents.md)" in team_index and "revenue" not in private_index
    code, out, _ = run("show", "team/project_revenue_in_cents.md", "--json", env=env)
    assert code == 0 and json.loads(out)["scope"] == "team"


def test_team_writes_refuse_credentials_with_no_override(tmp_path: Path) -> None:
    env = person(tmp_path, "ana")
    store = team.open_store(locate(tmp_path, env), env)
    secret = "the key is sk-ant-api03-" + "A" * 90
    with pytest.raises(SecretRefused):
        store.create("key", "where the key is", "reference", secret, scope="team")
    with pytest.raises(SecretRefused):
        store.write_file("team/reference_key.md",
                         f"---\nname: key\ndescription: d\ntype: reference\n---\n{secret}\n")
    with pytest.raises(InvalidMemory, match="always private"):
        store.create("me", "who I am", "user", "x", scope="team")
    moved = store.write_file("team/user_me.md",
                             "---\nname: me\ndescription: d\ntype: user\n---\nx\n")
    assert moved.file == "user_me.md" and "always private" in moved.warnings[0]
    assert (Path(env["JUPYTER_MEMORY_DIR"]) / "user_me.md").exists()  # kept, as private
    assert not list((Path(env["JUPYTER_MEMORY_DIR"]) / "team").glob("*.md"))


def test_context_raw_shows_team_index_under_its_own_heading(tmp_path: Path) -> None:
    env = person(tmp_path, "ana")
    add(env, "fiscal year", "fiscal year starts in April")
    add(env, "plots", "ana prefers small plots", kind="feedback", scope="private")
    code, out, err = run("context", "--raw", "--project", str(tmp_path), env=env)
    assert code == 0, err
    body = json.loads(out)
    first = body["messages"][0]["content"][0]["text"]
    private_at = first.index(f"Contents of {env['JUPYTER_MEMORY_DIR']}/MEMORY.md")
    team_at = first.index("# Team memory")
    assert private_at < team_at
    assert "(project_fiscal_year.md)" in first[team_at:]
    assert "(feedback_plots.md)" in first[private_at:team_at]
    system = body["system"][1]["text"]
    assert "<scope>always private: it describes one person" in system  # per type (docs/reference.md#team-mode)
    assert first.count("# Team memory") == 1
    code, out, _ = run("context", "--json", "--project", str(tmp_path), env=env)
    items = {i["label"]: i for c in json.loads(out)["categories"] for i in c["items"]}
    assert items["team/MEMORY.md"]["scope"] == "team" and items["MEMORY.md"]["scope"] == "private"


def test_no_team_heading_without_team_folder(tmp_path: Path) -> None:
    env = person(tmp_path, "ana")
    code, out, _ = run("context", "--raw", "--project", str(tmp_path), env=env)
    assert code == 0
    body = json.loads(out)
    assert "# Team memory" not in body["messages"][0]["content"][0]["text"]
    assert "# Team memory" not in body["system"][1]["text"]


def test_prefetch_manifest_lists_team_memories_with_scope(tmp_path: Path) -> None:
    env = person(tmp_path, "ana")
    add(env, "fiscal year", "fiscal year starts in April")
    add(env, "plots", "ana prefers small plots", kind="feedback", scope="private")
    memdir = Path(env["JUPYTER_MEMORY_DIR"])
    memories = team.scan_all(memdir)
    assert {(m.file, m.scope) for m in memories} == {
        ("team/project_fiscal_year.md", "team"), ("feedback_plots.md", "private")}
    assert all(m.indexed for m in memories)


# ---------------------------------------------------------------------------- git


def test_two_people_share_through_a_bare_repository(tmp_path: Path, remote: Path) -> None:
    ana, bob = person(tmp_path, "ana"), person(tmp_path, "bob")
    for env in (ana, bob):
        code, out, err = run("team", "clone", str(remote), env=env)
        assert code == 0, err
    add(ana, "revenue in cents", "revenue column is stored in cents")
    add(ana, "dashboard", "the sales dashboard lives in Looker", kind="reference")
    code, out, err = run("team", "sync", "--json", env=ana)
    assert code == 0, err
    assert json.loads(out)["state"] == "synced"
    add(bob, "fiscal year", "fiscal year starts in April")
    add(bob, "no mocks", "never mock the warehouse in tests", kind="feedback")
    assert run("team", "sync", env=bob)[0] == 0
    assert run("team", "sync", env=ana)[0] == 0  # ana receives bob's memories

    expected = {"team/project_revenue_in_cents.md", "team/reference_dashboard.md",
                "team/project_fiscal_year.md", "team/feedback_no_mocks.md"}
    for env in (ana, bob):
        code, out, _ = run("list", "--json", env=env)
        listed = {m["file"]: m for m in json.loads(out)}
        assert set(listed) == expected
        assert all(m["scope"] == "team" and m["indexed"] for m in listed.values())
        index = (Path(env["JUPYTER_MEMORY_DIR"]) / "team" / "MEMORY.md").read_text()
        for file in expected:
            assert f"({file[len('team/'):]})" in index
        assert "<<<<<<<" not in index and ">>>>>>>" not in index
    log = subprocess.run(["git", "log", "--format=%an %s"], cwd=Path(bob["JUPYTER_MEMORY_DIR"]) / "team",
                         capture_output=True, text=True, check=True).stdout
    assert "bob team memory: add feedback_no_mocks.md; add project_fiscal_year.md" in log
    assert "ana team memory: add project_revenue_in_cents.md; add reference_dashboard.md" in log
    code, out, _ = run("team", "status", "--json", env=bob)
    state = json.loads(out)
    assert state["unsynced_changes"] == [] and state["unpushed_commits"] == 0


def test_concurrent_edit_keeps_both_versions(tmp_path: Path, remote: Path) -> None:
    ana, bob = person(tmp_path, "ana"), person(tmp_path, "bob")
    for env in (ana, bob):
        run("team", "clone", str(remote), env=env)
    add(ana, "fiscal year", "fiscal year starts in April", body="Starts in April.\n")
    run("team", "sync", env=ana)
    run("team", "sync", env=bob)
    run("add", "--name", "fiscal year", "--description", "fiscal year starts in April",
        "--type", "project", "--body", "Starts on 1 April (ana).\n", "--scope", "team",
        "--update", env=ana)
    run("add", "--name", "fiscal year", "--description", "fiscal year starts in April",
        "--type", "project", "--body", "Starts in April; Q1 is Apr-Jun (bob).\n", "--scope",
        "team", "--update", env=bob)
    assert run("team", "sync", env=ana)[0] == 0
    code, out, err = run("team", "sync", env=bob)
    assert code == 0, err
    assert "conflict: team/project_fiscal_year.md" in out and "Both versions are kept" in out
    folder = Path(bob["JUPYTER_MEMORY_DIR"]) / "team"
    copies = list(folder.glob("project_fiscal_year.conflict-*.md"))
    assert len(copies) == 1
    assert "(ana)" in (folder / "project_fiscal_year.md").read_text()
    assert "(bob)" in copies[0].read_text()
    index = (folder / "MEMORY.md").read_text()
    assert copies[0].name not in index and "<<<<<<<" not in index  # copies stay out of it
    for path in folder.glob("*.md"):
        assert "<<<<<<<" not in path.read_text()
    run("team", "sync", env=ana)  # ana now sees both versions too
    assert (Path(ana["JUPYTER_MEMORY_DIR"]) / "team" / copies[0].name).exists()
    code, out, _ = run("team", "status", env=ana)
    assert "conflict copies to resolve: team/" + copies[0].name in out
    code, out, _ = run("team", "status", "--json", env=ana)
    assert json.loads(out)["conflict_copies"] == ["team/" + copies[0].name]


def test_offline_sync_waits_and_sends_next_time(tmp_path: Path, remote: Path) -> None:
    ana = person(tmp_path, "ana")
    run("team", "clone", str(remote), env=ana)
    add(ana, "fiscal year", "fiscal year starts in April")
    away = tmp_path / "away.git"
    remote.rename(away)
    code, out, _ = run("team", "sync", env=ana)
    assert code == 1 and "Sync waits" in out
    code, out, _ = run("team", "status", "--json", env=ana)
    assert json.loads(out)["unpushed_commits"] >= 1
    away.rename(remote)
    code, out, _ = run("team", "sync", env=ana)
    assert code == 0, out
    files = subprocess.run(["git", "ls-tree", "--name-only", "HEAD"], cwd=remote,
                           capture_output=True, text=True, check=True).stdout.split()
    assert "project_fiscal_year.md" in files and "MEMORY.md" in files


def test_team_folder_inside_the_project_repository(tmp_path: Path, remote: Path) -> None:
    ana = person(tmp_path, "ana")
    project = tmp_path / "proj"
    subprocess.run(["git", "clone", "--quiet", str(remote), str(project)], check=True,
                   env=ana)
    (project / ".claude").mkdir()
    (project / ".claude" / "settings.json").write_text(
        json.dumps({"teamMemoryDirectory": "team-memory"}))
    trust_folder(project, ana)  # a cloned project's settings count once it is trusted
    (project / "analysis.py").write_text("print('hi')\n")  # not the team's business
    code, out, err = run("add", "--project", str(project), "--name", "fiscal year",
                         "--description", "fiscal year starts in April", "--type", "project",
                         "--body", "April.", "--scope", "team", env=ana)
    assert code == 0, err
    assert (project / "team-memory" / "project_fiscal_year.md").exists()
    code, out, err = run("team", "sync", "--project", str(project), env=ana)
    assert code == 0, err + out
    pushed = subprocess.run(["git", "ls-tree", "-r", "--name-only", "HEAD"], cwd=remote,
                            capture_output=True, text=True, check=True).stdout.split()
    assert "team-memory/project_fiscal_year.md" in pushed and "team-memory/MEMORY.md" in pushed
    assert "analysis.py" not in pushed and not any(p.endswith(".lock") for p in pushed)


def test_sync_without_a_repository_says_how_to_start(tmp_path: Path) -> None:
    ana = person(tmp_path, "ana")
    add(ana, "fiscal year", "fiscal year starts in April")
    code, _, err = run("team", "sync", env=ana)
    assert code == 2 and "team clone URL" in err


# ---------------------------------------------------------------------------- shared disk

_WRITER = """
import sys
from pathlib import Path
from jupyter_memory.memdir.location import locate
from jupyter_memory.memdir.trust import trust_folder
from jupyter_memory.memdir.team import open_store
who, count = sys.argv[1], int(sys.argv[2])
store = open_store(locate(Path(sys.argv[3])))
for i in range(count):
    store.create(f"{who} fact {i}", f"fact number {i} learned by {who}", "project",
                 f"Fact {i}.", scope="team")
"""


def test_two_homes_write_one_team_folder_at_once(tmp_path: Path) -> None:
    shared = tmp_path / "shared-disk" / "team"
    procs = []
    for who in ("ana", "bob"):
        env = person(tmp_path, who)
        settings = Path(env["CLAUDE_CONFIG_DIR"]) / "settings.json"
        settings.parent.mkdir(parents=True, exist_ok=True)
        settings.write_text(json.dumps({"teamMemoryDirectory": str(shared)}))
        env["PYTHONPATH"] = os.pathsep.join(sys.path)
        procs.append(subprocess.Popen([sys.executable, "-c", _WRITER, who, "25", str(tmp_path)],
                                      env=env, stderr=subprocess.PIPE, text=True))
    for proc in procs:
        _, err = proc.communicate(timeout=300)
        assert proc.returncode == 0, err
    files = sorted(p.name for p in shared.glob("*.md") if p.name != "MEMORY.md")
    assert len(files) == 50
    index = (shared / "MEMORY.md").read_text()
    assert all(f"({name})" in index for name in files)


# ---------------------------------------------------------------------------- the agent


def test_prefetch_attaches_team_memory_and_explains_its_scope(tmp_path: Path, fake_api,
                                                              monkeypatch) -> None:
    from jupyter_memory.agent.loop import run_turn
    from jupyter_memory.agent.session import AgentConfig, Session
    from jupyter_memory.localapi import ToolCall, Turn
    from jupyter_memory.recall.model_selector import SELECTOR_TOOL_NAME

    env = person(tmp_path, "ana")
    shared = tmp_path / "elsewhere" / "team"
    settings = Path(env["CLAUDE_CONFIG_DIR"]) / "settings.json"
    settings.parent.mkdir(parents=True, exist_ok=True)
    settings.write_text(json.dumps({"teamMemoryDirectory": str(shared)}))
    for key in ("HOME", "CLAUDE_CONFIG_DIR", "JUPYTER_MEMORY_DIR", "USER"):
        monkeypatch.setenv(key, env[key])
    add(env, "fiscal year", "the fiscal year starts in April", body="Q1 is April to June.")
    assert (shared / "project_fiscal_year.md").exists()  # outside the memdir
    config = AgentConfig.from_env(max_retries=0, recall_mode="prefetch",
                                  wait_for_prefetch=True, log_transcript=False)
    session = Session(tmp_path, config=config)
    manifests = []

    def respond(body: dict) -> Turn:
        if "selected_memories" in json.dumps(body.get("tools", [])):
            manifests.append(json.dumps(body["messages"]))
            return Turn(tool_calls=[ToolCall(SELECTOR_TOOL_NAME, {
                "selected_memories": ["team/project_fiscal_year.md"]})])
        return Turn(text="April.")

    fake_api.responder = respond
    result = run_turn(session, "When does the fiscal year start?")
    assert result.ok
    assert "[project] team/project_fiscal_year.md" in manifests[0]
    sent = json.dumps(fake_api.requests[-1].messages)
    assert "Q1 is April to June." in sent
    decisions = {d["file"]: d for d in result.record["recall"]["decisions"]}
    assert decisions["team/project_fiscal_year.md"]["decision"] == "injected"
    assert decisions["team/project_fiscal_year.md"]["scope"] == "team"


def test_agent_writes_team_memory_through_its_tools(tmp_path: Path, fake_api,
                                                     monkeypatch) -> None:
    from jupyter_memory.agent.loop import run_turn
    from jupyter_memory.agent.session import AgentConfig, Session
    from jupyter_memory.localapi import ToolCall, Turn

    env = person(tmp_path, "ana")
    for key in ("HOME", "CLAUDE_CONFIG_DIR", "JUPYTER_MEMORY_DIR", "USER", "GIT_AUTHOR_NAME"):
        monkeypatch.setenv(key, env[key])
    folder = Path(env["JUPYTER_MEMORY_DIR"]) / "team"
    folder.mkdir(parents=True)  # an existing team folder turns team mode on
    session = Session(tmp_path, config=AgentConfig.from_env(max_retries=0, log_transcript=False))
    memo = ("---\nname: no-mocks\ndescription: never mock the warehouse in tests\n"
            "type: feedback\n---\nUse the staging warehouse.\n")
    fake_api.script([
        Turn(tool_calls=[ToolCall("Write", {"file_path": str(folder / "feedback_no_mocks.md"),
                                            "content": memo})]),
        Turn(tool_calls=[ToolCall("Write", {"file_path": str(folder / "user_me.md"),
                                            "content": memo.replace("feedback", "user")})]),
        Turn(text="Saved for the team."),
    ])
    result = run_turn(session, "Team rule: never mock the warehouse.")
    assert result.ok
    assert "author: ana" in (folder / "feedback_no_mocks.md").read_text()
    assert "(feedback_no_mocks.md)" in (folder / "MEMORY.md").read_text()
    assert not (folder / "user_me.md").exists()  # a user memory is filed as private
    assert "type: user" in (Path(env["JUPYTER_MEMORY_DIR"]) / "user_me.md").read_text()
    moved = [c for c in readable(result.record)["tool_calls"] if "user_me.md" in json.dumps(c)]
    assert not moved[0]["is_error"] and "always private" in moved[0]["result"]
    first = fake_api.requests[0].body
    assert "# Team memory" in first["messages"][0]["content"][0]["text"]


def test_extraction_agent_files_team_memories_by_the_scope_rules(tmp_path: Path, fake_api,
                                                                 monkeypatch) -> None:
    from extraction_router import Router

    from jupyter_memory.agent.loop import run_turn
    from jupyter_memory.agent.session import AgentConfig, Session
    from jupyter_memory.localapi import ToolCall, Turn

    env = person(tmp_path, "ana")
    for key in ("HOME", "CLAUDE_CONFIG_DIR", "JUPYTER_MEMORY_DIR", "USER", "GIT_AUTHOR_NAME"):
        monkeypatch.setenv(key, env[key])
    monkeypatch.delenv("JUPYTER_MEMORY_EXTRACTION", raising=False)
    memdir = Path(env["JUPYTER_MEMORY_DIR"])
    (memdir / "team").mkdir(parents=True)
    session = Session(tmp_path, config=AgentConfig.from_env(max_retries=0, log_transcript=False))
    hook = session.extraction
    router = Router(fake_api)
    fy = ("---\nname: fiscal-year\ndescription: the fiscal year starts in April\n"
          "type: project\n---\nQ1 is April to June.\n")
    me = "---\nname: me\ndescription: ana is an analyst\ntype: user\n---\nAnalyst.\n"
    router.main.append(Turn(text="Noted: the fiscal year starts in April."))
    router.extract.extend([
        Turn(tool_calls=[
            ToolCall("Write", {"file_path": str(memdir / "team" / "project_fiscal_year.md"),
                               "content": fy}),
            ToolCall("Write", {"file_path": str(memdir / "team" / "user_me.md"), "content": me}),
        ]),
        Turn(text="Saved team/project_fiscal_year.md."),
    ])
    result = run_turn(session, "Our fiscal year starts in April. I'm an analyst.")
    assert result.ok
    assert hook.wait(120)
    assert "Team memory: `" in json.dumps(router.extract_bodies[0])
    saved = (memdir / "team" / "project_fiscal_year.md").read_text()
    assert "author: ana" in saved and "origin: extraction" in saved
    assert "(project_fiscal_year.md)" in (memdir / "team" / "MEMORY.md").read_text()
    assert not (memdir / "team" / "user_me.md").exists()  # user memories stay private


def test_doctor_and_repair_leave_team_memories_to_the_team_index(tmp_path: Path) -> None:
    env = person(tmp_path, "ana")
    add(env, "fiscal year", "the fiscal year starts in April")
    add(env, "plots", "ana likes small plots", kind="feedback", scope="private")
    code, out, _ = run("doctor", "--json", env=env)
    assert code == 0 and json.loads(out)["errors"] == 0
    assert not any("team/" in json.dumps(f) for f in json.loads(out)["findings"])
    run("repair", env=env)
    private_index = (Path(env["JUPYTER_MEMORY_DIR"]) / "MEMORY.md").read_text()
    assert "team/" not in private_index and "(feedback_plots.md)" in private_index


def test_a_team_folder_made_mid_session_joins_the_next_request(tmp_path: Path,
                                                                monkeypatch) -> None:
    from jupyter_memory.agent.session import AgentConfig, Session

    env = person(tmp_path, "ana")
    for key in ("HOME", "CLAUDE_CONFIG_DIR", "JUPYTER_MEMORY_DIR", "USER"):
        monkeypatch.setenv(key, env[key])
    session = Session(tmp_path, config=AgentConfig.from_env(log_transcript=False))
    assert session.team_dir is None
    session.store.create("fiscal year", "the fiscal year starts in April", "project", "x",
                         scope="team")
    session.refresh_context()
    first = session.assemble().body["messages"][0]["content"][0]["text"]
    assert "# Team memory" in first and "(project_fiscal_year.md)" in first
