"""docs/course.md: every notebook has its row of objectives and time, the time is the one
the page's own rule gives, and every notebook is placed in the map of the spec's rows at
cells it has."""

from __future__ import annotations

import math
import re
from pathlib import Path

import nbformat

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = ROOT / "examples"
PAGE = ROOT / "docs" / "course.md"
NOTEBOOKS = sorted(EXAMPLES.glob("[0-9][0-9]*-*.ipynb"))

#: The page's rule: prose at 150 words a minute, 45 seconds a code cell, rounded up to 5.
WORDS_PER_MINUTE = 150
MINUTES_PER_CODE_CELL = 0.75


def number_of(notebook: Path) -> str:
    """The row a notebook belongs to: ``06`` for both ``06a`` and ``06b``."""
    return notebook.name[:2]


def minutes(cells: list[nbformat.NotebookNode]) -> int:
    words = sum(len(c.source.split()) for c in cells if c.cell_type == "markdown")
    code = sum(1 for c in cells if c.cell_type == "code")
    return 5 * math.ceil((words / WORDS_PER_MINUTE + code * MINUTES_PER_CODE_CELL) / 5)


def expected_times() -> dict[str, int]:
    """Each row's time, computed from the committed notebooks (a split notebook's parts
    together)."""
    cells: dict[str, list[nbformat.NotebookNode]] = {}
    for notebook in NOTEBOOKS:
        cells.setdefault(number_of(notebook), []).extend(
            nbformat.read(str(notebook), as_version=4).cells)
    return {number: minutes(found) for number, found in cells.items()}


def table(text: str, header: str) -> list[list[str]]:
    """The rows of the table whose header line starts with ``header``."""
    lines = text.splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith(header))
    rows = []
    for line in lines[start + 2:]:
        if not line.startswith("|"):
            break
        rows.append([cell.strip() for cell in line.strip().strip("|").split("|")])
    return rows


def written_times(text: str) -> dict[str, str]:
    return {row[0]: row[1] for row in table(text, "| # | time | you can |")}


#: "12 cells 37–47", "06a cell 15", "01 cells 26, 29–30": a notebook and cell numbers.
PLACE = re.compile(r"^(\d\d[ab]?) cells? ([\d–, ]+)")


def places(text: str) -> list[tuple[str, list[int]]]:
    """(notebook, cell numbers) for each place the spec map names, notes in brackets
    left out."""
    found = []
    for row in table(text, "| reference | mechanism |"):
        where = row[2]
        while re.search(r"\([^()]*\)", where):  # inner brackets first
            where = re.sub(r"\([^()]*\)", "", where)
        for part in where.split(";"):
            for piece in re.split(r",\s(?=\d\d[ab]? cells? )", part.strip()):
                match = PLACE.match(piece.strip())
                if match is None:
                    continue
                numbers = [int(n) for n in re.findall(r"\d+", match.group(2))]
                found.append((match.group(1), numbers))
    return found


def test_every_notebook_has_its_time_and_objectives() -> None:
    text = PAGE.read_text(encoding="utf-8")
    written = written_times(text)
    expected = expected_times()
    assert set(written) == set(expected), "one row per notebook number, no other"
    wrong = [f"{number}: the page says {written[number]!r}, the rule gives {minutes} min"
             for number, minutes in sorted(expected.items())
             if written[number] != f"{minutes} min"]
    assert wrong == []


def test_every_notebook_is_placed_in_the_spec_map_at_cells_it_has() -> None:
    text = PAGE.read_text(encoding="utf-8")
    cells = {nb.name.split("-", 1)[0]: len(nbformat.read(str(nb), as_version=4).cells)
             for nb in NOTEBOOKS}
    named = places(text)
    assert sorted(set(cells) - {notebook for notebook, _ in named}) == [], \
        "notebooks the spec map never places"
    beyond = [f"{notebook} cell {n} (it has {cells[notebook]})" for notebook, numbers in named
              for n in numbers if not 1 <= n <= cells[notebook]]
    assert beyond == []


def test_a_wrong_time_and_a_cell_past_the_end_are_found() -> None:
    page = ("| # | time | you can |\n|---|---|---|\n| 01 | 5 min | x |\n\n"
            "| reference | mechanism | where a learner sees it | how much |\n|---|---|---|---|\n"
            "| §1 | m | 12 cells 3–4 (note 99), 40; 14 cell 7, 06a cells 2, 5 | seen |\n")
    assert written_times(page) == {"01": "5 min"}
    assert places(page) == [("12", [3, 4, 40]), ("14", [7]), ("06a", [2, 5])]
    markdown = nbformat.v4.new_markdown_cell(" ".join(["word"] * 300))
    code = nbformat.v4.new_code_cell("x = 1")
    assert minutes([markdown, code]) == 5       # 2 + 0.75 minutes
    assert minutes([markdown] * 3 + [code]) == 10  # 6.75 minutes
