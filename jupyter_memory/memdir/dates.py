"""Dates in text, found one way for every reader: the recall selector and ``%%remember``.

A message names a time ("the churn numbers from last week", "what happened on 8 May
2023?", "上周的数据", "先週の月曜日"), and a memory should carry absolute dates, because it
is read long after it was written. :func:`find_dates` finds both kinds, absolute
(``2026-03-14``, ``8 May 2023``, ``May 2023``, ``in 2022``, ``2026年3月14日``) and
relative to a day (``yesterday``, ``next Monday``, ``3 days ago``, ``上周三``, ``2日前``),
and gives each the calendar days it names. The offline selector turns them into ranges
to score memories against (:mod:`jupyter_memory.recall.dates`); :func:`find_relative_dates`
lists the relative ones in a memory with the absolute date each stands for.

One table of units, weekday names and number words for English, Chinese and Japanese
(and the common Korean day words), and one parser: a list of rules, most specific first,
where a phrase is taken by the first rule that matches it.
"""

from __future__ import annotations

import datetime as dt
import functools
import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any, NamedTuple

from jupyter_memory.memdir.markdown import fence_flags

__all__ = [
    "NAMED",
    "NUMBERS",
    "PERIODS",
    "STEPS",
    "UNITS",
    "UNIT_DAYS",
    "WEEKDAYS",
    "DateMention",
    "RelativeDate",
    "find_dates",
    "find_relative_dates",
]

# ----------------------------------------------------------------------------- the tables

UNIT_DAYS = {"day": 1, "week": 7, "weekend": 7, "month": 30, "quarter": 91, "year": 365}
"""How many days one of each unit spans, where a span is counted in days."""

UNITS: dict[str, dict[str, str]] = {
    "en": {"day": "day", "days": "day", "week": "week", "weeks": "week", "month": "month",
           "months": "month", "quarter": "quarter", "quarters": "quarter", "year": "year",
           "years": "year"},
    # 日 and a bare 月 are left out: "十日前" and "三月前" read as "before the 10th" and
    # "before March" in Chinese.
    "zh": {"天": "day", "个星期": "week", "星期": "week", "个礼拜": "week", "礼拜": "week",
           "周": "week", "个月": "month", "个季度": "quarter", "季度": "quarter", "年": "year"},
    "ja": {"日": "day", "週間": "week", "週": "week", "か月": "month", "ヶ月": "month",
           "ヵ月": "month", "カ月": "month", "ケ月": "month", "年": "year"},
}
"""The words each language counts units with (``3 days ago``, ``三天前``, ``2日前``)."""

WEEKDAYS: dict[str, dict[str, int]] = {
    "en": {"monday": 0, "tuesday": 1, "wednesday": 2, "thursday": 3, "friday": 4,
           "saturday": 5, "sunday": 6},
    "zh": {"一": 0, "二": 1, "三": 2, "四": 3, "五": 4, "六": 5, "日": 6, "天": 6},
    "ja": {"月": 0, "火": 1, "水": 2, "木": 3, "金": 4, "土": 5, "日": 6},
}
"""Weekday names (Monday is 0): English words, and the character after 星期/周 or before 曜日."""

NUMBERS: dict[str, dict[str, int]] = {
    "en": {"a": 1, "an": 1, "one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6,
           "seven": 7, "eight": 8, "nine": 9, "ten": 10, "eleven": 11, "twelve": 12,
           "couple": 2, "few": 3, "several": 3},
    # Chinese and Japanese numerals; 十 makes tens (十五, 二十, 二十五), 几 and 数 are "a few".
    "cjk": {"零": 0, "一": 1, "二": 2, "两": 2, "三": 3, "四": 4, "五": 5, "六": 6, "七": 7,
            "八": 8, "九": 9, "十": 10, "几": 3, "数": 3},
}
"""Number words a count of units may use."""

STEPS: dict[str, dict[str, int]] = {
    "en": {"last": -1, "past": -1, "previous": -1, "this": 0, "next": 1, "coming": 1},
    "zh": {"上": -1, "下": 1, "本": 0, "这": 0},
}
"""Words that name the unit before, this one or the one after (``last week``, ``上周``)."""

