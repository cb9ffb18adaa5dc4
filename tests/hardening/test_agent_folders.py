"""An agent's memory folder stays inside the project, and an agent name is a name
(issue 26, break 4).

Before the gateway, ``.claude/agent-memory/helper`` as a link to ``~/.ssh`` in a cloned
project let ``%%agent --agent helper`` read the private key as its own memory, and
``--agent /abs/path/evil`` loaded any ``.md`` on disk as an agent definition. Agents
defined by an untrusted project were offered like the person's own.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from jupyter_memory.agent.definitions import load_agent
from jupyter_memory.agent.session import Session
from jupyter_memory.agent.tools import default_registry
from jupyter_memory.errors import ConfigError, JupyterMemoryError
from jupyter_memory.memdir import trust

KEY = "-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjEAAAAA\n-----END OPENSSH PRIVATE KEY-----\n"

HELPER = """\
---
name: helper
description: Helps with the analysis
tools: Read, Grep, Glob
memory: {scope}
---
You help. Keep notes in your memory.
"""


@pytest.fixture(autouse=True)
def nobody_to_ask():
    old = trust.set_prompter(None)
    trust._declined.clear()
    yield
    trust.set_prompter(old)
    trust._declined.clear()


@pytest.fixture
def ssh(isolated_home: Path) -> Path:
    folder = isolated_home / ".ssh"
    folder.mkdir()
    (folder / "id_ed25519").write_text(KEY, encoding="utf-8")
    (folder / "MEMORY.md").write_text("- [key](id_ed25519) — the key\n" + KEY, encoding="utf-8")
    return folder


def define(project: Path, scope: str = "project", name: str = "helper") -> Path:
    path = project / ".claude" / "agents" / f"{name}.md"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(HELPER.format(scope=scope), encoding="utf-8")
    return path


def link_folder(project: Path, ssh: Path, layout: str, scope: str) -> None:
    """Make the agent's memory folder (or a folder above it) lead to ``ssh``."""
    folder = "agent-memory" if scope == "project" else "agent-memory-local"
    parent = project / ".claude" / folder
    if layout == "link":
        parent.mkdir(parents=True, exist_ok=True)
        os.symlink(ssh, parent / "helper")
    elif layout == "chain":
        parent.mkdir(parents=True, exist_ok=True)
        os.symlink(ssh, project / "hop")
        os.symlink(project / "hop", parent / "helper")
    elif layout == "parent":
        os.symlink(ssh.parent, parent)  # .claude/agent-memory -> ~ ; helper does not exist
        os.symlink(ssh, ssh.parent / "helper")
    elif layout == "relative":
        parent.mkdir(parents=True, exist_ok=True)
        os.symlink(os.path.relpath(ssh, parent), parent / "helper")
    else:  # dangling: the first write would create the target outside
        parent.mkdir(parents=True, exist_ok=True)
        os.symlink(ssh / "agent-notes", parent / "helper")


LAYOUTS = ["link", "chain", "parent", "relative", "dangling"]


@pytest.mark.parametrize("scope", ["project", "local"])
@pytest.mark.parametrize("layout", LAYOUTS)
def test_a_linked_agent_memory_folder_is_refused(
    layout: str, scope: str, tmp_path: Path, ssh: Path
) -> None:
    project = tmp_path / "proj"
    define(project, scope)
    link_folder(project, ssh, layout, scope)
    trust.trust_folder(project)  # trusted: only the folder itself is in question
    agent = load_agent(project, "helper")
    with pytest.raises(JupyterMemoryError) as refused:
        main = Session(project, env={**os.environ, "JUPYTER_MEMORY_DIR": str(tmp_path / "mem")})
        session = main.child(agent)
        sent = json.dumps(session.assemble().body)
        ctx = session.tool_context()
        for path in (str(ssh / "id_ed25519"),
                     str(project / ".claude" / "agent-memory" / "helper" / "id_ed25519")):
            result = default_registry().run("Read", {"file_path": path}, ctx)
            assert "PRIVATE KEY" not in result.content
        assert "PRIVATE KEY" not in sent
        pytest.fail("the agent session accepted a memory folder that leads out of the project")
    assert "project" in str(refused.value) and "link" in str(refused.value)
    assert sorted(os.listdir(ssh)) == ["MEMORY.md", "id_ed25519"]  # nothing written there


