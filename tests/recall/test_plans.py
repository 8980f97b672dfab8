"""Tier 0 by parts (issue 41): the newcomer's questions over their recorded morning, each
answered from the right window and subject, citing its events; the time words read into
windows; a question whose subject matches nothing asks instead of answering; CLI, MCP and the
library give the same answer."""

from __future__ import annotations

import dataclasses
import json
from datetime import UTC, datetime
from pathlib import Path
from zoneinfo import ZoneInfo

import pytest

from nerve.api import Workspace
from nerve.clock import Hlc
from nerve.recall import AskResult, ask
from nerve.recall.plans import find_window, parse
from nerve.workspace import WorkspaceDir, init_workspace
from tests.conftest import run_cli
from tests.helpers import newcomer
from tests.helpers.day import Day

at = newcomer.at


@pytest.fixture(scope="module")
def morning(tmp_path_factory: pytest.TempPathFactory) -> WorkspaceDir:
    return newcomer.record(init_workspace(tmp_path_factory.mktemp("newcomer") / "ws"))


def _ask(ws: WorkspaceDir, question: str) -> AskResult:
    return ask(ws, question, record=False, now_ns=newcomer.NOW, tz=UTC)


# (question, what the answer must hold, what it must not)
EXAMPLES = [
    ("what happened at 07:42?",
     ("At 07:42 (07:42:00 to 07:42:59): 14 events", "$ make build", "$ git status",
      "file modified src/app.py", "… and 2 more; `nerve tail --since 2026-05-06T07:42:00+00:00 "
      "--until 2026-05-06T07:43:00+00:00` shows all"),
     ("$ ls", "[exit 130]")),
    ("what was I doing between 07:41 and 07:43?",
     ("ran `ls`", "ran `false` (exit 1", "ran `make build` (exit 0", "ran `git status`",
      "in xterm: vim src/app.py", "file modified src/app.py"),
     ("exit 2", "Firefox")),
    ("what did I run 2 minutes ago?",
     ("`yes` (exit 130, 2 min 0 s)", "running then: python3 [777] (u) `python3 memgrow.py`"),
     ("git status", "make build")),
    ("which process used the most memory?",
     ("- python3 [777] (u) `python3 memgrow.py`: peak 3008 MiB (2.9 GiB) resident at 07:44:10",
      "mypy [555] (u) `mypy nerve`: peak 424 MiB"), ()),
    ("how much memory did memgrow.py use?", ("peak 3008 MiB (2.9 GiB) resident at 07:44:10",),
     ("mypy",)),
    ("how long was I in vim?", ("In `vim` for 7 min 55 s",), ("firefox",)),
    ("which window was I in before Firefox?",
     ("you were in xterm: vim notes.md, from 07:30:00 to 07:35:00",), ("build",)),
    ("when did I switch to the build window?", ("07:38:00  xterm: build: make build",), ("vim",)),
    ("what was the load average during the last 10 minutes?",
     ("Load average (1 min) the last 10 minutes (07:35:35 to 07:45:35)", "peak 3.10 at 07:44:00"),
     ()),
    ("how busy was the machine today?", ("CPU use today", "peak 30.0% at 07:43:00"), ()),
    ("when did memory peak?", ("peak 78.0% at 07:44:00",), ()),
    ("what's my exit code for make build?",
     ("`make build` last exited 0 (07:42:05)", "(exit 2, 3.0 s)"), ()),
    ("did the yes command finish?", ("`yes` finished at 07:45:00 with exit 130",), ()),
    ("is pid 777 still running?", ("exited by 07:44:25", "not running now"), ()),
    ("what got surfaced?", ("mem 78.0% PRESSURE (surface) — surfaced",), ("net all down",)),
    ("why was memory surfaced?", ("mem 78.0% PRESSURE", "beat the interruption cost"), ()),
    ("what did nerve interrupt me about?", ("mem 78.0% PRESSURE",), ("net all down",)),
    ("why was the net reading held?", ("net all down 0.0 KiB/s (hold:value) — held",), ("mem",)),
    ("is anything unusual happening?", ("1 surfaced, 1 held", "mem 78.0%", "net all down"), ()),
    ("how many times did I run make build?", ("2 runs of `make build`",), ()),
    # a moment's minute holds samples: they answer, not the newest sample after it
    ("what was using the most memory at 07:44?",
     ("- python3 [777] (u) `python3 memgrow.py`: peak 3008 MiB (2.9 GiB) resident at 07:44:10",),
     ()),
    ("what was the cpu at 07:44?", ("CPU use at 07:44 (07:44:00 to 07:44:59): average 30.0%",),
     ()),
    ("how much time did I spend in firefox today?", ("In `firefox` for 3 min 0 s today",), ()),
    ("how many commands did I run today?", ("6 commands today",), ()),
    ("when did I last run git status?", ("`git status` that ran", "07:42:20"), ("make",)),
]  # fmt: skip


