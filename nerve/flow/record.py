"""The event kinds workflows and checks write, and how their drafts are made.

Kinds are stable names (never derived from a class): renaming one would change what is stored.
Run events have the run id as subject; ``workflow.error``, ``workflow.backoff`` and
``workflow.restart`` have the workflow name; a ``fire_on: write`` check has the file path.
"""

from __future__ import annotations

import os
import time
from collections.abc import Awaitable, Callable, Sequence
from typing import Any

import blake3

from nerve.log.drafts import Draft
from nerve.privacy.cut import shorten

REQUESTED = "workflow.requested"
STATUS = "workflow.status"
STARTED = "workflow.started"
DECISION = "workflow.decision"
MESSAGE = "workflow.message"
QUESTION = "workflow.question"
ANSWER = "workflow.answer"
OVERRIDE = "workflow.override"
ERROR = "workflow.error"
BACKOFF = "workflow.backoff"
RESTART = "workflow.restart"
CHECK_FIRED = "check.fired"
CHECK_VERDICT = "check.verdict"

Emit = Callable[[Sequence[Draft]], Awaitable[Any]]


def draft(kind: str, subject: str, line: str, payload: Any) -> Draft:
    """A first-party control event from nerve itself."""
    return Draft.control(kind, subject, line, payload)


def status(run: str, workflow: str, state: str, reason: str | None = None, **extra: Any) -> Draft:
    """A ``workflow.status`` event: the run's new status and why."""
    line = f"{run}: {state}" + (f" ({reason})" if reason else "")
    payload = {"run": run, "workflow": workflow, "status": state, "reason": reason, **extra}
    return draft(STATUS, run, shorten(line, 500), payload)


_SEQ = [0]


def new_run_id(workflow: str, now_ns: Callable[[], int] = time.time_ns) -> str:
    """``<workflow>-<12 hex>``: blake3 of the name, the wall clock, the pid and a counter."""
    _SEQ[0] += 1
    seed = f"{workflow}\0{now_ns()}\0{os.getpid()}\0{_SEQ[0]}".encode()
    return f"{workflow}-{blake3.blake3(seed).hexdigest()[:12]}"
