"""Plans about a sense reading (load, cpu, memory, free disk, network): its average, peak,
when it peaked and its latest value over the window.

A reading stands until the next (the senses send one when it moved, or a keyframe is due),
at most five minutes, so the average weighs each by how long it stood.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from nerve.events import SourceClass
from nerve.recall.plans.log import Found, Reader, Row
from nerve.recall.plans.parse import Plan
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


_KINDS = {
    "cpu": _Kind("CPU use", SourceClass.ENDPOINT, "cpu", _number("percent"), "%"),
    "load": _Kind("Load average (1 min)", SourceClass.ENDPOINT, "cpu", _number("load1"), "", 2),
    "memory": _Kind("Memory use", SourceClass.ENDPOINT, "memory", _number("percent"), "%"),
    "disk": _Kind(
        "Free disk", SourceClass.ENDPOINT, "disk", _number("free_bytes", 1 / _GIB), " GiB"
    ),
    "network": _Kind("Network traffic (down + up)", SourceClass.NETWORK, None, _network, " KiB/s"),
}


def _say(kind: _Kind, value: float) -> str:
    return f"{value:.{kind.digits}f}{kind.unit}"


def _weights(reader: Reader, plan: Plan, rows: list[Row]) -> list[int]:
    end = min(plan.window.end_ns, reader.now_ns) if plan.window else reader.now_ns
    nexts = [r.t for r in rows[1:]] + [max(end, rows[-1].t)]
    return [max(1, min(n - r.t, _STANDS_MAX)) for r, n in zip(rows, nexts, strict=True)]


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
    if point and window is not None:  # "now", "5 minutes ago": the reading standing then
        window = Window(window.end_ns - _STANDS_MAX * 2, window.end_ns, window.label)
    rows = [
        r
        for r in reader.rows(window, source=kind.source, subject=kind.subject)
        if kind.value(r) is not None
    ]
    if point or (plan.window is None and plan.measure == "last"):
        rows = rows[-1:]
    if not rows:
        return Found(f"No {kind.words.lower()} readings {reader.scope(plan.window)}.")
    values = [kind.value(r) or 0.0 for r in rows]
    if len(rows) == 1:
        text = (
            f"{kind.words} at {reader.when(rows[0].t)}: {_say(kind, values[0])} ({rows[0].line})."
        )
        return Found(text, (rows[0].id,))
    top = max(range(len(rows)), key=lambda i: (values[i], -i))
    weights = _weights(reader, plan, rows)
    mean = sum(v * w for v, w in zip(values, weights, strict=True)) / sum(weights)
    peak = f"peak {_say(kind, values[top])} at {reader.when(rows[top].t)}"
    scope = reader.scope(plan.window)
    parts = [f"average {_say(kind, mean)}", peak, f"latest {_say(kind, values[-1])}"]
    if plan.measure in ("peak", "when", "most"):
        parts = [parts[1], parts[0], parts[2]]
    text = f"{kind.words} {scope}: {', '.join(parts)} ({len(rows)} readings)."
    if name == "cpu" and plan.measure == "average":
        load = _KINDS["load"]
        loads = [v for v in (load.value(r) for r in rows) if v is not None]
        if loads:
            text += f" Load average (1 min) peaked at {_say(load, max(loads))}."
    return Found(text, tuple(dict.fromkeys((rows[top].id, rows[-1].id))))
