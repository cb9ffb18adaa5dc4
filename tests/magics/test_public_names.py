"""The names ``from jupyter_memory import ...`` gives a notebook cell (docs/python-api.md)."""

from __future__ import annotations

import subprocess
import sys

from shell_helpers import run

import jupyter_memory
from jupyter_memory.localapi import Turn

QUIET = ("Agent.extraction = False", "Agent.session_memory = False")


def test_importing_the_package_stays_light() -> None:
    code = ("import sys, jupyter_memory; print(sorted(m for m in sys.modules "
            "if m.startswith(('jupyter_memory.', 'IPython', 'anthropic'))))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True).stdout.strip()
    assert out == "['jupyter_memory._version', 'jupyter_memory.lazy']"  # two small modules


def test_every_public_name_resolves_and_is_documented() -> None:
    from pathlib import Path

    doc = (Path(__file__).resolve().parents[2] / "docs" / "python-api.md").read_text()
    assert set(jupyter_memory.PUBLIC) <= set(jupyter_memory.__all__)
    for name in jupyter_memory.PUBLIC:
        assert callable(getattr(jupyter_memory, name))
        assert f"`{name}(" in doc, f"{name} is not in docs/python-api.md"


def test_the_kernel_names_read_this_kernels_session(make_ip, project, memdir, fake_api) -> None:
    ip = make_ip(project, memdir=memdir, config=QUIET)
    fake_api.script([Turn(text="Hello.")])
    run(ip, "%agent hi")
    from jupyter_memory import cost_report, explain_recall, kernel_session, model_calls

    session = kernel_session()
    assert session.last_record is not None and session.last_record["answer"] == "Hello."
    [call] = model_calls().of_turn(1)
    assert call.kind == "main" and call.body == {
        k: v for k, v in fake_api.requests[0].body.items() if k != "stream"}
    report = cost_report()
    assert [row.kind for row in report.rows] == ["main"] and report.total.calls == 1
    assert isinstance(explain_recall(), list)
