"""What a plan reads from the log: rows of a window as SQL over ``events``, the words that
name them to a person, and the shape of a cited answer (:class:`Found`).

An event's time is its ``valid_time_ns`` when it has one (when the datum was true: a
command's start, a process's start) and its HLC time otherwise; answers and citations both
say that time.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import tzinfo
from typing import Any

import duckdb

from nerve.events import SourceClass, decode_payload
from nerve.query import EVENTS_IN_TIME, time_args
from nerve.recall.plans.memo import by_segment, newest_by_segment
from nerve.recall.plans.window import NS, Window, local, stamp

__all__ = ["WHOLE", "Found", "Reader", "Row", "plain_source"]

_LIMIT = 20_000
_SHOWN = 12
_SOURCE_WORDS = {
    SourceClass.SHELL: "commands",
    SourceClass.PROCESS_TREE: "processes",
    SourceClass.APP_FOCUS: "windows",
    SourceClass.FILE_CHANGE: "file changes",
    SourceClass.NETWORK: "network",
    SourceClass.THERMAL_POWER: "power",
    SourceClass.SYSTEM_LOG: "system log",
}
_TIME = "coalesce(valid_time_ns, physical_ns)"
WHOLE = Window(0, 2**63 - 1, "the whole log")
"""Every time from 1970 on: what a fold over "the whole log" reads."""


@dataclass(frozen=True)
class Row:
    """One event as a plan reads it: id (hex), time, kind, source, subject, line, payload."""

    id: str
    t: int
    kind: str
    source: int
    subject: str
    line: str
    data: dict[str, Any]


def plain_source(row: Row) -> str:
    """The row's source as a person says it: "commands", "processes", "memory" …"""
    if row.kind != "observation":
        return "nerve's own records"
    if row.source == SourceClass.ENDPOINT:
        return {"cpu": "cpu and load"}.get(row.subject, row.subject or "readings")
    return _SOURCE_WORDS.get(SourceClass(row.source), "other") if row.source < 10 else "other"


@dataclass(frozen=True)
class Found:
    """A plan's outcome: its text, the events it cites, whether it answers (False: it says what
    it understood and what is missing) and what it left out."""

    text: str
    spans: tuple[str, ...] = ()
    answered: bool = True
    left_out: int = 0
    final: bool = False  # understood, and the log cannot answer: no looser reading may try