@pytest.mark.parametrize(("question", "has", "lacks"), EXAMPLES, ids=[q for q, *_ in EXAMPLES])
def test_the_newcomers_questions_are_answered_right(
    morning: WorkspaceDir, question: str, has: tuple[str, ...], lacks: tuple[str, ...]
) -> None:
    result = _ask(morning, question)
    assert result.answered and result.tier == 0 and result.plan is not None, result.text
    for part in has:
        assert part in result.text, (part, result.text)
    for part in lacks:
        assert part not in result.text, (part, result.text)
    assert result.spans  # every answer cites the events it used


def test_an_answer_cites_the_rows_it_names(morning: WorkspaceDir) -> None:
    result = _ask(morning, "what's my exit code for make build?")
    conn = morning.connect()
    try:
        lines = [
            conn.execute("SELECT line FROM events WHERE id = ?", [bytes.fromhex(s)]).fetchone()[0]
            for s in result.spans
        ]
    finally:
        conn.close()
    assert lines == ["$ make build", "$ make build [exit 2]"]
    assert result.plan == {
        "window": None,
        "subject": {
            "kind": "command",
            "name": "make build",
            "pid": None,
            "reading": None,
            "status": None,
        },
        "measure": "exit",
        "anchor": None,
    }


@pytest.mark.parametrize(
    "question",
    ["how long was I in emacs?", "how much memory did frobnicate use?", "why was the disk held?"],
)
def test_a_subject_the_log_does_not_hold_is_asked_about_not_answered(
    morning: WorkspaceDir, question: str
) -> None:
    result = _ask(morning, question)
    assert not result.answered and result.tier is None
    assert "?" in result.text  # it says what it understood and asks


def test_a_time_the_log_does_not_cover_is_said_plainly_and_not_answered(
    morning: WorkspaceDir,
) -> None:
    result = _ask(morning, "what did I run yesterday at 9?")
    assert result.text.startswith(
        "Nothing was recorded yesterday at 09:00 (Tue 09:00:00 to Tue 09:59:59): the log covers "
    )
    assert "I understood: commands, yesterday at 09:00." in result.text
    assert not result.answered and result.tier is None


def test_the_same_log_question_and_now_give_the_same_bytes(morning: WorkspaceDir) -> None:
    runs = [_ask(morning, "what happened around 7:40?") for _ in range(2)]
    dumps = [json.dumps(r.to_json() | {"question_id": ""}, sort_keys=True) for r in runs]
    assert dumps[0] == dumps[1] and runs[0].left_out > 0


# -- time words ----------------------------------------------------------------------------

NOW = at("07:45:35")


