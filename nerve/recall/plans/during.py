"""A window named by something else: "what did I do *while memgrow was running*?" reads the
newest run of the command the words name, from its start to its end; "did memory drop *after
memgrow exited*?" the two minutes after that run ended; "what did I do *when I came back*?"
the two minutes after the newest time away ended ("*just before I went away*": the minute
before it began; "*while I was afk*": the time away itself; "*when I went away*": its
start); "the lowest CPU *before the hog started*"
from the start of that day to its start. Words that name no recorded command (or a
log with no time away) are said back, unanswered: the question cannot be placed in time.
"""

from __future__ import annotations

from dataclasses import replace

from nerve.recall.plans.log import Found, Reader
from nerve.recall.plans.parse import Plan
from nerve.recall.plans.things import away_spells, command_runs, ended
from nerve.recall.plans.window import NS, Window, local

__all__ = ["during"]

_AFTER = 120 * NS
_JUST = 60 * NS


def during(reader: Reader, plan: Plan) -> Plan | Found:
    """The plan with its window set to the named command's newest run, or a final,
    unanswered Found when no recorded command matches the words."""
    assert plan.during is not None
    if plan.during.kind == "away":
        return _back(reader, plan)
    name = plan.during.name or ""
    runs = command_runs(reader, name)
    if not runs:
        return Found(f"I understood a question about a time: while `{name}` ran; but no "
                     f"recorded command matches `{name}`, so I cannot tell when that was. "
                     "Which command did you mean (its name as it ran), or which time?",
                     (), False, 0, True)  # fmt: skip
    run = runs[-1]
    start, end = run.t, max(ended(run), run.t + NS)
    said = _said(run.data.get("command"), name)
    if plan.during.kind == "ended":  # a reading then is the first one after it
        after = Window(end, end + _AFTER, f"after `{said}` ended", clock=True, edge="start")
        return replace(plan, window=after)
    if plan.during.kind == "started":
        day = _midnight(reader, start)
        return replace(plan, window=Window(day, start, f"before `{said}` started", clock=True))
    return replace(plan, window=Window(start, end + NS, f"while `{said}` ran", clock=True))


def _back(reader: Reader, plan: Plan) -> Plan | Found:
    """The plan over a time named by the newest time away (see the module)."""
    spells = [a for a in away_spells(reader, None) if not a.ongoing]
    if not spells:
        return Found("I understood a question about a time away from the machine; but the log "
                     "records no time away.", (), False, 0, True)  # fmt: skip
    said = plan.during.name if plan.during is not None else None
    left = spells[-1].start
    if said == "before":  # just before you went away
        window = Window(left - _JUST, left + NS, "just before you went away", clock=True)
        return replace(plan, window=window)
    if said == "while":  # the whole time away
        away = Window(left, spells[-1].end + NS, "while you were away", clock=True)
        return replace(plan, window=away)
    if said == "left":  # the moment you went away
        return replace(plan, window=Window(left, left + NS, "when you went away", left, True))
    back = spells[-1].end
    return replace(plan, window=Window(back, back + _AFTER, "after you came back", clock=True))


def _midnight(reader: Reader, ns: int) -> int:
    """The start of the local day holding ``ns``."""
    moment = local(ns, reader.tz)
    return round(moment.replace(hour=0, minute=0, second=0, microsecond=0).timestamp()) * NS


def _said(command: object, name: str) -> str:
    return " ".join(command.split()) if isinstance(command, str) else name
