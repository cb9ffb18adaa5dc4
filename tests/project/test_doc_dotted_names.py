"""Every dotted name of the package the documentation gives in code (``jupyter_memory.x.y``,
``python -m jupyter_memory.localapi``) names a module or a name in one, so a module split or
a rename cannot leave a page pointing at a path that no longer exists (docs/architecture.md
has its own, finer check: tests/project/test_architecture_doc.py)."""

from __future__ import annotations

import importlib
import re
import warnings
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
PAGES = sorted([*(REPO / "docs").glob("*.md"), REPO / "README.md", REPO / "CONTRIBUTING.md"])
INLINE = re.compile(r"`([^`\n]+)`")
DOTTED = re.compile(r"\bjupyter_memory(?:\.[A-Za-z_]\w*)+")
#: A file named after the package (``jupyter_server_config.d/jupyter_memory.json``).
FILE_SUFFIXES = {"json", "md", "log", "ipynb", "yml", "yaml", "toml", "py", "txt"}


def _names() -> list[tuple[str, str]]:
    found = set()
    for page in PAGES:
        for n, line in enumerate(page.read_text(encoding="utf-8").splitlines(), 1):
            for code in INLINE.findall(line):
                for name in DOTTED.findall(code):
                    if name.rsplit(".", 1)[-1] not in FILE_SUFFIXES:
                        found.add((name, f"{page.relative_to(REPO)}:{n}"))
    return sorted(found)


def _problem(name: str) -> str | None:
    """None when ``name`` is a module or a name reachable from its longest module prefix."""
    parts = name.split(".")
    for cut in range(len(parts), 0, -1):
        try:
            with warnings.catch_warnings():  # the old ``testing`` paths warn, as they should
                warnings.simplefilter("ignore", DeprecationWarning)
                obj = importlib.import_module(".".join(parts[:cut]))
        except ImportError:
            continue
        for part in parts[cut:]:
            if not hasattr(obj, part):
                return f"{'.'.join(parts[:cut])} has no {part!r}"
            obj = getattr(obj, part)
        return None
    return "no such module"


def test_the_pages_name_the_package_in_code() -> None:
    assert len(_names()) > 20, "the pattern no longer finds the names the pages give"


@pytest.mark.parametrize("name, where", _names(), ids=[f"{w} {n}" for n, w in _names()])
def test_every_dotted_name_exists(name: str, where: str) -> None:
    assert _problem(name) is None, f"{where}: `{name}`: {_problem(name)}"


@pytest.mark.parametrize("name, expected", [
    ("jupyter_memory.transcript.retention.cleanup_old_transcripts", None),
    ("jupyter_memory.transcript.log.cleanup_old_transcripts", "has no 'log'"),
    ("jupyter_memory.nowhere", "has no 'nowhere'"),
    ("jupyter_memory.transcript.retention.cleanup", "has no 'cleanup'"),
])
def test_a_moved_name_is_found(name: str, expected: str | None) -> None:
    problem = _problem(name)
    assert problem == expected if expected is None else expected in (problem or "")