PERIODS: dict[str, dict[str, str]] = {
    "en": {"week": "week", "weekend": "weekend", "month": "month", "quarter": "quarter",
           "year": "year"},
    "zh": {"周": "week", "星期": "week", "礼拜": "week", "月": "month", "季度": "quarter"},
}
"""The periods a step names (``last weekend``, ``上个月``; Japanese has words of its own)."""

NAMED: dict[str, tuple[str, int]] = {
    # English
    "the day before yesterday": ("day", -2), "the day after tomorrow": ("day", 2),
    "yesterday": ("day", -1), "tomorrow": ("day", 1), "today": ("day", 0),
    "tonight": ("day", 0), "this morning": ("day", 0), "this afternoon": ("day", 0),
    "this evening": ("day", 0),
    # Chinese
    "大前天": ("day", -3), "前天": ("day", -2), "大后天": ("day", 3), "后天": ("day", 2),
    "昨天": ("day", -1), "昨晚": ("day", -1), "明天": ("day", 1), "今天": ("day", 0),
    "今晚": ("day", 0), "前年": ("year", -2), "明年": ("year", 1),
    # Japanese
    "一昨日": ("day", -2), "おととい": ("day", -2), "明後日": ("day", 2), "あさって": ("day", 2),
    "昨日": ("day", -1), "きのう": ("day", -1), "明日": ("day", 1), "あした": ("day", 1),
    "今日": ("day", 0), "きょう": ("day", 0),
    "先々週": ("week", -2), "先週": ("week", -1), "今週": ("week", 0), "来週": ("week", 1),
    "再来週": ("week", 2), "先々月": ("month", -2), "先月": ("month", -1), "今月": ("month", 0),
    "来月": ("month", 1), "再来月": ("month", 2), "一昨年": ("year", -2),
    "おととし": ("year", -2), "昨年": ("year", -1), "来年": ("year", 1), "再来年": ("year", 2),
    # Chinese and Japanese
    "去年": ("year", -1), "今年": ("year", 0),
    # Korean (a space inside is optional)
    "그저께": ("day", -2), "어제": ("day", -1), "내일": ("day", 1), "오늘": ("day", 0),
    "지난 주": ("week", -1), "다음 주": ("week", 1), "이번 주": ("week", 0),
    "지난 달": ("month", -1), "다음 달": ("month", 1), "작년": ("year", -1), "내년": ("year", 1),
}
"""Words that name one day or period relative to today (``yesterday``, ``先週``, ``去年``)."""

_MONTHS = {
    "january": 1, "jan": 1, "february": 2, "feb": 2, "march": 3, "mar": 3, "april": 4,
    "apr": 4, "may": 5, "june": 6, "jun": 6, "july": 7, "jul": 7, "august": 8, "aug": 8,
    "september": 9, "sep": 9, "sept": 9, "october": 10, "oct": 10, "november": 11,
    "nov": 11, "december": 12, "dec": 12,
}
_PARTS = {"beginning": "early", "start": "early", "early": "early", "mid": "mid",
          "middle": "mid", "end": "late", "late": "late"}

# ----------------------------------------------------------------------------- what is found


@dataclass(frozen=True)
class DateMention:
    """A date expression in a text and the calendar days it names, ``first`` to ``last``.

    ``unit`` is what one step of it is (``day``, ``week``, ``weekend``, ``month``,
    ``quarter``, ``year``). A relative mention is ``offset`` units from today's
    (negative: the past); ``counted`` says it gave a number of units ("3 days ago",
    "in two weeks") rather than named a period ("last week", "先月"). An absolute month
    or day without a year ("in January") has ``any_year`` and days in the year 2000.
    """

    text: str
    start: int
    end: int
    first: dt.date
    last: dt.date
    unit: str
    relative: bool
    offset: int = 0
    counted: bool = False
    any_year: bool = False

    @property
    def days(self) -> int:
        return (self.last - self.first).days + 1

    def absolute_form(self) -> str:
        """The days in a fitting absolute form: ``2026-03-13``, ``the week of 2026-03-09``,
        ``2026-02``, ``2026-Q2`` or ``2026``."""
        if self.unit == "week":
            return f"the week of {self.first.isoformat()}"
        if self.unit == "weekend":
            return f"the weekend of {self.first.isoformat()}"
        if self.unit == "month":
            return self.first.strftime("%Y-%m")
        if self.unit == "quarter":
            return f"{self.first.year}-Q{(self.first.month - 1) // 3 + 1}"
        if self.unit == "year":
            return str(self.first.year)
        if self.first == self.last:
            return self.first.isoformat()
        return f"{self.first.isoformat()} to {self.last.isoformat()}"


