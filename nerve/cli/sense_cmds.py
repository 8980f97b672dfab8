"""Sense commands (list, trigger, state, history, schema, query) and `nerve validate`."""

import json
from typing import Annotated

import typer

from nerve.cli.output import LIMIT_HELP, emit_json, render_rows
from nerve.cli.state import door as _door
from nerve.errors import EventError, UsageError, did_you_mean
from nerve.safetext import shown

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
    "last_line_ns",
    "unavailable",
]
TABLE_COLUMNS = [*LIST_COLUMNS[:-3], "latest"]  # a terminal's one cell for the three


@sense_app.command("list")
def list_cmd(as_json: JsonFlag = False, as_csv: CsvFlag = False) -> None:
    """List senses: live figures from the daemon when it runs, else nerve.yaml."""
    senses = _door().senses.all()
    fmt = _fmt(as_json, as_csv)
    if fmt != "table":
        render_rows(LIST_COLUMNS, [[s.get(c) for c in LIST_COLUMNS] for s in senses], fmt=fmt)
        return
    rows = [[_listed(s.get(c)) for c in TABLE_COLUMNS[:-1]] + [_latest(s)] for s in senses]
    render_rows(TABLE_COLUMNS, rows, fmt=fmt, title="senses")


def _listed(value: object) -> object:
    """A list (a sense's ``on`` triggers) as its items, comma-separated: none is an empty
    cell, not ``[]``."""
    return ", ".join(map(str, value)) if isinstance(value, list) else value


def _latest(sense: dict[str, object]) -> str:
    """The last reading and its age, or why the sense cannot observe (empty before a
    compute, or with no daemon)."""
    import time

    from nerve.runtime.latest import latest_text

    if not sense.get("computes"):
        return ""
    line, at = str(sense.get("last_line") or ""), sense.get("last_line_ns")
    unavailable = str(sense.get("unavailable") or "")
    return latest_text(line, at if isinstance(at, int) else None, unavailable, time.time_ns())


@sense_app.command("trigger")
def trigger(name: Annotated[str, typer.Argument(help="Sense to compute now.")]) -> None:
    """Ask the running daemon to compute a sense now."""
    _door(write=True).sense(name).trigger()
    typer.echo(f"triggered {name}")


@sense_app.command("state")
def state(
    name: Annotated[str, typer.Argument(help="Sense name.")], as_json: JsonFlag = False
) -> None:
    """Print a sense's latest stored state (from the log)."""
    from nerve.canonical import loads_bounded

    door = _door()
    found = door.sense(name).state()
    if found is None:
        guess = did_you_mean(name, door.senses.stored())
        raise UsageError(f"no stored state for sense {name!r}" + (f"; {guess}" if guess else ""))
    stored, undecodable = found.text, found.undecodable
    if undecodable:
        raise UsageError(f"the newest state of {name!r} cannot be decoded")
    try:
        value = loads_bounded(stored, field="state")
    except EventError as exc:  # stored before the nesting limit: shown as stored, cut short
        cut = "…" if len(stored) > RAW_STATE_CHARS else ""
        typer.echo(shown(stored[:RAW_STATE_CHARS]) + cut)
        typer.echo(f"warning: shown raw: {exc}", err=True)
        return
    if not as_json and _empty(value):
        fields = ", ".join(value) if isinstance(value, dict) else ""
        typer.echo(shown(f"{name} holds no state" + (f" ({fields}: empty)" if fields else "")))
        return
    typer.echo(json.dumps(value, indent=2, sort_keys=True))


def _empty(value: object) -> bool:
    """A state with nothing in it: ``{}``, ``null`` or a map of empty values."""
    if isinstance(value, dict):
        return all(v in (None, "", [], {}) for v in value.values())
    return value in (None, "", [], {})


@sense_app.command("history")
def history(
    name: Annotated[str, typer.Argument(help="Sense name.")],
    n: Annotated[int, typer.Option("-n", help="How many of the newest.")] = 20,
    as_json: JsonFlag = False,
    as_csv: CsvFlag = False,
) -> None:
    """A sense's computes, errors, signals and observations (from the log), newest last."""
    result = _door().sense(name).history(n)
    render_rows(result.columns, result.rows, fmt=_fmt(as_json, as_csv), title=f"{name} history")


@sense_app.command("schema")
def schema_cmd(
    name: Annotated[str, typer.Argument(help="Sense name.")],
    as_json: JsonFlag = False,
    as_csv: CsvFlag = False,
) -> None:
    """The columns of a sense's data: its observations flattened (types from the log), its
    state history, and the views its senses/<name>/*.sql files define."""
    rows = _door().sense(name).schema()
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
    limit: Annotated[int | None, typer.Option("--limit", min=0, help=LIMIT_HELP)] = None,
) -> None:
    """SQL over one sense's data (see `nerve sense schema NAME`)."""
    from nerve.cli.output import render_chunks

    result = _door().sense(name).query(sql)
    render_chunks(result.columns, result.chunks(), fmt=_fmt(as_json, as_csv), limit=limit)


def validate(as_json: JsonFlag = False) -> None:
    """Check nerve.yaml and every sense it names; print every problem."""
    ws = _door()
    issues, hints = ws.settings.validate()
    if as_json:
        emit_json({"ok": not issues, "problems": issues, "hints": hints})
    else:
        for issue in issues:
            typer.echo(issue, err=True)
        for hint in hints:
            typer.echo(f"hint: {hint}", err=True)
        if not issues:
            cfg = ws.settings.config
            typer.echo(
                f"{ws.settings.path.name} is valid: {len(cfg.senses)} senses, "
                f"{len(cfg.reflexes)} reflexes, {len(cfg.workflows)} workflows"
            )
    if issues:
        raise typer.Exit(1)


def register(app: typer.Typer) -> None:
    app.add_typer(sense_app, name="sense", rich_help_panel="Advanced")
    app.command("validate", rich_help_panel="Advanced")(validate)
