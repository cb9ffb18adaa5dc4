"""docs/cheatsheet.md: each number whose source is a constant of the code says what the code
holds, and each number of the capstone what its committed data gives, so the page cannot fall
behind a change of either."""

from __future__ import annotations

import functools
import importlib
import json
import re
from pathlib import Path

import nbformat

from jupyter_memory import grade_recall

ROOT = Path(__file__).resolve().parents[2]
PAGE = ROOT / "docs" / "cheatsheet.md"
CAPSTONE = ROOT / "examples" / "exercises" / "06-capstone-rewrite-descriptions"
#: ``| what | number | source |`` where the source names ``path/to/module.py: NAME``.
SOURCE = re.compile(r"`([\w/]+)\.py: ([A-Za-z_][\w.]*)`")
#: ... or ``capstone: NAME``, a number of the capstone's committed data (:func:`capstone`).
CAPSTONE_SOURCE = re.compile(r"`capstone: (\w+)`")
NUMBER = re.compile(r"\d[\d,]*(?:\.\d+)?")


def code_rows(text: str) -> list[tuple[str, str, str, str]]:
    """(what, number as written, module path, name) of each table row citing a constant."""
    rows = []
    for line in text.splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) != 3:
            continue
        what, number, source = cells
        for module, name in SOURCE.findall(source):
            rows.append((what, number, module, name))
    return rows


def constant(module: str, name: str) -> object:
    value: object = importlib.import_module("jupyter_memory." + module.replace("/", "."))
    for part in name.split("."):
        value = getattr(value, part)
    return value


def mismatches(text: str) -> list[str]:
    wrong = []
    for what, written, module, name in code_rows(text):
        found = NUMBER.search(written)
        value = constant(module, name)
        if found is None or float(found.group().replace(",", "")) != float(value):  # type: ignore[arg-type]
            wrong.append(f"{what}: the page says {written!r}, {module}.py {name} is {value!r}")
    return wrong


@functools.cache
def capstone() -> dict[str, float]:
    """The capstone's numbers, computed from its committed memories and questions (the
    baseline graded as the exercise grades it) and the pass rule its notebook applies."""
    questions = json.loads((CAPSTONE / "questions.json").read_text(encoding="utf-8"))[
        "questions"]
    baseline = grade_recall(CAPSTONE / "memories", questions)
    notebook = nbformat.read(str(CAPSTONE.with_suffix(".ipynb")), as_version=4)
    gains = {float(g) for cell in notebook.cells if cell.cell_type == "code"
             for g in re.findall(r"recall_gain=([\d.]+)", cell.source)}
    assert len(gains) == 1, f"the exercise grades with one recall gain, not {gains}"
    return {
        "memories": len({p.name for p in (CAPSTONE / "memories").glob("*.md")} - {"MEMORY.md"}),
        "questions": len(questions),
        "off_topic": sum(1 for q in questions if not q["expected"]),
        "recall": baseline.recall,
        "precision": baseline.precision,
        "hit": baseline.hit,
        "recall_gain": gains.pop(),
    }


def capstone_rows(text: str) -> list[tuple[str, str, str]]:
    """(what, number as written, name) of each table row citing the capstone's data."""
    rows = []
    for line in text.splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) == 3:
            rows.extend((cells[0], cells[1], name) for name in CAPSTONE_SOURCE.findall(cells[2]))
    return rows


def capstone_mismatches(text: str, numbers: dict[str, float]) -> list[str]:
    """A written number is right when it is the computed one rounded to the decimals written."""
    wrong = []
    for what, written, name in capstone_rows(text):
        found = NUMBER.search(written)
        if name not in numbers:
            wrong.append(f"{what}: the capstone has no number {name!r} ({sorted(numbers)})")
            continue
        value = numbers[name]
        if found is None:
            wrong.append(f"{what}: the page says {written!r}, the capstone gives {value!r}")
            continue
        digits = found.group().replace(",", "")
        decimals = len(digits.split(".")[1]) if "." in digits else 0
        if float(digits) != round(value, decimals):
            wrong.append(f"{what}: the page says {written!r}, the capstone gives {value!r}")
    return wrong


def test_every_code_constant_on_the_page_matches_the_code() -> None:
    text = PAGE.read_text(encoding="utf-8")
    assert len(code_rows(text)) >= 40, "the page cites the code's constants"
    assert mismatches(text) == []


def test_a_changed_number_is_reported() -> None:
    page = ("| what | number | source |\n|---|---|---|\n"
            "| index lines | 201 | `memdir/index.py: MAX_LINES` |\n"
            "| turns | 25 | `agent/config.py: AgentConfig.max_turns` |\n"
            "| write price | 1.5 | `context/pricing.py: CACHE_WRITE_FACTOR` |\n")
    assert mismatches(page) == [
        "index lines: the page says '201', memdir/index.py MAX_LINES is 200",
        "write price: the page says '1.5', context/pricing.py CACHE_WRITE_FACTOR is 1.25"]


def test_every_capstone_number_on_the_page_matches_its_committed_data() -> None:
    text = PAGE.read_text(encoding="utf-8")
    numbers = capstone()
    assert {name for _, _, name in capstone_rows(text)} == set(numbers), \
        "the page gives every number of the capstone"
    assert capstone_mismatches(text, numbers) == []


def test_a_changed_capstone_number_is_reported() -> None:
    numbers = {"recall": 0.70833, "questions": 40.0}
    page = ("| what | number | source |\n|---|---|---|\n"
            "| baseline recall@5 | 0.708 | `capstone: recall` |\n"
            "| baseline recall@5, fewer decimals | 0.71 | `capstone: recall` |\n"
            "| baseline recall@5, wrong | 0.709 | `capstone: recall` |\n"
            "| questions | 41 | `capstone: questions` |\n"
            "| unknown | 3 | `capstone: nothing` |\n")
    assert capstone_mismatches(page, numbers) == [
        "baseline recall@5, wrong: the page says '0.709', the capstone gives 0.70833",
        "questions: the page says '41', the capstone gives 40.0",
        "unknown: the capstone has no number 'nothing' (['questions', 'recall'])"]
