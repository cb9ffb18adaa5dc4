"""Fuzzing the parsers: frontmatter, the index, the JSONL log reader and the guard.

Properties, not examples: parsing never raises and never drops text; what ``render``
writes reads back as the same fields; an edit changes only what it was asked to; index
edits touch only the lines of their file and the model never sees more than the limits;
a log of arbitrary bytes is read without an exception.
"""

from __future__ import annotations

import re
import string
from pathlib import Path

import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from jupyter_memory.errors import SecretRefused
from jupyter_memory.memdir import frontmatter
from jupyter_memory.memdir.guard import check_no_secrets, find_secrets, redact
from jupyter_memory.memdir.index import (
    MAX_CHARS,
    MAX_LINES,
    check,
    load_for_model,
    parse_index,
    remove_entry,
    upsert_entry,
    utf16_len,
)
from jupyter_memory.transcript.reader import read_entries

FUZZ = settings(max_examples=250, deadline=None,
                suppress_health_check=[HealthCheck.function_scoped_fixture])

YAML_BITS = [
    "---", "---\n", "\n", "\r\n", ":", ": ", "- ", "name", "description", "type", "metadata",
    "  ", "\t", "#", "'", '"', "[", "]", "{", "}", "&a", "*a", "!!", "|", ">", "?", ",", "%",
    "@", "`", "~", "null", "true", "0x1F", "1e3", "2026-03-01", "\ufeff", "数据", "😀", "\\",
]
documents = st.one_of(
    st.text(max_size=300),
    st.lists(st.sampled_from(YAML_BITS), max_size=40).map("".join),
    st.lists(st.sampled_from(YAML_BITS), max_size=30).map(lambda b: "---\n" + "".join(b) + "\n---\nbody\n"),
)
keys = st.text(alphabet=string.ascii_letters + "_", min_size=1, max_size=12).filter(
    lambda k: k != "metadata"
)
values = st.one_of(
    st.text(max_size=80),
    st.integers(),
    st.booleans(),
    st.lists(st.text(max_size=10), max_size=3),
)


@FUZZ
@given(text=documents)
def test_parse_never_raises_and_keeps_the_body(text: str) -> None:
    doc = frontmatter.parse(text)
    assert doc.shape in frontmatter.SHAPES
    assert text.endswith(doc.body)
    if doc.header is not None:
        assert doc.header in text
    else:
        assert doc.body == text.removeprefix("\ufeff")


@FUZZ
@given(fields=st.dictionaries(keys, values, max_size=6), body=st.text(max_size=200))
def test_render_reads_back_as_written(fields: dict, body: str) -> None:
    text = frontmatter.render(fields, body)
    doc = frontmatter.parse(text)
    assert doc.error is None, (text, doc.error)
    assert doc.body == body
    assert doc.fields == fields


def test_render_quotes_a_question_mark_inside_a_list() -> None:
    fields = {"name": "q", "tags": ["why?", "a?b"]}
    doc = frontmatter.parse(frontmatter.render(fields, "body\n"))
    assert doc.error is None and doc.fields == fields


@FUZZ
@given(
    fields=st.dictionaries(keys, values, min_size=1, max_size=5),
    change_key=keys,
    change=values,
    body=st.text(max_size=100),
)
def test_update_changes_only_what_it_is_asked(fields: dict, change_key: str, change, body: str) -> None:
    text = frontmatter.render(fields, body)
    updated = frontmatter.update(text, {change_key: change})
    doc = frontmatter.parse(updated)
    assert doc.error is None and doc.body == body
    assert doc.fields == {**fields, change_key: change}
    new_body = frontmatter.update(text, {}, body="replaced\n")
    gap = re.match(r"(?:[ \t]*\r?\n)*", body)
    kept = gap.group(0) if gap else ""  # the blank lines after the header stay (issue 28.6)
    assert new_body == text[: len(text) - len(body)] + kept + "replaced\n"


@FUZZ
@given(text=documents, body=st.text(max_size=50))
def test_update_of_any_text_keeps_the_header_lines(text: str, body: str) -> None:
    result = frontmatter.update(text, {}, body=body)
    assert result.endswith(body)
    doc = frontmatter.parse(text)
    if doc.header is not None:
        assert doc.header in result


