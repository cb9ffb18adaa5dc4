"""freshness: whole-day ages and the caveat for memories two or more days old."""

from __future__ import annotations

import time

import pytest

from jupyter_memory.memdir.freshness import SECONDS_PER_DAY, age_days, age_text, staleness_reminder

NOW = 1_767_225_600.0  # 2026-01-01T00:00:00Z


@pytest.mark.parametrize(
    ("seconds_ago", "days"),
    [
        (0, 0),
        (1, 0),
        (SECONDS_PER_DAY - 1, 0),
        (SECONDS_PER_DAY, 1),
        (2 * SECONDS_PER_DAY - 0.001, 1),
        (2 * SECONDS_PER_DAY, 2),
        (47 * SECONDS_PER_DAY + 5, 47),
        (-10 * SECONDS_PER_DAY, 0),  # mtime in the future (clock skew): never negative
    ],
)
def test_age_days_is_floor_of_whole_days(seconds_ago: float, days: int) -> None:
    assert age_days(NOW - seconds_ago, now=NOW) == days


def test_age_days_defaults_to_the_clock() -> None:
    assert age_days(time.time() - 3 * SECONDS_PER_DAY - 60) == 3


def test_age_days_survives_garbage_mtimes() -> None:
    assert age_days(float("nan"), now=NOW) == 0
    assert age_days(float("inf"), now=NOW) == 0


@pytest.mark.parametrize(
    ("days", "text"),
    [(0, "today"), (1, "yesterday"), (2, "2 days ago"), (365, "365 days ago"), (-3, "today")],
)
def test_age_text(days: int, text: str) -> None:
    assert age_text(days) == text


@pytest.mark.parametrize("days", [-1, 0, 1])
def test_no_reminder_for_fresh_memories(days: int) -> None:
    assert staleness_reminder(days) is None


@pytest.mark.parametrize("days", [2, 47, 1000])
def test_reminder_for_old_memories(days: int) -> None:
    reminder = staleness_reminder(days)
    assert reminder is not None
    assert reminder.startswith("<system-reminder>")
    assert reminder.endswith("</system-reminder>")
    assert f"{days} days" in reminder
    lowered = reminder.lower()
    for idea in ("current state", "code", "data", "verify"):
        assert idea in lowered
    assert "\n" not in reminder
