"""The code cites the reference behaviour by anchors of ``docs/reference.md``, a page in the
repository, never a spec outside it: every cited anchor exists, under both the docs site's
and GitHub's heading slugs. "The code" is all of it: the package (its schema too), the lab
extension's sources, the tests, the scripts and the benchmarks."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
REFERENCE = ROOT / "docs" / "reference.md"
CITATION = re.compile(r"docs/reference\.md#([a-z0-9-]+)")


def _anchors() -> set[str]:
    """The page's heading slugs: lowercase, spaces to hyphens, punctuation dropped (the two
    rules agree on headings made of words and spaces, which the page keeps to)."""
    anchors = set()
    for line in REFERENCE.read_text(encoding="utf-8").splitlines():
        heading = re.match(r"#{1,6}\s+(.+?)\s*$", line)
        if heading:
            text = heading.group(1).strip().lower()
            anchors.add(re.sub(r"[^\w\- ]", "", text).replace(" ", "-"))
    return anchors


#: Where code lives, and the files of it that are text a person reads.
CODE = {
    "jupyter_memory": ("*.py", "*.json"),
    "labextension/src": ("*.ts",),
    "labextension/scripts": ("*.js",),
    "tests": ("*.py",),
    "scripts": ("*.py", "*.sh"),
    "benchmarks": ("*.py", "*.md"),
}
#: The package's built copy of the lab extension is generated, and this test names the spec.
SKIP = (ROOT / "jupyter_memory" / "labextension", Path(__file__).resolve())


def _code_files() -> list[Path]:
    return sorted({p for folder, patterns in CODE.items() for pattern in patterns
                   for p in (ROOT / folder).rglob(pattern)
                   if not any(p == s or s in p.parents for s in SKIP)})


def test_every_kind_of_code_is_read() -> None:
    kinds = {(p.relative_to(ROOT).parts[0], p.suffix) for p in _code_files()}
    assert {("jupyter_memory", ".py"), ("jupyter_memory", ".json"), ("labextension", ".ts"),
            ("tests", ".py"), ("benchmarks", ".py")} <= kinds


def test_code_cites_no_spec_outside_the_repository() -> None:
    citing = [f"{p.relative_to(ROOT)}:{n}" for p in _code_files()
              for n, line in enumerate(p.read_text(encoding="utf-8").splitlines(), 1)
              if re.search(r"\bSPEC\b|shared/SPEC", line)]
    assert citing == [], "cite docs/reference.md#ANCHOR instead of the spec: " + ", ".join(citing)


def test_every_cited_anchor_exists() -> None:
    anchors = _anchors()
    cited = {(p.relative_to(ROOT).as_posix(), a) for p in _code_files()
             for a in CITATION.findall(p.read_text(encoding="utf-8"))}
    assert cited, "the code cites the reference page"
    missing = sorted(f"{path}: #{anchor}" for path, anchor in cited if anchor not in anchors)
    assert missing == []


def test_headings_are_words_only() -> None:
    """Headings of plain words give one slug under both rules, so a citation resolves on the
    docs site and on GitHub alike."""
    odd = [line for line in REFERENCE.read_text(encoding="utf-8").splitlines()
           if re.match(r"#{1,6}\s", line) and re.search(r"[^\w #\-]", line)]
    assert odd == []
