"""Plans about nerve's own decisions: what was surfaced or held, when, why (the one reason of
each decision, :func:`nerve.attention.reason.reason_of`), and whether anything unusual is
happening (the last hour's highlights and decisions, or the plan's window)."""

from __future__ import annotations

from nerve.attention.reason import reason_of
from nerve.recall.plans.log import Found, Reader, Row
from nerve.recall.plans.parse import Plan
from nerve.recall.plans.window import NS, Window

__all__ = ["attention"]

_HOUR = 3600 * NS
_SAID = {"network": "net ", "internet": "net ", "memory": "mem ", "ram": "mem ", "load": "load1",
         "idle": "away", "afk": "away", "hog": "top cpu", "processes": "top cpu"}  # fmt: skip
"""How a decision's line says what a person names: "network" is "net all down …"."""


def _about(row: Row, word: str) -> bool:
    """Whether the decision is about the person's word, as said or as its line says it."""
    words = _words(row)
    return word in words or _SAID.get(word, word) in words


def _what(row: Row) -> str:
    return str(row.data.get("source_line") or row.line)


def _words(row: Row) -> str:
    return " ".join((_what(row), str(row.data.get("probe") or ""), row.line)).lower()


def _line(reader: Reader, row: Row) -> str:
    outcome = str(row.data.get("outcome") or "?")
    return f"{reader.when(row.t)}  {_what(row)} ({outcome}) — {reason_of(row.data).words()}"


def _decisions(reader: Reader, window: Window | None) -> list[Row]:
    return reader.rows(window, kind="attention.decision")


def attention(reader: Reader, plan: Plan) -> Found:
    """Surfaced or held decisions (matching the plan's words), why, or what is unusual."""
    if plan.measure == "unusual":
        return _unusual(reader, plan)
    if plan.measure == "count":
        return _counted(reader, plan)
    if plan.measure in ("first", "last") and not plan.subject.name:
        return _nth(reader, plan)
    held = plan.subject.reading == "held"
    name = plan.subject.name
    rows = [r for r in _decisions(reader, plan.window)
            if (plan.measure == "why" and name)
            or str(r.data.get("outcome", "")).startswith("hold:") == held]  # fmt: skip
    verb = "held" if held else "surfaced"
    if plan.measure == "why" and name:
        verb = "surfaced or held"
    chosen = [r for r in rows if not name or any(_about(r, w) for w in name.split())]
    if name and not chosen:
        known = "; ".join(dict.fromkeys(_what(r) for r in rows[::-1][:5])) or "nothing"
        return Found(f"Nothing {verb} {reader.scope(plan.window)} matches `{name}`. What was "
                     f"{verb}: {known}. Which one did you mean?", answered=False)  # fmt: skip
    if not chosen:
        return Found(f"Nothing was {verb} {reader.scope(plan.window)} "
                     f"({len(_decisions(reader, plan.window))} attention decisions).")  # fmt: skip
    lines = [(r, _line(reader, r)) for r in chosen[::-1]]
    about = f" about `{name}`" if name else ""
    scope = reader.scope(plan.window)
    title = f"{verb[:1].upper()}{verb[1:]}{about} {scope}, newest first, and why:"
    return reader.listing(title, lines, plan.window, shown=8)


def _unusual(reader: Reader, plan: Plan) -> Found:
    window = plan.window or Window(reader.now_ns - _HOUR, reader.now_ns + 1, "the last hour")
    highlights = reader.rows(window, kind="attention.highlight")
    decisions = _decisions(reader, window)
    surfaced = [r for r in decisions if r.data.get("outcome") == "surface"]
    if not highlights and not decisions:
        return Found(f"Nothing unusual {reader.scope(window)}: the detector raised no "
                     "highlight and the gate made no decision.")  # fmt: skip
    head = (f"{reader.scope(window)[:1].upper()}{reader.scope(window)[1:]}: the detector "
            f"raised {len(highlights)} highlights; {len(surfaced)} surfaced, "
            f"{len(decisions) - len(surfaced)} held. Newest first:")  # fmt: skip
    lines = [(r, _line(reader, r)) for r in decisions[::-1]]
    lines += [(r, f"{reader.when(r.t)}  highlight: {r.line}") for r in highlights[::-1]
              if not decisions]  # fmt: skip
    return reader.listing(head, lines, window, shown=8)


def _counted(reader: Reader, plan: Plan) -> Found:
    """How many decisions the gate made in the window (surfaced, held) and highlights raised."""
    decisions = _decisions(reader, plan.window)
    highlights = reader.rows(plan.window, kind="attention.highlight")
    surfaced = [r for r in decisions if r.data.get("outcome") == "surface"]
    scope = reader.scope(plan.window)
    head = (f"{scope[:1].upper()}{scope[1:]}: the detector raised {len(highlights)} highlights "
            f"and the gate made {len(decisions)} decisions: {len(surfaced)} surfaced, "
            f"{len(decisions) - len(surfaced)} held. Newest first:")  # fmt: skip
    lines = [(r, _line(reader, r)) for r in decisions[::-1]]
    return reader.listing(head, lines, plan.window, shown=8)


def _nth(reader: Reader, plan: Plan) -> Found:
    """The first (or last) decision the gate made in the window, surfaced or held, and why."""
    rows = _decisions(reader, plan.window)
    if not rows:
        return Found(f"The gate made no attention decision {reader.scope(plan.window)}.")
    row = rows[0] if plan.measure == "first" else rows[-1]
    head = f"The {plan.measure} of {len(rows)} attention decisions {reader.scope(plan.window)}:"
    return Found(f"{head} {_line(reader, row)}.", (row.id,))
