"""What a person does to a run: answer its question, re-check a held run, override its checks.

All three are recorded before they take effect. An answer must be one of the question's
options (its text, or its 1-based number); with no options any non-empty text is accepted.
A re-check fires the run's output checks again on the outputs and checks recorded when it was
held, with the manifests as they are now. An override completes a held run despite its checks; it
names the run's refusing checks and the person's reason in ``workflow.override``. Only an
interactive terminal may ask for one: the daemon refuses a request that does not say it came
from one (``nerve workflow override`` checks that stdin and stdout are terminals and that it
is not running inside a workflow), and a sense or a role has no other way to ask.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from nerve.errors import WorkflowError
from nerve.flow.history import RunRecord
from nerve.flow.manager import Flow
from nerve.flow.record import ANSWER, OVERRIDE, draft, status
from nerve.flow.runs import judge
from nerve.privacy.cut import shorten


def match_choice(choice: str, options: Sequence[str]) -> str:
    """The option ``choice`` names (exact text, or 1-based number); ``WorkflowError`` if none."""
    text = choice.strip()
    if not options:
        if not text:
            raise WorkflowError("the answer is empty")
        return text
    if text in options:
        return text
    if text.isdigit() and 1 <= int(text) <= len(options):
        return options[int(text) - 1]
    folded = [o for o in options if o.casefold() == text.casefold()]
    if len(folded) == 1:
        return folded[0]
    listed = ", ".join(f"{i}. {o}" for i, o in enumerate(options, 1))
    raise WorkflowError(f"{choice!r} is not one of the options: {listed}")


async def answer(flow: Flow, run: str, choice: str, by: str) -> dict[str, Any]:
    """Record the answer to a waiting run's question and resume it."""
    record = flow.active.get(run)
    if record is None or record.question is None:
        raise WorkflowError(f"run {run!r} is not waiting for an answer")
    question = record.question
    chosen = match_choice(choice, list(question.get("options") or []))
    record.question = None  # a second answer racing this one is refused
    payload = {
        "run": run,
        "workflow": flow.name,
        "role": question["role"],
        "question": question["question"],
        "options": question.get("options") or [],
        "choice": chosen,
        "by": by,
    }
    line = f"{run}: answered {chosen!r} ({by})"
    try:
        await flow.emit(
            [draft(ANSWER, run, line, payload), status(run, flow.name, "started", "answered")]
        )
    except BaseException:
        record.question = question
        raise
    record.answer, record.status = payload, "started"
    flow.start_task(record)
    return {"run": run, "choice": chosen, "status": "started"}


def _held(record: RunRecord) -> dict[str, Any]:
    if record.status != "held" or record.held is None:
        raise WorkflowError(
            f"run {record.run!r} is {record.status or 'unknown'}; only a held run can be"
            " re-checked or overridden"
        )
    return record.held


async def recheck(flow: Flow, record: RunRecord) -> dict[str, Any]:
    """Fire a held run's output checks again; ``completed`` if it passes now, else still held."""
    held = _held(record)
    ids = list(held.get("checks") or [])
    outputs = list(held.get("outputs") or [])
    outcome = await judge(flow, record.run, outputs, ids, flow.output_manifests(ids))
    return {"run": record.run, "status": outcome}


async def override(
    flow: Flow, record: RunRecord, *, reason: str, by: str, tty: str | None
) -> dict[str, Any]:
    """Complete a held run by a person's explicit, recorded decision."""
    held = _held(record)
    if not reason.strip():
        raise WorkflowError("an override needs a reason", hint="pass --reason TEXT")
    refusing = list(held.get("reasons") or [])
    checks = sorted({r["check"] for r in refusing if "check" in r})
    payload = {
        "run": record.run,
        "workflow": flow.name,
        "reason": reason,
        "checks": checks,
        "reasons": refusing,
        "by": by,
        "tty": tty,
    }
    line = shorten(f"{record.run}: gate overridden by {by}: {reason}", 500)
    done = status(
        record.run,
        flow.name,
        "completed",
        shorten(f"overridden: {reason}", 300),
        overridden=True,
        outputs=held.get("outputs") or [],
    )
    await flow.emit([draft(OVERRIDE, record.run, line, payload), done])
    return {"run": record.run, "status": "completed", "checks": checks}
