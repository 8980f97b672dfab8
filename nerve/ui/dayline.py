"""The timeline page's picture of a span of the day: what was in focus (app and window title)
with time away apart, the commands run (failed ones marked), and the machine's readings (CPU
busy, memory used) with what the attention gate surfaced and held on them.

Everything is read over a connection whose ``events`` are the rows the privacy rules let the
page see (:func:`nerve.ui.rows.connect`), with ``focus_spells`` defined over them
(:func:`nerve.categories.define`), so what a rule withholds is never drawn.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

import duckdb
from markupsafe import Markup, escape

from nerve.events import bookkeeping_sql
from nerve.recall.day import commands_in, decisions_in
from nerve.ui.clock import clock, duration

__all__ = [
    "READINGS", "STEPS_MIN", "around", "bars", "drawn", "edges", "extent", "fitted", "moves",
    "picture", "rounded", "ticks",
]  # fmt: skip

MIN_NS = 60 * 10**9
# tick steps in minutes; a window is widened to whole steps so its ticks fall on round times
STEPS_MIN = (1, 2, 5, 10, 15, 30, 60, 120, 180, 360, 720, 1440)
MAX_TICKS = 8
# the lines drawn: (the line's key, the sense's subject, reading, what the page calls it,
# divisor, unit); a line's label gives its peak, or its lowest for a reading that warns low
READINGS = (
    ("cpu", "cpu", "busy_permille", "CPU busy", 10, "%"),
    ("memory", "memory", "used_mib", "memory used", 1, "MiB"),
    ("load", "cpu", "load1_centi", "load (1 min)", 100, ""),
    ("disk", "disk", "free_mib:/", "free disk /", 1024, "GiB"),
    ("down", "network", "down_kib_per_s", "network down", 1, "KiB/s"),
    ("up", "network", "up_kib_per_s", "network up", 1, "KiB/s"),
)
LOW_KEYS = frozenset({"disk"})
# which line a decision's probe is marked on (the probe's name, else its part before the dot)
_ON_LINE = {
    "cpu": "cpu",
    "cpu.load1_centi": "load",
    "memory": "memory",
    "disk": "disk",
    "network.down_kib_per_s": "down",
    "network.up_kib_per_s": "up",
    "processes.top_cpu_permille": "cpu",
    "processes.top_rss_bytes": "memory",
}


def extent(conn: duckdb.DuckDBPyConnection, since: int, until: int) -> tuple[int, int] | None:
    """The first and last moment of the person's events in [since, until), if any."""
    row = conn.execute(
        f"SELECT min(physical_ns), max(physical_ns) FROM events WHERE NOT {bookkeeping_sql()} "
        "AND physical_ns >= ? AND physical_ns < ?",
        [since, until],
    ).fetchone()
    if not row or row[0] is None:
        return None
    return int(row[0]), int(row[1])


def _step(since: int, until: int) -> int:
    """The tick step (ns) for [since, until): the smallest giving at most ``MAX_TICKS``."""
    span = max(until - since, MIN_NS)
    return next((s for s in STEPS_MIN if span <= s * MIN_NS * MAX_TICKS), STEPS_MIN[-1]) * MIN_NS


def _shift(ns: int) -> int:
    """Local time's offset from UTC at ``ns``, in ns (so steps fall on local round times)."""
    offset = datetime.fromtimestamp(ns / 1e9).astimezone().utcoffset()
    return int(offset.total_seconds()) * 10**9 if offset else 0


