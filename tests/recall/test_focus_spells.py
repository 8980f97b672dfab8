"""``focus_spells`` counts only time the focus sense saw: a spell ends when the daemon stops
(or starts again after a crash) and while capture is paused, not at the next focus hours
later."""

from __future__ import annotations

import json

import duckdb

from nerve.categories import SPELLS_VIEW, define
from nerve.events import SourceClass

MIN = 60 * 10**9
FOCUS = int(SourceClass.APP_FOCUS)


def _spells(rows: list[tuple[int, str, int, dict[str, str] | None]]) -> list[tuple]:
    """``rows``: (minute, kind, source, data). The spells as (start, end, afk, app) in
    minutes (end None while it lasts)."""
    conn = duckdb.connect()
    conn.execute(
        "CREATE TABLE events (physical_ns BIGINT, logical INTEGER, valid_time_ns BIGINT, "
        "kind VARCHAR, source INTEGER, data JSON)"
    )
    conn.executemany(
        "INSERT INTO events VALUES (?, 0, NULL, ?, ?, ?)",
        [(m * MIN, k, s, json.dumps(d) if d else None) for m, k, s, d in rows],
    )
    define(conn, [])
    got = conn.execute(
        f"SELECT start_ns // {MIN}, end_ns // {MIN}, afk, app FROM {SPELLS_VIEW} ORDER BY 1"
    ).fetchall()
    return [tuple(r) for r in got]


def _focus(minute: int, app: str) -> tuple[int, str, int, dict[str, str]]:
    return (minute, "observation", FOCUS, {"event": "focus", "app": app, "title": app})


def test_a_stopped_daemon_ends_the_spell_it_left_open() -> None:
    rows = [
        (0, "daemon.started", 0, None),
        _focus(1, "vim"),
        (10, "daemon.stopped", 0, None),
        (300, "daemon.started", 0, None),
        _focus(301, "firefox"),
    ]
    assert _spells(rows) == [(1, 10, False, "vim"), (301, None, False, "firefox")]


def test_a_crash_ends_the_spell_at_the_next_start() -> None:
    rows = [_focus(1, "vim"), (50, "daemon.started", 0, None), _focus(51, "vim")]
    assert _spells(rows) == [(1, 50, False, "vim"), (51, None, False, "vim")]


def test_a_pause_is_not_counted_and_a_resume_goes_on_in_the_same_window() -> None:
    rows = [
        _focus(1, "vim"),
        (5, "capture.paused", 0, None),
        (65, "capture.resumed", 0, None),
        _focus(70, "code"),
    ]
    assert _spells(rows) == [
        (1, 5, False, "vim"),
        (65, 70, False, "vim"),
        (70, None, False, "code"),
    ]


def test_away_and_back_still_split_a_spell() -> None:
    rows = [
        _focus(1, "vim"),
        (10, "observation", FOCUS, {"event": "away"}),
        (20, "observation", FOCUS, {"event": "back"}),
        (30, "daemon.stopped", 0, None),
    ]
    assert _spells(rows) == [(1, 10, False, "vim"), (10, 20, True, None), (20, 30, False, "vim")]
