"""`nerve setup` (and `--undo`) and `nerve service install|uninstall|status|logs`."""

import sys
from pathlib import Path
from typing import Annotated

import typer

service_app = typer.Typer(
    help="The user service that runs the daemon from login (systemd --user, launchd).",
    no_args_is_help=True,
)


def _say(line: str) -> None:
    typer.echo(line)


def _ask_watch() -> list[Path]:
    """Ask on the terminal which folders the files sense watches."""
    answer = typer.prompt(
        "Folders whose file changes nerve records (space-separated; empty: none)",
        default="",
        show_default=False,
    )
    return [Path(word) for word in answer.split()]


def setup_cmd(
    watch: Annotated[
        list[str] | None,
        typer.Option("--watch", help="A folder the files sense watches (repeat for more)."),
    ] = None,
    shell: Annotated[
        list[str] | None,
        typer.Option("--shell", help="Hook this shell only (repeat; default: those on PATH)."),
    ] = None,
    no_service: Annotated[
        bool, typer.Option("--no-service", help="Install no user service.")
    ] = False,
    yes: Annotated[bool, typer.Option("--yes", "-y", help="Ask nothing (for scripts).")] = False,
    undo: Annotated[
        bool, typer.Option("--undo", help="Take back every change setup made.")
    ] = False,
    keep_workspace: Annotated[
        bool, typer.Option("--keep-workspace", help="With --undo: keep the workspace's data.")
    ] = False,
) -> None:
    """Make your own nerve: a workspace in your data folder, the shell hook, a user service.

    Safe to run again (it makes only what is missing). Each change is printed before it is
    made; `nerve setup --undo` takes every one back. See docs/setup.md.
    """
    from nerve.setup.plan import Places, make, plan
    from nerve.setup.plan import undo as undo_setup

    places = Places()
    if undo:
        if not yes and sys.stdin.isatty():
            typer.confirm(f"Undo setup, removing {places.workspace} and its log?", abort=True)
        undo_setup(places, _say, keep_workspace=keep_workspace)
        return
    paths: list[Path] | None = [Path(w) for w in watch] if watch else None
    fresh = not (places.workspace / "nerve.yaml").exists()
    if paths is None and fresh and not yes and sys.stdin.isatty():
        paths = _ask_watch()
    steps = plan(places, watch=paths, shells=shell, service=not no_service)
    if not steps:
        typer.echo(f"nothing to do: {places.workspace} is set up")
        return
    if not yes and sys.stdin.isatty():
        for step in steps:
            typer.echo(f"  {step.describe()}")
        typer.confirm("Make these changes?", abort=True)
    make(steps, places, _say)
    typer.echo(f"done: your workspace is {places.workspace}; open a new shell to record it")


@service_app.command("install")
def install() -> None:
    """Install and start the service for your workspace (what `nerve setup` does)."""
    from nerve.setup.plan import Places, make, plan

    places = Places()
    steps = [s for s in plan(places, shells=[]) if s.op in ("mkdir", "service")]
    if not steps:
        typer.echo("the service is installed")
        return
    make(steps, places, _say)


@service_app.command("uninstall")
def uninstall() -> None:
    """Stop the service and remove its file."""
    from nerve.setup.changes import Manifest
    from nerve.setup.plan import Places
    from nerve.setup.service import Manager, service_file

    places = Places()
    unit = service_file(places.nerve, places.workspace, places.environ, places.platform)
    if not unit.path.exists():
        typer.echo("no service installed")
        return
    typer.echo(f"- stop and remove {unit.path}")
    Manager(places.platform).stop()
    unit.path.unlink()
    manifest = Manifest.load(places.workspace)
    manifest.changes = [c for c in manifest.changes if c.path != str(unit.path)]
    manifest.save()


@service_app.command("status")
def status() -> None:
    """What the service manager says of the service."""
    from nerve.setup.plan import Places
    from nerve.setup.service import Manager

    ok, said = Manager(Places().platform).status()
    typer.echo(said or ("running" if ok else "not running"))
    if not ok:
        raise typer.Exit(3)


@service_app.command("logs")
def logs(n: Annotated[int, typer.Option("-n", min=1, help="Lines to show.")] = 50) -> None:
    """The service's recent output (journalctl, or service.log on macOS); the daemon's own
    log where the journal holds none of it (no journald)."""
    from nerve.setup.plan import Places
    from nerve.setup.service import Manager

    places = Places()
    ok, said = Manager(places.platform).logs(places.workspace, n)
    if not ok:
        typer.echo(said)
        raise typer.Exit(1)
    if said:
        typer.echo(said)
        return
    typer.echo("(the journal holds nothing of nerve.service: the daemon's own log)", err=True)
    _daemon_log(places.workspace, n)


def _daemon_log(workspace: Path, lines: int) -> None:
    """Print the last ``lines`` of the daemon's own log in ``workspace``."""
    from nerve.api import Workspace
    from nerve.safetext import shown

    page, _earlier = Workspace.find(workspace).daemon.log_page(lines)
    for line in page:
        typer.echo(shown(line))


def register(app: typer.Typer) -> None:
    app.command("setup", rich_help_panel="Everyday")(setup_cmd)
    app.add_typer(service_app, name="service", rich_help_panel="Advanced")
