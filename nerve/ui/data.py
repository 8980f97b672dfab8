"""Every read and write ``nerve ui`` makes, over the front door and the calls MCP uses.

Pages call only this module, so what the UI can see and change is in one place. Event reads
go to the log directly (a read snapshot, never the writer's lock); writes (pause, resume,
forget, a sense trigger, a held run's override) and the daemon's answers go through ``nerve.open``'s
:class:`~nerve.api.Workspace` the CLI hands the server, as the CLI's do: the daemon when it runs,
else the log opened as its writer for that one change.

Privacy: every page reads ``events`` as :class:`~nerve.privacy.screen.Screen` lets rows leave
(:mod:`nerve.ui.rows`): drop rules withhold a row, redaction rewrites its line and payload
and keys its id and payload address, an erased payload shows as erased. Searches, filters and
counts run over those rows, so a rule added today hides old text on every page and no search
can tell that hidden text matched. SQL runs in MCP's sandbox (:mod:`nerve.mcp.sandbox`).

A person's own page views are not recorded as events: the UI is served to the log's owner
alone (loopback and the owner-only token), and a record per page view would fill the log
with reads of itself. Agents' reads (``agent.access``) are what the log keeps and shows.
"""

from __future__ import annotations

from datetime import date, datetime, timedelta
from typing import TYPE_CHECKING, Any

import duckdb

from nerve.clock import Hlc
from nerve.errors import UsageError
from nerve.events import bookkeeping_sql, display_source
from nerve.privacy.screen import Screen
from nerve.privacy.settings import PrivacyConfig
from nerve.ui import fleet, summary
from nerve.ui.rows import as_shown, connect, fleet_fields, hosted, records, rows_of
from nerve.ui.select import Filters, Window, where_of, window

if TYPE_CHECKING:
    from nerve.api import Workspace

__all__ = [
    "Filters",
    "Window",
    "access_records",
    "capture",
    "chain_state",
    "context",
    "day",
    "decision",
    "decisions",
    "event",
    "events",
    "forget",
    "health",
    "live_batch",
    "override",
    "pause",
    "redactions",
    "resume",
    "screen",
    "senses",
    "set_categories",
    "sql",
    "timeline",
    "timeline_day",
    "trigger_sense",
    "window",
    "workflows",
]

_COLS = "physical_ns, logical, id, source, kind, subject, trust, line, payload, erased"
MAX_PAGE = 500
MAX_OFFSET = 2**63 - 1  # DuckDB's OFFSET is a signed 64-bit count
SQL_ROWS = 1_000
SQL_BYTES = 8 << 20


# -- connections -----------------------------------------------------------------------------


_PRIVACY: dict[str, tuple[tuple[int, int], PrivacyConfig]] = {}


def screen(ws: Workspace) -> Screen:
    """The privacy rules of nerve.yaml as they are now (read again when the file changes; a
    bad edit keeps the last good rules)."""
    return Screen(_privacy(ws))


def _privacy(ws: Workspace) -> PrivacyConfig:
    from nerve.errors import NerveError

    try:
        stat = ws.settings.path.stat()
    except FileNotFoundError:
        return PrivacyConfig()
    key, mtime = str(ws.root), (stat.st_mtime_ns, stat.st_size)
    known = _PRIVACY.get(key)
    if known is not None and known[0] == mtime:
        return known[1]
    try:
        rules = ws.settings.read().privacy
    except NerveError:
        return known[1] if known is not None else ws.settings.config.privacy
    _PRIVACY[key] = (mtime, rules)
    return rules


# -- the day ---------------------------------------------------------------------------------


