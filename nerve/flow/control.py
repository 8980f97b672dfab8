"""Socket requests for workflows and checks (registered with ``nerve.runtime.control``),
each one of the typed commands of ``nerve.commands``, parsed by its ``from_json``:

    {"type": "workflow-answer", "run": R, "choice": C, "by": WHO}
    {"type": "workflow-recheck", "run": R}
    {"type": "workflow-override", "run": R, "reason": TEXT, "interactive": true,
     "by": WHO, "tty": "/dev/pts/3"}
    {"type": "workflow-status"}
    {"type": "check-fire", "check": ID, "path": P, "run": R}

An override is refused unless the request says it comes from an interactive terminal; the
socket is private to its owner, and ``nerve workflow override`` only says so when stdin and
stdout are terminals outside any workflow.
"""

from __future__ import annotations

from collections.abc import Callable, Coroutine
from typing import TYPE_CHECKING, Any, Protocol

from nerve.commands.daemon import AnswerRun, FireCheck, Override, RecheckRun, RunsStatus
from nerve.errors import WorkflowError

if TYPE_CHECKING:
    from nerve.checks.dispatch import Verdict
    from nerve.runtime.control import Handler

Reply = dict[str, Any]


class Engine(Protocol):
    """What these requests need of the workflow engine."""

    async def answer(self, run: str, choice: str, by: str) -> Reply: ...

    async def recheck(self, run: str) -> Reply: ...

    async def override(self, run: str, *, reason: str, by: str, tty: str | None) -> Reply: ...

    def status(self) -> Reply: ...

    async def fire_check(self, check: str, path: str, run: str, stage: str) -> Verdict: ...


def handlers(engine: Engine) -> dict[str, Handler]:
    """The socket requests the engine answers, bound to it, for the kernel's table."""
    table: dict[str, Callable[[Engine, Reply], Coroutine[Any, Any, Reply]]] = {
        "workflow-answer": _answer,
        "workflow-recheck": _recheck,
        "workflow-override": _override,
        "workflow-status": _status,
        "check-fire": _check_fire,
    }
    return {name: _bound(fn, engine) for name, fn in table.items()}


def _bound(fn: Callable[[Engine, Reply], Coroutine[Any, Any, Reply]], engine: Engine) -> Handler:
    async def answer(kernel: object, request: Reply) -> Reply:
        return await fn(engine, request)

    return answer


async def _answer(engine: Engine, request: Reply) -> Reply:
    answer = AnswerRun.from_json(request)
    return {"ok": True, **await engine.answer(answer.run, answer.choice, answer.by)}


async def _recheck(engine: Engine, request: Reply) -> Reply:
    return {"ok": True, **await engine.recheck(RecheckRun.from_json(request).run)}


async def _override(engine: Engine, request: Reply) -> Reply:
    override = Override.from_json(request)
    if not override.interactive:
        raise WorkflowError(
            "an override must come from a person at an interactive terminal",
            hint="run `nerve workflow override RUN --reason TEXT` in a terminal",
        )
    reply = await engine.override(
        override.run, reason=override.reason, by=override.by, tty=override.tty
    )
    return {"ok": True, **reply}


async def _status(engine: Engine, request: Reply) -> Reply:
    RunsStatus.from_json(request)
    return {"ok": True, "workflows": engine.status()}


async def _check_fire(engine: Engine, request: Reply) -> Reply:
    fire = FireCheck.from_json(request)
    verdict = await engine.fire_check(fire.check, fire.path, fire.run, fire.stage)
    return {"ok": True, "verdict": verdict.to_dict()}
