"""frontmatter: every real shape reads, malformed headers never lose a file, edits are surgical."""

from __future__ import annotations

import string

import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from jupyter_memory.memdir import frontmatter as fm

FLAT = """---
name: revenue-in-cents
description: The sales.revenue column is stored in cents, not dollars
type: project
---
The `revenue` column of the sales table holds integer cents.
"""

FLAT_ORIGIN = """---
name: no-full-frames
description: Never print whole data frames
type: feedback
originSessionId: 0b6f1c1e-3a4b-4c5d-8e9f-0123456789ab
---
Show `.head()` instead.
"""

NESTED = """---
name: db-migration-needs-backup
description: 生产库跑迁移前必须先手动快照，CI 不会自动备份
metadata:
  node_type: memory
  type: project
  originSessionId: 00000000-0000-4000-8000-000000000000
  modified: 2026-03-01T10:00:00.000Z
---
在 shop-web 的生产环境执行迁移之前，必须先手动触发一次快照。
"""


# --------------------------------------------------------------------------- shapes


def test_flat() -> None:
    doc = fm.parse(FLAT)
    assert doc.shape == "flat"
    assert doc.fields == {
        "name": "revenue-in-cents",
        "description": "The sales.revenue column is stored in cents, not dollars",
        "type": "project",
    }
    assert doc.body == "The `revenue` column of the sales table holds integer cents.\n"
    assert doc.header is not None and doc.header.startswith("name: revenue-in-cents\n")
    assert doc.error is None


def test_flat_with_origin() -> None:
    doc = fm.parse(FLAT_ORIGIN)
    assert doc.shape == "flat+origin"
    assert doc.get("originSessionId") == "0b6f1c1e-3a4b-4c5d-8e9f-0123456789ab"
    assert doc.get("type") == "feedback"


def test_nested_reads_through_metadata() -> None:
    doc = fm.parse(NESTED)
    assert doc.shape == "nested"
    assert doc.get("type") == "project"
    assert doc.get("node_type") == "memory"
    assert doc.get("modified") == "2026-03-01T10:00:00.000Z"  # text, not a datetime
    assert doc.get("description").startswith("生产库")
    assert "originSessionId" in doc
    assert doc.get("missing", "fallback") == "fallback"
    assert doc.fields["metadata"]["type"] == "project"


def test_top_level_wins_over_metadata() -> None:
    doc = fm.parse("---\ntype: user\nmetadata:\n  type: project\n---\n")
    assert doc.get("type") == "user"


def test_no_frontmatter() -> None:
    text = "# Just notes\n\nNo header here.\n"
    doc = fm.parse(text)
    assert doc.shape == "none"
    assert doc.header is None
    assert doc.fields == {}
    assert doc.body == text
    assert not fm.has_frontmatter(text)


def test_empty_header_is_frontmatter() -> None:
    doc = fm.parse("---\n---\nbody")
    assert doc.shape == "flat"
    assert doc.fields == {}
    assert doc.body == "body"
    assert doc.error is None


def test_yaml_12_scalars() -> None:
    doc = fm.parse("---\nname: no\nflag: true\ncount: 3\nday: 2026-01-02\n---\n")
    assert doc.fields == {"name": "no", "flag": True, "count": 3, "day": "2026-01-02"}


# --------------------------------------------------------------------------- fences and encodings


def test_crlf_bom_and_trailing_spaces_on_fences() -> None:
    text = "\ufeff---  \r\nname: a\r\ntype: user\r\n---\t\r\nbody\r\n"
    doc = fm.parse(text)
    assert doc.fields == {"name": "a", "type": "user"}
    assert doc.body == "body\r\n"
    assert doc.bom
    assert doc.newline == "\r\n"


def test_missing_closing_fence_means_no_frontmatter() -> None:
    text = "---\nname: x\ntype: user\nand it never closes\n"
    doc = fm.parse(text)
    assert doc.shape == "none"
    assert doc.body == text