@dataclass
class Reader:
    """Reads rows for a plan over one connection, at ``now_ns`` in zone ``tz``."""

    conn: duckdb.DuckDBPyConnection
    now_ns: int
    tz: tzinfo | None
    hints: list[str] = field(default_factory=list)

    def rows(
        self,
        window: Window | None,
        *,
        source: int | None = None,
        subject: str | None = None,
        kind: str = "observation",
        where: str = "TRUE",
        args: Sequence[Any] = (),
        limit: int = _LIMIT,
    ) -> list[Row]:
        """Rows of ``kind`` (and ``source`` / ``subject``) in ``window``, oldest first (the
        newest ``limit``)."""
        clauses, params = ["kind = ?", "NOT nerve_bookkeeping(kind)", where], [kind, *args]
        if source is not None:
            clauses.append("source = ?")
            params.append(int(source))
        if subject is not None:
            clauses.append("subject = ?")
            params.append(subject)
        rows, params = self.events(window, params)
        sql = (
            f"SELECT id, {_TIME} AS t, kind, source, subject, line, payload, physical_ns, "
            f"logical FROM {rows} WHERE {' AND '.join(clauses)} "
            f"ORDER BY t DESC, physical_ns DESC, logical DESC LIMIT {int(limit)}"
        )
        # the newest of the log are among the newest of the segments (read once each)
        within = None if window is None else (window.start_ns, window.end_ns)
        found = newest_by_segment(self.conn, sql, params, _placed, int(limit), within=within)
        found.sort(key=lambda placed: placed[0], reverse=True)
        return [row for _, row in found[: int(limit)]][::-1]

    @staticmethod
    def events(window: Window | None, args: Sequence[Any] = ()) -> tuple[str, list[Any]]:
        """The rows of ``events`` in ``window`` (None: every row) as SQL to read FROM
        (:data:`~nerve.query.EVENTS_IN_TIME`), and its parameters followed by ``args``."""
        if window is None:
            return "events", list(args)
        return EVENTS_IN_TIME, [*time_args(window.start_ns, window.end_ns), *args]

    def ever(self, source: int, subject: str | None = None, kind: str = "observation") -> bool:
        """Whether the log holds any such row at all."""
        sql, args = "SELECT 1 FROM events WHERE kind = ? AND source = ?", [kind, int(source)]
        if subject is not None:
            sql, args = sql + " AND subject = ?", [*args, subject]
        return self.conn.execute(sql + " LIMIT 1", args).fetchone() is not None

    def span(self) -> tuple[int, int] | None:
        """The first and last time (as answers say it: when the datum was true) of anything the
        log holds of the person's or the daemon's (nerve's bookkeeping aside, and processes'
        start times unless it holds nothing else), or None for an empty log."""
        procs = f"kind = 'observation' AND source = {int(SourceClass.PROCESS_TREE)}"
        other = f"CASE WHEN {procs} THEN NULL ELSE {_TIME} END"
        sql = (  # a process's valid time is its start, maybe long before the log began
            f"SELECT min({other}), max({other}), min({_TIME}), max({_TIME}) FROM events "
            "WHERE NOT nerve_bookkeeping(kind) HAVING count(*) > 0"
        )
        parts = [row for part in by_segment(self.conn, sql) for row in part]  # read once each
        found = tuple(
            pick((r[i] for r in parts if r[i] is not None), default=None)
            for i, pick in enumerate((min, max, min, max))
        )
        first, last = found[:2] if found[0] is not None else found[2:]
        return None if first is None or last is None else (int(first), int(last))

    def paused(self, window: Window) -> bool:
        """Whether capture was paused over part of ``window`` (a ``capture.paused`` record)."""
        sql = (
            "SELECT kind FROM events WHERE kind IN ('capture.paused', 'capture.resumed') "
            "AND physical_ns < ? ORDER BY physical_ns DESC, logical DESC LIMIT 1"
        )
        last = self.conn.execute(sql, [window.end_ns]).fetchone()
        return last is not None and last[0] == "capture.paused"

    def when(self, ns: int) -> str:
        return stamp(ns, self.tz, self.now_ns)

    def iso(self, ns: int) -> str:
        return local(ns, self.tz).isoformat(timespec="seconds")

    def scope(self, window: Window | None) -> str:
        """The window in words with its bounds: "at 07:42 (07:42:00 to 07:43:00)"."""
        if window is None:
            return "in the whole log"
        end = min(window.end_ns, self.now_ns + 1)
        last = max(window.start_ns, end - 1)  # the window's last instant, inside it
        return f"{window.label} ({self.when(window.start_ns)} to {self.when(last)})"

    def tail_hint(self, window: Window | None) -> str:
        """The command that shows every event of the window."""
        if window is None:
            return "`nerve tail` shows all"
        end = min(window.end_ns, self.now_ns + NS)
        return f"`nerve tail --since {self.iso(window.start_ns)} --until {self.iso(end)}` shows all"

    def listing(
        self, title: str, lines: Sequence[tuple[Row, str]], window: Window | None,
        shown: int = _SHOWN,
    ) -> Found:  # fmt: skip
        """A titled list of lines citing their rows; past ``shown``, says what it left out."""
        kept = list(lines[:shown])
        text = title + "".join(f"\n- {line}" for _, line in kept)
        left = len(lines) - len(kept)
        if left:
            text += f"\n… and {left} more; {self.tail_hint(window)}."
        return Found(text, tuple(dict.fromkeys(r.id for r, _ in kept)), True, left)


def _placed(raw: tuple[Any, ...]) -> tuple[tuple[int, int, int], Row]:
    """The row, after where it sorts among the newest: (time, HLC time, logical)."""
    *event, physical, logical = raw
    row = _row(tuple(event))
    return (row.t, int(physical), int(logical)), row


def _row(raw: tuple[Any, ...]) -> Row:
    eid, t, kind, source, subject, line, payload = raw
    data = decode_payload(bytes(payload)) if payload is not None else None
    return Row(
        bytes(eid).hex(),
        int(t),
        str(kind),
        int(source),
        str(subject or ""),
        str(line or ""),
        data if isinstance(data, dict) else {},
    )
