"""The date part of the offline selector: dates in a message against a memory's dates.

"What did we decide in the beginning of January?", "the churn numbers from last week",
"what happened on 8 May 2023?", "上周的数据" name a time; a memory carries its own
(absolute dates in its description, as the extraction agent writes them, and its file's
modification time). Words alone cannot compare them, and worse, a date's words in the
message count against every memory that does not repeat them. So :func:`parse` turns
the dates the storage layer's engine finds (:func:`jupyter_memory.memdir.dates.find_dates`)
into ranges, the lexical part leaves their words out, and :func:`score` says how close a
memory's dates come, from 1 (inside the range) down to 0 (a range's width or a week
away, whichever is more).
"""

from __future__ import annotations

import datetime as dt
import functools
from collections.abc import Iterable
from dataclasses import dataclass

from jupyter_memory.memdir.dates import UNIT_DAYS, DateMention, find_dates

__all__ = ["DateRange", "memory_dates", "parse", "score"]


@dataclass(frozen=True)
class DateRange:
    """A span of days named by a message; ``any_year`` for "in January" alone."""

    start: dt.date
    end: dt.date
    text: str
    any_year: bool = False

    @property
    def days(self) -> int:
        return (self.end - self.start).days + 1


def _range(mention: DateMention, today: dt.date) -> DateRange:
    """The days a message means by ``mention``, generously where people round.

    An absolute date, or a relative day ("yesterday", "next Monday"), is its own days.
    A count of units ("3 days ago") is that day give or take half a unit. A named period
    ("last week", "上个月") is a rolling window a unit wide beyond the last one: "last
    month" on 2 March still means February, and so can most of January.
    """
    if not mention.relative or (mention.unit == "day" and not mention.counted):
        return DateRange(mention.first, mention.last, mention.text, mention.any_year)
    unit = UNIT_DAYS[mention.unit]
    offset = mention.offset
    if mention.counted:
        centre = today + dt.timedelta(days=offset * unit)
        slack = dt.timedelta(days=max(1, unit // 2))
        if offset <= 0:
            return DateRange(centre - slack, min(today, centre + slack), mention.text)
        return DateRange(max(today, centre - slack), centre + slack, mention.text)
    if offset == 0:
        return DateRange(today - dt.timedelta(days=unit - 1), today, mention.text)
    far, near = (abs(offset) + 1) * unit, (abs(offset) - 1) * unit + 1
    if offset < 0:
        return DateRange(today - dt.timedelta(days=far), today - dt.timedelta(days=near),
                         mention.text)
    return DateRange(today + dt.timedelta(days=near), today + dt.timedelta(days=far),
                     mention.text)


@functools.lru_cache(maxsize=2048)
def _parse(text: str, today: dt.date) -> tuple[tuple[DateRange, ...], str]:
    mentions = find_dates(text, today)
    pieces: list[str] = []
    done = 0
    for mention in mentions:  # in order of start; each becomes one space
        if mention.start >= done:
            pieces += [text[done:mention.start], " "]
        done = max(done, mention.end)
    pieces.append(text[done:])
    return tuple(_range(m, today) for m in mentions), "".join(pieces)


def parse(text: str, now: dt.datetime | None = None) -> tuple[tuple[DateRange, ...], str]:
    """The date ranges ``text`` names, and ``text`` without those date expressions.

    Relative expressions ("last week", "3 days ago") count back from ``now`` (default:
    the current time, UTC).
    """
    today = (now or dt.datetime.now(dt.timezone.utc)).date()
    return _parse(text, today)


@functools.lru_cache(maxsize=8192)
def _text_dates(text: str) -> tuple[DateRange, ...]:
    """The absolute dates of a description, a month long at most (a memory's own dates)."""
    return tuple(DateRange(m.first, m.last, m.text) for m in find_dates(text, dt.date(2000, 1, 1))
                 if not m.relative and not m.any_year and m.days <= 31)


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
