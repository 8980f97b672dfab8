"""One workflow's runs: concurrency slots, the queue, its worker process, crashes and drains.

**Slots.** ``concurrency`` runs of a workflow hold a slot at once: a run holds one from
``started`` until it completes, fails or is held, including while it is ``waiting`` for an
answer (its thread is still open). ``held`` runs have finished their roles and hold none.
When all slots are taken, ``overlap`` decides: ``skip`` (the default; old ``overflow: drop``)
records the new run ``dropped``; ``buffer_one`` queues it unless a run is already queued
(then it is dropped); ``buffer_all`` (old ``overflow: queue``) queues it, and a queue already
``max_queue`` long evicts its oldest run, recorded as ``dropped`` (seed 001: "overflow: queue
evicted a queued item when the queue was full"); with ``max_queue: 0`` the new run itself is
dropped; ``cancel_other`` stops the oldest running run (recorded ``interrupted``, naming the
new one) and starts the new one in its slot; ``allow_all`` starts it anyway, past
``concurrency``. A dry run takes no
slot: it records the start frame and the moderator's first decision, then ``completed``.

**Crashes.** The worker is spawned on first use (at start-up for workflows named in
``nerve.yaml``, so a bad definition is reported at once as ``workflow.error``). If it exits
unexpectedly, its runs in flight are marked ``crashed``, a ``workflow.restart`` is recorded,
and each is rebuilt from the log and resumed on a fresh worker (``started``, ``resumed``).
Five crashes within sixty seconds stop that: a ``workflow.backoff`` event, the runs stay
``crashed`` and new runs fail, until a reload or a daemon restart.

**Reload.** When a workflow's files, its ``nerve.yaml`` entry or the set of check ids change,
the old worker is drained: its runs in flight carry on there (a run never switches definitions
mid-step) while new runs get a new worker; after ``drain_timeout`` (default 30 s) the old one
is killed and runs still on it become ``interrupted``.

**Idle.** A worker that has carried no call for ``idle_exit`` (default 60 s; ``0`` keeps it)
exits, and the next run spawns a fresh one: a daemon that rarely runs workflows does not keep
an interpreter waiting for them.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections import deque
from collections.abc import Coroutine, Sequence
from pathlib import Path
from typing import Any, Protocol

import blake3

from nerve.checks.catalog import lookup
from nerve.checks.manifest import CheckManifest
from nerve.config.models import WorkflowConfig
from nerve.errors import CheckError, WorkflowError
from nerve.flow.contract import StartFrame
from nerve.flow.history import RunRecord
from nerve.flow.judge import run_dir
from nerve.flow.process import WorkerDied, WorkerHandle
from nerve.flow.record import BACKOFF, ERROR, RESTART, STARTED, draft, status
from nerve.flow.runs import drive
from nerve.log.drafts import Draft
from nerve.privacy.cut import shorten

log = logging.getLogger(__name__)

DEFAULT_ROLE_TIMEOUT_S = 600.0
DEFAULT_DRAIN_MS = 30_000
DEFAULT_IDLE_MS = 60_000
CRASH_WINDOW_S = 60.0
CRASHES_BEFORE_BACKOFF = 5


class FlowNeeds(Protocol):
    """What a workflow's manager needs from the engine."""

    root: Path
    role_timeout_s: float
    checks: dict[str, CheckManifest]

    def config_for(self, name: str) -> WorkflowConfig: ...

    def find(self, name: str) -> Path: ...

    async def emit(self, drafts: Sequence[Draft]) -> None: ...

    def clean(self, text: str) -> str: ...

    async def load_runs(self, runs: Sequence[str]) -> list[RunRecord]: ...


def start_frame(record: RunRecord) -> StartFrame:
    req = record.request
    return StartFrame(
        run=record.run,
        workflow=record.workflow,
        prompt=str(req.get("prompt") or ""),
        max_rounds=int(req["max_rounds"]),
        source=str(req.get("source") or "cli"),
        sense=req.get("sense"),
        dry_run=bool(req.get("dry_run")),
    )


