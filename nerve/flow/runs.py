"""Driving one run: moderator, roles and output checks, each step durable before the next
begins.

The kernel owns the automaton; the worker process only evaluates the author's moderator and
roles. One step is: call the role the last decision named, ask the moderator what comes next,
then append the role's ``workflow.message`` and the ``workflow.decision`` in one commit. A
crash before that commit loses only the role call in flight, which runs again on resume; a
role whose message is in the log never runs again. The moderator is told the number of role
messages so far; a role picked once ``max_rounds`` messages exist fails the run
(``reason: max_rounds``), as do an unknown role, an exception, a broken return value and a
call past the workflow's ``role_timeout`` (default 10 minutes; the worker is then killed and
its other runs resume on a fresh one). When the moderator returns ``END`` the output checks
decide between ``completed`` and ``held`` (see :mod:`nerve.flow.judge`). In an encrypted
workspace a role's ``ctx.output_dir`` is a working folder in memory, encrypted into
``data/runs/<run>/`` when the role returns (:mod:`nerve.encdir`).
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from pathlib import Path
from typing import Any, Protocol

from nerve.checks.manifest import CheckManifest
from nerve.errors import CheckError, LogError
from nerve.flow.contract import END, Message
from nerve.flow.history import RunRecord
from nerve.flow.judge import declared_outputs, evaluate, run_folder
from nerve.flow.process import WorkerHandle
from nerve.flow.record import DECISION, MESSAGE, QUESTION, draft, status
from nerve.log.drafts import Draft
from nerve.privacy.cut import shorten

__all__ = ["RunNeeds", "StepFailed", "drive", "judge"]


class RunNeeds(Protocol):
    """What a run needs from its workflow's manager."""

    name: str
    root: Path

    async def emit(self, drafts: Sequence[Draft]) -> None: ...

    def timeout_s(self, handle: WorkerHandle) -> float: ...

    def output_manifests(self, ids: Sequence[str]) -> list[CheckManifest]: ...

    def output_check_ids(self, handle: WorkerHandle) -> list[str]: ...

    async def timed_out(self, handle: WorkerHandle) -> None: ...


class StepFailed(Exception):
    """A step cannot go on: the run fails with this reason (after ``before`` is recorded)."""

    def __init__(self, reason: str, *, traceback: str = "", before: Sequence[Draft] = ()) -> None:
        super().__init__(reason)
        self.reason = reason
        self.traceback = traceback
        self.before = list(before)


async def drive(needs: RunNeeds, record: RunRecord, handle: WorkerHandle) -> str:
    """Carry ``record`` on to its next stop; the outcome (completed, failed, held, waiting).

    Raises ``WorkerDied`` when the worker exits mid-call (the caller marks the run crashed).
    """
    runner = _Runner(needs, record, handle)
    try:
        return await runner.go()
    except StepFailed as exc:
        extra = {"traceback": exc.traceback} if exc.traceback else {}
        failed = status(record.run, needs.name, "failed", exc.reason, **extra)
        await needs.emit([*exc.before, failed])
        return "failed"