def _span(text: str, now: int = NOW, tz: object = UTC) -> tuple[str, str, str]:
    window, _ = find_window(text, now, tz)  # type: ignore[arg-type]
    assert window is not None, text
    fmt = "%m-%d %H:%M:%S"
    zone = tz if tz is not None else UTC
    return (
        window.label,
        datetime.fromtimestamp(window.start_ns // 10**9, zone).strftime(fmt),  # type: ignore[arg-type]
        datetime.fromtimestamp(window.end_ns // 10**9, zone).strftime(fmt),  # type: ignore[arg-type]
    )


@pytest.mark.parametrize(
    ("text", "label", "start", "end"),
    [
        ("what happened at 07:42", "at 07:42", "05-06 07:42:00", "05-06 07:43:00"),
        ("at 07:42:10", "at 07:42:10", "05-06 07:42:08", "05-06 07:42:14"),  # a sense sees it late
        ("around 7:40", "around 07:40 (±5 min)", "05-06 07:35:00", "05-06 07:45:00"),
        ("between 07:41 and 07:43", "between 07:41 and 07:43", "05-06 07:41:00", "05-06 07:43:00"),
        ("from 6 to 7:30", "between 06:00 and 07:30", "05-06 06:00:00", "05-06 07:30:00"),
        ("at 3:15", "at 03:15", "05-06 03:15:00", "05-06 03:16:00"),
        ("at 7:15 pm", "at 19:15", "05-05 19:15:00", "05-05 19:16:00"),
        ("at 9", "at 21:00", "05-05 21:00:00", "05-05 22:00:00"),
        ("yesterday at 9", "yesterday at 09:00", "05-05 09:00:00", "05-05 10:00:00"),
        ("on monday", "on Monday", "05-04 00:00:00", "05-05 00:00:00"),
        ("this morning", "this morning", "05-06 05:00:00", "05-06 12:00:00"),
        ("2 minutes ago", "2 minutes ago", "05-06 07:43:05", "05-06 07:44:05"),
        ("in the last 10 minutes", "the last 10 minutes", "05-06 07:35:35", "05-06 07:45:35"),
        ("since 7", "since 07:00", "05-06 07:00:00", "05-06 07:45:35"),
        ("before 7:30", "before 07:30", "05-06 00:00:00", "05-06 07:30:00"),
    ],
)
def test_time_words_become_windows(text: str, label: str, start: str, end: str) -> None:
    assert _span(text) == (label, start, end)


def test_this_morning_before_five_is_since_midnight() -> None:
    early = at("04:45:00")
    assert _span("this morning", now=early) == ("this morning", "05-06 00:00:00", "05-06 12:00:00")


def test_a_part_of_the_day_not_begun_is_said_so(recorded_day: Day) -> None:
    ten = recorded_day.now_ns - (recorded_day.now_ns % (86_400 * 10**9)) + 10 * 3600 * 10**9
    result = ask(WorkspaceDir(recorded_day.root), "what happened this afternoon", record=False,
                 now_ns=ten, tz=UTC)  # fmt: skip
    assert not result.answered
    assert result.text.startswith("This afternoon has not begun yet: it starts at 12:00:00."), (
        result.text
    )


def test_a_time_is_local_to_the_zone_asked_in() -> None:
    berlin = ZoneInfo("Europe/Berlin")  # UTC+2 in May
    assert _span("at 09:42", tz=berlin) == ("at 09:42", "05-06 09:42:00", "05-06 09:43:00")
    window, _ = find_window("at 09:42", NOW, berlin)
    assert window is not None and window.start_ns == at("07:42")


def test_order_questions_name_what_they_are_ordered_against() -> None:
    plan = parse("which window was I in before Firefox?", now_ns=NOW, tz=UTC)
    assert plan is not None and plan.measure == "before"
    assert plan.anchor is not None and plan.anchor.name == "firefox"


# -- one answer everywhere -----------------------------------------------------------------


def test_mcp_gives_the_same_answer_and_cites_the_command_start(
    morning: WorkspaceDir, monkeypatch: pytest.MonkeyPatch
) -> None:
    from nerve.mcp import tools
    from nerve.mcp.budgets import Allowance
    from nerve.privacy.screen import Screen

    monkeypatch.setattr("time.time_ns", lambda: newcomer.NOW)
    monkeypatch.setenv("TZ", "UTC")
    question = "what did I run 2 minutes ago?"
    lib = ask(morning, question, record=False, now_ns=newcomer.NOW)
    call = tools.Call(Workspace(morning), Screen(morning.config.privacy), Allowance(500, 1 << 20))
    over_mcp = tools.ask(call, question)
    assert over_mcp.answer == lib.text and over_mcp.answered
    yes = [c for c in over_mcp.citations if c.line == "$ yes [exit 130]"]
    assert yes and "07:43:00" in yes[0].time  # its start, as the text says, not when it ended


def test_cli_asks_as_if_it_were_then_in_the_zone_given(morning: WorkspaceDir) -> None:
    args = ("--workspace", str(morning.root), "ask", "what happened at 09:42?", "--no-record")
    proc = run_cli(*args, "--now", "2026-05-06T09:45:35", "--tz", "Europe/Berlin", "--json")
    result = json.loads(proc.stdout)
    assert result["plan"]["window"]["start_ns"] == at("07:42")
    assert result["answer"] == _ask(morning, "what happened at 07:42?").text.replace(
        "07:4", "09:4"
    ).replace("+00:00", "+02:00")
    assert result["left_out"] == 2 and len(result["spans"]) == 12
    bad = run_cli(*args, "--tz", "Mars/Olympus", check=False)
    assert bad.returncode == 2 and "Mars/Olympus" in bad.stderr


def test_cli_text_wraps_at_word_boundaries() -> None:
    from nerve.cli.ask_cmds import wrapped

    text = "Most memory:\n- python3 [777] (u) `python3 memgrow.py`: peak 3008 MiB resident"
    assert wrapped(text, 30).splitlines() == [
        "Most memory:",
        "- python3 [777] (u) `python3",
        "  memgrow.py`: peak 3008 MiB",
        "  resident",
    ]
    assert all(len(line) <= 30 for line in wrapped("x " * 40 + "a-very-long-word", 30).splitlines())


def test_an_empty_log_says_nothing_was_recorded(tmp_path: Path) -> None:
    """An empty log: the plan says nothing was recorded and what it understood; no answer."""
    ws = init_workspace(tmp_path / "ws")
    result = ask(ws, "what happened at 07:42?", record=False, now_ns=NOW, tz=UTC)
    assert not result.answered
    assert result.text == (
        "Nothing is recorded in this log yet, so I cannot answer. I understood: anything "
        "recorded, at 07:42."
    )


def test_mcp_search_ranks_the_exact_command_first(tmp_path: Path) -> None:
    """Issue 41: window titles holding the same words (newer, same score) ranked above the
    real ``make build`` command."""
    from nerve.mcp import tools
    from nerve.mcp.budgets import Allowance
    from nerve.privacy.screen import Screen
    from tests.helpers.workday import command, focus

    ws = init_workspace(tmp_path / "ws")
    events = [command(at("07:40"), "make build", 0, 10, "/home/u")]
    events += [focus(at(f"07:4{i}"), "xterm", "make build") for i in range(1, 5)]
    with ws.open_log() as log:
        log.import_events(
            [dataclasses.replace(e, hlc=Hlc(e.hlc.physical_ns, i)) for i, e in enumerate(events)]
        )
    call = tools.Call(Workspace(ws), Screen(ws.config.privacy), Allowance(500, 1 << 20))
    hits = tools.search(call, "make build", limit=5).hits
    assert [h.line for h in hits][:2] == ["$ make build", "focus xterm: make build"]
