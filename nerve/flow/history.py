"""Workflow runs read back from the log: the status projection, one run's events, its thread.

Everything here is a function of the log alone: the CLI reads runs without the daemon, and the
engine rebuilds a run it must resume with :func:`rebuild` over the same events. A run's events
all have the run id as subject:

    workflow.status    {run, workflow, status, reason, ...}  the first carries ``request``
    workflow.started   the start frame {run, workflow, prompt, max_rounds, source, sense, ...}
    workflow.decision  {run, workflow, round, context, after, next}
    workflow.message   {run, workflow, round, role, content, meta}
    workflow.question  {run, workflow, role, round, question, options}
    workflow.answer    {run, workflow, role, question, options, choice, by}
    workflow.override  {run, workflow, reason, checks, by, tty}
    check.fired / check.verdict   the output checks fired on the run's outputs
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from nerve.canonical import loads_bounded
from nerve.errors import EventError, WorkflowError
from nerve.flow.contract import Message, StartFrame

if TYPE_CHECKING:  # the daemon's connections are run by its query process
    import duckdb

__all__ = [
    "ACTIVE",
    "RunRecord",
    "ThreadPage",
    "list_runs",
    "load_run",
    "rebuild",
    "render_round",
    "run_events",
    "run_row",
    "thread_page",
]

ACTIVE = ("queued", "started", "waiting", "held", "crashed")
_RUN_COLUMNS = (
    "run, workflow, status, reason, rounds, max_rounds, prompt, dry_run, source, sense, "
    "requested_at, updated_at"
)


@dataclass
class RunRecord:
    """A run as its events leave it: what the engine needs to carry on from there."""

    run: str
    workflow: str = ""
    status: str = ""
    request: dict[str, Any] = field(default_factory=dict)
    start: StartFrame | None = None
    messages: list[Message] = field(default_factory=list)
    next_role: str | None = None
    question: dict[str, Any] | None = None
    answer: dict[str, Any] | None = None
    held: dict[str, Any] | None = None
    requested: tuple[int, int] = (0, 0)

    @property
    def round(self) -> int:
        return len(self.messages)


def _apply(record: RunRecord, kind: str, data: Mapping[str, Any]) -> None:
    if kind == "workflow.status":
        if not record.status:
            record.workflow = str(data.get("workflow", ""))
            record.request = dict(data.get("request") or {})
        record.status = str(data["status"])
        record.held = dict(data) if record.status == "held" else None
    elif kind == "workflow.started":
        record.start = StartFrame.from_json(data)
    elif kind == "workflow.decision":
        record.next_role = str(data["next"])
    elif kind == "workflow.message":
        record.messages.append(Message.from_json(data))
        record.next_role = record.question = record.answer = None
    elif kind == "workflow.question":
        record.question, record.answer = dict(data), None
    elif kind == "workflow.answer":
        record.question, record.answer = None, dict(data)


def rebuild(run: str, events: Iterable[tuple[str, Mapping[str, Any]]]) -> RunRecord:
    """Fold a run's ``(kind, data)`` events, in log order, into a :class:`RunRecord`."""
    record = RunRecord(run)
    for kind, data in events:
        _apply(record, kind, data)
    return record


def run_events(conn: duckdb.DuckDBPyConnection, run: str) -> list[dict[str, Any]]:
    """Every event of ``run`` in log order: ``physical_ns, logical, ts, kind, line, data``."""
    rows = conn.execute(
        "SELECT physical_ns, logical, ts, kind, line, data FROM events "
        "WHERE subject = ? AND (kind LIKE 'workflow.%' OR kind LIKE 'check.%') "
        "ORDER BY physical_ns, logical",
        [run],
    ).fetchall()
    keys = ("physical_ns", "logical", "ts", "kind", "line", "data")
    out = [dict(zip(keys, row, strict=True)) for row in rows]
    for row in out:
        row["data"] = _data(row["data"])
    return out


