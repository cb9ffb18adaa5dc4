"""docs/cheatsheet.md: each number whose source is a constant of the code says what the code
holds, so the page cannot fall behind a change of the constant."""

from __future__ import annotations

import importlib
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PAGE = ROOT / "docs" / "cheatsheet.md"
#: ``| what | number | source |`` where the source names ``path/to/module.py: NAME``.
SOURCE = re.compile(r"`([\w/]+)\.py: ([A-Za-z_][\w.]*)`")
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
