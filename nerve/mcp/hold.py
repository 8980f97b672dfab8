"""Holding ``nerve ui`` and ``nerve mcp --http`` up against a local crowd.

Any process on this machine may connect, before any token is checked. So the servers keep a
**door**: at most ``ceiling()`` connections open at once, well under the open-file limit (the
rest of the limit is kept in reserve for the log, DuckDB and the token file, so ``accept()``
never meets ``EMFILE``). A connection is **waiting** while it has not sent a whole request's
headers: since it was accepted, or since its last answer on a kept-alive connection. A
waiting connection is closed after ``HEADER_TIMEOUT_S`` (slowloris); and when the door is full,
a new connection makes room by closing the one that has waited longest, so a crowd that never
finishes a request cannot keep the owner's new connection out. A connection whose request is
being answered (a page, a live tail) is never closed for room.

:func:`serving` builds the uvicorn settings, and the listening socket, both servers run with.
"""

from __future__ import annotations

import array
import asyncio
import errno
import fcntl
import resource
import socket
import termios
import time
from collections import OrderedDict
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import h11
from uvicorn.protocols.http.h11_impl import H11Protocol

if TYPE_CHECKING:
    import uvicorn

__all__ = [
    "HEADER_TIMEOUT_S", "KEEP_ALIVE_S", "MAX_CONNECTIONS", "Door", "ceiling", "guard", "serving",
]  # fmt: skip

MAX_CONNECTIONS = 256
RESERVE_FILES = 256
HEADER_TIMEOUT_S = 10.0
KEEP_ALIVE_S = 5
SWEEP_S = 1.0


def ceiling(
    most: int = MAX_CONNECTIONS,
    reserve: int = RESERVE_FILES,
    limit: Callable[[], tuple[int, int]] = lambda: resource.getrlimit(resource.RLIMIT_NOFILE),
) -> int:
    """How many connections may be open at once: ``most``, fewer when the open-file limit
    less ``reserve`` is lower (never under 8)."""
    soft, _ = limit()
    if soft == resource.RLIM_INFINITY:
        return most
    return max(8, min(most, soft - reserve))


class Door:
    """The connections one server holds, the longest waiting first; its listening socket asks
    :meth:`room` before each ``accept()``."""

    def __init__(
        self, most: int, header_timeout: float = HEADER_TIMEOUT_S,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:  # fmt: skip
        self.most, self.header_timeout, self.clock = most, header_timeout, clock
        self.held: OrderedDict[_Held, float] = OrderedDict()  # connection -> waiting since
        self.pending = 0  # accepted, not yet made (within a loop turn or two: made or gone)
        self.shed = 0
        self._timer: asyncio.TimerHandle | None = None

    def room(self) -> bool:
        """Whether one more connection may be accepted now, closing the longest-waiting one
        for it if the door is full. No: every held connection is busy, or has bytes not yet
        read (a request just sent, perhaps the owner's: it is read before anyone is shed)."""
        if len(self.held) + self.pending < self.most:
            return True
        quiet = next((c for c in self.held if c.waiting() and not c.unread()), None)
        if quiet is None:
            return False
        self._close(quiet)
        return len(self.held) + self.pending < self.most

    def enter(self, conn: _Held) -> None:
        """A connection made: held, waiting for its request's headers from now."""
        self.pending = max(0, self.pending - 1)
        self.held[conn] = self.clock()
        self._arm()

    def answered(self, conn: _Held) -> None:
        """A kept-alive connection answered: it waits for its next request from now."""
        if conn in self.held:
            self.held[conn] = self.clock()
            self.held.move_to_end(conn)

    def leave(self, conn: _Held) -> None:
        self.held.pop(conn, None)

    def sweep(self) -> None:
        """Close every connection that has waited longer than the header timeout."""
        late = self.clock() - self.header_timeout
        self.pending = 0
        for conn, since in list(self.held.items()):
            if since <= late and conn.waiting():
                self._close(conn)

    def busy(self) -> bool:
        """Whether every held connection is being answered (none could be closed for room)."""
        return len(self.held) >= self.most and not any(c.waiting() for c in self.held)

    def _arm(self) -> None:
        """Sweep every ``SWEEP_S`` while anything is held (a timer, not a task: a server's
        task group never waits for it)."""
        if self._timer is None:
            self._timer = asyncio.get_running_loop().call_later(SWEEP_S, self._tick)

    def _tick(self) -> None:
        self._timer = None
        self.sweep()
        if self.held:
            self._arm()

    def _close(self, conn: _Held) -> None:
        self.held.pop(conn, None)
        self.shed += 1
        conn.transport.abort()  # no goodbye: the peer is not reading


class _Guarded(socket.socket):
    """A listening socket that accepts only while its door has room."""

    door: Door

    def accept(self) -> tuple[socket.socket, Any]:
        if not self.door.room():
            if self.door.busy():  # asyncio stops accepting for a second, and says so
                raise OSError(errno.EMFILE, "every connection nerve holds is busy")
            raise BlockingIOError  # asyncio accepts again at its next turn
        self.door.pending += 1
        return super().accept()


def guard(sock: socket.socket, door: Door) -> socket.socket:
    """``sock`` (bound, not yet listening) as one that accepts only while ``door`` has room."""
    guarded = _Guarded(sock.family, sock.type, sock.proto, fileno=sock.detach())
    guarded.door = door
    return guarded


class _Held(H11Protocol):
    """uvicorn's h11 protocol, through a :class:`Door`."""

    door: Door

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        super().connection_made(transport)
        self.door.enter(self)

    def connection_lost(self, exc: Exception | None) -> None:
        self.door.leave(self)
        super().connection_lost(exc)

    def on_response_complete(self) -> None:
        super().on_response_complete()
        self.door.answered(self)

    def waiting(self) -> bool:
        """Whether no whole request's headers have arrived since the last answer."""
        return bool(self.conn.their_state is h11.IDLE)

    def unread(self) -> int:
        """Bytes the peer sent that are not read yet."""
        sock = self.transport.get_extra_info("socket")
        if sock is None or sock.fileno() < 0:
            return 0
        count = array.array("i", [0])
        fcntl.ioctl(sock.fileno(), termios.FIONREAD, count)
        return int(count[0])


def _protocol(door: Door) -> type[H11Protocol]:
    return type("HeldH11Protocol", (_Held,), {"door": door})


def serving(
    app: Any, sock: socket.socket, door: Door | None = None, **settings: Any
) -> tuple[uvicorn.Config, socket.socket]:
    """uvicorn's settings for ``app``, and ``sock`` guarded, both behind ``door`` (by default
    one at :func:`ceiling`)."""
    import uvicorn

    door = door or Door(ceiling())
    config = uvicorn.Config(
        app, http=_protocol(door), timeout_keep_alive=KEEP_ALIVE_S,
        limit_concurrency=door.most * 2, **settings,
    )  # fmt: skip
    return config, guard(sock, door)
