"""The exercises in ``examples/exercises/`` run offline in sandbox mode and their checks pass.

Each exercise notebook is copied into a fresh folder and executed headless with nbclient,
as ``tests/examples/test_examples.py`` runs the examples (the ``jupyter_memory.demo`` helpers): no
model variable at all, so every model call must be answered by the sandbox the notebook
switches on in its first cells. A failing cell fails the test with the cell's error; a
check cell (tagged ``check``) fails when the mechanism it asserts no longer holds, whatever
the learner predicted.

Predictions are compared, never asserted: a second run of one exercise with every
prediction replaced by a wrong one (and its first prediction by right ones written loosely)
must print each mismatch, and each right answer, and still pass its checks.

The notebooks run two at a time (the machines have two cores), each from a worker process
started with ``spawn`` (jupyter_client's lazily resolved traits are not safe to set up from
two threads, and forking a multi-threaded pytest-xdist worker is not safe either). Most of
each run is the kernel importing the SDK and jupyter-memory, not the exercise.
"""

from __future__ import annotations

import json
import multiprocessing
import shutil
from collections.abc import Callable
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path
from typing import Any

import nbformat
import pytest

from jupyter_memory.demo import execute_notebook, kernel_env, prepare_work, scratch_folder

pytestmark = pytest.mark.kernel

EXERCISES = Path(__file__).resolve().parents[2] / "examples" / "exercises"
NOTEBOOKS = sorted(EXERCISES.glob("[0-9][0-9]-*.ipynb"))
WORKERS = 2
PASSED = "Mechanism checks passed."
#: The capstone, graded by grade_recall (tests/examples/test_capstone.py checks its grade).
CAPSTONE = "06-capstone-rewrite-descriptions"

#: The exercise run with edited predictions, and its right answers for the first prediction
#: cell, written the loose way a learner might (a number as text, another case).
EDITED = "01-overflow-the-index"
RIGHT_FIRST = {"lines_seen": "200", "limit_hit": "Lines"}
#: Appended to a prediction cell: every prediction dict it defines becomes wrong.
WRONG = """
for _name in [n for n in list(globals()) if n.startswith("PREDICTION")]:
    globals()[_name] = {k: "surely not this" for k in globals()[_name]}
"""


def _tagged(nb: Any, tag: str) -> list[Any]:
    return [c for c in nb.cells if tag in (c.get("metadata", {}).get("tags") or [])]


def _text(cell: Any) -> str:
    return "".join(str(o.get("text", "")) for o in cell.get("outputs", [])
                   if o.get("output_type") == "stream")


def _edit_predictions(path: Path) -> None:
    nb = nbformat.read(str(path), as_version=4)
    cells = _tagged(nb, "prediction")
    for cell in cells:
        cell.source += "\n" + WRONG
    cells[0].source += f"\nPREDICTION = {RIGHT_FIRST!r}\n"
    nbformat.write(nb, str(path))


def _run(notebook: Path, edit: Callable[[Path], None] | None = None) -> Any:
    """Execute a copy of ``notebook`` in a fresh folder; the executed notebook, or the
    message of the exception that stopped it (nbclient's CellExecutionError names the
    cell), as text because the result travels back from a worker process."""
    scratch = scratch_folder()
    work = scratch / notebook.stem
    try:
        copy = prepare_work(notebook, work)
        if edit is not None:
            edit(copy)
        return execute_notebook(copy, env=kernel_env(work / "home"), timeout=300, save=False)
    except Exception as exc:  # reported by the test that reads this run
        return f"{type(exc).__name__}: {exc}"
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


@pytest.fixture(scope="module")
def runs() -> dict[str, Any]:
    """Every exercise as committed, and the edited run, two kernels at a time."""
    jobs: dict[str, tuple[Path, Callable[[Path], None] | None]] = {
        nb.stem: (nb, None) for nb in NOTEBOOKS}
    jobs["edited"] = (EXERCISES / f"{EDITED}.ipynb", _edit_predictions)
    # The edited run first: the slowest pair then finishes together.
    order = ["edited", *(k for k in jobs if k != "edited")]
    with ProcessPoolExecutor(WORKERS, mp_context=multiprocessing.get_context("spawn")) as pool:
        futures = {key: pool.submit(_run, *jobs[key]) for key in order}
        return {key: future.result() for key, future in futures.items()}


