"""`nerve ui`: serve the log as web pages on loopback, and its login token."""

import sys
from typing import Annotated

import typer

from nerve.cli.state import door

ui_app = typer.Typer(
    help="Serve this workspace's log as web pages (timeline, search, live tail, SQL, audit).",
    invoke_without_command=True,
)


@ui_app.callback(invoke_without_command=True)
def serve(
    ctx: typer.Context,
    port: Annotated[
        int | None,
        typer.Option(
            "--port",
            help="Port to listen on (default: ui.port in nerve.yaml, else 5290; taken: the "
            "next free one; 0: any free one).",
            show_default=False,
        ),
    ] = None,
    host: Annotated[str, typer.Option("--host", help="Address to listen on.")] = "127.0.0.1",
    open_: Annotated[bool, typer.Option("--open", help="Open the login URL in a browser.")] = False,
    next_: Annotated[
        str, typer.Option("--next", help="The page the login goes on to (/attention/SEQ).")
    ] = "",
    allow_remote: Annotated[
        bool,
        typer.Option(
            "--allow-remote", help="Let --host be beyond loopback (token still required)."
        ),
    ] = False,
) -> None:
    """Serve the UI and print its one login URL (it sets a cookie, then the URL is not needed).

    Works with or without the daemon; writes (pause, resume, forget, trigger) go the way the
    CLI's do. Stop it with Ctrl+C.
    """
    if ctx.invoked_subcommand is not None:
        return
    if sys.stderr.isatty():  # loading the pages' code takes seconds on a busy machine
        sys.stderr.write("nerve ui: starting…\n")
        sys.stderr.flush()
    from nerve.ui.server import serve as serve_ui

    def ready(url: str) -> None:
        sys.stdout.write(f"{url}\n")
        sys.stdout.flush()
        sys.stderr.write("nerve ui: open the URL above to log in (Ctrl+C stops)\n")
        if open_:
            import webbrowser

            webbrowser.open(url)

    def say(line: str) -> None:
        sys.stderr.write(f"nerve ui: {line}\n")

    serve_ui(door(), host, port, allow_remote=allow_remote, ready=ready, say=say, next_path=next_)


@ui_app.command("token")
def token_cmd(
    rotate: Annotated[
        bool, typer.Option("--rotate", help="Replace it: every open session must log in again.")
    ] = False,
) -> None:
    """Print the workspace's token, for Authorization: Bearer (made on first use); the login
    URL carries a one-time code made from it."""
    from nerve.ui.auth import token

    typer.echo(token(door(), rotate=rotate))


def register(app: typer.Typer) -> None:
    app.add_typer(ui_app, name="ui", rich_help_panel="Everyday")
