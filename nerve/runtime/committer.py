"""Group commit: every draft appended while one commit is in flight rides the next one.

Callers ``await committer.append(drafts)``; the coroutine returns once the batch is durable
(one WAL frame, one fsync for everything that was waiting). Listeners see each committed
table after it is durable, in order.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Callable, Sequence

import pyarrow as pa

from nerve.errors import report
from nerve.log.drafts import Draft
from nerve.log.store import EventLog

Listener = Callable[[pa.Table], None]


class Committer:
    def __init__(self, log: EventLog) -> None:
        self.log = log
        self.listeners: list[Listener] = []
        self._pending: list[tuple[list[Draft], asyncio.Future[pa.Table]]] = []
        self._wake = asyncio.Event()
        self._task: asyncio.Task[None] | None = None
        self.commits = 0
        self.events = 0

    def start(self) -> None:
        self._task = asyncio.create_task(self._run(), name="committer")

    async def append(self, drafts: Sequence[Draft]) -> pa.Table:
        """Durably append ``drafts`` (one group commit shared with other callers)."""
        if not drafts:
            return self.log.append_drafts([])
        future: asyncio.Future[pa.Table] = asyncio.get_running_loop().create_future()
        self._pending.append((list(drafts), future))
        self._wake.set()
        return await future

    def submit(self, drafts: Sequence[Draft]) -> None:
        """Queue ``drafts`` for the next commit without waiting for it (records nobody awaits,
        such as folded skip counts); a failure is reported, and ``drain`` still waits."""
        future: asyncio.Future[pa.Table] = asyncio.get_running_loop().create_future()
        future.add_done_callback(_report_failure)
        self._pending.append((list(drafts), future))
        self._wake.set()

    async def _run(self) -> None:
        while True:
            await self._wake.wait()
            self._wake.clear()
            batch, self._pending = self._pending, []
            if batch:
                await self._commit(batch)

    async def _commit(self, batch: list[tuple[list[Draft], asyncio.Future[pa.Table]]]) -> None:
        drafts = [d for group, _ in batch for d in group]
        try:
            table = await asyncio.to_thread(self.log.append_drafts, drafts)
        except Exception as exc:  # the error belongs to every waiting caller
            for _, future in batch:
                if not future.done():
                    future.set_exception(exc)
            return
        self.commits += 1
        self.events += table.num_rows
        start = 0
        for group, future in batch:
            if not future.done():
                future.set_result(table.slice(start, len(group)))
            start += len(group)
        for listener in self.listeners:
            listener(table)

    async def drain(self) -> None:
        """Wait until everything queued so far is committed."""
        while self._pending:
            await asyncio.sleep(0.005)

    async def stop(self) -> None:
        await self.drain()
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task


def _report_failure(future: asyncio.Future[pa.Table]) -> None:
    if not future.cancelled() and future.exception() is not None:
        report(f"a record was not stored: {future.exception()}")