def _executed(runs: dict[str, Any], key: str) -> Any:
    result = runs[key]
    if isinstance(result, str):
        pytest.fail(f"{key} failed:\n{result}")
    return result


# --------------------------------------------------------------------------- the notebooks


def test_six_exercises_each_with_predictions_checks_and_no_outputs() -> None:
    assert [nb.stem[:2] for nb in NOTEBOOKS] == ["01", "02", "03", "04", "05", "06"]
    helpers = set()
    comparers = set()
    for path in NOTEBOOKS:
        nb = nbformat.read(str(path), as_version=4)
        code = [c for c in nb.cells if c.cell_type == "code"]
        assert all(not c.outputs and c.execution_count is None for c in code), \
            f"{path.name} is committed with outputs (see examples/exercises/README.md)"
        predictions, checks = _tagged(nb, "prediction"), _tagged(nb, "check")
        assert predictions and len(checks) == len(predictions), path.name
        for cell in predictions:  # a learner starts with no prediction written
            assert "PREDICTION" in cell.source and "None" in cell.source
        for cell in checks:
            assert "compare(PREDICTION" in cell.source and "assert " in cell.source
        # The memory folder is chosen before the extension loads; the sandbox comes next.
        setup = "\n".join(c.source for c in code[:3])
        assert setup.index("JUPYTER_MEMORY_DIR") < setup.index("%load_ext jupyter_memory")
        assert f'RUN = os.path.abspath(".run/{path.stem}")' in setup
        assert code[2].source.count("%sandbox echo") == 1
        assert "recall_selector = 'offline'" in code[2].source
        # The capstone reads its request through the public model_calls(); 01-05 still
        # share one helper cell, and every exercise the same compare().
        if path.stem != CAPSTONE:
            helpers.add(code[3].source)
        comparers.add(code[3].source[code[3].source.index("def compare("):])
        assert code[-1].source == "%context --cost"
    assert len(helpers) == 1, "the helper cell differs between exercises"
    assert len(comparers) == 1, "compare() differs between exercises"


def test_the_readme_describes_every_exercise() -> None:
    readme = (EXERCISES / "README.md").read_text(encoding="utf-8")
    for path in NOTEBOOKS:
        assert f"]({path.name})" in readme, f"README.md does not link {path.name}"


@pytest.mark.parametrize("notebook", NOTEBOOKS, ids=[nb.stem for nb in NOTEBOOKS])
def test_exercise_runs_offline_and_its_checks_pass(notebook: Path, runs: dict[str, Any]) -> None:
    nb = _executed(runs, notebook.stem)
    for cell in nb.cells:
        for output in cell.get("outputs", []):
            assert output.get("output_type") != "error", (notebook.name, cell.source[:80])
            text = str(output.get("text", ""))
            assert "No model is connected" not in text and "Traceback" not in text, text
    checks = _tagged(nb, "check")
    for cell in checks:
        printed = _text(cell)
        assert PASSED in printed, f"{notebook.name}: a check cell did not finish:\n{printed}"
        assert "no prediction written" in printed and "MISMATCH" not in printed, printed
    assert "(simulated)" in _text(nb.cells[-1]), "the cost report labels sandbox calls simulated"


def test_a_wrong_prediction_is_reported_not_raised(runs: dict[str, Any]) -> None:
    nb = _executed(runs, "edited")
    first, second = (_text(c) for c in _tagged(nb, "check"))
    assert PASSED in first and PASSED in second
    assert "lines_seen: you predicted '200'. Right." in first
    assert "limit_hit: you predicted 'Lines'. Right." in first
    assert ("limit_hit: MISMATCH. You predicted 'surely not this'; it was 'characters'."
            in second), second
    assert "lines_seen: MISMATCH. You predicted 'surely not this'; it was 125." in second
    assert "Traceback" not in json.dumps([c.get("outputs") for c in nb.cells])
