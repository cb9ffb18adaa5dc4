"""The magic options the course uses instead of the package's modules (issue 29):
``%memory list --manifest`` and ``%memory extraction wait``."""

from __future__ import annotations

import json
import re
import threading

import pytest
from extraction_router import MARKER
from shell_helpers import fails, run

from jupyter_memory.commands import memory as memory_command
from jupyter_memory.localapi import ToolCall, Turn


def _write(memdir, name, type_, description):
    memdir.mkdir(parents=True, exist_ok=True)
    (memdir / f"{type_}_{name}.md").write_text(
        f"---\nname: {name}\ndescription: {description}\ntype: {type_}\n---\nBody.\n",
        encoding="utf-8")


def test_list_manifest_prints_one_selector_line_per_memory(ip, memdir):
    _write(memdir, "fiscal", "project", "Fiscal   year starts in February")
    _write(memdir, "terse", "feedback", "answer in one line")
    out = run(ip, "%memory list --manifest").stdout.strip().splitlines()
    assert len(out) == 2
    line = re.compile(r"^- \[(\w+)\] (\S+\.md) \(\d{4}-\d\d-\d\dT[\d:.]+Z\): (.+)$")
    found = {m.group(2): (m.group(1), m.group(3)) for m in map(line.match, out) if m}
    assert found == {"project_fiscal.md": ("project", "Fiscal year starts in February"),
                     "feedback_terse.md": ("feedback", "answer in one line")}
    only = run(ip, "%memory list --manifest --type feedback").stdout.strip()
    assert only.startswith("- [feedback] feedback_terse.md (")
    rows = json.loads(run(ip, "%memory list --manifest --json").stdout)
    assert sorted(r["file"] for r in rows) == ["feedback_terse.md", "project_fiscal.md"]


def test_extraction_wait_returns_once_the_run_has_finished(ip, memdir, fake_api, monkeypatch):
    run(ip, "%memory extraction on")
    path = memdir / "feedback_short.md"
    content = ("---\nname: short\ndescription: short answers\ntype: feedback\n---\n"
               "Answer briefly.\n")
    entered, release = threading.Event(), threading.Event()
    extraction = [Turn(tool_calls=[ToolCall("Write", {"file_path": str(path),
                                                      "content": content})]),
                  Turn(text="Saved.")]

    def responder(body):
        if MARKER in json.dumps(body.get("messages", []), ensure_ascii=False):
            entered.set()
            assert release.wait(60), "the test never released the extraction run"
            return extraction.pop(0) if extraction else None
        return Turn(text="Noted.")

    fake_api.responder = responder
    try:
        run(ip, "%%agent\nKeep your answers short, always.")
        assert entered.wait(60), "the extraction run did not start"
        monkeypatch.setattr(memory_command, "EXTRACTION_WAIT_SECONDS", 0)
        error = fails(ip, "%memory extraction wait")
        assert "still runs after 0 s" in error and "%memory extraction wait" in error
        assert not path.exists()
    finally:
        release.set()
    monkeypatch.setattr(memory_command, "EXTRACTION_WAIT_SECONDS", 120)
    status = run(ip, "%memory extraction wait").stdout
    assert "Runs 1" in status and "run 1: saved" in status
    assert path.exists() and fake_api.failures == []
    assert "takes no value" in fails(ip, "%memory extraction wait 3")


@pytest.mark.parametrize("line", ["%memory list --help", "%memory extraction --help"])
def test_the_new_options_are_in_the_help(ip, line):
    text = run(ip, line).stdout
    assert ("--manifest" in text) if "list" in line else ("wait" in text)


def test_redact_is_public_and_hides_every_copy() -> None:
    from jupyter_memory import find_secrets, redact

    key = "sk-ant-api03-FAKE-test-key-q7W2e9R4x8Lm3"
    text = f"ANTHROPIC_API_KEY={key} failed: 401 ({key})"
    assert len(find_secrets(text)) == 2
    assert redact(text) == ("ANTHROPIC_API_KEY=[REDACTED Anthropic API key] failed: 401 "
                            "([REDACTED Anthropic API key])")
    assert redact("nothing secret here") == "nothing secret here"


def test_cost_report_prices_kept_sessions_together(make_ip, project, memdir, fake_api) -> None:
    from jupyter_memory import cost_report, kernel_session
    from jupyter_memory.errors import ConfigError

    ip = make_ip(project, memdir=memdir,
                 config=("Agent.extraction = False", "Agent.session_memory = False"))
    fake_api.script([Turn(text="One."), Turn(text="Two."), Turn(text="Three.")])
    run(ip, "%agent first question")
    first = kernel_session()
    run(ip, "%agent new")
    run(ip, "%agent second question")
    run(ip, "%agent third question")
    second = kernel_session()
    assert second is not first
    assert cost_report().total.calls == 2
    both = cost_report(sessions=[first, second])
    assert [row.kind for row in both.rows] == ["main"] and both.total.calls == 3
    alone = cost_report(sessions=[first])
    assert alone.total.calls == 1
    assert both.total.dollars == pytest.approx(alone.total.dollars + cost_report().total.dollars)
    with pytest.raises(ConfigError, match="got no session"):
        cost_report(sessions=[])
    with pytest.raises(ConfigError, match="not both"):
        cost_report("saved.ipynb", sessions=[first])
