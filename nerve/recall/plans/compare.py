"""Which of two things came first: "did I edit main.c before or after the first build?",
"which started first, yes or memgrow?". Each side is a changed file or a command the log
knows by name; each is placed at its first time (a file's first change, a command's first
run, or its end when the question asks which ended first), and the answer gives both times.
"""

from __future__ import annotations

import re

from nerve.events import SourceClass
from nerve.recall.plans.log import Found, Reader, Row
from nerve.recall.plans.parse import Plan, Subject
from nerve.recall.plans.things import command_runs, ended
from nerve.recall.plans.words import hits

__all__ = ["compare"]


def _first(reader: Reader, side: Subject, ends: bool) -> tuple[Row, str, int] | None:
    """The side's first time in the log (a command's end when ``ends``), how to say it, and
    that time."""
    name = side.name or ""
    if side.kind == "file":
        words = name.split()
        rows = [r for r in reader.rows(None, source=SourceClass.FILE_CHANGE)
                if hits(words, str(r.data.get("path") or "")) == len(words)]  # fmt: skip
        if not rows:
            return None
        first, change = rows[0], rows[0].data.get("change", "changed")
        return first, f"{first.data.get('path', name)} was first {change}", first.t
    runs = command_runs(reader, name)
    if not runs:
        return None
    command = " ".join(str(runs[0].data.get("command") or name).split())
    if ends:  # "which finished first?"
        return runs[0], f"`{command}` first ended", ended(runs[0])
    return runs[0], f"`{command}` first ran", runs[0].t


_ENDS = re.compile(r"\b(end(?:ed|s)?|finish\w*|stop\w*|exit\w*|quit|done)\b")


def compare(reader: Reader, plan: Plan) -> Found:
    """Both sides at their first time (or a command's end, when the question asks which
    ended first), and which came first."""
    assert plan.anchor is not None
    ends = _ENDS.search(plan.question.lower()) is not None
    one, other = _first(reader, plan.subject, ends), _first(reader, plan.anchor, ends)
    if one is None or other is None:
        missing = plan.subject.name if one is None else plan.anchor.name
        return Found(f"I understood a question of which came first, `{plan.subject.name}` or "
                     f"`{plan.anchor.name}`; but nothing recorded matches `{missing}`.",
                     answered=False)  # fmt: skip
    (a, said_a, at_a), (b, said_b, at_b) = sorted((one, other), key=lambda side: side[2])
    order = "the same second as" if reader.when(at_a) == reader.when(at_b) else "before"
    text = f"{said_a} at {reader.when(at_a)}, {order} {said_b} at {reader.when(at_b)}."
    return Found(text, (a.id, b.id))
