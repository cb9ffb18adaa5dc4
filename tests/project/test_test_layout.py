"""The tests' own layout (CONTRIBUTING.md, "Where the tests are"): test modules in folders
that mirror the package, unique module names, and a contributor guide that names every
folder."""

from __future__ import annotations

import re
from collections import Counter
from pathlib import Path

TESTS = Path(__file__).resolve().parents[1]
GUIDE = TESTS.parent / "CONTRIBUTING.md"
FOLDER = re.compile(r"^\| `tests/([\w-]+)/` \|", re.M)


def _test_modules() -> list[Path]:
    return sorted(TESTS.rglob("test_*.py"))


def _folders() -> set[str]:
    return {p.name for p in TESTS.iterdir() if p.is_dir() and not p.name.startswith((".", "__"))}


def test_module_names_are_unique() -> None:
    """pytest imports a module of a folder without ``__init__.py`` by its basename."""
    counts = Counter(path.name for path in _test_modules() if "__init__.py" not in
                     {p.name for p in path.parent.iterdir()})
    twice = sorted(name for name, n in counts.items() if n > 1)
    assert not twice, f"test modules share a name, rename one: {twice}"


def test_every_test_module_is_in_a_folder() -> None:
    loose = [p.name for p in TESTS.glob("test_*.py")]
    assert not loose, (
        f"{loose} sit directly in tests/: move each into the folder of the package part it "
        "tests (CONTRIBUTING.md, 'Where the tests are')"
    )


def test_the_guide_names_every_folder() -> None:
    named = set(FOLDER.findall(GUIDE.read_text(encoding="utf-8")))
    assert named, "CONTRIBUTING.md has no table of test folders"
    assert named == _folders(), (
        f"CONTRIBUTING.md names {sorted(named - _folders())} that do not exist and misses "
        f"{sorted(_folders() - named)}"
    )
