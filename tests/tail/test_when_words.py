"""Everyday time words: in questions (``find_period``) and in every ``--since`` / ``--until``."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from nerve.cli.main import run
from nerve.errors import UsageError
from nerve.tail.when import find_period, parse_instant, parse_period
from nerve.workspace import WorkspaceDir

NOW = int(datetime(2026, 5, 6, 15, 30, tzinfo=UTC).timestamp()) * 10**9  # a Wednesday


def _hm(ns: int) -> str:
    return datetime.fromtimestamp(ns // 10**9, UTC).strftime("%m-%d %H:%M")


@pytest.mark.parametrize(
    ("question", "start", "end"),
    [
        ("what used the most CPU in the last 5 minutes?", "05-06 15:25", "05-06 15:30"),
        ("what happened in the past hour", "05-06 14:30", "05-06 15:30"),
        ("the last few minutes", "05-06 15:25", "05-06 15:30"),
        ("which commands failed today?", "05-06 00:00", "05-06 15:30"),
        ("what did I run yesterday?", "05-05 00:00", "05-05 23:59"),
        ("which files changed this morning?", "05-06 05:00", "05-06 11:59"),
        ("what was I doing at 15:00?", "05-06 15:00", "05-06 15:00"),
        ("what was I doing at 3pm", "05-06 15:00", "05-06 15:00"),
        ("new processes since 9", "05-06 09:00", "05-06 15:30"),
        ("since 4pm", "05-05 16:00", "05-06 15:30"),  # still to come today: yesterday's
        ("between 14:00 and 15:00", "05-06 14:00", "05-06 15:00"),
        ("10 minutes ago", "05-06 15:20", "05-06 15:20"),
        ("slowest commands this week", "05-04 00:00", "05-06 15:30"),
        ("what about last week", "04-27 00:00", "05-03 23:59"),
        ("what is using memory now?", "05-06 15:30", "05-06 15:30"),
    ],
)
def test_time_phrases_in_questions(question: str, start: str, end: str) -> None:
    period = find_period(question, now_ns=NOW, tz=UTC)
    assert period is not None
    assert (_hm(period.start_ns), _hm(period.end_ns)) == (start, end)


def test_no_time_phrase_is_none() -> None:
    assert find_period("what did I run in ~/src/x?", now_ns=NOW, tz=UTC) is None
    assert find_period("which files changed?", now_ns=NOW, tz=UTC) is None


def test_only_a_whole_phrase_is_a_time() -> None:
    assert parse_period("yesterday", now_ns=NOW, tz=UTC) is not None
    assert parse_period("the last hour", now_ns=NOW, tz=UTC) is not None
    assert parse_period("10 minutes", now_ns=NOW, tz=UTC) is not None
    for junk in ("yesterday-ish", "the", "soon", "25:00"):
        assert parse_period(junk, now_ns=NOW, tz=UTC) is None, junk
    with pytest.raises(UsageError, match="time in words"):
        parse_instant("yesterday-ish", now_ns=NOW, tz=UTC)


def test_since_and_until_take_words() -> None:
    since = parse_instant("yesterday", now_ns=NOW, tz=UTC)
    until = parse_instant("yesterday", now_ns=NOW, tz=UTC, end=True)
    assert (_hm(since.physical_ns), _hm(until.physical_ns)) == ("05-05 00:00", "05-05 23:59")
    assert _hm(parse_instant("since 9", now_ns=NOW, tz=UTC).physical_ns) == "05-06 09:00"
    assert _hm(parse_instant("this morning", now_ns=NOW, tz=UTC).physical_ns) == "05-06 05:00"
    assert parse_instant("10m", now_ns=NOW).physical_ns == NOW - 600 * 10**9  # as before


def _nerve(argv: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    with pytest.raises(SystemExit) as done:
        run(argv)
    out = capsys.readouterr()
    return int(done.value.code or 0), out.out, out.err


def test_tail_since_words_through_the_cli(
    workspace: WorkspaceDir, capsys: pytest.CaptureFixture[str]
) -> None:
    root = str(workspace.root)
    code, _, err = _nerve(["--workspace", root, "tail", "--since", "this morning", "--all"], capsys)
    assert code == 0, err
    code, _, err = _nerve(["--workspace", root, "tail", "--since", "someday"], capsys)
    assert code == 2 and "time in words" in err


def test_shell_hook_cli_prints_each_snippet(capsys: pytest.CaptureFixture[str]) -> None:
    for shell in ("bash", "zsh", "fish"):
        code, out, _ = _nerve(["shell-hook", shell], capsys)
        assert code == 0 and "nerve1" in out
    code, _, err = _nerve(["shell-hook", "tcsh"], capsys)
    assert code == 2 and "no hook for the shell 'tcsh'" in err
