"""Provenance is one switch away from the reference's shape on every front end (issue 28.6).

``%config Agent.provenance = False`` covers a notebook's session; the command line and the
lab panel run outside any kernel, so ``JUPYTER_MEMORY_PROVENANCE=off`` switches all of them
(and is the default of ``Agent.provenance``). With it off, a rewrite of a memory in the
reference's shape changes only the lines it meant to change.
"""

from __future__ import annotations

import io
import logging
import shutil
from pathlib import Path

import pytest
from IPython.core.interactiveshell import InteractiveShell
from shell_helpers import MakeIp, run

from jupyter_memory.cli import app as cli
from jupyter_memory.memdir.location import locate
from jupyter_memory.memdir.record import PROVENANCE_ENV, provenance_from_env
from jupyter_memory.memdir.team import open_store

SHAPES = Path(__file__).resolve().parents[1] / "fixtures" / "memdir-reference-shapes"
NAME = "reference_warehouse_schema.md"
DESCRIPTION = "Tabellen im Lager-Schema — welche sind Ansichten und welche echte Tabellen"


def cli_run(*argv: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    code = cli.main(list(argv), stdin=io.StringIO(""), stdout=out, stderr=err)
    return code, out.getvalue(), err.getvalue()


def update_from_the_command_line(memdir: Path, project: Path) -> str:
    memdir.mkdir(exist_ok=True)
    for name in ("MEMORY.md", NAME):
        shutil.copyfile(SHAPES / name, memdir / name)
    code, _, err = cli_run("add", "--project", str(project), "--update", "--type", "reference",
                           "--name", "warehouse-schema", "--description", DESCRIPTION,
                           "--body", "`sales_v` ist eine Ansicht.\n")
    assert code == 0, err
    return (memdir / NAME).read_text(encoding="utf-8")


@pytest.mark.parametrize("value", ["0", "off", "False", " no "])
def test_off_values(value: str) -> None:
    assert provenance_from_env({PROVENANCE_ENV: value}) is False


def test_on_by_default_and_an_unknown_value_is_told(caplog: pytest.LogCaptureFixture) -> None:
    assert provenance_from_env({}) is True and provenance_from_env({PROVENANCE_ENV: "on"})
    with caplog.at_level(logging.WARNING, logger="jupyter_memory"):
        assert provenance_from_env({PROVENANCE_ENV: "sometimes"}) is True
    assert "JUPYTER_MEMORY_PROVENANCE='sometimes' is neither on" in caplog.text


def test_the_command_line_keeps_the_reference_shape_when_switched_off(
        memdir: Path, project: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    after = update_from_the_command_line(memdir, project)
    assert "  origin: user\n" in after  # the default: who wrote it is recorded

    monkeypatch.setenv(PROVENANCE_ENV, "off")
    after = update_from_the_command_line(memdir, project)
    [stamp] = [line for line in after.split("\n") if line.startswith("  modified: ")]
    expected = (SHAPES / NAME).read_text(encoding="utf-8").replace(
        "  modified: 2026-11-02T17:45:09.880Z", stamp).replace(
        "`sales_v` ist eine Ansicht; `sales` ist die echte Tabelle.", "`sales_v` ist eine Ansicht.")
    assert after == expected
    assert (memdir / "MEMORY.md").read_bytes() == (SHAPES / "MEMORY.md").read_bytes()


def test_every_store_of_the_command_line_and_the_panel_follows_the_switch(
        memdir: Path, project: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(PROVENANCE_ENV, "0")
    code, _, err = cli_run("add", "--project", str(project), "--scope", "project", "--agent",
                           "reviewer", "--type", "project", "--name", "joins",
                           "--description", "join on order id", "--body", "x")
    assert code == 0, err
    agent_file = project / ".claude" / "agent-memory" / "reviewer" / "project_joins.md"
    assert "origin:" not in agent_file.read_text(encoding="utf-8")
    # the lab panel's store (server/handlers.py) and the team folder's, from the same call
    store = open_store(locate(project))
    assert not store.mark_provenance and not store.team.mark_provenance
    assert open_store(locate(project), {}).mark_provenance


def test_a_notebook_takes_its_default_from_the_switch(make_ip: MakeIp, memdir: Path,
                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(PROVENANCE_ENV, "off")
    ip: InteractiveShell = make_ip()
    assert ip.magics_manager.registry["Agent"].provenance is False
    run(ip, '%%remember --type project --name fy --description "FY starts in April"\nQ1.')
    assert "origin:" not in (memdir / "project_fy.md").read_text(encoding="utf-8")
    run(ip, "%config Agent.provenance = True")  # the notebook's setting wins over the default
    run(ip, '%%remember --type project --name q2 --description "Q2 is July to September"\nQ2.')
    assert "origin: user" in (memdir / "project_q2.md").read_text(encoding="utf-8")
