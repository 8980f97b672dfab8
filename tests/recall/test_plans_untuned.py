"""Questions about the recorded real day (tests/fixtures/day) in words the parser was not first
written for, one test per class: the lowest or the first of a reading, its plain mean, swap,
time away named as a window, what ran after a command, time in focus to the nearest second,
failures placed by when they ended, a span's end, what ran on into a window, the daemon's
workspace, and questions the log cannot answer (a command's output, a file's text, a day
before the log, a kind of thing no sense records), which are said so, not answered."""

from __future__ import annotations

import pytest

from tests.helpers.day import Day
from tests.helpers.day import asked as _ask
from tests.helpers.day import said as _said


def test_the_lowest_of_a_reading_and_when(recorded_day: Day) -> None:
    assert "lowest 2.8% at 19:29:45" in _said(recorded_day, "when was memory the lowest")
    assert "lowest 12.4% at 19:31:30" in _said(recorded_day, "min cpu % today and when")
    assert "lowest 0.81 at 19:32:40" in _said(recorded_day, "min load1 today")


def test_the_first_reading_is_the_log_start(recorded_day: Day) -> None:
    assert "15.48" in _said(recorded_day, "first load average reading")
    assert "15.48" in _said(recorded_day, "load1 when you started")


def test_an_average_says_the_plain_mean_of_the_readings_too(recorded_day: Day) -> None:
    text = _said(recorded_day, "mean cpu busy %")
    assert "average 76.4% by time (75.0% over the readings)" in text, text


def test_swap_is_a_reading_of_its_own(recorded_day: Day) -> None:
    text = _said(recorded_day, "did we swap")
    assert text.startswith("Swap used") and "No swap was used." in text, text


@pytest.mark.parametrize(
    ("question", "facts"),
    [
        ("ram used during my afk time", ["while you were away (19:25:26 to 19:28:31)"]),
        ("what was still running when I went away", ["memgrow", "yes > /dev/null"]),
        ("what happened while i was away", ["running from 19:25:18 to 19:28:31"]),
        ("what did i focus when i got back", ["Vim: main.c", "the first one"]),
    ],
)
def test_time_away_names_a_window(recorded_day: Day, question: str, facts: list[str]) -> None:
    text = _said(recorded_day, question)
    assert all(fact in text for fact in facts), text
    assert "Stack Overflow" not in text and "uptime" not in text


def test_what_ran_after_a_command_names_the_ones_that_followed(recorded_day: Day) -> None:
    text = _said(recorded_day, "what did I run after make test")
    assert "`sleep 3`" in text and "`uptime`" in text and "`curl" in text, text


def test_time_in_focus_is_rounded_to_the_second(recorded_day: Day) -> None:
    text = _said(recorded_day, "how long was I in vim")
    assert "2 min 26 s" in text and "146 s" in text, text


def test_a_failure_belongs_to_the_window_it_ended_in(recorded_day: Day) -> None:
    for question in ("during the memory grower, any failures", "failed commands while memgrow ran"):
        text = _said(recorded_day, question)
        assert text.startswith("No failed commands while"), text


def test_how_many_exited_non_zero(recorded_day: Day) -> None:
    assert "6 " in _said(recorded_day, "how many commands exited non-zero")


def test_a_span_ends_at_its_second_time(recorded_day: Day) -> None:
    text = _said(recorded_day, "what did I run between 19:29 and 19:31")
    assert "(19:29:00 to 19:30:59)" in text and "date -u" not in text, text


def test_the_daemon_says_its_workspace(recorded_day: Day) -> None:
    text = _said(recorded_day, "which workspace was the daemon watching")
    assert "It watched the workspace /tmp/nerve-day/home/work." in text, text
    assert "started at 19:22:53" in _said(recorded_day, "what time did you start watching")


@pytest.mark.parametrize(
    "question",
    [
        "what's in README.md",
        "what did cat README.md show",
        "what's the line I changed in main.c",
        "which commands failed yesterday",
        "which docker containers were running",
    ],
)
def test_what_the_log_cannot_hold_is_said_so(recorded_day: Day, question: str) -> None:
    result = _ask(recorded_day, question)
    assert not result.answered, result.text


def test_a_program_counts_every_command_it_starts(recorded_day: Day) -> None:
    text = _said(recorded_day, "count every command starting with make")
    assert text.startswith("7 runs of `make`") and "`make test`" in text, text


def test_a_port_names_the_commands_that_held_its_number(recorded_day: Day) -> None:
    text = _said(recorded_day, "what did I run with port 8765")
    assert "http.server 8765" in text and "`curl" in text, text
    assert "`curl" in _said(recorded_day, "which commands mention 8765")


