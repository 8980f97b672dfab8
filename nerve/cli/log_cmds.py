"""Log commands: init, emit, import, replay, seal, compact, query, tail, payload, conformance."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import IO, TYPE_CHECKING, Annotated, Any

import typer

from nerve.cli.output import console, emit_json, is_terminal, render_rows
from nerve.cli.state import workspace as _ws
from nerve.errors import UsageError
from nerve.events import source_name, trust_name
from nerve.log.codec import event_to_json, row_to_json, wire_lines
from nerve.log.wire import ERASED_TEXT
from nerve.logops import (
    TailFilter,
    compact,
    draft_of,
    drafts_from_jsonl,
    emit,
    erased_payload,
    follow_tables,
    import_stream,
    parse_payload_arg,
    repair,
    replay,
    seal,
    tail_table,
)
from nerve.query import run_query
from nerve.workspace import init_workspace

if TYPE_CHECKING:
    import pyarrow as pa

JsonFlag = Annotated[bool, typer.Option("--json", help="JSON output (one object per line).")]
CsvFlag = Annotated[bool, typer.Option("--csv", help="CSV output.")]


KeyOption = Annotated[
    str | None,
    typer.Option(
        "--key",
        help="Idempotency key: a batch sent again with the same key (within 24 h) is stored "
        "once, and the first result is printed.",
    ),
]


def _open_input(path: str) -> tuple[IO[str], str]:
    if path == "-":
        return sys.stdin, "<stdin>"
    target = Path(path)
    if not target.is_file():
        raise UsageError(f"{path}: no such file")
    return target.open(encoding="utf-8"), str(target)


def init(
    directory: Annotated[Path, typer.Argument(help="Folder to create the workspace in.")],
) -> None:
    """Create a workspace: nerve.yaml, senses/, workflows/, projections/, data/."""
    ws = init_workspace(directory)
    typer.echo(f"created workspace {ws.root}")


def emit_cmd(
    source: Annotated[
        str | None, typer.Option("--source", "-s", help="Source class, e.g. shell or vendor:1100.")
    ] = None,
    trust: Annotated[
        str, typer.Option("--trust", "-t", help="Attested, FirstParty, Inferred or Untrusted.")
    ] = "Untrusted",
    line: Annotated[str, typer.Option("--line", "-l", help="The event's text line.")] = "",
    payload: Annotated[str | None, typer.Option("--payload", "-p", help="Payload as JSON.")] = None,
    valid_time: Annotated[
        int | None, typer.Option("--valid-time", help="Observation time in ns (data, not clock).")
    ] = None,
    kind: Annotated[str, typer.Option("--kind", help="Event kind.")] = "observation",
    subject: Annotated[str, typer.Option("--subject", help="Subject (a sense, run, path…).")] = "",
    jsonl: Annotated[
        str | None, typer.Option("--jsonl", help="Append a batch: JSON lines from FILE or -.")
    ] = None,
    key: KeyOption = None,
    as_json: JsonFlag = False,
    echo: Annotated[
        bool,
        typer.Option(
            "--echo", help="With --jsonl: print every stored event (as --json does), not a count."
        ),
    ] = False,
    quiet: Annotated[bool, typer.Option("--quiet", "-q", help="Print nothing on success.")] = False,
) -> None:
    """Append an event (or a batch with --jsonl) and print what was stored."""
    ws = _ws(write=True)
    if jsonl is not None:
        if source is not None:
            raise UsageError("give either --source or --jsonl, not both")
        stream, name = _open_input(jsonl)
        drafts = drafts_from_jsonl(stream, name)
    elif source is None:
        raise UsageError("--source is required", hint="e.g. nerve emit --source shell --line 'ls'")
    else:
        fields = {
            "kind": kind,
            "source": source,
            "trust": trust,
            "line": line,
            "payload": parse_payload_arg(payload),
            "subject": subject,
            "valid_time_ns": valid_time,
        }
        drafts = [draft_of(fields)]
    stored = emit(ws, drafts, key=key)
    if quiet:
        return
    if jsonl is not None and not (echo or as_json):  # a batch: a count, unless asked
        typer.echo(f"stored {len(stored)} events", err=True)
        return
    for ev in stored:
        if as_json:
            emit_json(event_to_json(ev))
        else:
            typer.echo(f"{ev.hlc} {ev.id.hex()}")


def import_cmd(
    path: Annotated[str, typer.Argument(help="JSON lines of whole events, or - for stdin.")],
    key: KeyOption = None,
) -> None:
    """Import whole events (hlc, node kept); they must sort after the log's newest."""
    stream, name = _open_input(path)
    count = import_stream(_ws(write=True), stream, name, key=key)
    typer.echo(f"imported {count} events", err=True)