def rounded(since: int, until: int) -> tuple[int, int, int]:
    """[since, until) widened to whole tick steps (local time), and the step in ns."""
    step_ns, shift = _step(since, until), _shift(since)
    lo = (since + shift) // step_ns * step_ns - shift
    hi = -(-(until + shift) // step_ns) * step_ns - shift
    return lo, max(hi, lo + step_ns), step_ns


def ticks(since: int, until: int) -> list[int]:
    """The round local times in [since, until], a step apart (at most ``MAX_TICKS`` + 1)."""
    step_ns, shift = _step(since, until), _shift(since)
    first = -(-(since + shift) // step_ns) * step_ns - shift
    return list(range(first, until + 1, step_ns))


def edges(logged: tuple[int, int]) -> tuple[int, int]:
    """The log's span (its first and last event) to whole seconds, as a window bounded by it
    is written in the timeline's address: [first second, the second after the last)."""
    second = 10**9
    return logged[0] // second * second, (logged[1] // second + 1) * second


def fitted(since: int, until: int, logged: tuple[int, int] | None) -> tuple[int, int]:
    """A window asked for, cut to the log's span ``logged`` (its first and last event, to
    whole seconds) when it meets it, and at least a minute wide (widened about its middle)."""
    if logged and since <= logged[1] and until > logged[0]:
        lo, hi = edges(logged)
        since, until = max(since, lo), min(until, hi)
    if until - since < MIN_NS:
        mid = (since + until) // 2
        since, until = mid - MIN_NS // 2, mid + MIN_NS // 2
    return since, until


def moves(
    since: int, until: int, logged: tuple[int, int] | None
) -> dict[str, tuple[int, int] | None]:
    """The windows the timeline's buttons go to: ``earlier`` and ``later`` (the same span,
    moved), ``zoom_in`` (half of it about its middle) and ``zoom_out`` (twice it), none
    reaching past the log's span ``logged``; a move with nowhere to go is None."""
    span, mid = until - since, (since + until) // 2
    lo, hi = edges(logged) if logged else (since, until)

    def within(start: int, width: int) -> tuple[int, int]:
        width = min(width, hi - lo)
        start = min(max(start, lo), hi - width)
        return start, start + width

    return {
        "earlier": within(since - span, span) if since > lo else None,
        "later": within(until, span) if until < hi else None,
        "zoom_in": (mid - span // 4, mid + span // 4) if span >= 2 * MIN_NS else None,
        "zoom_out": within(mid - span, 2 * span) if since > lo or until < hi else None,
    }


def picture(conn: duckdb.DuckDBPyConnection, since: int, until: int, now: int) -> dict[str, Any]:
    """The spells, commands, readings and decisions of [since, until), times in ns."""
    return {
        "spells": _spells(conn, since, until, now),
        "commands": commands_in(conn, since, until),
        "readings": [_line(conn, since, until, *r) for r in READINGS],
        "decisions": [_marked(d) for d in decisions_in(conn, since, until)[::-1]],
    }


def _spells(
    conn: duckdb.DuckDBPyConnection, since: int, until: int, now: int
) -> list[dict[str, Any]]:
    """Each focus spell meeting the window, cut to it (a spell still lasting ends at now)."""
    rows = conn.execute(
        "SELECT greatest(start_ns, $since), least(coalesce(end_ns, $now), $until), afk, app, "
        "title, category FROM focus_spells WHERE start_ns < $until "
        "AND coalesce(end_ns, $now) > $since ORDER BY start_ns",
        {"since": since, "until": until, "now": now},
    ).fetchall()
    return [
        {"start": int(a), "end": int(b), "afk": bool(k), "app": p or "", "title": t or "",
         "category": c or ""}
        for a, b, k, p, t, c in rows if b > a
    ]  # fmt: skip


def _line(
    conn: duckdb.DuckDBPyConnection, since: int, until: int,
    key: str, subject: str, reading: str, name: str, divisor: int, unit: str,
) -> dict[str, Any]:  # fmt: skip
    """One reading of a sense's observations (``subject``) over the window: its points (ns,
    value in its unit) oldest first."""
    rows = conn.execute(
        "SELECT coalesce(valid_time_ns, physical_ns) AS t, "
        "TRY_CAST(data->'readings'->>? AS DOUBLE) AS v FROM events "
        "WHERE kind = 'observation' AND subject = ? AND v IS NOT NULL "
        "AND t >= ? AND t < ? ORDER BY t",
        [reading, subject, since, until],
    ).fetchall()
    points = [(int(t), round(float(v) / divisor, 1)) for t, v in rows]
    return {"key": key, "reading": reading, "name": name, "unit": unit, "points": points}


def _marked(decision: dict[str, Any]) -> dict[str, Any]:
    """A decision with the line it is marked on (``""``: none of the lines drawn)."""
    probe = str(decision.get("probe") or "").removeprefix("value:")
    line = _ON_LINE.get(probe, _ON_LINE.get(probe.split(".")[0], ""))
    return {**decision, "probe": probe, "line": line}


LINE_H = 60  # a reading's strip, in the picture's units (its width is 1000)
PALETTE = 8  # app colours (classes c0..c7 in the stylesheet)
SHADES = 3  # shades of an app's colour for its window titles (classes t0..t2)
# time away shades every strip behind it when it is at least this wide (0.1% of the span, a
# pixel or so): the away lane itself draws every spell
BAND_MIN_W = 1.0
TOP_TITLES = 20  # the window titles listed under the picture, longest in focus first


def drawn(found: dict[str, Any]) -> dict[str, Any]:
    """Where each thing of :func:`picture`'s answer falls across the picture (x in 0..1000,
    widths at least a sliver), for the page's SVG strips."""
    since, until = int(found["since"]), int(found["until"])
    span = max(1, until - since)

    def x(ns: int) -> float:
        return round(max(0.0, min(1000.0, (ns - since) * 1000 / span)), 2)

    def bar(start: int, end: int) -> dict[str, Any]:
        return {"x": x(start), "w": max(round(x(end) - x(start), 2), 0.6), "start": start,
                "end": end, "ns": end - start}  # fmt: skip

    spells = found["spells"]
    colours: dict[str, str] = {}
    for s in spells:
        if not s["afk"] and s["app"] not in colours:
            colours[s["app"]] = f"c{len(colours) % PALETTE}"
    titles: dict[tuple[str, str], int] = {}
    for s in spells:  # each app's titles in shades of its colour, in order of first focus
        if not s["afk"]:
            titles.setdefault((s["app"], s["title"]), sum(a == s["app"] for a, _ in titles))
    windows = [
        {**bar(s["start"], s["end"]), **s,
         "cls": f'{colours[s["app"]]} t{titles[(s["app"], s["title"])] % SHADES}'}
        for s in spells if not s["afk"]
    ]  # fmt: skip
    away = [bar(s["start"], s["end"]) for s in spells if s["afk"]]
    return {
        "apps": _runs(windows),
        "windows": windows,
        "away": away,
        "band": [a for a in away if a["w"] >= BAND_MIN_W],
        "commands": [
            {**c, "x": x(c["at"]), "failed": c["exit"] not in (0, None)} for c in found["commands"]
        ],
        "lines": [_plot(r, found["decisions"], x) for r in found["readings"]],
        "marks": [{**d, "x": x(d["at"])} for d in found["decisions"] if not d["line"]],
        "colours": colours,
        "titles": _by_title(windows),
    }


def _by_title(windows: list[dict[str, Any]]) -> dict[str, Any]:
    """Time in focus per (app, window title) over the picture, longest first: the first
    ``TOP_TITLES``, how many more there are and the time they add up to."""
    total: dict[tuple[str, str], list[int]] = {}
    for w in windows:
        seen = total.setdefault((w["app"], w["title"] or ""), [0, 0, w["start"], w["cls"]])
        seen[0] += w["ns"]
        seen[1] += 1
    ranked = sorted(total.items(), key=lambda kv: (-kv[1][0], kv[1][2], kv[0]))
    rows = [
        {"app": app, "title": title, "ns": ns, "spells": n, "first": first, "cls": cls}
        for (app, title), (ns, n, first, cls) in ranked
    ]
    rest = rows[TOP_TITLES:]
    return {"top": rows[:TOP_TITLES], "more": len(rest), "more_ns": sum(r["ns"] for r in rest)}


def _runs(windows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Back-to-back windows of one app as one bar."""
    out: list[dict[str, Any]] = []
    for w in windows:
        last = out[-1] if out else None
        if last and last["app"] == w["app"] and last["end"] == w["start"]:
            last.update(end=w["end"], ns=w["end"] - last["start"])
            last["w"] = round(w["x"] + w["w"] - last["x"], 2)
        else:
            out.append({k: w[k] for k in ("x", "w", "start", "end", "ns", "app")})
            out[-1]["cls"] = w["cls"].split()[0]
    return out


def _plot(reading: dict[str, Any], decisions: list[dict[str, Any]], x: Any) -> dict[str, Any]:
    """A reading's polyline (its scale from 0 to its peak) and the decisions marked on it,
    each at the reading's value just before it."""
    points = reading["points"]
    top = 110.0 if reading["unit"] == "%" else max([v for _, v in points] or [1.0]) * 1.1
    top = max(top, 1.0)

    def y(v: float) -> float:
        return round(LINE_H - LINE_H * v / top, 2)

    marks = []
    for d in decisions:
        if d["line"] != reading["key"]:
            continue
        before = [v for t, v in points if t <= d["at"]] or [v for _, v in points[:1]]
        value = before[-1] if before else 0.0
        marks.append({**d, "x": x(d["at"]), "y": y(value), "value": value})
    low = reading["key"] in LOW_KEYS
    pick = min if low else max
    peak = pick(points, key=lambda p: p[1], default=None)
    return {
        **{k: reading[k] for k in ("key", "name", "unit")},
        "polyline": " ".join(f"{x(t)},{y(v)}" for t, v in points),
        "marks": marks,
        "peak": {"at": peak[0], "value": peak[1], "word": "lowest" if low else "peak"}
        if peak
        else None,
        "count": len(points),
    }


AROUND_NS = 5 * MIN_NS  # the decision page draws its reading this long either side
# a reading's name ending -> (divisor, unit) for the decision page's line
_UNITS = (("_permille", 10, "%"), ("_centi", 100, ""), ("_mib", 1, "MiB"),
          ("_bytes", 1 << 20, "MiB"), ("_kib_per_s", 1, "KiB/s"), ("_ms", 1, "ms"))  # fmt: skip


def around(conn: duckdb.DuckDBPyConnection, decision: dict[str, Any]) -> dict[str, Any] | None:
    """The reading a decision's probe fired on (``value:cpu.busy_permille``: the cpu sense's
    ``busy_permille``) over the minutes around it, drawn with the moment marked; None when
    the probe names no reading or none was kept."""
    name = str(decision.get("probe") or "").removeprefix("value:")
    subject, _, reading = name.partition(".")
    at = int(decision["at"])
    if not reading:
        return None
    since, until, step = rounded(at - AROUND_NS, at + AROUND_NS)
    divisor, unit = next(((d, u) for end, d, u in _UNITS if reading.endswith(end)), (1, ""))
    line = _line(conn, since, until, subject, subject, reading, name, divisor, unit)
    if not line["points"]:
        return None
    span = max(1, until - since)

    def x(ns: int) -> float:
        return round(max(0.0, min(1000.0, (ns - since) * 1000 / span)), 2)

    return {
        "since": since,
        "until": until,
        "ticks": [{"at": t, "x": x(t)} for t in range(since, until + 1, step)],
        "line": _plot(line, [{**decision, "line": subject}], x),
    }


def bars(kind: str, items: list[dict[str, Any]]) -> Markup:
    """The SVG marks of one bar lane (``apps``, ``windows`` or ``away``), each with its
    tooltip: written here rather than in the template, since a day can hold thousands and
    the page is drawn on every request (text escaped as the template would)."""
    out = []
    for b in items:
        when = f"{clock(b['start'])}–{clock(b['end'])} · {duration(b['ns'])}"
        if kind == "away":
            out.append(
                f'<rect class="afk" x="{b["x"]}" width="{b["w"]}" y="1" height="10">'
                f"<title>away (no input) · {when}</title></rect>"
            )
            continue
        name = escape(b["app"]) if kind == "apps" else escape(f"{b['app']}: {b['title']}")
        rect = (
            f'<rect class="bar {escape(b["cls"])}" x="{b["x"]}" width="{b["w"]}" y="2" '
            f'height="16"><title>{name} · {when}</title></rect>'
        )
        if kind == "windows":
            rect = f'<a href="/events?since={b["start"]}&amp;until={b["end"]}">{rect}</a>'
        out.append(rect)
    return Markup("".join(out))