def test_a_reading_over_a_short_run_is_the_one_standing(recorded_day: Day) -> None:
    assert "1.71" in _said(recorded_day, "load avg (1, 5, 15) when I ran uptime")


def test_a_time_said_in_words(recorded_day: Day) -> None:
    text = _said(recorded_day, "what window was I in at half past seven pm")
    assert "at 19:30" in text, text


def test_a_moment_with_nothing_new_says_what_went_on(recorded_day: Day) -> None:
    text = _said(recorded_day, "what happened at 19:26:30")
    assert "memgrow" in text and "away from 19:25:26" in text, text


def test_around_a_moment_the_window_then(recorded_day: Day) -> None:
    text = _said(recorded_day, "which page was open in firefox around 19:31:30")
    assert "nerve - the event log" in text and "Stack Overflow" not in text, text


def test_right_after_names_only_the_next_command(recorded_day: Day) -> None:
    text = _said(recorded_day, "what did i run right after the build passed")
    assert "`ls build`" in text and "Then" not in text, text


@pytest.mark.parametrize(
    ("question", "amount"),
    [
        ("how much memory was used at 19:27:05", "Used: 2.1 GiB."),
        ("mean ram usage", "1.7 GiB over the readings"),
        ("peak memory while memgrow ran", "2.3 GiB at the peak"),
    ],
)
def test_memory_use_is_said_as_an_amount_too(recorded_day: Day, question: str, amount: str) -> None:
    text = _said(recorded_day, question)
    assert amount in text, text


@pytest.mark.parametrize(
    "question", ["top cpu proc?", "top mem proc", "which procs used the most memory"]
)
def test_clipped_words_are_the_parsers_own(recorded_day: Day, question: str) -> None:
    text = _said(recorded_day, question)
    assert text.startswith("Most ") and ("cpuhog.py" in text or "memgrow.py" in text), text


@pytest.mark.parametrize(
    "question", ["peak cpu of the http.server process", "max cpu of the record.py process"]
)
def test_a_process_with_no_samples_is_asked_about_not_denied(
    recorded_day: Day, question: str
) -> None:
    result = _ask(recorded_day, question)
    assert not result.answered and "No process samples" not in result.text, result.text


@pytest.mark.parametrize("question", ["how many distinct commands did I run", "unique cmd count"])
def test_distinct_commands_are_counted_once_each(recorded_day: Day, question: str) -> None:
    assert _said(recorded_day, question).startswith("22 distinct commands (28 runs)")


@pytest.mark.parametrize(
    ("question", "head"),
    [
        ("did any check fail", "2 check verdict(s) in the whole log, none failed:"),
        ("which checks ran on guide.md", "2 check verdict(s) on `guide.md` in the whole log"),
        ("check results after 19:30", "1 check verdict(s) after 19:30"),
    ],
)
def test_a_workflows_checks_are_answered_by_their_verdicts(
    recorded_day: Day, question: str, head: str
) -> None:
    text = _said(recorded_day, question)
    assert text.startswith(head) and "conflict-markers" in text and "passed" in text, text


def test_checking_something_is_not_a_question_about_checks(recorded_day: Day) -> None:
    assert "verdict" not in _said(recorded_day, "did I check the disk")


@pytest.mark.parametrize("question", ["how long was guide.md focused", "guide.md time in focus"])
def test_a_file_in_focus_is_its_windows_time(recorded_day: Day, question: str) -> None:
    assert "1 min 11 s" in _said(recorded_day, question)


@pytest.mark.parametrize("question", ["how much energy did the cpu use", "cpu power draw"])
def test_the_cpus_energy_is_the_energy_reading(recorded_day: Day, question: str) -> None:
    text = _said(recorded_day, question)
    assert text.startswith("Energy per reading") and "estimated" in text, text


@pytest.mark.parametrize(
    "question",
    ["what did I write in util.c", "what is written in guide.md", "what did make test show me",
     "what did I paste into the terminal", "what was on the clipboard at 19:30"],
)  # fmt: skip
def test_what_a_file_or_a_paste_held_is_asked_back(recorded_day: Day, question: str) -> None:
    result = _ask(recorded_day, question)
    assert not result.answered and "I understood" in result.text, result.text


def test_when_a_file_changed_is_still_answered(recorded_day: Day) -> None:
    assert "19:29:39" in _said(recorded_day, "when did I change main.c")


@pytest.mark.parametrize(
    ("question", "head"),
    [
        ("what was nerve's last decision", "The last of 16 attention decisions"),
        ("first attention decision today", "The first of 16 attention decisions"),
    ],
)
def test_the_first_or_last_decision_is_one_surfaced_or_held(
    recorded_day: Day, question: str, head: str
) -> None:
    text = _said(recorded_day, question)
    assert text.startswith(head) and "\n" not in text, text
