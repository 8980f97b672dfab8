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

import re
import threading
import time
from dataclasses import dataclass, field
from typing import Any

import blake3

from nerve.api import Workspace
from nerve.canonical import canonical_json, jsonable, loads_bounded
from nerve.errors import NerveError, PrivacyError, WriterLocked
from nerve.events import AGENT_ACCESS
from nerve.log.drafts import Draft

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


_GRAM = 6  # a quote of this many characters of an argument is taken out of a reason
_SCAN = 4096  # of a long argument, its start and its end are what messages quote
_PYDANTIC_INPUT = re.compile(r",? ?input_value=.*?(?=, input_type=|\]|$)", re.S)
_PYDANTIC_URL = re.compile(r"\s*For further information visit \S+")


def scrub(reason: str, arguments: Any) -> str:
    """``reason`` without what it quotes of ``arguments``: pydantic's ``input_value=…``
    and help links, and every run of :data:`_GRAM` or more characters found in an argument's
    text (or its repr), each replaced by ``…``."""
    text = _PYDANTIC_URL.sub("", _PYDANTIC_INPUT.sub("", reason))
    grams: set[str] = set()
    for value in _texts(arguments):
        for form in {value, repr(value)[1:-1], value.encode("unicode_escape").decode()}:
            if len(form) < _GRAM:
                if len(form) >= 3:
                    text = text.replace(form, "…")
                continue
            for part in {form[:_SCAN], form[-_SCAN:]}:
                grams.update(part[i : i + _GRAM] for i in range(len(part) - _GRAM + 1))
    return _cut(text, grams) if grams else text


def _cut(text: str, grams: set[str]) -> str:
    hidden = [False] * len(text)
    for i in range(len(text) - _GRAM + 1):
        if text[i : i + _GRAM] in grams:
            hidden[i : i + _GRAM] = [True] * _GRAM
    out: list[str] = []
    for i, char in enumerate(text):
        if not hidden[i]:
            out.append(char)
        elif i == 0 or not hidden[i - 1]:
            out.append("…")
    return "".join(out)


def _texts(value: Any) -> list[str]:
    """Every scalar in an argument value, as text (not the names: they are the schema's)."""
    if isinstance(value, dict):
        return [t for v in value.values() for t in _texts(v)]
    if isinstance(value, list | tuple):
        return [t for v in value for t in _texts(v)]
    return [] if value is None or isinstance(value, bool) else [str(value)]


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
            "reason": self.shown_reason(),
            "rows": self.rows,
            "bytes": self.bytes,
        }

    def shown_reason(self) -> str | None:
        """The reason, with anything it quotes of the arguments taken out (see
        :func:`scrub`): the record holds a digest of them, never the arguments."""
        return None if self.reason is None else scrub(self.reason, self.arguments)

    def line(self) -> str:
        who = f"{self.client} {self.version}".strip() + f" ({self.transport})"
        if self.outcome == "ok":
            rows = f"{self.rows:,} row" + ("" if self.rows == 1 else "s")
            return f"{who} {self.tool}: {rows}, {self.bytes:,} bytes"
        reason = " ".join((self.shown_reason() or "").split())[:160]
        return f"{who} {self.tool} {self.outcome}: {reason}"

    def draft(self) -> Draft:
        return Draft.control(AGENT_ACCESS, self.client, self.line(), self.payload())


class Recorder:
    """Appends access records: through the daemon, else as the writer for one append."""

    def __init__(self, ws: Workspace) -> None:
        self.ws = ws
        self._lock = threading.Lock()  # one writer per process: appends take turns

    def record(self, access: Access) -> None:
        with self._lock:
            for attempt in range(WRITE_TRIES):
                try:
                    stored = self.ws.emit_many([access.draft()])
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
    conn = ws.new_connection()
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
