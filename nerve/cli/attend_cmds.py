"""Attention and audit commands: attend (--replay, --recompute) and audit (verify, held, ...)."""

from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

from nerve.cli.output import (
    emit_json,
    fit_cell,
    flat,
    is_terminal,
    note,
    plural,
    render_rows,
    terminal_width,
)
from nerve.cli.pager import page
from nerve.cli.state import door as _door
from nerve.errors import UsageError
from nerve.safetext import shown

if TYPE_CHECKING:
    from nerve.attention import audit

audit_app = typer.Typer(help="Verify and inspect the sealed surfacing log.", no_args_is_help=True)
JsonFlag = Annotated[bool, typer.Option("--json", help="JSON output.")]


def attend(
    replay_: Annotated[
        bool, typer.Option("--replay", help="Attend to observations not yet attended.")
    ] = False,
    recompute_: Annotated[
        bool, typer.Option("--recompute", help="Recompute every decision and compare.")
    ] = False,
    check_: Annotated[bool, typer.Option("--check", hidden=True)] = False,  # --recompute's old name
    follow_: Annotated[
        bool,
        typer.Option("-f", "--follow", help="Print each decision as it is made (Ctrl+C stops)."),
    ] = False,
    with_: Annotated[
        Path | None,
        typer.Option(
            "--with",
            help="With --replay: what would other attention: settings (a YAML file) have "
            "surfaced and held? Nothing is written.",
        ),
    ] = None,
    since: Annotated[
        str | None,
        typer.Option("--since", help="With --with: compare decisions from then on (7d, ISO)."),
    ] = None,
    as_json: JsonFlag = False,
) -> None:
    """Catch a log up as the daemon would (--replay), try other settings (--replay --with),
    recompute every decision (--recompute), or print each decision as it is made (--follow).

    --replay --with FILE [--since 7d] attends to the whole log again under FILE's
    attention: settings (laid over this workspace's) and lists every decision that would
    differ from the recorded one; nothing is written.
    --follow prints one line per decision (--json: JSON lines) until Ctrl+C."""
    recompute_ = recompute_ or check_
    if with_ is not None or since is not None:
        if with_ is None or not replay_ or recompute_ or follow_:
            raise UsageError(
                "give --with FILE with --replay alone (--since only with --with)",
                hint="nerve attend --replay --with what-if.yaml --since 7d",
            )
        _what_if(with_, since, as_json)
        return
    if follow_:
        if replay_ or recompute_:
            raise UsageError("give --follow alone, not with --replay or --recompute")
        _follow(as_json)
        return
    if not (replay_ or recompute_):
        raise UsageError("give --replay, --recompute, both, or --follow")
    ws = _door(write=True)
    if replay_:
        result = ws.audit.attend()
        _say(
            as_json,
            result.to_json(),
            f"attended {result.observed} observations: {result.decisions} decisions, "
            f"{result.appended} events appended",
        )
    if recompute_:
        outcome = ws.audit.recompute()
        _say(as_json, outcome.to_json(), _recomputed_text(outcome.to_json()))
        if not outcome.ok:
            raise typer.Exit(1)


SHOWN_CHANGES = 40


def _what_if(path: Path, since: str | None, as_json: bool) -> None:
    """What FILE's attention settings would have decided, beside what the log holds."""
    from nerve.tail import parse_instant

    since_ns = parse_instant(since).physical_ns if since else 0
    result = _door().audit.what_if(path, since_ns)
    if as_json:
        emit_json({"settings_file": str(path), **result.to_json()})
        return
    typer.echo(shown(_what_if_text(path, since, result)))


def _what_if_text(path: Path, since: str | None, result: Any) -> str:
    from nerve.cli.output import plural

    window = f"since {since}" if since else "over the whole log"
    (rs, rh), (ws_, wh) = result.recorded, result.would
    lines = [
        f"what if attention ran with {path} ({window}; "
        f"{plural(result.replayed, 'observation')} attended again, nothing written):",
        f"  recorded: {rs} surfaced, {rh} held",
        f"  would be: {ws_} surfaced, {wh} held",
    ]
    if result.same:
        lines.append("  no decision differs")
        return "\n".join(lines)
    lines.append(f"  {plural(len(result.changes), 'decision')} would differ:")
    for change in result.changes[:SHOWN_CHANGES]:
        was, now = change.recorded or "no decision", change.would or "no decision"
        said = change.line.split(" ", 1)[-1]  # the outcome is already in was -> now
        lines.append(f"  {_clock(change.at_ns)}  {was} -> {now}  {said}")
    rest = len(result.changes) - SHOWN_CHANGES
    if rest > 0:
        lines.append(f"  ... and {rest} more (--json lists every one)")
    return "\n".join(lines)


