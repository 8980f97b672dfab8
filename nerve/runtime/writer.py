"""The single writer's front: every append the daemon makes goes through here.

Emits and imports from the socket, nerve's own records, and maintenance calls (seal,
compact, forget, archive) that need the writer, all over one :class:`Committer` and the
open :class:`EventLog`. Capture rules apply to what is emitted; an attestation is checked
before anything is stored; listeners see every stored table, imports and keyed batches too.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import Any, Protocol

import pyarrow as pa

from nerve.config.models import NerveConfig
from nerve.errors import NerveError
from nerve.events import ErasedEvent, Event
from nerve.log.attest import check_batch, drafts_of_object
from nerve.log.codec import table_from_events
from nerve.log.drafts import Draft
from nerve.log.store import EventLog
from nerve.log.wire import row_to_json, stored_event_from_json
from nerve.privacy.policy import Policy
from nerve.runtime.committer import Columns, Committer


class Current(Protocol):
    """The configuration and privacy rules in force (both change with a reload)."""

    @property
    def config(self) -> NerveConfig: ...

    @property
    def privacy(self) -> Policy: ...


def parse_each(objects: list[Any], parse: Callable[[Any], Any], first: int = 0) -> list[Any]:
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


def parse_drafts(objects: list[Any], first: int = 0) -> list[Draft]:
    """Request objects as drafts; an error names the event (``first`` events before)."""
    parsed = parse_each(objects, drafts_of_object, first)  # an attestation adds a draft
    return [draft for drafts in parsed for draft in drafts]


def parse_events(objects: list[Any], first: int = 0) -> list[Event | ErasedEvent]:
    """Request objects as events of a copied log to import; an error names the event."""
    return parse_each(objects, stored_event_from_json, first)


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

    async def emit(self, objects: list[Any], key: str | None = None) -> list[dict[str, Any]]:
        return await self.emit_drafts(parse_drafts(objects), key)

    async def emit_drafts(
        self, drafts: list[Draft], key: str | None = None
    ) -> list[dict[str, Any]]:
        """Append drafts as one group commit, privacy rules applied; the stored rows in the
        wire form (a dropped draft has none)."""
        drafts = self._current.privacy.capture_all(drafts)
        check_batch(drafts, self._current.config.attestation.keys)  # vouched for, or refused
        if key is None:
            table = await self.committer.append(drafts)
        else:  # keyed batches commit alone: the key and its batch share one frame
            await self.committer.drain()
            before = self.log.newest
            table = await asyncio.to_thread(self.log.append_drafts, drafts, key=key)
            if self.log.newest > before:  # stored now, not a replayed key
                self._heard(table)
        return [row_to_json(r) for r in table.to_pylist()]

    async def import_events(self, objects: list[Any], key: str | None = None) -> int:
        return await self.import_parsed(parse_events(objects), key)

    async def import_parsed(self, events: list[Event | ErasedEvent], key: str | None = None) -> int:
        """Import whole events at once (their order checked against the log's newest);
        refused if a privacy rule would change one (``PrivacyError``), or if one claims
        ``Attested`` without a checkable attestation after it (``TrustError``)."""
        whole = [e for e in events if isinstance(e, Event)]  # an erased one holds no text
        check_batch(whole, self._current.config.attestation.keys)
        self._current.privacy.screen(whole)
        await self.committer.drain()
        log = self.log
        before = log.newest
        count = int(await asyncio.to_thread(log.import_events, events, key=key))
        if whole and log.newest > before:  # not a replayed key
            self._heard(table_from_events(whole))  # imported observations are attended too
        return count

    def _heard(self, table: pa.Table) -> None:
        for listener in self.committer.listeners:
            listener(table)

    async def log_call(self, method: str, **kwargs: Any) -> Any:
        """Run a log maintenance call (``seal``, ``compact``) in the writer's thread."""
        if method == "seal":
            return await self.with_log(lambda log: log.seal(**kwargs))
        if method == "compact":
            return await self.with_log(lambda log: log.compact(**kwargs))
        raise NerveError(f"unknown log call {method!r} (known: compact, seal)")

    async def with_log(self, work: Callable[[EventLog], Any]) -> Any:
        """Run ``work`` with the writer, off the loop (forget, archive, maintenance): events
        already handed to the committer are stored first; appends go on meanwhile."""
        await self.committer.drain()
        log = self.log
        try:
            return await asyncio.to_thread(work, log)
        finally:
            await self._after()  # e.g. segments retired by an erasure are dropped
