"""Privacy commands: pause, resume, privacy test, privacy detectors."""

from typing import Annotated, Any

import typer

from nerve.cli.output import emit_json
from nerve.cli.state import door as _door
from nerve.errors import NerveError, UsageError

privacy_app = typer.Typer(
    help="See what the privacy rules keep out of the log.", no_args_is_help=True
)
JsonFlag = Annotated[bool, typer.Option("--json", help="JSON output.")]


def _for_ms(text: str | None) -> int | None:
    from nerve.durations import parse_duration

    if text is None:
        return None
    try:
        ms = parse_duration(text)
    except NerveError as exc:
        raise UsageError(f"--for {text!r}: {exc}", hint="give a duration like 30m or 2h") from None
    if ms <= 0:
        raise UsageError(f"--for {text!r}: a pause must last longer than 0ms")
    return ms


def pause(
    for_: Annotated[
        str | None,
        typer.Option(
            "--for", metavar="DURATION", help="End the pause by itself after this long (30m, 2h)."
        ),
    ] = None,
    as_json: JsonFlag = False,
) -> None:
    """Stop capture: no sense computes until `nerve resume` (or the --for time is up).

    Recorded as a capture.paused event; without a daemon the next start honours it.
    """
    state = _door(write=True).privacy.pause(_for_ms(for_))
    if as_json:
        emit_json(state.to_json())
    else:
        typer.echo(f"capture {state.describe()}")


def resume(as_json: JsonFlag = False) -> None:
    """Start capture again after `nerve pause` (a capture.resumed event)."""
    ended = _door(write=True).privacy.resume()
    if as_json:
        emit_json({"resumed": ended is not None})
    else:
        typer.echo("capture resumed" if ended else "capture was not paused")


@privacy_app.command("test")
def test_cmd(
    text: Annotated[str, typer.Argument(help="The text, as a command or line a sense saw.")],
    source: Annotated[
        str, typer.Option("--source", help="The event's source class (shell, file_change, …).")
    ] = "shell",
    kind: Annotated[str, typer.Option("--kind", help="The event's kind.")] = "observation",
    sense: Annotated[str, typer.Option("--sense", help="The sense (event subject).")] = "",
    as_json: JsonFlag = False,
) -> None:
    """Show what the privacy rules would store for TEXT, and which rules fire.

    TEXT is taken as the line of such an event, and for the shell, file_change and
    process_tree sources also as the command, path or process name its payload holds.
    """
    verdict = _door().privacy.test(text, source=source, kind=kind, sense=sense)
    if as_json:
        emit_json(_verdict_json(verdict))
        return
    if verdict.dropped_by is not None:
        typer.echo(f"dropped by {verdict.dropped_by}: the event would not be stored")
        return
    typer.echo(verdict.line)
    for rule, count in verdict.fired.items():
        typer.echo(f"  {rule} ×{count}")
    if not verdict.fired:
        typer.echo("  (no rule fired)")


def _verdict_json(verdict: Any) -> dict[str, Any]:
    from nerve.events import decode_payload

    return {
        "stored": verdict.dropped_by is None,
        "dropped_by": verdict.dropped_by,
        "line": None if verdict.dropped_by else verdict.line,
        "payload": None if verdict.dropped_by else decode_payload(verdict.payload),
        "fired": verdict.fired,
    }


@privacy_app.command("detectors")
def detectors_cmd(
    as_json: Annotated[
        bool, typer.Option("--json", help="JSON output (one object per line).")
    ] = False,
    as_csv: Annotated[bool, typer.Option("--csv", help="CSV output.")] = False,
) -> None:
    """List the built-in detectors and whether this workspace has each on."""
    from nerve.cli.output import render_rows
    from nerve.privacy.detectors import DETECTORS

    active = set(_door().settings.config.privacy.active_detectors)
    rows = [(d.name, d.name in active, d.description) for d in DETECTORS]
    fmt = "json" if as_json else "csv" if as_csv else "table"
    render_rows(["name", "on", "finds"], rows, fmt=fmt)


def register(app: typer.Typer) -> None:
    app.add_typer(privacy_app, name="privacy", rich_help_panel="Privacy")
    app.command("pause", rich_help_panel="Privacy")(pause)
    app.command("resume", rich_help_panel="Privacy")(resume)
