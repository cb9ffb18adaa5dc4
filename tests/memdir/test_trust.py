"""The trust record: `jupyter-memory trust`, `%memory trust`, and Claude Code's own record."""

from __future__ import annotations

import io
import json
import os
import stat
from pathlib import Path

import pytest
from shell_helpers import fails, run

from jupyter_memory.agent import lifecycle
from jupyter_memory.cli import app as cli
from jupyter_memory.errors import ConfigError
from jupyter_memory.magics.state import state_for
from jupyter_memory.memdir import trust


@pytest.fixture(autouse=True)
def headless():
    old = trust.set_prompter(None)
    trust._declined.clear()
    yield
    trust.set_prompter(old)
    trust._declined.clear()


def jm(*argv: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    code = cli.main(list(argv), stdin=io.StringIO(""), stdout=out, stderr=err)
    return code, out.getvalue(), err.getvalue()


def test_trust_list_and_revoke_from_the_command_line(project: Path) -> None:
    (project / "sub").mkdir()
    assert not trust.is_trusted(project).trusted
    code, out, _ = jm("trust", str(project))
    assert code == 0 and f"Trusted {project}" in out
    decision = trust.is_trusted(project / "sub")  # everything below is trusted too
    assert decision.trusted and decision.granted_by == project
    assert trust.external_imports_approved(project).trusted

    record = trust.trust_file()
    assert record == Path(os.environ["CLAUDE_CONFIG_DIR"]) / "jupyter-memory-trust.json"
    data = json.loads(record.read_text())
    assert data["folders"][str(project)]["trusted"] is True
    assert stat.S_IMODE(record.stat().st_mode) == 0o600

    code, out, _ = jm("trust", "--list", "--json")
    [entry] = json.loads(out)["trusted"]
    assert entry["folder"] == str(project) and entry["source"] == "jupyter-memory"

    code, out, _ = jm("trust", "--revoke", str(project))
    assert code == 0 and "no longer trusted" in out
    assert not trust.is_trusted(project).trusted
    code, out, _ = jm("trust", "--revoke", str(project))
    assert "was not in jupyter-memory's trust record" in out


def test_trust_defaults_to_the_project_root(project: Path) -> None:
    (project / ".git").mkdir()
    (project / "sub").mkdir()
    code, out, _ = jm("trust", "--project", str(project / "sub"))
    assert code == 0 and str(project) in out and trust.is_trusted(project).granted_by == project


def test_bad_input_gets_a_clear_message(project: Path, tmp_path: Path) -> None:
    code, _, err = jm("trust", str(tmp_path / "missing"))
    assert code == 2 and "no such folder" in err
    code, _, err = jm("trust", "--list", "--revoke")
    assert code == 2 and "either --list or --revoke" in err
    with pytest.raises(ConfigError, match="whole filesystem"):
        trust.trust_folder("/")
    trust.trust_file().parent.mkdir(parents=True, exist_ok=True)
    trust.trust_file().write_text("[1, 2]")
    code, _, err = jm("trust", str(project))
    assert code == 2 and "cannot be updated safely" in err and "Traceback" not in err
    assert trust.trust_file().read_text() == "[1, 2]"


@pytest.mark.parametrize("config_dir", [True, False])
def test_claude_codes_own_record_is_honoured_and_never_written(
    project: Path, monkeypatch: pytest.MonkeyPatch, config_dir: bool
) -> None:
    if not config_dir:
        monkeypatch.delenv("CLAUDE_CONFIG_DIR")
    where = trust.claude_config_file()
    expected = (Path(os.environ["CLAUDE_CONFIG_DIR"]) if config_dir
                else Path(os.environ["HOME"])) / ".claude.json"
    assert where == expected
    where.parent.mkdir(parents=True, exist_ok=True)
    body = {"projects": {str(project): {"hasTrustDialogAccepted": True,
                                        "hasClaudeMdExternalIncludesApproved": False}}}
    where.write_text(json.dumps(body))
    (project / "sub").mkdir()
    decision = trust.is_trusted(project / "sub")
    assert decision.trusted and decision.source == "claude" and decision.record == where
    assert not trust.external_imports_approved(project).trusted

    code, out, _ = jm("trust", "--revoke", str(project))
    assert "still trusted through claude's record" in out
    code, out, _ = jm("trust", "--list")
    assert code == 0 and f"{project}  (claude: {where})" in out
    assert json.loads(where.read_text()) == body  # read only


def test_a_false_or_broken_claude_record_trusts_nothing(project: Path) -> None:
    where = trust.claude_config_file()
    where.parent.mkdir(parents=True, exist_ok=True)
    where.write_text(json.dumps({"projects": {str(project): {"hasTrustDialogAccepted": False}}}))
    assert not trust.is_trusted(project).trusted
    where.write_text("{not json")
    assert not trust.is_trusted(project).trusted
    where.write_text(json.dumps({str(project): {"hasTrustDialogAccepted": True}}))  # not nested
    assert not trust.is_trusted(project).trusted


def test_untrusted_env_overrides_every_record(project: Path, monkeypatch) -> None:
    trust.trust_folder(project)
    monkeypatch.setenv(trust.ENV_UNTRUSTED, "1")
    decision = trust.is_trusted(project)
    assert not decision.trusted and decision.source == "untrusted-env"


def test_memory_trust_magic_trusts_and_turns_the_hooks_on(ip, project: Path, tmp_path: Path) -> None:
    flag = tmp_path / "ran"
    (project / ".claude").mkdir()
    (project / ".claude" / "settings.json").write_text(json.dumps({"hooks": {"Stop": [
        {"hooks": [{"type": "command", "command": f"touch {flag}"}]}]}}))
    assert trust._prompter is not None  # the magics registered a way to ask
    cap = run(ip, "%memory path")  # starts the session: headless, so nothing is asked
    assert "not trusted" in cap.stderr or "not trusted" in cap.stdout
    session = state_for(ip).session
    assert lifecycle.run(session, "Stop", {}).ran == 0

    out = run(ip, "%memory trust").stdout
    assert f"Trusted {project}" in out
    assert lifecycle.run(session, "Stop", {}).ran == 1 and flag.exists()
    assert str(project) in run(ip, "%memory trust --list").stdout
    out = run(ip, "%memory trust --revoke --json").stdout
    assert json.loads(out) == {"folder": str(project), "revoked": True, "trusted": False}
    assert "use %memory trust [PATH]" in fails(ip, "%memory trust a b")
