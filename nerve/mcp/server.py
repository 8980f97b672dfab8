"""The MCP server itself, on the official SDK (``mcp.server.mcpserver.MCPServer``).

:func:`build` assembles it for a workspace: the tools and resources of
:mod:`nerve.mcp.catalog` behind the recording middleware of :mod:`nerve.mcp.recorder`.
:func:`serve_stdio` runs it on stdin/stdout; :func:`serve_http` on the SDK's streamable HTTP
(uvicorn), behind the SDK's bearer middleware checking the workspace's token
(:mod:`nerve.mcp.token`), on loopback unless told otherwise (:func:`check_host`).
"""

from __future__ import annotations

import contextlib
import ipaddress
import signal
import socket
from collections.abc import Callable, Iterator
from typing import Any

import anyio
from mcp.server.auth.provider import AccessToken
from mcp.server.auth.settings import AuthSettings
from mcp.server.mcpserver import MCPServer

from nerve.api import Workspace
from nerve.errors import UsageError
from nerve.mcp import hold
from nerve.mcp.catalog import INSTRUCTIONS, add_resources, add_tools
from nerve.mcp.recorder import Middleware, Transport
from nerve.mcp.token import check, token_path
from nerve.version import __version__

__all__ = ["build", "check_host", "serve_http", "serve_stdio"]

_LOOPBACK_NAMES = ("localhost",)


# -- building and serving ----------------------------------------------------------------------


class _Verifier:
    """The SDK's bearer middleware asks this whether a token is the workspace's."""

    def __init__(self, ws: Workspace) -> None:
        self.path = token_path(ws)

    async def verify_token(self, token: str) -> AccessToken | None:
        if not check(self.path, token):
            return None
        return AccessToken(token=token, client_id="nerve-token", scopes=[])


def build(ws: Workspace, transport: Transport = "stdio", *, url: str | None = None) -> MCPServer:
    """The server for ``ws``; for HTTP, ``url`` is where it listens (the token's issuer)."""
    auth: dict[str, Any] = {}
    if transport == "http":
        issuer = url or "http://127.0.0.1"
        auth = {
            "auth": AuthSettings(issuer_url=issuer, resource_server_url=None),  # type: ignore[arg-type]
            "token_verifier": _Verifier(ws),
        }
    server: MCPServer = MCPServer(
        "nerve",
        version=__version__,
        instructions=INSTRUCTIONS,
        log_level="WARNING",
        **auth,
    )
    server.middleware.append(Middleware(ws, transport))
    add_tools(server, list(ws.settings.config.mcp.allow_write))
    add_resources(server, ws)
    return server


def check_host(host: str, *, allow_remote: bool) -> None:
    """Refuse to listen beyond this machine unless ``allow_remote``."""
    if allow_remote or host in _LOOPBACK_NAMES:
        return
    try:
        loopback = ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        loopback = False
    if not loopback:
        raise UsageError(
            f"--http {host}: not a loopback address; nerve serves its log to this machine only",
            hint="listen on 127.0.0.1, or give --allow-remote (the token is still required)",
        )


def serve_stdio(ws: Workspace) -> None:
    """Serve on stdin/stdout until the client closes them."""
    from nerve.mcp.stdio import serve

    server = build(ws, "stdio")
    middleware = next((m for m in server.middleware if isinstance(m, Middleware)), None)
    serve(server, middleware)


def serve_http(
    ws: Workspace, host: str, port: int, *, ready: Callable[[str], None] | None = None
) -> None:
    """Serve streamable HTTP at ``http://host:port/mcp`` until interrupted (SIGINT or
    SIGTERM); ``ready`` is told the URL once the socket listens (port 0: the one chosen)."""
    import uvicorn

    sock = listen(host, port)
    url = f"http://{_url_host(host)}:{sock.getsockname()[1]}"
    server = build(ws, "http", url=url)
    app = server.streamable_http_app(host=host)
    config, sock = hold.serving(app, sock, log_level="warning", lifespan="on")
    runner = uvicorn.Server(config)

    async def main() -> None:
        async with anyio.create_task_group() as group:
            group.start_soon(lambda: runner.serve(sockets=[sock]))
            while not runner.started and not runner.should_exit:
                await anyio.sleep(0.05)
            if runner.started and ready is not None:
                ready(f"{url}/mcp")

    with sock, _stop_on_signals():
        anyio.run(main)


def listen(host: str, port: int) -> socket.socket:
    """A socket bound to ``host:port`` (port 0: any free one); a clear error if it cannot be."""
    try:
        infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE)
        family, kind, proto, _, address = infos[0]
        sock = socket.socket(family, kind, proto)
    except OSError as exc:
        raise UsageError(f"--http {host}:{port}: {exc.strerror or exc}") from None
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind(address)
    except OSError as exc:
        sock.close()
        raise UsageError(
            f"cannot listen on {host}:{port}: {exc.strerror or exc}",
            hint="pick another port (0 picks a free one)",
        ) from None
    return sock


class _Stopped(Exception):
    """A stop signal: uvicorn shut down and raised it again."""


@contextlib.contextmanager
def _stop_on_signals() -> Iterator[None]:
    """SIGINT and SIGTERM end the server cleanly (exit 0): uvicorn shuts down on them, then
    raises the signal again for the handler it found, which is this one."""

    def stop(signum: int, frame: Any) -> None:
        raise _Stopped

    previous = {sig: signal.signal(sig, stop) for sig in (signal.SIGINT, signal.SIGTERM)}
    try:
        yield
    except* _Stopped:  # raised inside the task group: it arrives in an ExceptionGroup
        pass
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)


def _url_host(host: str) -> str:
    return f"[{host}]" if ":" in host and not host.startswith("[") else host
