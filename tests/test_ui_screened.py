"""The rows ``nerve ui`` reads: which ones the privacy rules may change is decided in DuckDB,
and that test must find every row the detectors' own pre-test would send to them."""

from __future__ import annotations

import duckdb
from hypothesis import given, settings
from hypothesis import strategies as st

from nerve.privacy.detectors import candidates
from nerve.ui.screened import MAY_MATCH

PIECES = ["PRIVATE KEY", "glpat-", "xox", "sk-", "AKIA", "ASIA", "ABIA", "ACCA", "A3T", "gh",
          "_", "github_pat_", "eyJ", "@", "://", "=", ":", "--", "SECRET", "Pass", "toKen",
          "KEY", "\u212aey", "1234567", "89", " ", "x", "é", '"', "\\", "-"]  # fmt: skip


CONN = duckdb.connect()


def flagged(conn: duckdb.DuckDBPyConnection, line: str, payload: bytes) -> bool:
    text = "(coalesce(line, '') || chr(10) || coalesce(TRY(decode(payload)), ''))"
    rows = "(SELECT ? AS line, ?::BLOB AS payload)"
    sql = f"SELECT ({MAY_MATCH}) FROM (SELECT *, {text} AS t FROM {rows})"
    row = conn.execute(sql, [line, payload]).fetchone()
    return bool(row and row[0])


@settings(max_examples=300)
@given(st.lists(st.sampled_from(PIECES), max_size=8), st.lists(st.sampled_from(PIECES), max_size=8))
def test_every_row_the_detectors_may_match_is_screened(line: list[str], data: list[str]) -> None:
    conn = CONN
    text, payload = "".join(line), "".join(data).encode()
    if candidates(f"{text}\n{payload.decode()}") or b"\\" in payload:
        assert flagged(conn, text, payload), (text, payload)


def test_plain_rows_stay_in_duckdb() -> None:
    conn = duckdb.connect()
    assert not flagged(conn, "cpu sample 12", b'{"v":12}')
    assert flagged(conn, "cpu sample 12", b'{"card":"4111 1111 1111 1111"}')
