"""The senses at run time: one worker per group, the scheduler that dispatches to them, and
what their replies store (see ``nerve.runtime.results``).

:class:`Sensing` is each group's :class:`~nerve.runtime.groups.GroupNeeds`: it restores each
sense's state when its group loads, stores a batch of replies as one commit before memory
moves, publishes signals on the bus, and records failures and restarts.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Awaitable, Callable, Mapping
from pathlib import Path
from typing import Any, Protocol

import pyarrow as pa

from nerve.contract import WorkflowTrigger
from nerve.errors import SenseError, did_you_mean, report
from nerve.log.drafts import Draft
from nerve.runtime import journal
from nerve.runtime.bus import SignalBus
from nerve.runtime.committer import Columns
from nerve.runtime.groups import GroupWorker, Job, Reply
from nerve.runtime.results import Outcome, Private, Results, Screens, SenseStats, Workflow
from nerve.runtime.scheduler import Scheduler
from nerve.runtime.senses import Layout, StoredState
from nerve.runtime.skips import Skips

ERROR_REPEAT_S = 60.0


class Store(Protocol):
    """Where results go: one commit per batch, and nerve's own records."""

    async def append_columns(self, columns: Columns) -> pa.Table: ...

    async def append(self, drafts: list[Draft]) -> pa.Table: ...

    async def record(self, kind: str, subject: str, line: str, payload: Any) -> pa.Table: ...


class Gate(Screens, Protocol):
    """The pause switch, as the senses see it."""

    @property
    def paused(self) -> bool: ...

    def describe(self) -> str: ...


OnWorkflow = Callable[[WorkflowTrigger, str], Awaitable[None]]