def test_closing_fence_at_end_of_file() -> None:
    doc = fm.parse("---\nname: x\n---")
    assert doc.fields == {"name": "x"}
    assert doc.body == ""


def test_fence_must_be_first_line() -> None:
    assert fm.parse("\n---\nname: x\n---\n").shape == "none"
    assert fm.parse("--- name: x\n---\n").shape == "none"


# --------------------------------------------------------------------------- malformed YAML


@pytest.mark.parametrize(
    ("header", "expected"),
    [
        ("description: Use: colons: everywhere", {"description": "Use: colons: everywhere"}),
        ("name: *starred", {"name": "*starred"}),
        ("name: &amp", {"name": None}),  # valid YAML: an anchor on an empty value
        ("name: @handle", {"name": "@handle"}),
        ("name: `code`", {"name": "`code`"}),
        ("description: [unbalanced", {"description": "[unbalanced"}),
        ("description:\tafter a tab", {"description": "after a tab"}),
        ("name: ok\n\tdescription: tab indent", {"name": "ok", "description": "tab indent"}),
        ("name: x\ndescription: - a dash", {"name": "x", "description": "- a dash"}),
        ("name: %percent", {"name": "%percent"}),
    ],
)
def test_awkward_values_are_recovered(header: str, expected: dict[str, object]) -> None:
    doc = fm.parse(f"---\n{header}\n---\nbody\n")
    assert doc.fields == expected
    assert doc.body == "body\n"
    if header != "name: &amp":
        assert doc.error is not None and "quoting" in doc.error


def test_awkward_values_next_to_good_ones() -> None:
    doc = fm.parse("---\nname: n\ndescription: a: b\ntags: [x, y]\ntype: user\n---\n")
    assert doc.fields == {"name": "n", "description": "a: b", "tags": ["x", "y"], "type": "user"}


def test_block_scalar_text_is_not_rewritten_during_recovery() -> None:
    text = "---\ndescription: |\n  keep: this: text\nname: *bad\n---\n"
    doc = fm.parse(text)
    assert doc.fields == {"description": "keep: this: text\n", "name": "*bad"}


def test_unrecoverable_header_keeps_everything() -> None:
    text = "---\nname: x\n  : : [ }\n\t- ]\n---\nthe body\n"
    doc = fm.parse(text)
    assert doc.fields == {}
    assert doc.error is not None and "ignored" in doc.error
    assert doc.header == "name: x\n  : : [ }\n\t- ]\n"
    assert doc.body == "the body\n"


def test_non_mapping_header() -> None:
    doc = fm.parse("---\njust a sentence\n---\nbody")
    assert doc.fields == {}
    assert doc.error is not None
    assert doc.body == "body"


def test_billion_laughs_cannot_expand() -> None:
    lines = ['a: &a ["lol","lol","lol","lol","lol","lol","lol","lol","lol"]']
    for level in "bcdefghi":
        prev = chr(ord(level) - 1)
        lines.append(f"{level}: &{level} [" + ",".join([f"*{prev}"] * 9) + "]")
    doc = fm.parse("---\n" + "\n".join(lines) + "\n---\nbody")
    assert doc.error is not None
    assert doc.body == "body"
    assert all(not isinstance(value, list) or len(value) <= 9 for value in doc.fields.values())
    assert len(repr(doc.fields)) < 10_000


def test_deep_nesting_is_refused() -> None:
    deep = "[" * 10_000 + "]" * 10_000
    doc = fm.parse(f"---\nname: x\nv: {deep}\n---\nbody")
    assert doc.error is not None
    assert doc.body == "body"
    block = "".join(f"{'  ' * i}k{i}:\n" for i in range(200)) + "  " * 200 + "leaf: 1\n"
    doc = fm.parse(f"---\n{block}---\nbody")
    assert doc.error is not None
    assert doc.body == "body"


