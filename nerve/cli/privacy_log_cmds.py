"""Forgetting and archive: ``nerve forget``, ``nerve archive``."""

from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from nerve.cli.state import door as _door

if TYPE_CHECKING:
    from nerve.privacy.forget import ForgetResult

SEGMENTS_SHOWN = 20


def forget_cmd(
    cid: Annotated[
        list[str] | None,
        typer.Option("--cid", metavar="HASH", help="A payload address (repeatable)."),
    ] = None,
    source: Annotated[
        list[str] | None,
        typer.Option("--source", metavar="SOURCE", help="A source class (repeatable)."),
    ] = None,
    kind: Annotated[
        list[str] | None, typer.Option("--kind", metavar="KIND", help="A kind (repeatable).")
    ] = None,
    match: Annotated[
        str | None, typer.Option("--match", metavar="TEXT", help="Text in the line or the payload.")
    ] = None,
    before: Annotated[
        str | None,
        typer.Option(
            "--before",
            metavar="WHEN",
            help="Older than: 30d, an ISO time, an HLC stamp or words (yesterday, 9:00).",
        ),
    ] = None,
    after: Annotated[
        str | None,
        typer.Option(
            "--after",
            metavar="WHEN",
            help="Newer than: 30d, an ISO time, an HLC stamp or words (yesterday, 9:00).",
        ),
    ] = None,
    reason: Annotated[
        str, typer.Option("--reason", metavar="TEXT", help="Why, kept in the payload.erased event.")
    ] = "user",
    retention: Annotated[
        bool, typer.Option("--retention", help="Apply log.retention from nerve.yaml now.")
    ] = False,
    dry_run: Annotated[
        bool, typer.Option("--dry-run", help="Print what would be erased; change nothing.")
    ] = False,
    all_kinds: Annotated[
        bool,
        typer.Option(
            "--all-kinds", help="Let --match take nerve's bookkeeping too (ask.question, …)."
        ),
    ] = False,
    as_json: Annotated[bool, typer.Option("--json", help="JSON output.")] = False,
) -> None:
    """Erase the payload and line of the events selected, and prove nothing else changed.

    Selectors combine with AND (repeated ones with OR). The log keeps each event's id,
    order and payload address, so the replay digest is unchanged; one payload.erased event
    records what went and why (that a --match text was used, never it nor a hash), and `nerve replay
    --verify` reports the erasure, not tampering. Goes through the daemon when one runs.
    --match leaves nerve's bookkeeping (ask.question, …) alone unless --all-kinds or a
    --kind names it.
    """
    from nerve.privacy.forget import request_of

    request = request_of(
        cids=cid or (),
        sources=source or (),
        kinds=kind or (),
        match=match,
        before=before,
        after=after,
        reason=reason,
        retention=retention,
        all_kinds=all_kinds,
    )
    result = _door(write=not dry_run).privacy.forget_request(request, dry_run=dry_run)
    if as_json:
        from nerve.cli.output import emit_json

        emit_json(result.to_json())
        return
    _print_result(result)


def _print_result(result: "ForgetResult") -> None:
    if not result.erased and not (result.already or result.protected):
        typer.echo("nothing to erase: no stored event matches")
        return
    verb = "would erase" if result.dry_run else "erased"
    segments = len(result.segments)
    typer.echo(
        f"{verb} the payload and line of {result.erased} events in {segments} segment(s) "
        f"(reason: {result.reason}); ids, order and the replay digest are kept"
    )
    for entry in result.segments[:SEGMENTS_SHOWN]:
        name = entry["segment"][:12] if entry["segment"] else "(unsealed)"
        by_source = _by_source(entry["sources"])
        typer.echo(f"  {name:<12}  {entry['events']:>8}  {by_source}")
    if len(result.segments) > SEGMENTS_SHOWN:
        rest = result.segments[SEGMENTS_SHOWN:]
        typer.echo(
            f"  … and {len(rest)} more segments, {sum(e['events'] for e in rest)} events "
            "(--json lists all)"
        )
    if result.sources and len(result.segments) > 1:
        typer.echo("  by source: " + _by_source(result.sources))
    if result.already or result.protected:
        typer.echo(
            f"matched but kept: {result.already} already erased, {result.protected} "
            "records nerve needs (payload.erased, chain links, snapshots, batch keys)"
        )
    if result.erasures:
        typer.echo(f"recorded as payload.erased {', '.join(e[:12] for e in result.erasures)}")
        typer.echo("`nerve replay` prints the digest before it, unchanged; --verify reports it")


def archive_cmd(
    before: Annotated[
        str,
        typer.Option(
            "--before",
            metavar="WHEN",
            help="Move segments wholly older than this (30d, ISO, HLC, yesterday).",
        ),
    ],
    to: Annotated[
        Path, typer.Option("--to", metavar="DIR", help="The archive folder (created if needed).")
    ],
    vacuum: Annotated[
        bool,
        typer.Option(
            "--vacuum", help="Delete the moved (and other retired) files now, not after 60 s."
        ),
    ] = False,
    as_json: Annotated[bool, typer.Option("--json", help="JSON output.")] = False,
) -> None:
    """Move whole sealed segments older than --before into DIR, a read-only nerve log.

    `nerve --workspace DIR replay --verify` checks the archive; the live manifest records
    the move, and `nerve replay` prints the whole-history digest while the archive is
    reachable (list it under log.archives in nerve.yaml if you move it).
    """
    from nerve.privacy.archive import cut_of

    result = _door(write=True).log.archive(cut_of(before), to, vacuum=vacuum)
    if as_json:
        from nerve.cli.output import emit_json

        emit_json(result.to_json())
        return
    if not result.segments:
        typer.echo(f"nothing to archive: no sealed segment lies wholly before {before}")
        return
    typer.echo(
        f"archived {result.segments} segment(s), {result.events} events "
        f"({result.first} .. {result.last}) to {result.to}"
    )


def register(app: typer.Typer) -> None:
    app.command("forget", rich_help_panel="Privacy")(forget_cmd)
    app.command("archive", rich_help_panel="Privacy")(archive_cmd)


def _by_source(counts: dict[str, int]) -> str:
    """``shell 3, nerve 1``: nerve's own source read as everywhere else, ``nerve``."""
    from nerve.events import NERVE_SOURCE, NERVE_SOURCE_NAME, source_name

    own = source_name(NERVE_SOURCE)
    return ", ".join(f"{NERVE_SOURCE_NAME if s == own else s} {n}" for s, n in counts.items())
