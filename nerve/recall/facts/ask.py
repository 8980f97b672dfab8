"""A question over a period, as every intent reads it: its rows, its times and the shape
of an answer (a titled list citing the events it used)."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, tzinfo
from typing import Any

import duckdb

from nerve.events import decode_payload
from nerve.query import EVENTS_IN_TIME, time_args
from nerve.recall.tier0 import Tier0Answer
from nerve.tail.when import Period

__all__ = ["Ask", "Row", "answer", "any_of", "never", "nothing", "stands"]


_MAX_ROWS = 50_000
_LIST_MAX = 8


@dataclass(frozen=True)
class Row:
    id: str
    t: int
    subject: str
    line: str
    data: dict[str, Any]


@dataclass(frozen=True)
class Ask:
    """A question with its period (None: the whole log) and what renders need."""

    conn: duckdb.DuckDBPyConnection
    text: str
    period: Period | None
    now_ns: int
    tz: tzinfo | None

    def rows(
        self, source: int, subject: str | None = None, period: Period | None = None
    ) -> list[Row]:
        """Observations of ``source`` in the period, oldest first (the newest ``_MAX_ROWS``)."""
        span = period if period is not None else self.period
        where = ["kind = 'observation'", "source = ?"]
        args: list[Any]
        rows, args = "events", [int(source)]
        if span is not None:  # times in [start, end], read as EVENTS_IN_TIME reads them
            rows, args = EVENTS_IN_TIME, [*time_args(span.start_ns, span.end_ns + 1), *args]
        if subject is not None:
            where.append("subject = ?")
            args.append(subject)
        sql = (
            "SELECT id, coalesce(valid_time_ns, physical_ns) AS t, subject, line, payload "
            f"FROM {rows} WHERE {' AND '.join(where)} ORDER BY t DESC, logical DESC "
            f"LIMIT {_MAX_ROWS}"
        )
        out = [_row(r) for r in self.conn.execute(sql, args).fetchall()]
        return out[::-1]

    def ever(self, source: int, subject: str | None = None) -> bool:
        sql = "SELECT 1 FROM events WHERE kind = 'observation' AND source = ?"
        args: list[Any] = [int(source)]
        if subject is not None:
            sql, args = sql + " AND subject = ?", [*args, subject]
        return self.conn.execute(sql + " LIMIT 1", args).fetchone() is not None

    def when(self, ns: int) -> str:
        moment = _local(ns, self.tz)
        if moment.date() == _local(self.now_ns, self.tz).date():
            return moment.strftime("%H:%M:%S")
        return moment.strftime("%Y-%m-%d %H:%M")

    def scope(self) -> str:
        if self.period is None:
            return "in the whole log"
        if self.period.point:
            return f"at {self.when(self.period.start_ns)}"
        return (
            f"{_label(self.period.label)} ({self.when(self.period.start_ns)} to "
            f"{self.when(self.period.end_ns)})"
        )


def _label(label: str) -> str:
    return (
        label
        if label.startswith(("since", "before", "after", "until", "between"))
        else (f"in {label}" if label.startswith("the ") else label)
    )


def _local(ns: int, tz: tzinfo | None) -> datetime:
    moment = datetime.fromtimestamp(ns / 10**9, tz)
    return moment if tz is not None else moment.astimezone()


def _row(raw: tuple[Any, ...]) -> Row:
    eid, t, subject, line, payload = raw
    data = decode_payload(bytes(payload)) if payload is not None else None
    return Row(
        bytes(eid).hex(),
        int(t),
        str(subject),
        str(line or ""),
        data if isinstance(data, dict) else {},
    )


def _listing(title: str, lines: list[str]) -> str:
    return title + "\n" + "\n".join(f"- {line}" for line in lines)


def never(intent: str, what: str) -> Tier0Answer:
    return Tier0Answer(intent, f"Nothing in this log records {what}.", ())


def nothing(ask: Ask, intent: str, what: str) -> Tier0Answer:
    return Tier0Answer(intent, f"No {what} {ask.scope()}.", ())


def answer(
    intent: str, title: str, used: list[tuple[Row, str]], last: tuple[Row, str] | None = None
) -> Tier0Answer:
    """A listing: the title, the first ``_LIST_MAX`` items and how many more there are, then
    ``last`` (a line about all of them, such as a count of the rest) whatever the cut."""
    shown = used[:_LIST_MAX]
    more = f" ({len(used) - len(shown)} more not shown)" if len(used) > len(shown) else ""
    shown += [last] if last is not None else []
    text = _listing(title + more, [line for _, line in shown])
    return Tier0Answer(intent, text, tuple(dict.fromkeys(r.id for r, _ in shown)))


_STANDS_MAX_NS = 300 * 10**9  # the sense sends a busy top at least every top_every_s


def stands(ask: Ask, rows: list[Row]) -> list[int]:
    """How long each top sample stands for, in ns: until the next one (the sense sends a top
    when it changed), at most ``_STANDS_MAX_NS``; the last until the period's end or now."""
    end = min(ask.period.end_ns, ask.now_ns) if ask.period is not None else ask.now_ns
    nexts = [r.t for r in rows[1:]] + [max(end, rows[-1].t)]
    return [max(1, min(n - r.t, _STANDS_MAX_NS)) for r, n in zip(rows, nexts, strict=True)]


def any_of(*phrases: str) -> str:
    """A regex matching any of the phrases as whole words."""
    return r"\b(" + "|".join(phrases) + r")\b"