def day(
    ws: Workspace, when: str | None = None, span: str = "day", *, now_ns: int | None = None
) -> dict[str, Any]:
    """A day (``when``: ``YYYY-MM-DD``, local; by default the last day with events) or the
    week ending on it, at a glance (:func:`nerve.recall.day.day_of`), over the rows the
    privacy rules let the page see; with the category rules, for the editor."""
    import time

    from nerve.categories import define
    from nerve.recall.day import day_of

    if span not in ("day", "week"):
        raise UsageError(f"span: {span!r} is not day or week", field="span")
    now = now_ns or time.time_ns()
    rules = ws.settings.views().get("categories", [])
    conn = connect(ws, screen(ws), rows_of(ws))
    try:
        define(conn, rules)
        first = _local_day(conn, when, now)
        last = first + timedelta(days=1)
        if span == "week":
            first = last - timedelta(days=7)
        found = day_of(conn, _ns_of(first), _ns_of(last), now, span)
    finally:
        conn.close()
    shown = last - timedelta(days=1)
    return {
        **found.to_json(),
        "day": shown.date().isoformat(),
        "label": _day_label(first, shown, span),
        "earlier": (shown - timedelta(days=1 if span == "day" else 7)).date().isoformat(),
        "later": (shown + timedelta(days=1 if span == "day" else 7)).date().isoformat(),
        "rules": [{"name": n, "app": a, "title": t} for n, a, t in rules],
    }


def _local_day(conn: duckdb.DuckDBPyConnection, when: str | None, now: int) -> datetime:
    """Local midnight of ``when`` (``YYYY-MM-DD``), else of the newest person's event's day
    (today when there is none)."""
    if when:
        try:
            day = date.fromisoformat(when.strip())
        except ValueError:
            shown = repr(when[:24])
            raise UsageError(f"day: {shown} is not a date like 2026-05-06", field="day") from None
        if not 1971 <= day.year <= 9998:
            raise UsageError(f"day: {day.isoformat()} is outside 1971..9998", field="day")
        return datetime(day.year, day.month, day.day).astimezone()
    row = conn.execute(
        f"SELECT max(physical_ns) FROM events WHERE NOT {bookkeeping_sql()} AND physical_ns <= ?",
        [now],
    ).fetchone()
    newest = int(row[0]) if row and row[0] is not None else now
    local = datetime.fromtimestamp(newest / 1e9).astimezone()
    return local.replace(hour=0, minute=0, second=0, microsecond=0)


def _ns_of(moment: datetime) -> int:
    return int(moment.timestamp()) * 10**9


def _day_label(first: datetime, last: datetime, span: str) -> str:
    if span == "week":
        return f"{first:%a %d %b} – {last:%a %d %b %Y}"
    return f"{last:%A %d %B %Y}"


def set_categories(ws: Workspace, rules: list[dict[str, str]]) -> dict[str, Any]:
    """Replace the category rules (nerve.yaml's ``categories:``), recorded as an event."""
    kept = ws.settings.set_categories(rules)
    return {"categories": [r.model_dump() for r in kept]}


# -- timeline --------------------------------------------------------------------------------


def timeline_day(
    ws: Workspace, when: str | None = None, since: str | None = None, until: str | None = None,
    *, now_ns: int | None = None,
) -> dict[str, Any]:  # fmt: skip
    """The timeline page's picture (:mod:`nerve.ui.dayline`) of [since, until) (as the
    events page reads them, cut to the log's span) or else of the day ``when`` (as the Day
    page chooses it) cut to the moments it holds events and widened to round times; with
    its ticks at round times and the log's span (``first``, ``last``: ns, or None)."""
    import time

    from nerve.categories import define
    from nerve.clock import PHYSICAL_MAX
    from nerve.ui.dayline import extent, fitted, picture, rounded, ticks

    now = now_ns or time.time_ns()
    conn = connect(ws, screen(ws), rows_of(ws))
    try:
        define(conn, ws.settings.views().get("categories", []))
        logged = extent(conn, 0, PHYSICAL_MAX)
        if since:
            win = window(since, until, now_ns=now)
            lo, hi = fitted(win.since, win.until, logged)
            at = ticks(lo, hi)
        else:
            first = _local_day(conn, when, now)
            lo, hi = _ns_of(first), _ns_of(first + timedelta(days=1))
            first_ns, last_ns = extent(conn, lo, hi) or (lo, hi - 1)
            lo, hi, step = rounded(first_ns, last_ns + 1)
            at = list(range(lo, hi + 1, step))
        found = picture(conn, lo, hi, now)
    finally:
        conn.close()
    shown = datetime.fromtimestamp(lo / 1e9).astimezone()
    return {
        "since": lo, "until": hi, "ticks": at, "day": shown.date().isoformat(),
        "label": f"{shown:%A %d %B %Y}", "first": logged[0] if logged else None,
        "last": logged[1] if logged else None, **found,
    }  # fmt: skip


