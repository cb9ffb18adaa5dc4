"""``%%remember``: turn a piece of text into one memory (SPEC §6, the quick-add path).

Three ways to file it, from cheapest to smartest:

* **direct** — name, description and type are all given: the store writes the file.
* **offline** — no model (or ``--offline``): a name, description and type are derived
  from the text by fixed rules, so the same text always gives the same memory, and the
  person is told what was guessed.
* **agent** — a short side run of the model with the memory tools only (Read, Grep,
  Glob, and Write/Edit inside the target folder): it picks the type, writes a specific
  description, reads existing memories and updates one instead of adding a duplicate.

Whatever path is taken, relative dates ("yesterday", "上周", "先週") are flagged with the
absolute date they stand for, because a memory outlives the day it was written.
"""

from __future__ import annotations

import datetime as _dt
import re
import unicodedata
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from jupyter_memory.context import prompts
from jupyter_memory.errors import ConfigError, MemoryDisabled
from jupyter_memory.memdir import frontmatter
from jupyter_memory.memdir.index import INDEX_NAME
from jupyter_memory.memdir.markdown import fence_flags
from jupyter_memory.memdir.record import MEMORY_TYPES
from jupyter_memory.memdir.scopes import DEFAULT_AGENT, scope_dir
from jupyter_memory.memdir.store import MemoryStore, WriteResult
from jupyter_memory.memdir.words import FUNCTION_WORDS

if TYPE_CHECKING:
    from jupyter_memory.agent.session import Session

__all__ = [
    "Derived",
    "RelativeDate",
    "RememberResult",
    "date_warning",
    "derive",
    "find_relative_dates",
    "guess_type",
    "remember_direct",
    "remember_offline",
    "remember_with_agent",
    "scope_store",
]

# ----------------------------------------------------------------------------- scopes


def scope_store(session: Session, scope: str = "memdir", agent: str = DEFAULT_AGENT) -> MemoryStore:
    """The store of ``scope`` for ``session``; refuses when auto memory is off.

    With auto memory off, agent scopes have no effect either (SPEC §8), so they are
    refused with the same message.
    """
    memdir = session.memdir
    if session.store is None or memdir is None:
        follows = "" if scope == "memdir" else ", and agent-scoped memory follows it"
        raise MemoryDisabled(
            f"Memory is off for this project ({session.location.enabled_reason}){follows}. "
            "Switch it on for this session with %memory on."
        )
    if scope in ("memdir", "private"):
        store: MemoryStore = session.store
        return store
    if scope == "team":
        team: MemoryStore | None = getattr(session.store, "team", None)
        if team is None:
            raise ConfigError("This session has no team folder; team memory needs the "
                              "project's memory store (see docs/team.md).")
        return team
    folder = scope_dir(scope, memdir=memdir, project_root=session.project_root,
                       agent=agent, env=session.env)
    return MemoryStore(folder, session_id=session.session_id, maintain_index=True)


# ----------------------------------------------------------------------------- relative dates


@dataclass(frozen=True)
class RelativeDate:
    """A relative date phrase found in a text, and the absolute date it stands for."""

    phrase: str
    line: int
    suggestion: str

    def to_json(self) -> dict[str, Any]:
        return {"phrase": self.phrase, "line": self.line, "suggestion": self.suggestion}


_WEEKDAYS_EN = ("monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday")
_WEEKDAYS_ZH = "一二三四五六日"
_WEEKDAYS_JA = "月火水木金土日"
_NUMBER_WORDS = {"a": 1, "an": 1, "one": 1, "two": 2, "three": 3, "four": 4, "five": 5,
                 "six": 6, "seven": 7, "eight": 8, "nine": 9, "ten": 10, "few": 3}
_CJK_DIGITS = {"一": 1, "两": 2, "二": 2, "三": 3, "四": 4, "五": 5, "六": 6, "七": 7,
               "八": 8, "九": 9, "十": 10, "几": 3}


def _monday(day: _dt.date) -> _dt.date:
    return day - _dt.timedelta(days=day.weekday())


def _add_months(day: _dt.date, months: int) -> _dt.date:
    index = day.year * 12 + day.month - 1 + months
    year, month = divmod(index, 12)
    return _dt.date(year, month + 1, 1)


def _week(day: _dt.date) -> str:
    return f"the week of {_monday(day).isoformat()}"


def _month(day: _dt.date) -> str:
    return day.strftime("%Y-%m")


