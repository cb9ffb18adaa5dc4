"""docs/architecture.md stays true: every module, package and name it points at exists, and
it names every subpackage of jupyter_memory.

Inline code outside code fences is read as a reference when it starts with a part of the
package: `` `memdir/store.py` `` (a module), `` `recall/` `` (a package), `` `agent/loop.run_turn` ``
and `` `memdir.fsutil.atomic_write` `` (a name in a module, checked by importing it). Paths
starting with a folder of the repository (`` `tests/conftest.py` ``) are checked from its root.
The tree in the first code fence is checked too: each entry on its left is a package or a
module. Anything else in backticks (file names in a memdir, MIME types, `` `~/.claude` ``) is
left alone.
"""

from __future__ import annotations

import importlib
import re
from pathlib import Path

import pytest

import jupyter_memory

PACKAGE = Path(jupyter_memory.__file__).resolve().parent
REPO = PACKAGE.parent
DOC = REPO / "docs" / "architecture.md"
# Folders of the repository a path in the doc may start with (checked from the root).
REPO_FOLDERS = ("jupyter_memory/", "tests/", "docs/", "labextension/", "scripts/",
                "benchmarks/", "examples/")

BARE_MODULE = re.compile(r"^\w+(?:/\w+)*\.py$")
FENCE = re.compile(r"^```.*?^```", re.S | re.M)
INLINE = re.compile(r"`([^`\n]+)`")
# A reference: slash-separated parts, then an optional .py or a trailing slash, then
# optional dotted names (`agent/loop.run_turn`, `memdir.fsutil.memdir_lock(memdir)`).
REFERENCE = re.compile(r"^(?P<path>[A-Za-z_]\w*(?:/\w+)*(?:\.py|/)?)(?P<names>(?:\.\w+)*)(?:\(.*\))?$")


def _top_level() -> set[str]:
    """The names a reference may start with: the package's subpackages and modules."""
    names = {p.name for p in PACKAGE.iterdir() if (p / "__init__.py").is_file()}
    return names | {p.stem for p in PACKAGE.glob("*.py") if not p.name.startswith("__")}


def _subpackages() -> list[str]:
    """Every subpackage, as the doc writes it: ``memdir/``, ``memdir/team/``..."""
    return sorted(
        str(init.parent.relative_to(PACKAGE)) + "/"
        for init in PACKAGE.rglob("__init__.py")
        if init.parent != PACKAGE and "labextension" not in init.parts
    )


def _doc() -> tuple[str, str]:
    """The doc's text outside code fences, and its first fence (the package tree)."""
    text = DOC.read_text(encoding="utf-8")
    fences = FENCE.findall(text)
    return FENCE.sub("", text), fences[0]


def _references() -> list[str]:
    top = _top_level()
    prose, _ = _doc()
    found = []
    for code in INLINE.findall(prose):
        code = code.strip()
        if code.startswith(REPO_FOLDERS) or BARE_MODULE.match(code):
            found.append(code)  # a module file is always named from the package root
            continue
        match = REFERENCE.match(code)
        if match is None:
            continue
        first = re.split(r"[/.]", match["path"], maxsplit=1)[0]
        if first in top and ("/" in code or "." in code):
            found.append(code)
    return sorted(set(found))


def _tree_entries() -> list[str]:
    """The left column of the package tree: `magics/ cli/ server/ demo.py` and so on."""
    _, tree = _doc()
    entries = []
    for line in tree.splitlines()[2:-1]:  # the fence lines and `jupyter_memory/` itself
        left = line[:33].strip()
        entries += left.split()
    return entries


def _module_of(path: str) -> tuple[Path, str]:
    """The file or folder a package-relative path names, and its dotted module name."""
    bare = path.removesuffix(".py").rstrip("/")
    dotted = "jupyter_memory." + bare.replace("/", ".")
    target = PACKAGE / bare
    if path.endswith(".py") or (not path.endswith("/") and not target.is_dir()):
        target = target.with_suffix(".py")
    return target, dotted


def _problem(reference: str) -> str | None:
    """What is wrong with one reference of the doc, or None."""
    if reference.startswith(REPO_FOLDERS):
        return None if (REPO / reference).exists() else f"{reference}: no such path"
    match = REFERENCE.match(reference)
    assert match is not None
    path, names = match["path"], [n for n in match["names"].split(".") if n]
    if "/" not in path and not path.endswith(".py"):
        # Dotted from the package: take the longest prefix that is a module.
        parts = path.split(".") + names
        for cut in range(len(parts), 0, -1):
            candidate = "/".join(parts[:cut])
            if (PACKAGE / candidate).is_dir() or (PACKAGE / f"{candidate}.py").is_file():
                path, names = candidate, parts[cut:]
                break
        else:
            return f"{reference}: no module of the package is named so"
    target, dotted = _module_of(path)
    if path.endswith("/") and not (target / "__init__.py").is_file():
        return f"{reference}: {target.relative_to(REPO)} is not a package"
    if not path.endswith("/") and not target.exists():
        return f"{reference}: neither {target.relative_to(REPO)} nor a package of that name exists"
    if names:
        obj = importlib.import_module(dotted)
        for name in names:
            if not hasattr(obj, name):
                return f"{reference}: {getattr(obj, '__name__', obj)} has no {name!r}"
            obj = getattr(obj, name)
    return None


def test_the_doc_points_at_things() -> None:
    """Guards the checks below against a doc they no longer read."""
    references = _references()
    assert len(references) > 50, references
    assert "memdir/store.py" in references and "agent/loop.run_turn" in references
    assert {"magics/", "memdir/", "localapi/", "errors.py"} <= set(_tree_entries())


@pytest.mark.parametrize("reference", _references())
def test_every_reference_exists(reference: str) -> None:
    problem = _problem(reference)
    assert problem is None, f"docs/architecture.md: {problem}"


def test_every_tree_entry_exists() -> None:
    missing = [entry for entry in _tree_entries() if not _module_of(entry)[0].exists()]
    assert not missing, f"the package tree in docs/architecture.md lists {missing}, which do not exist"


def test_every_subpackage_is_named() -> None:
    named = set(_references()) | {
        entry for entry in _tree_entries() if entry.endswith("/")
    }
    missing = [package for package in _subpackages() if package not in named]
    assert not missing, (
        f"docs/architecture.md never names {missing}: say what each holds, as `package/`"
    )


@pytest.mark.parametrize("reference, problem", [
    ("memdir/store.py", None),
    ("agent/loop.run_turn", None),
    ("memdir.fsutil.memdir_lock(memdir)", None),
    ("recall/", None),
    ("recall/selector.py", "recall/selector.py: neither jupyter_memory/recall/selector.py "
                           "nor a package of that name exists"),
    ("memdir/index/", "memdir/index/: jupyter_memory/memdir/index is not a package"),
    ("cli.py", "cli.py: neither jupyter_memory/cli.py nor a package of that name exists"),
    ("agent/loop.no_such_name", "agent/loop.no_such_name: jupyter_memory.agent.loop has no "
                                "'no_such_name'"),
    ("memdir.nothing.here", "memdir.nothing.here: jupyter_memory.memdir has no 'nothing'"),
    ("tests/no_such_file.py", "tests/no_such_file.py: no such path"),
])
def test_a_drift_is_named(reference: str, problem: str | None) -> None:
    assert _problem(reference) == problem
