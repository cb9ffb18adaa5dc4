"""The nine sections of a compaction summary: their names, and finding them in a summary.

The names are the reference's, word for word and in title case, as its own summaries
show them (``1. Primary Request and Intent:`` ... ``9. Optional Next Step:``). Summaries
written before this project used those names carry them in sentence case; they are read
as the same sections, so saved notebooks, logs and recordings still show their parts.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

__all__ = [
    "FORMER_SECTION_NAMES",
    "SUMMARY_SECTIONS",
    "SummarySection",
    "missing_sections",
    "summary_sections",
]

#: The nine sections of every summary, in order, named as the reference names them in
#: its own summaries (the ``isCompactSummary`` entries of its session logs).
SUMMARY_SECTIONS: tuple[str, ...] = (
    "Primary Request and Intent",
    "Key Technical Concepts",
    "Files and Code Sections",
    "Errors and Fixes",
    "Problem Solving",
    "All User Messages",
    "Pending Tasks",
    "Current Work",
    "Optional Next Step",
)

#: The names this project asked for before it used the reference's. Summaries in saved
#: notebooks, logs and recordings are written with them; they name the same sections.
FORMER_SECTION_NAMES: tuple[str, ...] = (
    "Primary request and intent",
    "Key technical concepts",
    "Files and code sections",
    "Errors and fixes",
    "Problem solving",
    "All user messages",
    "Pending tasks",
    "Current work",
    "Optional next step",
)

_CANONICAL: dict[str, str] = {
    " ".join(name.casefold().split()): canonical
    for names in (SUMMARY_SECTIONS, FORMER_SECTION_NAMES)
    for name, canonical in zip(names, SUMMARY_SECTIONS, strict=True)
}

# A section heading: a numbered line ("3. Files and Code Sections:") or a markdown
# heading ("## Files and Code Sections"), either possibly in bold, with the section's
# text allowed to start on the same line after the colon.
_HEADING = re.compile(
    r"^[ \t]*(?:(?P<hashes>\#{1,6})[ \t]+)?[*_]{0,2}(?:(?P<number>\d{1,2})[.)][ \t]*)?"
    r"[*_]{0,2}(?P<name>[A-Za-z][A-Za-z ]*?)[ \t]*[*_]{0,2}[ \t]*"
    r"(?:(?P<colon>:)[*_]{0,2}[ \t]*(?P<rest>.*)|[ \t]*)$"
)


@dataclass(frozen=True)
class SummarySection:
    """One section found in a summary: its name as the reference spells it, the name as
    the summary wrote it, its number when it had one, and its text."""

    name: str
    heading: str
    number: int | None
    body: str


def _heading(line: str) -> tuple[str, str, int | None, str] | None:
    match = _HEADING.match(line)
    if match is None:
        return None
    if not (match["number"] or match["hashes"]):  # a bare "Current work:" is body text
        return None
    if match["number"] and not match["colon"]:
        return None
    written = " ".join(match["name"].split())
    canonical = _CANONICAL.get(written.casefold())
    if canonical is None:
        return None
    number = int(match["number"]) if match["number"] else None
    return canonical, written, number, match["rest"] or ""


def _dedent(lines: list[str]) -> str:
    widths = [len(line) - len(line.lstrip(" ")) for line in lines if line.strip()]
    cut = min(widths, default=0)
    return "\n".join(line[cut:].rstrip() for line in lines).strip("\n")


def summary_sections(text: str) -> tuple[str, list[SummarySection]]:
    """The text before the first section, and the sections of ``text`` in order.

    A section starts at a numbered line or markdown heading naming one of the nine
    sections, in the reference's words or the former ones (case is ignored); it runs to
    the next such heading. A summary with none of them gives ``(text, [])``.
    """
    preamble: list[str] = []
    found: list[tuple[str, str, int | None, str, list[str]]] = []
    for line in text.splitlines():
        heading = _heading(line)
        if heading is not None:
            found.append((*heading, []))
        elif found:
            found[-1][4].append(line)
        else:
            preamble.append(line)
    sections = []
    for name, written, number, rest, lines in found:
        body = "\n".join(part for part in (rest.strip(), _dedent(lines)) if part)
        sections.append(SummarySection(name, written, number, body.strip()))
    return "\n".join(preamble).strip(), sections


def missing_sections(sections: list[SummarySection]) -> list[str]:
    """The names of the nine sections a summary does not have, in order."""
    present = {section.name for section in sections}
    return [name for name in SUMMARY_SECTIONS if name not in present]
