"""Questions in a person's own words about the recorded real day (tests/fixtures/day), one
test per class of words the parser reads: the log's start and end as a time, a span said
with a dash, readings people ask about (disk writes, energy, swap, cores, the lowest, when a
reading fell), a process named by what it did ("the leak", "the hog") or by its pid alone,
mistyped words, nerve's own daemon, a listening port by its number, which of two commands
ended first, and words that name nothing the log holds (said back, not answered with a
window or with what happened then)."""

from __future__ import annotations

import pytest

from nerve.recall.plans.spelling import edit
from tests.helpers.day import Day
from tests.helpers.day import asked as _ask
from tests.helpers.day import said as _said


def test_the_start_and_the_end_of_the_log_are_times(recorded_day: Day) -> None:
    assert "15.48" in _said(recorded_day, "what was the load average at the start?")
    assert "15.48" in _said(recorded_day, "load when I began")
    assert "0.84" in _said(recorded_day, "load average at the end")
    text = _said(recorded_day, "which app was in front at the end?")
    assert "guide.md" in text and "Stack Overflow" not in text


def test_a_span_said_with_a_dash_is_a_window(recorded_day: Day) -> None:
    text = _said(recorded_day, "19:25:30 - 19:28:30 what went on")
    assert text.startswith("Between 19:25:30 and 19:28:30"), text


def test_readings_people_ask_about(recorded_day: Day) -> None:
    writes = _said(recorded_day, "peak disk writes")
    assert "1.64 MiB/s at 19:24:55" in writes, writes
    assert "estimated" in _said(recorded_day, "was the energy measured or just estimated?")
    assert "swap 0.0%" in _said(recorded_day, "was swap used?")
    assert "2 cores" in _said(recorded_day, "how many cores does this machine have?")
    assert "74.2 GiB" in _said(recorded_day, "disk space left")
    assert "lowest 63.5%" in _said(recorded_day, "what was the lowest cpu before the hog started?")
    assert "8.70" in _said(recorded_day, "what was the load around 19:25:10?")


def test_when_a_reading_fell_or_rose(recorded_day: Day) -> None:
    text = _said(recorded_day, "when did the cpu calm down?")
    assert "fell below" in text and "at 19:31:05" in text, text


def test_a_process_named_by_what_it_did(recorded_day: Day) -> None:
    assert "1511 MiB" in _said(recorded_day, "how big did the leak get?")
    assert "19:28:58" in _said(recorded_day, "what time did the hog begin?")
    assert "1511 MiB" in _said(recorded_day, "what was the biggest memory hog?")


def test_a_pid_alone_names_its_process(recorded_day: Day) -> None:
    assert "memgrow.py [17085]" in _said(recorded_day, "what was 17085?")


@pytest.mark.parametrize(
    ("typed", "word", "kind"),
    [("comands", "commands", 0), ("memroy", "memory", 1), ("fiels", "files", 1),
     ("waht", "what", 1), ("filles", "files", 2), ("memery", "memory", 3)],
)  # fmt: skip
def test_one_edit_is_read_as_the_word(typed: str, word: str, kind: int) -> None:
    assert edit(typed, word) == kind
    assert edit(word, word) is None and edit("memory", "mem") is None


def test_mistyped_words_are_read_as_the_parsers_own(recorded_day: Day) -> None:
    assert "1511 MiB" in _said(recorded_day, "memgrow peak memroy")
    assert "6 command(s) failed" in _said(recorded_day, "waht comands failed?")


def test_nerves_own_daemon(recorded_day: Day) -> None:
    text = _said(recorded_day, "how long did nerve run?")
    assert "(up 10 min 18 s)" in text, text  # 617.6 s, to the nearest second
    assert "235 observations" in _said(recorded_day, "how many observations did nerve record?")
    assert "at most 100 MiB" in _said(recorded_day, "how much memory did nerve itself use?")
    assert "19:33:11" in _said(recorded_day, "what time did nerve shut down?")


@pytest.mark.parametrize(
    "question",
    [
        "fan speed during the hog",
        "how many terminal sessions did I have?",
        "number of tabs in firefox",
        "how much memory did firefox use",
        "how much cpu did firefox take",
    ],
)
def test_words_about_an_app_the_log_cannot_place_are_said_back(
    recorded_day: Day, question: str
) -> None:
    result = _ask(recorded_day, question)
    assert not result.answered, result.text
    assert "Switched to" not in result.text


def test_an_exit_says_whether_it_succeeded(recorded_day: Day) -> None:
    assert "exited 0 (19:25:18), so it succeeded" in _said(recorded_day, "did memgrow exit ok?")


def test_a_port_by_its_number(recorded_day: Day) -> None:
    text = _said(recorded_day, "is 8765 still open?")
    assert "127.0.0.1:8765 is still open at the end" in text, text
    assert "by python3 [16634]" in _said(recorded_day, "which process was on 8765?")


def test_which_of_two_commands_ended_first(recorded_day: Day) -> None:
    text = _said(recorded_day, "which finished first, memgrow or yes?")
    assert text.startswith("`./tools/memgrow.py` first ended at 19:28:31, before `yes"), text
