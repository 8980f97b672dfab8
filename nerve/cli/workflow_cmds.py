"""Workflow commands: list, inspect, thread (read the log) and trigger, answer, recheck,
override (ask the daemon)."""

import sys
from typing import Annotated, Any

import typer

from nerve.cli.output import emit_json, render_rows
from nerve.cli.state import door as _door
from nerve.errors import ConfigError, UsageError

workflow_app = typer.Typer(help="Run and inspect workflows.", no_args_is_help=True)
JsonFlag = Annotated[bool, typer.Option("--json", help="JSON output (one object per line).")]
CsvFlag = Annotated[bool, typer.Option("--csv", help="CSV output.")]
RunArg = Annotated[str, typer.Argument(help="Run id (see `nerve workflow list`).")]


def _fmt(as_json: bool, as_csv: bool) -> str:
    return "json" if as_json else "csv" if as_csv else "table"


@workflow_app.command("list")
def list_cmd(
    include_all: Annotated[
        bool, typer.Option("--all", help="Every run, however old and whatever its status.")
    ] = False,
    since: Annotated[
        str, typer.Option("--since", help="Also finished runs requested within this (30m, 1d).")
    ] = "1h",
    workflow: Annotated[str | None, typer.Option("--workflow", help="Only this workflow.")] = None,
    limit: Annotated[int, typer.Option("--limit", help="At most this many runs.")] = 20,
    offset: Annotated[int, typer.Option("--offset", help="Skip this many runs.")] = 0,
    as_json: JsonFlag = False,
    as_csv: CsvFlag = False,
) -> None:
    """Runs, newest first: unfinished ones and any requested in the last hour (--since)."""
    import time

    from nerve.durations import parse_duration

    try:
        since_ns = time.time_ns() - parse_duration(since) * 1_000_000
    except ConfigError as exc:
        raise UsageError(f"--since: {exc}", hint="e.g. --since 30m or 2d") from None
    runs = _door().runs.table(
        include_all=include_all, since_ns=since_ns, workflow=workflow, limit=limit, offset=offset
    )
    render_rows(runs.columns, runs.rows, fmt=_fmt(as_json, as_csv), title="workflow runs")


@workflow_app.command("inspect")
def inspect_cmd(
    run: RunArg,
    limit: Annotated[int, typer.Option("--limit", help="At most this many events.")] = 100,
    offset: Annotated[int, typer.Option("--offset", help="Skip this many events.")] = 0,
    as_json: JsonFlag = False,
) -> None:
    """A run's status, the files it keeps, and its events: start frame, decisions, messages,
    checks, status changes."""
    ws = _door()
    row = ws.run(run).row().to_json()
    events = ws.run(run).events()[max(0, offset) : max(0, offset) + max(0, limit)]
    kept = ws.run(run).outputs()
    if as_json:
        emit_json({"run": row, "events": [e.to_json() for e in events], "outputs": kept})
        return
    for key, value in row.items():
        typer.echo(f"{key + ':':<14}{'' if value is None else value}")
    if kept:
        typer.echo(f"{'outputs:':<14}{', '.join(kept)}  (nerve workflow outputs {run} NAME)")
    typer.echo("")
    cells = [[f"{e.physical_ns}.{e.logical}", e.ts, e.kind, e.line] for e in events]
    render_rows(["hlc", "ts", "kind", "line"], cells, fmt="table", title=f"{run} events")


@workflow_app.command("thread")
def thread_cmd(
    run: RunArg,
    before: Annotated[
        int | None, typer.Option("--before", help="Only rounds before this round number.")
    ] = None,
    budget: Annotated[
        int | None, typer.Option("--budget", help="At most about this many characters.")
    ] = None,
) -> None:
    """The run's role messages, oldest first; the newest rounds that fit --budget."""
    from nerve.flow.contract import Message
    from nerve.flow.history import thread_page

    ws = _door()
    record = ws.run(run).record()
    rounds = [
        (Message.from_json(e.data), e.ts)
        for e in ws.run(run).events()
        if e.kind == "workflow.message"
    ]
    page = thread_page(rounds, before=before, budget=budget)
    typer.echo(f"thread {run} (workflow {record.workflow}, status {record.status})", err=True)
    if not page.blocks:
        typer.echo("no role messages recorded for this run", err=True)
    typer.echo("\n".join(page.blocks), nl=False)
    if page.older_before is not None:
        more = f" --budget {budget}" if budget is not None else ""
        typer.echo(
            "older rounds not shown; fetch them with: "
            f"nerve workflow thread {run} --before {page.older_before}{more}",
            err=True,
        )