def replay_cmd(
    verify_: Annotated[
        bool, typer.Option("--verify", help="Recompute every id, address and the manifest chain.")
    ] = False,
    as_json: JsonFlag = False,
) -> None:
    """Replay the log and print its digest; with --verify, check everything."""
    report = replay(_ws(), full=verify_)
    if as_json:
        emit_json(report.to_json())
    else:
        typer.echo(f"events  {report.events}\nsegments {report.segments}\ndigest  {report.digest}")
        _replay_extras(report)
        for problem in report.problems:
            typer.echo(f"corrupt: {problem}", err=True)
        for warning in report.warnings:
            typer.echo(f"warning: {warning}", err=True)
        for note in report.notes:
            typer.echo(f"erased: {note}", err=True)
        if verify_:
            typer.echo("verify  " + ("ok" if report.ok else "FAILED"))
    if not report.ok:
        raise typer.Exit(1)


def _replay_extras(report: Any) -> None:
    """What the digest covers when segments were archived, and the digest before each
    erasure (the erasure event is one more event; the digest before it is unchanged)."""
    if report.archives:
        typer.echo(f"covers  {report.covers}")
    shown = report.checkpoints[-_CHECKPOINTS_SHOWN:]
    if len(report.checkpoints) > len(shown):
        typer.echo(f"({len(report.checkpoints) - len(shown)} earlier erasures: --json lists all)")
    for point in shown:
        typer.echo(
            f"before payload.erased {point.erasure[:12]}: {point.events} events, "
            f"digest {point.digest}"
        )


_CHECKPOINTS_SHOWN = 3


def seal_cmd() -> None:
    """Seal the unsealed tail into a segment now."""
    info = seal(_ws(write=True))
    typer.echo(
        f"sealed {info['rows']} events into {info['segment']}" if info else "nothing to seal"
    )


def repair_cmd() -> None:
    """Open a damaged log: keep every good frame, move damaged files to quarantine/."""
    notes = repair(_ws(write=True))
    for note in notes:
        typer.echo(f"repaired: {note}")
    if not notes:
        typer.echo("nothing to repair")


def compact_cmd(
    target_rows: Annotated[
        int, typer.Option("--target-rows", help="Largest segment to build.")
    ] = 1_000_000,
) -> None:
    """Merge small adjacent segments; the events and the digest are unchanged."""
    result = compact(_ws(write=True), target_rows)
    typer.echo(
        f"merged {result['merged']} segments into {result['written']} ({result['rows']} events)"
    )


def query_cmd(
    sql: Annotated[str, typer.Argument(help="SQL over `events` and the projections.")],
    as_json: JsonFlag = False,
    as_csv: CsvFlag = False,
) -> None:
    """Run SQL in DuckDB over the log."""
    result = run_query(_ws().connect(), sql)
    render_rows(
        result.columns, result.rows, fmt="json" if as_json else "csv" if as_csv else "table"
    )


TAIL_COLUMNS = ["hlc", "node", "kind", "source", "trust", "subject", "line"]


def _tail_cells(row: dict[str, Any]) -> list[Any]:
    return [
        f"{row['hlc'][0]}.{row['hlc'][1]}",
        row["node"],
        row["kind"],
        row["source"],
        row["trust"],
        row["subject"],
        row.get("line", ERASED_TEXT),
    ]


def _tsv_lines(table: pa.Table) -> list[str]:
    """The tail's columns, tab-separated, one line per event (built column by column)."""
    col = {name: table.column(name).to_pylist() for name in _TSV_COLUMNS}
    sources = {code: source_name(code) for code in set(col["source"])}
    trusts = {code: trust_name(code) for code in set(col["trust"])}
    return [
        f"{p}.{lo}\t{node}\t{kind}\t{sources[src]}\t{trusts[trust]}\t{subject}\t"
        f"{ERASED_TEXT if line is None else line}"
        for p, lo, node, kind, src, trust, subject, line in zip(
            *(col[name] for name in _TSV_COLUMNS), strict=True
        )
    ]


