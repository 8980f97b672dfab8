"""`nerve mcp`: serve the log to AI assistants over MCP (stdio, or --http), and its token."""

import sys
from typing import Annotated

import typer

from nerve.cli.state import door
from nerve.errors import UsageError

mcp_app = typer.Typer(
    help="Serve this workspace's log to AI assistants over the Model Context Protocol.",
    invoke_without_command=True,
)


@mcp_app.callback(invoke_without_command=True)
def serve(
    ctx: typer.Context,
    http: Annotated[
        str | None,
        typer.Option(
            "--http",
            metavar="HOST:PORT",
            help="Serve streamable HTTP at http://HOST:PORT/mcp (bearer token: `nerve mcp "
            "token`) instead of stdio. PORT 0 picks a free port.",
        ),
    ] = None,
    allow_remote: Annotated[
        bool, typer.Option("--allow-remote", help="Let --http listen beyond loopback.")
    ] = False,
) -> None:
    """Serve the log over MCP on stdin/stdout (what an assistant's config runs), or --http.

    Tools are read-only unless mcp.allow_write in nerve.yaml names a write; every call is an
    agent.access event (`nerve audit access` lists them). Works with or without the daemon.
    """
    if ctx.invoked_subcommand is not None:
        return
    ws = door(write=True)
    if http is None:
        if allow_remote:
            raise UsageError("--allow-remote applies to --http")
        from nerve.mcp.server import serve_stdio

        serve_stdio(ws)
        return
    host, port = _host_port(http)
    from nerve.mcp.server import check_host, serve_http
    from nerve.mcp.token import token

    check_host(host, allow_remote=allow_remote)
    token(ws)  # made now, so a client can be given it before its first request

    def ready(url: str) -> None:
        sys.stderr.write(f"nerve mcp: serving {url} (bearer token: `nerve mcp token`)\n")
        sys.stderr.flush()

    serve_http(ws, host, port, ready=ready)


def _host_port(text: str) -> tuple[str, int]:
    host, sep, port = text.rpartition(":")
    if not sep or not host or not port.isdigit() or int(port) > 65535:
        raise UsageError(
            f"--http {text!r}: give HOST:PORT", hint="e.g. --http 127.0.0.1:8765 (port 0: any)"
        )
    return host.strip("[]"), int(port)


@mcp_app.command("token")
def token_cmd(
    rotate: Annotated[
        bool, typer.Option("--rotate", help="Replace it; clients must take the new one.")
    ] = False,
) -> None:
    """Print the bearer token `nerve mcp --http` requires (made on first use)."""
    from nerve.mcp.token import token

    typer.echo(token(door(), rotate=rotate))


def register(app: typer.Typer) -> None:
    app.add_typer(mcp_app, name="mcp", rich_help_panel="Advanced")
