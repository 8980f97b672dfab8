"""Per-segment summaries for the timeline: what it counts, kept as arrays.

A sealed segment never changes (an erasure writes a new file under a new name), so what the
timeline needs of it — each screened row's time, its lane (source, subject, bookkeeping or
not) and whether it is erased, plus its decision and pause records — is read once per
segment and rules and kept in memory; a day over a million events is then a few array
operations, not a scan. The unsealed tail is counted in DuckDB on each request.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np
import pyarrow as pa

from nerve.events import bookkeeping_sql
from nerve.ui import duck, screened

if TYPE_CHECKING:
    from nerve.privacy.screen import Screen

__all__ = ["Summary", "cells", "summaries"]

MAX_ROWS = 8_000_000  # rows summarised in memory at once (about 13 bytes each)


@dataclass(frozen=True)
class Summary:
    """One segment's screened rows in time order: ``ns``, ``lane`` (an index into
    ``lanes``: source, subject, bookkeeping), ``erased``; its decisions and pauses."""

    ns: np.ndarray
    lane: np.ndarray
    erased: np.ndarray
    lanes: list[tuple[int, str, bool]]
    decisions: list[dict[str, Any]]
    pauses: list[tuple[int, int, str]]

    @property
    def rows(self) -> int:
        return int(self.ns.size)


_LOCK = threading.Lock()
_KEPT: OrderedDict[tuple[str, str], Summary] = OrderedDict()


def summaries(
    segments: list[tuple[str, str, int, int]], scr: Screen, since: int, until: int
) -> list[Summary]:
    """The summaries of the segments (name, path, first and last ns) meeting [since, until)."""
    rules = screened.fingerprint(scr)
    wanted = [(n, p) for n, p, lo, hi in segments if hi >= since and lo < until]
    return [_summary(name, path, scr, rules) for name, path in wanted]


def _summary(name: str, path: str, scr: Screen, rules: str) -> Summary:
    key = (name, rules)
    with _LOCK:
        found = _KEPT.get(key)
        if found is not None:
            _KEPT.move_to_end(key)
            return found
    made = _build(path, screened.segment(name, path, scr))
    with _LOCK:
        _KEPT[key] = made
        while len(_KEPT) > 1 and sum(s.rows for s in _KEPT.values()) > MAX_ROWS:
            _KEPT.popitem(last=False)
    return made


def forget_except(names: set[str]) -> None:
    """Drop the summaries of segments no longer in the log (compacted, erased)."""
    with _LOCK:
        for key in [k for k in _KEPT if k[0] not in names]:
            del _KEPT[key]


def _build(path: str, over: screened.Overlay) -> Summary:
    from nerve.privacy.pause import PAUSED, RESUMED

    raw = f"(SELECT * FROM {duck.parquet([path])})"
    conn = duck.cursor()
    try:
        screened.register(conn, over)
        conn.execute(
            "CREATE TEMP TABLE s AS SELECT physical_ns, logical, source::BIGINT AS source, "
            f"subject, kind, {bookkeeping_sql()} AS bk, line IS NULL AS erased, "
            "CASE WHEN kind = 'attention.decision' THEN payload END AS payload "
            f"FROM {screened.source(raw, over)}"
        )
        lanes = conn.execute("SELECT DISTINCT source, subject, bk FROM s ORDER BY ALL").fetchall()
        conn.register("_lanes", pa.table({
            "source": pa.array([r[0] for r in lanes], pa.int64()),
            "subject": pa.array([r[1] for r in lanes], pa.string()),
            "bk": pa.array([r[2] for r in lanes], pa.bool_()),
            "lane": pa.array(range(len(lanes)), pa.int32()),
        }))  # fmt: skip
        table = conn.sql(
            "SELECT s.physical_ns, l.lane, s.erased FROM s JOIN _lanes l "
            "USING (source, subject, bk) ORDER BY s.physical_ns, s.logical"
        ).to_arrow_table()
        marks = conn.execute(
            "SELECT physical_ns, TRY(decode(payload)::JSON)->>'outcome', "
            "TRY((decode(payload)::JSON->>'chain_seq')::BIGINT) FROM s "
            "WHERE kind = 'attention.decision' ORDER BY physical_ns, logical"
        ).fetchall()
        pauses = conn.execute(
            "SELECT physical_ns, logical, kind FROM s WHERE kind IN (?, ?) "
            "ORDER BY physical_ns, logical",
            [PAUSED, RESUMED],
        ).fetchall()
    finally:
        conn.close()
    return Summary(
        table.column("physical_ns").to_numpy(),
        table.column("lane").to_numpy(),
        table.column("erased").to_numpy(zero_copy_only=False),
        [(int(a), str(b), bool(c)) for a, b, c in lanes],
        [{"at": int(p), "outcome": o, "seq": q} for p, o, q in marks],
        [(int(p), int(lg), str(k)) for p, lg, k in pauses],
    )


def cells(
    found: list[Summary], since: int, width: int, buckets: int
) -> tuple[dict[tuple[int, str, int, bool], list[int]], list[int]]:
    """Counts per (source, subject, bucket, bookkeeping) over the window, with the erased
    count of each; and, newest first, the times of the last rows that are not bookkeeping
    (at most 50)."""
    out: dict[tuple[int, str, int, bool], list[int]] = {}
    newest: list[int] = []
    until = since + width * buckets
    for s in found:
        lo, hi = np.searchsorted(s.ns, [since, until])
        if hi <= lo:
            continue
        ns, lane = s.ns[lo:hi], s.lane[lo:hi].astype(np.int64)
        cell = ((ns - since) // width) * len(s.lanes) + lane
        counts = np.bincount(cell, minlength=0)
        erased = np.bincount(cell, weights=s.erased[lo:hi], minlength=counts.size)
        for index in np.flatnonzero(counts):
            b, which = divmod(int(index), len(s.lanes))
            source, subject, bk = s.lanes[which]
            slot = out.setdefault((source, subject, b, bk), [0, 0])
            slot[0] += int(counts[index])
            slot[1] += int(erased[index])
        shown = [i for i, (_, _, bk) in enumerate(s.lanes) if not bk]
        tail = ns[np.isin(lane, shown)][-50:]
        newest.extend(int(t) for t in tail)
    return out, sorted(newest, reverse=True)[:50]
