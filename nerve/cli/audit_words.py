"""A chain link's fields labelled, for ``nerve audit show`` (why a decision was taken is
:func:`nerve.attention.reason.reason_of`'s)."""

from __future__ import annotations

from typing import Any

from nerve.cli.output import flat

# What each field of a decision link means; a nested map's fields read ``hl.value``.
LINK_FIELDS = {
    "t": "when it was decided (HLC physical ns)",
    "seq": "this link's place in the chain",
    "kind": "genesis, decision, checkpoint or rotation",
    "event": "the attention.decision event it seals",
    "decision": "surface, or held: hold:value, hold:budget, hold:direction, hold:transient",
    "value": "what the gate weighed (its value), thousandths",
    "cost": "what an interruption costs now, thousandths",
    "budget_uj": "the attention budget after it, µJ",
    "charged_uj": "what it took from the budget, µJ",
    "energy.estimated_uj": "the energy it is counted at, µJ",
    "energy.provenance": "how that figure was got",
    "hl.probe": "the probe that fired",
    "hl.value": "the reading, not what the gate weighed: a value probe's unit, else thousandths",
    "hl.baseline": "the baseline it was judged against, in the reading's unit",
    "hl.sigma": "the spread around that baseline, in the reading's unit",
    "hl.score": "how far past the threshold it fired, thousandths",
    "hl.seq": "the observation's number in the detector's window",
    "trust": "the source event's trust",
    "probe": "the probe that fired",
    "source_line": "the line of the event that was observed",
    "cause": "what happened and where",
    "why": "why the gate decided so",
    "verified_through_here": "whether the chain verifies up to this link",
}


def flat_fields(link: dict[str, Any], prefix: str = "") -> list[tuple[str, Any]]:
    """``(name, value)`` pairs, nested maps spelled out as ``hl.value`` (no Python reprs)."""
    out: list[tuple[str, Any]] = []
    for name, value in link.items():
        if isinstance(value, dict):
            out += flat_fields(value, f"{prefix}{name}.")
        else:
            out.append((f"{prefix}{name}", value))
    return out


def link_lines(link: dict[str, Any]) -> list[str]:
    """One line per field: name, value and, for the fields people ask about, what it is."""
    fields = [(name, _shown(name, value)) for name, value in flat_fields(link)]
    width = max(len(name) for name, _ in fields)
    said = max((len(v) for n, v in fields if n in LINK_FIELDS and len(v) <= 24), default=0)
    lines = []
    for name, value in fields:
        text = f"{name:<{width}}  {value}"
        meaning = LINK_FIELDS.get(name)
        lines.append(f"{text:<{width + 2 + said}}  # {meaning}" if meaning else text)
    return [line.rstrip() for line in lines]


def _shown(name: str, value: Any) -> str:
    from nerve.attention.energy import Provenance
    from nerve.tail import format_times

    if name == "energy.provenance" and isinstance(value, int):
        return Provenance(value).label
    if name == "t" and isinstance(value, int):
        return f"{value} ({format_times([value], utc=True)[0]})"
    if isinstance(value, bool):
        return "yes" if value else "no"
    return "" if value is None else flat(str(value))  # one line each, safe on a terminal
