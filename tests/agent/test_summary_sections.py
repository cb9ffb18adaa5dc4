"""The nine sections of a compaction summary are named as the reference names them, and
summaries written with the names this project used before are still read."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from jupyter_memory.agent.compaction import SUMMARY_SECTIONS, summary_prompt
from jupyter_memory.agent.compaction.sections import (
    FORMER_SECTION_NAMES,
    missing_sections,
    summary_sections,
)
from jupyter_memory.widgets.compaction import compaction_html, compaction_text, sections_note

FIXTURE = (Path(__file__).resolve().parents[1] / "fixtures" / "transcripts"
           / "ae4a77f8-aedd-4bc1-888f-c94edc91af04.jsonl")

OLD_SUMMARY = """\
1. Primary request and intent:
   Find the zero-revenue days of 2026.

2. Key technical concepts:
   - pandas, `groupby`

3. Files and code sections:
   - `logs/2026.csv`

4. Errors and fixes:
   None.

5. Problem solving:
   Current work: a line inside a section is not a heading.

6. All user messages:
   - "Which days had no revenue?"

7. Pending tasks:
   - the chart

8. Current work:
   Counting the days.

9. Optional next step:
   Draw the chart."""


def reference_summary() -> str:
    """The text of the reference's own summary in the real session log."""
    for line in FIXTURE.read_text(encoding="utf-8").splitlines():
        entry = json.loads(line)
        if entry.get("isCompactSummary"):
            content = entry["message"]["content"]
            return content if isinstance(content, str) else content[0]["text"]
    raise AssertionError("the fixture log has no compact summary")


def test_the_names_are_those_of_the_reference_s_own_summary():
    text = reference_summary()
    written = re.findall(r"^(\d)\. ([A-Z][A-Za-z ]+):$", text, re.M)
    assert [int(n) for n, _ in written] == list(range(1, 10))
    assert tuple(name for _, name in written) == SUMMARY_SECTIONS
    preamble, sections = summary_sections(text)
    assert [s.name for s in sections] == list(SUMMARY_SECTIONS)
    assert [s.heading for s in sections] == list(SUMMARY_SECTIONS)
    assert [s.number for s in sections] == list(range(1, 10))
    assert preamble.startswith("This session is being continued") and "Analysis:" in preamble
    assert sections[0].body.startswith('User asked to "Work on bead spotter-4te"')
    assert sections[-1].body.startswith("**Fix the Dialyzer false positive")
    assert missing_sections(sections) == []


def test_the_summary_prompt_asks_for_the_reference_s_names():
    prompt = summary_prompt()
    for number, name in enumerate(SUMMARY_SECTIONS, 1):
        assert f"{number}. {name}: " in prompt  # the list of sections with their guide
    assert "<summary>\n1. Primary Request and Intent:\n" in prompt  # the shape of the answer
    assert "2. Key Technical Concepts:\n" in prompt
    for former, name in zip(FORMER_SECTION_NAMES, SUMMARY_SECTIONS, strict=True):
        if former != name:
            assert former not in prompt


def test_summaries_with_the_former_names_are_read_as_the_same_sections():
    preamble, sections = summary_sections(OLD_SUMMARY)
    assert preamble == ""
    assert [s.name for s in sections] == list(SUMMARY_SECTIONS)
    assert [s.heading for s in sections] == list(FORMER_SECTION_NAMES)
    assert sections[1].body == "- pandas, `groupby`"
    assert sections[4].body == "Current work: a line inside a section is not a heading."
    assert sections[7].body == "Counting the days."


@pytest.mark.parametrize("line, name, rest", [
    ("1. Primary Request and Intent: read the big files.", "Primary Request and Intent",
     "read the big files."),
    ("**3. Files and Code Sections:**", "Files and Code Sections", ""),
    ("## Pending Tasks", "Pending Tasks", ""),
    ("### 9. optional next step:", "Optional Next Step", ""),
    ("7) Pending  tasks:", "Pending Tasks", ""),
])
def test_heading_shapes(line, name, rest):
    _, [section] = summary_sections(line)
    assert (section.name, section.body) == (name, rest)


@pytest.mark.parametrize("line", [
    "Current work: no number and no heading mark",
    "1. Primary Request and Intent and more words:",
    "2. Something else entirely:",
    "1. Pending Tasks without a colon",
])
def test_lines_that_are_not_section_headings(line):
    assert summary_sections(line) == (line, [])


def test_the_compaction_view_names_the_sections_as_the_reference_does():
    data = {"trigger": "manual", "method": "model", "pre_tokens": 9000, "post_tokens": 900,
            "summary": OLD_SUMMARY}
    page = compaction_html(data)
    for number, name in enumerate(SUMMARY_SECTIONS, 1):
        assert f"<h4 style='margin:8px 0 2px'>{number}. {name}</h4>" in page
    assert "Summary, all 9 sections (click to open)" in page
    assert "Summary (all 9 sections):\n" + OLD_SUMMARY in compaction_text(data)

    cut = OLD_SUMMARY.split("\n\n8. ")[0]
    assert sections_note({"summary": cut}) == (
        "7 of the 9 sections; missing: Current Work, Optional Next Step")
    assert sections_note({"summary": "Free text."}) == "none of the 9 section headings found"
    assert "<details><summary>Summary, none of the 9" in compaction_html({"summary": "Free text."})
    # Session notes have headings of their own: no count of the nine.
    notes = {"method": "session_memory", "summary": "# Session Title\nx"}
    assert sections_note(notes) == ""
    assert "Summary:\n# Session Title" in compaction_text(notes)
