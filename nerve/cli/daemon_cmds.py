"""Daemon commands: dev, daemon start|stop|status|restart|logs|run, and top-level aliases."""

import sys
import time
from typing import TYPE_CHECKING, Annotated, Any

import typer

from nerve.cli.output import (
    UNWRAPPED,
    Layout,
    emit_json,
    flat,
    is_terminal,
    plural,
    terminal_width,
)
from nerve.cli.state import door as _door
from nerve.safetext import shown

if TYPE_CHECKING:
    from nerve.api import Workspace

daemon_app = typer.Typer(help="Run nerve's daemon in the background.", no_args_is_help=True)
JsonFlag = Annotated[bool, typer.Option("--json", help="JSON output.")]


def dev() -> None:
    """Run the daemon in the foreground with a live view (Ctrl+C stops).

    With a daemon already running (`nerve start`), view that one instead: Ctrl+C leaves the
    view and the daemon runs on. Piped, it prints the daemon's log lines instead of the view."""

    view = sys.stdout.isatty()
    ws = _door()
    if ws.daemon.answers():
        _attach(ws, view=view)
        return
    if view:
        from nerve.dev.view import run_with_view

        _door(write=True).daemon.run(view=run_with_view)
    else:
        _door(write=True).daemon.run(echo=sys.stdout)


def _attach(ws: "Workspace", *, view: bool) -> None:
    from nerve.dev import attach
    from nerve.runtime import daemon

    if not view:  # piped: the running daemon's log, followed
        for line in daemon.follow_log(ws.daemon.log_path(), lines=0):
            typer.echo(shown(line))
        return
    pid = attach.view(ws)
    if pid:
        typer.echo(f"left the view; the daemon runs on (pid {pid}): `nerve stop` stops it")
    else:
        typer.echo("the daemon stopped")


@daemon_app.command("run")
def run_cmd() -> None:
    """Run the daemon in the foreground without a view, its log on stderr (what `start` runs)."""
    ws = _door(write=True)
    _refresh_hooks(ws.root)
    ws.daemon.run(echo=sys.stderr)


def _refresh_hooks(root: Any) -> None:
    """Rewrite the workspace's shell hook files an older nerve wrote (see `nerve setup`)."""
    from nerve.setup.plan import refresh_hooks

    for path in refresh_hooks(root):
        typer.echo(f"nerve: refreshed the shell hook {path}", err=True)


@daemon_app.command("start")
def start() -> None:
    """Start the daemon in the background."""
    ws = _door(write=True)
    _refresh_hooks(ws.root)
    typer.echo(f"nerve daemon started (pid {ws.daemon.start()})")


@daemon_app.command("stop")
def stop() -> None:
    """Stop the daemon."""
    pid = _door().daemon.stop()
    typer.echo(f"nerve daemon stopped (pid {pid})" if pid else "nerve daemon is not running")


@daemon_app.command("restart")
def restart() -> None:
    """Stop, then start the daemon."""
    ws = _door(write=True)
    ws.daemon.stop()
    typer.echo(f"nerve daemon started (pid {ws.daemon.start()})")


@daemon_app.command("status")
def status(as_json: JsonFlag = False) -> None:
    """Show whether the daemon runs, and its health."""
    from nerve.cli.state import found

    root, why = found()
    where = {"workspace": str(root), "found_by": why}
    status_ = _door().daemon.status()
    health = status_.health
    if not status_.running:
        if as_json:
            emit_json({"running": False, **where})
        else:
            typer.echo(shown(f"workspace {root} ({why})\nnerve daemon is not running"))
        raise typer.Exit(3)
    if as_json:
        emit_json({"running": True, **health, **where})
        return
    lines = status_lines(health, terminal_width() if is_terminal() else None)
    lines.insert(0, f"workspace {root} ({why})")
    typer.echo(shown("\n".join(lines)))  # sense results and errors quote what senses saw


def status_lines(health: dict[str, Any], width: int | None) -> list[str]:
    """What `status` prints: the daemon's health, then one aligned row per sense (cut to
    ``width`` on a terminal; whole when piped)."""
    groups = len(health["groups"])
    lines = [
        f"running  pid {health['pid']}, up {_uptime(float(health['uptime_s']))}"
        + (
            ", warming up (emits are stored; senses and workflows not yet loaded)"
            if health.get("warming")
            else ""
        ),
        f"events   {plural(health['events'], 'event')} appended "
        f"({plural(health['commits'], 'commit')}), {plural(health['segments'], 'segment')}, "
        f"{health['tail_rows']:,} unsealed",
        f"senses   {health['senses']} in {plural(groups, 'group')}",
        "capture  "
        + ("not known yet" if health.get("warming") else _capture(health.get("capture"))),
    ]
    if health.get("sealing"):
        lines.append(f"sealing  {_sealing(health['sealing'])}")
    if health.get("notifications"):  # a daemon of this version says whether they reach anyone
        lines.append(f"notifications: {health['notifications']}")
    if width:
        lines = _wrapped(lines, width)
    senses = health.get("sense_results", [])
    if not senses:
        return lines
    columns = ["sense", "computes", "errors", "last", "error"]
    rows = [[flat(_cell_text(r.get(k))) for k in ("name", "computes", "errors")] for r in senses]
    now_ns = time.time_ns()
    for row, sense in zip(rows, senses, strict=True):
        row += [flat(_latest(sense, now_ns)), flat(sense.get("last_error") or "")]
    if not any(row[-1] for row in rows):  # no sense has an error: no empty column
        columns, rows = columns[:-1], [row[:-1] for row in rows]
    layout, under = _sense_layout(columns, rows, width or UNWRAPPED)
    if 3 in layout.shown:  # the reading cut at a word, its age kept (not mid-number)
        from nerve.runtime.latest import fit_latest

        room = layout.widths[layout.shown.index(3)]
        rows = [[*row[:3], fit_latest(row[3], room), *row[4:]] for row in rows]
    table = [layout.line(columns)]
    for row in rows:
        table.append(layout.line(row))
        if under and row[-1]:
            table += _wrapped([f"  error: {row[-1]}"], width or UNWRAPPED, indent="    ")
    return [*lines, "", *table]


