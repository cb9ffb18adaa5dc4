"""No course cell reaches into the package's modules: what a learner needs is a magic, a
command, or a name ``from jupyter_memory import ...`` gives (docs/python-api.md)."""

from __future__ import annotations

import ast
import json
from pathlib import Path

import jupyter_memory

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"


def _code(source: str) -> str:
    """A cell's Python: a magic or shell line becomes ``pass`` at its indentation (IPython
    runs an indented magic inside a block too); a ``%%`` cell has no Python."""
    if source.lstrip().startswith("%%"):
        return ""
    return "\n".join(line[:len(line) - len(line.lstrip())] + "pass"
                     if line.lstrip().startswith(("%", "!")) else line
                     for line in source.split("\n"))


def submodule_imports(source: str) -> list[str]:
    """Every import in ``source`` of a module inside the package, or of a name the
    package's top level does not export."""
    found = []
    for node in ast.walk(ast.parse(_code(source))):
        if isinstance(node, ast.ImportFrom) and node.module:
            if node.module.startswith("jupyter_memory."):
                found.append(node.module)
            elif node.module == "jupyter_memory":
                found += [f"jupyter_memory.{a.name}" for a in node.names
                          if a.name not in jupyter_memory.__all__]
        elif isinstance(node, ast.Import):
            found += [a.name for a in node.names if a.name.startswith("jupyter_memory.")]
    return found


def test_the_check_tells_public_names_from_submodules() -> None:
    assert submodule_imports("from jupyter_memory import model_calls, find_secrets") == []
    assert submodule_imports("%load_ext jupyter_memory\nx = 1") == []
    assert submodule_imports("from jupyter_memory.magics.state import state_for") == [
        "jupyter_memory.magics.state"]
    assert submodule_imports("from jupyter_memory import recall") == ["jupyter_memory.recall"]
    assert submodule_imports("import jupyter_memory.memdir.guard as g") == [
        "jupyter_memory.memdir.guard"]


def _offending(paths: list[Path]) -> list[str]:
    """``notebook cell N: module`` for every cell of ``paths`` that imports a submodule."""
    offending = []
    for path in paths:
        cells = json.loads(path.read_text(encoding="utf-8"))["cells"]
        for number, cell in enumerate(cells, 1):
            if cell["cell_type"] != "code":
                continue
            source = "".join(cell["source"])
            offending += [f"{path.relative_to(EXAMPLES)} cell {number}: {name}"
                          for name in submodule_imports(source)]
    return offending


def _notebooks(folder: Path) -> list[Path]:
    return sorted(p for p in folder.rglob("*.ipynb")
                  if ".ipynb_checkpoints" not in p.parts and ".run" not in p.parts)


def test_the_check_reads_an_indented_magic_inside_a_block() -> None:
    code = 'if x:\n    %agent record $R\nelse:\n    from jupyter_memory.recall import offline'
    assert submodule_imports(code) == ["jupyter_memory.recall"]


def test_no_exercise_cell_imports_from_a_submodule() -> None:
    exercises = _notebooks(EXAMPLES / "exercises")
    assert len(exercises) >= 5
    offending = _offending(exercises)
    assert not offending, "\n".join(offending)


def test_no_course_cell_imports_from_a_submodule() -> None:
    notebooks = _notebooks(EXAMPLES)
    assert len(notebooks) >= 15
    offending = _offending(notebooks)
    assert not offending, "\n".join(offending)