def _data(text: str | None) -> Any:
    """An event's payload as JSON; one nesting deeper than the limit is ``{"raw": text}``
    (its first 200 characters) with ``"undecodable"`` saying why."""
    if text is None:
        return {}
    try:
        return loads_bounded(text, field="payload")
    except EventError as exc:
        return {"undecodable": str(exc), "raw": text[:200]}


def load_run(conn: duckdb.DuckDBPyConnection, run: str) -> RunRecord:
    """The run rebuilt from the log; ``WorkflowError`` if the log has no such run."""
    events = run_events(conn, run)
    record = rebuild(run, ((e["kind"], e["data"]) for e in events))
    if not record.status:
        raise WorkflowError(
            f"no workflow run {run!r}", hint="`nerve workflow list --all` lists runs"
        )
    first = next(e for e in events if e["kind"] == "workflow.status")
    record.requested = (int(first["physical_ns"]), int(first["logical"]))
    return record


def run_row(conn: duckdb.DuckDBPyConnection, run: str) -> dict[str, Any]:
    """The run's row of the ``workflow_runs`` projection."""
    rel = conn.execute(f"SELECT {_RUN_COLUMNS} FROM workflow_runs WHERE run = ?", [run])
    row = rel.fetchone()
    if row is None:
        raise WorkflowError(
            f"no workflow run {run!r}", hint="`nerve workflow list --all` lists runs"
        )
    columns = [d[0] for d in rel.description or []]
    return dict(zip(columns, row, strict=True))


def list_runs(
    conn: duckdb.DuckDBPyConnection,
    *,
    include_all: bool = False,
    since_ns: int | None = None,
    workflow: str | None = None,
    limit: int = 20,
    offset: int = 0,
) -> tuple[list[str], list[tuple[Any, ...]]]:
    """Runs, newest request first: unfinished ones, and finished ones requested at or after
    ``since_ns`` (wall ns); every run with ``include_all``."""
    where: list[str] = []
    params: list[Any] = []
    if not include_all:
        active = f"status IN ({', '.join('?' * len(ACTIVE))})"
        if since_ns is None:
            where.append(active)
        else:
            where.append(f"({active} OR requested_ns >= ?)")
            params.append(since_ns)
        params[:0] = list(ACTIVE)
    if workflow is not None:
        where.append("workflow = ?")
        params.append(workflow)
    sql = f"SELECT {_RUN_COLUMNS} FROM workflow_runs"
    if where:
        sql += " WHERE " + " AND ".join(where)
    sql += " ORDER BY requested_ns DESC, requested_logical DESC, run LIMIT ? OFFSET ?"
    rel = conn.execute(sql, [*params, max(0, limit), max(0, offset)])
    return [d[0] for d in rel.description or []], rel.fetchall()


def render_round(message: Message, ts: Any) -> str:
    """One round as ``nerve workflow thread`` prints it: header, meta block, content."""
    stamp = ts.isoformat() if hasattr(ts, "isoformat") else str(ts)
    meta = "".join(
        f"{key}: {json.dumps(value, sort_keys=True, ensure_ascii=False)}\n"
        for key, value in sorted(message.meta.items())
    )
    return f"[#{message.round} {message.role}] {stamp}\n---\n{meta}---\n{message.content}\n"


@dataclass(frozen=True)
class ThreadPage:
    """The rounds that fit a character budget, oldest first, and the round to page back from."""

    blocks: list[str]
    rounds: list[int]
    older_before: int | None


def thread_page(
    rounds: Sequence[tuple[Message, Any]], *, before: int | None, budget: int | None
) -> ThreadPage:
    """Newest rounds below ``before`` until ``budget`` characters (at least one round)."""
    eligible = [(m, ts) for m, ts in rounds if before is None or m.round < before]
    chosen: list[tuple[int, str]] = []
    used = 0
    for message, ts in reversed(eligible):
        block = render_round(message, ts)
        if chosen and budget is not None and used + len(block) > budget:
            break
        chosen.append((message.round, block))
        used += len(block)
    chosen.reverse()
    oldest = chosen[0][0] if chosen else None
    more = oldest is not None and any(m.round < oldest for m, _ in eligible)
    return ThreadPage([b for _, b in chosen], [r for r, _ in chosen], oldest if more else None)