def test_a_plain_agent_memory_folder_still_works(tmp_path: Path) -> None:
    """The control: the same agent with a real folder inside the project."""
    project = tmp_path / "proj"
    define(project)
    trust.trust_folder(project)
    memdir = project / ".claude" / "agent-memory" / "helper"
    memdir.mkdir(parents=True)
    (memdir / "MEMORY.md").write_text("- [Joins](feedback_joins.md) — left joins drop rows\n")
    session = Session(project).child(load_agent(project, "helper"))
    assert "left joins drop rows" in json.dumps(session.assemble().body)


@pytest.mark.parametrize("name", [
    "/abs/path/evil", "../evil", "../../.ssh/id_ed25519", "sub/evil", "~/evil", ".hidden",
    "evil.md/..", "a\\b", "", "-x",
])
def test_agent_names_are_names(name: str, tmp_path: Path) -> None:
    project = tmp_path / "proj"
    project.mkdir()
    evil = tmp_path / "evil.md"
    evil.write_text(HELPER.format(scope="project").replace("name: helper", "name: evil"))
    with pytest.raises(ConfigError, match="letters, digits"):
        load_agent(project, name if name != "/abs/path/evil" else str(tmp_path / "evil"))


def test_agents_of_an_untrusted_project_are_not_offered(tmp_path: Path, isolated_home: Path) -> None:
    project = tmp_path / "proj"
    define(project)
    with pytest.raises(JupyterMemoryError, match="not trusted") as refused:
        load_agent(project, "helper")
    assert f"jupyter-memory trust {project.resolve()}" in str(refused.value)
    user_agents = isolated_home / ".claude" / "agents"
    user_agents.mkdir(parents=True)
    (user_agents / "mine.md").write_text(HELPER.format(scope="user").replace("helper", "mine"))
    assert load_agent(project, "mine").scope == "user"  # the person's own agents are offered
    trust.trust_folder(project)
    assert load_agent(project, "helper").scope == "project"


def test_the_magic_refuses_a_path_and_an_untrusted_agent(make_ip, tmp_path: Path,
                                                        fake_api) -> None:
    from IPython.core.error import UsageError

    from jupyter_memory.localapi import Turn

    fake_api.script([Turn(text="I am the evil agent."), Turn(text="I am the helper.")])

    project = tmp_path / "proj"
    define(project)
    ip = make_ip(project)
    outside = tmp_path / "evil.md"
    outside.write_text(HELPER.format(scope="project").replace("name: helper", "name: evil"))
    with pytest.raises(UsageError, match="letters, digits"):
        ip.run_cell_magic("agent", f"--agent {tmp_path / 'evil'}", "hello")
    with pytest.raises(UsageError, match="not trusted"):
        ip.run_cell_magic("agent", "--agent helper", "hello")
    assert fake_api.requests == []


@pytest.mark.parametrize("scope", ["project", "local"])
def test_the_command_line_and_remember_refuse_a_linked_agent_folder(
    scope: str, tmp_path: Path, ssh: Path, make_ip, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The same folder reached through ``--scope project|local --agent NAME``."""
    import io

    from jupyter_memory.cli import app as cli

    project = tmp_path / "proj"
    project.mkdir()
    link_folder(project, ssh, "link", scope)
    monkeypatch.setenv("JUPYTER_MEMORY_DIR", str(tmp_path / "mem"))
    for argv in (["list"], ["show", "MEMORY.md"], ["search", "key"], ["doctor"]):
        out, err = io.StringIO(), io.StringIO()
        code = cli.main([*argv, "--scope", scope, "--agent", "helper", "--project", str(project)],
                        stdin=io.StringIO(""), stdout=out, stderr=err)
        assert code != 0 and "inside the project" in err.getvalue(), (argv, err.getvalue())
        assert "PRIVATE KEY" not in out.getvalue() + err.getvalue()
    from IPython.core.error import UsageError

    ip = make_ip(project)
    with pytest.raises(UsageError, match="inside the project"):
        ip.run_cell_magic("remember", f"--scope {scope} --agent helper --type feedback "
                          "--name joins -d 'left joins keep refunds'", "Use left joins.")
    assert sorted(os.listdir(ssh)) == ["MEMORY.md", "id_ed25519"]
