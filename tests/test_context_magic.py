"""``%context --count`` in a real IPython shell: the endpoint's count is what is shown."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from IPython.core.interactiveshell import InteractiveShell
from shell_helpers import run

from jupyter_memory.magics import load_ipython_extension
from jupyter_memory.magics.state import forget_state
from jupyter_memory.testing.fake_api import Turn, estimate_request_tokens


@pytest.fixture
def ip(shell: InteractiveShell, tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    project = tmp_path / "proj"
    project.mkdir()
    monkeypatch.setenv("JUPYTER_MEMORY_DIR", str(tmp_path / "mem"))
    monkeypatch.chdir(project)
    forget_state(shell)
    load_ipython_extension(shell)
    yield shell
    forget_state(shell)


def test_count_wins_over_the_last_usage_once_a_turn_has_happened(ip, fake_api):
    fake_api.script([Turn(text="There are 3 rows.")])
    run(ip, "%agent How many rows?")
    after_turn = json.loads(run(ip, "%context --json").stdout)
    assert after_turn["source"] == "usage"

    counted = json.loads(run(ip, "%context --count --json").stdout)
    [request] = [r for r in fake_api.requests if r.path == "/v1/messages/count_tokens"]
    assert counted["source"] == "count_tokens"
    assert counted["used"] == estimate_request_tokens(request.body)
    # The rows of each category add up to its total either way (the view shows the rest).
    assert sum(c["tokens"] for c in counted["categories"][:-2]) == counted["used"]
