"""The date part of the offline selector: dates in a message against a memory's dates.

"What did we decide in the beginning of January?", "the churn numbers from last week",
"what happened on 8 May 2023?" name a time; a memory carries its own (absolute dates in
its description, as the extraction agent writes them, and its file's modification time).
Words alone cannot compare them, and worse, a date's words in the message count against
every memory that does not repeat them. So :func:`parse` finds the date expressions of
a message (absolute, month or year only, and relative to ``now``), the lexical part
leaves their words out, and :func:`score` says how close a memory's dates come, from 1
(inside the range) down to 0 (a range's width or a week away, whichever is more).

Pure Python, English plus the ``2026年3月14日`` form of Chinese and Japanese.
"""

from __future__ import annotations

import datetime as dt
import functools
import re
from collections.abc import Iterable
from dataclasses import dataclass

__all__ = ["DateRange", "memory_dates", "parse", "score"]

_MONTHS = {
    "january": 1, "jan": 1, "february": 2, "feb": 2, "march": 3, "mar": 3, "april": 4,
    "apr": 4, "may": 5, "june": 6, "jun": 6, "july": 7, "jul": 7, "august": 8, "aug": 8,
    "september": 9, "sep": 9, "sept": 9, "october": 10, "oct": 10, "november": 11,
    "nov": 11, "december": 12, "dec": 12,
}
_MONTH = r"(?P<month>" + "|".join(sorted(_MONTHS, key=len, reverse=True)) + r")\.?"
_DAY = r"(?P<day>[0-3]?\d)(?:st|nd|rd|th)?"
_YEAR = r"(?P<year>(?:19|20)\d\d)"
_PART = r"(?:(?P<part>beginning|start|early|mid|middle|end|late)(?:\s+of)?\s+)?"
_UNITS = {"day": 1, "days": 1, "week": 7, "weeks": 7, "month": 30, "months": 30,
          "year": 365, "years": 365}
_NUMBERS = {"a": 1, "an": 1, "one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6,
            "seven": 7, "eight": 8, "nine": 9, "ten": 10, "few": 3, "couple": 2}

_PATTERNS: tuple[tuple[str, re.Pattern[str]], ...] = tuple(
    (kind, re.compile(pattern, re.IGNORECASE)) for kind, pattern in (
        ("iso", r"\b(?P<year>(?:19|20)\d\d)-(?P<month>[01]?\d)-(?P<day>[0-3]?\d)\b"),
        ("cjk", r"(?P<year>(?:19|20)\d\d)\s*年\s*(?P<month>[01]?\d)\s*月(?:\s*(?P<day>[0-3]?\d)\s*日)?"),
        ("day", rf"\b(?:the\s+)?{_DAY}\s+(?:of\s+)?{_MONTH},?(?:\s+{_YEAR})?\b"),
        ("day", rf"\b{_MONTH}\s+{_DAY}(?:,?\s+{_YEAR})?\b(?!\s*(?:am|pm|:))"),
        ("month", rf"\b{_PART}{_MONTH},?\s+{_YEAR}\b"),
        ("month", rf"\b(?:in|of|during|since|until|by|before|after|from)\s+(?:the\s+)?{_PART}{_MONTH}\b"),
        ("month", rf"\b(?P<part>beginning|start|early|mid|middle|end|late)(?:\s+of)?\s+{_MONTH}\b"),
        ("year", rf"\b(?:in|of|during|since|until|by|before|after|from)\s+{_YEAR}\b"),
        ("relative", r"\b(?P<rel>today|yesterday|tonight|this\s+morning)\b"),
        ("relative", r"\b(?P<which>last|past|this|previous)\s+(?P<unit>week|weekend|month|year)\b"),
        ("ago", r"\b(?P<count>\d+|an?|one|two|three|four|five|six|seven|eight|nine|ten|few|couple)"
                r"(?:\s+of)?\s+(?P<unit>days?|weeks?|months?|years?)\s+ago\b"),
    ))


_AROUND = re.compile(r"\b(?:the\s+|a\s+)?(?P<unit>day|week|weekend|month)\s+(?P<side>before|after)"
                     r"\s+(?:the\s+)?$", re.IGNORECASE)
_UNITS["weekend"] = 7


@dataclass(frozen=True)
class DateRange:
    """A span of days named by a message; ``year`` is ``None`` for "in January" alone."""

    start: dt.date
    end: dt.date
    text: str
    any_year: bool = False

    @property
    def days(self) -> int:
        return (self.end - self.start).days + 1


def _month_end(year: int, month: int) -> int:
    nxt = dt.date(year + (month == 12), month % 12 + 1, 1)
    return (nxt - dt.timedelta(days=1)).day


def _month_number(text: str) -> int | None:
    text = text.lower().rstrip(".")
    return int(text) if text.isdigit() else _MONTHS.get(text)


def _month_range(year: int, month: int, part: str | None) -> tuple[dt.date, dt.date]:
    last = _month_end(year, month)
    first_day, last_day = {"beginning": (1, 10), "start": (1, 10), "early": (1, 10),
                           "mid": (10, 20), "middle": (10, 20), "end": (20, last),
                           "late": (20, last)}.get((part or "").lower(), (1, last))
    return dt.date(year, month, first_day), dt.date(year, month, last_day)