def test_huge_header_is_not_parsed() -> None:
    header = "".join(f"k{i}: {'v' * 100}\n" for i in range(fm.MAX_HEADER_CHARS // 100))
    doc = fm.parse(f"---\n{header}---\nbody")
    assert doc.fields == {}
    assert doc.error is not None and "longer than" in doc.error
    assert doc.header == header


def test_python_tags_are_not_executed() -> None:
    doc = fm.parse("---\nname: !!python/object/apply:os.system ['echo pwned']\n---\n")
    assert doc.fields.get("name") in (None, "!!python/object/apply:os.system ['echo pwned']")


def test_non_printable_characters_do_not_raise() -> None:
    doc = fm.parse("---\nname: bell\x07\n---\nbody")
    assert doc.body == "body"


# --------------------------------------------------------------------------- render


def test_render_orders_name_description_type_first() -> None:
    text = fm.render(
        {"origin": "agent", "type": "user", "name": "role", "description": "Data analyst"},
        "She works on churn.\n",
    )
    assert text == (
        "---\nname: role\ndescription: Data analyst\ntype: user\norigin: agent\n---\n"
        "She works on churn.\n"
    )


def test_render_quotes_what_yaml_would_misread() -> None:
    text = fm.render(
        {"name": "yes", "description": "Use: colons # and hashes", "n": "0123", "d": "2026-01-01"},
        "",
    )
    loaded = yaml.safe_load(text.split("---\n")[1])  # a stock YAML 1.1 reader agrees
    assert loaded == {
        "name": "yes",
        "description": "Use: colons # and hashes",
        "n": "0123",
        "d": "2026-01-01",
    }


def test_render_nested_metadata_as_block() -> None:
    text = fm.render({"name": "x", "metadata": {"type": "project", "node_type": "memory"}}, "b")
    assert "metadata:\n  type: project\n  node_type: memory\n" in text
    assert fm.parse(text).shape == "nested"


def test_render_multiline_value_stays_on_one_line() -> None:
    text = fm.render({"description": "two\nlines\u2028and more"}, "")
    header_lines = text.split("\n")[1:-2]
    assert len(header_lines) == 1
    assert fm.parse(text).fields["description"] == "two\nlines\u2028and more"


def test_render_body_starting_with_a_fence() -> None:
    body = "---\nnot: a header\n---\n"
    doc = fm.parse(fm.render({}, body))
    assert doc.fields == {}
    assert doc.body == body


# --------------------------------------------------------------------------- update


def test_update_rewrites_only_the_changed_line() -> None:
    text = (
        "---\nname: db  # keep this comment\ndescription: old\n# a comment\ntype: project\n---\nB\n"
    )
    out = fm.update(text, {"description": "new: improved"})
    assert out == (
        '---\nname: db  # keep this comment\ndescription: "new: improved"\n# a comment\n'
        "type: project\n---\nB\n"
    )


def test_update_nested_key_in_place_and_new_key_under_metadata() -> None:
    out = fm.update(NESTED, {"modified": "2026-04-01T00:00:00.000Z", "origin": "agent"})
    lines = out.split("\n")
    assert '  modified: "2026-04-01T00:00:00.000Z"' in lines
    assert (
        lines[lines.index("  modified: " + '"2026-04-01T00:00:00.000Z"') + 1] == "  origin: agent"
    )
    doc = fm.parse(out)
    assert doc.get("origin") == "agent"
    assert doc.fields["metadata"]["modified"] == "2026-04-01T00:00:00.000Z"
    assert doc.body == fm.parse(NESTED).body
    for line in NESTED.split("\n"):
        if not line.startswith("  modified"):
            assert line in lines


def test_update_new_key_goes_top_level_for_flat() -> None:
    out = fm.update(FLAT, {"origin": "user"})
    assert out == FLAT.replace("type: project\n", "type: project\norigin: user\n")


def test_update_top_level_key_of_nested_stays_top_level() -> None:
    out = fm.update(NESTED, {"description": "short"})
    assert "\ndescription: short\nmetadata:\n" in out


def test_update_none_removes_a_key() -> None:
    out = fm.update(FLAT_ORIGIN, {"originSessionId": None})
    assert "originSessionId" not in out
    assert fm.parse(out).shape == "flat"
    assert fm.update(FLAT, {"absent": None}) == FLAT


def test_update_replaces_multiline_values_whole() -> None:
    text = "---\ntags:\n- a\n- b\nnote: |\n  line1\n\n  line2\n\nname: x\n---\n"
    out = fm.update(text, {"tags": ["c"], "note": "one"})
    assert out == "---\ntags: [c]\nnote: one\n\nname: x\n---\n"


def test_update_keeps_crlf_and_bom() -> None:
    text = "\ufeff---\r\nname: a\r\ntype: user\r\n---\r\nbody\r\n"
    out = fm.update(text, {"type": "feedback", "origin": "user"})
    assert out == "\ufeff---\r\nname: a\r\ntype: feedback\r\norigin: user\r\n---\r\nbody\r\n"


def test_update_body() -> None:
    assert fm.update(FLAT, {}, body="New body.\n") == FLAT.split("---\n", 2)[0] + (
        "---\n" + FLAT.split("---\n")[1] + "---\nNew body.\n"
    )
    assert fm.update("---\nname: x\n---", {}, body="b") == "---\nname: x\n---\nb"


def test_file_without_frontmatter_is_not_given_one() -> None:
    text = "plain notes\n"
    assert fm.update(text, {"modified": "2026-01-01"}) == text
    assert fm.update(text, {"modified": "2026-01-01"}, body="new notes\n") == "new notes\n"
    assert fm.update("\ufeffplain", {}, body="x") == "\ufeffx"


def test_update_flow_metadata_rewrites_that_line_only() -> None:
    text = "---\nname: x\nmetadata: {type: project}\n---\n"
    out = fm.update(text, {"origin": "user"})
    assert out == "---\nname: x\nmetadata: {type: project, origin: user}\n---\n"


def test_update_quoted_keys_are_matched() -> None:
    out = fm.update('---\n"name": old\n---\n', {"name": "new"})
    assert out == "---\nname: new\n---\n"


def test_update_on_malformed_header_is_textual() -> None:
    text = "---\ndescription: Use: colons\ntype: user\n---\nbody"
    out = fm.update(text, {"type": "feedback"})
    assert out == "---\ndescription: Use: colons\ntype: feedback\n---\nbody"


# --------------------------------------------------------------------------- properties

_KEYS = st.sampled_from(["name", "description", "type", "origin", "originSessionId", "x", "a b"])
_AWKWARD = st.sampled_from(
    [":", ": ", "*", "&", "@", "`", "[", "]", "{", "}", "#", " #", "\t", "'", '"', "|", ">",
     "-", "- ", "!", "%", "\\", "生", "\ufeff", "\r", "---", "...", "~", "yes", "null"]
)  # fmt: skip
_FRAGMENT = st.one_of(_AWKWARD, st.text(string.ascii_letters + " ", max_size=6))
_VALUE = st.lists(_FRAGMENT, max_size=6).map("".join)
_LINE = st.tuples(st.sampled_from(["", "  ", "\t", "- "]), _KEYS, _VALUE).map(
    lambda parts: f"{parts[0]}{parts[1]}: {parts[2]}"
)


@settings(max_examples=200, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(_LINE, max_size=8), st.text(max_size=40))
def test_parse_never_raises_on_yaml_like_headers(lines: list[str], body: str) -> None:
    text = "---\n" + "\n".join(lines) + "\n---\n" + body
    doc = fm.parse(text)
    assert doc.body == body
    assert isinstance(doc.fields, dict)
    assert fm.update(text, {}) == text


@settings(max_examples=300)
@given(st.text(alphabet=st.sampled_from("-\n\r \t:ab#\ufeff\u2028生"), max_size=40) | st.text())
def test_parse_never_raises_and_never_drops_text(text: str) -> None:
    doc = fm.parse(text)
    if doc.header is None:
        assert doc.body == text.removeprefix("\ufeff")
    else:
        assert text.endswith(doc.body)
        assert doc.header in text
    assert fm.update(text, {}) == text
    assert fm.update(text, {}, body=doc.body) == text


_SCALARS = st.one_of(
    st.text(),
    st.integers(),
    st.booleans(),
    st.none(),
    st.floats(allow_nan=False),
)
_FIELD_VALUES = st.one_of(_SCALARS, st.lists(_SCALARS, max_size=4))


@settings(max_examples=300)
@given(st.dictionaries(st.text(max_size=12), _FIELD_VALUES, max_size=6), st.text())
def test_render_then_parse_round_trips(fields: dict[str, object], body: str) -> None:
    doc = fm.parse(fm.render(fields, body))
    assert doc.fields == fields
    assert doc.body == body
    assert doc.error is None


@settings(max_examples=200)
@given(
    st.dictionaries(st.text(max_size=8), st.text(), min_size=1, max_size=6),
    st.text(),
    st.text(),
)
def test_render_then_parse_round_trips_nested(meta: dict[str, str], name: str, body: str) -> None:
    fields = {"name": name, "metadata": meta}
    doc = fm.parse(fm.render(fields, body))
    assert doc.fields == fields
    assert doc.shape == "nested"


@settings(max_examples=100)
@given(
    st.dictionaries(
        st.text(string.ascii_letters + "_", max_size=8).map("k".__add__), _SCALARS, min_size=1
    ),
    st.data(),
    st.text(),
)
def test_update_touches_only_changed_keys(
    fields: dict[str, object], data: st.DataObject, body: str
) -> None:
    text = fm.render(fields, body)
    keys = data.draw(st.lists(st.sampled_from(sorted(fields)), unique=True, max_size=3))
    new_key = "k" + data.draw(st.text(string.ascii_letters, max_size=8))
    changes = {key: data.draw(_SCALARS.filter(lambda v: v is not None)) for key in keys}
    changes[new_key] = "added"
    out = fm.update(text, changes)

    untouched = [
        line for line in text.split("---\n")[1].splitlines() if line.split(":")[0] not in changes
    ]
    out_lines = fm.parse(out).header.splitlines()  # type: ignore[union-attr]
    assert [line for line in out_lines if line in untouched] == untouched
    doc = fm.parse(out)
    assert doc.body == body
    assert doc.fields == {**fields, **changes}


_SIMPLE_VALUE = st.text(
    alphabet=st.sampled_from("ab Z09.:#-'\"[]{}*&!|>%@`,?~=生\t"), min_size=1, max_size=12
)
_SIMPLE_LINE = st.tuples(
    st.sampled_from(["", "", "  ", "    "]),
    st.sampled_from(["name", "type", "metadata", "yes", "null", "k.v", "_x"]),
    st.one_of(st.just(""), _SIMPLE_VALUE.map(" ".__add__)),
).map(lambda parts: f"{parts[0]}{parts[1]}:{parts[2]}")


@settings(max_examples=300)
@given(st.lists(_SIMPLE_LINE, max_size=6))
def test_fast_path_agrees_with_the_yaml_loader(lines: list[str]) -> None:
    header = "".join(line + "\n" for line in lines)
    fast = fm._load_simple(header)
    if fast is None:
        return
    assert fast == fm._load(header)


def test_fast_path_is_taken_for_ordinary_headers() -> None:
    header = NESTED.split("---\n")[1]
    assert fm._load_simple(header) == fm._load(header)
    assert fm._load_simple(FLAT.split("---\n")[1]) is not None


_ANY_CHAR = st.characters(exclude_categories=())  # includes lone surrogates and controls


@settings(max_examples=200)
@given(st.text(_ANY_CHAR, max_size=20), st.text(_ANY_CHAR, max_size=20))
def test_any_code_point_round_trips_and_parses(value: str, body: str) -> None:
    text = fm.render({"description": value}, body)
    doc = fm.parse(text)
    assert doc.fields == {"description": value}
    assert doc.body == body
    raw = "---\ndescription: " + value.replace("\n", " ") + "\n---\n" + body
    assert fm.parse(raw).body == body
    assert fm.update(raw, {}) == raw
