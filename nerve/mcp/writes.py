"""The write tools of ``nerve mcp``: served only when ``mcp.allow_write`` names them.

- ``emit`` appends one event, as ``nerve emit`` does (privacy rules applied), always
  ``Untrusted`` (an agent vouches for nothing) and never in nerve's own name: source
  ``nerve`` and nerve's own kinds (``agent.access``, ``sense.state``, …) are refused, so an
  agent cannot forge the records that audit it;
- ``trigger_workflow`` asks the running daemon to start a run;
- ``answer`` answers a waiting run's question, recorded as answered by the agent.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, Field

from nerve.api import Workspace
from nerve.errors import AccessRefused, EventError, UsageError
from nerve.events import NERVE_KINDS, NERVE_SOURCE, Trust, display_source, parse_source

__all__ = ["WriteOut", "answer", "emit", "trigger_workflow"]


class WriteOut(BaseModel):
    done: str = Field(description="What was done, in words.")
    detail: dict[str, Any] = Field(description="What nerve answered (ids, run, status).")


def emit(
    ws: Workspace,
    line: str,
    kind: str = "observation",
    source: str = "endpoint",
    subject: str = "",
    payload: Any = None,
) -> WriteOut:
    from nerve.log.drafts import Draft

    if kind != "observation" and kind in NERVE_KINDS:
        raise AccessRefused(f"kind {kind!r} is nerve's own; an agent may not write it")
    try:
        code = parse_source("endpoint" if source.strip().lower() == "" else source)
    except EventError as exc:
        raise UsageError(str(exc)) from None
    if code == NERVE_SOURCE:
        raise AccessRefused(f"source {source!r} is nerve's own; an agent may not write as it")
    draft = Draft.of(
        kind, source=code, trust=Trust.UNTRUSTED, line=line, payload=payload, subject=subject
    )
    events = ws.emit_many([draft])
    if not events:
        return WriteOut(done="not stored: a privacy rule drops such events", detail={})
    event = events[0]
    return WriteOut(
        done=f"stored {kind} from {display_source(code)}",
        detail={"id": event.id.hex(), "hlc": str(event.hlc)},
    )


def trigger_workflow(
    ws: Workspace,
    name: str,
    prompt: str = "",
    max_rounds: int | None = None,
    dry_run: bool = False,
) -> WriteOut:
    reply = ws.runs.trigger(name, prompt=prompt, max_rounds=max_rounds, dry_run=dry_run)
    return WriteOut(done=f"workflow {name} requested: run {reply.run}", detail=reply.to_json())


def _answer_needs_daemon() -> UsageError:
    return UsageError("the daemon is not running; a run can only be answered through it")


def answer(ws: Workspace, run: str, choice: str, by: str) -> WriteOut:
    door = ws
    if not door.daemon.answers():
        raise _answer_needs_daemon()
    reply = door.run(run).answer(choice, by=by)
    return WriteOut(done=f"run {run} answered {reply.choice!r}", detail=reply.to_json())
