"""Fixtures of the storage tests (tests/conftest.py has those every folder shares)."""

from __future__ import annotations

from pathlib import Path

import pytest


@pytest.fixture
def env(tmp_path: Path) -> dict[str, str]:
    """An environment of its own, with a fresh HOME and CLAUDE_CONFIG_DIR, for the functions
    that take ``env=`` (where the memdir, settings and trust records are looked up)."""
    home = tmp_path / "home"
    home.mkdir()
    return {"HOME": str(home), "CLAUDE_CONFIG_DIR": str(home / ".claude")}
