"""``status`` and the resources of ``nerve mcp``: what runs, and what the log holds.

- :func:`status` — the daemon (pid, uptime) if it runs, capture (paused or not), each sense's
  schedule and what the log says of it (computes, errors, its last line and last error), and
  the log's size;
- :func:`schema` — the columns of ``events`` or a projection, with what each means;
- :func:`sources` — the source classes and kinds present, with counts and newest times.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, Field

from nerve.api import Workspace
from nerve.events import display_source
from nerve.privacy.screen import Screen

__all__ = ["EVENT_COLUMNS", "StatusOut", "projection_names", "schema", "sources", "status"]

EVENT_COLUMNS: dict[str, str] = {
    "physical_ns": "HLC physical part: nanoseconds since the Unix epoch (UTC)",
    "logical": "HLC logical counter; (physical_ns, logical) orders the log",
    "node": "the host that stored the event",
    "kind": "observation, sense.state, sense.error, attention.decision, agent.access, …",
    "subject": "what the event is about: a sense's name, a run id, a question id",
    "source": "source class code (0-9 standard, 1024+ vendor; 1024 is nerve itself)",
    "source_name": "the source class by name: shell, file_change, process_tree, …",
    "trust": "trust level code 0-3",
    "trust_name": "Attested, FirstParty, Inferred or Untrusted",
    "valid_time_ns": "when the fact held, if the sense said (else null)",
    "payload_cid": "blake3 address of the payload bytes",
    "payload": "raw payload bytes (canonical JSON for structured payloads)",
    "line": "the event's one line of human-readable text",
    "id": "the event's content id (blake3 over every field)",
    "ts": "physical_ns as a TIMESTAMP (UTC)",
    "data": "the payload as JSON: data->>'path', data->'state'",
    "erased": "true when the payload was erased (only in logs that record erasure)",
}


class SenseOut(BaseModel):
    name: str
    group: str
    interval_ms: int | None = Field(description="How often it computes (null: only on signals).")
    computes: int = Field(
        description="Computes so far: the daemon's own count when it runs, else what the log "
        "records (each `sense.state` counts those since the last)."
    )
    errors: int = Field(description="sense.error records in the log.")
    last_time: str | None = Field(description="Local time of its last compute or error.")
    last_line: str | None = Field(description="Its newest observation's line.")
    last_error: str | None = Field(description="Its newest error's line.")
    last_error_time: str | None


class LogOut(BaseModel):
    events: int
    segments: int
    unsealed: int = Field(description="Events not yet sealed into a segment.")
    bytes_on_disk: int
    newest_time: str | None
    newest_hlc: str | None


class StatusOut(BaseModel):
    daemon: bool = Field(description="Whether the nerve daemon runs (senses compute only then).")
    pid: int | None
    uptime_s: float | None
    capture: str = Field(description="'capturing', or paused (and until when).")
    paused: bool
    senses: list[SenseOut]
    log: LogOut


_SENSE_SQL = """
SELECT subject,
    coalesce(sum(coalesce(TRY_CAST(data ->> 'computes' AS BIGINT), 1))
        FILTER (kind = 'sense.state'), 0) AS computes,
    count(*) FILTER (kind = 'sense.error') AS errors,
    max(physical_ns) FILTER (kind IN ('sense.state', 'sense.error')) AS last_ns,
    arg_max(line, physical_ns) FILTER (kind = 'observation') AS last_line,
    arg_max(line, physical_ns) FILTER (kind = 'sense.error') AS last_error,
    max(physical_ns) FILTER (kind = 'sense.error') AS last_error_ns
