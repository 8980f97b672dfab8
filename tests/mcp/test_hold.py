"""The door both HTTP servers keep (nerve.mcp.hold): how many connections, which one is shed
for room, and when a request's headers come too late; over a fake clock and stand-in
connections (the real servers under a real crowd: test_mcp_flood.py, test_ui_flood.py)."""

from __future__ import annotations

import asyncio
import resource
from collections.abc import Callable

from nerve.mcp.hold import HEADER_TIMEOUT_S, Door, ceiling


class _Transport:
    def __init__(self) -> None:
        self.aborted = False

    def abort(self) -> None:
        self.aborted = True


class _Conn:
    """A held connection as the door sees it: waiting for headers or not, bytes unread."""

    def __init__(self, *, waiting: bool = True, unread: int = 0) -> None:
        self.transport, self.is_waiting, self.bytes = _Transport(), waiting, unread

    def waiting(self) -> bool:
        return self.is_waiting

    def unread(self) -> int:
        return self.bytes


class _Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def _let_in(door: Door, *conns: _Conn) -> None:
    """Accept and make each connection, as the listening socket and uvicorn would."""
    for conn in conns:
        assert door.room()
        door.pending += 1
        door.enter(conn)  # type: ignore[arg-type]


def _in_loop(body: Callable[[], None]) -> None:
    async def run() -> None:
        body()

    asyncio.run(run())


def test_a_full_door_sheds_the_longest_waiting_connection_for_a_new_one() -> None:
    def body() -> None:
        clock = _Clock()
        door = Door(3, clock=clock)
        first, second, third = _Conn(), _Conn(), _Conn()
        _let_in(door, first, second, third)
        clock.now = 1.0
        door.answered(first)  # kept alive, answered: it waits from now
        assert door.room()
        assert second.transport.aborted and not first.transport.aborted
        assert not third.transport.aborted and door.shed == 1

    _in_loop(body)


def test_a_connection_being_answered_or_with_bytes_unread_is_never_shed() -> None:
    def body() -> None:
        door = Door(3, clock=_Clock())
        answering, just_sent, quiet = _Conn(waiting=False), _Conn(unread=80), _Conn()
        _let_in(door, answering, just_sent, quiet)
        assert door.room() and quiet.transport.aborted
        _let_in(door, _Conn(waiting=False))
        assert not door.room()  # the owner's request, sent and not yet read, is read first
        assert not answering.transport.aborted and not just_sent.transport.aborted
        assert not door.busy()  # not all busy: accept again at the next turn
        just_sent.is_waiting, just_sent.bytes = False, 0
        assert door.busy()  # all answering: stop accepting for a while

    _in_loop(body)


def test_headers_that_never_finish_are_cut_at_the_header_timeout() -> None:
    def body() -> None:
        clock = _Clock()
        door = Door(10, clock=clock)
        slow, answering, kept = _Conn(), _Conn(waiting=False), _Conn()
        _let_in(door, slow, answering, kept)
        clock.now = HEADER_TIMEOUT_S - 1
        door.answered(kept)
        door.sweep()
        assert not slow.transport.aborted
        clock.now = HEADER_TIMEOUT_S
        door.sweep()
        assert slow.transport.aborted and not answering.transport.aborted
        assert not kept.transport.aborted  # its next request's headers have time from its answer
        clock.now = 2 * HEADER_TIMEOUT_S
        door.sweep()
        assert kept.transport.aborted and not answering.transport.aborted
        assert list(door.held) == [answering]

    _in_loop(body)


def test_the_ceiling_keeps_files_in_reserve() -> None:
    assert ceiling(256, 256, lambda: (1024, 4096)) == 256
    assert ceiling(256, 256, lambda: (300, 4096)) == 44
    assert ceiling(256, 256, lambda: (100, 4096)) == 8
    unlimited = resource.RLIM_INFINITY
    assert ceiling(256, 256, lambda: (unlimited, unlimited)) == 256