def _clock(ns: int) -> str:
    from datetime import datetime

    return datetime.fromtimestamp(ns / 1e9).astimezone().strftime("%Y-%m-%d %H:%M:%S")


def _follow(as_json: bool) -> None:
    """Each decision as the log stores it, flushed line by line (a pipe sees it at once)."""
    import json
    import sys

    from nerve.attention.reason import decision_json, decision_line

    for decision in _door().audit.follow():
        if as_json:
            text = json.dumps(decision_json(decision.fields), sort_keys=True, ensure_ascii=False)
        else:
            text = shown(decision_line(decision.fields))
        sys.stdout.write(text + "\n")
        sys.stdout.flush()


def _recomputed_text(data: dict[str, Any]) -> str:
    if data["ok"]:
        return f"recompute ok: {data['compared']} decisions recomputed, all equal to the log's"
    d = data["difference"]
    return (
        f"recompute FAILED at decision {d['index']} (source event {d.get('source_event')}): "
        f"{d['field']} recorded {d['recorded']!r}, recomputed {d['computed']!r}"
    )


def _say(as_json: bool, data: dict[str, Any], text: str) -> None:
    if as_json:
        emit_json(data)
    else:
        typer.echo(text)


@audit_app.command("verify")
def verify(
    path: Annotated[
        Path | None, typer.Argument(help="An exported bundle (default: this workspace's log).")
    ] = None,
    key: Annotated[str | None, typer.Option("--key", help="Pin this public key (hex).")] = None,
    trust_bundle_key: Annotated[
        bool,
        typer.Option(
            "--trust-bundle-key", help="Take the key the bundle carries (proves no authorship)."
        ),
    ] = False,
    no_record: Annotated[
        bool, typer.Option("--no-record", help="Do not advance the trust record.")
    ] = False,
    seed: Annotated[
        str | None,
        typer.Option("--seed", help="Check the epoch seals with this verification seed."),
    ] = None,
    as_json: JsonFlag = False,
) -> None:
    """Check every signature, seq, prev link, encoding and checkpoint; name the first break.
    With --seed: check every epoch seal instead, and name the first failing epoch."""
    if seed is not None:
        from nerve.cli.seal_cmds import verify_seed

        verify_seed(seed, as_json)
    verdict = _verdict(path, _parse_key(key), trust_bundle_key, record=not no_record)
    data = verdict.to_json()
    if verdict.pinned == "bundle":
        typer.echo(
            f"warning: key {data['key']} was taken from the bundle itself (--trust-bundle-key): "
            "this shows the bundle is consistent, not who wrote it",
            err=True,
        )
    if as_json:
        emit_json(data)
    elif verdict.report.ok and not data["links"]:
        typer.echo("ok: no links yet (nothing has been surfaced or held in this workspace)")
    elif verdict.report.ok:
        typer.echo(
            f"ok: {data['links']} links verified (log {data['log_id']}, epoch {data['epoch']}, "
            f"key from {data['key_from']})"
        )
    else:
        b = data["break"]
        typer.echo(f"BREAK at seq {b['seq']}: {b['kind']}: {b['message']}", err=True)
    raise typer.Exit(verdict.report.exit_code)


def _verdict(
    path: Path | None, key: bytes | None, trust_bundle_key: bool, *, record: bool
) -> "audit.Verdict":
    from nerve.attention import bundle

    if path is not None:
        if key is not None and trust_bundle_key:
            raise UsageError("give --key or --trust-bundle-key, not both")
        return bundle.verify_bundle(path, key=key, trust_bundle_key=trust_bundle_key, record=record)
    if trust_bundle_key:
        raise UsageError(
            "--trust-bundle-key applies to a bundle", hint="nerve audit verify BUNDLE ..."
        )
    # the log is append-only: an empty chain means none was ever written
    return _door().audit.verify_with(key=key, key_from="--key", record=record)


def _parse_key(key: str | None) -> bytes | None:
    if key is None:
        return None
    try:
        raw = bytes.fromhex(key.strip())
    except ValueError:
        raise UsageError(f"--key {key!r} is not hex") from None
    if len(raw) != 32:
        raise UsageError(
            f"--key must be a 32-byte Ed25519 public key (64 hex digits), got {len(raw)} bytes"
        )
    return raw


