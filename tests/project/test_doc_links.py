"""Every relative link with an anchor in the docs, the examples' markdown and the course
notebooks' markdown cells lands on a heading, under both rules that make heading anchors:
GitHub's (where people read the repository and the notebooks) and the docs site's
(python-markdown's ``toc`` extension, which mkdocs uses)."""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Iterator
from pathlib import Path

import nbformat
import pytest

ROOT = Path(__file__).resolve().parents[2]
#: ``[text](target#anchor)``: the target may be empty (a heading of the same page).
LINK = re.compile(r"\]\(\s*<?([^)\s>#]*)#([^)\s>]+)>?(?:\s+\"[^\"]*\")?\s*\)")
FENCE = re.compile(r"^\s*(```|~~~)")
HEADING = re.compile(r"^ {0,3}(#{1,6})\s+(.*?)\s*#*\s*$")
EXPLICIT = re.compile(r"<a\s+(?:id|name)=\"([^\"]+)\"", re.IGNORECASE)


def heading_text(markdown: str) -> str:
    """A heading's text as both renderers see it: inline markup gone, its words kept."""
    text = re.sub(r"!?\[([^\]]*)\]\([^)]*\)", r"\1", markdown)  # links and images: their text
    text = re.sub(r"<[^>]+>", "", text)  # inline HTML tags
    text = re.sub(r"(`+)(.+?)\1", lambda m: m.group(2).strip(), text)  # code: its content
    text = re.sub(r"(\*\*|__|\*|_)(\S(?:.*?\S)?)\1", r"\2", text)  # emphasis
    return text.replace("\\", "")


def github_slug(text: str) -> str:
    """GitHub's rule (github-slugger): lowercase; drop everything but letters, digits,
    ``_``, ``-`` and spaces; each space becomes one hyphen (nothing is collapsed)."""
    kept = "".join(c for c in text.lower()
                   if c in " -_" or unicodedata.category(c)[0] in "LN" or c.isdigit())
    return kept.replace(" ", "-")


def mkdocs_slug(text: str) -> str:
    """python-markdown's ``toc`` slugify: ASCII only, drop what is not a word character,
    space or hyphen, strip, lowercase, and runs of spaces and hyphens become one hyphen."""
    text = unicodedata.normalize("NFKD", text).encode("ascii", "ignore").decode("ascii")
    text = re.sub(r"[^\w\s-]", "", text).strip().lower()
    return re.sub(r"[-\s]+", "-", text)


def _unique(slug: str, seen: dict[str, int], separator: str) -> str:
    """The n-th repeat of a slug: GitHub adds ``-n``, python-markdown ``_n``."""
    if slug not in seen:
        seen[slug] = 0
        return slug
    seen[slug] += 1
    return f"{slug}{separator}{seen[slug]}"


def _markdown_lines(text: str) -> Iterator[str]:
    """The lines of a markdown text outside fenced code blocks."""
    fenced = False
    for line in text.splitlines():
        if FENCE.match(line):
            fenced = not fenced
            continue
        if not fenced:
            yield line


def anchors(markdown: str) -> tuple[set[str], set[str]]:
    """(GitHub's anchors, the docs site's anchors) of a markdown text's headings, with the
    explicit ``<a id=…>`` anchors in both."""
    github: dict[str, int] = {}
    site: dict[str, int] = {}
    found_github, found_site = set(), set()
    for line in _markdown_lines(markdown):
        explicit = EXPLICIT.findall(line)
        found_github.update(explicit)
        found_site.update(explicit)
        heading = HEADING.match(line)
        if heading:
            text = heading_text(heading.group(2))
            found_github.add(_unique(github_slug(text), github, "-"))
            found_site.add(_unique(mkdocs_slug(text), site, "_"))
    return found_github, found_site


def _notebook_markdown(path: Path) -> str:
    nb = nbformat.read(str(path), as_version=4)
    return "\n\n".join(c.source for c in nb.cells if c.cell_type == "markdown")


