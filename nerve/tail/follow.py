"""Following the log as it grows: pushed by the daemon when one runs, else polled.

Through the daemon (``follow`` on its socket, see ``nerve.runtime.followers``) nothing is
re-read: each committed frame arrives once. Events committed before the subscription began
are read from the log, up to the stamp the daemon names, so none falls between the two. A
subscriber the daemon dropped for falling behind reads the log from its last event and
subscribes again; if the daemon stops, following goes on by polling the log. Either way
each event is given once, in order, and only one batch is held at a time.
"""

from __future__ import annotations

import json
import time
from collections.abc import Generator, Iterator
from dataclasses import dataclass

import pyarrow as pa

from nerve.clock import Hlc
from nerve.log import segments as seg
from nerve.log.reader import TailReader, snapshot, table_since
from nerve.log.select import TailFilter
from nerve.tail.batch import Batch, wire_stamp
from nerve.transport import connect
from nerve.workspace import WorkspaceDir

FOLLOW_GATHER_S = 0.02
_EVENT = b'{"hlc":'


def follow_tables(
    ws: WorkspaceDir,
    *,
    filt: TailFilter,
    since: Hlc,
    poll_s: float = 0.2,
    stop_after_s: float | None = None,
) -> Iterator[pa.Table]:
    """Yield each batch of new matching events as another process appends them.

    Reads only what is new each time (see :class:`nerve.log.reader.TailReader`); sleeps
    ``poll_s`` when it has caught up, and only ``FOLLOW_GATHER_S`` while events keep coming.
    """
    reader = TailReader(ws.log_root, since)
    started = time.monotonic()
    while stop_after_s is None or time.monotonic() - started < stop_after_s:
        table = reader.poll()
        matching = filt.apply(table) if table.num_rows else table
        if matching.num_rows:
            yield matching
        # caught up: wait a poll; busy: a short pause lets a batch gather
        time.sleep(poll_s if not table.num_rows else min(poll_s, FOLLOW_GATHER_S))


@dataclass
class _Cursor:
    last: Hlc  # the newest event given out so far


def follow(
    ws: WorkspaceDir, *, filt: TailFilter, since: Hlc, poll_s: float = 0.2, daemon: bool = True
) -> Iterator[Batch]:
    """Each batch of matching events stamped after ``since``, as they are stored."""
    cursor = _Cursor(since)
    while daemon and connect(ws).daemon:
        outcome = yield from _through_daemon(ws, filt, cursor)
        if outcome != "dropped":
            break  # no daemon to follow (gone, or one that does not serve `follow`)
    for table in follow_tables(ws, filt=filt, since=cursor.last, poll_s=poll_s):
        cursor.last = Batch(table).newest
        yield Batch(table)


def _through_daemon(
    ws: WorkspaceDir, filt: TailFilter, cursor: _Cursor
) -> Generator[Batch, None, str]:
    """Follow one subscription; return how it ended: ``dropped``, ``gone`` or ``refused``."""
    from nerve.commands.daemon import Follow, Joined
    from nerve.errors import DaemonError
    from nerve.runtime.ipc import LineStream
    from nerve.transport import socket_path

    try:
        stream = LineStream(socket_path(ws), Follow(filt.to_json()).to_json())
    except DaemonError:
        return "gone"
    try:
        if not stream.reply.get("ok"):
            return "refused"
        joined = Hlc(*Joined.from_json(stream.reply).joined)
        if joined > cursor.last:  # stored before the subscription: read from the log
            stored = table_since(snapshot(ws.log_root), cursor.last)
            yield from _give(Batch(filt.apply(seg.up_to(stored, joined))), cursor)
        try:
            for lines in stream.lines():
                events = [_text(line) for line in lines if line.startswith(_EVENT)]
                fresh = [text for text in events if wire_stamp(text) > cursor.last]
                yield from _give(Batch(wire=fresh), cursor)
                if len(events) < len(lines) and _dropped(lines):
                    return "dropped"
        except OSError:
            pass
        return "gone"
    finally:
        stream.close()


def _text(line: bytes) -> str:
    return line.decode("utf-8", "surrogatepass")


def _give(batch: Batch, cursor: _Cursor) -> Iterator[Batch]:
    if len(batch):
        cursor.last = batch.newest
        yield batch


def _dropped(lines: list[bytes]) -> bool:
    for text in lines:
        if text.startswith(b'{"type":'):
            message = json.loads(text)
            if message.get("type") == "dropped":
                return True
    return False
