"""The dev view's pieces without a kernel: it always fits, and its rate is smoothed."""

from __future__ import annotations

import io
import logging
import re
from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st
from rich.cells import cell_len
from rich.console import Console

from nerve.dev.view import render, uptime
from nerve.errors import report
from nerve.runtime.frame import AgentRead, Frame, Highlight, Rate, SenseRow
from nerve.runtime.journal import Entry, Recent, Repeats, format_line, journal
from nerve.runtime.latest import ago

NOW = 1_750_000_000.0
texts = st.text(st.characters(codec="utf-8", exclude_categories=("Cs",)), max_size=300)


@st.composite
def frames(draw: st.DrawFn) -> Frame:
    senses = draw(st.lists(st.tuples(texts, texts, texts), max_size=40))
    decisions = draw(st.lists(st.tuples(st.sampled_from(["surface", "hold:value"]), texts)))
    errors = draw(st.lists(texts, max_size=30))
    agents = draw(st.lists(st.tuples(texts, texts, st.sampled_from(["ok", "refused"])), max_size=9))
    return Frame(
        workspace=draw(texts),
        pid=4242,
        now_s=NOW,
        started_s=NOW - draw(st.floats(0, 1e7)),
        events=draw(st.integers(0, 10**12)),
        rate=draw(st.floats(0, 1e6)),
        segments=draw(st.integers(0, 10**6)),
        senses=tuple(SenseRow(n or "x", g, 10**9, 10**6, NOW - 5, 1e6, t) for n, g, t in senses),
        highlights=tuple(Highlight(NOW - 9, o, "novelty", t) for o, t in decisions),
        errors=tuple(Entry(NOW - 60, logging.WARNING, t) for t in errors),
        alerts=tuple(draw(st.lists(texts, max_size=1))),
        agents=tuple(AgentRead(NOW - 3, c, t, o, 10**9, 10**12) for c, t, o in agents),
    )


@settings(max_examples=80, deadline=None)
@given(frames(), st.integers(30, 220), st.integers(6, 60))
def test_the_view_fills_exactly_the_terminal_and_never_wraps(
    frame: Frame, width: int, height: int
) -> None:
    out = io.StringIO()
    console = Console(file=out, width=width, height=height, color_system=None, legacy_windows=False)
    console.print(render(frame, width, height))
    lines = out.getvalue().split("\n")
    assert lines[-1] == "" and len(lines) - 1 == height
    assert all(cell_len(line) <= width for line in lines)
    assert "\x1b" not in out.getvalue()  # a sense's escape sequence never reaches the terminal


def test_events_per_second_is_smoothed_over_ten_seconds() -> None:
    rate, count = Rate(), 0
    readings = []
    for tick in range(80):  # a refresh every 0.5 s; a commit of 100 events every 2 s
        t = tick * 0.5
        if tick % 4 == 0:
            count += 100
        rate.add(t, count)
        if t >= 10:
            readings.append(rate.per_second())
    assert all(45 <= r <= 55 for r in readings), readings  # per refresh: 0 or 200 /s
    for tick in range(80, 110):  # nothing for 15 s: the rate falls to zero
        rate.add(tick * 0.5, count)
    assert rate.per_second() == 0.0


def test_times_are_short() -> None:
    assert [ago(s) for s in (0.4, 59, 61, 7200, 200000)] == ["0s", "59s", "1m", "2h", "2d"]
    assert [uptime(s) for s in (5, 185, 3723, 180000)] == ["5s", "3m05s", "1h02m", "2d02h"]


def test_a_log_line_is_stamped_and_continued_indented() -> None:
    line = format_line(NOW, logging.WARNING, "seal failed\nsecond line")
    stamp, rest = line[:19], line[20:]
    assert stamp[4] == "-" and stamp[13] == ":"
    assert rest == "warning: seal failed\n    second line"


def test_what_the_daemon_reports_lands_in_its_log_with_the_time(tmp_path: Path) -> None:
    path, echoed = tmp_path / "daemon.log", io.StringIO()
    with journal(path, echoed):
        report("seal failed, will retry: disk full")
    report("after the daemon: not in its log")
    text = path.read_text()
    assert re.fullmatch(
        r"\d{4}-\d\d-\d\d \d\d:\d\d:\d\d warning: seal failed, will retry: disk full\n", text
    )
    assert echoed.getvalue() == text


def test_the_same_error_is_logged_once_a_minute_and_a_new_one_at_once() -> None:
    now = [0.0]
    recent = Recent()
    logging.getLogger("nerve").addHandler(recent)
    try:
        repeats = Repeats(60.0, clock=lambda: now[0])
        for t, text in [(0, "a"), (1, "a"), (59, "a"), (60, "a"), (61, "b"), (62, "a")]:
            now[0] = t
            repeats.warn("shell", text)
    finally:
        logging.getLogger("nerve").removeHandler(recent)
    assert [e.text for e in recent.entries] == ["a", "a", "b", "a"]


def test_a_task_that_failed_unexpectedly_is_logged_with_its_traceback(tmp_path: Path) -> None:
    path = tmp_path / "daemon.log"
    with journal(path):
        try:
            raise ZeroDivisionError("in a task")
        except ZeroDivisionError as exc:  # what asyncio's default exception handler logs
            logging.getLogger("asyncio").error("Task exception was never retrieved", exc_info=exc)
    first, *rest = path.read_text().splitlines()
    assert re.fullmatch(r"\S+ \S+ error: Task exception was never retrieved", first)
    assert rest[0] == "    Traceback (most recent call last):"
    assert rest[-1] == "    ZeroDivisionError: in a task"


def test_a_long_reading_is_cut_at_a_word_with_its_age_kept() -> None:
    port = "port 127.0.0.1:51059 closed (was held by nats-server [12173])"
    row = SenseRow("network", "system", 10, 1, NOW - 5, 1.0, f"{port} · 3s ago")
    frame = Frame(
        workspace="/w", pid=1, now_s=NOW, started_s=NOW - 9, events=3, rate=0.1, segments=0,
        senses=(row,), highlights=(), errors=(), alerts=(), agents=(),
    )  # fmt: skip
    for width in (60, 80):
        out = io.StringIO()
        Console(file=out, width=width, height=8, color_system=None).print(render(frame, width, 8))
        line = next(ln for ln in out.getvalue().splitlines() if ln.startswith("network"))
        latest = line.rstrip().removesuffix("… · 3s ago")
        assert latest != line.rstrip(), line  # the age is kept after the cut
        shown = latest[latest.index("port ") :]
        assert port.startswith(shown) and port[len(shown)] == " ", line