def _sense_layout(columns: list[str], rows: list[list[str]], width: int) -> tuple[Layout, bool]:
    """The senses' table for ``width``, and whether each error goes on lines under its row:
    when the table does not fit whole, the errors leave the row so that the count of
    computes and the last reading stay; narrower still, the count goes first."""
    whole = Layout.fit(columns, rows, width, keys=("computes",))
    if _roomy(whole, rows) or columns[-1] != "error":
        return whole if _roomy(whole, rows) else Layout.fit(columns, rows, width), False
    columns, rows = columns[:-1], [row[:-1] for row in rows]
    kept = Layout.fit(columns, rows, width, keys=("computes",))
    return (kept if _roomy(kept, rows) else Layout.fit(columns, rows, width)), True


def _roomy(layout: Layout, rows: list[list[str]]) -> bool:
    """Every column shown, and the last reading given room to be read."""
    if layout.left_out:
        return False
    need = min(_LAST_LEAST, max((len(row[3]) for row in rows), default=0))
    return layout.widths[layout.shown.index(3)] >= need


_LAST_LEAST = 28  # the reading's cells below which the count of computes goes first


def _wrapped(lines: list[str], width: int, *, indent: str = " " * len("running  ")) -> list[str]:
    """The health lines wrapped to ``width``, each continuation under its value."""
    import textwrap

    return [
        part
        for line in lines
        for part in textwrap.wrap(line, width, subsequent_indent=indent, break_on_hyphens=False)
    ]


def _latest(sense: dict[str, Any], now_ns: int) -> str:
    """A sense's last reading and its age, or why it cannot observe; ``-`` before a compute."""
    from nerve.runtime.latest import latest_text

    if not sense.get("computes"):
        return "-"
    line, unavailable = sense.get("last_result") or "", sense.get("unavailable") or ""
    return latest_text(line, sense.get("last_result_ns"), unavailable, now_ns)


def _sealing(seal: dict[str, Any]) -> str:
    """Epoch seals in a few words: the last epoch sealed, or why it is not sealing."""
    if not seal["sealing"]:
        return f"NOT sealing epochs: {flat(str(seal['why']))}"
    last = seal["last_epoch"]
    return "set up, no epoch sealed yet" if last is None else f"epoch {last} sealed"


def _cell_text(value: Any) -> str:
    return "" if value is None else str(value)


def _uptime(seconds: float) -> str:
    """``4.2 s``, ``12 min 5 s``, ``3 h 20 min``, ``2 d 4 h``."""
    whole = int(seconds)
    days, rest = divmod(whole, 86_400)
    hours, rest = divmod(rest, 3600)
    minutes, secs = divmod(rest, 60)
    if days:
        return f"{days} d {hours} h"
    if hours:
        return f"{hours} h {minutes} min"
    return f"{minutes} min {secs} s" if minutes else f"{seconds:.1f} s"


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
    ws = _door()
    path = ws.daemon.log_path()
    if follow:
        for line in daemon.follow_log(path, lines=n):
            typer.echo(shown(ws.daemon.lines([line])[0]))
        return
    if not path.exists():
        typer.echo("(no daemon log yet)")
        return
    page, earlier = ws.daemon.log_page(n, offset)
    lines = [shown(line) for line in page]  # a line may quote a sense's error
    if lines:
        typer.echo("\n".join(lines))
    if earlier is not None:
        typer.echo(f"earlier lines: nerve logs --offset {earlier} -n {n}", err=True)


def register(app: typer.Typer) -> None:
    app.add_typer(daemon_app, name="daemon", rich_help_panel="Advanced")
    app.command("dev", rich_help_panel="Everyday")(dev)
    aliases = (
        ("start", start, "Start the daemon (alias of `daemon start`).", "Everyday"),
        ("stop", stop, "Stop the daemon (alias of `daemon stop`).", "Everyday"),
        ("status", status, "Daemon status (alias of `daemon status`).", "Everyday"),
        ("logs", logs, "The daemon's own log (alias of `daemon logs`).", "Advanced"),
    )
    for name, command, text, panel in aliases:
        app.command(name, help=text, rich_help_panel=panel)(command)
