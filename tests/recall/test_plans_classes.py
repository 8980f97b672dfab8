"""Classes of question about the recorded real day (tests/fixtures/day), each read into its
own plan: nerve's daemon, a process by pid or the pid of a name, how many times a window came
into focus, commands started at a moment, whether the person was at the computer, what nerve
said about a reading, how the first run of a command ended, a command's CPU peak."""

from __future__ import annotations

import re
from datetime import UTC

import pytest

from nerve.recall import ask
from nerve.workspace import WorkspaceDir
from tests.helpers.day import Day


def _answer(day: Day, question: str) -> str:
    result = ask(WorkspaceDir(day.root), question, record=False, now_ns=day.now_ns, tz=UTC)
    assert result.answered, result.text
    return result.text


@pytest.mark.parametrize(
    "question", ["when did nerve start?", "is nerve still running?", "which senses were running?"]
)
def test_the_daemon_is_its_start_stop_and_senses(recorded_day: Day, question: str) -> None:
    text = _answer(recorded_day, question)
    assert text.startswith("nerve's daemon started at 19:22:53 (pid 14876), stopped at 19:33:11")
    assert "not running now" in text and "focus, memory, network, power, processes, shell" in text


def test_a_pid_is_its_process_and_a_name_its_pid(recorded_day: Day) -> None:
    text = _answer(recorded_day, "what was pid 16845?")
    assert "- yes [16845] (root): seen from 19:25:05" in text
    assert "yes [16845]" in _answer(recorded_day, "what was the pid of yes?")
    assert "cpuhog.py [18048]" in _answer(recorded_day, "which process was 18048?")


def test_how_many_times_a_window_had_the_focus(recorded_day: Day) -> None:
    assert _answer(recorded_day, "how often did I switch to Vim?").startswith(
        "Switched to `vim` 5 times in the whole log"
    )
    assert _answer(recorded_day, "how many different apps did I have?").startswith(
        "3 apps had the focus in the whole log (XTerm, Firefox, Vim)"
    )


def test_commands_counted_at_a_moment_are_those_started_then(recorded_day: Day) -> None:
    text = _answer(recorded_day, "how many commands did I run at 19:24:58?")
    assert text.startswith("5 commands at 19:24:58") and "yes" not in text


def test_at_the_computer_is_time_away(recorded_day: Day) -> None:
    text = _answer(recorded_day, "was I at the computer at 19:27?")
    assert "away from 19:25:26 to 19:28:30 (3 min 4 s), back at 19:28:30" in text


def test_what_nerve_said_about_a_reading_matches_its_lines(recorded_day: Day) -> None:
    text = _answer(recorded_day, "what did nerve say about the network?")
    assert "19:27:35  net all down" in text


def test_the_first_run_of_a_command(recorded_day: Day) -> None:
    assert _answer(recorded_day, "how did my first build end?").startswith(
        "`build` first exited 2 (19:23:38)"
    )


def test_a_command_s_cpu_peak_is_its_process_s(recorded_day: Day) -> None:
    assert "yes [16845] (root): peak 91.8% of a core" in _answer(
        recorded_day, "peak CPU of the yes command?"
    )


@pytest.mark.parametrize(
    "question", ["what did I run in src?", "which commands ran in project/src?"]
)
def test_in_a_folder_commands_ran_in_is_that_folder(recorded_day: Day, question: str) -> None:
    text = _answer(recorded_day, question)
    assert text.startswith("In ") and "ran `ls -l`" in text and "cat guide.md" not in text


@pytest.mark.parametrize(
    "question", ["where did I run make build?", "memgrow's working directory?"]
)
def test_where_a_command_ran_is_its_working_directory(recorded_day: Day, question: str) -> None:
    text = _answer(recorded_day, question)
    assert re.match(r"`[^`]+` ran in /tmp/nerve-day/home/work/project in the whole log", text)


def test_a_folder_word_in_a_window_title_is_that_window(recorded_day: Day) -> None:
    text = _answer(recorded_day, "when did I look at the directory listing?")
    assert "19:24:30  Firefox: Directory listing for /" in text


@pytest.mark.parametrize(
    ("question", "said"),
    [
        ("what came after the first failed make build?",
         "After `make build` (exit 2, 0.0 s) (19:23:38), you ran `make build` (exit 2, 0.0 s) "
         "at 19:23:50."),
        ("after the first build failure, what did I run?", "you ran `make build` (exit 2"),
        ("what did I change just before make build worked?",
         "Before `make build` (exit 0, 0.0 s) (19:29:58), project/src/main.c was modified at "
         "19:29:39."),
    ],
)  # fmt: skip
def test_order_against_a_run_that_ended_so(recorded_day: Day, question: str, said: str) -> None:
    assert said in _answer(recorded_day, question)


def test_file_words_naming_nothing_recorded_are_said_back(recorded_day: Day) -> None:
    result = ask(WorkspaceDir(recorded_day.root), "show me the diff of main.c", record=False,
                 now_ns=recorded_day.now_ns, tz=UTC)  # fmt: skip
    assert not result.answered and "nothing I can match to 'diff'" in result.text


@pytest.mark.parametrize(
    ("question", "said"),
    [
        ("did I edit main.c before or after the first build?",
         "project/src/main.c was first modified at 19:23:27, before `make build` first ran at "
         "19:23:38."),
        ("which started first, yes or memgrow?",
         "`yes > /dev/null` first ran at 19:24:38, before `./tools/memgrow.py` first ran at "
         "19:25:18."),
        ("did I start yes before memgrow?", "`yes > /dev/null` first ran at 19:24:38, before"),
    ],
)  # fmt: skip
def test_which_of_two_came_first(recorded_day: Day, question: str, said: str) -> None:
    assert _answer(recorded_day, question).startswith(said)


@pytest.mark.parametrize(
    ("question", "shown"),
    [
        ("what was on my screen at 7:24:30 pm?", "- Firefox: Directory listing for / - "),
        ("which file was open in Vim at 19:24:10?",
         "- Vim: util.c (~/work/project/src) - VIM (in focus from 19:24:05)"),
    ],
)  # fmt: skip
def test_the_window_in_focus_at_a_moment(recorded_day: Day, question: str, shown: str) -> None:
    assert shown in _answer(recorded_day, question)


def test_a_measure_a_reading_has_not_is_said_back(recorded_day: Day) -> None:
    result = ask(WorkspaceDir(recorded_day.root), "how long was the CPU busy?",
                 record=False, now_ns=recorded_day.now_ns, tz=UTC)  # fmt: skip
    assert not result.answered and result.text.startswith("I understood: cpu, in the whole log")


def test_after_a_command_ended_is_the_two_minutes_after_it(recorded_day: Day) -> None:
    text = _answer(recorded_day, "did memory drop after memgrow exited?")
    assert text.startswith("Memory use after `./tools/memgrow.py` ended (19:28:31 to 19:30:31)")


def test_when_i_came_back_is_the_two_minutes_after_time_away(recorded_day: Day) -> None:
    text = _answer(recorded_day, "what did I do when I came back?")
    assert text.startswith("What you were doing after you came back (19:28:30 to 19:30:30)")
    assert "in Vim: main.c" in text
