"""`nerve sync`: one history across your devices (a group, its join code, rounds, status)."""

from typing import Annotated

import typer

from nerve.cli.output import emit_json
from nerve.cli.state import door as _door
from nerve.errors import UsageError

sync_app = typer.Typer(
    help="One history across your devices: a sync group over NATS JetStream or S3.",
    no_args_is_help=True,
)

JsonFlag = Annotated[bool, typer.Option("--json", help="JSON output.")]
DeviceOpt = Annotated[
    str | None,
    typer.Option("--device", metavar="NAME", help="This device's name (default: its node)."),
]


@sync_app.command("init")
def init_cmd(
    nats: Annotated[
        str | None,
        typer.Option("--nats", metavar="URL", help="NATS server(s), comma-separated."),
    ] = None,
    s3: Annotated[
        str | None, typer.Option("--s3", metavar="URL", help="s3://bucket/prefix.")
    ] = None,
    endpoint: Annotated[
        str | None,
        typer.Option("--endpoint", metavar="URL", help="S3-compatible server (--s3 only)."),
    ] = None,
    name: Annotated[str, typer.Option("--name", metavar="NAME", help="The group's name.")] = "home",
    device: DeviceOpt = None,
) -> None:
    """Create a sync group (a fresh key) and print its one-time join code on a `code:` line.

    The code holds the group key: pass it by hand to your other device
    (`nerve sync join CODE`). S3 keys come from AWS_ACCESS_KEY_ID / AWS_SECRET_ACCESS_KEY.
    """
    from nerve.sync.group import Transport

    if (nats is None) == (s3 is None):
        raise UsageError(
            "give one of --nats URL or --s3 URL", hint="nerve sync init --nats nats://host:4222"
        )
    if endpoint and s3 is None:
        raise UsageError("--endpoint goes with --s3")
    transport = Transport("nats", nats) if nats else Transport("s3", str(s3), endpoint)
    group = _door(write=True).sync.init(name, transport, device)
    typer.echo(f"sync group {group.name!r} on {transport.kind}; this device is {group.device!r}")
    typer.echo(f"code: {group.code()}")


@sync_app.command("join")
def join_cmd(code: str, device: DeviceOpt = None) -> None:
    """Join the group a join code names; the daemon then fetches the whole shared history."""
    group = _door(write=True).sync.join(code, device)
    typer.echo(f"joined sync group {group.name!r} as {group.device!r}")


@sync_app.command("now")
def now_cmd(as_json: JsonFlag = False) -> None:
    """One round now: send this device's new events, take the others', announce."""
    result = _door(write=True).sync.now()
    if as_json:
        emit_json(result.to_json())
        return
    typer.echo(
        f"sent {result.sent}, received {result.received}"
        + (f", dropped {result.damaged} damaged box(es)" if result.damaged else "")
        + (f", {result.waiting} batch(es) wait for an earlier one" if result.waiting else "")
    )


@sync_app.command("status")
def status_cmd(as_json: JsonFlag = False) -> None:
    """Each device's shared digest and how many shared events it lacks."""
    found = _door().sync.status()
    if as_json:
        emit_json({"devices": found.devices, "in_sync": found.in_sync})
        return
    for d in found.devices:
        lag = "up to date" if d["behind"] == 0 else f"{d['behind']} behind"
        typer.echo(f"{d['device']:<16} {d['node']:<20} {d['digest'][:16]}  {d['events']:>8}  {lag}")
    typer.echo("in sync" if found.in_sync else "not in sync")


@sync_app.command("leave")
def leave_cmd() -> None:
    """Leave the group: its key goes; events already received stay readable."""
    name = _door(write=True).sync.leave()
    typer.echo(f"left sync group {name!r}")


def register(app: typer.Typer) -> None:
    app.add_typer(sync_app, name="sync", rich_help_panel="Fleet & sync")