# ----------------------------------------------------------------------------- calendar


def _monday(day: dt.date) -> dt.date:
    return day - dt.timedelta(days=day.weekday())


def _add_months(day: dt.date, months: int) -> dt.date:
    """The first of the month ``months`` after ``day``'s."""
    index = day.year * 12 + day.month - 1 + months
    year, month = divmod(index, 12)
    return dt.date(year, month + 1, 1)


def _month_end(year: int, month: int) -> dt.date:
    return _add_months(dt.date(year, month, 1), 1) - dt.timedelta(days=1)


def _period(today: dt.date, unit: str, offset: int) -> tuple[dt.date, dt.date]:
    """The calendar ``unit`` ``offset`` steps from today's (a week starts on Monday)."""
    if unit == "day":
        day = today + dt.timedelta(days=offset)
        return day, day
    if unit in ("week", "weekend"):
        monday = _monday(today) + dt.timedelta(days=7 * offset)
        if unit == "weekend":
            return monday + dt.timedelta(days=5), monday + dt.timedelta(days=6)
        return monday, monday + dt.timedelta(days=6)
    if unit == "month":
        first = _add_months(today, offset)
        return first, _month_end(first.year, first.month)
    if unit == "quarter":
        first = _add_months(dt.date(today.year, (today.month - 1) // 3 * 3 + 1, 1), 3 * offset)
        return first, _add_months(first, 3) - dt.timedelta(days=1)
    year = today.year + offset
    return dt.date(year, 1, 1), dt.date(year, 12, 31)


def _weekday_in(today: dt.date, weekday: int, which: str) -> dt.date:
    """``last``: the most recent such day before today; ``next``: the first after today;
    ``this``: that day of the current week; ``last-week``/``next-week``: that day of the
    previous or following calendar week."""
    if which == "last":
        return today - dt.timedelta(days=(today.weekday() - weekday) % 7 or 7)
    if which == "next":
        return today + dt.timedelta(days=(weekday - today.weekday()) % 7 or 7)
    base = _monday(today) + dt.timedelta(days=weekday)
    if which == "last-week":
        return base - dt.timedelta(days=7)
    if which == "next-week":
        return base + dt.timedelta(days=7)
    return base


def _cjk_number(text: str) -> int:
    """``三`` → 3, ``十五`` → 15, ``二十`` → 20, ``12`` → 12, ``几`` → 3, ``三四`` → 4."""
    if text.isdigit():
        return int(text)
    digits = NUMBERS["cjk"]
    if "十" in text:
        tens, _, ones = text.partition("十")
        return digits.get(tens[-1:], 1) * 10 + digits.get(ones[:1], 0)
    return digits.get(text[-1], 1)


def _en_number(text: str) -> int:
    """``3`` → 3, ``two`` → 2, ``a couple of`` → 2, ``a`` → 1."""
    if text.isdigit():
        return int(text)
    words = [w for w in text.lower().split() if w not in ("a", "of")] or ["a"]
    return NUMBERS["en"][words[-1]]


# ----------------------------------------------------------------------------- the rules


def _alternation(words: Iterable[str], *, space: str = r"\s+") -> str:
    """A regex alternation of ``words``, longest first, a space in a word matching ``space``."""
    ordered = sorted(set(words), key=lambda w: (-len(w), w))
    return "|".join(re.escape(w).replace(r"\ ", space) for w in ordered)


class _Days(NamedTuple):
    """What a rule makes of its match: the fields of a :class:`DateMention` but the words."""

    first: dt.date
    last: dt.date
    unit: str
    relative: bool
    offset: int = 0
    counted: bool = False
    any_year: bool = False


_Build = Callable[[re.Match[str], dt.date], "_Days | None"]


def _relative(today: dt.date, unit: str, offset: int, counted: bool = False) -> _Days:
    first, last = _period(today, unit, offset)
    return _Days(first, last, unit, True, offset, counted)


def _on_day(day: dt.date, today: dt.date) -> _Days:
    return _Days(day, day, "day", True, (day - today).days)


def _absolute(m: re.Match[str], today: dt.date) -> _Days | None:
    """A date, a month or a year written out; None when it names none ("May I ask")."""
    del today
    groups = m.groupdict()
    text = m.group(0)
    raw_month = groups.get("month")
    if raw_month is None:  # a year alone
        alone = int(groups["year"])
        return _Days(dt.date(alone, 1, 1), dt.date(alone, 12, 31), "year", False)
    key = raw_month.lower().rstrip(".")
    month = int(key) if key.isdigit() else _MONTHS.get(key)
    if month is None or not 1 <= month <= 12:
        return None
    if key == "may" and not groups.get("day") and not groups.get("year") \
            and not text.strip().startswith(("in ", "of ")) and "May" not in text:
        return None  # "may" the verb
    year = int(groups["year"]) if groups.get("year") else None
    any_year = year is None
    base_year = year or 2000  # a leap year, so 29 February parses
    if groups.get("day"):
        day = dt.date(base_year, month, int(groups["day"]))
        return _Days(day, day, "day", False, any_year=any_year)
    last = _month_end(base_year, month).day
    first_day, last_day = {"early": (1, 10), "mid": (10, 20), "late": (20, last)}.get(
        _PARTS.get((groups.get("part") or "").lower(), ""), (1, last))
    return _Days(dt.date(base_year, month, first_day), dt.date(base_year, month, last_day),
                 "month", False, any_year=any_year)


def _rules() -> list[tuple[re.Pattern[str], _Build]]:
    """Every rule, most specific first; the first rule to match a phrase takes it."""
    ci = re.IGNORECASE
    month = r"(?P<month>" + _alternation(_MONTHS) + r")\.?"
    day = r"(?P<day>[0-3]?\d)(?:st|nd|rd|th)?"
    year = r"(?P<year>(?:19|20)\d\d)"
    part = r"(?:(?P<part>" + _alternation(_PARTS) + r")(?:\s+of)?\s+)?"
    before = r"(?:in|of|during|since|until|by|before|after|from)"
    en_num = (r"(?P<count>\d+|(?:a\s+)?(?:few|couple)(?:\s+of)?|"
              + _alternation(NUMBERS["en"]) + ")")
    en_unit = r"(?P<unit>" + _alternation(UNITS["en"]) + ")"
    en_weekday = r"(?P<weekday>" + _alternation(WEEKDAYS["en"]) + ")"
    en_step = r"(?P<step>" + _alternation(STEPS["en"]) + ")"
    en_period = r"(?P<unit>" + _alternation(PERIODS["en"]) + ")"
    cjk_num = r"(?P<count>\d+|[" + "".join(NUMBERS["cjk"]) + r"]{1,3})"
    zh_unit = "(?P<unit>" + _alternation(UNITS["zh"]) + ")"
    ja_unit = "(?P<unit>" + _alternation(UNITS["ja"]) + ")"
    zh_step = "(?P<step>" + _alternation(STEPS["zh"]) + ")"
    zh_week = "(?:" + _alternation(w for w, u in PERIODS["zh"].items() if u == "week") + ")"
    zh_period = "(?P<unit>" + _alternation(PERIODS["zh"]) + ")"
    # 以上/以下 and 日本 are words of their own, and 周期 is "a cycle".
    zh_lead = r"(?<![以日])"
    en_named = [w for w in NAMED if w.isascii()]
    cjk_named = [w for w in NAMED if not w.isascii()]

    def named(m: re.Match[str], today: dt.date) -> _Days:
        unit, offset = _NAMED_KEYS[re.sub(r"\s+", "", m.group(0).lower())]
        return _relative(today, unit, offset)

    def en_counted(sign: int) -> _Build:
        return lambda m, t: _relative(t, UNITS["en"][m.group("unit").lower()],
                                      sign * _en_number(m.group("count")), counted=True)

    def cjk_counted(units: dict[str, str]) -> _Build:
        def build(m: re.Match[str], today: dt.date) -> _Days:
            sign = -1 if m.group("dir").endswith("前") else 1
            return _relative(today, units[m.group("unit")], sign * _cjk_number(m.group("count")),
                             counted=True)
        return build

    def en_weekday_of(m: re.Match[str], today: dt.date) -> _Days:
        step = STEPS["en"][m.group("step").lower()]
        which = {-1: "last", 0: "this", 1: "next"}[step]
        return _on_day(_weekday_in(today, WEEKDAYS["en"][m.group("weekday").lower()], which),
                       today)

    def zh_weekday_of(m: re.Match[str], today: dt.date) -> _Days:
        which = {-1: "last-week", 0: "this", 1: "next-week"}[STEPS["zh"][m.group("step")]]
        return _on_day(_weekday_in(today, WEEKDAYS["zh"][m.group("weekday")], which), today)

    def ja_weekday_of(m: re.Match[str], today: dt.date) -> _Days:
        which = {"先週": "last-week", "来週": "next-week"}.get(m.group("week"), "this")
        return _on_day(_weekday_in(today, WEEKDAYS["ja"][m.group("weekday")], which), today)

    def period_of(language: str) -> _Build:
        steps, periods = STEPS[language], PERIODS[language]
        return lambda m, t: _relative(t, periods[m.group("unit").lower()],
                                      steps[m.group("step").lower()])

    absolute: list[str] = [
        rf"\b{year}-(?P<month>[01]?\d)-(?P<day>[0-3]?\d)\b",
        rf"{year}\s*年\s*(?P<month>[01]?\d)\s*月(?:\s*(?P<day>[0-3]?\d)\s*日)?",
        rf"{year}\s*年(?!\s*[01]?\d\s*月)",
        rf"\b(?:the\s+)?{day}\s+(?:of\s+)?{month},?(?:\s+{year})?\b",
        rf"\b{month}\s+{day}(?:,?\s+{year})?\b(?!\s*(?:am|pm|:))",
        rf"\b{part}{month},?\s+{year}\b",
        rf"\b{before}\s+(?:the\s+)?{part}{month}\b",
        rf"\b(?P<part>{_alternation(_PARTS)})(?:\s+of)?\s+{month}\b",
        rf"\b{before}\s+{year}\b",
    ]
    rules: list[tuple[re.Pattern[str], _Build]] = [(re.compile(p, ci), _absolute) for p in absolute]
    rules += [
        # English
        (re.compile(r"\b(?:" + _alternation(w for w in en_named if " " in w) + r")\b", ci),
         named),
        (re.compile(rf"\b{en_num}\s+{en_unit}\s+ago\b", ci), en_counted(-1)),
        (re.compile(rf"\bin\s+{en_num}\s+{en_unit}\b", ci), en_counted(1)),
        (re.compile(rf"\b{en_step}\s+{en_weekday}\b", ci), en_weekday_of),
        (re.compile(rf"\b{en_step}\s+{en_period}\b", ci), period_of("en")),
        (re.compile(r"\b(?:" + _alternation(w for w in en_named if " " not in w) + r")\b", ci),
         named),
        # Chinese
        (re.compile(rf"{zh_lead}{zh_step}个?{zh_week}(?P<weekday>[{''.join(WEEKDAYS['zh'])}])"),
         zh_weekday_of),
        (re.compile(rf"{cjk_num}{zh_unit}(?P<dir>以前|以后|之前|之后|前|后)"),
         cjk_counted(UNITS["zh"])),
        # Japanese
        (re.compile(rf"(?P<week>先週|来週|今週)の?(?P<weekday>[{''.join(WEEKDAYS['ja'])}])曜日?"),
         ja_weekday_of),
        (re.compile(rf"{cjk_num}{ja_unit}(?P<dir>前|後)"), cjk_counted(UNITS["ja"])),
        # Chinese, Japanese and Korean words for one day or period
        (re.compile(_alternation(cjk_named, space=r"\s?")), named),
        (re.compile(rf"{zh_lead}{zh_step}个?{zh_period}(?!期)"), period_of("zh")),
    ]
    return rules


_NAMED_KEYS = {re.sub(r"\s+", "", word): value for word, value in NAMED.items()}
""":data:`NAMED` by its words without spaces, which may be left out in Korean."""
_RULES = _rules()
# "the week before " / "a day after the " just before a date, read backwards from the date
# on the reversed text: the phrase that ends where the date starts, as far left as it goes.
# (Searching the text before each date for a phrase that ends there reads that text again
# for every date, quadratic in a message full of dates.)
_AROUND_REVERSED = re.compile(r"(?:\s+eht)?\s+(?P<side>erofeb|retfa)\s+"
                              r"(?P<unit>yad|keew|dnekeew|htnom)(?:\s+eht|\s+a)?\b", re.IGNORECASE)


@functools.lru_cache(maxsize=4096)
def find_dates(text: str, today: dt.date) -> tuple[DateMention, ...]:
    """Every date expression in ``text``, in order, relative ones counted from ``today``.

    Overlapping phrases are found once: the first rule that matches takes the words. A
    date after "the week before" / "a day after" widens to that span, and the lead-in
    words belong to the mention.
    """
    found: list[DateMention] = []
    taken = bytearray(len(text))  # 1 where a mention already took the character
    reversed_text: str | None = None
    # What a rule builds depends on the words it matched alone (no rule looks around with
    # a group): a text that repeats one phrase builds it once and shares it.
    built: dict[tuple[int, str], tuple[str, _Days | None]] = {}
    for rule, (pattern, build) in enumerate(_RULES):
        for m in pattern.finditer(text):
            start, end = m.span()
            if taken.find(1, start, end) >= 0:
                continue
            key = (rule, m.group(0))
            known = built.get(key)
            if known is None:
                try:
                    made = build(m, today)
                except (ValueError, KeyError, OverflowError):  # 31 February, year 10000
                    made = None
                known = built[key] = (key[1], made)
            words, days = known
            if days is None:
                continue
            if not days.relative and days.unit == "day":
                if reversed_text is None:
                    reversed_text = text[::-1]
                around = _AROUND_REVERSED.match(reversed_text, len(text) - start)
                if around:
                    span = dt.timedelta(days=UNIT_DAYS[around.group("unit")[::-1].lower()])
                    if around.group("side").lower() == "erofeb":
                        days = days._replace(first=days.first - span)
                    else:
                        days = days._replace(last=days.last + span)
                    start = len(text) - around.end()
            taken[start:end] = b"\x01" * (end - start)
            found.append(DateMention(words if (start, end) == m.span() else text[start:end],
                                     start, end, *days))
    return tuple(sorted(found, key=lambda d: d.start))


# ----------------------------------------------------------------------------- in a memory


@dataclass(frozen=True)
class RelativeDate:
    """A relative date phrase found in a memory, and the absolute date it stands for."""

    phrase: str
    line: int
    suggestion: str

    def to_json(self) -> dict[str, Any]:
        return {"phrase": self.phrase, "line": self.line, "suggestion": self.suggestion}


_INLINE_CODE = re.compile(r"`[^`\n]*`")


def find_relative_dates(text: str, today: dt.date | None = None) -> list[RelativeDate]:
    """Relative date phrases in ``text`` (code spans and fenced blocks ignored), in order.

    Each comes with the absolute date it stands for, counted from ``today``: a day
    (``2026-03-13``), a week (``the week of 2026-03-09``), a month (``2026-02``), a
    quarter or a year. Overlapping phrases are reported once (the longest rule wins).
    """
    today = today or dt.date.today()
    found: list[RelativeDate] = []
    lines = text.splitlines()
    for number, (line, fenced) in enumerate(zip(lines, fence_flags(lines), strict=True), 1):
        if fenced:
            continue
        visible = _INLINE_CODE.sub(lambda m: " " * len(m.group(0)), line)
        found += [RelativeDate(d.text, number, d.absolute_form())
                  for d in find_dates(visible, today) if d.relative]
    return found
