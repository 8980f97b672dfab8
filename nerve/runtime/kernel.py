"""The kernel: the log's only writer, and the owner of everything that runs.

It rebuilds sense state from the log, runs each sense group in a worker process, schedules
computes (reflexes), carries signals on the bus, serves the IPC socket and reloads
``nerve.yaml`` and sense code when they change. Every compute, signal, error, restart and
configuration change is an event; in-memory state advances only after its event is durable.
"""

from __future__ import annotations

import asyncio
import collections
import contextlib
import functools
import json
import os
import signal
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pyarrow as pa

from nerve.canonical import canonical_json
from nerve.config import load_config
from nerve.config.issues import InvalidConfig
from nerve.config.models import NerveConfig
from nerve.contract import WorkflowTrigger
from nerve.errors import NerveError, SenseError, did_you_mean
from nerve.events import ErasedEvent, Event
from nerve.log.attest import check_batch, drafts_of_object
from nerve.log.codec import table_from_events
from nerve.log.drafts import Draft
from nerve.log.store import EventLog, manifest_state
from nerve.log.wire import draft_from_json, row_to_json, stored_event_from_json
from nerve.privacy.policy import Policy
from nerve.runtime import control, journal
from nerve.runtime.bus import SignalBus
from nerve.runtime.capture import CaptureGate
from nerve.runtime.committer import Committer
from nerve.runtime.extensions import load_extensions
from nerve.runtime.followers import Followers
from nerve.runtime.groups import GroupWorker, Job
from nerve.runtime.ipc import IpcServer
from nerve.runtime.queries import QueryChild
from nerve.runtime.scheduler import NS, Scheduler
from nerve.runtime.senses import (
    Layout,
    StoredState,
    check_sense_file,
    ended_cleanly,
    last_alive_ns,
    layout,
    stored_states,
)
from nerve.runtime.skips import Skips
from nerve.runtime.snapshot import AgentReads, Highlight
from nerve.runtime.staging import Stages
from nerve.workspace import Workspace

SEAL_CHECK_S = 1.0
SEAL_BACKOFF_MAX_S = 30.0
UPKEEP_DELAY_S = 1.0  # the first erasure upkeep, once the daemon is up
ERROR_REPEAT_S = 60.0
SKIP_FLUSH_S = 5.0  # how often folded skip counts whose minute has ended are written
# A compute that leaves the state as it was is counted, not stored; the count is stored with
# the next `sense.state`, which is written at the latest this long after the previous one
# (and when the daemon stops), so `sense history` still shows the sense running.
STATE_CHECKPOINT_NS = 600 * 1_000_000_000
HIGHLIGHTS_KEPT = 50


@dataclass
class SenseStats:
    group: str
    computes: int = 0
    errors: int = 0
    last_wall_ns: int | None = None
    last_duration_ms: float | None = None
    last_line: str = ""
    last_error: str = ""
    last_signal_ns: int | None = None
    lateness_us: list[int] = field(default_factory=list)
    unrecorded: int = 0  # computes since the last `sense.state`, not stored yet
    recorded_ns: int | None = None  # monotonic time of the last `sense.state` since start

    def to_json(self) -> dict[str, Any]:
        return {
            "group": self.group,
            "computes": self.computes,
            "errors": self.errors,
            "last_ns": self.last_wall_ns,
            "last_duration_ms": self.last_duration_ms,
            "last_line": self.last_line,
            "last_error": self.last_error,
            "last_signal_ns": self.last_signal_ns,
        }


@functools.lru_cache(maxsize=256)
def _reason(reason: str) -> bytes:
    """A signal's payload; reasons repeat, so their encoding is kept."""
    return canonical_json({"reason": reason})


async def _seed_listener(kernel: Kernel) -> IpcServer | None:
    """A second listener at the workspace root's ``nerve.sock``, where seed-era clients
    connect (replies shaped by :func:`nerve.runtime.control.seed_reply`); skipped, with a
    warning, when something else holds that path."""
    from nerve.runtime.control import SEED_SOCKET, handle, seed_reply

    path = kernel.ws.root / SEED_SOCKET
    if path.resolve() == kernel.socket_path.resolve():
        return None
    server = IpcServer(
        path,
        lambda req: handle(kernel, req, kernel.handlers),
        max_bytes=kernel.config.daemon.max_request_bytes,
        reshape=seed_reply,
    )
    try:
        await server.start()
    except (NerveError, OSError) as exc:
        journal.warn(f"no seed-compatible socket at {path}: {exc}")
        return None
    return server