class _Runner:
    def __init__(self, needs: RunNeeds, record: RunRecord, handle: WorkerHandle) -> None:
        self.needs = needs
        self.record = record
        self.handle = handle
        assert record.start is not None
        self.start = record.start

    async def go(self) -> str:
        if self.record.next_role is None:
            after = self.record.messages[-1] if self.record.messages else None
            decision = await self.decide(after)
            if self.start.dry_run:
                done = status(
                    self.record.run,
                    self.needs.name,
                    "completed",
                    "dry run",
                    dry_run=True,
                    decision=self.record.next_role,
                )
                await self.needs.emit([decision, done])
                return "completed"
            await self.needs.emit([decision])
        while self.record.next_role != END:
            asked = await self.step(str(self.record.next_role))
            if asked:
                return "waiting"
        return await self.finish()

    async def decide(self, after: Message | None, before: Sequence[Draft] = ()) -> Draft:
        """Ask the moderator; the ``workflow.decision`` draft (``record.next_role`` updated)."""
        context: dict[str, Any] = (
            {"kind": "start", "start": self.start.to_json()}
            if after is None
            else {"kind": "step", "message": after.to_json()}
        )
        msg = {
            "op": "moderate",
            "context": context,
            "round": self.record.round,
            "max_rounds": self.start.max_rounds,
        }
        reply = await self.call(msg, "moderator", before)
        nxt = str(reply["next"])
        self.record.next_role = nxt
        payload = {
            "run": self.record.run,
            "workflow": self.needs.name,
            "round": self.record.round,
            "context": context["kind"],
            "after": after.role if after else None,
            "next": nxt,
        }
        line = (
            f"{self.record.run}: round {self.record.round}: {payload['after'] or 'start'} → {nxt}"
        )
        return draft(DECISION, self.record.run, line, payload)

    def refuse(self, role: str) -> None:
        roles = self.handle.definition.get("roles") or []
        if role not in roles:
            raise StepFailed(f"unknown role {role!r} (roles: {', '.join(roles)})")
        if self.record.round >= self.start.max_rounds:
            raise StepFailed(f"max_rounds: {self.start.max_rounds} role messages reached")

    async def step(self, role: str) -> bool:
        """Run ``role`` and record it; True if it asked a question (the run now waits)."""
        self.refuse(role)
        try:
            folder = run_folder(self.needs.root, self.record.run)
            work = await asyncio.to_thread(folder.enter)
        except LogError as exc:  # an encrypted workspace with no key or memory to work in
            raise StepFailed(str(exc)) from None
        try:
            reply = await self.call(self.role_request(role, work), f"role {role!r}")
        finally:
            await asyncio.to_thread(folder.leave)  # encrypted before the step is recorded
        if "ask" in reply:
            await self.ask(role, reply["ask"])
            return True
        message = Message(role, reply["content"], reply["meta"], self.record.round + 1)
        said = self.message_draft(message)
        self.record.messages.append(message)
        self.record.answer = None
        decision = await self.decide(message, before=[said])
        await self.needs.emit([said, decision])
        return False

    def role_request(self, role: str, work: Path) -> dict[str, Any]:
        answer = self.record.answer
        ctx = {
            "run": self.record.run,
            "workflow": self.needs.name,
            "round": self.record.round + 1,
            "output_dir": str(work),
            "answer": answer if answer and answer.get("role") == role else None,
        }
        messages = [m.to_json() for m in self.record.messages]
        return {
            "op": "role",
            "role": role,
            "start": self.start.to_json(),
            "messages": messages,
            "ctx": ctx,
        }

    def message_draft(self, message: Message) -> Draft:
        text = message.content.strip()
        first = shorten(text.splitlines()[0], 200) if text else ""
        line = f"{self.record.run}: #{message.round} {message.role}: {first}"
        payload = {"run": self.record.run, "workflow": self.needs.name, **message.to_json()}
        return draft(MESSAGE, self.record.run, line, payload)

    async def ask(self, role: str, ask: dict[str, Any]) -> None:
        run = self.record.run
        payload = {
            "run": run,
            "workflow": self.needs.name,
            "role": role,
            "round": self.record.round + 1,
            **ask,
        }
        line = shorten(f"{run}: {role} asks: {ask['question']}", 500)
        question = draft(QUESTION, run, line, payload)
        waiting = status(run, self.needs.name, "waiting", f"{role} asked a question")
        await self.needs.emit([question, waiting])
        self.record.question, self.record.status = payload, "waiting"

    async def call(self, msg: dict[str, Any], what: str, before: Sequence[Draft] = ()) -> Any:
        timeout = self.needs.timeout_s(self.handle)
        try:
            reply = await self.handle.call(msg, timeout)
        except TimeoutError:
            await self.needs.timed_out(self.handle)
            raise StepFailed(f"{what} exceeded its {timeout:g} s timeout", before=before) from None
        if not reply.get("ok"):
            trace = str(reply.get("traceback") or "")
            raise StepFailed(f"{what}: {reply.get('error')}", traceback=trace, before=before)
        return reply

    async def finish(self) -> str:
        outputs = declared_outputs(
            self.handle.definition.get("outputs") or [], self.record.messages
        )
        try:
            ids = self.needs.output_check_ids(self.handle)
            manifests = self.needs.output_manifests(ids)
        except CheckError as exc:
            raise StepFailed(str(exc)) from None
        autonomous = self.handle.definition.get("autonomous") is True
        try:
            return await judge(self.needs, self.record.run, outputs, ids, manifests, autonomous)
        except LogError as exc:
            raise StepFailed(str(exc)) from None


async def judge(
    needs: RunNeeds,
    run: str,
    outputs: Sequence[str],
    ids: Sequence[str],
    manifests: list[CheckManifest],
    autonomous: bool = False,
) -> str:
    """Fire the output checks on ``outputs`` and record ``completed`` or ``held``; the new status.

    ``autonomous`` (the workflow says no person reads its checks) fires only blocking checks;
    a recheck, asked for by a person, fires them all.
    """
    output_checks = [m for m in manifests if m.fire_on == "gate"]
    reasons: list[dict[str, Any]] = []
    if output_checks and outputs:
        reasons = await evaluate(
            needs.emit,
            root=needs.root,
            run=run,
            workflow=needs.name,
            outputs=outputs,
            manifests=output_checks,
            autonomous=autonomous,
        )
    facts = {"outputs": list(outputs), "checks": list(ids)}
    if not reasons:
        await needs.emit([status(run, needs.name, "completed", None, **facts)])
        return "completed"
    await needs.emit([status(run, needs.name, "held", _summary(reasons), reasons=reasons, **facts)])
    return "held"


def _summary(reasons: Sequence[dict[str, Any]]) -> str:
    parts = [
        f"{r['check']} on {Path(r['path']).name}: {r['reason']}"
        if "check" in r
        else f"{r['output']}: {r['reason']}"
        for r in reasons
    ]
    return shorten(f"gate refused: {'; '.join(parts)}", 400)
