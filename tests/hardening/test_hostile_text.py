"""Scanners of untrusted text (issue 26, item 9): the exact rules at the edges the linear
rewrites touch, checked against plain readings of the rules, and a hostile CLAUDE.md.

How long the scans take is measured by ``benchmarks/bench_hostile.py``, never here.
"""

from __future__ import annotations

import datetime as dt
import json
import re
import uuid
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from jupyter_memory.commands.transcript import question_text
from jupyter_memory.context.instructions import (
    MAX_IMPORTS_PER_FILE,
    MAX_PATH_CHARS,
    InstructionFile,
    InstructionSet,
    compact_instructions,
    find_imports,
    load_instructions,
    match_glob,
    strip_html_comments,
)
from jupyter_memory.memdir import frontmatter
from jupyter_memory.memdir.dates import find_dates
from jupyter_memory.memdir.globs import Glob
from jupyter_memory.memdir.index import parse_index
from jupyter_memory.memdir.markdown import code_spans
from jupyter_memory.recall import dates as recall_dates
from jupyter_memory.sessions.recording.matching import conversation_view
from jupyter_memory.transcript import reader
from jupyter_memory.transcript.rebuild import rebuild_conversation

# --------------------------------------------------------------------------- code spans


def plain_code_spans(text: str) -> list[tuple[int, int]]:
    """CommonMark's rule read plainly: from each opening run, look ahead in its paragraph
    for the next run of the same length (quadratic, and plainly right)."""
    spans, i = [], 0
    while i < len(text):
        if text[i] != "`":
            i += 1
            continue
        run = i
        while run < len(text) and text[run] == "`":
            run += 1
        width = run - i
        blank = re.compile(r"\n[ \t]*\n").search(text, run)
        stop = blank.start() if blank else len(text)
        j, close = run, -1
        while j < stop:
            if text[j] != "`":
                j += 1
                continue
            k = j
            while k < len(text) and text[k] == "`":
                k += 1
            if k - j == width:
                close = j
                break
            j = k
        if close < 0:
            i = run
            continue
        spans.append((i, close + width))
        i = close + width
    return spans


@given(st.text(alphabet="`a \n\t", max_size=40))
def test_code_spans_follow_the_plain_reading(text: str) -> None:
    assert list(code_spans(text)) == plain_code_spans(text)


def test_code_span_of_two_backticks_holds_one() -> None:
    text = "say `` a ` b `` now"
    assert [text[s:e] for s, e in code_spans(text)] == ["`` a ` b ``"]


def test_code_span_closes_only_at_a_run_of_its_own_length() -> None:
    assert list(code_spans("``a`b")) == []  # a shorter run does not close it
    text = "`a ``b` c``"  # the single backtick closes the first span; c`` never closes
    assert [text[s:e] for s, e in code_spans(text)] == ["`a ``b`"]


def test_code_span_ends_at_a_blank_line() -> None:
    assert list(code_spans("`a\n\nb`")) == []
    assert list(code_spans("`a\nb`")) == [(0, 5)]
    text = "`a\n \t\nb and `c`"
    assert [text[s:e] for s, e in code_spans(text)] == ["`c`"]


def test_import_inside_a_span_is_not_followed() -> None:
    assert find_imports("use `@inside.md` and `` @also.md ` x `` then @real.md") == ["real.md"]
    assert find_imports("`` @open.md") == ["open.md"]  # an unclosed run is plain text


def test_fence_closed_only_by_a_run_of_its_character_at_least_as_long() -> None:
    assert find_imports("```\n@in.md\n````\n@out.md\n") == ["out.md"]
    assert find_imports("````\n@in.md\n```\n@still.md\n````\n@out.md") == ["out.md"]
    assert find_imports("~~~\n```\n@in.md\n~~~\n@out.md") == ["out.md"]
    assert find_imports("~~~\n@never.md\n") == []


# --------------------------------------------------------------------------- comments, headings


def test_comment_closes_at_the_first_later_line_holding_the_closer() -> None:
    text = "<!-- a\n" * 500 + "x --> kept\nafter\n"
    assert strip_html_comments(text) == "kept\nafter\n"
    assert strip_html_comments("<!-- a\n<!-- b\n") == "<!-- a\n<!-- b\n"  # never closed
    assert strip_html_comments("<!--> x\n-->y\nz\n") == "y\nz\n"  # <!--> does not close


