"""A window named by a command's run: "what did I do *while memgrow was running*?" reads the
newest run of the command the words name, from its start to its end, as the plan's window.
Words that name no recorded command are said back, unanswered: the question cannot be
placed in time.
"""

from __future__ import annotations

from dataclasses import replace

from nerve.recall.plans.log import Found, Reader
from nerve.recall.plans.parse import Plan
from nerve.recall.plans.things import command_runs, ended
from nerve.recall.plans.window import NS, Window

__all__ = ["during"]


def during(reader: Reader, plan: Plan) -> Plan | Found:
    """The plan with its window set to the named command's newest run, or a final,
    unanswered Found when no recorded command matches the words."""
    assert plan.during is not None
    name = plan.during.name or ""
    runs = command_runs(reader, name)
    if not runs:
        return Found(f"I understood a question about a time: while `{name}` ran; but no "
                     f"recorded command matches `{name}`, so I cannot tell when that was. "
                     "Which command did you mean (its name as it ran), or which time?",
                     (), False, 0, True)  # fmt: skip
    run = runs[-1]
    start, end = run.t, max(ended(run), run.t + NS)
    label = f"while `{_said(run.data.get('command'), name)}` ran"
    return replace(plan, window=Window(start, end + NS, label, clock=True))


def _said(command: object, name: str) -> str:
    return " ".join(command.split()) if isinstance(command, str) else name
