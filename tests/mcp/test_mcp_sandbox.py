"""`nerve.mcp.sandbox.run_sql` on a bare DuckDB connection: where rows stop (by count and by
bytes), what a refusal says, and how each kind of value comes out as JSON."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import duckdb
import pytest

import nerve
from nerve.errors import AccessRefused, UsageError
from nerve.mcp.sandbox import LOCKED, MEMORY_LIMIT, open_sandbox, run_sql
from nerve.workspace import init_workspace

HINT = "one SELECT over events or a projection, e.g. SELECT kind, count(*) FROM events GROUP BY ALL"


@pytest.fixture
def conn() -> Iterator[duckdb.DuckDBPyConnection]:
    c = duckdb.connect()
    yield c
    c.close()


def _sql(conn: duckdb.DuckDBPyConnection, sql: str, **kw: int) -> tuple[list[list[object]], bool]:
    result = run_sql(conn, sql, limit=kw.pop("limit", 100), timeout_ms=10_000, **kw)
    return result.rows, result.truncated


def test_rows_stop_at_the_limit_and_say_so(conn: duckdb.DuckDBPyConnection) -> None:
    assert _sql(conn, "SELECT * FROM range(200)", limit=100) == ([[i] for i in range(100)], True)
    assert _sql(conn, "SELECT * FROM range(100)", limit=100) == ([[i] for i in range(100)], False)
    assert _sql(conn, "SELECT * FROM range(3)", limit=0) == ([], True)


@pytest.mark.parametrize(
    ("value", "size"),
    [("'abcd'", 9), ("'ab'::BLOB", 9), ("{'a': 'bc'}", 12), ("['a', 'b']", 13), ("7", 11)],
)  # a row of one value: the value, its comma and the brackets
def test_rows_stop_once_they_hold_max_bytes(
    conn: duckdb.DuckDBPyConnection, value: str, size: int
) -> None:
    sql = f"SELECT {value} AS v FROM range(3)"
    rows, cut = _sql(conn, sql, max_bytes=2 * size)
    assert len(rows) == 2 and cut
    rows, cut = _sql(conn, sql, max_bytes=3 * size)
    assert len(rows) == 3 and not cut


def test_only_one_select_runs_and_a_refusal_names_what_was_written(
    conn: duckdb.DuckDBPyConnection,
) -> None:
    assert _sql(conn, "  SELECT 1 AS one;  ") == ([[1]], False)
    with pytest.raises(AccessRefused, match=r"^INSTALL statements are refused") as e:
        run_sql(conn, "install httpfs", limit=1, timeout_ms=1000)
    assert e.value.hint == HINT
    with pytest.raises(AccessRefused, match="holds 2 statements; exactly one SELECT") as e:
        run_sql(conn, "SELECT 1; SELECT 2", limit=1, timeout_ms=1000)
    assert e.value.hint == HINT
    assert _sql(conn, "SELECT 2 AS X;") == ([[2]], False)
    with pytest.raises(AccessRefused, match="holds 0 statements"):
        run_sql(conn, "", limit=1, timeout_ms=1000)


def test_a_failed_query_says_why_in_one_line(conn: duckdb.DuckDBPyConnection) -> None:
    with pytest.raises(UsageError) as bad:
        run_sql(conn, "SELECT nope FROM range(1)", limit=1, timeout_ms=1000)
    assert str(bad.value).startswith("query failed: Binder Error")
    assert "\n" not in str(bad.value) and "LINE 1" not in str(bad.value)
    assert bad.value.hint == HINT
    with pytest.raises(UsageError) as bad:
        run_sql(conn, "SELEC 1", limit=1, timeout_ms=1000)
    assert str(bad.value) == 'query failed: Parser Error: syntax error at or near "SELEC"'


def test_a_slow_query_is_stopped_at_its_time(conn: duckdb.DuckDBPyConnection) -> None:
    slow = "SELECT count(*) FROM range(100000000) a, range(100000000) b"
    with pytest.raises(AccessRefused, match=r"ran longer than 0\.2 s and was stopped") as e:
        run_sql(conn, slow, limit=1, timeout_ms=200)
    assert e.value.hint == (
        "narrow it (a WHERE on ts, a LIMIT, no cross join), or raise mcp.query_timeout"
    )


def test_a_file_outside_the_log_is_refused_with_what_can_be_read(
    conn: duckdb.DuckDBPyConnection,
) -> None:
    conn.execute("SET enable_external_access = false")
    with pytest.raises(AccessRefused, match="reaches outside this workspace's log") as e:
        run_sql(conn, "SELECT * FROM read_csv('/etc/passwd')", limit=1, timeout_ms=1000)
    assert e.value.hint == HINT
    assert "(Permission Error: " in str(e.value) and "/etc/passwd" in str(e.value)  # DuckDB's why
    assert str(e.value).endswith("); only events and the projections can be read")


def test_the_sandbox_reads_nerve_yaml_settings(tmp_path: Path) -> None:
    root = init_workspace(tmp_path / "ws").root
    (root / "nerve.yaml").write_text("attention: {window: 17}\n")
    conn = open_sandbox(nerve.open(root))
    assert _sql(conn, "SELECT attention_window FROM nerve_settings") == ([[17]], False)


def test_each_kind_of_value_comes_out_as_json(conn: duckdb.DuckDBPyConnection) -> None:
    sql = (
        "SELECT '{\"a\": [1, 2]}'::JSON AS j, "
        "'nan'::DOUBLE AS nan, 'inf'::DOUBLE AS inf, 1.5::DOUBLE AS x, "
        "{'k': 'nan'::DOUBLE} AS s, ['inf'::DOUBLE] AS l, '\\x01\\xff'::BLOB AS b, "
        "'{\"a\": 1}' AS text_not_json, ['[1]'] AS texts, {'t': '[2]'} AS st"
    )
    result = run_sql(conn, sql, limit=1, timeout_ms=10_000)
    assert result.columns == ["j", "nan", "inf", "x", "s", "l", "b", "text_not_json", "texts", "st"]
    assert result.rows == [
        [{"a": [1, 2]}, "nan", "inf", 1.5, {"k": "nan"}, ["inf"], "01ff",
         '{"a": 1}', ["[1]"], {"t": "[2]"}],
    ]  # fmt: skip


def test_a_sandbox_is_held_to_its_settings_and_cannot_change_them(tmp_path: Path) -> None:
    conn = open_sandbox(nerve.open(init_workspace(tmp_path / "ws").root))
    held = {n: conn.sql(f"SELECT current_setting('{n}')").fetchall()[0][0] for n, _ in LOCKED}
    assert MEMORY_LIMIT == "1GB" and held == {
        "python_enable_replacements": False,
        "autoinstall_known_extensions": False,
        "autoload_known_extensions": False,
        "allowed_paths": [],
        "allowed_directories": [],
        "temp_directory": "",
        "enable_external_access": False,
        "memory_limit": "953.6 MiB",  # 1 GB as DuckDB shows it
        "threads": 2,
        "lock_configuration": True,
    }
    for name, _ in LOCKED:
        with pytest.raises(duckdb.InvalidInputException, match="configuration has been locked"):
            conn.execute(f"SET {name} = DEFAULT")
    conn.close()
