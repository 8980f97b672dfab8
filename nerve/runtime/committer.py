"""Group commit: every draft appended while one commit is in flight rides the next one.

Callers ``await committer.append(drafts)`` (or ``append_columns``, which the kernel's hot
path fills field by field, without a draft object per event); the coroutine returns once
the batch is durable (one WAL frame, one fsync for everything that was waiting). Listeners
see each committed table after it is durable, in order.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Callable, Sequence

import pyarrow as pa

from nerve.errors import report
from nerve.events import NERVE_SOURCE, NERVE_TRUST
from nerve.log.drafts import Draft
from nerve.log.fields import EventFields
from nerve.log.store import EventLog

Listener = Callable[[pa.Table], None]


class Columns:
    """Events to append, filled field by field; :meth:`fields` hands them to the log."""

    __slots__ = ("kind", "line", "payload", "source", "subject", "trust", "valid_time_ns")

    def __init__(self) -> None:
        self.kind: list[str] = []
        self.subject: list[str] = []
        self.source: list[int] = []
        self.trust: list[int] = []
        self.valid_time_ns: list[int | None] = []
        self.payload: list[bytes] = []
        self.line: list[str] = []

    def __len__(self) -> int:
        return len(self.kind)

    def record(self, kind: str, subject: str, line: str, payload: bytes) -> None:
        """One first-party record of nerve's own (its kind already known to be valid)."""
        self.kind.append(kind)
        self.subject.append(subject)
        self.source.append(NERVE_SOURCE)
        self.trust.append(NERVE_TRUST)
        self.valid_time_ns.append(None)
        self.payload.append(payload)
        self.line.append(line)

    def add(self, draft: Draft) -> None:
        self.kind.append(draft.kind)
        self.subject.append(draft.subject)
        self.source.append(draft.source)
        self.trust.append(draft.trust)
        self.valid_time_ns.append(draft.valid_time_ns)
        self.payload.append(draft.payload)
        self.line.append(draft.line)

    def extend(self, drafts: Sequence[Draft]) -> None:
        for draft in drafts:
            self.add(draft)

    def take(self, other: Columns) -> None:
        """Append every event of ``other``, in order."""
        for name in self.__slots__:
            getattr(self, name).extend(getattr(other, name))

    def fields(self) -> EventFields:
        return EventFields(
            self.kind,
            self.subject,
            self.source,
            self.trust,
            self.valid_time_ns,
            self.payload,
            self.line,
        )


Waiter = tuple[int, int, "asyncio.Future[pa.Table]"]  # first row, rows, who waits


class Committer:
    def __init__(self, log: EventLog) -> None:
        self.log = log
        self.listeners: list[Listener] = []
        self._pending = Columns()
        self._waiters: list[Waiter] = []
        self._wake = asyncio.Event()
        self._task: asyncio.Task[None] | None = None
        self._queued = 0  # callers queued since start
        self._settled = 0  # of those, how many have their answer (stored or failed)
        self.commits = 0
        self.events = 0

    def start(self) -> None:
        self._task = asyncio.create_task(self._run(), name="committer")

    async def append(self, drafts: Sequence[Draft]) -> pa.Table:
        """Durably append ``drafts`` (one group commit shared with other callers)."""
        if not drafts:
            return self.log.append_drafts([])
        return await self._enqueue(len(drafts), lambda: self._pending.extend(drafts))

    async def append_columns(self, columns: Columns) -> pa.Table:
        """:meth:`append` for events already laid out as columns."""
        if not len(columns):
            return self.log.append_drafts([])
        return await self._enqueue(len(columns), lambda: self._pending.take(columns))

    def submit(self, drafts: Sequence[Draft]) -> None:
        """Queue ``drafts`` for the next commit without waiting for it (records nobody awaits,
        such as folded skip counts); a failure is reported, and ``drain`` still waits."""
        if drafts:
            future = self._enqueue(len(drafts), lambda: self._pending.extend(drafts))
            future.add_done_callback(_report_failure)

    def _enqueue(self, rows: int, fill: Callable[[], None]) -> asyncio.Future[pa.Table]:
        future: asyncio.Future[pa.Table] = asyncio.get_running_loop().create_future()
        self._queued += 1
        self._waiters.append((len(self._pending), rows, future))
        fill()
        self._wake.set()
        return future

    async def _run(self) -> None:
        while True:
            await self._wake.wait()
            self._wake.clear()
            columns, waiters = self._pending, self._waiters
            self._pending, self._waiters = Columns(), []
            if waiters:
                try:
                    await self._commit(columns, waiters)
                finally:
                    self._settled += len(waiters)

    async def _commit(self, columns: Columns, waiters: list[Waiter]) -> None:
        try:
            table = await asyncio.to_thread(lambda: self.log.append_columns(columns.fields()))
        except Exception as exc:  # the error belongs to every waiting caller
            for _, _, future in waiters:
                if not future.done():
                    future.set_exception(exc)
            return
        self.commits += 1
        self.events += table.num_rows
        for start, rows, future in waiters:
            if not future.done():
                future.set_result(table.slice(start, rows))
        for listener in self.listeners:
            listener(table)

    async def drain(self) -> None:
        """Wait until everything queued so far is committed (what is queued meanwhile is
        not waited for, so a busy daemon cannot keep a drain waiting)."""
        target = self._queued
        while self._settled < target:
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
