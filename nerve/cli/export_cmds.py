"""Export commands: ``nerve export --duckdb FILE``, the log as a file plain DuckDB opens."""

from pathlib import Path
from typing import Annotated

import typer

from nerve.cli.state import door as _door


def export_cmd(
    duckdb_file: Annotated[
        Path,
        typer.Option(
            "--duckdb",
            metavar="FILE",
            help="The DuckDB database file to write (it must not exist yet).",
        ),
    ],
    force: Annotated[bool, typer.Option("--force", help="Replace FILE if it exists.")] = False,
    copy: Annotated[
        bool,
        typer.Option(
            "--copy",
            help="Copy the events into FILE (as large as the log), so it stands alone and "
            "compaction cannot break it.",
        ),
    ] = False,
    plaintext: Annotated[
        bool,
        typer.Option(
            "--plaintext",
            help="With --copy, for an encrypted workspace: write the events decrypted.",
        ),
    ] = False,
    as_json: Annotated[bool, typer.Option("--json", help="JSON output.")] = False,
) -> None:
    """Write the log as a DuckDB file that plain `duckdb FILE` queries, no nerve needed.

    Seals the unsealed tail first (through the daemon if one runs), so FILE holds every event
    stored up to now. No data is copied: FILE holds views that read the segment files in
    place, by absolute path: `events` (the columns `nerve query` shows, source_name and
    trust_name included) and every projection. Events stored later are not in it, and once
    `nerve compact` has deleted a segment it names, DuckDB reports that file missing: export
    again with --force, or use --copy.
    """
    result = _door().log.export(duckdb_file, force=force, copy=copy, plaintext=plaintext)
    if as_json:
        from nerve.cli.output import emit_json

        emit_json(result.to_json())
    else:
        sealed = f"sealed {result.sealed} events, then " if result.sealed else ""
        typer.echo(
            f"{sealed}exported {result.events} events in {result.segments} segments "
            f"to {result.path}\nviews: {', '.join(result.views)}"
        )
        typer.echo(
            "the events are copied into the file: it stands alone"
            if result.copied
            else "the views read the segment files in place (no data copied): "
            "export again after `nerve compact`"
        )
    if result.unsealed:
        typer.echo(
            f"warning: {result.unsealed} events stored after the seal are not in the file",
            err=True,
        )


def register(app: typer.Typer) -> None:
    app.command("export", rich_help_panel="The log")(export_cmd)