def test_compact_instructions_headings() -> None:
    def sections(text: str) -> str | None:
        path = Path("/p/CLAUDE.md")
        files = [InstructionFile(path, "project", text, None, "test")]
        return compact_instructions(InstructionSet(cwd=path.parent, project_root=path.parent,
                                                   files=files))

    assert sections("## Compact Instructions ##\nkeep tests\n## Next\nno") == "keep tests"
    assert sections("##\tCompact Instructions \t#\nkeep\n") == "keep"
    assert sections("## Compact Instructions#\nno\n") is None  # the # is part of the title
    assert sections("####### Compact Instructions\nno\n") is None
    assert sections("# Compact Instructions" + " " * 5000 + "\nkeep\n") == "keep"


# --------------------------------------------------------------------------- index, frontmatter


def test_index_hook_and_group_lose_their_blanks() -> None:
    index = parse_index("## Data ##  \n- [Revenue](revenue.md) — in cents" + " " * 3000 + "\n")
    assert index.groups == ("Data",)
    assert index.entries[0].hook == "in cents"
    assert index.entries[0].group == "Data"
    assert parse_index("## C#\n").groups == ("C",)  # a closing run needs no space here


def test_frontmatter_values_lose_trailing_blanks_and_the_carriage_return() -> None:
    doc = frontmatter.parse("---\r\nname: revenue \t\r\ndescription: in cents\r\n---\r\nbody")
    assert doc.get("name") == "revenue"
    assert doc.get("description") == "in cents"
    changed = frontmatter.update("---\nname  : a \t\n\"x y\": 1\n---\nbody\n", {"name": "b"})
    assert changed == "---\nname: b\n\"x y\": 1\n---\nbody\n"


# --------------------------------------------------------------------------- globs


def reference_regex(pattern: str) -> str:
    """The documented glob language, written as a Python regex (backtracking)."""
    out, i = [], 0
    while i < len(pattern):
        if pattern.startswith("**/", i):
            out.append("(?:[^/]*/)*")
            i += 3
        elif pattern.startswith("**", i):
            out.append(".*")
            i += 2
        elif pattern[i] in "*?":
            out.append("[^/]*" if pattern[i] == "*" else "[^/]")
            i += 1
        elif pattern.startswith(("[ab]", "[!a]"), i):
            out.append("[ab]" if pattern[i + 1] == "a" else "[^a]")
            i += 4
        else:
            out.append(re.escape(pattern[i]))
            i += 1
    return "".join(out)


@given(st.lists(st.sampled_from(["*", "**", "**/", "?", "a", "b", "/", "[ab]", "[!a]"]),
                max_size=7).map("".join),
       st.text(alphabet="ab/", max_size=9))
def test_glob_matches_the_documented_language(pattern: str, path: str) -> None:
    for folder, tail in (("exact", ""), ("or_inside", "(?:/.*)?"), ("inside", "/.*")):
        expected = re.fullmatch(reference_regex(pattern) + tail, path, re.DOTALL) is not None
        assert Glob(pattern, folder).match(path) is expected, (pattern, path, folder)


def test_glob_of_many_stars_on_a_near_miss() -> None:
    # A backtracking regex would try every way to share 300 a's among 12 stars.
    assert match_glob("*a" * 12 + "b", "a" * 300) is False
    assert match_glob("*a" * 12 + "b", "a" * 300 + "b") is True
    assert match_glob("src/**/*_test*.py", "src/x/y/io_test_util.py") is True