@workflow_app.command("trigger")
def trigger_cmd(
    name: Annotated[str, typer.Argument(help="Workflow to run.")],
    prompt: Annotated[str, typer.Option("--prompt", help="The start frame's text.")] = "",
    max_rounds: Annotated[
        int | None, typer.Option("--max-rounds", help="Cap on role messages.")
    ] = None,
    dry_run: Annotated[
        bool, typer.Option("--dry-run", help="Record the request and first decision only.")
    ] = False,
    key: Annotated[
        str | None,
        typer.Option("--key", help="Dedupe key: a key that already started a run starts none."),
    ] = None,
    payload: Annotated[
        str | None,
        typer.Option(
            "--payload",
            help='JSON as seed 001 takes it: {"prompt": "...", "maxRounds": 50} (dryRun too).',
        ),
    ] = None,
    as_json: JsonFlag = False,
) -> None:
    """Ask the running daemon to start a run; print its id and where its outputs land."""
    from nerve.flow.client import payload_fields
    from nerve.flow.judge import run_dir

    fields: dict[str, Any] = {"prompt": prompt, "max_rounds": max_rounds, "dry_run": dry_run}
    if payload is not None:
        given = payload_fields(payload)
        flags = {"prompt": prompt != "", "max_rounds": max_rounds is not None, "dry_run": dry_run}
        twice = sorted(key for key in given if flags[key])
        if twice:
            raise UsageError(f"{', '.join(twice)} given both as a flag and in --payload")
        fields |= given
    ws = _door(write=True)
    reply = ws.runs.trigger(name, **fields, key=key)
    said = reply.fields
    if reply.status == "deduped":
        if as_json:
            emit_json(reply.to_json())
        else:
            typer.echo(f"deduped: key {key!r} already started {said['earlier_run']}")
        return
    dry_run = bool(fields["dry_run"])
    outputs = run_dir(ws.root, reply.run) if reply.run else None
    if as_json:
        emit_json({**reply.to_json(), "outputs": str(outputs) if outputs else None})
        return
    if dry_run:
        typer.echo(f"{reply.run}: {said['status']} (first decision: {said.get('decision')})")
        return
    extra = said.get("reason") or said.get("error")
    typer.echo(f"{reply.run}: {said['status']}" + (f" ({extra})" if extra else ""))
    if outputs is not None:
        typer.echo(f"outputs  {outputs}\nfollow   nerve workflow inspect {reply.run}")


@workflow_app.command("outputs")
def outputs_cmd(
    run: RunArg,
    name: Annotated[str | None, typer.Argument(help="A file to print (else: list them).")] = None,
) -> None:
    """A run's kept files (outputs, and gate findings under .checks/), or one file's text;
    an encrypted workspace's are decrypted with the key."""
    ws = _door()
    if name is None:
        for kept in ws.run(run).outputs():
            typer.echo(kept)
        return
    typer.echo(ws.run(run).output(name), nl=False)


@workflow_app.command("answer")
def answer_cmd(
    run: RunArg,
    choice: Annotated[str, typer.Argument(help="One of the question's options (or its number).")],
) -> None:
    """Answer a waiting run's question; the run resumes."""
    reply = _door(write=True).run(run).answer(choice)
    typer.echo(f"{run}: answered {reply.choice!r}; {reply.status}")


@workflow_app.command("recheck")
def recheck_cmd(run: RunArg, as_json: JsonFlag = False) -> None:
    """Fire a held run's output checks again; it completes if they pass now."""
    ws = _door(write=True)
    reply = ws.run(run).recheck()
    if as_json:
        emit_json(reply.to_json())
        return
    typer.echo(f"{run}: {reply.status}")
    if reply.status == "held":
        held = ws.run(run).record().held or {}
        typer.echo(f"still held: {held.get('reason')}", err=True)


@workflow_app.command("override")
def override_cmd(
    run: RunArg,
    reason: Annotated[str, typer.Option("--reason", help="Why the gate is overridden.")],
    yes: Annotated[bool, typer.Option("--yes", help="Do not ask to confirm.")] = False,
) -> None:
    """Complete a held run despite its blocking checks (a person at a terminal only)."""
    ws = _door(write=True)
    refusal = ws.runs.override_refusal(stdin=sys.stdin, stdout=sys.stdout)
    if refusal is None and not yes:
        held = ws.run(run).record().held or {}
        for item in held.get("reasons") or []:
            what = item.get("check") or item.get("output")
            typer.echo(f"  {what}: {item.get('reason')} ({item.get('path', '')})")
        if not typer.confirm(f"Override the gate of {run}?", default=False):
            raise typer.Exit(1)
    reply = ws.run(run).override(reason, stdin=sys.stdin, stdout=sys.stdout)
    typer.echo(f"{run}: {reply.status} (overrode {', '.join(reply.checks) or 'the gate'})")


def register(app: typer.Typer) -> None:
    app.add_typer(workflow_app, name="workflow", rich_help_panel="Workflows")
