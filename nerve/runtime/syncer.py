"""``nerve sync`` in the daemon: while the workspace is in a group and ``sync.auto`` holds,
rounds as :class:`~nerve.sync.pace.Pace` schedules them: events the daemon commits are sent
within ``sync.interval`` seconds, a bell from the transport (another device published) brings
a fetch at once, and polls back off while nothing happens.

Rounds run on an event loop of their own in a thread (reading the log and writing peer logs
block), which keeps one connection to the transport across rounds and serves it between
them (its pings, its bells). A failed round is reported in the daemon log and tried again
with backoff; the connection is made afresh. The socket request ``sync`` runs one round now
(``nerve sync now`` with a daemon up).
"""

from __future__ import annotations

import asyncio
import random
import threading
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Protocol

from nerve.errors import NerveError
from nerve.runtime import journal
from nerve.runtime.extensions import Loop
from nerve.sync.pace import Pace

if TYPE_CHECKING:
    import pyarrow as pa

    from nerve.config.models import NerveConfig
    from nerve.runtime.committer import Committer
    from nerve.sync.engine import Engine, RoundResult
    from nerve.sync.transport import Transport
    from nerve.workspace import WorkspaceDir

BACKOFF_MAX_S = 60.0


class Syncing(Protocol):
    """What the sync loop reads of the kernel: the workspace, config and committer."""

    @property
    def ws(self) -> WorkspaceDir: ...

    @property
    def config(self) -> NerveConfig: ...

    @property
    def committer(self) -> Committer: ...


class Runner:
    """One engine and one transport connection on an event loop of its own (a thread: the
    daemon's loop never blocks on the log or the network), one round at a time. ``bell`` is
    called from that thread when the transport rings."""

    def __init__(self, ws: WorkspaceDir, bell: Callable[[], None] = lambda: None) -> None:
        self.ws, self._bell = ws, bell
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._loop.run_forever, name="sync", daemon=True)
        self._thread.start()
        self._lock = threading.Lock()
        self._engine: Engine | None = None
        self._bus: Transport | None = None
        self._group_mtime = -1.0

    def round(self, fetch: bool = True) -> RoundResult | None:
        """One round (``fetch``: receive too); None when the workspace is in no group."""
        with self._lock:
            return asyncio.run_coroutine_threadsafe(self._round(fetch), self._loop).result()

    @property
    def listening(self) -> bool:
        """True while the transport can ring."""
        return self._bus is not None and self._bus.listening

    @property
    def even(self) -> bool:
        """:attr:`Engine.even` (False before the first round)."""
        return self._engine is not None and self._engine.even

    @property
    def settled(self) -> bool:
        """:attr:`Engine.settled` (False before the first round)."""
        return self._engine is not None and self._engine.settled

    async def _round(self, fetch: bool) -> RoundResult | None:
        from nerve.sync.connect import open_transport
        from nerve.sync.group import Group
        from nerve.sync.ops import engine_for, sync_folder

        path = sync_folder(self.ws) / "group.json"
        mtime = path.stat().st_mtime if path.exists() else -1.0
        if mtime != self._group_mtime:  # joined, left or rejoined: start over
            await self._drop()
            self._group_mtime = mtime
        group = Group.load(sync_folder(self.ws)) if mtime >= 0 else None
        if group is None:
            return None
        if self._engine is None:
            self._engine = engine_for(self.ws, group)
        try:
            if self._bus is None:
                self._bus = await open_transport(group, self._engine.me)
                await self._bus.listen(self._bell)
            return await self._engine.round(self._bus, fetch)
        except BaseException:
            await self._drop()
            raise

    async def _drop(self) -> None:
        engine, bus, self._bus, self._engine = self._engine, self._bus, None, None
        try:
            if engine is not None:
                engine.flush()  # the sent mark: may fail as any write may
        finally:
            if bus is not None:
                await bus.close()

    def close(self) -> None:
        with self._lock:
            asyncio.run_coroutine_threadsafe(self._drop(), self._loop).result()
            self._loop.call_soon_threadsafe(self._loop.stop)
            self._thread.join()
            self._loop.close()


class SyncLoop(Loop):
    """The sync rounds as a kernel extension (no group: it only waits)."""

    def __init__(self) -> None:
        super().__init__()
        self._runner: Runner | None = None
        self._wake = asyncio.Event()
        self._pace = Pace(2.0, time.monotonic())

    async def start(self, host: Syncing) -> None:
        loop = asyncio.get_running_loop()
        self._pace = Pace(host.config.sync.interval, time.monotonic())

        def bell() -> None:  # called in the runner's thread
            loop.call_soon_threadsafe(self._rang)

        self._runner = Runner(host.ws, bell)
        host.committer.listeners.append(self._heard)
        self.spawn(self._loop(host), "sync")

    def handlers(self) -> dict[str, Any]:
        return {"sync": self._now}

    async def stop(self, host: object) -> None:
        await super().stop(host)
        if self._runner is not None:
            await asyncio.to_thread(self._runner.close)

    def _heard(self, table: pa.Table) -> None:
        if table.num_rows:
            self._pace.committed(time.monotonic())
            self._wake.set()

    def _rang(self) -> None:
        self._pace.rang(time.monotonic())
        self._wake.set()

    async def _now(self, kernel: object, request: dict[str, Any]) -> dict[str, Any]:
        """``sync`` over the socket: one round now, its counts."""
        assert self._runner is not None
        result = await asyncio.to_thread(self._runner.round)
        return {"ok": True, "round": result.to_json() if result else None}

    async def _loop(self, host: Syncing) -> None:
        failures = 0
        while True:
            settings, pace = host.config.sync, self._pace
            pace.interval = settings.interval
            pace.listening = self._runner is not None and self._runner.listening
            wait = pace.due() - time.monotonic() if settings.auto else settings.interval
            if wait > 0 or not settings.auto:
                await self._sleep(wait)
                continue
            failures = await self._paced_round(settings.interval, failures)

    async def _paced_round(self, interval: float, failures: int) -> int:
        """The round the pace says is due; the failures in a row after it."""
        runner, pace = self._runner, self._pace
        assert runner is not None
        fetch = pace.begin(time.monotonic())
        try:
            result = await asyncio.to_thread(runner.round, fetch)
        except (NerveError, OSError) as exc:
            failures += 1
            retry = random.uniform(0.5, 1.0) * min(interval * 2**failures, BACKOFF_MAX_S)
            journal.warn(f"sync round failed (attempt {failures}), retry in {retry:.1f} s: {exc}")
            pace.failed(time.monotonic() + retry)
            return failures
        if failures:
            journal.say(f"sync round succeeded after {failures} failed attempts")
        received = result is not None and bool(result.received or result.resent)
        pace.done(time.monotonic(), received, runner.even, runner.settled)
        return 0

    async def _sleep(self, wait: float) -> None:
        """Until ``wait`` passes, or events are committed, or the transport rings."""
        self._wake.clear()
        try:
            await asyncio.wait_for(self._wake.wait(), wait)
        except TimeoutError:
            return