HELD_COLUMNS = [
    "chain_seq",
    "ts",
    "outcome",
    "probe",
    "value_milli",
    "cost_milli",
    "budget_before_uj",
    "budget_after_uj",
    "source_event",
    "source_line",
    "why",
]


def _since(text: str | None) -> int | None:
    """--since read as ``tail`` reads it: 1h ago, an ISO time, an HLC stamp or words
    (yesterday, this morning, 5 min)."""
    from nerve.tail import parse_instant

    if text is None:
        return None
    try:
        return parse_instant(text).physical_ns
    except UsageError as exc:
        raise UsageError(f"--since: {exc}") from None


@audit_app.command("held")
def held(
    since: Annotated[
        str | None, typer.Option("--since", help="From 1h ago, an ISO time, yesterday …")
    ] = None,
    as_json: JsonFlag = False,
    as_csv: Annotated[bool, typer.Option("--csv", help="CSV output.")] = False,
) -> None:
    """Each held highlight: why in words (the rule that held it and what it compared), its
    source event and chain seq."""
    rows = [{**d.to_json(), "why": d.why().words()} for d in _door().audit.held(_since(since))]
    if not (as_json or as_csv) and is_terminal():
        _held_for_a_person(rows)
        return
    render_rows(
        HELD_COLUMNS,
        [[r.get(c) for c in HELD_COLUMNS] for r in rows],
        fmt="json" if as_json else "csv" if as_csv else "table",
        title="held highlights",
    )


def _held_for_a_person(rows: list[dict[str, Any]]) -> None:
    """``audit held`` on a terminal: :func:`held_lines`, through the pager when long."""
    import sys

    lines = held_lines(rows, terminal_width())
    page()
    sys.stdout.write("".join(line + "\n" for line in lines))
    sys.stdout.flush()
    note(f"{plural(len(rows), 'held highlight')} (--csv, --json: every field)")


def held_lines(rows: list[dict[str, Any]], width: int) -> list[str]:
    """Each held highlight for a person: its seq, time, outcome and the line it held on one
    line, then why in words wrapped under it, whole at any width (a table would cut it
    first); the other fields are for --csv and --json."""
    import textwrap

    out = []
    for row in rows:
        head = f"#{row['chain_seq']}  {row['ts']}  {row['outcome']}  "
        line = fit_cell(flat(str(row.get("source_line") or "")), max(width - len(head), 10))
        out.append(head + line.rstrip())
        why = textwrap.wrap(flat(str(row["why"])), width - 4, break_long_words=False)
        out += [f"    {words}" for words in why]
    return out


@audit_app.command("access")
def access(
    since: Annotated[
        str | None, typer.Option("--since", help="From 1d ago, an ISO time, yesterday …")
    ] = None,
    client: Annotated[
        str | None, typer.Option("--client", help="Only this MCP client (its name).")
    ] = None,
    as_json: JsonFlag = False,
    as_csv: Annotated[bool, typer.Option("--csv", help="CSV output.")] = False,
) -> None:
    """What agents took through `nerve mcp`: each call's client, tool, rows, bytes, refusal."""
    from nerve.mcp.access import COLUMNS, accesses

    rows = accesses(_door(), since_ns=_since(since), client=client)
    render_rows(
        COLUMNS,
        [[r[c] for c in COLUMNS] for r in rows],
        fmt="json" if as_json else "csv" if as_csv else "table",
        title="agent access",
    )


@audit_app.command("show")
def show(
    seq: Annotated[int, typer.Argument(help="The link's seq.")], as_json: JsonFlag = False
) -> None:
    """One link of the chain, decoded."""
    from nerve.cli.audit_words import link_lines

    link = _door().audit.show(seq).to_json()
    if as_json:
        emit_json(link)
        return
    typer.echo(shown("\n".join(link_lines(link))))  # its source line is the log's text


@audit_app.command("export")
def export(out: Annotated[Path, typer.Option("--out", help="Bundle file to write.")]) -> None:
    """Write a self-contained bundle that verifies offline elsewhere."""
    info = _door().audit.export(out)
    typer.echo(f"wrote {info.links} links to {info.path} (public key {info.public_key})")


@audit_app.command("rotate-key")
def rotate_key() -> None:
    """Move to a new signing key: a link signed by the old and the new key."""
    epoch = _door(write=True).audit.rotate_key()
    typer.echo(f"signing key rotated: epoch {epoch}")


def register(app: typer.Typer) -> None:
    from nerve.cli import seal_cmds

    seal_cmds.register(audit_app)
    app.command("attend", rich_help_panel="Attention & audit")(attend)
    app.add_typer(audit_app, name="audit", rich_help_panel="Attention & audit")
