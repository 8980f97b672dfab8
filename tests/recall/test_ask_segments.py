"""``ask`` reads a log by sealed segment (issue 41, item 7): the newcomer's morning sealed
in several segments with an unsealed tail gives each question the same answer, byte for byte,
as the morning in one read (the whole log as one query), the first time and again from what
the segments' reads kept."""

from __future__ import annotations

import json
from collections.abc import Callable
from datetime import UTC
from pathlib import Path
from typing import Any

import duckdb
import pytest

from nerve.query import EVENTS_IN_TIME, SEGMENTS_TABLE, newest_floors, time_args
from nerve.recall import ask
from nerve.workspace import WorkspaceDir, init_workspace
from tests.helpers import newcomer
from tests.recall.test_plans import EXAMPLES

QUESTIONS = sorted(
    {question for question, *_ in EXAMPLES}
    | {"how busy was the machine today?", "what's up?", "when did memory peak?"}
)


def _split(ws: WorkspaceDir, parts: int) -> WorkspaceDir:
    """The morning in ``parts`` sealed segments and an unsealed tail."""
    events = newcomer.events()
    size = len(events) // (parts + 1) + 1
    with ws.open_log() as log:
        for start in range(0, len(events), size):
            log.import_events(events[start : start + size])
            if start + size < len(events):
                log.seal()
    return ws


@pytest.fixture(scope="module")
def split(tmp_path_factory: pytest.TempPathFactory) -> WorkspaceDir:
    return _split(init_workspace(tmp_path_factory.mktemp("split") / "ws"), 4)


def _one_read(ws: WorkspaceDir) -> Callable[[], duckdb.DuckDBPyConnection]:
    """A connection whose reads are not split by segment (as an agent's screened one)."""

    def connect() -> duckdb.DuckDBPyConnection:
        conn = ws.connect()
        conn.execute(f"DROP TABLE {SEGMENTS_TABLE}")
        return conn

    return connect


def _answer(ws: WorkspaceDir, question: str, **how: Any) -> str:
    result = ask(ws, question, record=False, now_ns=newcomer.NOW, tz=UTC, question_id="q-1",
                 **how)  # fmt: skip
    return json.dumps(result.to_json(), sort_keys=True)


def test_the_log_has_segments_and_a_tail(split: WorkspaceDir) -> None:
    conn = split.connect()
    try:
        assert conn.execute(f"SELECT count(*) FROM {SEGMENTS_TABLE}").fetchone() == (4,)
        assert conn.execute("SELECT count(*) FROM _tail").fetchone() != (0,)
    finally:
        conn.close()


@pytest.mark.parametrize("question", QUESTIONS)
def test_a_question_read_by_segment_is_answered_as_read_whole(
    split: WorkspaceDir, question: str
) -> None:
    whole = _answer(split, question, connect=_one_read(split))
    assert _answer(split, question) == whole
    assert _answer(split, question) == whole  # the segments' reads kept


def test_a_time_range_reads_the_rows_the_coalesce_reads() -> None:
    conn = duckdb.connect()
    conn.execute(
        "CREATE TABLE events AS SELECT * FROM (VALUES (1, 10, NULL), (2, 10, 20), (3, 30, 5), "
        "(4, 25, NULL), (5, 5, 25)) AS t(n, physical_ns, valid_time_ns)"
    )
    for lo, hi in [(0, 100), (10, 25), (20, 21), (5, 6), (26, 30)]:
        sql = f"SELECT n FROM {EVENTS_IN_TIME} ORDER BY n"
        mine = conn.execute(sql, time_args(lo, hi)).fetchall()
        plain = conn.execute(
            "SELECT n FROM events WHERE coalesce(valid_time_ns, physical_ns) >= ? "
            "AND coalesce(valid_time_ns, physical_ns) < ? ORDER BY n",
            [lo, hi],
        ).fetchall()
        assert mine == plain, (lo, hi)


