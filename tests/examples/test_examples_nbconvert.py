"""Every example replays under plain ``jupyter nbconvert --execute``, elsewhere (issues 7, 13, 15).

Apart from ``test_examples.py`` so that the two kinds of run share the two workers of
``make test`` (pytest-xdist hands out whole files).
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import nbformat
import pytest

pytestmark = pytest.mark.kernel

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
NOTEBOOKS = sorted(EXAMPLES.glob("[0-9][0-9]-*.ipynb"))


#: Variables a reader's shell may have that must not decide how an example runs.
_READER_ONLY_ENV = ("ANTHROPIC_", "JUPYTER_MEMORY_", "CLAUDE_", "JPY_SESSION_NAME")


def _package_parts_changed(warning: str) -> bool:
    """A replay warning naming anything but the context blocks."""
    named = warning.split(" in ", 1)[1].split(" (first seen at exchange")[0]
    # Each part is "the <part> (<recorded and current excerpts>)"; the excerpts are quoted
    # text that may hold "; " themselves, so split only outside parentheses.
    top, depth = [], 0
    for ch in named:
        depth += (ch == "(") - (ch == ")")
        top.append(ch if depth == 0 and ch != ")" else "")
    return any(not part.strip().startswith("the context blocks")
               for part in "".join(top).split("; "))


def _nbconvert() -> list[str]:
    jupyter = Path(sys.executable).with_name("jupyter")
    return [str(jupyter)] if jupyter.is_file() else [sys.executable, "-m", "jupyter"]


@pytest.mark.examples
@pytest.mark.parametrize("notebook", NOTEBOOKS, ids=[nb.stem for nb in NOTEBOOKS])
def test_example_runs_under_plain_nbconvert_in_another_folder(notebook: Path, tmp_path: Path) -> None:
    """Issue 7 and 15: ``jupyter nbconvert --to notebook --execute`` on a copy of examples/
    elsewhere, with no model and nothing of ours in the environment, replays every example
    without an error and without a replay warning (the kernel does not know its notebook's
    path here, and the requests must not depend on that)."""
    copy = tmp_path / "examples"
    shutil.copytree(EXAMPLES, copy, ignore=shutil.ignore_patterns("html", "demo-home", ".ipynb_checkpoints"))
    env = {k: v for k, v in os.environ.items() if not k.startswith(_READER_ONLY_ENV)}
    out = tmp_path / "out"
    done = subprocess.run(
        [*_nbconvert(), "nbconvert", "--to", "notebook", "--execute",
         "--ExecutePreprocessor.kernel_name=python3", "--ExecutePreprocessor.timeout=300",
         "--output-dir", str(out), notebook.name],
        cwd=copy, env=env, capture_output=True, text=True, timeout=900, check=False,
    )
    assert done.returncode == 0, f"nbconvert failed on {notebook.name}:\n{done.stderr[-4000:]}"
    executed = nbformat.read(str(out / notebook.name), as_version=4)
    problems = []
    for index, cell in enumerate(executed.cells):
        for output in cell.get("outputs", []):
            meant_to_fail = "raises-exception" in cell.get("metadata", {}).get("tags", [])
            if output.get("output_type") == "error" and not meant_to_fail:
                problems.append(f"cell {index}: {output.get('ename')}: {output.get('evalue')}")
            text = str(output.get("text", ""))
            # What the cells showed may depend on the folder (a token count of requests
            # that hold its path), so a warning about the context blocks is allowed; the
            # request the package builds (system prompt, tools, settings) must not change.
            if output.get("name") == "stderr" and "Replay" in text and (
                    "Replay warning" not in text or _package_parts_changed(text)):
                problems.append(f"cell {index}: {text.strip()}")
            if output.get("data") == {"text/plain": ""}:
                problems.append(f"cell {index}: an empty output")
    assert not problems, "\n".join(problems)
