"""Log commands: init, emit, import, replay, seal, compact, query, tail, payload, conformance."""

import contextlib
import shlex
import sys
from pathlib import Path
from typing import IO, Annotated, Any

import typer

from nerve.cli.key_cmds import CredsOpt, KeyFileOpt, PassphraseOpt, kek_for_new
from nerve.cli.output import LIMIT_HELP, console, emit_json, plural, render_chunks
from nerve.cli.state import door as _door
from nerve.cli.token_opts import PinEnvOpt, Pkcs11Opt, TokenOpt, token_ref
from nerve.errors import UsageError

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
    if target.is_dir():
        raise UsageError(f"{path}: a folder, not a file of JSON lines")
    if not target.is_file():
        raise UsageError(f"{path}: no such file")
    return target.open(encoding="utf-8"), str(target)


def init(
    directory: Annotated[
        Path, typer.Argument(help="Folder to create the workspace in (default: this one).")
    ] = Path("."),
    encrypt: Annotated[
        bool,
        typer.Option(
            "--encrypt",
            help="Encrypt the log at rest (with --key-file, --passphrase, --systemd-creds "
            "or --pkcs11).",
        ),
    ] = False,
    key_file: KeyFileOpt = None,
    passphrase: PassphraseOpt = False,
    creds: CredsOpt = False,
    pkcs11: Pkcs11Opt = None,
    token: TokenOpt = None,
    pin_env: PinEnvOpt = "NERVE_TOKEN_PIN",
) -> None:
    """Create a workspace: nerve.yaml, senses/, workflows/, projections/, data/."""
    from nerve.api import Workspace

    if not encrypt and (key_file is not None or passphrase or creds or pkcs11 is not None):
        raise UsageError("--key-file, --passphrase, --systemd-creds and --pkcs11 go with --encrypt")
    if encrypt and (directory / "nerve.yaml").exists():
        raise UsageError(f"{directory / 'nerve.yaml'} already exists; not overwriting it")
    log_root = directory.expanduser().resolve() / "data" / "log"
    ref = token_ref(pkcs11, token, pin_env)
    kek = kek_for_new(key_file, passphrase, creds, log_root, ref) if encrypt else None
    ws = Workspace.create(directory, encrypt=kek)
    typer.echo(f"created {'encrypted ' if encrypt else ''}workspace {ws.root}")


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
    ctx: typer.Context = None,  # type: ignore[assignment]  # typer passes it
) -> None:
    """Append an event (or a batch with --jsonl) and print what was stored."""
    from nerve.log.wire import event_to_json
    from nerve.logops import parse_payload_arg

    if ctx is not None and ctx.args:  # `nerve emit --source shell hello`: meant for --line
        said = " ".join(ctx.args)
        raise UsageError(
            f"emit takes the event's text with --line, not as an argument ({said!r})",
            hint=f"nerve emit --source {source or 'shell'} --line {shlex.quote(said)}",
        )
    ws = _door(write=True)
    if jsonl is not None:
        if source is not None:
            raise UsageError("give either --source or --jsonl, not both")
        stream, name = _open_input(jsonl)
        with stream if stream is not sys.stdin else contextlib.nullcontext(stream):
            emitted = ws.events.emit_jsonl(stream, name, key=key)
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
        emitted = ws.events.append([fields], key=key)
    if quiet:
        return
    stored = emitted.events
    already = emitted.replayed
    if jsonl is not None and not (echo or as_json):  # a batch: a count, unless asked
        typer.echo(_stored_text(len(stored), key if already else None), err=True)
        return
    if already and not as_json:
        typer.echo(_stored_text(len(stored), key), err=True)
    for ev in stored:
        if as_json:
            emit_json(event_to_json(ev))
        else:
            typer.echo(f"stored {ev.kind} hlc {ev.hlc} id {ev.id.hex()}")


def _stored_text(count: int, replayed_key: str | None) -> str:
    if replayed_key is not None:
        return f"already stored: {plural(count, 'event')} under key {replayed_key!r}, none added"
    return f"stored {plural(count, 'event')}"


def import_cmd(
    path: Annotated[str, typer.Argument(help="JSON lines of whole events, or - for stdin.")],
    key: KeyOption = None,
) -> None:
    """Import whole events (hlc, node kept); they must sort after the log's newest."""
    stream, name = _open_input(path)
    count = _door(write=True).events.import_jsonl(stream, name, key=key)
    typer.echo(f"imported {plural(count, 'event')}", err=True)


