"""Sense commands (list, trigger, state, history, schema, query) and `nerve validate`."""

import json
from pathlib import Path
from typing import Annotated, Any

import typer

from nerve.cli.output import emit_json, render_rows
from nerve.cli.state import door as _door
from nerve.cli.state import workspace as _ws
from nerve.errors import EventError, UsageError

sense_app = typer.Typer(help="Inspect and trigger senses.", no_args_is_help=True)
JsonFlag = Annotated[bool, typer.Option("--json", help="JSON output (one object per line).")]
CsvFlag = Annotated[bool, typer.Option("--csv", help="CSV output.")]
RAW_STATE_CHARS = 4000


def _fmt(as_json: bool, as_csv: bool) -> str:
    return "json" if as_json else "csv" if as_csv else "table"


LIST_COLUMNS = [
    "name",
    "group",
    "interval_ms",
    "on",
    "throttle_ms",
    "timeout_ms",
    "computes",
    "errors",
    "last_line",
]


@sense_app.command("list")
def list_cmd(as_json: JsonFlag = False, as_csv: CsvFlag = False) -> None:
    """List senses: live figures from the daemon when it runs, else nerve.yaml."""
    senses = _door().senses()
    rows = [[s.get(c) for c in LIST_COLUMNS] for s in senses]
    render_rows(LIST_COLUMNS, rows, fmt=_fmt(as_json, as_csv), title="senses")


@sense_app.command("trigger")
def trigger(name: Annotated[str, typer.Argument(help="Sense to compute now.")]) -> None:
    """Ask the running daemon to compute a sense now."""
    _door(write=True).trigger_sense(name)
    typer.echo(f"triggered {name}")


@sense_app.command("state")
def state(name: Annotated[str, typer.Argument(help="Sense name.")]) -> None:
    """Print a sense's latest stored state (from the log)."""
    from nerve.canonical import loads_bounded
    from nerve.query import run_query

    result = run_query(
        _ws().connect(),
        f"SELECT state, undecodable FROM sense_state WHERE sense = '{_quote(name)}'",
    )
    if not result.rows:
        raise UsageError(f"no stored state for sense {name!r}")
    stored, undecodable = result.rows[0]
    if undecodable:
        raise UsageError(f"the newest state of {name!r} cannot be decoded")
    try:
        value = loads_bounded(stored, field="state")
    except EventError as exc:  # stored before the nesting limit: shown as stored, cut short
        typer.echo(f"{stored[:RAW_STATE_CHARS]}{'…' if len(stored) > RAW_STATE_CHARS else ''}")
        typer.echo(f"warning: shown raw: {exc}", err=True)
        return
    typer.echo(json.dumps(value, indent=2, sort_keys=True))


def _quote(text: str) -> str:
    return text.replace("'", "''")


@sense_app.command("history")
def history(
    name: Annotated[str, typer.Argument(help="Sense name.")],
    n: Annotated[int, typer.Option("-n", help="How many of the newest.")] = 20,
    as_json: JsonFlag = False,
    as_csv: CsvFlag = False,
) -> None:
    """A sense's computes, errors, signals and observations (from the log), newest last."""
    from nerve.query import run_query

    sql = (
        f"SELECT * FROM (SELECT physical_ns || '.' || logical AS hlc, ts, kind, line FROM events "
        f"WHERE subject = '{_quote(name)}' ORDER BY physical_ns DESC, logical DESC LIMIT {int(n)}) "
        "ORDER BY hlc"
    )
    result = run_query(_ws().connect(), sql)
    render_rows(result.columns, result.rows, fmt=_fmt(as_json, as_csv), title=f"{name} history")


def _sense_conn(name: str) -> tuple[Any, list[str]]:
    """A connection with the sense's views (see nerve.sensedata), and their names."""
    from nerve.errors import SenseError
    from nerve.runtime.senses import find_sense
    from nerve.sensedata import sense_views

    ws = _ws()
    configured = ws.config.senses.get(name) if ws.config_path.exists() else None
    try:
        folder: Path | None = find_sense(ws, name, configured.path if configured else None).parent
    except SenseError:
        folder = None
    conn = ws.connect()
    return conn, sense_views(conn, name, folder)


@sense_app.command("schema")
def schema_cmd(
    name: Annotated[str, typer.Argument(help="Sense name.")],
    as_json: JsonFlag = False,
    as_csv: CsvFlag = False,
) -> None:
    """The columns of a sense's data: its observations flattened (types from the log), its
    state history, and the views its senses/<name>/*.sql files define."""
    from nerve.sensedata import sense_schema

    conn, views = _sense_conn(name)
    rows = sense_schema(conn, views)
    columns = ["view", "column", "type"]
    render_rows(columns, [list(r) for r in rows], fmt=_fmt(as_json, as_csv), title=name)


@sense_app.command("query")
def query_cmd(
    name: Annotated[str, typer.Argument(help="Sense name.")],
    sql: Annotated[
        str,
        typer.Argument(
            help="SQL over `observations`, `states` and the sense's own views"
            " (default: every observation)."
        ),
    ] = "SELECT * FROM observations",
    as_json: JsonFlag = False,
    as_csv: CsvFlag = False,
    limit: Annotated[
        int, typer.Option("--limit", min=0, help="Rows a terminal shows at most (0: all).")
    ] = 100,
) -> None:
    """SQL over one sense's data (see `nerve sense schema NAME`)."""
    from nerve.cli.output import render_chunks
    from nerve.query import stream_query

    conn, _ = _sense_conn(name)
    result = stream_query(conn, sql)
    render_chunks(result.columns, result.chunks(), fmt=_fmt(as_json, as_csv), limit=limit)


def validate(as_json: JsonFlag = False) -> None:
    """Check nerve.yaml and every sense it names; print every problem."""
    from nerve.config import config_hints, validate_config
    from nerve.flow.validate import check_workflows
    from nerve.runtime.senses import check_layout

    ws = _ws()
    issues = [str(i) for i in validate_config(ws.config_path)]
    if not issues:
        issues = check_layout(ws, ws.config) + check_workflows(ws, ws.config)
    hints = [str(h) for h in config_hints(ws.config_path)]
    if as_json:
        emit_json({"ok": not issues, "problems": issues, "hints": hints})
    else:
        for issue in issues:
            typer.echo(issue, err=True)
        for hint in hints:
            typer.echo(f"hint: {hint}", err=True)
        if not issues:
            cfg = ws.config
            typer.echo(
                f"{ws.config_path.name} is valid: {len(cfg.senses)} senses, "
                f"{len(cfg.reflexes)} reflexes, {len(cfg.workflows)} workflows"
            )
    if issues:
        raise typer.Exit(1)


def register(app: typer.Typer) -> None:
    app.add_typer(sense_app, name="sense")
    app.command("validate")(validate)