def _quarter(day: _dt.date) -> str:
    return f"{day.year}-Q{(day.month - 1) // 3 + 1}"


def _weekday_in(today: _dt.date, weekday: int, which: str) -> _dt.date:
    """``last``: the most recent such day before today; ``next``: the first after today;
    ``this``: that day of the current week; ``last-week``/``next-week``: that day of the
    previous or following calendar week."""
    if which == "last":
        delta = (today.weekday() - weekday) % 7 or 7
        return today - _dt.timedelta(days=delta)
    if which == "next":
        delta = (weekday - today.weekday()) % 7 or 7
        return today + _dt.timedelta(days=delta)
    base = _monday(today) + _dt.timedelta(days=weekday)
    if which == "last-week":
        return base - _dt.timedelta(days=7)
    if which == "next-week":
        return base + _dt.timedelta(days=7)
    return base


def _span(today: _dt.date, unit: str, amount: int) -> str:
    """The date ``amount`` units from today (negative: in the past), in a fitting form."""
    if unit == "day":
        return (today + _dt.timedelta(days=amount)).isoformat()
    if unit == "week":
        return _week(today + _dt.timedelta(days=7 * amount))
    if unit == "month":
        return _month(_add_months(today, amount))
    if unit == "quarter":
        return _quarter(_add_months(today, 3 * amount))
    return str(today.year + amount)


_EN_UNITS = {"day": "day", "days": "day", "week": "week", "weeks": "week", "month": "month",
             "months": "month", "year": "year", "years": "year", "quarter": "quarter",
             "quarters": "quarter"}
_ZH_UNITS = {"天": "day", "日": "day", "周": "week", "星期": "week", "个星期": "week",
             "个月": "month", "月": "month", "年": "year"}
_JA_UNITS = {"日": "day", "週間": "week", "週": "week", "か月": "month", "ヶ月": "month",
             "ヵ月": "month", "カ月": "month", "年": "year"}