def _range(kind: str, m: re.Match[str], today: dt.date) -> DateRange | None:
    text = m.group(0)
    groups = m.groupdict()
    try:
        if kind in {"iso", "cjk", "day", "month"}:
            month = _month_number(groups["month"])
            if month is None or not 1 <= month <= 12:
                return None
            if groups.get("month", "").lower() == "may" and not groups.get("day") \
                    and not groups.get("year") and not text.strip().startswith(("in ", "of ")) \
                    and "May" not in text:
                return None  # "may" the verb
            year = int(groups["year"]) if groups.get("year") else None
            day = int(groups["day"]) if groups.get("day") else None
            any_year = year is None
            base_year = year or 2000  # a leap year, so 29 February parses
            if day is not None:
                when = dt.date(base_year, month, day)
                return DateRange(when, when, text, any_year)
            start, end = _month_range(base_year, month, groups.get("part"))
            return DateRange(start, end, text, any_year)
        if kind == "year":
            year = int(groups["year"])
            return DateRange(dt.date(year, 1, 1), dt.date(year, 12, 31), text)
        if kind == "relative":
            rel = (groups.get("rel") or "").lower()
            if rel in {"today", "tonight"} or rel.startswith("this"):
                return DateRange(today, today, text)
            if rel == "yesterday":
                yesterday = today - dt.timedelta(days=1)
                return DateRange(yesterday, yesterday, text)
            which, unit = groups["which"].lower(), groups["unit"].lower()
            span = {"week": 7, "weekend": 7, "month": 31, "year": 366}[unit]
            if which == "this":
                return DateRange(today - dt.timedelta(days=span - 1), today, text)
            return DateRange(today - dt.timedelta(days=2 * span), today - dt.timedelta(days=1), text)
        if kind == "ago":
            raw = groups["count"].lower()
            count = int(raw) if raw.isdigit() else _NUMBERS[raw]
            unit = _UNITS[groups["unit"].lower()]
            centre = today - dt.timedelta(days=count * unit)
            slack = dt.timedelta(days=max(1, unit // 2))
            return DateRange(centre - slack, min(today, centre + slack), text)
    except (ValueError, KeyError, OverflowError):
        return None
    return None


@functools.lru_cache(maxsize=2048)
def _parse(text: str, today: dt.date) -> tuple[tuple[DateRange, ...], str]:
    found: list[DateRange] = []
    taken: list[tuple[int, int]] = []
    for kind, pattern in _PATTERNS:
        for m in pattern.finditer(text):
            if any(m.start() < e and s < m.end() for s, e in taken):
                continue
            r = _range(kind, m, today)
            if r is None:
                continue
            start = m.start()
            around = _AROUND.search(text[:start])
            if around and kind in {"iso", "cjk", "day"}:
                span = dt.timedelta(days=_UNITS[around.group("unit").lower()])
                before = around.group("side").lower() == "before"
                r = DateRange(r.start - span if before else r.start,
                              r.end if before else r.end + span, r.text, r.any_year)
                start = around.start()
            found.append(r)
            taken.append((start, m.end()))
    rest = text
    for s, e in sorted(taken, reverse=True):
        rest = rest[:s] + " " + rest[e:]
    return tuple(found), rest


def parse(text: str, now: dt.datetime | None = None) -> tuple[tuple[DateRange, ...], str]:
    """The date ranges ``text`` names, and ``text`` without those date expressions.

    Relative expressions ("last week", "3 days ago") count back from ``now`` (default:
    the current time, UTC).
    """
    today = (now or dt.datetime.now(dt.timezone.utc)).date()
    return _parse(text, today)


@functools.lru_cache(maxsize=8192)
def _text_dates(text: str) -> tuple[DateRange, ...]:
    ranges, _ = _parse(text, dt.date(2000, 1, 1))
    return tuple(r for r in ranges if not r.any_year and r.days <= 31
                 and not r.text.lower().startswith(("last", "past", "this", "previous")))


def memory_dates(description: str, mtime: float | None) -> tuple[DateRange, ...]:
    """The dates a memory carries: absolute dates in its description, and its mtime's day."""
    dates = list(_text_dates(description))
    if mtime:
        day = dt.datetime.fromtimestamp(mtime, dt.timezone.utc).date()
        dates.append(DateRange(day, day, "modified"))
    return tuple(dates)


def _distance(query: DateRange, memory: DateRange) -> int:
    start, end = query.start, query.end
    if query.any_year:  # the same month and days in the memory's year
        try:
            start = start.replace(year=memory.start.year)
            end = end.replace(year=memory.start.year)
        except ValueError:
            start = end = dt.date(memory.start.year, 2, 28)
    if memory.end < start:
        return (start - memory.end).days
    if memory.start > end:
        return (memory.start - end).days
    return 0


def score(ranges: Iterable[DateRange], dates: Iterable[DateRange]) -> float:
    """How well a memory's ``dates`` fall in the message's ``ranges``: 1 inside, 0 far off."""
    best = 0.0
    dates = tuple(dates)
    for query in ranges:
        tolerance = max(7, query.days)
        for memory in dates:
            best = max(best, 1.0 - min(1.0, _distance(query, memory) / tolerance))
    return round(best, 4)