def replay_cmd(
    verify_: Annotated[
        bool, typer.Option("--verify", help="Recompute every id, address and the manifest chain.")
    ] = False,
    projections: Annotated[
        bool,
        typer.Option("--projections", help="Also print a digest of every projection's rows."),
    ] = False,
    as_json: JsonFlag = False,
) -> None:
    """Replay the log and print its digest; with --verify, check everything."""
    ws = _door()
    report = ws.replay(verify=verify_)
    views = ws.log.projection_digests() if projections else None
    if as_json:
        listed = {} if views is None else {"projections": [v.to_json() for v in views]}
        emit_json(report.to_json() | listed)
    else:
        for key, value in (("events", report.events), ("segments", report.segments)):
            typer.echo(_field(key, value))
        typer.echo(_field("digest", report.digest))
        _replay_extras(report)
        for view in views or []:
            typer.echo(f"projection {view.name}: {view.rows} rows, digest {view.digest}")
        for problem in report.problems:
            typer.echo(f"corrupt: {problem}", err=True)
        for warning in report.warnings:
            typer.echo(f"warning: {warning}", err=True)
        for note in report.notes:
            typer.echo(f"erased: {note}", err=True)
        if verify_:
            typer.echo(_field("verify", "ok" if report.ok else "FAILED"))
    if not report.ok:
        raise typer.Exit(1)


def _replay_extras(report: Any) -> None:
    """What the digest covers when segments were archived, and the digest before each
    erasure (the erasure event is one more event; the digest before it is unchanged)."""
    if report.archives:
        typer.echo(_field("covers", report.covers))
    shown = report.checkpoints[-_CHECKPOINTS_SHOWN:]
    if len(report.checkpoints) > len(shown):
        typer.echo(f"({len(report.checkpoints) - len(shown)} earlier erasures: --json lists all)")
    for point in shown:
        typer.echo(
            f"before payload.erased {point.erasure[:12]}: {point.events} events, "
            f"digest {point.digest}"
        )


_CHECKPOINTS_SHOWN = 3


def _field(key: str, value: object) -> str:
    """One line of the replay's key/value block, every value in the same column."""
    return f"{key:<9}{value}"


def seal_cmd() -> None:
    """Seal the unsealed tail into a segment now."""
    info = _door(write=True).log.seal()
    typer.echo(
        f"sealed {plural(info.rows, 'event')} into {info.name}" if info else "nothing to seal"
    )


def repair_cmd() -> None:
    """Open a damaged log: keep every good frame, move damaged files to quarantine/."""
    notes = _door(write=True).log.repair()
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
    result = _door(write=True).log.compact(target_rows)
    typer.echo(
        f"merged {plural(result.merged, 'segment')} into {result.written} "
        f"({plural(result.rows, 'event')})"
    )


def query_cmd(
    sql: Annotated[
        str,
        typer.Argument(
            help="SQL over `events`, `all_events` (every synced device's, with `device`) "
            "and the projections."
        ),
    ],
    as_json: JsonFlag = False,
    as_csv: CsvFlag = False,
    limit: Annotated[int | None, typer.Option("--limit", min=0, help=LIMIT_HELP)] = None,
) -> None:
    """Run SQL in DuckDB over the log (a terminal shows --limit rows; pipes get all)."""
    result = _door().query(sql)
    fmt = "json" if as_json else "csv" if as_csv else "table"
    render_chunks(result.columns, result.chunks(), fmt=fmt, limit=limit)


def payload_cmd(cid: Annotated[str, typer.Argument(help="Payload address (hex).")]) -> None:
    """Print the payload bytes stored under a content address."""
    from nerve.logops import check_cid

    check_cid(cid)  # before the workspace is looked for, as a usage error should be
    sys.stdout.buffer.write(_door().events.payload(cid))


def conformance_cmd(
    vectors: Annotated[
        Path | None,
        typer.Option(
            "--vectors",
            help="A folder laid out like conformance/v1 (e.g. another implementation's).",
            file_okay=False,
        ),
    ] = None,
    as_json: JsonFlag = False,
) -> None:
    """Run every published conformance vector (or those in --vectors DIR)."""
    from nerve.conformance import run_all

    results = run_all(vectors)
    if as_json:
        emit_json({"ok": all(r.ok for r in results), "vectors": [r.to_json() for r in results]})
    else:
        out = console()
        for r in results:
            out.print(f"{'PASS' if r.ok else 'FAIL'} {r.vector}: {r.detail}")
    if not all(r.ok for r in results):
        raise typer.Exit(1)


def register(app: typer.Typer) -> None:
    from nerve.cli.tail_cmd import tail_cmd

    app.command("init", rich_help_panel="The log")(init)
    app.command("emit", context_settings={"allow_extra_args": True}, rich_help_panel="The log")(
        emit_cmd
    )
    app.command("import", rich_help_panel="The log")(import_cmd)
    app.command("replay", rich_help_panel="The log")(replay_cmd)
    app.command("seal", rich_help_panel="The log")(seal_cmd)
    app.command("compact", rich_help_panel="The log")(compact_cmd)
    app.command("repair", rich_help_panel="The log")(repair_cmd)
    app.command("query", rich_help_panel="The log")(query_cmd)
    app.command("tail", rich_help_panel="Everyday")(tail_cmd)
    app.command("payload", rich_help_panel="The log")(payload_cmd)
    app.command("conformance", rich_help_panel="The log")(conformance_cmd)