def _rules() -> list[tuple[re.Pattern[str], Any]]:
    """Patterns, longest and most specific first, each with a function of (match, today)."""
    ci = re.IGNORECASE
    weekday = "|".join(_WEEKDAYS_EN)
    num = r"(\d+|" + "|".join(_NUMBER_WORDS) + r")"
    units = "|".join(_EN_UNITS)

    def n(text: str) -> int:
        return int(text) if text.isdigit() else _NUMBER_WORDS[text.lower()]

    def cjk_n(text: str) -> int:
        return int(text) if text.isdigit() else _CJK_DIGITS.get(text, 1)

    def day(offset: int) -> Any:
        return lambda m, t: (t + _dt.timedelta(days=offset)).isoformat()

    def unit(which: str, amount: int) -> Any:
        return lambda m, t: _span(t, which, amount)

    return [
        # English
        (re.compile(r"\bthe day before yesterday\b", ci), day(-2)),
        (re.compile(r"\bthe day after tomorrow\b", ci), day(2)),
        (re.compile(rf"\b{num} ({units}) ago\b", ci),
         lambda m, t: _span(t, _EN_UNITS[m.group(2).lower()], -n(m.group(1)))),
        (re.compile(rf"\bin {num} ({units})\b", ci),
         lambda m, t: _span(t, _EN_UNITS[m.group(2).lower()], n(m.group(1)))),
        (re.compile(rf"\b(last|next|this) ({weekday})\b", ci),
         lambda m, t: _weekday_in(t, _WEEKDAYS_EN.index(m.group(2).lower()),
                                  m.group(1).lower()).isoformat()),
        (re.compile(r"\b(last|next|this) (week|month|year|quarter)\b", ci),
         lambda m, t: _span(t, m.group(2).lower(),
                            {"last": -1, "next": 1, "this": 0}[m.group(1).lower()])),
        (re.compile(r"\byesterday\b", ci), day(-1)),
        (re.compile(r"\btomorrow\b", ci), day(1)),
        (re.compile(r"\b(today|tonight|this (morning|afternoon|evening))\b", ci), day(0)),
        # Chinese
        (re.compile(r"(上|下|本|这)(个)?(周|星期|礼拜)([一二三四五六日天])"),
         lambda m, t: _weekday_in(
             t, 6 if m.group(4) in "日天" else _WEEKDAYS_ZH.index(m.group(4)),
             {"上": "last-week", "下": "next-week"}.get(m.group(1), "this")).isoformat()),
        (re.compile(r"([0-9]+|[一两二三四五六七八九十几])(个星期|星期|个月|天|周|年)(前|后|以前|以后)"),
         lambda m, t: _span(t, _ZH_UNITS[m.group(2)],
                            cjk_n(m.group(1)) * (-1 if m.group(3).endswith("前") else 1))),
        (re.compile(r"大前天"), day(-3)),
        (re.compile(r"前天"), day(-2)),
        (re.compile(r"大后天"), day(3)),
        (re.compile(r"后天"), day(2)),
        (re.compile(r"昨天|昨晚"), day(-1)),
        (re.compile(r"明天"), day(1)),
        (re.compile(r"今天|今晚"), day(0)),
        (re.compile(r"上(个)?(周|星期|礼拜)"), unit("week", -1)),
        (re.compile(r"下(个)?(周|星期|礼拜)"), unit("week", 1)),
        (re.compile(r"(本|这)(个)?(周|星期|礼拜)"), unit("week", 0)),
        (re.compile(r"上(个)?月"), unit("month", -1)),
        (re.compile(r"下(个)?月"), unit("month", 1)),
        (re.compile(r"(本|这个)月"), unit("month", 0)),
        (re.compile(r"前年"), unit("year", -2)),
        # Japanese
        (re.compile(r"(先週|来週|今週)の?([月火水木金土日])曜(日)?"),
         lambda m, t: _weekday_in(
             t, _WEEKDAYS_JA.index(m.group(2)),
             {"先週": "last-week", "来週": "next-week"}.get(m.group(1), "this")).isoformat()),
        (re.compile(r"([0-9]+)(週間|週|か月|ヶ月|ヵ月|カ月|日|年)(前|後)"),
         lambda m, t: _span(t, _JA_UNITS[m.group(2)],
                            int(m.group(1)) * (-1 if m.group(3) == "前" else 1))),
        (re.compile(r"一昨日|おととい"), day(-2)),
        (re.compile(r"明後日|あさって"), day(2)),
        (re.compile(r"昨日|きのう"), day(-1)),
        (re.compile(r"明日|あした"), day(1)),
        (re.compile(r"今日|きょう"), day(0)),
        (re.compile(r"先週"), unit("week", -1)),
        (re.compile(r"来週"), unit("week", 1)),
        (re.compile(r"今週"), unit("week", 0)),
        (re.compile(r"先月"), unit("month", -1)),
        (re.compile(r"来月"), unit("month", 1)),
        (re.compile(r"今月"), unit("month", 0)),
        # Chinese and Japanese share these
        (re.compile(r"去年|昨年"), unit("year", -1)),
        (re.compile(r"明年|来年"), unit("year", 1)),
        (re.compile(r"今年"), unit("year", 0)),
        # Korean
        (re.compile(r"그저께"), day(-2)),
        (re.compile(r"어제"), day(-1)),
        (re.compile(r"내일"), day(1)),
        (re.compile(r"오늘"), day(0)),
        (re.compile(r"지난\s?주"), unit("week", -1)),
        (re.compile(r"다음\s?주"), unit("week", 1)),
        (re.compile(r"이번\s?주"), unit("week", 0)),
        (re.compile(r"지난\s?달"), unit("month", -1)),
        (re.compile(r"다음\s?달"), unit("month", 1)),
        (re.compile(r"작년"), unit("year", -1)),
        (re.compile(r"내년"), unit("year", 1)),
    ]


_RULES = _rules()
_INLINE_CODE = re.compile(r"`[^`\n]*`")


def find_relative_dates(text: str, today: _dt.date | None = None) -> list[RelativeDate]:
    """Relative date phrases in ``text`` (code spans and fenced blocks ignored), in order.

    Each comes with the absolute date it stands for, counted from ``today``: a day
    (``2026-03-13``), a week (``the week of 2026-03-09``), a month (``2026-02``), a
    quarter or a year. Overlapping phrases are reported once (the longest rule wins).
    """
    today = today or _dt.date.today()
    found: list[RelativeDate] = []
    lines = text.splitlines()
    for number, (line, fenced) in enumerate(zip(lines, fence_flags(lines), strict=True), 1):
        if fenced:
            continue
        visible = _INLINE_CODE.sub(lambda m: " " * len(m.group(0)), line)
        taken: list[tuple[int, int]] = []
        hits: list[tuple[int, RelativeDate]] = []
        for pattern, compute in _RULES:
            for match in pattern.finditer(visible):
                start, end = match.span()
                if any(start < b and a < end for a, b in taken):
                    continue
                taken.append((start, end))
                hits.append((start, RelativeDate(match.group(0), number, compute(match, today))))
        found.extend(hit for _, hit in sorted(hits, key=lambda h: h[0]))
    return found