def timeline(
    ws: Workspace, win: Window, *, buckets: int = 96, lanes: int = 14, host: str = ""
) -> dict[str, Any]:
    """The window aggregated: a histogram, swimlanes per source and per subject, attention
    decisions, paused intervals and erased counts, and the newest events in view. Sealed
    segments are counted from their summaries (:mod:`nerve.ui.summary`), the tail in DuckDB."""
    scr = screen(ws)
    buckets = max(4, min(buckets, 400))
    width = max(1, -(-(win.until - win.since) // buckets))
    rows = rows_of(ws, host, win.since)
    found = summary.summaries(rows.files, scr, win.since, win.until)
    cells, newest = summary.cells(found, win.since, width, buckets)
    marks = [d for s in found for d in s.decisions if win.since <= d["at"] < win.until]
    conn = connect(ws, scr, rows)
    try:
        where = "physical_ns >= ? AND physical_ns < ?"
        span = [win.since, win.until]
        bucket = f"CAST((physical_ns - {win.since}) // {width} AS BIGINT)"
        for src, sub, b, bk, n, e in conn.execute(
            f"SELECT source, subject, {bucket} b, {bookkeeping_sql()} bk, "
            f"count(*), count(*) FILTER (erased) FROM tail_events WHERE {where} GROUP BY ALL",
            span,
        ).fetchall():  # the unsealed tail
            slot = cells.setdefault((int(src), str(sub), int(b), bool(bk)), [0, 0])
            slot[0], slot[1] = slot[0] + int(n), slot[1] + int(e)
        marks += [
            {"at": int(m.pop("physical_ns")), **m}
            for m in records(
                conn,
                "SELECT physical_ns, data->>'outcome' AS outcome, "
                "(data->>'chain_seq')::BIGINT AS seq FROM tail_events "
                f"WHERE kind = 'attention.decision' AND {where} ORDER BY physical_ns",
                span,
            )
        ]
        pauses = _pauses(conn, win)
        shown = f"NOT {bookkeeping_sql()}"
        newest += [int(r[0]) for r in conn.execute(
            f"SELECT physical_ns FROM tail_events WHERE {where} AND {shown} "
            "ORDER BY physical_ns DESC LIMIT 50", span,
        ).fetchall()]  # fmt: skip
        floor = sorted(newest, reverse=True)[:50][-1:] or [win.until]
        recent = records(
            conn,
            f"SELECT {_COLS} FROM events WHERE physical_ns >= ? AND physical_ns < ? AND {shown} "
            "ORDER BY physical_ns DESC, logical DESC LIMIT 50",
            [max(win.since, floor[0]), win.until],
        )
    finally:
        conn.close()
    counts = [0] * buckets
    erased = [0] * buckets
    for (_, _, b, _), (n, e) in cells.items():
        if 0 <= b < buckets:
            counts[b] += n
            erased[b] += e
    lane_rows = [(src, sub, b, n) for (src, sub, b, bk), (n, _) in cells.items() if not bk]
    return {
        "window": win.to_json(),
        "bucket_ns": width,
        "counts": counts,
        "erased": erased,
        "lanes": _lanes(lane_rows, buckets, lanes),
        "decisions": sorted(marks, key=lambda m: m["at"]),
        "paused": pauses,
        "events": hosted(as_shown(recent), rows),
        **fleet_fields(ws, rows),
    }


def _lanes(rows: list[Any], buckets: int, most: int) -> list[dict[str, Any]]:
    """One lane per source, then one per subject of that source, busiest first."""
    lanes: dict[tuple[str, str], list[int]] = {}
    for source, subject, b, n in rows:
        name = display_source(int(source))
        for key in ((name, ""), (name, str(subject))):
            cells = lanes.setdefault(key, [0] * buckets)
            if 0 <= b < buckets:
                cells[b] += int(n)
    busiest = sorted(lanes.items(), key=lambda kv: (-sum(kv[1]), kv[0]))
    top = {k for k, _ in busiest[:most]} | {k for k in lanes if not k[1]}
    out = [
        {"source": s, "subject": sub, "cells": cells, "total": sum(cells)}
        for (s, sub), cells in sorted(lanes.items())
        if (s, sub) in top
    ]
    return out


def _pauses(conn: duckdb.DuckDBPyConnection, win: Window) -> list[dict[str, int]]:
    from nerve.privacy.pause import PAUSED, RESUMED

    rows = conn.execute(
        "SELECT physical_ns, kind FROM events WHERE kind IN (?, ?) AND physical_ns < ? "
        "ORDER BY physical_ns, logical",
        [PAUSED, RESUMED, win.until],
    ).fetchall()
    spans: list[dict[str, int]] = []
    start: int | None = None
    for at, kind in rows:
        if kind == PAUSED and start is None:
            start = int(at)
        elif kind == RESUMED and start is not None:
            spans.append({"from": start, "to": int(at)})
            start = None
    if start is not None:
        spans.append({"from": start, "to": win.until})
    return [s for s in spans if s["to"] > win.since]


# -- events ----------------------------------------------------------------------------------


def events(
    ws: Workspace, f: Filters, win: Window, *, page: int = 0, size: int = 100
) -> dict[str, Any]:
    """One bounded page of matching events, newest first; a text search matches what may be
    shown (the redacted text), never the hidden text: a search for a redacted secret finds
    what a search for text not in the log finds."""
    size = max(1, min(size, MAX_PAGE))
    if max(0, page) * size > MAX_OFFSET:
        raise UsageError(f"page {page} of {size} starts past the last row there can be",
                         field="page")  # fmt: skip
    scr = screen(ws)
    where, args = where_of(f, win)
    source = rows_of(ws, f.host, win.since)
    conn = connect(ws, scr, source)
    try:
        total, rows = _page(conn, where, args, size, max(0, page) * size)
    finally:
        conn.close()
    shown = hosted(as_shown(rows), source)
    return {
        **fleet_fields(ws, source),
        "window": win.to_json(),
        "page": page,
        "size": size,
        "total": total,
        "more": (page + 1) * size < total,
        "events": shown,
    }


def _page(
    conn: duckdb.DuckDBPyConnection, where: str, args: list[Any], size: int, skip: int
) -> tuple[int, list[dict[str, Any]]]:
    """How many rows match, and one page of them newest first: one filtered scan sorts only
    the stamps, then just the page's rows are read whole."""
    stamps = conn.execute(
        f"SELECT physical_ns, logical, count(*) OVER () FROM events WHERE {where} "
        f"ORDER BY physical_ns DESC, logical DESC LIMIT {size} OFFSET {skip}",
        args,
    ).fetchall()
    if not stamps:
        total = conn.execute(f"SELECT count(*) FROM events WHERE {where}", args).fetchone()
        return int(total[0]) if total else 0, []
    lo, hi = int(stamps[-1][0]), int(stamps[0][0])
    rows = records(
        conn,
        f"SELECT {_COLS} FROM events WHERE physical_ns BETWEEN {lo} AND {hi} "
        "AND list_contains(?::STRUCT(p BIGINT, l BIGINT)[], {'p': physical_ns, 'l': logical}) "
        "ORDER BY physical_ns DESC, logical DESC",
        [[{"p": int(p), "l": int(lg)} for p, lg, _ in stamps]],
    )
    return int(stamps[0][2]), rows


def event(ws: Workspace, event_id: str) -> dict[str, Any]:
    """One event by its id (hex); :class:`UsageError` when there is none."""
    found = context(ws, event_id, around=0)
    return dict(found["event"])


def context(ws: Workspace, event_id: str, *, around: int = 5, host: str = "") -> dict[str, Any]:
    """One event and the ``around`` events just before and after it (bookkeeping hidden)."""
    try:
        raw = bytes.fromhex(event_id)
    except ValueError:
        raise UsageError(f"{event_id!r} is not an event id (hex)", field="id") from None
    scr = screen(ws)
    conn = connect(ws, scr, rows_of(ws, host))
    try:
        hit = records(conn, f"SELECT {_COLS} FROM events WHERE id = ?", [raw])
        if not hit:
            raise UsageError(f"no event {event_id} in this log", field="id")
        p, lo = int(hit[0]["physical_ns"]), int(hit[0]["logical"])
        hide = f"NOT {bookkeeping_sql()}"
        before = records(
            conn,
            f"SELECT {_COLS} FROM events WHERE (physical_ns, logical) < (?, ?) AND {hide} "
            f"ORDER BY physical_ns DESC, logical DESC LIMIT {around}",
            [p, lo],
        )
        after = records(
            conn,
            f"SELECT {_COLS} FROM events WHERE (physical_ns, logical) > (?, ?) AND {hide} "
            f"ORDER BY physical_ns, logical LIMIT {around}",
            [p, lo],
        )
    finally:
        conn.close()
    return {
        "event": as_shown(hit)[0],
        "before": as_shown(before[::-1]),
        "after": as_shown(after),
    }


# -- live ------------------------------------------------------------------------------------


LIVE_BACKLOG_NS = 5 * 60 * 10**9  # a live tail opens on the last five minutes
LIVE_BACKLOG_ROWS = 50  # of which at most the newest fifty


def live_batch(
    ws: Workspace, f: Filters, after: Hlc | None, *, limit: int = 2_000
) -> tuple[list[dict[str, Any]], Hlc | None]:
    """Events stored after ``after`` (all of them, oldest first, at most ``limit``) and the
    new cursor; with no cursor, the tail opens on what the filter keeps of the last five
    minutes before the newest event (the newest fifty of them), and goes on from there."""
    scr = screen(ws)
    conn = connect(ws, scr)
    try:
        where, args = where_of(f, None)
        if after is None:
            row = conn.execute(
                "SELECT physical_ns, logical FROM events ORDER BY physical_ns DESC, logical DESC "
                "LIMIT 1"
            ).fetchone()
            if not row:
                return [], Hlc(0, 0)
            newest = Hlc(int(row[0]), int(row[1]))
            recent = records(
                conn,
                f"SELECT {_COLS} FROM events WHERE ({where}) AND physical_ns >= ? "
                f"ORDER BY physical_ns DESC, logical DESC LIMIT {LIVE_BACKLOG_ROWS}",
                [*args, newest.physical_ns - LIVE_BACKLOG_NS],
            )
            return as_shown(recent[::-1]), newest
        rows = records(
            conn,
            f"SELECT {_COLS}, ({where}) AS wanted FROM events WHERE (physical_ns, logical) > "
            f"(?, ?) ORDER BY physical_ns, logical LIMIT {limit}",
            [*args, after.physical_ns, after.logical],
        )
    finally:
        conn.close()
    if not rows:
        return [], after
    cursor = Hlc(int(rows[-1]["physical_ns"]), int(rows[-1]["logical"]))
    matching = [r for r in rows if r["wanted"]]
    return as_shown(matching), cursor


# -- SQL -------------------------------------------------------------------------------------


def sql(ws: Workspace, text: str, *, timeout_ms: int | None = None) -> dict[str, Any]:
    """One read-only SELECT in MCP's sandbox (the same tool function), privacy applied."""
    from nerve.mcp.budgets import Allowance
    from nerve.mcp.tools import Call, query

    limit = timeout_ms if timeout_ms is not None else ws.settings.config.mcp.query_timeout
    call = Call(ws, screen(ws), Allowance(SQL_ROWS, SQL_BYTES), limit)
    out = query(call, text)
    return {"sql": text, "columns": out.columns, "rows": out.rows, "more": out.more}


# -- attention and audit ---------------------------------------------------------------------


def decisions(ws: Workspace, *, limit: int = 1_000) -> dict[str, Any]:
    """Attention decisions, newest first, with why (MCP's ``highlights``), and the budget
    over time, oldest first."""
    from nerve.mcp.budgets import Allowance
    from nerve.mcp.tools import Call, highlights

    out = highlights(Call(ws, screen(ws), Allowance(limit, SQL_BYTES)), limit=limit)
    rows = [d.model_dump() for d in out.decisions]
    budget = [
        {"hlc": d["hlc"], "budget_after_uj": d["budget_after_uj"]}
        for d in rows[::-1]
        if d["budget_after_uj"] is not None
    ]
    return {"decisions": rows, "more": out.more, "budget": budget}


def decision(ws: Workspace, seq: int) -> dict[str, Any]:
    """One chain link (seq, prev, key, signature), whether the chain verifies through it,
    its decision and why (:func:`~nerve.attention.reason.reason_of`), the observations
    that led to it, and the reading it fired on around its moment (None without one)."""
    from nerve.attention.reason import reason_of
    from nerve.mcp.tools import screened_decision, sources

    scr = screen(ws)
    link = ws.audit.show(seq).to_json()
    found = [d.to_json() for d in ws.audit.decisions() if d.chain_seq == seq]
    named = sources(ws, scr, [d.get("source_event") for d in found])
    if found:  # the page and its JSON show the observation as MCP's highlights do
        raw = found[0].get("source_event")
        found[0] = screened_decision(scr, named, found[0])
        if link.get("event") == raw:  # the link names it too
            link["event"] = found[0]["source_event"]
    if link.get("source_line") is not None:
        link["source_line"] = found[0]["source_line"] if found else scr.text(link["source_line"])
    led: dict[str, Any] | None = None
    source = found[0].get("source_event") if found else None
    if isinstance(source, str):
        try:
            led = context(ws, source, around=5)
        except UsageError:
            led = None
    why = reason_of(found[0]) if found else None
    cause = scr.text(why.cause) if why else None
    drawn = _reading_around(ws, scr, found[0], why.held if why else False) if found else None
    for key, said in (("cause", cause), ("why", why.words() if why else None)):
        if key in link:  # the link's words are the screened decision's, not the stored one's
            link[key] = said if said is not None else scr.text(str(link[key]))
    return {
        "link": link,
        "decision": found[0] if found else None,
        "why": why.words() if why else None,
        "cause": cause,
        "led_to_it": led,
        "reading": drawn,
    }


def _reading_around(
    ws: Workspace, scr: Screen, found: dict[str, Any], held: bool
) -> dict[str, Any] | None:
    """The reading a decision fired on around its moment (:func:`nerve.ui.dayline.around`),
    over the rows the rules let the page see."""
    from nerve.ui.dayline import around

    at = str(found.get("hlc") or "").split(".")[0]
    if not at.isdigit():
        return None
    mark = {**found, "at": int(at), "held": held, "seen": found.get("source_line") or "", "why": ""}
    conn = connect(ws, scr, rows_of(ws))
    try:
        return around(conn, mark)
    finally:
        conn.close()


def chain_state(ws: Workspace) -> dict[str, Any]:
    """The whole chain verified as ``nerve audit verify --no-record`` does: the first break."""
    return dict(ws.audit.verify(record=False).to_json())


# -- senses and workflows --------------------------------------------------------------------


def senses(ws: Workspace) -> dict[str, Any]:
    """Each sense's schedule and last result (from the daemon when it runs, else nerve.yaml),
    and ``shown``: each as the page words it (see :func:`sense_row`)."""
    import time

    running = ws.daemon.status().running
    rows = ws.senses.all()
    now = time.time_ns()
    return {"daemon": running, "senses": rows, "shown": [sense_row(r, running, now) for r in rows]}


def sense_row(s: dict[str, Any], running: bool, now_ns: int) -> dict[str, Any]:
    """One sense as a person reads it: its state (running, unavailable and why, erroring
    with its screened error, or not running), the last reading in words with its age, when
    it last computed and when it computes next (nanosecond times for the page to word)."""
    from nerve.runtime.latest import latest_text

    interval = s.get("interval_ms")
    on = [str(x) for x in s.get("on") or []]
    schedule = []
    if interval:
        schedule.append(f"every {_span_ms(int(interval))}")
    if on:
        schedule.append("on " + ", ".join(on))
    last_ns = s.get("last_ns")
    if not running:
        state = "not running"
    elif s.get("unavailable"):
        state = f"unavailable: {s['unavailable']}"
    elif s.get("last_error"):
        state = f"erroring: {s['last_error']}"
    else:
        state = "running"
    line_ns = s.get("last_line_ns")
    return {
        "name": s.get("name", ""),
        "schedule": " · ".join(schedule) or "when triggered",
        "state": state,
        "latest": latest_text(str(s.get("last_line") or ""), line_ns, "", now_ns)
        if running
        else "",
        "computes": s.get("computes"),
        "errors": s.get("errors"),
        "last_ns": last_ns,
        "next_ns": last_ns + int(interval) * 1_000_000
        if running and interval and last_ns
        else None,
    }


def _span_ms(ms: int) -> str:
    """``500 ms``, ``5 s``, ``10 min``, ``2 h``: an interval as its largest whole unit."""
    for unit, size in (("h", 3_600_000), ("min", 60_000), ("s", 1000)):
        if ms >= size and ms % size == 0:
            return f"{ms // size} {unit}"
    return f"{ms / 1000:g} s" if ms >= 1000 else f"{ms} ms"


def trigger_sense(ws: Workspace, name: str) -> dict[str, Any]:
    """Ask the running daemon to compute ``name`` now (as ``nerve sense trigger``)."""
    ws.sense(name).trigger()
    return {"triggered": name}


def workflows(ws: Workspace) -> dict[str, Any]:
    """Workflow runs, newest first, as ``nerve workflow list --all`` lists them."""
    from nerve.flow.history import list_runs

    conn = ws.new_connection()
    try:
        columns, rows = list_runs(conn, include_all=True, limit=100)
    finally:
        conn.close()
    scr = screen(ws)
    return {"columns": columns, "runs": scr.value([list(r) for r in _jsonable(rows)])}


def override(ws: Workspace, run: str, reason: str, *, confirmed: bool) -> dict[str, Any]:
    """Complete a held run despite its blocking checks, as ``nerve workflow override`` does
    (the same ``workflow.override`` record; ``tty`` says it was confirmed on this page)."""
    if not run:
        raise UsageError("choose the held run to override", field="run")
    if not reason.strip():
        raise UsageError("an override needs a reason", field="reason")
    if not confirmed:
        raise UsageError("tick the confirmation to override the gate", field="confirm")
    return ws.run(run).override_confirmed(reason.strip(), where=OVERRIDE_WHERE).to_json()


OVERRIDE_WHERE = "nerve ui (confirmed on its page)"


def _jsonable(rows: list[Any]) -> list[Any]:
    from nerve.canonical import jsonable

    return [[jsonable(v) for v in r] for r in rows]


# -- privacy and agents ----------------------------------------------------------------------


def pause(ws: Workspace, for_ms: int | None = None) -> dict[str, Any]:
    return {"paused": True, "state": _state_json(ws.privacy.pause(for_ms))}


def resume(ws: Workspace) -> dict[str, Any]:
    return {"resumed": ws.privacy.resume() is not None}


def _state_json(state: Any) -> Any:
    to_json = getattr(state, "to_json", None)
    return to_json() if callable(to_json) else repr(state)


def capture(ws: Workspace) -> dict[str, Any]:
    """Whether capture is paused now, from the log."""
    from nerve.privacy.pause import stored_pause

    conn = ws.new_connection()
    try:
        return dict(_state_json(stored_pause(conn)))
    finally:
        conn.close()


def forget(
    ws: Workspace, *, match: str | None, kinds: list[str], sources: list[str],
    before: str | None, after: str | None, reason: str, dry_run: bool,
) -> dict[str, Any]:  # fmt: skip
    """What a forget would erase (``dry_run``), or erase it, as ``nerve forget`` does."""
    if not (match or kinds or sources or before or after):
        raise UsageError("choose what to forget: text, a kind, a source or a time", field="match")
    result = ws.privacy.forget(
        sources=sources, kinds=kinds, match=match or None, before=before or None,
        after=after or None, reason=reason, dry_run=dry_run,
    )  # fmt: skip
    return result.to_json()


def redactions(ws: Workspace) -> list[dict[str, Any]]:
    """What capture redacted, by rule: events touched and matches replaced (from the
    ``_redacted`` counts each redacted payload keeps; never the text)."""
    import json

    from nerve.privacy.scan import MARKER

    conn = connect(ws, screen(ws))
    try:
        rows = conn.execute(
            f"SELECT CAST(data->'{MARKER}' AS VARCHAR) FROM events "
            f"WHERE (data->'{MARKER}') IS NOT NULL"
        ).fetchall()
    finally:
        conn.close()
    rules: dict[str, list[int]] = {}
    for (text,) in rows:
        counts = json.loads(text) if text else {}
        for rule, n in counts.items() if isinstance(counts, dict) else ():
            slot = rules.setdefault(str(rule), [0, 0])
            slot[0] += 1
            slot[1] += int(n) if isinstance(n, int) else 0
    return [{"rule": r, "events": e, "matches": m} for r, (e, m) in sorted(rules.items())]


def access_records(ws: Workspace) -> dict[str, Any]:
    """Every ``agent.access`` record, newest first."""
    from nerve.mcp.access import COLUMNS, accesses

    return {"columns": COLUMNS, "records": accesses(ws)[::-1]}


# -- health ----------------------------------------------------------------------------------


def health(ws: Workspace, *, verify: bool = False) -> dict[str, Any]:
    """Daemon status, the replay digest (``verify``: every id recomputed), segments, and
    disk per day."""
    from nerve.canonical import jsonable

    status = ws.daemon.status().to_json()
    report = ws.replay(verify=verify)
    snap = ws.log.snapshot()
    return {
        "daemon": jsonable(status),
        "replay": {
            "events": report.events,
            "digest": report.digest,
            "segments": report.segments,
            "verified": verify,
            "ok": not report.problems,
            "problems": [str(p) for p in report.problems],
        },
        "tail_rows": int(snap.tail.num_rows),
        "disk": _disk_per_day(snap),
        **_fleet_health(ws),
    }


def _fleet_health(ws: Workspace) -> dict[str, Any]:
    """Each fleet host's last ship, lag and last verify (none without a fleet); a fleet that
    cannot be read is said on the page, the rest of it still shown."""
    from nerve.errors import NerveError
    from nerve.tail import format_times

    if not fleet.configured(ws):
        return {"fleet": None}
    try:
        rows = fleet.health(ws)
    except (NerveError, OSError) as exc:
        return {"fleet": [], "fleet_error": f"the fleet cannot be read: {exc}"}
    for row in rows:
        shipped = row.get("last_ship_ns")
        row["last_ship"] = format_times([int(shipped)])[0] if shipped else None
        checked = row.get("verify") or {}
        if checked.get("time_ns"):
            checked["at"] = format_times([int(checked["time_ns"])])[0]
    return {"fleet": rows}


def _disk_per_day(snap: Any) -> list[dict[str, Any]]:
    from datetime import datetime

    days: dict[str, dict[str, int]] = {}
    for info, path in zip(snap.segments, snap.files, strict=True):
        day = datetime.fromtimestamp(info.min_hlc.physical_ns / 1e9).astimezone().date()
        slot = days.setdefault(day.isoformat(), {"segments": 0, "rows": 0, "bytes": 0})
        slot["segments"] += 1
        slot["rows"] += info.rows
        slot["bytes"] += path.stat().st_size if path.exists() else 0
    return [{"day": d, **v} for d, v in sorted(days.items())]
