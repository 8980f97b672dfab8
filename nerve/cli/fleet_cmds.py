"""`nerve fleet`: ship sealed segments to a shared Iceberg table, query it, verify it."""

import sys
import time
from typing import Annotated, Any

import typer

from nerve.cli.output import LIMIT_HELP, console, emit_json, render_chunks, render_rows
from nerve.cli.state import door as _door
from nerve.errors import UsageError

fleet_app = typer.Typer(
    help="Many hosts: ship to an Iceberg table, query it, verify it.",
    no_args_is_help=True,
)

JsonFlag = Annotated[bool, typer.Option("--json", help="JSON output.")]


@fleet_app.command("init")
def init_cmd(
    warehouse: Annotated[
        str,
        typer.Option(
            "--warehouse",
            metavar="URI",
            help="Where files go: s3://bucket/prefix, file:///dir, or a folder.",
        ),
    ],
    catalog: Annotated[
        str | None,
        typer.Option(
            "--catalog",
            metavar="URI",
            help="SQLAlchemy URI of the Iceberg catalog, or a REST catalog's http(s) URL "
            "(default: SQLite beside a local warehouse, else in data/fleet).",
        ),
    ] = None,
    table: Annotated[
        str | None, typer.Option("--table", metavar="NS.NAME", help="Default nerve.events.")
    ] = None,
    host: Annotated[
        str | None, typer.Option("--host", metavar="NAME", help="Default: this machine's name.")
    ] = None,
    endpoint: Annotated[
        str | None,
        typer.Option("--endpoint", metavar="URL", help="S3-compatible server (s3:// only)."),
    ] = None,
    ship: Annotated[
        str | None,
        typer.Option("--ship", metavar="MODE", help="manual (default) or auto: after each seal."),
    ] = None,
    rest_signing: Annotated[
        str | None,
        typer.Option(
            "--rest-signing",
            metavar="SERVICE",
            help="Sign REST catalog requests with the S3 keys (SigV4) as SERVICE: s3tables, glue.",
        ),
    ] = None,
) -> None:
    """Write nerve.yaml's fleet section; create the table."""
    from nerve.fleet.setup import warehouse_uri

    settings = {
        "warehouse": warehouse_uri(warehouse),
        "catalog": catalog,
        "table": table,
        "host": host,
        "endpoint": endpoint,
        "ship": ship,
        "rest_signing": rest_signing,
    }
    resolved, wh = _door(write=True).fleet.init(settings)
    typer.echo(f"fleet table {resolved.table} at {wh.location}")
    typer.echo(f"this workspace ships as host {resolved.host!r}; next: nerve fleet ship")


@fleet_app.command("ship")
def ship_cmd(as_json: JsonFlag = False) -> None:
    """Ship sealed segments: upload, sign the head, register.

    Each new segment is uploaded and read back, the manifest and a signed head follow, and
    one Iceberg commit registers the files (and drops those the host no longer holds).
    """
    result = _door().fleet.ship()
    if as_json:
        emit_json(result.to_json())
        return
    if result.seq < 0:
        typer.echo("nothing sealed yet: nothing to ship")
        return
    mb = result.bytes / 1e6
    typer.echo(
        f"host {result.host}: uploaded {result.uploaded} segment(s) ({mb:.1f} MB), "
        f"registered {result.added}, dropped {result.removed}, at manifest record {result.seq}"
        + (f"; commit {result.commit_s * 1000:.0f} ms" if result.snapshot else "")
    )
    for problem in result.problems:
        sys.stderr.write(f"warning: {problem}\n")


@fleet_app.command("query")
def query_cmd(
    sql: Annotated[str, typer.Argument(help="SQL over `fleet_events` (events + host).")],
    since: Annotated[
        str | None,
        typer.Option("--since", help="Only events from 1h / 3d ago, an ISO time or an HLC."),
    ] = None,
    host: Annotated[
        list[str] | None, typer.Option("--host", help="Only these hosts (repeatable).")
    ] = None,
    as_json: JsonFlag = False,
    as_csv: Annotated[bool, typer.Option("--csv", help="CSV output.")] = False,
    limit: Annotated[int | None, typer.Option("--limit", min=0, help=LIMIT_HELP)] = None,
) -> None:
    """SQL over every host's shipped events (fleet_events).

    DuckDB reads only the files whose times reach --since, of the hosts named by --host.
    """
    since_ns = None
    if since is not None:
        from nerve.privacy.selection import parse_when

        since_ns = parse_when(since, time.time_ns(), "--since").physical_ns
    answer = _door().fleet.query(sql, since_ns=since_ns, hosts=host, on_plan=_say_plan)
    fmt = "json" if as_json else "csv" if as_csv else "table"
    render_chunks(answer.columns, answer.chunks(), fmt=fmt, limit=limit)


