"""Relative dates in a memory ("yesterday", "上周", "先週") and the absolute date of each.

A memory is read long after it was written, so every path of ``%%remember`` flags them.
"""

from __future__ import annotations

import datetime as _dt
import re
from dataclasses import dataclass
from typing import Any

from jupyter_memory.memdir.markdown import fence_flags

__all__ = ["RelativeDate", "find_relative_dates"]


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
