"""Questions about time away, folders and time in a window, asked of the recorded real day
(tests/fixtures/day): away is the idle spell the plan made; folders are where its commands
ran and files changed; a window's time ends when the daemon stopped, however late one asks."""

from __future__ import annotations

import re
from datetime import UTC

from nerve.recall import ask
from nerve.workspace import WorkspaceDir
from tests.helpers.day import Day

HOUR = 3600 * 10**9


def _ask(day: Day, question: str, now_ns: int | None = None) -> str:
    result = ask(
        WorkspaceDir(day.root), question, record=False, now_ns=now_ns or day.now_ns, tz=UTC
    )
    return result.text


def _clock(iso: str) -> str:
    return iso[11:16]  # HH:MM


def test_time_away_is_the_idle_spell_and_when_input_came_back(recorded_day: Day) -> None:
    (idle,) = recorded_day.plan["idle"]
    text = _ask(recorded_day, "how long was I away today?")
    assert text.startswith("Away 1 time today"), text
    assert f"back at {_clock(idle['input_again']['iso'])}" in text
    assert "time away" in _ask(recorded_day, "was I away between 19:29 and 19:31?")  # none then


def test_folders_are_where_commands_ran_and_files_changed(recorded_day: Day) -> None:
    text = _ask(recorded_day, "which folders did I work in?")
    assert text.startswith("Folders worked in"), text
    project = recorded_day.plan["project"]
    assert f"{project}/docs:" in text and re.search(r"\d+ commands?", text)
    docs = _ask(recorded_day, "when was I in the docs folder?")
    assert "cat guide.md" in docs and "/src" not in docs


def test_time_in_a_window_ends_when_the_daemon_stopped(recorded_day: Day) -> None:
    late = recorded_day.now_ns + 8 * HOUR  # asked long after the recording ended
    text = _ask(recorded_day, "how long was I in vim?", now_ns=late)
    minutes = re.search(r"for (?:(\d+) h )?(\d+) min", text)
    assert minutes and not minutes[1] and int(minutes[2]) <= 10, text


def test_what_i_was_doing_ends_the_last_window_when_the_daemon_stopped(recorded_day: Day) -> None:
    late = int(recorded_day.plan["end"]["ns"]) + HOUR // 2  # the last hour still holds it all
    text = _ask(recorded_day, "what was I doing?", now_ns=late)
    lasted = [int(s) for s in re.findall(r", (\d+) s$", text, re.M)]
    assert lasted and max(lasted) < 300, text  # not half an hour past the recording's end