def _say_plan(fleet: Any) -> None:
    if sys.stderr.isatty():
        sys.stderr.write(f"fleet: reading {fleet.read} of {fleet.total} files\n")
    for warning in fleet.warnings:
        sys.stderr.write(f"warning: {warning}\n")


@fleet_app.command("verify")
def verify_cmd(
    host: Annotated[
        list[str] | None, typer.Option("--host", help="Only these hosts (repeatable).")
    ] = None,
    repin: Annotated[
        bool,
        typer.Option("--repin", help="Accept the named hosts' current keys (after a rotation)."),
    ] = False,
    threads: Annotated[
        int, typer.Option("--threads", min=1, help="Hosts checked at once (default 8).")
    ] = 8,
    as_json: JsonFlag = False,
) -> None:
    """Check every host's files, signed head and digest, several hosts at once.

    Exit 3–9 names the problem:
    3 altered file, 4 key changed, 5 bad head, 6 rolled back, 7 missing, 8 extra, 9 digest.
    """
    if repin and not host:
        raise UsageError("--repin needs --host NAME: the hosts whose new key you accept")
    verdict = _door().fleet.verify(hosts=host, repin=repin, threads=threads)
    if as_json:
        emit_json(verdict.to_json())
    else:
        _show_verify(verdict.reports)
    if verdict.code:
        raise typer.Exit(verdict.code)


def _show_verify(reports: list[Any]) -> None:
    out = console()
    if not reports:
        out.print("no hosts have shipped to this table yet")
    for r in reports:
        if r.ok:
            out.print(f"ok    {r.host}: {r.files} files, {r.rows} rows, record {r.seq}")
        for kind, message in r.problems:
            out.print(f"FAIL  {r.host}: {kind}: {message}", markup=False, highlight=False)
        for note in r.notes:
            out.print(f"note  {r.host}: {note}", markup=False, highlight=False)


@fleet_app.command("maintain")
def maintain_cmd(
    keep: Annotated[
        str,
        typer.Option("--keep", metavar="AGE", help="Keep every snapshot younger (default 1h)."),
    ] = "1h",
    grace: Annotated[
        str,
        typer.Option(
            "--grace", metavar="AGE", help="Leave unnamed files younger than this (default 1h)."
        ),
    ] = "1h",
    as_json: JsonFlag = False,
) -> None:
    """Rewrite manifests, expire snapshots, remove orphans; keep what verify needs.

    Each host's newest snapshot (its signed head) is always kept. Safe on several hosts at
    once and while hosts ship.
    """
    result = _door().fleet.maintain(keep_s=_age_s(keep, "--keep"), grace_s=_age_s(grace, "--grace"))
    if as_json:
        emit_json(result.to_json())
        return
    typer.echo(
        f"snapshots {result.snapshots_before} -> {result.snapshots_after}, manifests "
        f"{result.manifests_before} -> {result.manifests_after}, metadata.json "
        f"{result.metadata_bytes_before / 1e3:.0f} -> {result.metadata_bytes_after / 1e3:.0f} kB, "
        f"{result.orphans_removed} orphan file(s) removed"
    )


def _age_s(text: str, flag: str) -> float:
    from nerve.privacy.selection import parse_when

    now = time.time_ns()
    return max(0.0, (now - parse_when(text, now, flag).physical_ns) / 1e9)


@fleet_app.command("status")
def status_cmd(as_json: JsonFlag = False) -> None:
    """Hosts: last ship, files, rows, lag, last verify."""
    rows = [host.to_json() for host in _door().fleet.status()]
    if as_json:
        emit_json(rows)
        return
    columns = ["host", "last ship", "files", "rows", "behind", "conflicts", "verify"]
    render_rows(columns, [_status_row(r) for r in rows], fmt="table")
    for r in rows:
        if r.get("failures"):
            sys.stderr.write(
                f"warning: host {r['host']}: {r['failures']} ship(s) failed since the last "
                f"good one: {r['failure']}\n"
            )


def _status_row(r: dict[str, Any]) -> list[Any]:
    from datetime import datetime

    shipped = r["last_ship_ns"]
    when = (
        datetime.fromtimestamp(shipped / 1e9).strftime("%Y-%m-%d %H:%M:%S") if shipped else "never"
    )
    behind = "?" if r["behind_segments"] is None else f"{r['behind_segments']} seg"
    if r["behind_s"]:
        behind += f", {r['behind_s']:.0f}s"
    verify = r["verify"]
    checked = "-" if verify is None else ("ok" if verify["ok"] else "FAILED")
    lost = "-" if r["conflicts"] is None else r["conflicts"]
    return [r["host"], when, r["files"], r["rows"], behind, lost, checked]


def register(app: typer.Typer) -> None:
    app.add_typer(fleet_app, name="fleet", rich_help_panel="Fleet & sync")