class Sensing:
    def __init__(
        self,
        root: Path,
        rules: Private,
        gate: Gate,
        skips: Skips,
        workflow: Workflow,
        on_workflow: OnWorkflow,
    ) -> None:
        self.root = root
        self._store: Store | None = None
        self._rules = rules
        self.gate = gate
        self.skips = skips
        self.bus = SignalBus()
        self.results = Results(rules, gate, self.bus.listened, workflow)
        self.groups: dict[str, GroupWorker] = {}
        self.scheduler: Scheduler | None = None
        self._on_workflow = on_workflow
        self._stored: Mapping[str, StoredState] = {}
        self._ended_cleanly = True  # did the previous daemon record daemon.stopped?
        self._error_lines = journal.Repeats(ERROR_REPEAT_S)
        self._hooks: asyncio.Task[None] | None = None  # the newest run request handed on

    @property
    def stats(self) -> dict[str, SenseStats]:
        return self.results.stats

    def start(
        self, store: Store, stored: Mapping[str, StoredState], ended_cleanly: bool
    ) -> Scheduler:
        """Begin with the writer, the states the log holds, and a scheduler (it needs the
        running loop)."""
        self._store, self._stored, self._ended_cleanly = store, stored, ended_cleanly
        self.scheduler = Scheduler(self.dispatch, on_skip=self.skips.note)
        return self.scheduler

    async def load(self, lay: Layout, *, first: bool, down_since_ns: int | None) -> None:
        """Replace every group by the layout's (a sense's memory and counters are kept)."""
        for name, why in lay.missing.items():
            await self.sense_error(name, "load", why)
        old, self.groups = self.groups, {}
        await asyncio.gather(*(g.stop() for g in old.values()), return_exceptions=True)
        for group, specs in lay.specs.items():
            for name in specs:
                self.stats.setdefault(name, SenseStats(group)).group = group
            self.groups[group] = GroupWorker(group, specs, self.root, self, clean=self.clean)
        await asyncio.gather(*(g.start() for g in self.groups.values()))
        scheduler = self._scheduler()
        scheduler.load(lay.plans, keep_grace=not first, down_since_ns=down_since_ns)
        self._listen(scheduler)

    def _listen(self, scheduler: Scheduler) -> None:
        self.bus.clear()
        for source, listeners in scheduler.subscribers().items():
            for listener in listeners:
                self.bus.subscribe(source, self._deliver_to(listener))

    def _deliver_to(self, listener: str) -> Callable[[str], None]:
        def deliver(source: str) -> None:
            self._scheduler().trigger(listener, f"on:{source}")

        return deliver

    @property
    def store(self) -> Store:
        if self._store is None:
            raise RuntimeError("Sensing.start() was not called")
        return self._store

    def _scheduler(self) -> Scheduler:
        if self.scheduler is None:
            raise RuntimeError("Sensing.start() was not called")
        return self.scheduler

    async def stop(self) -> None:
        if self.scheduler is not None:
            self.scheduler.stop()
        await asyncio.gather(*(g.stop() for g in self.groups.values()), return_exceptions=True)
        if self._hooks is not None:  # run requests already made are handed on
            await asyncio.gather(self._hooks, return_exceptions=True)

    async def checkpoint(self) -> None:
        """Store the counts of computes not recorded yet (the daemon is stopping)."""
        columns = self.results.checkpoints()
        if len(columns):
            await self.store.append_columns(columns)

    # -- dispatch ----------------------------------------------------------------------

    def dispatch(self, sense: str, reason: str, due_ns: int) -> None:
        if self.gate.paused:
            self.skips.note(sense, "paused")
            return
        stats = self.stats.get(sense)
        worker = self.groups.get(stats.group) if stats else None
        if worker is None:
            return
        if worker.restarting is not None:  # "restarting" or "backoff"
            self.skips.note(sense, worker.restarting)
        elif not worker.enqueue(Job(sense, reason, due_ns), coalesce=reason != "catch-up"):
            self.skips.note(sense, "overlap")

    def trigger(self, sense: str) -> None:
        """A manual trigger (past throttle and grace); refused while paused or if unknown."""
        if self.gate.paused:
            raise SenseError(
                f"capture is {self.gate.describe()}; no sense computes",
                hint="`nerve resume` first",
            )
        if not self._scheduler().trigger(sense, "manual"):
            known = sorted(self.stats)
            hint = did_you_mean(sense, known) or f"the senses are: {', '.join(known) or 'none'}"
            raise SenseError(f"unknown sense {sense!r}", field="sense", hint=hint)

    # -- what the groups need ----------------------------------------------------------

    def state_json(self, sense: str) -> bytes:
        return self.results.memory.canonical(sense)

    async def on_loaded(self, group: str, loaded: dict[str, Any]) -> None:
        memory = self.results.memory
        for name, info in loaded.items():
            if not info["ok"]:
                await self.sense_error(name, "load", info["error"])
                continue
            memory.initial[name] = info["initial_state"]
            memory.state_records[name] = info.get("state_records", "changes")
            if memory.has(name):
                continue
            stored = self._stored.get(name)
            if stored is not None and not self._ended_cleanly and memory.checkpointed(name):
                stored = None  # the last checkpoint may predate readings already observed
                journal.say(f"{name}: the daemon did not stop cleanly; starting from initial_state")
            if stored is None:
                memory.set(name, info["initial_state"])
            elif stored.undecodable:
                memory.set(name, info["initial_state"])
                await self.sense_error(
                    name,
                    "state-restore",
                    "stored state is missing or undecodable; using initial_state",
                )
            else:
                memory.set(name, stored.state)

    async def on_results(self, replies: list[Reply]) -> None:
        """Store a batch's events as one commit; then memory, counters and signals move."""
        outcome = self.results.take(replies)
        self._counted(outcome)
        if len(outcome.columns):
            await self.store.append_columns(outcome.columns)  # durable before memory moves
        for sense in self.results.stored(outcome):
            self.bus.publish(sense)
        for moved in outcome.moved:
            self.skips.computed(moved.reply.job.sense)
        for trigger, sense in outcome.workflows:
            self._hooks = asyncio.create_task(self._requested(self._hooks, trigger, sense))

    async def _requested(
        self, before: asyncio.Task[None] | None, trigger: WorkflowTrigger, sense: str
    ) -> None:
        """Hand a sense's run request on, after those before it: off the group's path, so
        its other senses' next computes do not wait for a run to be admitted."""
        if before is not None:
            with contextlib.suppress(Exception):
                await before
        try:
            await self._on_workflow(trigger, sense)
        except Exception as exc:  # reported, like a result that could not be stored
            report(f"{sense}: workflow request not handled: {type(exc).__name__}: {exc}")

    def _counted(self, outcome: Outcome) -> None:
        for sense, kind, message in outcome.errors:
            self._count_error(sense, kind, message)
        for sense, reason in outcome.skipped:
            self.skips.note(sense, reason, by="compute")

    def _count_error(self, sense: str, kind: str, message: str) -> None:
        self.results.counted_error(sense, kind, message)
        self._error_lines.warn(sense, f"sense {sense}: {kind}: {message}")  # not every compute

    async def on_failure(self, job: Job, kind: str, message: str) -> None:
        await self.sense_error(job.sense, kind, message)

    async def sense_error(self, sense: str, kind: str, message: str) -> None:
        """Count and store a ``sense.error`` (the sense's state stays as it was)."""
        message, draft = self.results.error_record(sense, kind, message)
        self._count_error(sense, kind, message)
        await self.store.append([draft])

    def clean(self, text: str) -> str:
        """Text from a sense (a print, a traceback) redacted for the daemon log."""
        return self.results.policy.clean(text)

    async def on_restart(self, group: str, reason: str, pid: int | None) -> None:
        worker = self.groups.get(group)
        new_pid = worker.pid if worker else None
        shown = self.clean(reason)  # a worker's stray line may quote what a sense wrote
        journal.warn(f"group {group} worker restarted (pid {pid} -> {new_pid}): {shown}")
        payload = {"group": group, "reason": reason, "old_pid": pid, "new_pid": new_pid}
        line = f"group {group} worker restarted: {reason}"
        await self.store.record("sense.restart", group, line, payload)
