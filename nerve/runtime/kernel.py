"""The kernel: the log's only writer, and the owner of everything that runs.

It wires the daemon's parts and runs their lifecycle: the single writer's front
(``nerve.runtime.writer``), the senses with their groups and scheduler
(``nerve.runtime.sensing``, replies turned into events by ``nerve.runtime.results``), the
upkeep loops (``nerve.runtime.upkeep``), the extensions (``nerve.runtime.built_in``), the IPC
socket and the hot reload of ``nerve.yaml`` and sense code. Every compute, signal, error,
restart and configuration change is an event; in-memory state advances only after its
event is durable.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import time
from pathlib import Path
from typing import Any

import pyarrow as pa

from nerve.attention.notify import Notices
from nerve.clock import Hlc
from nerve.commands.daemon import Follow
from nerve.config.models import NerveConfig
from nerve.contract import WorkflowTrigger
from nerve.log.store import EventLog
from nerve.privacy.policy import Policy
from nerve.runtime import control, journal, triggers
from nerve.runtime import reload as config_reload
from nerve.runtime.built_in import built_in
from nerve.runtime.capture import CaptureGate
from nerve.runtime.committer import Committer
from nerve.runtime.extensions import Extension
from nerve.runtime.feed import ViewFeed
from nerve.runtime.followers import Followers
from nerve.runtime.groups import GroupWorker
from nerve.runtime.health import health
from nerve.runtime.ipc import IpcServer
from nerve.runtime.parts import Parts, open_parts, position
from nerve.runtime.queries import QueryChild
from nerve.runtime.results import SenseStats
from nerve.runtime.scheduler import Scheduler
from nerve.runtime.sealing import Sealing
from nerve.runtime.senses import ended_cleanly, last_alive_ns, layout, stored_states
from nerve.runtime.sensing import Sensing
from nerve.runtime.skips import Skips
from nerve.runtime.staging import Stages
from nerve.runtime.writer import Writer
from nerve.workspace import WorkspaceDir


class Kernel:
    def __init__(self, ws: WorkspaceDir, *, with_ipc: bool = True, watch: bool = True) -> None:
        self.ws = ws
        self.with_ipc = with_ipc
        self.watch = watch
        # before the read: an edit made after it shows
        self._config_stamp = config_reload.stamp(ws.config_path)
        self.config: NerveConfig = ws.config
        self.privacy = Policy(self.config.privacy)  # applied to everything captured
        self.started_wall_ns = time.time_ns()
        self.stopping = asyncio.Event()
        self.ready = asyncio.Event()  # set once start() has finished
        self.stop_reason = "stop request"
        self.feed = ViewFeed()  # attention decisions and agent calls, for the dev view
        self.notices = Notices()  # whether surfacings reach the desktop, for status
        self.sealing = Sealing()  # epoch seals; status reads it
        self.extensions: list[Extension] = built_in(self.feed, self.notices, self.sealing)
        self.handlers: dict[str, Any] = dict(control.HANDLERS)  # and each extension's
        self.stages = Stages()  # batches sent in several requests, until their last part
        self.capture = CaptureGate(self)  # pause and resume
        self.skips = Skips(self._record_skip)  # ticks that did not run, and why
        self.queries = QueryChild()  # DuckDB, in a process of its own while it is used
        self.senses = Sensing(
            ws.root,
            self,
            self.capture,
            self.skips,
            lambda sense, raw: triggers.requested(ws.root, self.config, sense, raw),
            self._workflow_requested,
        )
        self._tasks: list[asyncio.Task[Any]] = []
        self._servers: list[IpcServer] = []
        self._running: Parts | None = None
        self._down_since: int | None = None  # wall ns the log was last written by a daemon

    # -- the parts, once started -------------------------------------------------------

    @property
    def parts(self) -> Parts:
        if self._running is None:
            raise RuntimeError("the kernel has not started")
        return self._running

    @property
    def log(self) -> EventLog:
        return self.parts.log

    @property
    def writer(self) -> Writer:
        return self.parts.writer

    @property
    def committer(self) -> Committer:
        return self.parts.writer.committer

    @property
    def followers(self) -> Followers:
        return self.parts.followers

    @property
    def scheduler(self) -> Scheduler:
        return self.parts.scheduler

    @property
    def stats(self) -> dict[str, SenseStats]:
        return self.senses.stats

    @property
    def groups(self) -> dict[str, GroupWorker]:
        return self.senses.groups

    @property
    def segments(self) -> int:
        return self._running.upkeep.segments if self._running else 0

    @property
    def seal_failure(self) -> str | None:
        return self._running.upkeep.seal_failure if self._running else None

    @property
    def seal_status(self) -> dict[str, Any] | None:
        return self.sealing.status()

    @property
    def stored_events(self) -> int:
        """Events in the log, counted in memory (the dev view reads it every refresh)."""
        return self.writer.stored_events

    @property
    def socket_path(self) -> Path:
        return self.ws.root / self.config.daemon.socket

    # -- lifecycle ---------------------------------------------------------------------

    async def start(self) -> None:
        """Open the log and listen at once (``status`` and plain emits are answered from
        then on, durably), then warm up: restore what the last run left, load senses and
        extensions. Every other request waits for :attr:`ready`."""
        running = self._running = open_parts(self.ws, self, self.skips, [self.feed.on_commit])
        found = running.log.newest  # the warm-up reads the log as this daemon found it
        await running.upkeep.count_segments()
        if self.with_ipc:
            streams = {Follow.TYPE: self.followers.serve}
            self._servers += await control.listen(
                self.config, self.ws.root, self.socket_path, self.handle, streams
            )
        if self.watch:  # armed before the config is read again below: no edit slips by
            self._tasks.append(asyncio.create_task(self._watch(), name="watch"))
        await self._restore(running, found)
        pid = os.getpid()
        payload = {"pid": pid, "workspace": str(self.ws.root)}  # (after emits taken so far)
        await self.record("daemon.started", "daemon", f"daemon started (pid {pid})", payload)
        events, segments = await position(self.log)
        self.writer.base_events = events - self.writer.appended
        socket = self.socket_path if self.with_ipc else None  # listening before ready is set
        config = await self._config_now()
        journal.say(journal.banner(self.ws.root, socket, sorted(config.senses), events, segments))
        await self._apply(config, reason="start")
        await self.capture.start()
        for ext in self.extensions:
            await ext.start(self)
            self.handlers.update(ext.handlers())
        self._tasks += running.upkeep.tasks(self.writer.with_log)
        self.ready.set()

    async def _restore(self, running: Parts, found: Hlc) -> None:
        """What the log says of the last run: sense states, when it ended, whether cleanly,
        and a pause (before any sense is scheduled); of the log up to ``found``, its newest
        stamp at open (emits taken since are of no kind read here, see ``control``)."""
        stored = await asyncio.to_thread(stored_states, self.ws, self.connect)
        alive = await asyncio.to_thread(last_alive_ns, self.ws, self.connect, found)
        self._down_since = alive
        clean = await asyncio.to_thread(ended_cleanly, self.ws, self.connect, found)
        running.scheduler = self.senses.start(running.writer, stored, clean)
        await self.capture.restore()

    async def handle(self, request: dict[str, Any]) -> dict[str, Any]:
        if not self.ready.is_set() and not control.answers_warming(request):
            await self.ready.wait()  # the handlers it needs are not all up yet
        return await control.handle(self, request, self.handlers)

    async def _watch(self) -> None:
        from nerve.runtime.watch import watch_workspace

        await watch_workspace(self)

    async def _config_now(self) -> NerveConfig:
        """nerve.yaml as it is once the warm-up has read the log (see ``reload.edited_since``)."""
        config, why = await config_reload.edited_since(self.ws, self._config_stamp, self.config)
        if why is not None:
            await self.record("config.rejected", "nerve.yaml", *config_reload.rejected(why, "edit"))
            journal.warn(f"configuration edit rejected, the first one read is kept: {why}")
        return config

    def connect(self, *, projections: bool = True) -> Any:
        """DuckDB over the log, run by the query process (see ``nerve.runtime.queries``):
        ``events`` and every projection, or ``events`` alone."""
        return self.queries.connect(self.ws.root, projections=projections)

    def request_stop(self, reason: str) -> None:
        if not self.stopping.is_set():
            self.stop_reason = reason
        self.stopping.set()

    async def stop(self) -> None:
        self.capture.stop()
        for task in self._tasks:
            task.cancel()
        await self.senses.stop()
        self.skips.flush(everything=True)  # folded skip counts are not lost at a stop
        await self.committer.drain()  # results still in flight reach the extensions below
        await self.senses.checkpoint()
        for ext in reversed(self.extensions):
            with contextlib.suppress(Exception):
                await ext.stop(self)
        for server in self._servers:
            await server.close()
        await self.record("daemon.stopped", "daemon", "daemon stopped", {"pid": os.getpid()})
        await self.committer.stop()
        self.log.close()  # waits for a seal in progress: the position below is final
        events, segments = await position(self.log)
        await asyncio.to_thread(self.queries.close)
        journal.say(
            f"stopped ({self.stop_reason}); log at {events:,} events in {segments:,} segments"
        )

    async def run_until_stopped(self) -> None:
        loop = asyncio.get_running_loop()
        for sig in (signal.SIGTERM, signal.SIGINT):
            loop.add_signal_handler(sig, self.request_stop, sig.name)
        try:
            await self.start()
        except BaseException:
            for server in self._servers:  # a failed warm-up leaves no socket answering
                await server.close()
            raise
        try:
            await self.stopping.wait()
            journal.say(f"stopping ({self.stop_reason})")
        finally:
            await self.stop()

    # -- configuration -----------------------------------------------------------------

    async def _apply(self, config: NerveConfig, *, reason: str) -> None:
        lay = layout(self.ws, config)
        self.config = config
        self.privacy = Policy(config.privacy, self.privacy.dropped, self.privacy.redacted)
        first = reason == "start"
        await self.senses.load(lay, first=first, down_since_ns=self._down_since if first else None)
        await self.record("config.loaded", "nerve.yaml", *config_reload.loaded(config, lay, reason))
        if not first:
            senses = journal.senses_text(sorted(self.stats))
            journal.say(f"configuration reloaded ({reason}): {senses}")
            for ext in self.extensions:
                await ext.on_config(self, reason)

    async def reload(self, reason: str = "edit") -> bool:
        """Re-read nerve.yaml and sense code; a bad edit keeps what runs. True if applied."""
        await self.ready.wait()  # an edit seen while warming up applies once it is done
        try:
            # off the loop: a large or hostile file must not stop the daemon answering
            config = await asyncio.to_thread(config_reload.read_config, self.ws)
        except config_reload.READ_ERRORS as exc:
            await self.record("config.rejected", "nerve.yaml", *config_reload.rejected(exc, reason))
            journal.warn(f"configuration edit rejected, the running one is kept: {exc}")
            return False
        await self._apply(config, reason=reason)
        return True

    # -- records and requests ----------------------------------------------------------

    async def record(self, kind: str, subject: str, line: str, payload: Any) -> pa.Table:
        return await self.writer.record(kind, subject, line, payload)

    def _record_skip(self, sense: str, line: str, payload: dict[str, Any]) -> None:
        """Queue a ``sense.skipped`` record (nobody waits for it: it rides the next commit)."""
        self.writer.submit("sense.skipped", sense, line, payload)

    def known_workflow(self, name: str) -> bool:
        return triggers.known_workflow(self.ws.root, self.config, name)

    def trigger_sense(self, sense: str) -> None:
        self.senses.trigger(sense)

    async def _workflow_requested(self, trigger: WorkflowTrigger, sense: str) -> None:
        for ext in self.extensions:
            await ext.on_workflow_requested(self, trigger, sense)

    async def request_workflow(self, trigger: WorkflowTrigger, *, source: str) -> dict[str, Any]:
        """Record a run request; a workflow engine extension, when loaded, starts it."""
        for ext in self.extensions:
            result = await ext.request_run(self, trigger, source)
            if result is not None:
                return result
        payload = triggers.run_payload(trigger, self.config, sense=None, source=source)
        line = f"{source} requested workflow {trigger.name}"
        await self.record("workflow.requested", trigger.name, line, payload)
        return {"workflow": trigger.name, "run": None}

    # -- health ------------------------------------------------------------------------

    def health(self) -> dict[str, Any]:
        """What ``status`` shows, from counters in memory (see ``nerve.runtime.health``)."""
        if self.ready.is_set():
            return {**health(self), "warming": False}
        # warming up: a pause recorded before this start is not read back yet
        return {**health(self), "warming": True, "capture": None}
