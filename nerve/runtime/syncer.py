"""``nerve sync`` in the daemon: while the workspace is in a group and ``sync.auto`` holds,
a round every ``sync.interval`` seconds, and sooner (after ``WAKE_S``) when the daemon
commits events of its own, so another device sees them within seconds.

A round runs in a worker thread with an event loop of its own (reading the log and writing
peer logs block), keeping one connection to the transport across rounds. A failed round is
reported in the daemon log and tried again with backoff; the connection is made afresh.
The socket request ``sync`` runs one round now (``nerve sync now`` with a daemon up).
"""

from __future__ import annotations

import asyncio
import random
import threading
from typing import TYPE_CHECKING, Any, Protocol

from nerve.errors import NerveError
from nerve.runtime import journal
from nerve.runtime.extensions import Loop

if TYPE_CHECKING:
    import pyarrow as pa

    from nerve.config.models import NerveConfig
    from nerve.runtime.committer import Committer
    from nerve.sync.engine import Engine, RoundResult
    from nerve.sync.transport import Transport
    from nerve.workspace import WorkspaceDir

WAKE_S = 0.3
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
    """One engine and one transport connection, driven from worker threads one round at a
    time (a private event loop: the daemon's never blocks on the log or the network)."""

    def __init__(self, ws: WorkspaceDir) -> None:
        self.ws = ws
        self._loop = asyncio.new_event_loop()
        self._lock = threading.Lock()
        self._engine: Engine | None = None
        self._bus: Transport | None = None
        self._group_mtime = -1.0

    def round(self) -> RoundResult | None:
        """One round; None when the workspace is in no group."""
        with self._lock:
            return self._loop.run_until_complete(self._round())

    async def _round(self) -> RoundResult | None:
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
        if self._bus is None:
            self._bus = await open_transport(group, self._engine.me)
        try:
            return await self._engine.round(self._bus)
        except BaseException:
            await self._drop()
            raise

    async def _drop(self) -> None:
        if self._bus is not None:
            await self._bus.close()
        self._bus, self._engine = None, None

    def close(self) -> None:
        with self._lock:
            self._loop.run_until_complete(self._drop())
            self._loop.close()


class SyncLoop(Loop):
    """The sync rounds as a kernel extension (no group: it only waits)."""

    def __init__(self) -> None:
        super().__init__()
        self._runner: Runner | None = None
        self._wake = asyncio.Event()

    async def start(self, host: Syncing) -> None:
        self._runner = Runner(host.ws)
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
            self._wake.set()

    async def _now(self, kernel: object, request: dict[str, Any]) -> dict[str, Any]:
        """``sync`` over the socket: one round now, its counts."""
        assert self._runner is not None
        result = await asyncio.to_thread(self._runner.round)
        return {"ok": True, "round": result.to_json() if result else None}

    async def _loop(self, host: Syncing) -> None:
        failures = 0
        while True:
            settings = host.config.sync
            wait = settings.interval
            if settings.auto and self._runner is not None:
                try:
                    await asyncio.to_thread(self._runner.round)
                    if failures:
                        journal.say(f"sync round succeeded after {failures} failed attempts")
                    failures = 0
                except (NerveError, OSError) as exc:
                    failures += 1
                    wait = random.uniform(0.5, 1.0) * min(
                        settings.interval * 2**failures, BACKOFF_MAX_S
                    )
                    journal.warn(
                        f"sync round failed (attempt {failures}), retry in {wait:.1f} s: {exc}"
                    )
            await self._sleep(wait)

    async def _sleep(self, wait: float) -> None:
        """Until ``wait`` passes, or a little after the daemon commits events."""
        self._wake.clear()
        try:
            await asyncio.wait_for(self._wake.wait(), wait)
        except TimeoutError:
            return
        await asyncio.sleep(WAKE_S)
