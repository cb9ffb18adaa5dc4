"""Team memory and defined agents in a real IPython shell: ``%%remember --scope team``,
``%memory`` with its scope column and ``%memory team``, ``%context``, ``%%agent --agent``."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest
from shell_helpers import fails, run

from jupyter_memory.localapi import ToolCall, Turn
from jupyter_memory.memdir.trust import trust_folder

pytestmark = pytest.mark.skipif(shutil.which("git") is None, reason="needs git")


@pytest.fixture(autouse=True)
def as_ana(monkeypatch: pytest.MonkeyPatch) -> None:
    """Every test here is Ana at work: the author of what she shares."""
    monkeypatch.setenv("USER", "ana")
    monkeypatch.setenv("GIT_AUTHOR_NAME", "ana")


def text(cap) -> str:
    return cap.stdout + "".join(o.data.get("text/plain", "") for o in cap.outputs)


def test_remember_team_scope_and_memory_views(ip, memdir: Path, tmp_path: Path) -> None:
    remote = tmp_path / "team.git"
    subprocess.run(["git", "init", "--quiet", "--bare", str(remote)], check=True)
    cap = run(ip, f"%memory team clone {remote}")
    assert "Cloned" in text(cap)
    cap = run(ip, "%%remember --scope team --type project --name fiscal-year "
                  "-d 'the fiscal year starts in April'\nQ1 is April to June.")
    assert (memdir / "team" / "project_fiscal_year.md").exists()
    refused = fails(ip, "%%remember --scope team --type user --name role -d 'ana is an analyst'\n"
                        "Senior analyst.")
    assert "always private" in refused
    assert not (memdir / "team" / "user_role.md").exists()
    run(ip, "%%remember --type feedback --name plots -d 'ana likes small plots'\nSmall.")
    cap = run(ip, "%memory list --json")
    listed = {m["file"]: m["scope"] for m in json.loads(cap.stdout)}
    assert listed == {"team/project_fiscal_year.md": "team", "feedback_plots.md": "private"}
    table = text(run(ip, "%memory list"))
    assert "scope" in table and "team" in table and "private" in table
    cap = run(ip, "%memory team sync")
    assert "synced" in text(cap)
    cap = run(ip, "%memory team status --json")
    assert json.loads(cap.stdout)["unpushed_commits"] == 0
    cap = run(ip, "%context")
    assert "team/MEMORY.md" in text(cap) and "[team]" in text(cap)
    cap = run(ip, "%memory why --json")
    why = {d["file"]: d for d in json.loads(cap.stdout)}
    assert why["team/project_fiscal_year.md"]["scope"] == "team"
    assert why["team/project_fiscal_year.md"]["decision"] == "injected"


def test_agent_cell_runs_a_defined_agent(ip, fake_api, tmp_path: Path) -> None:
    agents = tmp_path / "proj" / ".claude" / "agents"
    agents.mkdir(parents=True)
    (agents / "data-reviewer.md").write_text(
        "---\nname: data-reviewer\ndescription: Reviews joins\ntools: Read, Grep\n"
        "memory: local\n---\nYou review joins and remember recurring mistakes.\n")
    trust_folder(tmp_path / "proj")  # a project's own agents run only in a trusted folder
    memdir = tmp_path / "proj" / ".claude" / "agent-memory-local" / "data-reviewer"
    note = ("---\nname: refunds\ndescription: refunds vanish in inner joins\ntype: feedback\n"
            "---\nUse left joins for refunds.\n")
    fake_api.script([
        Turn(tool_calls=[ToolCall("Write", {"file_path": str(memdir / "feedback_refunds.md"),
                                            "content": note})]),
        Turn(text="Reviewed."),
    ])
    cap = run(ip, "%%agent --agent data-reviewer\nReview the join above.")
    assert "Reviewed." in text(cap) or any("Reviewed." in json.dumps(o.data) for o in cap.outputs)
    body = fake_api.requests[0].body
    assert "You review joins" in body["system"][0]["text"]
    assert [t["name"] for t in body["tools"]] == ["Read", "Grep", "Write", "Edit"]
    assert "(feedback_refunds.md)" in (memdir / "MEMORY.md").read_text()
    assert "No agent named 'nobody'" in fails(ip, "%agent --agent nobody hello")
