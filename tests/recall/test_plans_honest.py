"""``ask`` is never confidently wrong about the recorded real day (tests/fixtures/day): a time
the log does not cover, or words it cannot place, are said back unanswered with what was
understood, and no looser reading answers them instead; a window named by a command's run
("while cpuhog ran") is that run; dates and weekdays are read as days."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from nerve.recall.plans import find_window
from tests.helpers.day import Day
from tests.helpers.day import asked as _ask

COVERS = "the log covers 19:22:53 to 19:33:11 on Sat 5 Dec"


@pytest.mark.parametrize(
    ("question", "understood"),
    [
        ("what commands did I run yesterday?", "I understood: commands, yesterday."),
        ("which windows did I use yesterday?", "I understood: windows in focus, yesterday."),
        ("what was I doing at 9 this morning?", "what you were doing, this morning at 09:00."),
        ("what happened 45 minutes ago?", "I understood: anything recorded, 45 minutes ago."),
    ],
)
def test_a_time_the_log_does_not_cover_is_not_answered(
    recorded_day: Day, question: str, understood: str
) -> None:
    result = _ask(recorded_day, question)
    assert not result.answered and result.tier is None, result.text
    assert result.text.startswith("Nothing was recorded ") and COVERS in result.text
    assert understood in result.text  # the plan's own words: no period intent retried it


def test_a_window_reaching_back_before_the_log_began_is_not_answered(recorded_day: Day) -> None:
    result = _ask(recorded_day, "what did I do last week?")
    assert not result.answered
    assert result.text.startswith("The log begins at 19:22:53 on Sat 5 Dec, so it cannot tell "
                                  "the last week")  # fmt: skip


@pytest.mark.parametrize(
    ("question", "left"),
    [
        ("what http status did curl get?", "'status'"),
        ("show me the output of make build", "'output'"),
        ("what git commit did I make?", "'git', 'commit'"),
    ],
)
def test_words_naming_nothing_recorded_are_said_back_not_dropped(
    recorded_day: Day, question: str, left: str
) -> None:
    result = _ask(recorded_day, question)
    assert not result.answered, result.text
    assert result.text.startswith("I understood: commands matching ")
    assert f"nothing I can match to {left}," in result.text


def test_words_that_said_the_measure_are_placed(recorded_day: Day) -> None:
    result = _ask(recorded_day, "what status did the false command return?")
    assert result.answered and result.text.startswith("`false` last exited 1")


def test_while_a_command_ran_is_the_window_of_its_run(recorded_day: Day) -> None:
    result = _ask(recorded_day, "how busy was the CPU while cpuhog ran?")
    assert result.answered
    assert result.text.startswith("CPU use while `./tools/cpuhog.py` ran (19:28:58 to 19:30:59)")
    doing = _ask(recorded_day, "while the memory grower ran, what was I doing?").text
    assert "ran (19:25:18 to 19:28:32)" in doing and "away until 19:28:30" in doing


def test_while_an_unknown_thing_ran_is_asked_back(recorded_day: Day) -> None:
    result = _ask(recorded_day, "what did I do during the deploy?")
    assert not result.answered
    assert "no recorded command matches `deploy`" in result.text


NOW = int(datetime(2026, 12, 5, 19, 33, tzinfo=UTC).timestamp()) * 10**9  # a Saturday


@pytest.mark.parametrize(
    ("text", "label", "day"),
    [
        ("what did i run on saturday", "on Saturday", "12-05"),
        ("what did i run last saturday", "on Saturday", "11-28"),
        ("what commands did i run on december 5th", "on 2026-12-05", "12-05"),
        ("which commands ran on 2026-12-05", "on 2026-12-05", "12-05"),
        ("what did i do on 6 dec", "on 2025-12-06", "12-06"),
    ],
)
def test_weekdays_and_dates_are_days(text: str, label: str, day: str) -> None:
    window, _ = find_window(text, NOW, UTC)
    assert window is not None and window.label == label
    assert datetime.fromtimestamp(window.start_ns // 10**9, UTC).strftime("%m-%d") == day


def test_an_hour_this_morning_is_that_hour() -> None:
    window, _ = find_window("what was i doing at 9 this morning", NOW, UTC)
    assert window is not None and window.label == "this morning at 09:00"
