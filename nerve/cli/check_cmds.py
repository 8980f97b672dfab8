"""Check commands: list, describe, fire."""

from typing import Annotated

import typer

from nerve.cli.output import emit_json, render_rows
from nerve.cli.state import door as _door

check_app = typer.Typer(help="Inspect and fire checks.", no_args_is_help=True)
JsonFlag = Annotated[bool, typer.Option("--json", help="JSON output (one object per line).")]
CsvFlag = Annotated[bool, typer.Option("--csv", help="CSV output.")]
LIST_COLUMNS = ["id", "fire_on", "default_severity", "matches", "category", "description"]


@check_app.command("list")
def list_cmd(
    as_json: JsonFlag = False,
    as_csv: CsvFlag = False,
    strict: Annotated[
        bool, typer.Option("--strict", help="Exit 1 when any manifest is bad.")
    ] = False,
) -> None:
    """Check manifests: workflows/checks/ (built-in, then the workspace's) and .claude/sensors/.

    A manifest that does not load is reported on stderr (file:line and why) and the rest are
    listed; the exit is 1 for it only with --strict.
    """
    errors: list[str] = []
    found = _door().runs.checks(errors)
    rows = [[getattr(m, c) for c in LIST_COLUMNS] for m in found.values()]
    fmt = "json" if as_json else "csv" if as_csv else "table"
    render_rows(LIST_COLUMNS, rows, fmt=fmt, title="checks")
    label = "error" if strict else "warning"
    for line in (line for error in errors for line in error.splitlines()):
        typer.echo(f"{label}: {line}", err=True)
    if errors and strict:
        raise typer.Exit(1)


@check_app.command("describe")
def describe_cmd(
    check_id: Annotated[str, typer.Argument(metavar="ID", help="Check id.")],
    as_json: JsonFlag = False,
) -> None:
    """How nerve reads one manifest."""
    from nerve.checks.catalog import lookup

    shown = lookup(_door().runs.checks(), check_id).describe()
    if as_json:
        emit_json(shown)
        return
    for key, value in shown.items():
        typer.echo(f"{key}: {value}")


@check_app.command("fire")
def fire_cmd(
    check_id: Annotated[str, typer.Argument(metavar="ID", help="Check id.")],
    path: Annotated[str, typer.Option("--path", help="Workspace file to check.")],
    run: Annotated[
        str, typer.Option("--run", help="Run id, given to the check as NERVE_RUN.")
    ] = "manual",
    stage: Annotated[
        str, typer.Option("--stage", help="Stage slug handed to the check as --stage.")
    ] = "manual",
    as_json: JsonFlag = False,
) -> None:
    """Fire a check on one file: recorded through the daemon when it runs, else only printed.

    Exits 1 when the check failed (found problems); a pass with a note exits 0.
    """
    fired = _door().runs.fire_check(check_id, path, run=run, stage=stage)
    verdict, recorded = fired.verdict, fired.recorded
    if as_json:
        emit_json(fired.to_json())
    else:
        note = f" ({verdict['note']})" if verdict.get("note") else ""
        typer.echo(f"{check_id} on {verdict['path']}: {verdict['result']}{note}")
        if verdict.get("detail_path"):
            typer.echo(f"findings: {verdict['detail_path']}")
        if not recorded:
            typer.echo("(the daemon is not running: this fire was not recorded)", err=True)
    if fired.failed:
        raise typer.Exit(1)


def register(app: typer.Typer) -> None:
    app.add_typer(check_app, name="check", rich_help_panel="Workflows")
