"""The one date engine (memdir/dates.py): relative and absolute dates in English, Chinese
and Japanese, as the %%remember warning and the recall selector both read them."""

from __future__ import annotations

import datetime as dt

import pytest

from jupyter_memory.memdir.dates import find_dates, find_relative_dates
from jupyter_memory.recall import dates as recall_dates

TODAY = dt.date(2026, 3, 14)  # a Saturday


def phrases(text: str) -> dict[str, str]:
    return {d.phrase: d.suggestion for d in find_relative_dates(text, TODAY)}


# ----------------------------------------------------------------------------- relative dates in a memory


@pytest.mark.parametrize(
    ("text", "phrase", "suggestion"),
    [
        ("The export broke yesterday.", "yesterday", "2026-03-13"),
        ("Ship it tomorrow", "tomorrow", "2026-03-15"),
        ("Decided today.", "today", "2026-03-14"),
        ("the day before yesterday we saw it", "the day before yesterday", "2026-03-12"),
        ("Agreed last week.", "last week", "the week of 2026-03-02"),
        ("Due next Monday.", "next Monday", "2026-03-16"),
        ("Since last Friday", "last Friday", "2026-03-13"),
        ("Closed last month", "last month", "2026-02"),
        ("Reorg next quarter", "next quarter", "2026-Q2"),
        ("It changed 3 days ago", "3 days ago", "2026-03-11"),
        ("Back in two weeks", "in two weeks", "the week of 2026-03-23"),
        ("这个口径是昨天定的", "昨天", "2026-03-13"),
        ("上周开会决定", "上周", "the week of 2026-03-02"),
        ("下周三上线", "下周三", "2026-03-18"),
        ("三天前改的", "三天前", "2026-03-11"),
        ("去年的数据", "去年", "2025"),
        ("先週決めた", "先週", "the week of 2026-03-02"),
        ("昨日のレポート", "昨日", "2026-03-13"),
        ("来週の月曜日に締め切り", "来週の月曜日", "2026-03-16"),
        ("2日前に変更", "2日前", "2026-03-12"),
        ("어제 배포", "어제", "2026-03-13"),
    ],
)
def test_relative_dates_are_found_with_absolute_suggestion(text, phrase, suggestion):
    assert phrases(text) == {phrase: suggestion}



@pytest.mark.parametrize(
    ("text", "phrase", "suggestion"),
    [
        # counts in number words of every language, and units the old finders missed
        ("十五天前改的", "十五天前", "2026-02-27"),
        ("二十天后上线", "二十天后", "2026-04-03"),
        ("三日前に変更", "三日前", "2026-03-11"),
        ("数日前に変更", "数日前", "2026-03-11"),
        ("两个礼拜前定的", "两个礼拜前", "the week of 2026-02-23"),
        ("上季度的口径", "上季度", "2025-Q4"),
        ("a couple of days ago", "a couple of days ago", "2026-03-12"),
        ("back in a few days", "in a few days", "2026-03-17"),
        ("Fixed last weekend.", "last weekend", "the weekend of 2026-03-07"),
        ("Agreed the previous Friday", "previous Friday", "2026-03-13"),
        ("Over the past month", "past month", "2026-02"),
        # a longer word is not read as the shorter one inside it
        ("一昨年の夏", "一昨年", "2024"),
        ("再来週に締め切り", "再来週", "the week of 2026-03-23"),
        ("先々週の会議", "先々週", "the week of 2026-02-23"),
    ],
)
def test_the_engine_finds_more_than_either_finder_did(text, phrase, suggestion):
    assert phrases(text) == {phrase: suggestion}


@pytest.mark.parametrize("text", [
    "以下周期的数据",  # 以下 + 周期 ("the following cycles"), not 下周
    "日本周边的门店",  # 日本 + 周边 ("around Japan"), not 本周
    "2020年前的数据",  # before the year 2020, not 2020 years ago
    "Mayday", "Weekly on Friday.", "the last day of the sprint",
])
def test_words_that_only_look_like_relative_dates(text):
    assert find_relative_dates(text, TODAY) == []


def test_relative_dates_ignore_code_and_absolute_dates():
    text = (
        "Decided on 2026-03-02.\n"
        "Filter with `df[df.day == yesterday]`.\n"
        "```python\nyesterday = today - 1\n```\n"
        "Weekly on Friday."
    )
    assert find_relative_dates(text, TODAY) == []


def test_overlapping_phrases_are_reported_once():
    assert phrases("the day before yesterday") == {"the day before yesterday": "2026-03-12"}
    assert phrases("上周三") == {"上周三": "2026-03-04"}
    assert phrases("上周三和下周") == {"上周三": "2026-03-04", "下周": "the week of 2026-03-16"}


# ----------------------------------------------------------------------------- absolute dates


@pytest.mark.parametrize(("text", "first", "last", "unit"), [
    ("on 8 May 2023", "2023-05-08", "2023-05-08", "day"),
    ("2026年3月14日の売上", "2026-03-14", "2026-03-14", "day"),
    ("华东区2026年3月的数据", "2026-03-01", "2026-03-31", "month"),
    ("我们在2022年上线的", "2022-01-01", "2022-12-31", "year"),
    ("in the middle of May 2023", "2023-05-10", "2023-05-20", "month"),
    ("the week before 9 June, 2023", "2023-06-02", "2023-06-09", "day"),
])
def test_absolute_dates_are_found_and_never_flagged(text, first, last, unit):
    [found] = find_dates(text, TODAY)
    assert (found.first.isoformat(), found.last.isoformat(), found.unit) == (first, last, unit)
    assert not found.relative
    assert find_relative_dates(text, TODAY) == []


# ----------------------------------------------------------------------------- one engine, two readers


@pytest.mark.parametrize("text", [
    "The export broke yesterday.", "Due next Monday.", "It changed 3 days ago", "Agreed last week.",
    "这个口径是昨天定的", "上周开会决定", "下周三上线", "三天前改的", "先週決めた", "来週の月曜日に締め切り",
    "2日前に変更", "去年的数据", "어제 배포",
])
def test_every_relative_date_the_warning_finds_is_a_date_recall_reads(text):
    """The selector now reads the Chinese, Japanese and Korean relative dates too."""
    now = dt.datetime.combine(TODAY, dt.time(12), tzinfo=dt.timezone.utc)
    [warned] = find_relative_dates(text, TODAY)
    ranges, rest = recall_dates.parse(text, now)
    assert len(ranges) == 1 and warned.phrase not in rest
    [mention] = [d for d in find_dates(text, TODAY) if d.relative]
    if mention.unit == "day" and not mention.counted:  # a named day is that day exactly
        assert ranges[0].start == ranges[0].end == dt.date.fromisoformat(warned.suggestion)
    else:  # a period or a count of units: a window around the days it names
        assert ranges[0].start <= mention.last and mention.first <= ranges[0].end
