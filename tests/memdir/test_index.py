"""MEMORY.md parsing, the load limits (lines, UTF-16 units) and pointer-line edits."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from jupyter_memory.memdir import index as ix

SAMPLE = """# Memory index

Notes I keep for myself — not a pointer.

## Data
- [Revenue in cents](project_revenue_in_cents.md) — sales.revenue holds integer cents
* [Role](user_role.md) - senior analyst, prefers polars
- [No hook](reference_dash.md)
- [Tight dash](feedback_tight.md)—no spaces around the dash
- [Spaced file](<team/db notes.md>) – en dash separator
- [A site](https://example.org/x.md) — a URL is not a memory pointer

## 习惯
- [不要打印整个表](feedback_no_full_frames.md) — 只显示前几行
```
- [Inside a fence](fenced.md) — code, not a pointer
```
"""


def test_parse_entries_groups_and_free_text() -> None:
    index = ix.parse_index(SAMPLE)
    got = [(e.title, e.file, e.hook, e.group) for e in index.entries]
    assert got == [
        (
            "Revenue in cents",
            "project_revenue_in_cents.md",
            "sales.revenue holds integer cents",
            "Data",
        ),
        ("Role", "user_role.md", "senior analyst, prefers polars", "Data"),
        ("No hook", "reference_dash.md", "", "Data"),
        ("Tight dash", "feedback_tight.md", "no spaces around the dash", "Data"),
        ("Spaced file", "team/db notes.md", "en dash separator", "Data"),
        ("不要打印整个表", "feedback_no_full_frames.md", "只显示前几行", "习惯"),
    ]
    assert index.groups == ("Data", "习惯")
    assert [e.line for e in index.entries][:2] == [6, 7]
    free = [text for _, text in index.free_text]
    assert "Notes I keep for myself — not a pointer." in free
    assert "- [A site](https://example.org/x.md) — a URL is not a memory pointer" in free
    assert "- [Inside a fence](fenced.md) — code, not a pointer" in free
    # Every line is either an entry or free text: nothing is dropped.
    assert len(index.entries) + len(index.free_text) == len(SAMPLE.split("\n"))


def test_find_normalises_paths() -> None:
    index = ix.parse_index("- [X](./sub/x.md) — hook\n")
    assert index.find("sub/x.md") is not None
    assert index.files() == {"sub/x.md"}
    assert index.find("x.md") is None


def test_escaped_brackets_in_title_round_trip() -> None:
    line = ix.format_entry("use [[links]] \\ carefully", "a.md", "hook")
    entry = ix.parse_index(line).entries[0]
    assert entry.title == "use [[links]] \\ carefully"
    assert entry.file == "a.md"


def test_utf16_len_counts_astral_characters_twice() -> None:
    assert ix.utf16_len("abc") == 3
    assert ix.utf16_len("한국어") == 3
    assert ix.utf16_len("😀") == 2
    assert ix.utf16_len("a😀b") == 4


def test_small_index_loads_whole_and_trimmed() -> None:
    loaded = ix.load_for_model("\n\n- [A](a.md) — x\n\n")
    assert loaded.text == "- [A](a.md) — x"
    assert not loaded.truncated and loaded.warning is None
    assert ix.load_for_model("   \n").text == ""


def test_249_line_multibyte_index_is_cut_to_200_lines() -> None:
    lines = [
        f"- [메모 {i}](project_메모_{i}.md) — 한국어 설명 {i} 用中文也可以" for i in range(249)
    ]
    loaded = ix.load_for_model("\n".join(lines) + "\n")
    assert loaded.limits_hit == ("lines",)
    assert loaded.line_count == 249
    body, _, warning = loaded.text.partition("\n\n> WARNING")
    assert body.split("\n") == lines[:200]
    assert "249 lines" in warning and "200" in warning
    assert loaded.warning is not None and "topic files" in loaded.warning
    assert "merge" in loaded.warning and "no longer true" in loaded.warning


def test_korean_index_over_25000_bytes_is_not_cut() -> None:
    # 27,000+ UTF-8 bytes but under 25,000 UTF-16 units: the reference loads it whole.
    lines = ["- [기록](a.md) — " + "가나다라마바사아자차" * 9 for _ in range(100)]
    text = "\n".join(lines)
    assert len(text.encode("utf-8")) > 27_000
    assert ix.utf16_len(text) < ix.MAX_CHARS
    loaded = ix.load_for_model(text)
    assert not loaded.truncated
    assert loaded.text == text


def test_char_limit_bites_first_counting_utf16_units() -> None:
    # 150 lines of 120 emoji: 18,150 code points (under the cap if counted naively)
    # but 36,150 UTF-16 units, so only the character limit applies.
    lines = [f"- [e{i}](e{i}.md) — " + "😀" * 120 for i in range(150)]
    text = "\n".join(lines)
    assert len(text) < ix.MAX_CHARS < ix.utf16_len(text)
    loaded = ix.load_for_model(text)
    assert loaded.limits_hit == ("chars",)
    body = loaded.text.split("\n\n> WARNING")[0]
    assert ix.utf16_len(body) <= ix.MAX_CHARS
    kept = body.split("\n")
    assert kept == lines[: len(kept)]  # cut on a line boundary, no half line
    assert len(kept) < 150
    assert ix.utf16_len("\n".join(lines[: len(kept) + 1])) > ix.MAX_CHARS
    assert loaded.warning is not None and "25,000" in loaded.warning and "UTF-16" in loaded.warning
    assert "lines (the limit" not in loaded.warning


def test_both_limits_named_when_both_hit() -> None:
    text = "\n".join("x" * 200 for _ in range(300))
    loaded = ix.load_for_model(text)
    assert loaded.limits_hit == ("lines", "chars")
    assert "300 lines" in (loaded.warning or "") and "characters" in (loaded.warning or "")
    assert ix.utf16_len(loaded.text.split("\n\n> WARNING")[0]) <= ix.MAX_CHARS


def test_single_huge_line_is_cut_at_the_limit() -> None:
    loaded = ix.load_for_model("😀" * 20_000)
    body = loaded.text.split("\n\n> WARNING")[0]
    assert ix.utf16_len(body) == ix.MAX_CHARS  # never splits a surrogate pair
    assert body == "😀" * 12_500


def test_check_ok_near_over() -> None:
    assert ix.check("- [A](a.md) — x\n").status == "ok"
    assert ix.check("- [A](a.md) — x\n").message is None
    near = ix.check("\n".join(f"line {i}" for i in range(180)))
    assert near.status == "near" and near.limits == ("lines",)
    assert near.message is not None and "180 of 200" in near.message
    near_chars = ix.check("가" * 22_500)
    assert near_chars.status == "near" and near_chars.limits == ("chars",)
    over = ix.check("\n".join(f"line {i}" for i in range(201)))
    assert over.status == "over" and over.limits == ("lines",)
    assert over.message is not None and over.message.startswith("Error")
    assert "Rewrite the index" in over.message
    assert ix.check("😀" * 12_501).status == "over"
    assert ix.check("😀" * 12_500).status == "near"
    assert over.to_json()["status"] == "over"


def test_upsert_replaces_in_place_keeping_group() -> None:
    out = ix.upsert_entry(SAMPLE, "user_role.md", "Role", "lead analyst now")
    index = ix.parse_index(out)
    entry = index.find("user_role.md")
    assert entry is not None
    assert (entry.line, entry.group, entry.hook) == (7, "Data", "lead analyst now")
    before = SAMPLE.split("\n")
    after = out.split("\n")
    assert [i for i, (a, b) in enumerate(zip(before, after, strict=True)) if a != b] == [6]


def test_upsert_appends_at_end_and_drops_duplicates() -> None:
    out = ix.upsert_entry("# Index\n\n## G\n- [A](a.md) — x\n\n\n", "b.md", "B", "y")
    assert out == "# Index\n\n## G\n- [A](a.md) — x\n- [B](b.md) — y\n"
    dup = "- [A](a.md) — one\n- [Other](o.md)\n- [A again](./a.md) — two\n"
    out = ix.upsert_entry(dup, "a.md", "A", "new")
    assert out == "- [A](a.md) — new\n- [Other](o.md)\n"
    assert ix.upsert_entry("", "a.md", "A", "") == "- [A](a.md)\n"


def test_upsert_keeps_crlf_and_closes_open_fence() -> None:
    out = ix.upsert_entry("- [A](a.md) — x\r\n", "b.md", "B", "y")
    assert out == "- [A](a.md) — x\r\n- [B](b.md) — y\r\n"
    out = ix.upsert_entry("```\ncode\n", "b.md", "B", "y")
    assert ix.parse_index(out).find("b.md") is not None
    assert out.startswith("```\ncode\n")


def test_remove_entry_only_touches_pointer_lines() -> None:
    out = ix.remove_entry(SAMPLE, "project_revenue_in_cents.md")
    assert ix.parse_index(out).find("project_revenue_in_cents.md") is None
    assert out.split("\n") == [
        line for line in SAMPLE.split("\n") if "project_revenue_in_cents.md" not in line
    ]
    assert ix.remove_entry(SAMPLE, "missing.md") == SAMPLE
    # the fenced look-alike is free text, so removing "fenced.md" changes nothing
    assert ix.remove_entry(SAMPLE, "fenced.md") == SAMPLE


def test_format_entry_stays_short() -> None:
    line = ix.format_entry("Revenue", "project_revenue.md", "cents " * 80)
    assert len(line) <= ix.ENTRY_MAX_CHARS
    assert line.endswith("…")
    long_title = ix.format_entry("T" * 300, "project_x.md", "hook " * 60)
    assert len(long_title) <= ix.ENTRY_MAX_CHARS
    assert ix.parse_index(long_title).entries[0].file == "project_x.md"
    assert ix.format_entry("  multi\nline  ", "a.md", " h\n i ") == "- [multi line](a.md) — h i"
    assert ix.format_entry("", "a.md") == "- [a.md](a.md)"
    assert ix.format_entry("x", "dir/my (old) notes.md") == "- [x](<dir/my (old) notes.md>)"


@settings(max_examples=200, deadline=None)
@given(st.text())
def test_parse_and_load_never_raise(text: str) -> None:
    index = ix.parse_index(text)
    assert len(index.entries) + len(index.free_text) == len(text.split("\n"))
    loaded = ix.load_for_model(text)
    assert ix.utf16_len(loaded.text.split("\n\n> WARNING")[0]) <= ix.MAX_CHARS
    ix.check(text)


_names = st.from_regex(r"[a-z][a-z0-9_]{0,20}(/[a-z0-9_]{1,10})?\.md", fullmatch=True)


@settings(max_examples=200, deadline=None)
@given(st.text(), _names, st.text(max_size=80), st.text(max_size=300))
def test_upsert_then_remove_round_trip(text: str, file: str, title: str, hook: str) -> None:
    others = {e.file for e in ix.parse_index(text).entries if ix.normalize_file(e.file) != file}
    out = ix.upsert_entry(text, file, title, hook)
    index = ix.parse_index(out)
    entry = index.find(file)
    assert entry is not None
    assert entry.title == (" ".join(title.split()) or file) or entry.title.endswith("…")
    assert {e.file for e in index.entries if ix.normalize_file(e.file) != file} >= others
    removed = ix.parse_index(ix.remove_entry(out, file))
    assert removed.find(file) is None