_TSV_COLUMNS = ("physical_ns", "logical", "node", "kind", "source", "trust", "subject", "line")


def _write_lines(lines: list[str]) -> None:
    if lines:
        sys.stdout.write("\n".join(lines) + "\n")
        sys.stdout.flush()


def tail_cmd(
    n: Annotated[int, typer.Option("-n", help="How many of the newest events.")] = 20,
    all_: Annotated[bool, typer.Option("--all", help="Every event.")] = False,
    follow_: Annotated[
        bool, typer.Option("-f", "--follow", help="Keep printing new events.")
    ] = False,
    kind: Annotated[
        list[str] | None, typer.Option("--kind", help="Only this kind (repeatable).")
    ] = None,
    source: Annotated[
        list[str] | None, typer.Option("--source", help="Only this source class (repeatable).")
    ] = None,
    as_json: JsonFlag = False,
) -> None:
    """Print the newest events; --json prints exactly what `nerve import` reads."""
    ws = _ws()
    filt = TailFilter.of(kind, source)
    table, newest = tail_table(ws, count=None if all_ else n, filt=filt)
    if as_json or not is_terminal():
        lines = wire_lines if as_json else _tsv_lines
        _write_lines(lines(table))
        if follow_:
            for batch in follow_tables(ws, filt=filt, since=newest):
                _write_lines(lines(batch))
        return
    _tail_live(ws, [row_to_json(r) for r in table.to_pylist()], newest, filt, follow_, n)


def _row_style(row: dict[str, Any]) -> str | None:
    """Surfaced highlights stand out; errors are red."""
    if row["kind"] == "attention.decision" and row["subject"] == "surface":
        return "bold yellow"
    if row["kind"].endswith(".error") or row["kind"] == "config.rejected":
        return "red"
    return None


def _tail_live(
    ws: Any, rows: list[dict[str, Any]], newest: Any, filt: TailFilter, follow_: bool, n: int
) -> None:
    from rich.live import Live
    from rich.table import Table

    def table() -> Table:
        t = Table(*TAIL_COLUMNS, expand=False)
        for row in rows:
            t.add_row(*(str(c) for c in _tail_cells(row)), style=_row_style(row))
        return t

    out = console()
    if not follow_:
        out.print(table())
        return
    keep = max(n, 1)
    rows = rows[-keep:]
    with Live(table(), console=out, refresh_per_second=4) as live:
        for batch in follow_tables(ws, filt=filt, since=newest):
            newest_rows = batch.slice(max(0, batch.num_rows - keep)).to_pylist()
            rows = [*rows, *(row_to_json(r) for r in newest_rows)][-keep:]
            live.update(table())


def payload_cmd(cid: Annotated[str, typer.Argument(help="Payload address (hex).")]) -> None:
    """Print the payload bytes stored under a content address."""
    if len(cid) != 64 or any(c not in "0123456789abcdef" for c in cid.lower()):
        raise UsageError(f"{cid!r} is not a 64-hex-digit address")
    conn = _ws().connect()
    result = run_query(
        conn,
        f"SELECT payload FROM events WHERE payload_cid = from_hex('{cid.lower()}') "
        "ORDER BY erased LIMIT 1",
    )
    if not result.rows:
        raise UsageError(f"no payload with address {cid}")
    if result.rows[0][0] is None:
        raise erased_payload(conn, cid.lower())
    sys.stdout.buffer.write(bytes(result.rows[0][0]))


def conformance_cmd(as_json: JsonFlag = False) -> None:
    """Run every published conformance vector."""
    from nerve.conformance import run_all

    results = run_all()
    if as_json:
        emit_json({"ok": all(r.ok for r in results), "vectors": [r.to_json() for r in results]})
    else:
        out = console()
        for r in results:
            out.print(f"{'PASS' if r.ok else 'FAIL'} {r.vector}: {r.detail}")
    if not all(r.ok for r in results):
        raise typer.Exit(1)


def register(app: typer.Typer) -> None:
    app.command("init")(init)
    app.command("emit")(emit_cmd)
    app.command("import")(import_cmd)
    app.command("replay")(replay_cmd)
    app.command("seal")(seal_cmd)
    app.command("compact")(compact_cmd)
    app.command("repair")(repair_cmd)
    app.command("query")(query_cmd)
    app.command("tail")(tail_cmd)
    app.command("payload")(payload_cmd)
    app.command("conformance")(conformance_cmd)
