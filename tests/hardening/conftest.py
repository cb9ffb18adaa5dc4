"""Fixtures shared by the hardening tests: what an attack aims at (``project`` and ``memdir``
as in tests/conftest.py, with a file in the project and the memdir created), a folder outside
both, and the command line."""

from __future__ import annotations

import io
from collections.abc import Callable
from pathlib import Path

import pytest

from jupyter_memory.cli import app as cli

Cli = Callable[..., tuple[int, str, str]]


@pytest.fixture
def project(project: Path) -> Path:
    """The shared ``project`` with a script in it: a file an attack might read or overwrite."""
    (project / "analysis.py").write_text("revenue = load('sales')\n", encoding="utf-8")
    return project


@pytest.fixture
def memdir(memdir: Path) -> Path:
    """The shared ``memdir`` (``JUPYTER_MEMORY_DIR``), created: attacks plant files in it."""
    memdir.mkdir()
    return memdir


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
