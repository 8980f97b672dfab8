"""One sync round: send this device's new shared events, take the peers' boxes into their
logs, announce where this device stands. Every step is idempotent, so a round may be cut
anywhere (a kill, a lost connection) and the next one finishes the work.

**Batches** (at most ``BATCH_EVENTS`` events and a box of ``BOX_BYTES``) carry ``since`` (the
sender's previous shared stamp) and events in the sender's order; a receiver takes a batch
when ``since`` is not past what it holds of that sender and imports only the events after it.
A batch past a gap waits in memory for the missing one.
**Resends**: a sender that sees, in the peers' statuses, a device still short of what was
sent for ``RESEND_ROUNDS`` rounds rewinds to it and sends again under new batch ids (a box
the server lost or corrupted costs only that time).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import time
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import blake3

from nerve import fsio
from nerve.clock import HLC_ZERO, Hlc
from nerve.errors import EventError
from nerve.sync.box import Damaged, open_box, seal_batch, seal_box, token
from nerve.sync.history import SharedDigest, SharedTally, Sharing, files_seen

if TYPE_CHECKING:
    import pyarrow as pa

    from nerve.log.store import EventLog
    from nerve.sync.group import Group
    from nerve.sync.transport import Transport

__all__ = ["BATCH_EVENTS", "BOX_BYTES", "RESEND_ROUNDS", "Engine", "RoundResult"]

SEND_ROWS = 50_000  # rows of the log screened for sharing between publishes
BATCH_EVENTS = 5000  # about 200 KiB of ordinary events in a box: fewer round trips and fsyncs
BOX_BYTES = 512 * 1024  # well under NATS's default max_payload (1 MiB), headers and all
FETCH_LIMIT = 64
RESEND_ROUNDS = 4
WRITER_WAIT_S = 10.0
STALE_NS = 300 * 10**9
LOOK_EVERY_ROUNDS = 5  # peers' statuses, while all held what was sent at the last look
HEARTBEAT_NS = 60 * 10**9  # an unchanged status is put again after this, well before STALE_NS
STATE_EVERY_NS = 10 * 10**9  # a moved sent mark is stored at most this often (and at flush)


@dataclass
class RoundResult:
    """What one round did: events sent and received, damaged boxes dropped, resends."""

    sent: int = 0
    received: int = 0
    damaged: int = 0
    resent: int = 0
    waiting: int = 0

    def to_json(self) -> dict[str, int]:
        return dict(self.__dict__)


@dataclass
class _Pending:
    since: Hlc
    events: pa.Table


class Engine:
    """A device's sync state across rounds (the daemon keeps one; ``sync now`` makes one)."""

    def __init__(
        self,
        folder: Path,
        log_root: Path,
        node: str,
        group: Group,
        sharing: Sharing,
        log_opts: dict[str, Any],
    ) -> None:
        self.folder, self.log_root, self.node, self.group = folder, log_root, node, group
        self.sharing, self.log_opts = sharing, log_opts
        self.me = token(group.key, f"node:{node}")
        self._pending: dict[str, list[_Pending]] = {}
        self._tally = SharedTally(folder, log_root, node, sharing)
        self._short: dict[str, tuple[Hlc, int]] = {}
        self._sent_seen: tuple[Any, ...] = ()
        self._mark: dict[str, Any] | None = None
        self._mark_dirty, self._mark_saved_ns = False, -STATE_EVERY_NS
        self._writers: dict[str, EventLog] = {}
        self._unlooked = 0  # rounds since the last look at the peers' statuses
        self._settled_at: list[int] | None = None  # the sent mark when a look found all even
        self._newest: dict[str, tuple[tuple[Any, ...], Hlc]] = {}
        self._announced: tuple[dict[str, Any], int] = ({}, 0)

    # -- the round ------------------------------------------------------------------------

    async def round(self, transport: Transport, fetch: bool = True) -> RoundResult:
        """Send, receive (unless ``fetch`` is false: a round only to send), announce (see
        the module docstring)."""
        result = RoundResult()
        await self._resend_if_stuck(transport, result)
        result.sent = await self._send(transport)
        if fetch:
            await self._receive(transport, result)
        await self.announce(transport)
        self._tally.drop_reads()
        return result

    @property
    def even(self) -> bool:
        """True when the last look at the statuses found every peer holding all this device
        had sent and this device holding all each peer said it had of its own, and no batch
        waits for a missing one."""
        return self._settled_at is not None and not any(self._pending.values())

    @property
    def settled(self) -> bool:
        """True when nothing is left to chase: :attr:`even`, and nothing sent since."""
        return self.even and self._settled_at == list(self._state()["sent"])

    async def _send(self, transport: Transport) -> int:
        """Publish shared events past the sent mark. The log's rows are screened
        ``SEND_ROWS`` at a time with their batches published in between, so a long backlog
        never leaves the connection unserved for long."""

        state = self._state()
        sent, epoch = Hlc(*state["sent"]), int(state["epoch"])
        seen = (files_seen(self.log_root), sent, epoch)
        if seen == self._sent_seen:
            return 0  # the log's files and the mark are as after the last send: nothing new
        rows = self._tally.rows_since(self._tally.snapshot(self.log_root), sent)
        count = 0
        for start in range(0, rows.num_rows, SEND_ROWS):
            chunk = rows if rows.num_rows <= SEND_ROWS else rows.slice(start, SEND_ROWS)
            events = self._tally.screen(chunk)
            sent, done = await self._publish(transport, events, sent, epoch)
            count += done
            await asyncio.sleep(0)  # the connection's own work (pings) between chunks
        self._sent_seen = (seen[0], sent, epoch)
        return count

    async def _publish(
        self, transport: Transport, events: pa.Table, sent: Hlc, epoch: int
    ) -> tuple[Hlc, int]:
        """Publish ``events`` a batch at a time, advancing the mark only after the transport
        acknowledged each batch; the mark and the count published. A batch whose box would
        pass ``BOX_BYTES`` is halved until it fits (a single event that does not fit goes
        alone)."""
        count, total = 0, events.num_rows
        todo = [events.slice(i, BATCH_EVENTS) for i in range(0, total, BATCH_EVENTS)]
        while todo:
            chunk = todo.pop(0)
            box = self._box(sent, chunk)
            rows = chunk.num_rows
            if len(box) > BOX_BYTES and rows > 1:
                todo[:0] = [chunk.slice(0, rows // 2), chunk.slice(rows // 2)]
                continue
            last = _last_row(chunk)
            ident = blake3.blake3(f"{self.me}|{sent}|{epoch}".encode() + last["id"])
            stamp = Hlc(last["physical_ns"], last["logical"])
            await transport.publish(self.me, ident.hexdigest()[:32], stamp, box)
            sent = stamp
            count += rows
            self._save_state({"sent": list(sent), "epoch": epoch})
        return sent, count

    def _box(self, since: Hlc, chunk: pa.Table) -> bytes:
        """The sealed box of a batch: ``since`` and the events, in the sender's order."""
        from nerve.log.checked import WIRE_COLUMNS

        head = {"v": 2, "node": self.node, "device": self.group.device, "since": list(since)}
        return seal_batch(self.group.key, head, chunk.select(WIRE_COLUMNS))

    async def _receive(self, transport: Transport, result: RoundResult) -> None:
        """Fetch boxes until none are new; store each sender's in its peer log (opened once
        for the round, as its single writer)."""
        try:
            await self._fetch_all(transport, result)
        finally:
            logs, self._writers = self._writers, {}
            for log in logs.values():
                log.close()

    async def _fetch_all(self, transport: Transport, result: RoundResult) -> None:
        while True:
            deliveries = await transport.fetch(self._positions(), FETCH_LIMIT)
            if not deliveries:
                break
            progressed = False
            for delivery in deliveries:
                try:
                    body = open_box(self.group.key, delivery.blob)
                except Damaged:
                    result.damaged += 1
                    await delivery.done()
                    continue
                got = self._take(body)
                progressed = progressed or got > 0
                result.received += got
                await delivery.done()
            if not progressed and len(deliveries) < FETCH_LIMIT:
                break
        result.waiting = sum(len(v) for v in self._pending.values())

    def _take(self, body: dict[str, Any]) -> int:
        """Store a batch (and any waiting batches it unblocks); the events imported."""
        node = body.get("node")
        if not isinstance(node, str) or node == self.node:
            return 0
        peer = token(self.group.key, f"node:{node}")
        try:
            since = Hlc(*body["since"])
            table = _events_of(body)
        except (KeyError, TypeError, ValueError, EventError):
            return 0
        self._pending.setdefault(peer, []).append(_Pending(since, table))
        self._note_device(peer, node, str(body.get("device") or ""))
        return self._drain(peer)

    def _drain(self, peer: str) -> int:
        """Import every waiting batch of ``peer`` that now connects; the events imported."""
        imported, waiting = 0, self._pending.get(peer, [])
        while True:
            newest = self._peer_newest(peer)
            ready = [p for p in waiting if p.since <= newest]
            if not ready:
                break
            for item in ready:
                waiting.remove(item)
                held = self._peer_newest(peer)
                fresh = _after(item.events, held)
                if fresh.num_rows:
                    imported += self._import(peer, fresh)
        newest = self._peer_newest(peer)
        self._pending[peer] = [p for p in waiting if p.events.num_rows and _last(p) > newest]
        return imported

    # -- peer logs ------------------------------------------------------------------------

    def _peer_root(self, peer: str) -> Path:
        return self.folder / "peers" / peer / "log"

    def _peer_newest(self, peer: str) -> Hlc:
        """The newest stamp of ``peer``'s log (its writer's, while this round holds it; else
        read again only when its files changed)."""
        from nerve.log.reader import snapshot

        if peer in self._writers:
            return self._writers[peer].newest
        root = self._peer_root(peer)
        if not root.is_dir():
            return HLC_ZERO
        seen = files_seen(root)
        kept = self._newest.get(peer)
        if kept is not None and kept[0] == seen:
            return kept[1]
        newest = snapshot(root).newest
        self._newest[peer] = (seen, newest)
        return newest

    def _import(self, peer: str, events: pa.Table) -> int:
        """Append a peer's events to its log."""
        return self._writer(peer).import_table(events)

    def _writer(self, peer: str) -> EventLog:
        """``peer``'s log, open for this round as its single writer (waiting a little while
        another round holds it)."""
        from nerve.errors import WriterLocked
        from nerve.log.store import EventLog

        if peer in self._writers:
            return self._writers[peer]
        root = self._peer_root(peer)
        fsio.private_dir(root.parent)
        deadline = time.monotonic() + WRITER_WAIT_S
        while True:
            try:
                log = self._writers[peer] = EventLog(root, node=self.node, **self.log_opts)
                return log
            except WriterLocked:
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.05)

    def _positions(self) -> dict[str, Hlc]:
        from nerve.sync.history import peer_roots

        return {name: self._peer_newest(name) for name, _ in peer_roots(self.folder)}

    # -- devices, status, resend ----------------------------------------------------------

    def _note_device(self, peer: str, node: str, device: str) -> None:
        path = self.folder / "peers" / peer / "device.json"
        text = json.dumps({"node": node, "device": device}, sort_keys=True).encode()
        if not path.exists() or fsio.read_bytes(path) != text:
            # only a name to show: a note that cannot be written is tried again with the
            # peer's next batch, and never costs the batch (unacked, it would wait for
            # the transport's redelivery)
            with contextlib.suppress(OSError):
                fsio.private_dir(path.parent)
                fsio.write_private(path, text, site="sync.device", exclusive=False)

    def digest(self) -> SharedDigest:
        """The shared digest now, kept up to date across rounds
        (:class:`~nerve.sync.history.SharedTally`)."""
        return self._tally.read()

    async def announce(self, transport: Transport) -> SharedDigest:
        """Put this device's status box: its shared digest and what it holds per node (not
        again while it says the same and is younger than ``HEARTBEAT_NS``). The digest is
        brought up to date in a thread: reading a heavy device's whole log (a tally that
        starts over) must not leave the connection unserved meanwhile."""
        found = await asyncio.to_thread(self.digest)
        body = {
            "v": 1,
            "node": self.node,
            "device": self.group.device,
            "sent": self._state()["sent"],
        }
        body.update(found.to_json())
        now = time.time_ns()
        last, when = self._announced
        if body == last and now - when < HEARTBEAT_NS:
            return found
        await transport.put_status(self.me, seal_box(self.group.key, {**body, "time_ns": now}))
        self._announced = (body, now)
        return found

    async def _resend_if_stuck(self, transport: Transport, result: RoundResult) -> None:
        """Rewind the sent mark to a peer that stayed short of it, without progress, for
        ``RESEND_ROUNDS`` rounds (a recent status only: a device gone quiet is not waited on).
        While settled, the statuses are read again only every ``LOOK_EVERY_ROUNDS`` rounds
        (a box lost since costs that many more); after a send, at the next round."""
        self._unlooked += 1
        if self.settled and self._unlooked < LOOK_EVERY_ROUNDS:
            return
        self._unlooked = 0
        state = self._state()
        behind = self._look(await read_statuses(self.group.key, transport), Hlc(*state["sent"]))
        if behind is not None:
            self._short.clear()
            self._save_state({"sent": list(behind), "epoch": int(state["epoch"]) + 1})
            result.resent += 1

    def _look(self, statuses: list[dict[str, Any]], sent: Hlc) -> Hlc | None:
        """Note each recent peer status (how long it has been short of ``sent``; whether it
        is ahead of what this device holds of it); the stamp to rewind to, if any peer has
        been short for ``RESEND_ROUNDS`` looks."""
        even, behind = True, None
        for status in statuses:
            node = str(status.get("node"))
            if node == self.node or time.time_ns() - int(status.get("time_ns", 0)) > STALE_NS:
                continue
            nodes = status.get("nodes", {})
            have = Hlc(*nodes[self.node][1]) if self.node in nodes else HLC_ZERO
            own = Hlc(*nodes[node][1]) if node in nodes else HLC_ZERO
            peer = token(self.group.key, f"node:{node}")
            even = even and have >= sent and own <= self._peer_newest(peer)
            seen, rounds = self._short.get(node, (have, 0))
            self._short[node] = (have, rounds + 1 if have == seen and have < sent else 0)
            if self._short[node][1] >= RESEND_ROUNDS and (behind is None or have < behind):
                behind = have
        self._settled_at = list(sent) if even else None
        return behind

    def _state(self) -> dict[str, Any]:
        """The sent mark and resend epoch: read once, then kept (this engine writes them)."""
        if self._mark is None:
            self._mark = self._read_state()
        return dict(self._mark)

    def _read_state(self) -> dict[str, Any]:
        path = self.folder / "state.json"
        if not path.exists():
            return {"sent": [0, 0], "epoch": 0}
        try:
            return dict(json.loads(fsio.read_bytes(path)))
        except (OSError, ValueError):
            return {"sent": [0, 0], "epoch": 0}  # a torn state file: sending again is harmless

    def _save_state(self, state: dict[str, Any]) -> None:
        """Keep a new mark; store it at once when the epoch moved (a resend's batch ids
        must not repeat the first send's), else at most every ``STATE_EVERY_NS`` and at
        :meth:`flush`: after a crash an older mark only sends again what was sent."""
        moved_epoch = self._mark is not None and self._mark["epoch"] != state["epoch"]
        self._mark, self._mark_dirty = dict(state), True
        if moved_epoch or time.monotonic_ns() - self._mark_saved_ns >= STATE_EVERY_NS:
            self.flush()

    def flush(self) -> None:
        """Store the sent mark if it moved since it was last stored."""
        if self._mark is None or not self._mark_dirty:
            return
        text = json.dumps(self._mark, sort_keys=True).encode()
        fsio.replace_unsynced(self.folder / "state.json", text, site="sync.state")
        self._mark_dirty, self._mark_saved_ns = False, time.monotonic_ns()


async def read_statuses(key: bytes, transport: Transport) -> list[dict[str, Any]]:
    """Every device's status that opens under the group key (damaged ones are skipped)."""
    out = []
    for blob in await transport.statuses():
        try:
            out.append(open_box(key, blob))
        except Damaged:
            continue
    return out


def _last_row(table: pa.Table) -> dict[str, Any]:
    """The last row of a table, as a dict."""
    row: dict[str, Any] = table.slice(table.num_rows - 1).to_pylist()[0]
    return row


def _last(item: _Pending) -> Hlc:
    """The stamp of a waiting batch's last event."""
    row = _last_row(item.events)
    return Hlc(row["physical_ns"], row["logical"])


def _after(table: pa.Table, held: Hlc) -> pa.Table:
    """The rows of ``table`` stamped after ``held``."""
    import pyarrow.compute as pc

    physical, logical = table.column("physical_ns"), table.column("logical")
    later = pc.or_(
        pc.greater(physical, held.physical_ns),
        pc.and_(pc.equal(physical, held.physical_ns), pc.greater(logical, held.logical)),
    )
    return table.filter(later)


def _events_of(body: dict[str, Any]) -> pa.Table:
    """A batch's events as columns: a version 2 batch's table, or a version 1 batch's JSON
    events read one by one (``EventError`` for one that is not an event)."""
    import pyarrow as pa

    from nerve.log.checked import WIRE_COLUMNS
    from nerve.log.codec import table_from_events
    from nerve.log.wire import event_from_json

    table = body.get("table")
    if isinstance(table, pa.Table):
        return table
    events = [event_from_json(e, own=True) for e in body["events"]]
    return table_from_events(events).select(WIRE_COLUMNS)
