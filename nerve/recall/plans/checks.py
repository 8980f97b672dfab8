"""Plans about the checks a workflow ran on files (``check.fired``, ``check.verdict``): which
check ran on which file, when, and its verdict, narrowed to a file when the question names
one ("did any check run on guide.md?"). "Did any check fail?" is answered by every verdict,
passed ones too: that none failed is the answer.
"""

from __future__ import annotations

from nerve.recall.plans.log import Found, Reader, Row
from nerve.recall.plans.parse import Plan

__all__ = ["checks"]


def checks(reader: Reader, plan: Plan) -> Found:
    """Every check verdict in the window (about the named file, if one is), oldest first,
    with how many failed."""
    name = plan.subject.name
    where, args = ("subject ILIKE ?", [f"%{name}%"]) if name else ("TRUE", [])
    verdicts = reader.rows(plan.window, kind="check.verdict", where=where, args=args)
    about = f" on `{name}`" if name else ""
    if not verdicts:
        fired = reader.rows(plan.window, kind="check.fired", where=where, args=args)
        text = f"No check verdict is recorded{about} {reader.scope(plan.window)}"
        if fired:
            return reader.listing(text + "; checks fired without one:", _lines(reader, fired), None)
        return Found(text + ".", answered=not name)
    failed = [r for r in verdicts if r.data.get("result") != "passed"]
    said = f"{len(failed)} failed" if failed else "none failed"
    title = (f"{len(verdicts)} check verdict(s){about} {reader.scope(plan.window)}, "
             f"{said}:")  # fmt: skip
    return reader.listing(title, _lines(reader, verdicts), None)


def _lines(reader: Reader, rows: list[Row]) -> list[tuple[Row, str]]:
    """Each record as its time and its own line."""
    return [(r, f"{reader.when(r.t)}  {r.line}") for r in rows]