def test_a_path_longer_than_any_file_system_gives_matches_no_rule() -> None:
    longest = "d/" * ((MAX_PATH_CHARS - 4) // 2) + "x.py"
    assert len(longest) <= MAX_PATH_CHARS and match_glob("**/*.py", longest) is True
    assert match_glob("**/*.py", "d/" + longest) is False
    assert match_glob("*a" * 12 + "b", "a" * 1_000_000 + "b") is False


# --------------------------------------------------------------------------- transcripts


def test_wrapper_tags_that_never_close_are_skipped() -> None:
    text = "<command-name>" * 1000 + "<command-message>m</command-message>"
    assert question_text(text) == text  # no command name closes: the text is the question
    closed = "<command-args>" * 1000 + "<command-name>/go</command-name>"
    assert question_text(closed) == "/go"  # the arguments never close: left out


def test_replay_matching_hides_closed_reminders_only() -> None:
    def view(text: str) -> Any:
        request = {"messages": [{"role": "user", "content": [{"type": "text", "text": text}]}]}
        return conversation_view(request)[0]["content"][0]["text"]

    assert view("a</system-reminder>" + "<system-reminder>x" * 300) == \
        "a</system-reminder>" + "<system-reminder>x" * 300
    assert view("q <system-reminder>a<system-reminder>b</system-reminder>c<system-reminder>") == \
        "q <system-reminder/>c<system-reminder>"


def _line(entry: dict[str, Any]) -> str:
    return json.dumps(entry) + "\n"


def _user(parent: str | None, content: Any) -> dict[str, Any]:
    return {"type": "user", "uuid": str(uuid.uuid4()), "parentUuid": parent, "sessionId": "s",
            "message": {"role": "user", "content": content}}


@pytest.mark.parametrize("block", [7, 64, 100_000])
def test_backward_search_reads_each_line_once(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                              block: int) -> None:
    """A line naming the boundary again and again is parsed once, not once per name."""
    first = _user(None, "before")
    boundary = {"type": "system", "subtype": "compact_boundary", "uuid": str(uuid.uuid4()),
                "parentUuid": None, "content": "Conversation compacted",
                "compactMetadata": {"trigger": "auto", "preTokens": 1000}}
    decoy = _user(boundary["uuid"], ["compact_boundary"] * 300)
    path = tmp_path / "log.jsonl"
    path.write_text(_line(first) + _line(boundary) + _line(decoy), encoding="utf-8")
    parsed: list[bytes] = []
    real = reader._is_boundary_line

    def counting(line: bytes) -> bool:
        parsed.append(line)
        return real(line)

    monkeypatch.setattr(reader, "FAST_PATH_BYTES", 0)
    monkeypatch.setattr(reader, "SCAN_BLOCK_BYTES", block)
    monkeypatch.setattr(reader, "_is_boundary_line", counting)
    entries = reader.read_entries(path)
    assert entries.stats.start_offset == len(_line(first).encode())
    assert [e["uuid"] for e in entries] == [boundary["uuid"], decoy["uuid"]]
    assert len(parsed) == 2  # the decoy line, then the boundary


def test_user_entries_in_a_row_merge_with_results_first() -> None:
    use = {"type": "tool_use", "id": "t1", "name": "Read", "input": {}}
    ask = _user(None, "question")
    answer = {"type": "assistant", "uuid": str(uuid.uuid4()), "parentUuid": ask["uuid"],
              "sessionId": "s", "message": {"role": "assistant", "id": "m1", "content": [use]}}
    entries, parent = [ask, answer], answer["uuid"]
    for content in ("one", [{"type": "tool_result", "tool_use_id": "t1", "content": "ok"}],
                    *(f"more {i}" for i in range(200))):
        entries.append(_user(parent, content))
        parent = entries[-1]["uuid"]
    conversation = rebuild_conversation(entries)
    assert [m["role"] for m in conversation] == ["user", "assistant", "user", "assistant"]
    merged = conversation[2]["content"]
    assert merged[0]["type"] == "tool_result"
    assert [b["text"] for b in merged[1:]] == ["one", *(f"more {i}" for i in range(200))]
    assert len(conversation.meta[2].uuids) == 202


def test_date_lead_in_is_the_phrase_that_ends_at_the_date() -> None:
    today = dt.date(2026, 3, 1)

    def mention(text: str) -> tuple[str, dt.date, dt.date]:
        (found,) = find_dates(text, today)
        return found.text, found.first, found.last

    assert mention("bathe day before 5 May 2023") == \
        ("day before 5 May 2023", dt.date(2023, 5, 4), dt.date(2023, 5, 5))
    assert mention("the day before the day before 5 May 2023")[0] == "the day before 5 May 2023"
    assert mention("x the  day\tbefore\nthe 8 May 2023") == \
        ("the  day\tbefore\nthe 8 May 2023", dt.date(2023, 5, 7), dt.date(2023, 5, 8))
    assert mention("A WEEK AFTER 2024-01-02")[1:] == (dt.date(2024, 1, 2), dt.date(2024, 1, 9))
    ranges, rest = recall_dates.parse("sales yesterday and 5 May 2023 please",
                                      dt.datetime(2026, 3, 1, tzinfo=dt.timezone.utc))
    assert len(ranges) == 2 and rest == "sales   and   please"


# --------------------------------------------------------------------------- a hostile CLAUDE.md


def test_hostile_claude_md_still_assembles(tmp_path: Path) -> None:
    """768 KB of backticks (the red team's file took 14-20 s) loads with the right content."""
    project = tmp_path / "project"
    (project / ".git").mkdir(parents=True)
    (project / "docs").mkdir()
    (project / "docs" / "style.md").write_text("Indent with four spaces.\n", encoding="utf-8")
    (project / "docs" / "more.md").write_text("Name columns in snake_case.\n", encoding="utf-8")
    soup = "`a " * (768 * 1024 // 3)
    text = ("# Project\n<!-- maintainers only -->\nSee @docs/style.md first.\n\n"
            + soup[: len(soup) // 2] + "`@docs/inside.md` " + soup[len(soup) // 2 :]
            + "\n\nThen @docs/more.md and @docs/style.md again.\n")
    (project / "CLAUDE.md").write_text(text, encoding="utf-8")
    env = {"HOME": str(tmp_path / "home"), "CLAUDE_CONFIG_DIR": str(tmp_path / "cfg")}

    loaded = load_instructions(project, project_root=project, env=env)

    root = project.resolve()
    assert [f.path for f in loaded.files] == [root / "CLAUDE.md", root / "docs" / "style.md",
                                              root / "docs" / "more.md"]
    claude = loaded.files[0]
    assert "maintainers only" not in claude.text
    assert claude.text.endswith("Then @docs/more.md and @docs/style.md again.\n")
    assert len(claude.text) > 768 * 1024
    rendered = loaded.render()
    assert "Indent with four spaces." in rendered and "snake_case" in rendered
    assert not any("inside.md" in note for note in loaded.notes)
    assert f"{root / 'CLAUDE.md'}: import of {root / 'docs' / 'style.md'} skipped, already loaded" \
        in loaded.notes
    assert loaded.warnings  # far over the 40,000 characters that earn a warning


def test_repeated_imports_leave_the_notes_in_order(tmp_path: Path) -> None:
    project = tmp_path / "p"
    (project / ".git").mkdir(parents=True)
    (project / "a.md").write_text("A\n", encoding="utf-8")
    (project / "CLAUDE.md").write_text("@a.md @gone.md @a.md @gone.md " * 50, encoding="utf-8")
    env = {"HOME": str(tmp_path / "home"), "CLAUDE_CONFIG_DIR": str(tmp_path / "cfg")}
    loaded = load_instructions(project, project_root=project, env=env)
    root = project.resolve()
    assert [f.path.name for f in loaded.files] == ["CLAUDE.md", "a.md"]
    assert loaded.notes == [
        f"{root / 'CLAUDE.md'}: import of {root / 'gone.md'} skipped, not found",
        f"{root / 'CLAUDE.md'}: import of {root / 'a.md'} skipped, already loaded",
    ]


def test_imports_past_the_per_file_cap_are_counted_in_one_note(tmp_path: Path) -> None:
    """A file of hundreds of thousands of distinct missing imports once cost a look-up and
    a note each; past MAX_IMPORTS_PER_FILE the rest are named by count."""
    project = tmp_path / "p"
    (project / ".git").mkdir(parents=True)
    (project / "early.md").write_text("Early rule.\n", encoding="utf-8")
    (project / "late.md").write_text("Late rule.\n", encoding="utf-8")
    tokens = [f"@gone-{i}.md" for i in range(MAX_IMPORTS_PER_FILE + 100)]
    tokens.insert(10, "@early.md")
    tokens.insert(MAX_IMPORTS_PER_FILE + 50, "@late.md")
    tokens.append("@early.md")  # already followed: past the cap it is still a repeat
    (project / "CLAUDE.md").write_text(" ".join(tokens) + "\n", encoding="utf-8")
    env = {"HOME": str(tmp_path / "home"), "CLAUDE_CONFIG_DIR": str(tmp_path / "cfg")}

    loaded = load_instructions(project, project_root=project, env=env)

    root = project.resolve()
    assert [f.path.name for f in loaded.files] == ["CLAUDE.md", "early.md"]
    missing = [n for n in loaded.notes if n.endswith("skipped, not found")]
    assert len(missing) == MAX_IMPORTS_PER_FILE - 1  # early.md took one of the places
    assert loaded.notes[-1] == (
        f"{root / 'CLAUDE.md'}: 102 more @ imports not followed: a file may import at most "
        f"{MAX_IMPORTS_PER_FILE:,} (split it, or import fewer files)")
