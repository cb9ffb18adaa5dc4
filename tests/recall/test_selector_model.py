"""The recall selector's model: a Sonnet model by default, as in the reference, and a
smaller one a single setting away (``JUPYTER_MEMORY_SMALL_MODEL``, ``Agent.small_model``)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from IPython.core.interactiveshell import InteractiveShell
from sessions import make_session
from shell_helpers import MakeIp, run

from jupyter_memory.agent.loop import run_turn
from jupyter_memory.agent.session import AgentConfig
from jupyter_memory.context.models import (
    DEFAULT_MODEL,
    DEFAULT_SMALL_MODEL,
    default_small_model,
    model_info,
)
from jupyter_memory.localapi import ToolCall, Turn

SELECTOR = "select_memories"


def test_the_default_is_the_reference_s_choice_a_sonnet_model():
    assert default_small_model({}) == DEFAULT_SMALL_MODEL == "claude-sonnet-5-5"
    assert model_info(DEFAULT_SMALL_MODEL).known
    assert DEFAULT_SMALL_MODEL == DEFAULT_MODEL  # the project's one Sonnet
    # The reference picks its selector's model whatever the main model is.
    assert default_small_model({"JUPYTER_MEMORY_MODEL": "claude-opus-4-8"}) == "claude-sonnet-5-5"
    assert AgentConfig.from_env({}).small_model == "claude-sonnet-5-5"


def test_a_smaller_model_is_one_variable_away():
    env = {"JUPYTER_MEMORY_SMALL_MODEL": "claude-haiku-4-5"}
    assert default_small_model(env) == "claude-haiku-4-5"
    assert AgentConfig.from_env(env).small_model == "claude-haiku-4-5"
    assert AgentConfig.from_env(env).model == DEFAULT_MODEL


def _answer(body: dict[str, Any]) -> Turn:
    """The selector picks nothing; the main model answers."""
    if (body.get("tool_choice") or {}).get("name") == SELECTOR:
        return Turn(tool_calls=[ToolCall(SELECTOR, {"selected_memories": []})])
    return Turn(text="Noted.")


def _selector_models(fake_api: Any) -> list[str]:
    return [r.body["model"] for r in fake_api.requests
            if (r.body.get("tool_choice") or {}).get("name") == SELECTOR]


def test_the_selector_request_goes_to_the_sonnet_model_by_default(fake_api, tmp_path: Path):
    session = make_session(tmp_path / "proj", memdir=tmp_path / "mem", recall_mode="prefetch",
                           wait_for_prefetch=True)
    session.store.create("revenue-in-cents", "sales.revenue is stored in cents", "project",
                         "Cents.")
    fake_api.responder = _answer
    assert run_turn(session, "How is revenue stored?").ok
    assert _selector_models(fake_api) == ["claude-sonnet-5-5"]
    [row] = [r for r in session.cost_ledger.to_json() if r["kind"] == "selector"]
    assert row["model"] == "claude-sonnet-5-5"


@pytest.mark.parametrize("how", ["environment", "config"])
def test_a_notebook_switches_the_selector_to_a_smaller_model(
    how: str, fake_api, shell: InteractiveShell, make_ip: MakeIp,
    monkeypatch: pytest.MonkeyPatch
):
    # Other modules' %config lines stay in the one shared shell: start from the defaults
    # (make_ip puts the shell's settings back afterwards).
    for name in ("model", "small_model"):
        shell.config.Agent.pop(name, None)
    config = ["Agent.recall_mode = 'prefetch'", "Agent.wait_for_prefetch = True"]
    if how == "environment":
        monkeypatch.setenv("JUPYTER_MEMORY_SMALL_MODEL", "claude-haiku-4-5")
    else:
        config.append("Agent.small_model = 'claude-haiku-4-5'")
    ip = make_ip(config=config)
    run(ip, '%%remember -t project -n revenue-in-cents -d "sales.revenue is in cents"\nCents.')
    fake_api.responder = _answer
    run(ip, "%%agent\nHow is revenue stored?")
    assert _selector_models(fake_api) == ["claude-haiku-4-5"]
    assert all(r.body["model"] == "claude-sonnet-5-5" for r in fake_api.requests
               if "tool_choice" not in r.body)