FROM events
WHERE kind IN ('sense.state', 'sense.error', 'observation') AND list_contains(?, subject)
GROUP BY subject
"""


def status(ws: Workspace, screen: Screen) -> StatusOut:
    from nerve.runtime.senses import sense_rows

    door = ws
    health = _health(ws)
    live = door.senses.live(timeout=10) if health is not None else {}
    conn = door.new_connection()
    try:
        configured = sense_rows(ws.settings.config)
        names = [row["name"] for row in configured]
        seen = {r[0]: r for r in conn.execute(_SENSE_SQL, [names]).fetchall()}
        capture, paused = _capture(conn, health)
    finally:
        conn.close()
    snap = door.log.snapshot()
    return StatusOut(
        daemon=health is not None,
        pid=health.get("pid") if health else None,
        uptime_s=health.get("uptime_s") if health else None,
        capture=capture,
        paused=paused,
        senses=[
            _sense(screen, row, seen.get(row["name"]), live.get(row["name"])) for row in configured
        ],
        log=LogOut(
            events=snap.count,
            segments=len(snap.segments),
            unsealed=int(snap.tail.num_rows),
            bytes_on_disk=ws.log.size(),
            newest_time=_time(snap.newest.physical_ns) if snap.count else None,
            newest_hlc=str(snap.newest) if snap.count else None,
        ),
    )


def _health(ws: Workspace) -> dict[str, Any] | None:
    from nerve.errors import DaemonError

    try:
        status = ws.daemon.status(timeout=10)
    except DaemonError:
        return None
    return status.health if status.running else None


def _capture(conn: Any, health: dict[str, Any] | None) -> tuple[str, bool]:
    from nerve.privacy.pause import PauseState, stored_pause

    state = PauseState.from_json(health["capture"]) if health and health.get("capture") else None
    state = state or stored_pause(conn)
    return state.describe(), bool(state.paused)


def _time(ns: int | None) -> str | None:
    from nerve.tail import format_times

    return None if ns is None else format_times([int(ns)])[0]


def _sense(
    screen: Screen,
    row: dict[str, Any],
    seen: tuple[Any, ...] | None,
    live: dict[str, Any] | None = None,
) -> SenseOut:
    """A sense from the log (``seen``), brought up to date by the daemon's ``live`` counts
    when it runs."""
    _, computes, errors, last_ns, last_line, last_error, error_ns = seen or (
        None,
        0,
        0,
        *[None] * 4,
    )
    live = live or {}
    live_ns = live.get("last_ns")
    if isinstance(live_ns, int) and (last_ns is None or live_ns >= last_ns):
        last_ns, last_line = live_ns, live.get("last_line") or last_line
    last_error = live.get("last_error") or last_error
    return SenseOut(
        name=row["name"],
        group=row["group"],
        interval_ms=row["interval_ms"],
        computes=max(int(computes), int(live.get("computes") or 0)),
        errors=max(int(errors), int(live.get("errors") or 0)),
        last_time=_time(last_ns),
        last_line=None if last_line is None else screen.text(str(last_line)),
        last_error=None if last_error is None else screen.text(str(last_error)),
        last_error_time=_time(error_ns),
    )


def projection_names(ws: Workspace) -> list[str]:
    from nerve.query import load_projections

    return [p.name for p in load_projections(ws.settings.projection_dirs())]


def schema(ws: Workspace, name: str) -> dict[str, Any]:
    """The view's columns (name, DuckDB type, what it means) and what the view holds."""
    from nerve.errors import UsageError
    from nerve.query import load_projections

    found = {p.name: p for p in load_projections(ws.settings.projection_dirs())}
    if name != "events" and name not in found:
        raise UsageError(f"no view {name!r}: events, or one of {', '.join(sorted(found))}")
    conn = ws.new_connection()
    try:
        columns = conn.execute(f'DESCRIBE "{name}"').fetchall()
    finally:
        conn.close()
    notes = EVENT_COLUMNS if name == "events" else {}
    about = (
        "Every event in the log, oldest first by (physical_ns, logical)."
        if name == "events"
        else _comment(found[name].sql)
    )
    return {
        "view": name,
        "about": about,
        "columns": [
            {"name": c[0], "type": c[1], **({"about": notes[c[0]]} if c[0] in notes else {})}
            for c in columns
        ],
    }


def _comment(sql: str) -> str:
    """A projection's leading ``--`` comment, as one paragraph."""
    lines = []
    for line in sql.splitlines():
        if not line.startswith("--"):
            break
        lines.append(line.removeprefix("--").strip())
    return " ".join(lines)


def sources(ws: Workspace) -> dict[str, Any]:
    """Source classes and kinds present in the log, with counts and newest local times."""
    conn = ws.new_connection()
    try:
        by_source = conn.execute(
            "SELECT source, count(*), max(physical_ns) FROM events GROUP BY source ORDER BY source"
        ).fetchall()
        by_kind = conn.execute(
            "SELECT kind, count(*), max(physical_ns) FROM events GROUP BY kind ORDER BY kind"
        ).fetchall()
    finally:
        conn.close()
    return {
        "sources": [
            {"source": display_source(int(s)), "code": int(s), "events": int(n), "newest": _time(t)}
            for s, n, t in by_source
        ],
        "kinds": [{"kind": str(k), "events": int(n), "newest": _time(t)} for k, n, t in by_kind],
    }
