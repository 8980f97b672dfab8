"""The rows a page of ``nerve ui`` reads, as a DuckDB view the privacy rules have screened.

This host's rows are its log (a read snapshot, never the writer's lock); in a fleet, another
host's are the segments it shipped (:mod:`nerve.ui.fleet`). Either way the ``events`` view
holds the rows as they may leave (:mod:`nerve.ui.screened`), so every filter, count and
search of every page sees only what may be shown.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import duckdb
import pyarrow as pa

from nerve.clock import Hlc
from nerve.errors import UsageError
from nerve.events import decode_payload, display_source, trust_name
from nerve.log.codec import EMPTY
from nerve.privacy.screen import ERASED
from nerve.ui import duck, fleet, screened, summary

if TYPE_CHECKING:
    from nerve.api import Workspace
    from nerve.privacy.screen import Screen

__all__ = ["Rows", "after", "as_shown", "connect", "fleet_fields", "hosted", "records", "rows_of"]


@dataclass(frozen=True)
class Rows:
    """What a page reads: this host's log (a read snapshot), or one fleet host's shipped
    segments. ``files``: (name, path, first ns, last ns) each; the tail comes after ``last``."""

    files: list[tuple[str, str, int, int]]
    tail: pa.Table
    last: Hlc | None
    host: str | None = None
    warnings: tuple[str, ...] = ()
    local: bool = True  # this host's whole log


def rows_of(ws: Workspace, host: str = "", since_ns: int | None = None) -> Rows:
    """This host's rows, or ``host``'s in the fleet (this host's own: its log)."""
    if host and not fleet.configured(ws):
        raise UsageError(f"host {host!r}: there is no fleet (no fleet: section)", field="host")
    if host and host != fleet.local_host(ws):
        got = fleet.host_files(ws, host, since_ns)
        files = [(name, path, 0, 2**63 - 1) for name, path in got.files]
        return Rows(files, EMPTY, None, host, tuple(got.warnings), local=False)
    snap = ws.log.snapshot()
    files = [
        (info.name, str(path), info.min_hlc.physical_ns, info.max_hlc.physical_ns)
        for info, path in zip(snap.segments, snap.files, strict=True)
    ]
    last = max((s.max_hlc for s in snap.segments), default=None)
    summary.forget_except({f[0] for f in files})
    return Rows(files, snap.tail, last, host or None)


def connect(ws: Workspace, scr: Screen, rows: Rows | None = None) -> duckdb.DuckDBPyConnection:
    """``events`` over the rows as the rules let them leave: withheld rows left out,
    redacted ones with their redacted text, so every filter sees only what may be shown;
    ``tail_events``, the same over the unsealed tail only."""
    from nerve.query import event_columns

    rows = rows or rows_of(ws)
    pairs = [(name, path) for name, path, _, _ in rows.files]
    over = screened.overlay(pairs, rows.tail, scr, whole=rows.local)
    conn = duck.cursor()
    conn.register("_tail", rows.tail)
    screened.register(conn, over)
    parts = [f"SELECT * FROM {duck.parquet([p for _, p in pairs])}"] if pairs else []
    raw = "(" + " UNION ALL BY NAME ".join([*parts, "SELECT * FROM _tail"]) + ")"
    conn.execute(
        f"CREATE TEMP VIEW events AS SELECT {event_columns()} FROM {screened.source(raw, over)}"
    )
    tail = screened.source("(SELECT * FROM _tail)", over)  # overlay rows of segments: cut
    conn.execute(f"CREATE TEMP VIEW tail_events AS SELECT {event_columns()} FROM {tail} "
                 f"WHERE {after(rows)}")  # fmt: skip
    return conn


def records(conn: duckdb.DuckDBPyConnection, sql: str, args: list[Any]) -> list[dict[str, Any]]:
    cursor = conn.execute(sql, args)
    names = [d[0] for d in cursor.description]
    return [dict(zip(names, r, strict=True)) for r in cursor.fetchall()]


def as_shown(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Event rows with their times and names (the rows of ``events`` are screened already)."""
    from nerve.tail import format_times

    times = format_times([int(r["physical_ns"]) for r in rows])
    return [_one(r, t) for r, t in zip(rows, times, strict=True)]


def _one(row: dict[str, Any], when: str) -> dict[str, Any]:
    erased = bool(row["erased"])
    payload = b"" if erased else bytes(row["payload"] or b"")
    return {
        "id": bytes(row["id"]).hex(),
        "time": when,
        "hlc": f"{row['physical_ns']}.{row['logical']}",
        "source": display_source(int(row["source"])),
        "kind": str(row["kind"]),
        "subject": str(row["subject"]),
        "trust": trust_name(int(row["trust"])),
        "line": ERASED if erased else str(row["line"] or ""),
        "data": None if erased or not payload else decode_payload(payload),
        "erased": erased,
    }


def hosted(shown: list[dict[str, Any]], rows: Rows) -> list[dict[str, Any]]:
    """Events of another fleet host name it (their permalinks read that host's rows)."""
    return [{**e, "host": rows.host} for e in shown] if rows.host is not None else shown


def fleet_fields(ws: Workspace, rows: Rows) -> dict[str, Any]:
    """Which host's rows a page shows, and the fleet's hosts to choose from."""
    if not fleet.configured(ws):
        return {}
    return {"host": rows.host or "", "hosts": fleet.hosts(ws), "warnings": list(rows.warnings)}


def after(rows: Rows) -> str:
    """SQL keeping only the rows after the sealed segments (the unsealed tail)."""
    if not rows.local:
        return "FALSE"  # another host's rows are all in its segments
    if rows.last is None:
        return "TRUE"
    last = rows.last
    p, lo = int(last.physical_ns), int(last.logical)
    return f"physical_ns >= {p} AND (physical_ns > {p} OR logical > {lo})"  # >=: prunes files
