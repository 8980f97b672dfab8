"""Plans about a sense reading (load, cpu, memory, free disk, network): its average, peak,
when it peaked and its latest value over the window.

A reading stands until the next (the senses send one when it moved, or a keyframe is due),
at most five minutes, so the average weighs each by how long it stood.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from nerve.events import SourceClass
from nerve.recall.plans.log import WHOLE, Found, Reader, Row
from nerve.recall.plans.parse import Plan
from nerve.recall.plans.things import top_process
from nerve.recall.plans.window import NS, Window

__all__ = ["reading"]

_STANDS_MAX = 300 * NS
_GIB = 1024**3


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
    "memory": _Kind("Memory use", SourceClass.ENDPOINT, "memory", _number("percent"), "%", 1,
                    _field("percent")),
    "disk": _Kind("Free disk", SourceClass.ENDPOINT, "disk", _number("free_bytes", 1 / _GIB),
                  " GiB", 1, _field("free_bytes", f" / {_GIB}")),
    "network": _Kind("Network traffic (down + up)", SourceClass.NETWORK, None, _network,
                     " KiB/s", 1, _NET_SQL),
}  # fmt: skip
_T = "coalesce(valid_time_ns, physical_ns)"


@dataclass(frozen=True)
class _Fold:
    """A reading over a window, folded in DuckDB: how many, the time-weighted mean, the peak
    (value, id, time) and the latest (value, id)."""

    n: int
    mean: float
    peak: tuple[float, str, int]
    last: tuple[float, str]


def _fold(reader: Reader, kind: _Kind, window: Window | None, end: int) -> _Fold | None:
    """Each reading stands until the next (at most five minutes), the last until ``end``."""
    subject = "" if kind.subject is None else "AND subject = ?"
    events, args = reader.events(
        window or WHOLE, [int(kind.source), *([kind.subject] if kind.subject else [])]
    )
    sql = f"""
        WITH r AS (
            SELECT id, {_T} AS t, {kind.sql} AS v FROM {events}
            WHERE kind = 'observation' AND source = ? {subject}
        ), w AS (
            SELECT id, t, v, greatest(1, least(coalesce(lead(t) OVER (ORDER BY t, id),
                greatest(?, t)) - t, {_STANDS_MAX})) AS w FROM r WHERE v IS NOT NULL
        )
        SELECT count(*), sum(v * w) / sum(w), max(v), arg_max(id, (v, -t)), arg_max(t, (v, -t)),
            arg_max(v, (t, id)), arg_max(id, (t, id)) FROM w
    """
    row = reader.conn.execute(sql, [*args, end]).fetchone()
    if row is None or not row[0]:
        return None
    n, mean, peak, peak_id, peak_t, last, last_id = row
    return _Fold(int(n), float(mean), (float(peak), bytes(peak_id).hex(), int(peak_t)),
                 (float(last), bytes(last_id).hex()))  # fmt: skip


def _say(kind: _Kind, value: float) -> str:
    return f"{value:.{kind.digits}f}{kind.unit}"


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
    point = window is not None and window.point_ns is not None
    held = reader.rows(window, source=kind.source, subject=kind.subject, limit=2)
    if point and window is not None and not held:  # "now": the reading standing then
        window = Window(window.end_ns - _STANDS_MAX * 2, window.end_ns, window.label)
    point = point and not held  # "at 07:44" holds readings: fold the minute's
    rows = [
        r
        for r in reader.rows(window, source=kind.source, subject=kind.subject, limit=2)
        if kind.value(r) is not None
    ]  # the newest two: is there one reading, or more to fold in DuckDB?
    if point or (plan.window is None and plan.measure == "last"):
        rows = rows[-1:]
    if not rows:
        return Found(f"No {kind.words.lower()} readings {reader.scope(plan.window)}.")
    if len(rows) == 1:
        value = kind.value(rows[0]) or 0.0
        text = f"{kind.words} at {reader.when(rows[0].t)}: {_say(kind, value)} ({rows[0].line})."
        text, cited = _with_top(reader, plan, name, text, (rows[0].id,))
        return Found(text, cited)
    end = min(plan.window.end_ns, reader.now_ns) if plan.window else reader.now_ns
    fold = _fold(reader, kind, plan.window, end)
    assert fold is not None  # the window holds readings: rows above
    peak = f"peak {_say(kind, fold.peak[0])} at {reader.when(fold.peak[2])}"
    parts = [f"average {_say(kind, fold.mean)}", peak, f"latest {_say(kind, fold.last[0])}"]
    if plan.measure in ("peak", "when", "most"):
        parts = [parts[1], parts[0], parts[2]]
    text = f"{kind.words} {reader.scope(plan.window)}: {', '.join(parts)} ({fold.n} readings)."
    if name == "memory":
        text = text[:-1] + f"; at the peak: {_line_of(reader, fold.peak[1])}."
    if name == "cpu" and plan.measure == "average":
        load = _fold(reader, _KINDS["load"], plan.window, end)
        if load is not None:
            text += f" Load average (1 min) peaked at {_say(_KINDS['load'], load.peak[0])}."
    cited = (fold.peak[1], fold.last[1])
    text, cited = _with_top(reader, plan, name, text, cited)
    return Found(text, tuple(dict.fromkeys(cited)))


def _line_of(reader: Reader, eid: str) -> str:
    row = reader.conn.execute("SELECT line FROM events WHERE id = ?", [bytes.fromhex(eid)])
    found = row.fetchone()
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
