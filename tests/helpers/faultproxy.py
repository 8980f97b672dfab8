"""A fault-injecting TCP proxy on loopback: one listening port per target, forwarding both
ways, whose fault a test sets while connections run (from any thread):

- ``ok``: bytes flow;
- ``refuse``: every open connection is cut and new ones are closed at once;
- ``stall``: open and new connections hold their bytes until the fault is lifted (then they
  flow on, late), as a network that queues does;
- ``drop``: open connections are cut and new ones are accepted and never answered (what
  they send is thrown away; they are cut when the fault is lifted);
- :meth:`Proxy.cut` cuts every open connection now, or after ``after`` more bytes have
  passed (mid-stream).

The proxies of one :class:`Proxies` share an event loop in a thread of their own.
"""

from __future__ import annotations

import asyncio
import contextlib
import threading
from collections.abc import Iterator

MODES = ("ok", "refuse", "stall", "drop")
CHUNK = 16 * 1024


class Proxy:
    """One listening port forwarding to ``target`` (a port on 127.0.0.1)."""

    def __init__(self, loop: asyncio.AbstractEventLoop, target: int) -> None:
        self.loop, self.target, self.port = loop, target, 0
        self.mode = "ok"
        self._flowing = asyncio.Event()
        self._flowing.set()
        self._open: set[asyncio.StreamWriter] = set()
        self._budget: int | None = None
        self._server: asyncio.Server | None = None

    async def listen(self) -> None:
        self._server = await asyncio.start_server(self._serve, "127.0.0.1", 0)
        self.port = self._server.sockets[0].getsockname()[1]

    def set(self, mode: str) -> None:
        """Change the fault (thread-safe)."""
        assert mode in MODES, mode
        self.loop.call_soon_threadsafe(self._set, mode)

    def cut(self, after: int = 0) -> None:
        """Cut every open connection now, or once ``after`` more bytes passed (thread-safe)."""
        self.loop.call_soon_threadsafe(self._cut_after, after)

    def shut(self) -> None:
        """Stop listening and cut every connection (on the proxies' loop)."""
        self._set("refuse")
        if self._server is not None:
            self._server.close()

    def _set(self, mode: str) -> None:
        before, self.mode = self.mode, mode
        if mode in ("refuse", "drop") or before == "drop":
            self._cut_all()
        if mode == "stall":
            self._flowing.clear()
        else:
            self._flowing.set()

    def _cut_after(self, after: int) -> None:
        if after <= 0:
            self._cut_all()
        else:
            self._budget = after

    def _cut_all(self) -> None:
        self._budget = None
        for writer in list(self._open):
            writer.transport.abort()
        self._open.clear()

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        if self.mode == "refuse":
            writer.transport.abort()
            return
        if self.mode == "drop":
            self._open.add(writer)
            with contextlib.suppress(OSError, ConnectionError):
                while await reader.read(CHUNK):
                    pass
            return
        try:
            up_reader, up_writer = await asyncio.open_connection("127.0.0.1", self.target)
        except OSError:
            writer.transport.abort()
            return
        self._open |= {writer, up_writer}
        await asyncio.gather(self._pump(reader, up_writer), self._pump(up_reader, writer))
        self._open -= {writer, up_writer}

    async def _pump(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        """Copy bytes one way until either side ends; then end both."""
        try:
            while data := await reader.read(CHUNK):
                await self._flowing.wait()
                if writer not in self._open:
                    break
                writer.write(data)
                await writer.drain()
                self._spend(len(data))
        except (OSError, ConnectionError):
            pass
        finally:
            writer.transport.abort()

    def _spend(self, count: int) -> None:
        if self._budget is not None:
            self._budget -= count
            if self._budget <= 0:
                self._cut_all()


class Proxies:
    """The proxies of a test, served from one event loop in a daemon thread."""

    def __init__(self) -> None:
        self.loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self.loop.run_forever, daemon=True)
        self._thread.start()
        self.all: list[Proxy] = []

    def to(self, target: int) -> Proxy:
        """A new proxy forwarding to ``target``, listening."""
        proxy = Proxy(self.loop, target)
        asyncio.run_coroutine_threadsafe(proxy.listen(), self.loop).result(10)
        self.all.append(proxy)
        return proxy

    def close(self) -> None:
        """Stop listening, cut every connection, end and close the loop."""
        asyncio.run_coroutine_threadsafe(self._shut(), self.loop).result(10)
        self.loop.call_soon_threadsafe(self.loop.stop)
        self._thread.join(5)
        self.loop.close()

    async def _shut(self) -> None:
        for proxy in self.all:
            proxy.shut()
        tasks = [t for t in asyncio.all_tasks() if t is not asyncio.current_task()]
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)


@contextlib.contextmanager
def proxies() -> Iterator[Proxies]:
    """A :class:`Proxies` for the length of the block."""
    found = Proxies()
    try:
        yield found
    finally:
        found.close()