def test_the_newest_floors_rise_with_the_rows_wanted(split: WorkspaceDir) -> None:
    conn = split.connect()
    try:
        floors = newest_floors(conn, 1)
        assert floors == sorted(floors, reverse=True) and len(floors) >= 2
        assert newest_floors(conn, 10**9) == []
        conn.execute(f"DROP TABLE {SEGMENTS_TABLE}")
        assert newest_floors(conn, 1) == []
    finally:
        conn.close()


def test_an_encrypted_log_is_read_by_segment_too(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from nerve.log import crypt

    key = tmp_path / "K"
    crypt.new_key_file(key)
    monkeypatch.setenv(crypt.ENV_KEY_FILE, str(key))
    ws = init_workspace(tmp_path / "ws", encrypt=(crypt.kek_from_file(key), crypt.file_source()))
    _split(ws, 3)
    conn = ws.connect()
    try:
        assert len(newest_floors(conn, 1)) >= 2  # the sealed files' statistics are read
    finally:
        conn.close()
    for question in ("how much memory did memgrow.py use?", "what did I run 2 minutes ago?"):
        assert _answer(ws, question) == _answer(ws, question, connect=_one_read(ws))


@pytest.fixture(scope="module")
def interleaved(tmp_path_factory: pytest.TempPathFactory) -> WorkspaceDir:
    """Four sealed segments of commands whose times overlap: the k-th holds every fourth
    second of the morning's last ten minutes from its k-th on (its valid times)."""
    from nerve.log.fields import EventFields

    ws = init_workspace(tmp_path_factory.mktemp("interleaved") / "ws")
    with ws.open_log() as log:
        for k in range(4):
            times = [newcomer.NOW - 600 * 10**9 + (4 * i + k) * 10**9 for i in range(150)]
            n = len(times)
            log.append_columns(EventFields(
                kind=["observation"] * n, subject=["shell"] * n, source=[5] * n, trust=[1] * n,
                valid_time_ns=times, payload=[b'{"command":"ls"}'] * n, line=["$ ls"] * n,
            ))  # fmt: skip
            log.seal()
    return ws


@pytest.mark.parametrize("layout", ["split", "interleaved"])
def test_the_newest_rows_read_by_segment_are_the_log_s_newest(
    layout: str, request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A plan's newest rows, read newest segment first and stopped once no older segment can
    add one, are the newest rows of the whole log, in a window or not, when the segments'
    times follow each other and when they overlap; few rows wanted read fewer segments."""
    split: WorkspaceDir = request.getfixturevalue(layout)
    from nerve.recall.plans import memo
    from nerve.recall.plans.log import Reader
    from nerve.recall.plans.window import Window

    read: list[str] = []
    segment = memo._segment
    monkeypatch.setattr(memo, "_segment", lambda conn, source, *a: read.append(source) or
                        segment(conn, source, *a))  # fmt: skip
    split_conn, whole_conn = split.connect(), _one_read(split)()
    try:
        first, last = Reader(whole_conn, newcomer.NOW, UTC).span() or (0, 0)
        middle = Window(first + (last - first) // 3, last - (last - first) // 3, "")
        for window in (None, middle):
            for limit in (1, 2, 7, 40, 10**6):
                for source in (None, 1, 5):
                    got = Reader(split_conn, newcomer.NOW, UTC).rows(window, source=source,
                                                                    limit=limit)  # fmt: skip
                    want = Reader(whole_conn, newcomer.NOW, UTC).rows(window, source=source,
                                                                     limit=limit)  # fmt: skip
                    assert got == want, (window, limit, source)
        # split: the tail's newest row is the newest; interleaved: its newest segment's
        # newest row is, and seven rows are in all four
        wanted = {"split": [(1, 0), (10**6, 4)], "interleaved": [(1, 1), (7, 4), (10**6, 4)]}
        for limit, segments in wanted[layout]:
            read.clear()
            Reader(split_conn, newcomer.NOW, UTC).rows(None, limit=limit)
            assert len(set(read)) == segments
    finally:
        split_conn.close()
        whole_conn.close()
