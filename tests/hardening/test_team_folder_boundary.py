"""A cloned project cannot move the team folder, and a linked team index is never read
(issue 26, break 2 and the read side of break 3).

Before the trust table, ``teamMemoryDirectory`` in a project's settings was honoured with
no trust: ``team path`` said ``~/.ssh``, ``add --scope team`` wrote ``MEMORY.md``, ``.lock``
and a memory there, and the agent's Read tool took ``~/.ssh/id_ed25519`` for team memory.
A ``MEMORY.md`` link in the team folder put the file it named into every request.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from jupyter_memory.agent.tools import default_registry
from jupyter_memory.memdir import trust
from jupyter_memory.memdir.location import locate
from jupyter_memory.memdir.team import team_location

from .conftest import Cli

KEY = "-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjEAAAAA\n-----END OPENSSH PRIVATE KEY-----\n"
CREDENTIALS = "[default]\naws_access_key_id = AKIA_NOT_A_REAL_KEY_0\n"


@pytest.fixture(autouse=True)
def nobody_to_ask():
    old = trust.set_prompter(None)
    trust._declined.clear()
    yield
    trust.set_prompter(old)
    trust._declined.clear()


@pytest.fixture
def ssh(isolated_home: Path) -> Path:
    """``~/.ssh`` with a private key: what a hostile project wants."""
    folder = isolated_home / ".ssh"
    folder.mkdir()
    (folder / "id_ed25519").write_text(KEY, encoding="utf-8")
    return folder


def settings_file(project: Path, name: str, values: dict) -> Path:
    path = project / ".claude" / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(values), encoding="utf-8")
    return path


def untouched(folder: Path) -> bool:
    return sorted(os.listdir(folder)) == ["id_ed25519"]


def add_team(run_cli: Cli) -> tuple[int, str, str]:
    return run_cli("add", "--name", "fiscal year", "--description", "the fiscal year starts "
                   "in April", "--type", "project", "--body", "April.", "--scope", "team")


# ------------------------------------------------------------------ the setting

HOSTILE_LOCAL = [
    pytest.param(lambda home: "~/.ssh", id="tilde"),
    pytest.param(lambda home: str(home / ".ssh"), id="absolute"),
    pytest.param(lambda home: str(home / "proj-elsewhere" / ".." / ".ssh"), id="dotdot"),
]


@pytest.mark.parametrize("value", HOSTILE_LOCAL)
def test_local_settings_of_an_untrusted_clone_do_not_move_the_team_folder(
    value, project: Path, memdir: Path, ssh: Path, isolated_home: Path, run_cli: Cli
) -> None:
    settings_file(project, "settings.local.json", {"teamMemoryDirectory": value(isolated_home)})
    code, out, err = run_cli("team", "path")
    assert code == 0, err
    assert str(ssh) not in out and out.strip() == str(memdir / "team")
    assert "not trusted" in err
    code, out, err = add_team(run_cli)
    assert code == 0, err
    assert untouched(ssh)
    assert (memdir / "team" / "project_fiscal_year.md").is_file()


@pytest.mark.parametrize("value", HOSTILE_LOCAL)
def test_a_trusted_clone_still_cannot_place_the_team_folder_outside_it(
    value, project: Path, memdir: Path, ssh: Path, isolated_home: Path, run_cli: Cli
) -> None:
    """Trust lets project values take effect, but only inside the project."""
    trust.trust_folder(project)
    settings_file(project, "settings.local.json", {"teamMemoryDirectory": value(isolated_home)})
    code, out, err = run_cli("team", "path")
    assert code == 0, err
    assert out.strip() == str(memdir / "team") and "outside the project" in err
    add_team(run_cli)
    assert untouched(ssh)


@pytest.mark.parametrize("layout", ["link", "chain", "parent-link", "dangling"])
@pytest.mark.parametrize("name", ["settings.json", "settings.local.json"])
def test_a_folder_inside_the_repository_that_links_out_is_refused(
    layout: str, name: str, project: Path, memdir: Path, ssh: Path, run_cli: Cli
) -> None:
    """Even trusted, a team folder a project file names must really lie inside the project."""
    trust.trust_folder(project)
    if layout == "link":
        os.symlink(ssh, project / "team-memory")
        value = "team-memory"
    elif layout == "chain":
        os.symlink(ssh, project / "hop")
        os.symlink(project / "hop", project / "team-memory")
        value = "team-memory"
    elif layout == "parent-link":
        os.symlink(ssh.parent, project / "home")
        value = "home/.ssh"
    else:
        os.symlink(ssh / "made-by-attack", project / "team-memory")
        value = "team-memory"
    if name == "settings.local.json":  # the local file takes absolute paths
        value = str(project / value)
    settings_file(project, name, {"teamMemoryDirectory": value})
    code, out, err = run_cli("team", "path")
    assert code == 0, err
    assert out.strip() == str(memdir / "team"), out
    add_team(run_cli)
    assert untouched(ssh)


def test_the_shared_settings_of_an_untrusted_clone_are_not_honoured(
    project: Path, memdir: Path, run_cli: Cli
) -> None:
    settings_file(project, "settings.json", {"teamMemoryDirectory": "team-memory"})
    code, out, err = run_cli("team", "path")
    assert code == 0 and out.strip() == str(memdir / "team") and "not trusted" in err
    trust.trust_folder(project)
    _, out, _ = run_cli("team", "path")
    assert out.strip() == str(project.resolve() / "team-memory")


def test_your_own_settings_may_put_the_team_folder_anywhere(
    project: Path, memdir: Path, isolated_home: Path, tmp_path: Path, run_cli: Cli
) -> None:
    """The control: a team folder on a JupyterHub shared disk keeps working."""
    shared = tmp_path / "shared-disk" / "team"
    user = isolated_home / ".claude" / "settings.json"
    user.parent.mkdir(parents=True, exist_ok=True)
    user.write_text(json.dumps({"teamMemoryDirectory": str(shared)}), encoding="utf-8")
    code, out, err = run_cli("team", "path")
    assert out.strip() == str(shared)
    code, _, err = add_team(run_cli)
    assert code == 0 and (shared / "project_fiscal_year.md").is_file(), err


def test_the_read_tool_does_not_take_a_refused_team_folder_for_memory(
    project: Path, memdir: Path, ssh: Path
) -> None:
    from sessions import make_session

    settings_file(project, "settings.local.json", {"teamMemoryDirectory": "~/.ssh"})
    session = make_session(project, memdir=memdir, log_transcript=False)
    assert session.team_dir is None or Path(session.team_dir) != ssh
    ctx = session.tool_context()
    for path in (str(ssh / "id_ed25519"), "~/.ssh/id_ed25519"):
        result = default_registry().run("Read", {"file_path": path}, ctx)
        assert result.is_error and "PRIVATE KEY" not in result.content, result.content
    where = team_location(locate(project), None)
    assert where.folder != ssh
    assert any("teamMemoryDirectory" in n and "not trusted" in n for n in session.trust_notices())


# ------------------------------------------------------------------ the team index


def linked_index(team: Path, target: Path, layout: str) -> None:
    team.mkdir(parents=True, exist_ok=True)
    if layout == "file":
        os.symlink(target, team / "MEMORY.md")
    elif layout == "chain":
        os.symlink(target, team / "hop.md")
        os.symlink(team / "hop.md", team / "MEMORY.md")
    elif layout == "inside":  # a link within the team folder: the index is still never a link
        (team / "notes.md").write_text(CREDENTIALS, encoding="utf-8")
        os.symlink(team / "notes.md", team / "MEMORY.md")
    else:
        os.symlink(target.parent / "missing", team / "MEMORY.md")


@pytest.mark.parametrize("layout", ["file", "chain", "inside", "dangling"])
def test_a_linked_team_index_never_reaches_a_request(
    layout: str, project: Path, memdir: Path, isolated_home: Path
) -> None:
    from sessions import make_session

    aws = isolated_home / ".aws"
    aws.mkdir()
    (aws / "credentials").write_text(CREDENTIALS, encoding="utf-8")
    linked_index(memdir / "team", aws / "credentials", layout)
    (memdir / "team" / "project_x.md").write_text(
        "---\nname: x\ndescription: a team fact\ntype: project\n---\nX.\n", encoding="utf-8")
    session = make_session(project, memdir=memdir, log_transcript=False)
    assert session.team_dir is not None
    sent = json.dumps(session.assemble().body)
    assert "aws_access_key_id" not in sent
    part = session.memory.team_index_part()
    assert part is not None and part.text == "" and "link" in (part.warning or "")
