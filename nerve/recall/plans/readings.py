"""Plans about a sense reading (load, cpu, memory, swap, free disk, disk writes and reads, network,
energy): its average, peak (and the sense's own line then), lowest, when it peaked, its
latest value over the window, and when it turned: the last time it fell below (or rose
above) the middle of its range.

A reading stands until the next (the senses send one when it moved, or a keyframe is due),
at most five minutes, so the average weighs each by how long it stood.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from itertools import pairwise
from typing import Any

from nerve.events import SourceClass
from nerve.recall.plans.log import WHOLE, Found, Reader, Row
from nerve.recall.plans.memo import by_segment
from nerve.recall.plans.parse import Plan
from nerve.recall.plans.things import top_process
from nerve.recall.plans.window import NS, Window

__all__ = ["reading"]

_STANDS_MAX = 300 * NS
_GIB = 1024**3
_MIB = 1024**2


def _number(key: str, scale: float = 1.0) -> Callable[[Row], float | None]:
    def read(row: Row) -> float | None:
        value = row.data.get(key)
        ok = isinstance(value, int | float) and not isinstance(value, bool)
        return float(value) * scale if ok else None  # type: ignore[arg-type]

    return read


def _network(row: Row) -> float | None:
    down, up = row.data.get("bytes_recv_per_s"), row.data.get("bytes_sent_per_s")
    if row.data.get("nic") != "all" or not isinstance(down, int | float):
        return None
    return (float(down) + float(up if isinstance(up, int | float) else 0)) / 1024


@dataclass(frozen=True)
class _Kind:
    """Where a reading lives and how to say it."""

    words: str
    source: int
    subject: str | None
    value: Callable[[Row], float | None]
    unit: str
    digits: int = 1
    sql: str = "NULL"  # the same value as a DuckDB expression over ``data``


def _field(key: str, scale: str = "") -> str:
    return f"TRY_CAST(json_extract(data, '$.{key}') AS DOUBLE){scale}"


_NET_SQL = (
    "CASE WHEN json_extract_string(data, '$.nic') = 'all' THEN (" + _field("bytes_recv_per_s")
    + " + coalesce(" + _field("bytes_sent_per_s") + ", 0)) / 1024 END"
)  # fmt: skip
_KINDS = {
    "cpu": _Kind("CPU use", SourceClass.ENDPOINT, "cpu", _number("percent"), "%", 1,
                 _field("percent")),
    "load": _Kind("Load average (1 min)", SourceClass.ENDPOINT, "cpu", _number("load1"), "", 2,
                  _field("load1")),
    "load5": _Kind("Load average (5 min)", SourceClass.ENDPOINT, "cpu", _number("load5"), "", 2,
                   _field("load5")),
    "load15": _Kind("Load average (15 min)", SourceClass.ENDPOINT, "cpu", _number("load15"), "",
                    2, _field("load15")),
    "memory": _Kind("Memory use", SourceClass.ENDPOINT, "memory", _number("percent"), "%", 1,
                    _field("percent")),
    "swap": _Kind("Swap used", SourceClass.ENDPOINT, "memory",
                  _number("swap_used_bytes", 1 / _MIB), " MiB", 0,
                  _field("swap_used_bytes", f" / {_MIB}")),
    "disk": _Kind("Free disk", SourceClass.ENDPOINT, "disk", _number("free_bytes", 1 / _GIB),
                  " GiB", 1, _field("free_bytes", f" / {_GIB}")),
    "network": _Kind("Network traffic (down + up)", SourceClass.NETWORK, None, _network,
                     " KiB/s", 1, _NET_SQL),
    "writes": _Kind("Disk writes", SourceClass.ENDPOINT, "disk",
                    _number("write_bytes_per_s", 1 / _MIB), " MiB/s", 2,
                    _field("write_bytes_per_s", f" / {_MIB}")),
    "reads": _Kind("Disk reads", SourceClass.ENDPOINT, "disk",
                   _number("read_bytes_per_s", 1 / _MIB), " MiB/s", 2,
                   _field("read_bytes_per_s", f" / {_MIB}")),
    "energy": _Kind("Energy per reading", SourceClass.THERMAL_POWER, None,
                    _number("estimated_uj", 1e-6), " J", 1, _field("estimated_uj", " / 1e6")),
}  # fmt: skip
_T = "coalesce(valid_time_ns, physical_ns)"


@dataclass(frozen=True)
class _Fold:
    """A reading over a window, folded in DuckDB: how many, the time-weighted mean and the
    plain mean of the readings, the peak (value, id, time), the latest (value, id) and the
    lowest (value, id, time)."""

    n: int
    mean: float
    plain: float
    peak: tuple[float, str, int]
    last: tuple[float, str]
    low: tuple[float, str, int]


def _fold(reader: Reader, kind: _Kind, window: Window | None, end: int) -> _Fold | None:
    """Each reading stands until the next (at most five minutes), the last until ``end``.
    Folded per sealed segment (:mod:`.memo`: a segment's part is read once) when the parts'
    times follow each other, else over the window at once."""
    subject = "" if kind.subject is None else "AND subject = ?"
    events, args = reader.events(
        window or WHOLE, [int(kind.source), *([kind.subject] if kind.subject else [])]
    )
    rows = f"""
        WITH r AS (
            SELECT id, {_T} AS t, {kind.sql} AS v FROM {events}
            WHERE kind = 'observation' AND source = ? {subject}
        )"""
    part_sql = f"""{rows}, n AS (  -- the part's last reading stands until the next part's first
            SELECT id, t, v, CASE WHEN nt IS NOT NULL THEN greatest(1, least(nt - t,
                {_STANDS_MAX})) END AS w
            FROM (SELECT id, t, v, lead(t) OVER (ORDER BY t, id) AS nt FROM r WHERE v IS NOT NULL)
        )
        SELECT count(*), sum(v * w), sum(w), sum(v), max(v), arg_max(id, (v, -t)),
            arg_max(t, (v, -t)), min(v), arg_min(id, (v, t)), arg_min(t, (v, t)), min(t),
            arg_min(id, (t, id)), max(t), arg_max(id, (t, id)), arg_max(v, (t, id))
        FROM n HAVING count(*) > 0
    """
    span = window or WHOLE
    within = (span.start_ns, span.end_ns)
    parts = [p for part in by_segment(reader.conn, part_sql, args, within=within) for p in part]
    parts.sort(key=lambda p: (p[10], bytes(p[11])))
    if all((a[12], bytes(a[13])) < (b[10], bytes(b[11])) for a, b in pairwise(parts)):
        return _merged(parts, end)
    sql = f"""{rows}, w AS (
            SELECT id, t, v, greatest(1, least(coalesce(lead(t) OVER (ORDER BY t, id),
                greatest(?, t)) - t, {_STANDS_MAX})) AS w FROM r WHERE v IS NOT NULL
        )
        SELECT count(*), sum(v * w) / sum(w), avg(v), max(v), arg_max(id, (v, -t)),
            arg_max(t, (v, -t)), arg_max(v, (t, id)), arg_max(id, (t, id)), min(v),
            arg_min(id, (v, t)), arg_min(t, (v, t)) FROM w
    """
    row = reader.conn.execute(sql, [*args, end]).fetchone()
    if row is None or not row[0]:
        return None
    n, mean, plain, peak, peak_id, peak_t, last, last_id, low, low_id, low_t = row
    return _Fold(int(n), float(mean), float(plain),
                 (float(peak), bytes(peak_id).hex(), int(peak_t)),
                 (float(last), bytes(last_id).hex()),
                 (float(low), bytes(low_id).hex(), int(low_t)))  # fmt: skip


def _merged(parts: list[tuple[Any, ...]], end: int) -> _Fold | None:
    """The fold of parts in time order (none overlapping the next): each part's last
    reading stands until the next part's first, the last part's until ``end``."""
    if not parts:
        return None
    n = w = 0
    vw = total = 0.0
    for i, part in enumerate(parts):
        last_t, last_v = int(part[12]), float(part[14])
        until = int(parts[i + 1][10]) if i + 1 < len(parts) else max(end, last_t)
        stands = max(1, min(until - last_t, _STANDS_MAX))
        n, total = n + int(part[0]), total + float(part[3])
        vw += float(part[1] or 0.0) + last_v * stands
        w += int(part[2] or 0) + stands
    peak = max(parts, key=lambda p: (p[4], -p[6]))
    low = min(parts, key=lambda p: (p[7], p[9]))
    return _Fold(int(n), vw / w, total / n,
                 (float(peak[4]), bytes(peak[5]).hex(), int(peak[6])),
                 (float(parts[-1][14]), bytes(parts[-1][13]).hex()),
                 (float(low[7]), bytes(low[8]).hex(), int(low[9])))  # fmt: skip


def _say(kind: _Kind, value: float) -> str:
    return f"{value:.{kind.digits}f}{kind.unit}"


def _folded(fold: _Fold) -> list[tuple[str, float]]:
    """A fold's values, each with the words that say which it is."""
    return [(" on average by time", fold.mean), (" over the readings", fold.plain),
            (" at the peak", fold.peak[0]), (" at the lowest", fold.low[0]),
            (" at the latest", fold.last[0])]  # fmt: skip


def _amounts(name: str, rows: list[Row], said: list[tuple[str, float]]) -> str:
    """Memory's shares also as amounts, since "how much memory was used" asks for one (" Used:
    2.3 GiB at the peak, …"), from the whole its newest reading holds; the disk's free space
    with the disk's size ("how big is the disk?"); "" for other readings."""
    whole = rows[-1].data.get("total_bytes") if name in ("memory", "disk") and rows else None
    if not isinstance(whole, int | float) or isinstance(whole, bool) or whole <= 0:
        return ""
    if name == "disk":
        return f" The disk holds {whole / _GIB:.0f} GiB in all ({int(whole)} bytes)."
    parts = [f"{share / 100 * whole / _GIB:.1f} GiB{at}" for at, share in said]
    return f" Used: {', '.join(parts)}."


def reading(reader: Reader, plan: Plan) -> Found:
    """The reading's average, peak (and when) and latest over the window."""
    name = plan.subject.reading or "cpu"
    kind = _KINDS[name]
    if not reader.ever(kind.source, kind.subject):
        return Found(
            f"No {kind.words.lower()} readings are in this log (the {name} sense has "
            "not reported).",
            answered=False,
        )
    window = plan.window
    point = window is not None and (window.point_ns is not None or _short(window))
    valued = f"({kind.sql}) IS NOT NULL"  # the disk's free space and its writes share a subject
    held = reader.rows(window, source=kind.source, subject=kind.subject, where=valued, limit=2)
    if point and window is not None and not held:  # "now": the reading standing then
        window = Window(window.end_ns - _STANDS_MAX * 2, window.end_ns, window.label)
    point = point and not held  # "at 07:44" holds readings: fold the minute's
    rows = [
        r
        for r in reader.rows(
            window, source=kind.source, subject=kind.subject, where=valued, limit=2
        )
        if kind.value(r) is not None
    ]  # the newest two: is there one reading, or more to fold in DuckDB?
    if point or (plan.window is None and plan.measure == "last"):
        rows = rows[-1:]
    if plan.window is not None and plan.window.edge is not None:
        rows = _at_edge(reader, kind, plan.window)
    elif plan.window is not None and _around(plan):  # "the load around 19:25": the nearest
        rows = _nearest(reader, kind, plan.window)
    if not rows:
        return Found(f"No {kind.words.lower()} readings {reader.scope(plan.window)}.")
    if len(rows) == 1:
        value = kind.value(rows[0]) or 0.0
        said = f"{_say(kind, value)} ({rows[0].line}).{_amounts(name, rows, [('', value)])}"
        text = f"{kind.words} at {reader.when(rows[0].t)}: {said}"
        if plan.window is not None and plan.window.edge is not None:  # "after memgrow ended"
            which = "first" if plan.window.edge == "start" else "last"
            text = f"{kind.words} {reader.scope(plan.window)}, the {which} reading: {text}"
            text += _over(reader, kind, plan.window)
        text, cited = _with_top(reader, plan, name, text, (rows[0].id,))
        return Found(text, cited)
    end = min(plan.window.end_ns, reader.now_ns) if plan.window else reader.now_ns
    fold = _fold(reader, kind, plan.window, end)
    assert fold is not None  # the window holds readings: rows above
    if plan.measure in ("fell", "rose"):
        return _turned(reader, plan, kind)
    parts = _parts(reader, plan, name, fold)
    text = f"{kind.words} {reader.scope(plan.window)}: {', '.join(parts)} ({fold.n} readings)"
    at = fold.low if plan.measure == "lowest" else fold.peak
    text += f"; at the {'lowest' if plan.measure == 'lowest' else 'peak'}: {_line_of(reader, at)}."
    text, cited = text + _amounts(name, rows, _folded(fold)), (fold.peak[1], fold.last[1])
    if name == "cpu" and plan.measure == "average":
        load = _fold(reader, _KINDS["load"], plan.window, end)
        if load is not None:
            text += f" Load average (1 min) peaked at {_say(_KINDS['load'], load.peak[0])}."
    if name == "swap" and fold.peak[0] == 0:
        text += " No swap was used."
    text, cited = _with_top(reader, plan, name, text, cited)
    return Found(text, tuple(dict.fromkeys(cited)))


def _parts(reader: Reader, plan: Plan, name: str, fold: _Fold) -> list[str]:
    """What the folded reading says, the measure asked first: its average, peak and latest
    (and lowest); energy's readings add up (each is the energy spent since the one before)."""
    kind = _KINDS[name]
    peak = f"peak {_say(kind, fold.peak[0])} at {reader.when(fold.peak[2])}"
    mean = f"average {_say(kind, fold.mean)} by time ({_say(kind, fold.plain)} over the readings)"
    parts = [mean, peak, f"latest {_say(kind, fold.last[0])}"]
    if plan.measure in ("peak", "when", "most"):
        parts = [parts[1], parts[0], parts[2]]
    if plan.measure == "lowest":
        parts = [f"lowest {_say(kind, fold.low[0])} at {reader.when(fold.low[2])}", *parts]
    if name == "energy":
        parts = [f"{_say(kind, fold.plain * fold.n)} in all", *parts]
    return parts


def _over(reader: Reader, kind: _Kind, window: Window) -> str:
    """The rest of a window named by an end ("after memgrow ended"), beyond its first reading:
    its average, lowest and peak; nothing for the log's own start or end."""
    if window.point_ns is not None:
        return ""
    fold = _fold(reader, kind, window, min(window.end_ns, reader.now_ns))
    if fold is None or fold.n < 2:
        return ""
    return (f" Over those {fold.n} readings: average {_say(kind, fold.plain)}, lowest "
            f"{_say(kind, fold.low[0])} at {reader.when(fold.low[2])}, peak "
            f"{_say(kind, fold.peak[0])} at {reader.when(fold.peak[2])}.")  # fmt: skip


def _turned(reader: Reader, plan: Plan, kind: _Kind) -> Found:
    """When the reading last fell below (or rose above) the middle of its range in the window,
    from which reading to which."""
    rows = [(r, v) for r in reader.rows(plan.window, source=kind.source, subject=kind.subject)
            if (v := kind.value(r)) is not None]  # fmt: skip
    values = [v for _, v in rows]
    middle = (min(values, default=0.0) + max(values, default=0.0)) / 2
    fell = plan.measure == "fell"
    turns = [(a, b) for a, b in pairwise(rows)
             if (a[1] >= middle > b[1] if fell else a[1] < middle <= b[1])]  # fmt: skip
    said = "fell below" if fell else "rose above"
    if not turns:
        text = (f"{kind.words} never {said} the middle of its range ({_say(kind, middle)}) "
                f"{reader.scope(plan.window)}.")  # fmt: skip
        return Found(text, tuple(r.id for r, _ in rows[-1:]))
    (before, was), (after, now) = turns[-1]
    text = (f"{kind.words} last {said} {_say(kind, middle)} at {reader.when(after.t)} "
            f"{reader.scope(plan.window)}: from {_say(kind, was)} at {reader.when(before.t)} "
            f"to {_say(kind, now)} ({after.line}).")  # fmt: skip
    return Found(text, (before.id, after.id))


def _short(window: Window) -> bool:
    """Whether the window is shorter than a reading stands ("when I ran uptime"): with no
    reading in it, the one standing at its end answers."""
    return window.clock and window.end_ns - window.start_ns < _STANDS_MAX


def _around(plan: Plan) -> bool:
    """Whether the plan asks what a reading was around a moment (not its peak or lowest)."""
    window = plan.window
    if window is None or window.point_ns is None:
        return False
    return window.end_ns - window.start_ns > _STANDS_MAX and plan.measure in ("list", "last")


def _nearest(reader: Reader, kind: _Kind, window: Window) -> list[Row]:
    """The reading nearest the window's moment (the earlier of two as near)."""
    point = window.point_ns if window.point_ns is not None else window.end_ns
    rows = [r for r in reader.rows(window, source=kind.source, subject=kind.subject)
            if kind.value(r) is not None]  # fmt: skip
    return sorted(rows, key=lambda r: (abs(r.t - point), r.t))[:1]


def _at_edge(reader: Reader, kind: _Kind, window: Window) -> list[Row]:
    """The first reading of the log's start (or the last of its end), as the one row."""
    rows = [r for r in reader.rows(window, source=kind.source, subject=kind.subject)
            if kind.value(r) is not None]  # fmt: skip
    return rows[:1] if window.edge == "start" else rows[-1:]


def _line_of(reader: Reader, at: tuple[float, str, int]) -> str:
    """The line of the reading ``at`` (value, id, time), read from the rows of its time."""
    _, eid, t = at
    events, args = reader.events(Window(t, t + 1, ""), [bytes.fromhex(eid)])
    found = reader.conn.execute(f"SELECT line FROM {events} WHERE id = ?", args).fetchone()
    return str(found[0]) if found else "?"


def _with_top(
    reader: Reader, plan: Plan, name: str, text: str, cited: tuple[str, ...]
) -> tuple[str, tuple[str, ...]]:
    """CPU and memory readings also name the process that used the most of it then."""
    if name not in ("cpu", "memory"):
        return text, cited
    top = top_process(reader, plan.window, memory=name == "memory")
    if top is None:
        return text, cited
    said = top[1]
    return f"{text} {said[:1].upper()}{said[1:]}.", (*cited, top[0].id)
