"""Which of two things came first: "did I edit main.c before or after the first build?",
"which started first, yes or memgrow?". Each side is a changed file or a command the log
knows by name; each is placed at its first time (a file's first change, a command's first
run), and the answer gives both times.
"""

from __future__ import annotations

from nerve.events import SourceClass
from nerve.recall.plans.log import Found, Reader, Row
from nerve.recall.plans.parse import Plan, Subject
from nerve.recall.plans.things import command_runs
from nerve.recall.plans.words import hits

__all__ = ["compare"]


def _first(reader: Reader, side: Subject) -> tuple[Row, str] | None:
    """The side's first time in the log, and how to say it."""
    name = side.name or ""
    if side.kind == "file":
        words = name.split()
        rows = [r for r in reader.rows(None, source=SourceClass.FILE_CHANGE)
                if hits(words, str(r.data.get("path") or "")) == len(words)]  # fmt: skip
        if not rows:
            return None
        first, change = rows[0], rows[0].data.get("change", "changed")
        return first, f"{first.data.get('path', name)} was first {change}"
    runs = command_runs(reader, name)
    if not runs:
        return None
    command = " ".join(str(runs[0].data.get("command") or name).split())
    return runs[0], f"`{command}` first ran"


def compare(reader: Reader, plan: Plan) -> Found:
    """Both sides at their first time, and which came first."""
    assert plan.anchor is not None
    one, other = _first(reader, plan.subject), _first(reader, plan.anchor)
    if one is None or other is None:
        missing = plan.subject.name if one is None else plan.anchor.name
        return Found(f"I understood a question of which came first, `{plan.subject.name}` or "
                     f"`{plan.anchor.name}`; but nothing recorded matches `{missing}`.",
                     answered=False)  # fmt: skip
    (a, said_a), (b, said_b) = sorted((one, other), key=lambda side: side[0].t)
    order = "the same second as" if reader.when(a.t) == reader.when(b.t) else "before"
    text = f"{said_a} at {reader.when(a.t)}, {order} {said_b} at {reader.when(b.t)}."
    return Found(text, (a.id, b.id))