def date_warning(found: list[RelativeDate]) -> str | None:
    """One message for the person listing each relative date and its absolute form."""
    if not found:
        return None
    items = "; ".join(f'"{d.phrase}" (line {d.line}) → {d.suggestion}' for d in found)
    many = len(found) > 1
    return (
        f"Relative date{'s' if many else ''} in this memory: {items}. A memory is read long "
        "after it was written, when \"yesterday\" means another day: replace "
        f"{'them with absolute dates' if many else 'it with the absolute date'} "
        "(%memory edit NAME)."
    )


# ----------------------------------------------------------------------------- offline derivation


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


# ----------------------------------------------------------------------------- results


@dataclass
class RememberResult:
    """What ``%%remember`` did, for the magic to report."""

    how: str  # direct | offline | agent
    folder: Path
    files: list[str] = field(default_factory=list)
    created: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    dates: list[RelativeDate] = field(default_factory=list)
    agent_text: str = ""

    @property
    def saved(self) -> bool:
        return bool(self.files)

    def summary(self) -> str:
        """Lines for the person: what was saved where, what was guessed, date warnings."""
        if not self.files:
            lines = ["Nothing was saved."]
            if self.agent_text:
                lines.append(f"The agent said: {self.agent_text}")
        else:
            parts = [f"{f} ({'new' if f in self.created else 'updated'})" for f in self.files]
            lines = [f"Saved {', '.join(parts)} in {self.folder}."]
        lines += self.notes
        warning = date_warning(self.dates)
        if warning:
            lines.append(warning)
        return "\n".join(lines)

    def to_json(self) -> dict[str, Any]:
        return {"how": self.how, "folder": str(self.folder), "files": list(self.files),
                "created": list(self.created), "notes": list(self.notes),
                "relative_dates": [d.to_json() for d in self.dates],
                "agent_text": self.agent_text}


def _dates_in(store: MemoryStore, files: list[str], today: _dt.date | None) -> list[RelativeDate]:
    found: list[RelativeDate] = []
    for file in files:
        found += find_relative_dates(frontmatter.parse(store.read(file)).body, today)
    return found


def remember_direct(
    store: MemoryStore, body: str, *, name: str, description: str, type: str,
    file: str | None = None, today: _dt.date | None = None,
) -> RememberResult:
    """Write the memory exactly as given (no model); an existing file is an error."""
    result: WriteResult = store.create(name, description, type, body, file=file,
                                       provenance="user")
    out = RememberResult("direct", store.memdir, [result.file], [result.file])
    out.notes += result.messages
    out.dates = find_relative_dates(body, today)
    return out


def remember_offline(
    store: MemoryStore, body: str, *, name: str | None = None, description: str | None = None,
    type: str | None = None, file: str | None = None, reason: str = "",
    today: _dt.date | None = None,
) -> RememberResult:
    """Derive what is missing by fixed rules, write it, and say what was guessed."""
    derived = derive(body, name=name, description=description, type=type)
    out = remember_direct(store, body, name=derived.name, description=derived.description,
                          type=derived.type, file=file, today=today)
    out.how = "offline"
    if derived.guessed:
        bits = []
        if "type" in derived.guessed:
            bits.append(f"type {derived.type} ({derived.type_reason})")
        if "name" in derived.guessed:
            bits.append(f"name {derived.name!r}")
        if "description" in derived.guessed:
            bits.append(f"description {derived.description!r}")
        why = f"{reason} " if reason else ""
        out.notes.insert(0, (
            f"{why}Derived without a model: {'; '.join(bits)}. Pass --type, --name and "
            "--description to choose them, or fix them with %memory edit."
        ).strip())
    return out


# ----------------------------------------------------------------------------- agent

REMEMBER_SYSTEM = """\
You file memories for a data scientist who works in Jupyter. They ran the `%%remember` \
command on a piece of text, and your only job in this exchange is to store that text as \
a memory, well: the right type, a specific description, no duplicate. You have Read, Grep \
and Glob, and Write and Edit inside the memory folder only; nothing else."""