class Flow:
    def __init__(self, engine: FlowNeeds, name: str) -> None:
        self.engine = engine
        self.name = name
        self.root = engine.root
        self.handle: WorkerHandle | None = None
        self.error: str | None = None
        self.active: dict[str, RunRecord] = {}
        self.queue: deque[RunRecord] = deque()
        self.tasks: dict[str, asyncio.Task[None]] = {}
        self.bound: dict[str, WorkerHandle] = {}
        self.stranded: dict[WorkerHandle, list[str]] = {}
        self.crashes: deque[float] = deque()
        self.backed_off = False
        self.crashed_runs: list[str] = []
        self.draining: set[WorkerHandle] = set()
        self._spawning: asyncio.Task[WorkerHandle] | None = None
        self._background: set[asyncio.Task[Any]] = set()
        self._idle: asyncio.TimerHandle | None = None
        self._used = 0.0
        self.idle_kept = 0  # idle checks that found the worker in use (shown in status)
        self.fingerprint = self._fingerprint()

    @property
    def config(self) -> WorkflowConfig:
        return self.engine.config_for(self.name)

    # -- what runs need (runs.RunNeeds) ------------------------------------------------

    async def emit(self, drafts: Sequence[Draft]) -> None:
        await self.engine.emit(drafts)

    def timeout_s(self, handle: WorkerHandle) -> float:
        own = handle.definition.get("role_timeout")
        return float(own) if own else self.engine.role_timeout_s

    def output_check_ids(self, handle: WorkerHandle) -> list[str]:
        return list(dict.fromkeys([*self.config.checks, *handle.definition.get("checks", [])]))

    def output_manifests(self, ids: Sequence[str]) -> list[CheckManifest]:
        return [lookup(self.engine.checks, check_id) for check_id in ids]

    async def timed_out(self, handle: WorkerHandle) -> None:
        await handle.kill("timeout")

    # -- admission ---------------------------------------------------------------------

    async def submit(self, record: RunRecord) -> dict[str, Any]:
        """Admit a new run (its ``request`` filled in); the status it got."""
        cfg, req = self.config, {"request": record.request}
        refusal = self.error or (
            f"workflow {self.name!r} is backed off after repeated crashes"
            if self.backed_off
            else None
        )
        if refusal is not None:
            await self.emit([status(record.run, self.name, "failed", refusal, **req)])
            return {"status": "failed", "error": refusal}
        if record.request.get("dry_run"):
            return await self._dry_run(record)
        policy = cfg.policy
        if len(self.active) < cfg.concurrency or policy == "allow_all":
            await self._launch(record, first=True)
            return {"status": "started"}
        if policy == "cancel_other" and await self._cancel_oldest(record.run):
            await self._launch(record, first=True)
            return {"status": "started"}
        full = policy == "buffer_one" and self.queue
        if policy in ("skip", "cancel_other") or cfg.max_queue == 0 or full:
            why = f"all {cfg.concurrency} slot(s) busy (overlap: {policy})"
            if full:
                why = f"a run is already buffered (overlap: {policy})"
            await self.emit([status(record.run, self.name, "dropped", why, **req)])
            return {"status": "dropped", "reason": why}
        return await self._enqueue(record)

    async def _cancel_oldest(self, by: str) -> bool:
        """Stop the oldest active run for ``by`` (``cancel_other``); False if none can be."""
        if not self.active:
            return False
        run = next(iter(self.active))
        task = self.tasks.pop(run, None)
        if task is not None:
            task.cancel()
            await asyncio.gather(task, return_exceptions=True)
        self.active.pop(run, None)
        why = f"cancelled for {by} (overlap: cancel_other)"
        await self.emit([status(run, self.name, "interrupted", why, cancelled_by=by)])
        return True

    async def _enqueue(self, record: RunRecord) -> dict[str, Any]:
        drafts = []
        if len(self.queue) >= self.config.max_queue:
            evicted = self.queue.popleft()
            why = f"evicted from a full queue (max_queue: {self.config.max_queue}) by {record.run}"
            drafts.append(status(evicted.run, self.name, "dropped", why))
        self.queue.append(record)
        why = f"waiting for one of {self.config.concurrency} slot(s)"
        drafts.append(status(record.run, self.name, "queued", why, request=record.request))
        await self.emit(drafts)
        return {"status": "queued"}

    async def _launch(self, record: RunRecord, *, first: bool = False, why: str = "") -> None:
        """Give ``record`` a slot, record that it started, and drive it in a task."""
        self.active[record.run] = record
        record.status = "started"
        if record.start is None:
            await self.emit(self._opening(record, None, first=first))
        else:
            await self.emit([status(record.run, self.name, "started", why, resumed=True)])
        self.start_task(record)

    def _opening(self, record: RunRecord, why: str | None, *, first: bool) -> list[Draft]:
        """The run's first ``started`` status and its start frame (its folder made)."""
        record.start = start_frame(record)
        self.output_dir(record.run).mkdir(parents=True, exist_ok=True)
        extra = {"request": record.request} if first else {}
        line = f"{record.run}: start frame: {shorten(record.start.prompt, 200)}"
        return [
            status(record.run, self.name, "started", why, **extra),
            draft(STARTED, record.run, line, record.start.to_json()),
        ]

    def start_task(self, record: RunRecord) -> None:
        """Drive ``record`` in a task of its own (it already holds a slot)."""
        task = asyncio.get_running_loop().create_task(self._run(record), name=record.run)
        self.tasks[record.run] = task

    async def _dry_run(self, record: RunRecord) -> dict[str, Any]:
        await self.emit(self._opening(record, "dry run", first=True))
        try:
            outcome = await drive(self, record, await self.worker())
        except (WorkflowError, WorkerDied) as exc:
            await self.emit([status(record.run, self.name, "failed", str(exc))])
            return {"status": "failed", "error": str(exc)}
        return {"status": outcome, "decision": record.next_role}

    # -- a run's task ------------------------------------------------------------------

    async def _run(self, record: RunRecord) -> None:
        run, outcome = record.run, "failed"
        try:
            outcome = await self._drive(record)
        except asyncio.CancelledError:
            outcome = "cancelled"
            raise
        except Exception as exc:  # a bug of ours must not take the daemon down
            log.exception("workflow run %s", run)
            await self.emit([status(run, self.name, "failed", f"internal error: {exc!r}")])
        finally:
            self.tasks.pop(run, None)
            self.bound.pop(run, None)
            if outcome in ("completed", "failed", "held"):
                self._release(run)

    async def _drive(self, record: RunRecord) -> str:
        try:
            handle = await self.worker()
        except WorkflowError as exc:
            await self.emit([status(record.run, self.name, "failed", str(exc))])
            return "failed"
        self.bound[record.run] = handle
        try:
            return await drive(self, record, handle)
        except WorkerDied:
            self.stranded.setdefault(handle, []).append(record.run)
            return "crashed"

    def _release(self, run: str) -> None:
        self.active.pop(run, None)
        if self.queue:
            self._background_task(self._fill())

    async def _fill(self) -> None:
        while self.queue and len(self.active) < self.config.concurrency and not self.backed_off:
            await self._launch(self.queue.popleft())

    def _background_task(self, coro: Coroutine[Any, Any, Any]) -> None:
        task = asyncio.get_running_loop().create_task(coro)
        self._background.add(task)
        task.add_done_callback(self._background.discard)

    # -- the worker --------------------------------------------------------------------

    async def worker(self) -> WorkerHandle:
        """The live worker, spawned if needed; ``WorkflowError`` if it cannot be."""
        self._used = time.monotonic()
        if self.handle is not None and not self.handle.dead:
            return self.handle
        if self.error is not None:
            raise WorkflowError(self.error)
        if self.backed_off:
            raise WorkflowError(f"workflow {self.name!r} is backed off after repeated crashes")
        if self._spawning is None or self._spawning.done():
            self._spawning = asyncio.get_running_loop().create_task(self._spawn_worker())
        return await asyncio.shield(self._spawning)

    async def _spawn_worker(self) -> WorkerHandle:
        handle: WorkerHandle | None = None
        try:
            path = self.engine.find(self.name)
            handle = WorkerHandle(self.name, path, self.root, self._exited, self.engine.clean)
            await handle.start()
            ids = self.output_check_ids(handle)
            self.output_manifests(ids)  # an unknown check id is a load error
        except (WorkflowError, CheckError) as exc:
            if handle is not None:
                await handle.kill("load")
            error = f"workflow {self.name!r}: {exc}" if self.name not in str(exc) else str(exc)
            payload = {"workflow": self.name, "error": error}
            line = shorten(error.splitlines()[0], 300)
            self.error = self.engine.clean(error)  # status shows it: redacted like the record
            await self.emit([draft(ERROR, self.name, line, payload)])
            raise WorkflowError(self.error) from None
        self.handle = handle
        self._arm_idle()
        return handle

    def _idle_ms(self) -> int:
        limit = self.config.idle_exit
        return DEFAULT_IDLE_MS if limit is None else int(limit)

    def _arm_idle(self) -> None:
        if self._idle is not None:
            self._idle.cancel()
        self._idle = None
        if self._idle_ms() > 0 and self.handle is not None:
            loop = asyncio.get_running_loop()
            self._idle = loop.call_later(self._idle_ms() / 1000, self._retire_if_idle)

    def _retire_if_idle(self) -> None:
        """Let the worker go if nothing used it for ``idle_exit``; else look again later."""
        self._idle, handle = None, self.handle
        if handle is None or handle.dead:
            return
        quiet_s = time.monotonic() - self._used
        on_it = any(h is handle for h in self.bound.values())
        if handle.busy or on_it or self.queue or quiet_s * 1000 < self._idle_ms():
            self.idle_kept += 1
            self._arm_idle()
            return
        self.handle = None
        self._background_task(handle.kill("idle"))

    async def _exited(self, handle: WorkerHandle) -> None:
        """The worker process is gone: settle the runs it carried."""
        if handle.kill_reason in ("stop", "load", "idle"):
            return
        if self.handle is handle:
            self.handle = None
        self.draining.discard(handle)
        bound = [
            self.tasks[r] for r, h in list(self.bound.items()) if h is handle and r in self.tasks
        ]
        await asyncio.gather(*bound, return_exceptions=True)
        stranded = self.stranded.pop(handle, [])
        if handle.kill_reason == "drain":
            await self._interrupt(stranded)
            return
        await self._crashed(handle, stranded)

    async def _interrupt(self, runs: list[str]) -> None:
        why = "the workflow was reloaded and its old worker drained"
        await self.emit([status(run, self.name, "interrupted", why) for run in runs])
        for run in runs:
            self._release(run)

    async def _crashed(self, handle: WorkerHandle, runs: list[str]) -> None:
        why = f"worker pid {handle.pid} exited with code {handle.exit_code}"
        if handle.kill_reason == "timeout":
            why = f"worker pid {handle.pid} killed after a role timed out"
        drafts = [status(run, self.name, "crashed", why) for run in runs]
        if handle.kill_reason is None and self._count_crash():
            await self._back_off(drafts, runs, why)
            return
        payload = {
            "workflow": self.name,
            "old_pid": handle.pid,
            "exit_code": handle.exit_code,
            "reason": why,
            "runs": runs,
        }
        line = f"workflow {self.name}: {why}; respawning"
        await self.emit([*drafts, draft(RESTART, self.name, line, payload)])
        await self._resume(runs, "resumed after the worker crashed")
        if not runs:
            self._background_task(self._respawn_quietly())

    async def _back_off(self, drafts: list[Draft], runs: list[str], why: str) -> None:
        """Too many crashes: record it, and leave the runs crashed without a slot."""
        payload = {
            "workflow": self.name,
            "crashes": len(self.crashes),
            "window_s": CRASH_WINDOW_S,
            "runs": runs,
            "reason": why,
        }
        line = f"workflow {self.name}: {len(self.crashes)} crashes in 60 s; not respawning"
        await self.emit([*drafts, draft(BACKOFF, self.name, line, payload)])
        self.crashed_runs += runs
        for run in runs:
            self.active.pop(run, None)

    def _count_crash(self) -> bool:
        """Note one crash; True when that makes five within the window (stop respawning)."""
        now = time.monotonic()
        self.crashes.append(now)
        while self.crashes and now - self.crashes[0] > CRASH_WINDOW_S:
            self.crashes.popleft()
        self.backed_off = len(self.crashes) >= CRASHES_BEFORE_BACKOFF
        return self.backed_off

    async def _respawn_quietly(self) -> None:
        with contextlib.suppress(WorkflowError):
            await self.worker()

    async def _resume(self, runs: Sequence[str], why: str) -> None:
        for record in await self.engine.load_runs(runs):
            await self._launch(record, why=why)

    # -- recovery, reload, stop --------------------------------------------------------

    def restore(self, record: RunRecord) -> bool:
        """Take back a run found unfinished in the log; True if it must be resumed."""
        if record.status == "queued":
            self.queue.append(record)
            return False
        self.active[record.run] = record
        return record.status in ("started", "crashed")

    async def recover(self, records: Sequence[RunRecord]) -> None:
        for record in records:
            await self._launch(record, why="resumed after a daemon restart")
        await self._fill()

    async def reconfigure(self) -> None:
        """After a reload: drain the old worker if the definition changed; lift a backoff."""
        fingerprint = await asyncio.to_thread(self._fingerprint)
        changed, self.fingerprint = fingerprint != self.fingerprint, fingerprint
        if changed:
            self.error = None
            if self.handle is not None:
                old, self.handle = self.handle, None
                self.draining.add(old)
                self._background_task(self._drain(old))
        if self.backed_off or self.crashed_runs:
            self.backed_off, runs, self.crashed_runs = False, self.crashed_runs, []
            self.crashes.clear()
            await self._resume(runs, "resumed after a reload")
        await self._fill()  # the reload may have raised the concurrency

    def _fingerprint(self) -> str:
        hasher = blake3.blake3(self.config.model_dump_json().encode())
        hasher.update(",".join(self.engine.checks).encode())
        try:
            folder = self.engine.find(self.name).parent
        except WorkflowError as exc:
            hasher.update(str(exc).encode())
            return str(hasher.hexdigest())
        for path in sorted(folder.rglob("*.py")):
            with contextlib.suppress(OSError):
                hasher.update(str(path).encode() + b"\0" + path.read_bytes())
        return str(hasher.hexdigest())

    async def _drain(self, old: WorkerHandle) -> None:
        limit = self.config.drain_timeout
        deadline = time.monotonic() + (DEFAULT_DRAIN_MS if limit is None else limit) / 1000
        while time.monotonic() < deadline and any(h is old for h in self.bound.values()):
            await asyncio.sleep(0.05)
        await old.kill("drain")

    async def close(self) -> None:
        """Daemon stop: runs stay ``started`` in the log and resume on the next start."""
        if self._idle is not None:
            self._idle.cancel()
        for task in [*self.tasks.values(), *self._background]:
            task.cancel()
        await asyncio.gather(*self.tasks.values(), *self._background, return_exceptions=True)
        for handle in [self.handle, *self.draining]:
            if handle is not None:
                await handle.close()

    def output_dir(self, run: str) -> Path:
        return run_dir(self.root, run)
