"""``ask`` is never confidently wrong about the recorded real day (tests/fixtures/day): a time
the log does not cover, or words it cannot place, are said back unanswered with what was
understood, and no looser reading answers them instead; a window named by a command's run
("while cpuhog ran") is that run; dates and weekdays are read as days."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from nerve.recall.plans import find_window
from nerve.recall.plans.words import Known
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


@pytest.mark.parametrize(
    "question",
    ["what's the first event in the log?", "return codes?", "the newest page?"],
)
def test_a_common_word_alone_selects_no_window_or_command(recorded_day: Day, question: str) -> None:
    """ "log" is a whole word of a window's title, "codes" a part of curl's ``%{http_code}``,
    "page" of nothing: a common word alone names none of them (issue 41)."""
    result = _ask(recorded_day, question)
    assert "event log - Mozilla" not in result.text and "http_code" not in result.text, result
    assert "Switched to" not in result.text


@pytest.mark.parametrize(
    ("question", "said"),
    [
        ("what was the 5 minute load at the end", "Load average (5 min) at 19:32:50: 4.50"),
        ("load15 now?", "Load average (15 min) at 19:32:50: 6.49"),
        ("energy in all", "9582.2 J in all"),
        ("how large is the disk", "252 GiB in all"),
        ("which pid did the cpuhog command get", "[18048]"),
    ],
)
def test_a_reading_or_process_asked_for_is_the_one_given(
    recorded_day: Day, question: str, said: str
) -> None:
    """The 5 and 15 minute loads are their own readings; energy readings add up (each is the
    energy since the one before); the disk's size is said; a command's pid is its process's."""
    result = _ask(recorded_day, question)
    assert result.answered and said in result.text, result.text


@pytest.mark.parametrize(
    ("question", "said"),
    [
        ("did any command fail after make test?", "No: no command failed after `make test`"),
        ("were there failures before memgrow", "Yes: 5 commands failed before"),
        ("once make test passed, did anything fail", "No: no command failed after `make test`"),
        ("since false failed did any command break", "Yes: 3 commands failed after `false`"),
    ],
)
def test_whether_a_failure_came_before_or_after_a_run_is_answered_so(
    recorded_day: Day, question: str, said: str
) -> None:
    """A question of failures around a command's run says whether any failed, not what ran."""
    result = _ask(recorded_day, question)
    assert result.answered and result.text.startswith(said), result.text


def test_a_page_named_by_a_title_word_is_the_window_not_the_daemon(recorded_day: Day) -> None:
    result = _ask(recorded_day, "how long was the nerve page up front?")
    assert "0 min 40 s" in result.text and "daemon" not in result.text, result.text


def test_a_common_word_hits_a_thing_only_as_a_whole_word() -> None:
    known = Known(commands=("curl -w '%{http_code}' x", "make test", "./tools/cpuhog.py"),
                  windows=("firefox nerve - the event log",))  # fmt: skip
    assert known.command_words(["codes", "code", "test", "tests", "hog", "curl"]) == [
        "test", "tests", "hog", "curl"]  # fmt: skip
    assert known.window_words("log") == "" and known.window_words("nerve log") == "nerve log"


@pytest.mark.parametrize(
    "question", ["how often did the focus shift?", "how many focus changes today?"]
)
def test_focus_changing_is_window_switches_not_file_changes(
    recorded_day: Day, question: str
) -> None:
    result = _ask(recorded_day, question)
    assert "16 switches" in result.text and "file changes" not in result.text, result.text


def test_since_a_thing_with_no_run_said_to_end_is_no_question_of_order(recorded_day: Day) -> None:
    """ "failures" there is what is asked, not how the build ended."""
    result = _ask(recorded_day, "since the good make build any failures?")
    assert not result.text.startswith(("After", "Yes", "No:")), result.text