def remember_prompt(
    body: str, *, folder: Path, manifest: str, today: str, fixed: Mapping[str, str]
) -> str:
    """The instruction of a ``%%remember`` run: the text, what exists, and the steps."""
    given = "".join(f"\n- {key}: {value}" for key, value in fixed.items() if value)
    fixed_text = f"The person fixed these fields; use them as given:{given}\n\n" if given else ""
    existing = manifest or "(none yet)"
    return f"""\
Store the text at the end of this message as one memory in `{folder}`.
Today's date is {today}.

Memories that already exist there (type, file, last change, description):
{existing}

{fixed_text}Steps:
1. If an existing memory already covers this fact, Read it and update it with Edit (or \
Write the merged text) instead of creating a second file. Glob or Grep the folder when \
the descriptions are not enough to tell.
2. Otherwise Write a new file named `<type>_<short_topic>.md` with frontmatter `name`, \
`description` (one specific line: it is all a future search sees) and `type` (user, \
feedback, project or reference), then the text as the body. Keep the person's wording; \
for feedback and project memories keep or add the **Why:** and **How to apply:** lines \
when the text gives the reason, and do not invent one.
3. Replace relative dates ("yesterday", "last week", "上周", "先週") with absolute dates \
counted from today.
4. The index `{INDEX_NAME}` is kept up to date for you: do not edit it.
5. Finish with one line naming the file and whether it is new or updated.

The text:
<<<
{body.strip()}
>>>"""


def remember_with_agent(
    session: Session,
    client: Any,
    store: MemoryStore,
    body: str,
    *,
    name: str | None = None,
    description: str | None = None,
    type: str | None = None,
    today: _dt.date | None = None,
    max_calls: int = 5,
) -> RememberResult:
    """Let the model file ``body`` with the memory tools, sandboxed to ``store``'s folder.

    The fields the person gave are enforced after the run, whatever the model wrote.
    Raises whatever the model call raises (the caller reports it and offers
    ``--offline``).
    """
    from jupyter_memory.agent.extraction import RecordingStore, memory_registry, run_sandboxed
    from jupyter_memory.agent.tools import PermissionPolicy, ToolContext
    from jupyter_memory.context.assemble import CACHE
    from jupyter_memory.memdir.scan import manifest, scan

    day = today or _dt.date.today()
    folder = Path(store.memdir)
    recording = RecordingStore(folder, session_id=session.session_id, maintain_index=True,
                               provenance_default="user")
    ctx = ToolContext(project_root=session.project_root, memdir=folder, store=recording,
                      permission=PermissionPolicy(mode="deny", interactive=False),
                      restrict_to_memdir=True, provenance="user")
    registry = memory_registry(session.tools)
    definitions = registry.definitions()
    rules = prompts.memory_rules(str(folder), mode="index", maintain_index=True)
    system = [{"type": "text", "text": REMEMBER_SYSTEM},
              {"type": "text", "text": rules, "cache_control": dict(CACHE)}]
    fixed = {"type": type or "", "name": name or "", "description": description or ""}
    first = {"role": "user", "content": [{"type": "text", "text": remember_prompt(
        body, folder=folder, manifest=manifest(scan(folder)), today=day.isoformat(),
        fixed=fixed)}]}

    def body_for(messages: list[dict[str, Any]]) -> dict[str, Any]:
        return {"model": session.config.model, "max_tokens": session.config.max_tokens,
                "system": system, "tools": definitions, "messages": messages}

    from jupyter_memory.context.pricing import charge

    run = run_sandboxed(client, body_for, [first],
                        lambda tool, args: registry.run(tool, args, ctx), max_calls=max_calls,
                        on_response=lambda m: charge(session, "remember", m, session.config.model))
    files = [f for f in recording.before if f != INDEX_NAME and (folder / f).exists()]
    created = [f for f in files if recording.before[f] is None]
    out = RememberResult("agent", folder, files, created, agent_text=run.final_text)
    enforce = {k: v for k, v in (("type", type), ("name", name),
                                 ("description", description)) if v}
    for file in files:
        if enforce:
            doc = frontmatter.parse(store.read(file))
            changes = {k: v for k, v in enforce.items() if doc.get(k) != v}
            if changes:
                store.update(file, provenance="user", type=changes.get("type"),
                             name=changes.get("name"), description=changes.get("description"))
    settle = getattr(store, "settle", None)  # the team folder's rules (SPEC §8)
    if settle is not None:
        out.notes += settle(files)
        files = [f for f in files if (folder / f).exists()]
        out.files, out.created = files, [f for f in created if f in files]
    if run.stopped:
        out.notes.append(f"The agent used all {max_calls} model calls before it finished.")
    out.dates = _dates_in(store, files, day)
    return out