def _markdown_of(path: Path) -> str:
    if path.suffix == ".ipynb":
        return _notebook_markdown(path)
    return path.read_text(encoding="utf-8")


def _sources() -> list[Path]:
    docs = sorted((ROOT / "docs").glob("**/*.md"))
    examples = sorted(p for p in (ROOT / "examples").glob("**/*.md") if ".run" not in p.parts
                      and "demo-home" not in p.parts)
    notebooks = sorted(p for p in (ROOT / "examples").glob("**/*.ipynb")
                       if ".run" not in p.parts and "demo-home" not in p.parts
                       and ".ipynb_checkpoints" not in p.parts)
    return docs + examples + notebooks


def links(path: Path) -> list[tuple[Path, str, str]]:
    """(the file linked, the anchor, the link as written) of each relative link with an
    anchor in ``path``'s markdown."""
    found = []
    for line in _markdown_lines(_markdown_of(path)):
        for target, anchor in LINK.findall(line):
            if re.match(r"[a-z][a-z0-9+.-]*:", target):  # http:, mailto: …
                continue
            file = (path.parent / target).resolve() if target else path
            found.append((file, anchor, f"{target}#{anchor}"))
    return found


def broken_links() -> list[str]:
    cache: dict[Path, tuple[set[str], set[str]]] = {}
    broken = []
    for source in _sources():
        for file, anchor, written in links(source):
            where = source.relative_to(ROOT)
            if not file.is_file():
                broken.append(f"{where}: {written}: no such file")
                continue
            if file not in cache:
                cache[file] = anchors(_markdown_of(file))
            github, site = cache[file]
            misses = [rule for rule, found in (("GitHub", github), ("the docs site", site))
                      if anchor not in found]
            if misses:
                broken.append(f"{where}: {written}: no such heading on {' or '.join(misses)}")
    return broken


def test_every_anchored_link_resolves_on_github_and_on_the_docs_site() -> None:
    assert sum(len(links(p)) for p in _sources()) > 100, "the link finder finds the links"
    assert broken_links() == []


@pytest.mark.parametrize(("heading", "github", "site"), [
    ("The memdir", "the-memdir", "the-memdir"),
    ("What the session cost: `%context --cost`", "what-the-session-cost-context---cost",
     "what-the-session-cost-context-cost"),
    ("Path B, step by step", "path-b-step-by-step", "path-b-step-by-step"),
    ("A smaller window: `Agent.context_window`", "a-smaller-window-agentcontext_window",
     "a-smaller-window-agentcontext_window"),
    ("Cost — what a [saved](x.md) notebook's calls cost", "cost--what-a-saved-notebooks-calls-cost",
     "cost-what-a-saved-notebooks-calls-cost"),
    ("Größe **und** Zeit", "größe-und-zeit", "groe-und-zeit"),
])
def test_the_two_slug_rules(heading: str, github: str, site: str) -> None:
    text = heading_text(heading)
    assert github_slug(text) == github and mkdocs_slug(text) == site


def test_repeated_headings_and_explicit_anchors() -> None:
    github, site = anchors("# Notes\n\n## Notes\n\n```\n# not a heading\n```\n"
                           '<a id="kept"></a>\n### Notes\n')
    assert github == {"notes", "notes-1", "notes-2", "kept"}
    assert site == {"notes", "notes_1", "notes_2", "kept"}


def test_a_missing_heading_is_reported(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    page = tmp_path / "page.md"
    page.write_text("# A `%magic --flag`\n\n[one](#a-magic-flag) [two](#a-magic---flag) "
                    "[three](other.md#x)\n", encoding="utf-8")
    monkeypatch.setattr(__import__(__name__), "_sources", lambda: [page])
    monkeypatch.setattr(__import__(__name__), "ROOT", tmp_path)
    assert broken_links() == ["page.md: #a-magic-flag: no such heading on GitHub",
                              "page.md: #a-magic---flag: no such heading on the docs site",
                              "page.md: other.md#x: no such file"]
