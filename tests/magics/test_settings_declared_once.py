"""Each agent setting is declared once, in ``AgentConfig``; ``%config Agent`` is built from it."""

from __future__ import annotations

from pathlib import Path

import pytest
from IPython.core.interactiveshell import InteractiveShell
from traitlets import TraitError

from jupyter_memory.agent.session import AgentConfig, user_settings
from jupyter_memory.magics import load_ipython_extension
from jupyter_memory.magics.agent import Agent
from jupyter_memory.magics.state import forget_state

pytestmark = pytest.mark.kernel

DOCS = Path(__file__).resolve().parents[2] / "docs" / "configuration.md"


def test_every_setting_is_a_trait_with_the_same_default_and_help() -> None:
    traits = Agent.class_traits(config=True)
    for setting in user_settings():
        trait = traits[setting.name]
        assert trait.help == setting.metadata["help"]
        if setting.name not in ("model", "small_model"):  # defaults from the environment
            assert trait.default_value == setting.default, setting.name
        if "choices" in setting.metadata:
            assert tuple(trait.values) == setting.metadata["choices"]
            with pytest.raises(TraitError):
                trait.validate(None, "not-a-choice")


def test_every_setting_and_front_end_trait_is_documented() -> None:
    text = DOCS.read_text(encoding="utf-8")
    for name in Agent.class_traits(config=True):
        assert f"| `{name}` |" in text, f"docs/configuration.md has no row for Agent.{name}"


def test_config_flows_into_the_core_config(shell: InteractiveShell, tmp_path: Path,
                                           monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    saved = dict(shell.config.get("Agent", {}))  # %config writes into the shared shell's config
    forget_state(shell)
    load_ipython_extension(shell)
    try:
        shell.run_line_magic("config", "Agent.recall_mode = 'prefetch'")
        shell.run_line_magic("config", "Agent.agents_md = True")
        shell.run_line_magic("config", "Agent.microcompact_idle_minutes = 5.0")
        config = shell.magics_manager.registry["Agent"].agent_config()
        assert isinstance(config, AgentConfig)
        assert config.recall_mode == "prefetch"
        assert config.microcompact_idle_minutes == 5.0
        assert "AGENTS.md" in config.instruction_names
    finally:
        shell.config.Agent = type(shell.config)(saved)
        forget_state(shell)
