"""Serving ``nerve ui``: a socket on loopback (unless allowed beyond), uvicorn, the login URL."""

from __future__ import annotations

import contextlib
import errno
import signal
import socket
import threading
from collections.abc import Callable
from typing import Any

import anyio

from nerve.api import Workspace
from nerve.errors import UsageError
from nerve.mcp import hold
from nerve.mcp.server import check_host, listen
from nerve.ui.app import build_app
from nerve.ui.auth import Keys, Lifetimes, login_url, token, token_path
from nerve.ui.guard import Served

__all__ = ["serve"]

GRACE_S = 2
WARM_WAIT_S = 10  # a stop right after the start waits this long for the summary to finish
PORT_TRIES = 20  # a taken port: the next ones tried above it, as Jupyter does


class _Stopped(Exception):
    """SIGINT or SIGTERM: uvicorn shut down and raised the signal again."""


def serve(
    ws: Workspace,
    host: str = "127.0.0.1",
    port: int | None = None,
    *,
    allow_remote: bool = False,
    ready: Callable[[str], None] | None = None,
    say: Callable[[str], None] = lambda line: None,
    next_path: str = "",
) -> None:
    """Serve the UI until SIGINT/SIGTERM on ``port`` (None: ``ui.port`` in nerve.yaml; taken:
    the next free one, which ``say`` is told); ``ready`` gets the one login URL once
    listening (which goes on to ``next_path`` once logged in, when given)."""
    import uvicorn

    check_host(host, allow_remote=allow_remote)
    token(ws)  # made on first use: the login code is made from it
    sock = listen_near(host, ws.settings.config.ui.port if port is None else port, say)
    bound = sock.getsockname()[1]
    name = f"[{host}]" if ":" in host else host
    keys = Keys(token_path(ws), Lifetimes.of(ws))
    app = build_app(ws, keys, Served(host, bound, allow_remote))
    config, sock = hold.serving(
        app, sock, log_level="warning", lifespan="off", timeout_graceful_shutdown=GRACE_S
    )  # an open live tail never ends by itself: a stop waits this long for it, then cuts it
    runner = uvicorn.Server(config)
    warming = threading.Thread(target=_warm, args=(ws,), daemon=True)

    async def main() -> None:
        async with anyio.create_task_group() as group:
            group.start_soon(lambda: runner.serve(sockets=[sock]))
            while not runner.started and not runner.should_exit:
                await anyio.sleep(0.05)
            if runner.started and ready is not None:
                ready(login_url(f"http://{name}:{bound}", keys.login_code(), next_path))
            warming.start()

    def stop(signum: int, frame: Any) -> None:
        raise _Stopped

    previous = {sig: signal.signal(sig, stop) for sig in (signal.SIGINT, signal.SIGTERM)}
    try:
        with sock:
            anyio.run(main)
    except* _Stopped:
        pass
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)
        if warming.is_alive():  # a thread killed inside DuckDB at exit aborts the process
            warming.join(WARM_WAIT_S)


def listen_near(host: str, port: int, say: Callable[[str], None]) -> socket.socket:
    """A socket on ``host:port``, else on the first free port of the ``PORT_TRIES`` above it,
    telling ``say`` which in one line (port 0: any free one)."""
    last = min(port + PORT_TRIES, 65535) if port else 0
    for candidate in range(port, last + 1):
        sock = _unless_taken(host, candidate)
        if sock is not None:
            if candidate != port:
                say(f"port {port} is taken; using {candidate}")
            return sock
    raise UsageError(
        f"cannot listen on {host}: ports {port}-{last} are all taken",
        hint="pick another with --port or ui.port in nerve.yaml (0 picks a free one)",
    )


def _unless_taken(host: str, port: int) -> socket.socket | None:
    """``listen`` on ``host:port``, or None when another socket holds the port (any other
    failure is ``listen``'s error)."""
    try:
        return listen(host, port)
    except UsageError:
        if port and _taken(host, port):
            return None
        raise


def _taken(host: str, port: int) -> bool:
    """Whether binding ``host:port`` fails because the address is in use."""
    family, kind, proto, _, address = socket.getaddrinfo(
        host, port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE
    )[0]
    with socket.socket(family, kind, proto) as probe:
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            probe.bind(address)
        except OSError as exc:
            return exc.errno == errno.EADDRINUSE
    return False


def _warm(ws: Workspace) -> None:
    """Summarise today's segments while the login URL is being opened: the first page of a
    large log then need not wait for it (the caches are the pages' own)."""
    import duckdb

    from nerve.errors import NerveError
    from nerve.ui import data

    with contextlib.suppress(NerveError, OSError, duckdb.Error):  # the page will say it
        data.timeline(ws, data.window(None, None))


def free_port() -> int:
    """A loopback port free now (for tests and benches)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])