INDEX_BITS = [
    "- [", "](", ")", " — ", " - ", "x.md", "a/b.md", "<c d.md>", "## ", "# ", "```", "\n",
    "\r\n", "title", "hook", "\\]", "[", "]", "http://x", "#anchor", "数据", "😀", " ", "*", "+",
]
index_texts = st.one_of(
    st.text(max_size=400),
    st.lists(st.sampled_from(INDEX_BITS), max_size=60).map("".join),
)
files = st.lists(
    st.text(alphabet=string.ascii_lowercase + "_-数", min_size=1, max_size=12), min_size=1,
    max_size=3,
).map(lambda parts: "/".join(parts) + ".md")
titles = st.text(max_size=60)


@FUZZ
@given(text=index_texts)
def test_index_parsing_and_limits(text: str) -> None:
    index = parse_index(text)
    lines = text.split("\n")
    for entry in index.entries:
        assert 1 <= entry.line <= len(lines)
    loaded = load_for_model(text)
    shown = loaded.text
    if loaded.warning:
        shown = shown.replace(loaded.warning, "").rstrip()
    assert len(shown.split("\n")) <= MAX_LINES and utf16_len(shown) <= MAX_CHARS
    assert check(text).status in ("ok", "near", "over")


@FUZZ
@given(text=index_texts, file=files, title=titles, hook=titles)
def test_upsert_and_remove_touch_only_their_file(text: str, file: str, title: str, hook: str) -> None:
    before = parse_index(text)
    assume(before.find(file) is None)
    added = upsert_entry(text, file, title, hook)
    after = parse_index(added)
    assert after.find(file) is not None
    assert [(e.file, e.title, e.hook) for e in after.entries if e.file != file] == [
        (e.file, e.title, e.hook) for e in before.entries
    ]
    removed = remove_entry(added, file)
    assert parse_index(removed).find(file) is None
    if not before.open_fence:  # an unclosed ``` block is closed so the pointer is visible
        assert removed.rstrip() == text.rstrip()


@FUZZ
@given(lines=st.lists(st.one_of(st.binary(max_size=80), st.sampled_from([
    b'{"type":"user","uuid":"u1","message":{"role":"user","content":"hi"}}',
    b'{"type":"system","subtype":"compact_boundary","uuid":"b","parentUuid":null}',
    b'{"type":"assistant","uuid":"a","parentUuid":"u1","message":{"content":[]}}',
    b'{"type":"progress","uuid":"p"}', b"[]", b"null", b'{"type":1}', b'{"uuid":5}',
    b'{"type":"user","message":"not a dict"}', b"\xff\xfe", b"",
])), max_size=30))
def test_log_reader_survives_any_bytes(tmp_path_factory, lines: list[bytes]) -> None:
    path = Path(tmp_path_factory.mktemp("log")) / "s.jsonl"
    path.write_bytes(b"\n".join(lines))
    entries = read_entries(path)
    for entry in entries:
        assert isinstance(entry, dict) and entry["type"] in ("user", "assistant", "system")
    assert entries.stats.lines_read >= len(entries)


SECRET_BITS = [
    "password", "=", ": ", " ", "'", '"', "\n", "token", "api_key", "Bearer ", "sk-ant-",
    "sk-", "AKIA", "Q2Z4K3J7ABCDEFGH", "ghp_", "x7" * 18, "abcDEF1234567890XYZ", "https://u:",
    "@host", "-----BEGIN PRIVATE KEY-----\n", "MIIB" * 8, "os.environ['K']", "<your-key>",
    "> ", "\\n", "machine h password ", "curl -u a:", "mysql -p", "GOCSPX-", "-----END PRIVATE KEY-----",
]


@FUZZ
@given(text=st.one_of(st.text(max_size=300),
                      st.lists(st.sampled_from(SECRET_BITS), max_size=20).map("".join)))
def test_guard_never_raises_and_redaction_hides_every_finding(text: str) -> None:
    found = find_secrets(text)
    # The labels are ours: a secret that happens to read "word" may appear in them.
    redacted = re.sub(r"\[REDACTED [^\]]*\]", "\x00", redact(text, found))
    for finding in found:
        assert 1 <= finding.line <= text.count("\n") + 1
        assert text[finding.start : finding.end] not in redacted
    if found:
        with pytest.raises(SecretRefused):
            check_no_secrets(text, "fuzz")
    else:
        check_no_secrets(text, "fuzz")
