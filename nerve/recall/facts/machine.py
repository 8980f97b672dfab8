"""The machine: CPU and memory use over a period, from the cpu and memory senses."""

from __future__ import annotations

from nerve.events import SourceClass
from nerve.recall.facts.ask import Ask, Row, never, nothing, stands
from nerve.recall.tier0 import Tier0Answer
from nerve.tail.when import Period

__all__ = ["usage"]


def usage(ask: Ask, sense: str, intent: str, unit: str = "%") -> Tier0Answer:
    """The machine's CPU or memory over the period (or its latest reading)."""
    if not ask.ever(SourceClass.ENDPOINT, sense):
        return never(intent, f"{sense} use (the {sense} sense)")
    name = "CPU" if sense == "cpu" else sense.capitalize()
    rows = ask.rows(SourceClass.ENDPOINT, sense)
    if ask.period is None or ask.period.point or not rows:
        until = ask.period.end_ns if ask.period is not None else ask.now_ns
        rows = ask.rows(SourceClass.ENDPOINT, sense, Period(0, until, ""))[-1:]
        if not rows:
            return nothing(ask, intent, f"{sense} readings")
        text = f"{name} at {ask.when(rows[0].t)}: {rows[0].line}"
        return Tier0Answer(intent, text, (rows[0].id,))
    values = [_percent(r) for r in rows]
    high = max(rows, key=_percent)
    # a reading stands until the next (the senses send one when it moved, or a keyframe)
    weights = stands(ask, rows)
    average = sum(v * w for v, w in zip(values, weights, strict=True)) / sum(weights)
    text = (
        f"{name} {ask.scope()}: average {average:.1f}{unit}, "
        f"peak {max(values):.1f}{unit} at {ask.when(high.t)}, "
        f"latest {values[-1]:.1f}{unit} ({len(values)} readings)."
    )
    return Tier0Answer(intent, text, (high.id, rows[-1].id))


def _percent(row: Row) -> float:
    value = row.data.get("percent")
    return float(value) if isinstance(value, int | float) else 0.0
