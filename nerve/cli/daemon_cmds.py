"""Daemon commands: dev, daemon start|stop|status|restart|logs|run, and top-level aliases."""

import sys
from typing import Annotated, Any

import typer

from nerve.cli.output import emit_json
from nerve.cli.state import door as _door
from nerve.cli.state import workspace as _ws

daemon_app = typer.Typer(help="Run nerve's daemon in the background.", no_args_is_help=True)
JsonFlag = Annotated[bool, typer.Option("--json", help="JSON output.")]


def dev() -> None:
    """Run the daemon in the foreground with a live view (Ctrl+C stops).

    Piped, it prints the daemon's log lines instead of the view."""
    from nerve.runtime import daemon

    view = sys.stdout.isatty()
    daemon.run_foreground(_ws(write=True), view=view, echo=None if view else sys.stdout)


@daemon_app.command("run")
def run_cmd() -> None:
    """Run the daemon in the foreground without a view, its log on stderr (what `start` runs)."""
    from nerve.runtime import daemon

    daemon.run_foreground(_ws(write=True), echo=sys.stderr)


@daemon_app.command("start")
def start() -> None:
    """Start the daemon in the background."""
    pid = _door(write=True).start()
    typer.echo(f"nerve daemon started (pid {pid})")


@daemon_app.command("stop")
def stop() -> None:
    """Stop the daemon."""
    pid = _door().stop()
    typer.echo(f"nerve daemon stopped (pid {pid})" if pid else "nerve daemon is not running")


@daemon_app.command("restart")
def restart() -> None:
    """Stop, then start the daemon."""
    ws = _door(write=True)
    ws.stop()
    typer.echo(f"nerve daemon started (pid {ws.start()})")


@daemon_app.command("status")
def status(as_json: JsonFlag = False) -> None:
    """Show whether the daemon runs, and its health."""
    status_ = _door().status()
    health = status_.health
    if not status_.running:
        if as_json:
            emit_json({"running": False})
        else:
            typer.echo("nerve daemon is not running")
        raise typer.Exit(3)
    if as_json:
        emit_json({"running": True, **health})
        return
    typer.echo(
        f"running  pid {health['pid']}, up {health['uptime_s']} s\n"
        f"events   {health['events']} appended ({health['commits']} commits), "
        f"{health['segments']} segments, {health['tail_rows']} unsealed\n"
        f"senses   {health['senses']} in {len(health['groups'])} groups\n"
        f"capture  {_capture(health.get('capture'))}"
    )
    for sense in health.get("sense_results", []):
        typer.echo(_sense_line(sense))


def _sense_line(sense: dict[str, Any]) -> str:
    """One sense as `status` shows it: computes, errors, its last result and last error."""
    last = sense.get("last_result") or "-"
    line = (
        f"  {sense['name']}  {sense['computes']} computes, {sense['errors']} errors  last: {last}"
    )
    error = sense.get("last_error")
    return f"{line}  error: {error}" if error else line


def _capture(capture: dict[str, Any] | None) -> str:
    from nerve.privacy.pause import PauseState

    return PauseState.from_json(capture).describe() if capture else "capturing"


@daemon_app.command("logs")
def logs(
    n: Annotated[int, typer.Option("-n", min=0, help="Lines to show.")] = 50,
    offset: Annotated[
        int, typer.Option("--offset", help="Skip this many of the newest lines (page back).")
    ] = 0,
    follow: Annotated[bool, typer.Option("-f", "--follow", help="Keep printing.")] = False,
) -> None:
    """Print the daemon's own log: start-up, reloads, restarts, errors, shutdown
    (not events: see `nerve tail`). `--offset K` pages back: the N lines before the newest K;
    stderr names the command for the page before."""
    from nerve.errors import NerveError
    from nerve.runtime import daemon

    if offset < 0:
        raise NerveError(f"--offset must be 0 or more, got {offset}", field="offset")
    path = daemon.log_path(_ws())
    if follow:
        for line in daemon.follow_log(path, lines=n):
            typer.echo(line)
        return
    if not path.exists():
        typer.echo("(no daemon log yet)")
        return
    shown, earlier = daemon.log_page(path, n, offset)
    if shown:
        typer.echo("\n".join(shown))
    if earlier is not None:
        typer.echo(f"earlier lines: nerve logs --offset {earlier} -n {n}", err=True)


def register(app: typer.Typer) -> None:
    app.add_typer(daemon_app, name="daemon")
    app.command("dev")(dev)
    app.command("start", help="Start the daemon (alias of `daemon start`).")(start)
    app.command("stop", help="Stop the daemon (alias of `daemon stop`).")(stop)
    app.command("status", help="Daemon status (alias of `daemon status`).")(status)
    app.command("logs", help="The daemon's own log (alias of `daemon logs`).")(logs)
