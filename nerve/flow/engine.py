"""The workflow engine: the kernel extension that runs workflows and fires their checks.

The kernel loads it (``nerve.runtime.extensions``) and calls ``start``/``stop``, ``on_config``
after a hot reload, ``on_workflow_requested`` when a sense's compute asked for a run (the
kernel has already recorded ``workflow.requested``), and ``request_run`` for the CLI and the
socket (recorded here). Each workflow has a :class:`~nerve.flow.manager.Flow`; every run's
events are written through the kernel's committer, so the engine never opens the log itself.

On start the engine reads the ``workflow_runs`` projection and takes back every unfinished
run: ``started`` and ``crashed`` runs resume from their logged messages, ``waiting`` runs wait
again (an answer resumes them), ``queued`` runs queue again in request order, ``held`` runs
stay held. Nothing but the log is consulted.

IPC requests (``nerve.flow.control``): ``workflow-answer``, ``workflow-recheck``,
``workflow-override``, ``workflow-status`` and ``check-fire``.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from nerve.checks.catalog import catalog, check_dirs, lookup
from nerve.checks.dispatch import Verdict
from nerve.checks.manifest import CheckManifest
from nerve.config.models import WorkflowConfig
from nerve.contract import WorkflowTrigger
from nerve.errors import WorkflowError
from nerve.flow import human
from nerve.flow.dedupe import DEDUPED, Keys
from nerve.flow.definition import find_workflow
from nerve.flow.history import RunRecord, load_run
from nerve.flow.judge import WriteChecks, fire_one
from nerve.flow.manager import DEFAULT_ROLE_TIMEOUT_S, Flow
from nerve.flow.record import ERROR, REQUESTED, draft, new_run_id
from nerve.log.drafts import Draft
from nerve.privacy.cut import shorten
from nerve.resources import bundled

if TYPE_CHECKING:
    from nerve.runtime.extensions import ExtensionNeeds

_OPEN = "('queued', 'started', 'crashed', 'waiting')"


class WorkflowEngine:
    def __init__(self, *, role_timeout_s: float = DEFAULT_ROLE_TIMEOUT_S) -> None:
        self.role_timeout_s = role_timeout_s
        self.flows: dict[str, Flow] = {}
        self.checks: dict[str, CheckManifest] = {}
        self.busy: set[str] = set()
        self._spawns: set[asyncio.Task[Any]] = set()
        self._kernel: ExtensionNeeds | None = None
        self.root = Path(".")
        self.keys = Keys()  # dedupe keys and the runs that claimed them

    @property
    def kernel(self) -> ExtensionNeeds:
        if self._kernel is None:
            raise RuntimeError("the workflow engine has not started")
        return self._kernel

    # -- kernel hooks ------------------------------------------------------------------

    async def start(self, kernel: ExtensionNeeds) -> None:
        self._kernel, self.root = kernel, kernel.ws.root
        self.writes = WriteChecks(self.emit, self.root, kernel.log.node)
        kernel.committer.listeners.append(self.writes.listener())
        await self._load_checks()
        await asyncio.to_thread(lambda: self.keys.load(kernel.connect()))
        await self._recover()
        self._spawn_configured()

    def handlers(self) -> dict[str, Any]:
        """The socket requests the engine answers (``nerve.flow.control``)."""
        from nerve.flow.control import handlers

        return dict(handlers(self))

    async def stop(self, kernel: ExtensionNeeds) -> None:
        for task in self._spawns:
            task.cancel()
        await asyncio.gather(*self._spawns, return_exceptions=True)
        await self.writes.close()
        await asyncio.gather(*(f.close() for f in self.flows.values()), return_exceptions=True)

    async def on_config(self, kernel: ExtensionNeeds, reason: str) -> None:
        await self._load_checks()
        for name in sorted(set(self.flows) | set(kernel.config.workflows)):
            await self.flow(name).reconfigure()
        self._spawn_configured()

    async def on_workflow_requested(
        self, kernel: ExtensionNeeds, trigger: WorkflowTrigger, sense: str
    ) -> None:
        record = self._record(trigger, source="sense", sense=sense)
        if await self._deduped(trigger, record) is not None:
            return
        submit = self._admit(trigger, record)
        if trigger.dry_run:  # a dry run waits for the moderator: not on the sense's time
            task = asyncio.get_running_loop().create_task(submit)
            self._spawns.add(task)
            task.add_done_callback(self._spawns.discard)
        else:
            await submit

    async def request_run(
        self, kernel: ExtensionNeeds, trigger: WorkflowTrigger, source: str
    ) -> dict[str, Any]:
        record = self._record(trigger, source=source, sense=None)
        deduped = await self._deduped(trigger, record)
        if deduped is not None:
            return deduped
        payload = {**trigger.to_json(), **record.request, "run": record.run}
        line = f"{source} requested workflow {trigger.name}"
        await self.emit([draft(REQUESTED, trigger.name, line, payload)])
        result = await self._admit(trigger, record)
        return {"workflow": trigger.name, "run": record.run, **result}

    async def _deduped(self, trigger: WorkflowTrigger, record: RunRecord) -> dict[str, Any] | None:
        """If ``trigger.key`` already started a run (within the workflow's
        ``dedupe_window``), record ``workflow.deduped`` and say so; else claim the key."""
        if trigger.key is None:
            return None
        name, key, now = trigger.name, trigger.key, time.time_ns()
        earlier = self.keys.earlier(name, key, self.config_for(name).dedupe_window, now)
        if earlier is None:
            self.keys.claim(name, key, record.run, now)
            return None
        payload = {"workflow": name, "key": key, "earlier_run": earlier, **record.request}
        line = f"{name}: key {key!r} already started {earlier}; not started again"
        await self.emit([draft(DEDUPED, name, shorten(line, 500), payload)])
        return {"workflow": name, "run": None, "status": "deduped", "earlier_run": earlier}

    async def _admit(self, trigger: WorkflowTrigger, record: RunRecord) -> dict[str, Any]:
        """Submit the run; a run refused at once gives its key back."""
        result = await self.flow(trigger.name).submit(record)
        if trigger.key is not None and result.get("status") in ("dropped", "failed"):
            self.keys.release(trigger.name, trigger.key, record.run)
        return result

    # -- what flows need (manager.FlowNeeds) -------------------------------------------

    def config_for(self, name: str) -> WorkflowConfig:
        cfg = self.kernel.config.workflows.get(name)
        return cfg if isinstance(cfg, WorkflowConfig) else WorkflowConfig()

    def find(self, name: str) -> Path:
        dirs = [self.root / "workflows", bundled("workflows")]
        return find_workflow(name, dirs, root=self.root, path=self.config_for(name).path)

    def clean(self, text: str) -> str:
        """Text from a role (a print, a traceback) redacted for the daemon log."""
        return self.kernel.privacy.clean(text, kind="workflow.error")

    async def emit(self, drafts: Sequence[Draft]) -> None:
        """Store workflow records, redacted as nerve's own records are (a role's message,
        error or traceback may hold a secret)."""
        redact = self.kernel.privacy.redact
        await self.kernel.committer.append([redact(d) for d in drafts])

    async def load_runs(self, runs: Sequence[str]) -> list[RunRecord]:
        def read() -> list[RunRecord]:
            conn = self.kernel.connect()
            return [load_run(conn, run) for run in runs]

        return await asyncio.to_thread(read) if runs else []

    def flow(self, name: str) -> Flow:
        if name not in self.flows:
            self.flows[name] = Flow(self, name)
        return self.flows[name]

    # -- requests from people ----------------------------------------------------------

    async def answer(self, run: str, choice: str, by: str) -> dict[str, Any]:
        for flow in self.flows.values():
            if run in flow.active:
                return await human.answer(flow, run, choice, by)
        status = (await self.load_runs([run]))[0].status
        raise WorkflowError(f"run {run!r} is {status}, not waiting for an answer")

    async def recheck(self, run: str) -> dict[str, Any]:
        with self._exclusive(run):
            record = (await self.load_runs([run]))[0]
            return await human.recheck(self.flow(record.workflow), record)

    async def override(self, run: str, *, reason: str, by: str, tty: str | None) -> dict[str, Any]:
        with self._exclusive(run):
            record = (await self.load_runs([run]))[0]
            flow = self.flow(record.workflow)
            return await human.override(flow, record, reason=reason, by=by, tty=tty)

    async def fire_check(
        self, check_id: str, path: str, run: str, stage: str = "manual"
    ) -> Verdict:
        manifest = lookup(self.checks, check_id)
        return await fire_one(
            self.emit, root=self.root, manifest=manifest, path=path, run=run, stage=stage
        )

    def status(self) -> dict[str, Any]:
        return {
            name: {
                "pid": flow.handle.pid if flow.handle and not flow.handle.dead else None,
                "active": sorted(flow.active),
                "queued": [r.run for r in flow.queue],
                "backed_off": flow.backed_off,
                "error": flow.error,
                "idle_kept": flow.idle_kept,
            }
            for name, flow in sorted(self.flows.items())
        }

    # -- internals ---------------------------------------------------------------------

    @contextlib.contextmanager
    def _exclusive(self, run: str) -> Any:
        if run in self.busy:
            raise WorkflowError(f"run {run!r} is being re-checked or overridden already")
        self.busy.add(run)
        try:
            yield
        finally:
            self.busy.discard(run)

    def _record(self, trigger: WorkflowTrigger, *, source: str, sense: str | None) -> RunRecord:
        rounds = (
            trigger.max_rounds
            or self.config_for(trigger.name).max_rounds
            or self.kernel.config.max_rounds
        )
        request = {
            "prompt": trigger.prompt,
            "max_rounds": rounds,
            "dry_run": trigger.dry_run,
            "source": source,
            "sense": sense,
        }
        if trigger.key is not None:
            request["key"] = trigger.key
        return RunRecord(new_run_id(trigger.name), workflow=trigger.name, request=request)

    async def _load_checks(self) -> None:
        errors: list[str] = []
        dirs = check_dirs(self.root, bundled("workflows"))
        self.checks = await asyncio.to_thread(catalog, dirs, errors)
        self.writes.load(self.checks.values())
        for error in errors:
            payload = {"workflow": None, "error": error}
            await self.emit([draft(ERROR, "checks", shorten(error.splitlines()[0], 300), payload)])

    async def _recover(self) -> None:
        def read() -> list[RunRecord]:
            conn = self.kernel.connect()
            sql = (
                f"SELECT run FROM workflow_runs WHERE status IN {_OPEN} "
                "ORDER BY requested_ns, requested_logical"
            )
            return [load_run(conn, run) for (run,) in conn.execute(sql).fetchall()]

        resume: dict[str, list[RunRecord]] = {}
        for record in await asyncio.to_thread(read):
            if self.flow(record.workflow).restore(record):
                resume.setdefault(record.workflow, []).append(record)
        for name, flow in self.flows.items():
            await flow.recover(resume.get(name, []))

    def _spawn_configured(self) -> None:
        for name in self.kernel.config.workflows:
            flow = self.flow(name)
            if flow.handle is None and flow.error is None and not flow.backed_off:
                task = asyncio.get_running_loop().create_task(self._quiet_spawn(flow))
                self._spawns.add(task)
                task.add_done_callback(self._spawns.discard)

    async def _quiet_spawn(self, flow: Flow) -> None:
        with contextlib.suppress(WorkflowError):
            await flow.worker()
