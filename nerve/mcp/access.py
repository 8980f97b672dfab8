"""``agent.access``: one event per call an agent makes through ``nerve mcp``.

Each tool call (and resource read), allowed or refused, appends one event — kind
``agent.access``, source ``nerve``, trust ``FirstParty``, subject the client's name — whose
payload says::

    {"client": {"name": "claude-code", "version": "1.0.3"}, "transport": "stdio",
     "session": "3f9c…", "tool": "query", "args_digest": "<blake3 hex>", "args_bytes": 61,
     "outcome": "ok", "rows": 12, "bytes": 3456, "reason": null}

``outcome`` is ``ok``, ``refused`` (a rule said no: the SQL, a budget, an unknown tool, a
write not allowed) or ``error`` (the call failed); ``reason`` says why. The arguments are
kept only as a digest (blake3 over their canonical JSON), so the record shows *that* an agent
asked and how much it took away, not what it asked. ``session`` is a short digest naming the
session the call belongs to.

With the daemon running the event goes through its socket; without one the log is opened as
its writer for that one append and closed again, so a long-lived server never holds the
writer lock (``nerve start`` must stay possible). A result is returned to the agent only
after its record is stored; a record a privacy drop rule would swallow fails the call.
"""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass, field
from typing import Any

import blake3

from nerve.canonical import canonical_json, jsonable, loads_bounded
from nerve.errors import NerveError, PrivacyError, WriterLocked
from nerve.events import AGENT_ACCESS
from nerve.log.drafts import Draft
from nerve.workspace import Workspace

__all__ = ["COLUMNS", "Access", "Recorder", "accesses", "args_digest"]

WRITE_TRIES = 50
WRITE_PAUSE_S = 0.05
COLUMNS = [
    "time", "client", "version", "transport", "tool", "outcome", "rows", "bytes", "args_digest",
    "reason",
]  # fmt: skip


def args_digest(arguments: Any) -> tuple[str, int]:
    """blake3 hex of the arguments' canonical JSON, and its size in bytes."""
    try:
        body = canonical_json(jsonable(arguments))
    except (NerveError, ValueError, TypeError):  # not canonical-JSON-able (a float, a bool)
        body = repr(arguments).encode("utf-8", "surrogatepass")
    return str(blake3.blake3(body).hexdigest()), len(body)


@dataclass
class Access:
    """One call, as it will be recorded."""

    client: str
    version: str
    transport: str
    session: str
    tool: str
    arguments: Any = None
    outcome: str = "ok"
    reason: str | None = None
    rows: int = 0
    bytes: int = 0
    started_ns: int = field(default_factory=time.time_ns)

    def payload(self) -> dict[str, Any]:
        digest, size = args_digest(self.arguments)
        return {
            "client": {"name": self.client, "version": self.version},
            "transport": self.transport,
            "session": self.session,
            "tool": self.tool,
            "args_digest": digest,
            "args_bytes": size,
            "outcome": self.outcome,
            "reason": self.reason,
            "rows": self.rows,
            "bytes": self.bytes,
        }

    def line(self) -> str:
        who = f"{self.client} {self.version}".strip() + f" ({self.transport})"
        if self.outcome == "ok":
            rows = f"{self.rows:,} row" + ("" if self.rows == 1 else "s")
            return f"{who} {self.tool}: {rows}, {self.bytes:,} bytes"
        reason = " ".join((self.reason or "").split())[:160]
        return f"{who} {self.tool} {self.outcome}: {reason}"

    def draft(self) -> Draft:
        return Draft.control(AGENT_ACCESS, self.client, self.line(), self.payload())


class Recorder:
    """Appends access records: through the daemon, else as the writer for one append."""

    def __init__(self, ws: Workspace) -> None:
        self.ws = ws
        self._lock = threading.Lock()  # one writer per process: appends take turns

    def record(self, access: Access) -> None:
        from nerve.logops import emit

        with self._lock:
            for attempt in range(WRITE_TRIES):
                try:
                    stored = emit(self.ws, [access.draft()])
                except WriterLocked:  # another short-lived writer, or a daemon starting
                    if attempt == WRITE_TRIES - 1:
                        raise
                    time.sleep(WRITE_PAUSE_S)
                    continue
                if not stored:  # no read goes unrecorded: then nothing is returned
                    raise PrivacyError(
                        f"a privacy drop rule matches this agent.access record (client "
                        f"{access.client!r}), so the call cannot be recorded",
                        hint="narrow the rule's scope (source, kind, sense) in nerve.yaml",
                    )
                return


def accesses(
    ws: Workspace, *, since_ns: int | None = None, client: str | None = None
) -> list[dict[str, Any]]:
    """Every ``agent.access`` record, oldest first, as rows of :data:`COLUMNS` (local times)."""
    from nerve.tail import format_times

    where: list[str] = ["kind = ?"]
    args: list[Any] = [AGENT_ACCESS]
    if since_ns is not None:
        where.append("physical_ns >= ?")
        args.append(since_ns)
    if client is not None:
        where.append("lower(data->'client'->>'name') = lower(?)")
        args.append(client)
    conn = ws.connect()
    try:
        rows = conn.execute(
            f"SELECT physical_ns, CAST(data AS VARCHAR) FROM events WHERE {' AND '.join(where)} "
            "ORDER BY physical_ns, logical",
            args,
        ).fetchall()
    finally:
        conn.close()
    times = format_times([int(r[0]) for r in rows])
    return [
        _row(t, loads_bounded(data) if data else {})
        for t, (_, data) in zip(times, rows, strict=True)
    ]


def _row(time_text: str, data: dict[str, Any]) -> dict[str, Any]:
    found = data.get("client")
    client: dict[str, Any] = found if isinstance(found, dict) else {}
    return {
        "time": time_text,
        "client": client.get("name"),
        "version": client.get("version"),
        "transport": data.get("transport"),
        "tool": data.get("tool"),
        "outcome": data.get("outcome"),
        "rows": data.get("rows"),
        "bytes": data.get("bytes"),
        "args_digest": data.get("args_digest"),
        "reason": data.get("reason"),
    }
