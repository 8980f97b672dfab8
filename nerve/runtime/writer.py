"""The single writer's front: every append the daemon makes goes through here.

Batches from the socket's commands (``nerve.commands``, which screen them first), nerve's
own records, and maintenance (seal, compact, forget, archive) that needs the writer, all
over one :class:`Committer` and the open :class:`EventLog`; listeners see every stored
table, imports and keyed batches too.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import Any, Protocol

import pyarrow as pa

from nerve.config.models import NerveConfig
from nerve.events import ErasedEvent, Event
from nerve.log.codec import table_from_events
from nerve.log.drafts import Draft
from nerve.log.store import EventLog
from nerve.log.wire import row_to_json
from nerve.privacy.policy import Policy
from nerve.runtime.committer import Columns, Committer


class Current(Protocol):
    """The configuration and privacy rules in force (both change with a reload)."""

    @property
    def config(self) -> NerveConfig: ...

    @property
    def privacy(self) -> Policy: ...


class Writer:
    def __init__(
        self,
        log: EventLog,
        committer: Committer,
        current: Current,
        after_maintenance: Callable[[], Awaitable[None]],
    ) -> None:
        self.log = log
        self.committer = committer
        self._current = current
        self._after = after_maintenance
        self.appended = 0  # events stored since start (appends, keyed batches, imports)
        self.base_events = 0  # events the log held before them
        committer.listeners.append(self._count)

    @property
    def stored_events(self) -> int:
        """Events in the log, counted in memory (the dev view reads it every refresh)."""
        return self.base_events + self.appended

    def _count(self, table: pa.Table) -> None:
        self.appended += table.num_rows

    def _control(self, kind: str, subject: str, line: str, payload: Any) -> Draft:
        return self._current.privacy.redact(Draft.control(kind, subject, line, payload))

    async def append(self, drafts: list[Draft]) -> pa.Table:
        """Store drafts as they are (already captured and redacted)."""
        return await self.committer.append(drafts)

    async def append_columns(self, columns: Columns) -> pa.Table:
        return await self.committer.append_columns(columns)

    async def record(self, kind: str, subject: str, line: str, payload: Any) -> pa.Table:
        """Store one of nerve's own records (redacted, never dropped); durable on return."""
        return await self.committer.append([self._control(kind, subject, line, payload)])

    def submit(self, kind: str, subject: str, line: str, payload: Any) -> None:
        """Queue one of nerve's own records that nobody waits for: it rides the next commit."""
        self.committer.submit([self._control(kind, subject, line, payload)])

    @property
    def policy(self) -> Policy:
        """The privacy rules in force (a command screens with them: ``nerve.commands``)."""
        return self._current.privacy

    async def append_batch(
        self, drafts: list[Draft], key: str | None = None
    ) -> tuple[list[dict[str, Any]], bool]:
        """Append drafts (already screened) as one group commit; the stored rows in wire
        form, and whether ``key`` was used before (nothing new stored)."""
        if key is None:
            table = await self.committer.append(drafts)
            return [row_to_json(r) for r in table.to_pylist()], False
        await self.committer.drain()  # keyed batches commit alone: key and batch share a frame
        before = self.log.newest
        table = await asyncio.to_thread(self.log.append_drafts, drafts, key=key)
        if self.log.newest > before:  # stored now, not a replayed key
            self._heard(table)
        replayed = self.log.newest == before and table.num_rows > 0
        return [row_to_json(r) for r in table.to_pylist()], replayed

    async def import_batch(
        self, events: list[Event | ErasedEvent], key: str | None = None
    ) -> tuple[int, bool]:
        """Import whole events (already screened) at once, their order checked against the
        log's newest; how many, and whether ``key`` was used before."""
        await self.committer.drain()
        log = self.log
        before = log.newest
        count = int(await asyncio.to_thread(log.import_events, events, key=key))
        whole = [e for e in events if isinstance(e, Event)]
        if whole and log.newest > before:  # not a replayed key
            self._heard(table_from_events(whole))  # imported observations are attended too
        return count, key is not None and bool(events) and log.newest == before

    def _heard(self, table: pa.Table) -> None:
        for listener in self.committer.listeners:
            listener(table)

    async def with_log(self, work: Callable[[EventLog], Any]) -> Any:
        """Run ``work`` with the writer, off the loop (forget, archive, maintenance): events
        already handed to the committer are stored first; appends go on meanwhile."""
        await self.committer.drain()
        log = self.log
        try:
            return await asyncio.to_thread(work, log)
        finally:
            await self._after()  # e.g. segments retired by an erasure are dropped
