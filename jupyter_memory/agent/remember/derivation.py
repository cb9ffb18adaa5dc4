"""Offline derivation: a name, description and type for a memory, by fixed rules.

The same text always gives the same memory, and the person is told what was guessed.
"""

from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass

from jupyter_memory.errors import ConfigError
from jupyter_memory.memdir.markdown import fence_flags
from jupyter_memory.memdir.record import MEMORY_TYPES
from jupyter_memory.memdir.words import FUNCTION_WORDS

__all__ = ["Derived", "derive", "guess_type"]


@dataclass(frozen=True)
class Derived:
    """Name, description and type worked out without a model, and what was guessed."""

    name: str
    description: str
    type: str
    guessed: tuple[str, ...] = ()
    type_reason: str = ""


_MARKUP = re.compile(r"\*\*|__|[*`]")
_LEAD = re.compile(r"^\s*(?:#{1,6}|>)\s*")
_HEADING = re.compile(r"^\s{0,3}#{1,6}\s")
_LINK = re.compile(r"\[([^\]]*)\]\([^)]*\)")
_BULLET = re.compile(r"^\s*(?:[-+*]|\d+[.)])\s+")
_LABEL_LINE = re.compile(r"^\s*\**\s*(why|how to apply|原因|为什么|如何应用|理由)\s*[:：]", re.I)
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+|(?<=[。！？])")
_WORD = re.compile(r"\w+", re.UNICODE)
#: Words a derived name leaves out: function words and the emphasis of a correction.
_STOPWORDS = FUNCTION_WORDS | {"not", "never", "always", "please"}
_DESCRIPTION_CHARS = 150
_NAME_WORDS = 5
_NAME_CJK_CHARS = 12


def _is_wide(ch: str) -> bool:
    return unicodedata.east_asian_width(ch) in ("W", "F")


def _plain(body: str, *, headings: bool = True) -> list[str]:
    """The body's lines as plain text: no code blocks, markup, links or list bullets."""
    lines: list[str] = []
    raw = body.splitlines()
    for line, fenced in zip(raw, fence_flags(raw), strict=True):
        if fenced or (not headings and _HEADING.match(line)):
            continue
        text = _LINK.sub(r"\1", line)
        text = _BULLET.sub("", _LEAD.sub("", text))
        text = _MARKUP.sub("", text)
        text = " ".join(text.split())
        if text:
            lines.append(text)
    return lines


def _first_sentence(body: str) -> str:
    lines = _plain(body, headings=False) or _plain(body)
    facts = [x for x in lines if not _LABEL_LINE.match(x)] or lines
    if not facts:
        return ""
    first = facts[0]
    parts = [p for p in _SENTENCE_END.split(first) if p.strip()]
    return (parts[0] if parts else first).strip()


def _shorten(text: str, limit: int) -> str:
    if len(text) <= limit:
        return text
    cut = text[: limit - 1]
    space = cut.rfind(" ")
    if space > limit // 2:
        cut = cut[:space]
    return cut.rstrip(" ,;:") + "…"


def _derive_name(sentence: str) -> str:
    words = _WORD.findall(sentence)
    picked: list[str] = []
    for word in words:
        if all(_is_wide(ch) for ch in word):  # an unspaced CJK run: keep its first characters
            picked.append(word[:_NAME_CJK_CHARS])
        elif word.lower() not in _STOPWORDS:
            picked.append(word.lower())
        if len(picked) >= _NAME_WORDS or (picked and _is_wide(picked[-1][0])):
            break
    if not picked:
        picked = [w.lower() for w in words[:_NAME_WORDS]]
    return "-".join(picked) or "memory"


_TYPE_RULES: tuple[tuple[str, re.Pattern[str], str], ...] = (
    ("user", re.compile(
        r"\b(i am|i'm|my (role|team|job|background|title)|i work|i lead|i manage|i own)\b|"
        r"我是|我负责|我的(角色|职位|团队)|私は|僕は|저는", re.I),
     "it describes who the person is"),
    ("reference", re.compile(
        r"https?://|\b(dashboard|tracker|wiki|jira|confluence|notion|grafana|looker|tableau|"
        r"metabase|sharepoint|google (drive|sheet|doc)s?|slack channel|runbook)\b|"
        r"仪表盘|看板|文档在|ダッシュボード|위키", re.I),
     "it points at an outside system or a link"),
    ("feedback", re.compile(
        r"\b(don'?t|do not|never|always|prefer|please|avoid|stop|instead of|make sure)\b|"
        r"不要|别再|总是|务必|请|しないで|ください|常に|하지 마", re.I),
     "it asks for a way of working"),
)


def guess_type(body: str) -> tuple[str, str]:
    """A memory type for ``body`` by fixed rules, and the reason, for the offline path.

    First match wins: who the person is → ``user``; a link or an outside system →
    ``reference``; an instruction about how to work → ``feedback``; else ``project``.
    """
    text = "\n".join(_plain(body))
    for kind, pattern, reason in _TYPE_RULES:
        if pattern.search(text):
            return kind, reason
    return "project", "nothing marks it as a person, a way of working or an outside system"


def derive(
    body: str, *, name: str | None = None, description: str | None = None,
    type: str | None = None,
) -> Derived:
    """Fill in what was not given, deterministically: the same body always gives the same memory.

    The description is the first sentence of the fact (lines labelled Why / How to apply
    are skipped), cut to 150 characters; the name is its first few meaningful words (or
    the first characters of an unspaced CJK sentence); the type comes from
    :func:`guess_type`.
    """
    sentence = _first_sentence(body)
    guessed: list[str] = []
    if not description:
        description = _shorten(sentence, _DESCRIPTION_CHARS) or "a note saved with %%remember"
        guessed.append("description")
    if not name:
        name = _derive_name(sentence)
        guessed.append("name")
    reason = ""
    if not type:
        type, reason = guess_type(body)
        guessed.append("type")
    if type not in MEMORY_TYPES:
        raise ConfigError(f"Unknown memory type {type!r}; use one of {', '.join(MEMORY_TYPES)}.")
    return Derived(name, description, type, tuple(guessed), reason)
