"""Fixtures shared by the hardening tests: a project, its memdir, and the command line."""

from __future__ import annotations

import io
from collections.abc import Callable
from pathlib import Path

import pytest

from jupyter_memory.cli import app as cli

Cli = Callable[..., tuple[int, str, str]]


@pytest.fixture
def project(tmp_path: Path) -> Path:
    root = tmp_path / "proj"
    root.mkdir()
    (root / "analysis.py").write_text("revenue = load('sales')\n", encoding="utf-8")
    return root


@pytest.fixture
def memdir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The memdir every front end uses in this test (``JUPYTER_MEMORY_DIR``)."""
    path = tmp_path / "mem"
    path.mkdir()
    monkeypatch.setenv("JUPYTER_MEMORY_DIR", str(path))
    return path


@pytest.fixture
def outside(tmp_path: Path) -> Path:
    """A folder outside both the project and the memdir, holding a file worth stealing."""
    path = tmp_path / "outside"
    path.mkdir()
    (path / "secret.md").write_text("---\nname: stolen\n---\nTOP SECRET\n", encoding="utf-8")
    return path


@pytest.fixture
def run_cli(project: Path) -> Cli:
    """Run ``jupyter-memory`` in-process; returns (exit code, stdout, stderr)."""

    def run(*argv: str, stdin: str = "") -> tuple[int, str, str]:
        out, err = io.StringIO(), io.StringIO()
        code = cli.main(
            [*argv, "--project", str(project)], stdin=io.StringIO(stdin), stdout=out, stderr=err
        )
        assert "Traceback" not in err.getvalue(), err.getvalue()
        return code, out.getvalue(), err.getvalue()

    return run
