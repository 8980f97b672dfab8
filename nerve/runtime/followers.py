"""``follow`` on the daemon's socket: every committed frame pushed to each subscriber.

The request is the command :class:`~nerve.commands.daemon.Follow`::

    {"v": 1, "type": "follow", "filter": {"kinds": [...], "sources": [...], "hidden": [...]}}

answered ``{"ok": true, "joined": [physical_ns, logical]}`` (its result,
:class:`~nerve.commands.daemon.Joined`): every event stamped after ``joined`` that the filter
keeps follows on the connection, one wire JSON line each (exactly ``nerve tail --json``'s
text), in HLC order; events up to ``joined`` are in the log already for the subscriber to
read. Publishing never waits for a subscriber: each has a queue of at
most ``QUEUE_ROWS`` events (one larger frame may wait alone), encoded ``WRITE_ROWS`` at a
time as the socket drains; one that falls further behind is dropped with a last line

    {"type": "dropped", "resume": [physical_ns, logical], "reason": "..."}

naming the stamp of the last event it was sent, so it can read the rest from the log.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import pyarrow as pa

from nerve.clock import HLC_ZERO, Hlc
from nerve.commands.daemon import Follow, Joined
from nerve.errors import UsageError
from nerve.log.codec import wire_lines
from nerve.log.select import TailFilter

QUEUE_ROWS = 20_000  # events waiting for one subscriber before it is dropped
WRITE_ROWS = 1000  # events encoded per write: the socket's buffer holds at most these
MAX_FOLLOWERS = 32
FINAL_WRITE_S = 5.0


def _last_stamp(table: pa.Table) -> Hlc:
    return Hlc(table.column("physical_ns")[-1].as_py(), table.column("logical")[-1].as_py())


@dataclass(eq=False)
class _Follower:
    filt: TailFilter
    queue: deque[pa.Table] = field(default_factory=deque)
    rows: int = 0
    sent: Hlc = HLC_ZERO
    dropped: bool = False
    wake: asyncio.Event = field(default_factory=asyncio.Event)

    def offer(self, table: pa.Table) -> bool:
        """Queue the rows the filter keeps; False when that would pass the bound."""
        kept = self.filt.apply(table)
        if not kept.num_rows:
            return True
        if self.rows and self.rows + kept.num_rows > QUEUE_ROWS:
            self.queue.clear()  # its memory goes now; the subscriber reads the log instead
            self.rows, self.dropped = 0, True
            self.wake.set()
            return False
        self.queue.append(kept)
        self.rows += kept.num_rows
        self.wake.set()
        return True


class Followers:
    """The kernel's subscribers; :meth:`publish` runs on the event loop for each frame."""

    def __init__(self, newest: Hlc) -> None:
        self.newest = newest  # the last stamp published (or stored before the kernel began)
        self._live: set[_Follower] = set()
        self.dropped = 0

    def __len__(self) -> int:
        return len(self._live)

    def publish(self, table: pa.Table) -> None:
        if not table.num_rows:
            return
        self.newest = max(self.newest, _last_stamp(table))
        for follower in list(self._live):
            if not follower.offer(table):
                self._live.discard(follower)
                self.dropped += 1

    def hook(self, loop: asyncio.AbstractEventLoop) -> Callable[[pa.Table], None]:
        """A commit hook for the log's writer thread: it hands the frame to the loop."""

        def committed(table: pa.Table) -> None:
            with contextlib.suppress(RuntimeError):  # the loop closed: nobody follows now
                loop.call_soon_threadsafe(self.publish, table)

        return committed

    async def serve(
        self, request: dict[str, Any], reader: asyncio.StreamReader, writer: asyncio.StreamWriter
    ) -> None:
        """Answer one ``follow`` request, then push events until either side ends it."""
        filt = TailFilter.from_json(Follow.from_json(request).filter)
        if len(self._live) >= MAX_FOLLOWERS:
            raise UsageError(f"already {MAX_FOLLOWERS} followers", hint="stop another tail -f")
        follower = _Follower(filt)
        joined = follower.sent = self.newest
        self._live.add(follower)  # no await since reading `newest`: nothing falls between
        closed = asyncio.create_task(reader.read(1))  # the subscriber hung up (or spoke)
        closed.add_done_callback(lambda _: follower.wake.set())
        try:
            await _write(writer, _line({"ok": True, **Joined((joined[0], joined[1])).to_json()}))
            await self._push(follower, writer, closed)
        finally:
            self._live.discard(follower)
            closed.cancel()

    async def _push(
        self, follower: _Follower, writer: asyncio.StreamWriter, closed: asyncio.Task[bytes]
    ) -> None:
        while not closed.done():
            await follower.wake.wait()
            follower.wake.clear()
            while follower.queue and not closed.done():
                table = follower.queue.popleft()
                follower.rows -= table.num_rows
                for start in range(0, table.num_rows, WRITE_ROWS):
                    part = table.slice(start, WRITE_ROWS)
                    await _write(writer, "".join(line + "\n" for line in wire_lines(part)))
                    follower.sent = _last_stamp(part)
            if follower.dropped:
                reason = f"more than {QUEUE_ROWS} events waiting to be sent"
                final = {"type": "dropped", "resume": list(follower.sent), "reason": reason}
                with contextlib.suppress(TimeoutError):
                    async with asyncio.timeout(FINAL_WRITE_S):
                        await _write(writer, _line(final))
                return


def _line(msg: dict[str, Any]) -> str:
    return json.dumps(msg, separators=(",", ":")) + "\n"


async def _write(writer: asyncio.StreamWriter, text: str) -> None:
    writer.write(text.encode("utf-8", "surrogatepass"))
    await writer.drain()