def _control(kind: str, subject: str, line: str, payload: Any) -> Draft:
    return Draft.control(kind, subject, line, payload)


def _storable(text: str) -> str:
    """``text`` with anything UTF-8 cannot store (lone surrogates) shown as escapes."""
    if text.isascii():
        return text
    return text.encode("utf-8", "backslashreplace").decode("utf-8")


def _parse_each(objects: list[Any], parse: Callable[[Any], Any], first: int = 0) -> list[Any]:
    """``parse`` every object of a request; an error names the event (1-based, counting
    ``first`` events sent before this request) and the field."""
    out = []
    for index, obj in enumerate(objects, start=first):
        try:
            out.append(parse(obj))
        except NerveError as exc:
            field = f"events[{index}]" + (f".{exc.field}" if exc.field else "")
            raise exc.located(f"event {index + 1}", field=field) from None
    return out


class Kernel:
    def __init__(self, ws: Workspace, *, with_ipc: bool = True, watch: bool = True) -> None:
        self.ws = ws
        self.with_ipc = with_ipc
        self.seed_ipc: IpcServer | None = None
        self.watch = watch
        self.config: NerveConfig = ws.config
        self.log: EventLog | None = None
        self.states: dict[str, Any] = {}
        self.initial: dict[str, Any] = {}
        self.state_records: dict[str, str] = {}  # sense -> "changes" | "checkpoints"
        self._ended_cleanly = True  # did the previous daemon record daemon.stopped?
        self.stats: dict[str, SenseStats] = {}
        self.groups: dict[str, GroupWorker] = {}
        self.bus = SignalBus()
        self.started_wall_ns = time.time_ns()
        self.seal_failure: str | None = None
        self.stopping = asyncio.Event()
        self.ready = asyncio.Event()  # set once start() has finished
        self.extensions: list[Any] = load_extensions()
        self._stored: dict[str, StoredState] = {}
        self._tasks: list[asyncio.Task[Any]] = []
        self._layout: Layout | None = None
        self.segments = 0  # live segments, as of the last seal check
        self._seal_wake = asyncio.Event()
        self.stages = Stages()  # batches sent in several requests, until their last part
        self.on_stats: list[Callable[[], None]] = []
        self.privacy = Policy(self.config.privacy)  # applied to everything captured
        self.capture = CaptureGate(self)  # pause and resume
        self.highlights: collections.deque[Highlight] = collections.deque(maxlen=HIGHLIGHTS_KEPT)
        self.agents = AgentReads()  # calls through `nerve mcp`, for the dev view and status
        self.stop_reason = "stop request"
        self._error_lines = journal.Repeats(ERROR_REPEAT_S)
        self.appended = 0  # events stored since start (appends, keyed batches, imports)
        self._base_events = 0  # events the log held before them
        self.skips = Skips(self._record_skip)  # ticks that did not run, and why
        self._down_since: int | None = None  # wall ns the log was last written by a daemon
        self.queries = QueryChild()  # DuckDB, in a process of its own while it is used
        self.handlers: dict[str, Any] = dict(control.HANDLERS)  # and each extension's

    # -- lifecycle ---------------------------------------------------------------------

    async def start(self) -> None:
        self.log = self.ws.open_log(background_seal=True)  # sealing never stalls commits
        self.followers = Followers(self.log.newest)  # `follow` subscribers (nerve tail -f)
        self.log.on_commit.append(self.followers.hook(asyncio.get_running_loop()))
        self.committer = Committer(self.log)
        self.committer.listeners.extend([self._count, self.agents.note, self._nudge_seal])
        self.committer.start()
        self.scheduler = Scheduler(self._dispatch, on_skip=self.skips.note)
        self._stored = await asyncio.to_thread(stored_states, self.ws, self.connect)
        self._down_since = await asyncio.to_thread(last_alive_ns, self.ws, self.connect)
        self._ended_cleanly = await asyncio.to_thread(ended_cleanly, self.ws, self.connect)
        await self.capture.restore()  # before any sense is scheduled
        await self._count_segments()
        await self.record(
            "daemon.started",
            "daemon",
            f"daemon started (pid {os.getpid()})",
            {"pid": os.getpid(), "workspace": str(self.ws.root)},
        )
        events, segments = await self._position()
        self._base_events = events - self.appended
        socket = self.socket_path if self.with_ipc else None  # listening before ready is set
        senses = sorted(self.config.senses)
        journal.say(journal.banner(self.ws.root, socket, senses, events, segments))
        await self._apply(self.config, reason="start")
        await self.capture.start()
        for ext in self.extensions:
            await ext.start(self)
            self.handlers.update(ext.handlers())
        if self.with_ipc:
            self.ipc = IpcServer(
                self.socket_path,
                lambda req: control.handle(self, req, self.handlers),
                max_bytes=self.config.daemon.max_request_bytes,
                streams={"follow": self.followers.serve},
            )
            await self.ipc.start()
            self.seed_ipc = await _seed_listener(self)
        self._tasks.append(asyncio.create_task(self._seal_loop(), name="seal"))
        self._tasks.append(asyncio.create_task(self._erasure_loop(), name="erasure"))
        self._tasks.append(asyncio.create_task(self._skip_loop(), name="skips"))
        from nerve.runtime.shipper import ship_loop

        self._tasks.append(asyncio.create_task(ship_loop(self), name="fleet-ship"))
        if self.watch:
            from nerve.runtime.watch import watch_workspace

            self._tasks.append(asyncio.create_task(watch_workspace(self), name="watch"))
        self.ready.set()

    def connect(self, *, projections: bool = True) -> Any:
        """DuckDB over the log, run by the query process (see ``nerve.runtime.queries``):
        ``events`` and every projection, or ``events`` alone."""
        return self.queries.connect(self.ws.root, projections=projections)

    @property
    def socket_path(self) -> Path:
        return self.ws.root / self.config.daemon.socket

    def request_stop(self, reason: str) -> None:
        if not self.stopping.is_set():
            self.stop_reason = reason
        self.stopping.set()

    async def stop(self) -> None:
        self.scheduler.stop()
        self.capture.stop()
        for task in self._tasks:
            task.cancel()
        await asyncio.gather(*(g.stop() for g in self.groups.values()), return_exceptions=True)
        self.skips.flush(everything=True)  # folded skip counts are not lost at a stop
        await self.committer.drain()  # results still in flight reach the extensions below
        await self._checkpoint_states()
        for ext in reversed(self.extensions):
            with contextlib.suppress(Exception):
                await ext.stop(self)
        if self.with_ipc:
            await self.ipc.close()
            if self.seed_ipc is not None:
                await self.seed_ipc.close()
        await self.record("daemon.stopped", "daemon", "daemon stopped", {"pid": os.getpid()})
        await self.committer.stop()
        assert self.log is not None
        self.log.close()  # waits for a seal in progress: the position below is final
        events, segments = await self._position()
        await asyncio.to_thread(self.queries.close)
        journal.say(
            f"stopped ({self.stop_reason}); log at {events:,} events in {segments:,} segments"
        )

    async def run_until_stopped(self) -> None:
        loop = asyncio.get_running_loop()
        for sig in (signal.SIGTERM, signal.SIGINT):
            loop.add_signal_handler(sig, self.request_stop, sig.name)
        await self.start()
        try:
            await self.stopping.wait()
            journal.say(f"stopping ({self.stop_reason})")
        finally:
            await self.stop()

    # -- configuration -----------------------------------------------------------------

    async def _apply(self, config: NerveConfig, *, reason: str) -> None:
        lay = layout(self.ws, config)
        for name, why in lay.missing.items():
            await self._sense_error(name, "load", why)
        old_groups, self.groups = self.groups, {}
        await asyncio.gather(*(g.stop() for g in old_groups.values()), return_exceptions=True)
        self.config, self._layout = config, lay
        self.privacy = Policy(config.privacy, self.privacy.dropped, self.privacy.redacted)
        for group, specs in lay.specs.items():
            for name in specs:
                self.stats.setdefault(name, SenseStats(group)).group = group
            worker = GroupWorker(group, specs, self.ws.root, self)
            self.groups[group] = worker
        await asyncio.gather(*(g.start() for g in self.groups.values()))
        down_since = self._down_since if reason == "start" else None
        self.scheduler.load(lay.plans, keep_grace=reason != "start", down_since_ns=down_since)
        self.bus.clear()
        for source, listeners in self.scheduler.subscribers().items():
            for listener in listeners:
                self.bus.subscribe(source, self._on_signal(listener))
        await self.record(
            "config.loaded",
            "nerve.yaml",
            f"configuration loaded ({reason})",
            {
                "reason": reason,
                "senses": sorted(config.senses),
                "groups": sorted(lay.specs),
                "workflows": sorted(config.workflows),
            },
        )
        if reason != "start":
            senses = journal.senses_text(sorted(self.stats))
            journal.say(f"configuration reloaded ({reason}): {senses}")
        for ext in self.extensions:
            hook = getattr(ext, "on_config", None)
            if hook is not None and reason != "start":
                await hook(self, reason)

    async def reload(self, reason: str = "edit") -> bool:
        """Re-read nerve.yaml and sense code; a bad edit keeps what runs. True if applied."""
        try:
            # off the loop: a large or hostile file must not stop the daemon answering
            config = await asyncio.to_thread(self._read_config)
        except (NerveError, ValueError, RecursionError, MemoryError) as exc:
            issues = (
                [str(i) for i in getattr(exc, "issues", [])]
                if isinstance(exc, InvalidConfig)
                else []
            )
            await self.record(
                "config.rejected",
                "nerve.yaml",
                f"edit rejected: {str(exc).splitlines()[0]}",
                {"error": str(exc), "issues": issues, "reason": reason},
            )
            journal.warn(f"configuration edit rejected, the running one is kept: {exc}")
            return False
        await self._apply(config, reason=reason)
        return True

    def _read_config(self) -> NerveConfig:
        config = load_config(self.ws.config_path)
        for group in layout(self.ws, config).specs.values():
            for spec in group.values():
                check_sense_file(Path(spec.path))
        return config

    # -- scheduling and results --------------------------------------------------------

    def _on_signal(self, listener: str) -> Callable[[str], None]:
        def deliver(source: str) -> None:
            self.scheduler.trigger(listener, f"on:{source}")

        return deliver

    def _dispatch(self, sense: str, reason: str, due_ns: int) -> None:
        if self.capture.paused:
            self.skips.note(sense, "paused")
            return
        group = self.stats.get(sense)
        worker = self.groups.get(group.group) if group else None
        if worker is None:
            return
        if worker.restarting is not None:  # "restarting" or "backoff"
            self.skips.note(sense, worker.restarting)
        elif not worker.enqueue(Job(sense, reason, due_ns), coalesce=reason != "catch-up"):
            self.skips.note(sense, "overlap")

    def _record_skip(self, sense: str, line: str, payload: dict[str, Any]) -> None:
        """Queue a ``sense.skipped`` record (nobody waits for it: it rides the next commit)."""
        self.committer.submit(
            [self.privacy.redact(_control("sense.skipped", sense, line, payload))]
        )

    async def _skip_loop(self) -> None:
        while True:
            await asyncio.sleep(SKIP_FLUSH_S)
            self.skips.flush()

    def state_of(self, sense: str) -> Any:
        return self.states.get(sense, self.initial.get(sense))

    async def on_loaded(self, group: str, loaded: dict[str, Any]) -> None:
        for name, info in loaded.items():
            if not info["ok"]:
                await self._sense_error(name, "load", info["error"])
                continue
            self.initial[name] = info["initial_state"]
            self.state_records[name] = info.get("state_records", "changes")
            if name in self.states:
                continue
            stored = self._stored.get(name)
            if stored is not None and not self._ended_cleanly and self._checkpointed(name):
                stored = None  # the last checkpoint may predate readings already observed
                journal.say(f"{name}: the daemon did not stop cleanly; starting from initial_state")
            if stored is None:
                self.states[name] = info["initial_state"]
            elif stored.undecodable:
                self.states[name] = info["initial_state"]
                await self._sense_error(
                    name,
                    "state-restore",
                    "stored state is missing or undecodable; using initial_state",
                )
            else:
                self.states[name] = stored.state

    def _checkpointed(self, sense: str) -> bool:
        """True when ``sense`` stores its state at checkpoints only (``state_records``)."""
        return self.state_records.get(sense) == "checkpoints"

    async def on_result(self, job: Job, started_ns: int, reply: dict[str, Any]) -> None:
        stats = self.stats[job.sense]
        if not reply.get("ok"):
            await self._sense_error(
                job.sense, reply.get("error_kind", "exception"), reply.get("error", "")
            )
            return
        if "skip" in reply:  # the compute had nothing to do: counted, state unchanged
            self.skips.note(job.sense, _storable(str(reply["skip"])), by="compute")
            return
        lateness_us = max(0, (started_ns - job.due_ns) // 1000)
        try:
            drafts, workflow = self._result_drafts(job, reply, lateness_us)
        except NerveError as exc:  # e.g. an observation field the worker let through
            await self._sense_error(job.sense, "unserialisable", f"result cannot be stored: {exc}")
            return
        if drafts:
            await self.committer.append(drafts)  # durable before memory moves
        self.states[job.sense] = reply["state"]  # as stored: redacted if a rule fired
        stats.computes += 1
        self.skips.computed(job.sense)
        stats.last_wall_ns = time.time_ns()
        stats.last_duration_ms = reply.get("duration_ms")
        observed = [d for d in drafts if d.kind == "observation"]
        stats.last_line = observed[0].line if observed else "nothing new"
        if len(stats.lateness_us) < 100_000:
            stats.lateness_us.append(lateness_us)
        if reply.get("signal"):
            stats.last_signal_ns = time.time_ns()
            self.bus.publish(job.sense)
        if workflow is not None:
            for ext in self.extensions:
                hook = getattr(ext, "on_workflow_requested", None)
                if hook is not None:
                    await hook(self, workflow, job.sense)

    def _result_drafts(
        self, job: Job, reply: dict[str, Any], lateness_us: int
    ) -> tuple[list[Draft], WorkflowTrigger | None]:
        """What a compute stores: its observations; its ``sense.state`` when the state
        changed (or a checkpoint is due, or observations were withheld); a ``signal`` when
        a sense listens; a workflow request or rejection."""
        observed = [self._observation(job.sense, obs) for obs in reply.get("observations", [])]
        kept = self.capture.screen(job.sense, observed)
        drafts = self.privacy.capture_all(kept)
        stats = self.stats[job.sense]
        payload = {
            "state": reply["state"],
            "reason": job.reason,
            "duration_ms": reply.get("duration_ms"),
            "lateness_us": lateness_us,
            "computes": stats.unrecorded + 1,
        }
        if len(kept) < len(observed):
            payload["withheld"] = len(observed) - len(kept)  # paused: counted, not stored
        state = self._state_draft(job.sense, payload, drafts[0].line if drafts else None)
        previous = canonical_json(self.state_of(job.sense))
        state = self._redact_state(state, reply)
        now = time.monotonic_ns()
        changed = canonical_json(reply["state"]) != previous
        if (
            "withheld" in payload
            or (changed and not self._checkpointed(job.sense))
            or stats.recorded_ns is None  # the first compute since the daemon started
            or now - stats.recorded_ns >= STATE_CHECKPOINT_NS
        ):
            drafts.insert(0, state)
            stats.unrecorded, stats.recorded_ns = 0, now
        else:
            stats.unrecorded += 1
        if reply.get("signal") and self.bus.listened(job.sense):
            drafts.append(self._signal(job, reply.get("value")))
        trigger, extra = self._workflow(job.sense, reply.get("workflow"))
        drafts += extra
        return drafts, trigger

    def _signal(self, job: Job, value: Any) -> Draft:
        """The ``signal`` event; a state-less return's value (seed 001) rides on it, redacted."""
        line = f"{job.sense} signalled"
        if value is None:
            return _control("signal", job.sense, line, _reason(job.reason))
        payload = {"reason": job.reason, "value": value}
        return self.privacy.redact(_control("signal", job.sense, line, payload))

    def _state_draft(self, sense: str, payload: dict[str, Any], summary: str | None) -> Draft:
        line = f"{sense}: {summary or 'state updated'}"
        if payload["computes"] > 1:
            line += f" ({payload['computes']} computes since the last record)"
        return _control("sense.state", sense, line, payload)

    async def _checkpoint_states(self) -> None:
        """Store the counts of computes not recorded yet (the daemon is stopping)."""
        drafts = []
        for name, stats in sorted(self.stats.items()):
            if stats.unrecorded and name in self.states:
                payload = {"state": self.states[name], "reason": "checkpoint"}
                payload |= {"computes": stats.unrecorded}
                drafts.append(self.privacy.redact(self._state_draft(name, payload, None)))
                stats.unrecorded = 0
        if drafts:
            await self.committer.append(drafts)

    def _redact_state(self, draft: Draft, reply: dict[str, Any]) -> Draft:
        """A state is captured too: when a rule fires in it, memory keeps what is stored."""
        redacted = self.privacy.redact(draft)
        if redacted is not draft:
            reply["state"] = json.loads(redacted.payload)["state"]
        return redacted

    def _observation(self, sense: str, obs: dict[str, Any]) -> Draft:
        fields = draft_from_json(
            {k: v for k, v in obs.items() if k != "subject" and v is not None}
            | {"kind": "observation"}
        )
        return Draft(**{**fields, "subject": obs.get("subject") or sense})

    def known_workflow(self, name: str) -> bool:
        if name in self.config.workflows:
            return True
        from nerve.resources import bundled

        return any((d / name).is_dir() for d in (self.ws.root / "workflows", bundled("workflows")))

    def _workflow(self, sense: str, raw: Any) -> tuple[WorkflowTrigger | None, list[Draft]]:
        """Validate a trigger: a ``workflow.requested`` event, or a ``workflow.rejected`` one."""
        if raw is None:
            return None, []
        error = raw.get("invalid") if isinstance(raw, dict) else None
        trigger: WorkflowTrigger | None = None
        if error is None:
            trigger = WorkflowTrigger.parse(raw)
            if not self.known_workflow(trigger.name):
                error = (
                    f"unknown workflow {trigger.name!r} "
                    f"(declare it under workflows: or add workflows/{trigger.name}/)"
                )
        if error is not None:
            return None, [
                _control(
                    "workflow.rejected",
                    sense,
                    f"{sense}: workflow trigger rejected: {error}",
                    {"sense": sense, "error": error, "trigger": raw},
                )
            ]
        assert trigger is not None
        rounds = trigger.max_rounds or self.config.max_rounds
        payload = {**trigger.to_json(), "max_rounds": rounds, "sense": sense}
        return trigger, [
            _control(
                "workflow.requested",
                trigger.name,
                f"{sense} requested workflow {trigger.name}",
                payload,
            )
        ]

    async def on_failure(self, job: Job, kind: str, message: str) -> None:
        await self._sense_error(job.sense, kind, message)

    async def on_restart(self, group: str, reason: str, pid: int | None) -> None:
        worker = self.groups.get(group)
        new_pid = worker.pid if worker else None
        journal.warn(f"group {group} worker restarted (pid {pid} -> {new_pid}): {reason}")
        await self.record(
            "sense.restart",
            group,
            f"group {group} worker restarted: {reason}",
            {
                "group": group,
                "reason": reason,
                "old_pid": pid,
                "new_pid": worker.pid if worker else None,
            },
        )

    async def _sense_error(self, sense: str, kind: str, message: str) -> None:
        message = _storable(message)
        stats = self.stats.setdefault(sense, SenseStats(group="?"))
        stats.errors += 1
        stats.last_error = f"{kind}: {message}"
        self._error_lines.warn(sense, f"sense {sense}: {kind}: {message}")  # not every compute
        await self.record(
            "sense.error",
            sense,
            f"{sense}: {kind}: {message.splitlines()[0] if message else ''}",
            {"sense": sense, "kind": kind, "error": message},
        )

    def on_decision(self, payload: dict[str, Any]) -> None:
        """An attention decision, surfaced or held, for the dev view and the daemon log."""
        seen = Highlight(
            time.time(), payload["outcome"], str(payload["probe"]), str(payload["source_line"])
        )
        self.highlights.append(seen)
        if seen.surfaced:
            journal.say(f"surfaced {seen.probe}: {seen.line}")

    async def record(self, kind: str, subject: str, line: str, payload: Any) -> pa.Table:
        draft = self.privacy.redact(_control(kind, subject, line, payload))
        return await self.committer.append([draft])

    # -- requests ----------------------------------------------------------------------

    def trigger_sense(self, sense: str) -> None:
        if self.capture.paused:
            raise SenseError(
                f"capture is {self.capture.state.describe()}; no sense computes",
                hint="`nerve resume` first",
            )
        if not self.scheduler.trigger(sense, "manual"):
            known = sorted(self.stats)
            hint = did_you_mean(sense, known) or f"the senses are: {', '.join(known) or 'none'}"
            raise SenseError(f"unknown sense {sense!r}", field="sense", hint=hint)

    def parse_drafts(self, objects: list[Any], first: int = 0) -> list[Draft]:
        """Request objects as drafts; an error names the event (``first`` events before)."""
        parsed = _parse_each(objects, drafts_of_object, first)  # an attestation adds a draft
        return [draft for drafts in parsed for draft in drafts]

    def parse_events(self, objects: list[Any], first: int = 0) -> list[Event | ErasedEvent]:
        """Request objects as events of a copied log to import; an error names the event."""
        return _parse_each(objects, stored_event_from_json, first)

    async def emit(self, objects: list[Any], key: str | None = None) -> list[dict[str, Any]]:
        return await self.emit_drafts(self.parse_drafts(objects), key)

    async def emit_drafts(
        self, drafts: list[Draft], key: str | None = None
    ) -> list[dict[str, Any]]:
        """Append drafts as one group commit, privacy rules applied; the stored rows in the
        wire form (a dropped draft has none)."""
        drafts = self.privacy.capture_all(drafts)
        check_batch(drafts, self.config.attestation.keys)  # stored as vouched for, or refused
        if key is None:
            table = await self.committer.append(drafts)
        else:  # keyed batches commit alone: the key and its batch share one frame
            await self.committer.drain()
            assert self.log is not None
            before = self.log.newest
            table = await asyncio.to_thread(self.log.append_drafts, drafts, key=key)
            if self.log.newest > before:  # stored now, not a replayed key
                for listener in self.committer.listeners:
                    listener(table)
        return [row_to_json(r) for r in table.to_pylist()]

    async def import_events(self, objects: list[Any], key: str | None = None) -> int:
        return await self.import_parsed(self.parse_events(objects), key)

    async def import_parsed(self, events: list[Event | ErasedEvent], key: str | None = None) -> int:
        """Import whole events at once (their order checked against the log's newest);
        refused if a privacy rule would change one (``PrivacyError``), or if one claims
        ``Attested`` without a checkable attestation after it (``TrustError``)."""
        whole = [e for e in events if isinstance(e, Event)]  # an erased one holds no text
        check_batch(whole, self.config.attestation.keys)
        self.privacy.screen(whole)
        await self.committer.drain()
        assert self.log is not None
        log = self.log
        before = log.newest
        count = int(await asyncio.to_thread(log.import_events, events, key=key))
        if whole and log.newest > before:  # not a replayed key
            table = table_from_events(whole)
            for listener in self.committer.listeners:  # imported observations are attended too
                listener(table)
        return count

    async def log_call(self, method: str, **kwargs: Any) -> Any:
        """Run a log maintenance call (seal, compact) in the writer's thread."""
        assert self.log is not None
        return await self.with_log(lambda log: getattr(log, method)(**kwargs))

    async def with_log(self, work: Callable[[EventLog], Any]) -> Any:
        """Run ``work`` with the writer, off the loop (forget, archive, maintenance): events
        already handed to the committer are stored first; appends go on meanwhile."""
        await self.committer.drain()
        assert self.log is not None
        log = self.log
        try:
            return await asyncio.to_thread(work, log)
        finally:
            self._seal_wake.set()  # e.g. segments retired by an erasure are dropped
            await self._count_segments()

    async def request_workflow(self, trigger: WorkflowTrigger, *, source: str) -> dict[str, Any]:
        """Record a run request; a workflow engine extension, when loaded, starts it."""
        rounds = trigger.max_rounds or self.config.max_rounds
        payload = {**trigger.to_json(), "max_rounds": rounds, "sense": None, "source": source}
        for ext in self.extensions:
            hook = getattr(ext, "request_run", None)
            if hook is not None:
                result: dict[str, Any] = await hook(self, trigger, source)
                return result
        await self.record(
            "workflow.requested",
            trigger.name,
            f"{source} requested workflow {trigger.name}",
            payload,
        )
        return {"workflow": trigger.name, "run": None}

    async def _seal_loop(self) -> None:
        """Seal by size or age; a failed seal is reported and retried with backoff, and
        loses nothing (the unsealed generations stay on disk and pending).

        The loop sleeps until the tail's age is due, or until a commit wakes it (the first
        rows of a tail, or the size limit): an idle daemon does not poll."""
        assert self.log is not None
        failures = 0
        await self._count_segments()
        while True:
            if failures:
                await asyncio.sleep(min(SEAL_CHECK_S * 2**failures, SEAL_BACKOFF_MAX_S))
            else:
                await self._seal_due()
            try:
                sealed = await asyncio.to_thread(self.log.maybe_seal)
            except (NerveError, OSError) as exc:
                failures += 1
                wait = min(SEAL_CHECK_S * 2**failures, SEAL_BACKOFF_MAX_S)
                journal.warn(f"seal failed (attempt {failures}), retry in {wait:.0f} s: {exc}")
                self.seal_failure = str(exc)
                continue
            if failures:
                journal.say(f"seal succeeded after {failures} failed attempts")
            self.seal_failure, failures = None, 0
            if sealed is not None:
                await self._count_segments()

    async def _seal_due(self) -> None:
        """Return once the log is due a seal (see ``EventLog.seal_due_in_ns``)."""
        assert self.log is not None
        while (due := self.log.seal_due_in_ns()) != 0:
            self._seal_wake.clear()
            timeout = None if due is None else due / NS
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._seal_wake.wait(), timeout)

    def _nudge_seal(self, table: pa.Table) -> None:
        """A commit: the seal loop looks again (a first row starts the age clock)."""
        self._seal_wake.set()

    async def _erasure_loop(self) -> None:
        """Finish an erasure a crash left pending, then apply ``log.retention`` every
        ``every`` (read afresh each time, so a reload takes effect); a failure is reported
        and tried again next time, and erases nothing."""
        from nerve.privacy.forget import RETENTION, Request, apply

        await asyncio.sleep(UPKEEP_DELAY_S)
        try:
            await self.with_log(lambda log: log.finish_erasures())
        except (NerveError, OSError) as exc:
            journal.warn(f"a pending erasure could not be finished: {exc}")
        while True:
            retention = self.config.log.retention
            if retention.active:
                try:
                    await self.with_log(
                        functools.partial(
                            apply, request=Request(None, RETENTION), retention=retention
                        )
                    )
                except (NerveError, OSError) as exc:
                    journal.warn(f"retention failed, will retry: {exc}")
            await asyncio.sleep(retention.every / 1000)

    def _count(self, table: pa.Table) -> None:
        self.appended += table.num_rows

    @property
    def stored_events(self) -> int:
        """Events in the log, counted in memory (the dev view reads it every refresh)."""
        return self._base_events + self.appended

    async def _position(self) -> tuple[int, int]:
        """(events, segments) the log holds: the sealed rows plus the unsealed tail."""
        assert self.log is not None
        log = self.log
        sealed = await asyncio.to_thread(lambda: [s.rows for s in log.manifest.segments()])
        return sum(sealed) + log.tail_rows, len(sealed)

    async def _count_segments(self) -> None:
        """Refresh the segment count ``status`` shows, reading the manifest off the loop."""
        root = self.ws.log_root
        self.segments = await asyncio.to_thread(lambda: len(manifest_state(root).segments()))

    def health(self) -> dict[str, Any]:
        """What ``status`` shows, from counters in memory: it never reads the log, so it
        costs the event loop nothing however large the WAL (the segment count is refreshed
        with every seal check, off the loop)."""
        snap_newest = self.log.newest if self.log else None
        return {
            "pid": os.getpid(),
            "workspace": str(self.ws.root),
            "uptime_s": round((time.time_ns() - self.started_wall_ns) / NS, 1),
            "senses": len(self.stats),
            "sense_results": [
                {
                    "name": name,
                    "group": stats.group,
                    "computes": stats.computes,
                    "errors": stats.errors,
                    "last_ns": stats.last_wall_ns,
                    "last_result": stats.last_line,
                    "last_error": stats.last_error,
                }
                for name, stats in sorted(self.stats.items())
            ],
            "events": self.committer.events,
            "commits": self.committer.commits,
            "groups": {
                n: {"pid": g.pid, "restarts": g.restarts, "queued": g.queued, "busy": g.busy}
                for n, g in self.groups.items()
            },
            "newest": str(snap_newest) if snap_newest else None,
            "tail_rows": self.log.tail_rows if self.log else 0,
            "seal_failure": self.seal_failure,
            "segments": self.segments,
            "followers": len(self.followers),
            "followers_dropped": self.followers.dropped,
            "capture": self.capture.to_json(),
            "privacy": {"dropped": self.privacy.dropped, "redacted": self.privacy.redacted},
            "agents": self.agents.to_json(),
        }
