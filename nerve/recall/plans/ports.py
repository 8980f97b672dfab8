"""Plans about listening ports (the network sense's ``port_opened`` / ``port_closed``): when
one opened and closed, which process held it on which address, and whether it was still open
when the log ends, and the commands whose words hold its number (the server started on it,
what reached it). A port named by its number is that port; else every port."""

from __future__ import annotations

from typing import Any

from nerve.events import SourceClass
from nerve.recall.facts.ports import socket_text
from nerve.recall.plans.log import Found, Reader, Row
from nerve.recall.plans.parse import Plan
from nerve.recall.plans.things import command_runs, run_line

__all__ = ["ports"]

_EVENTS = "json_extract_string(data, '$.event') IN ('port_opened', 'port_closed')"


def ports(reader: Reader, plan: Plan) -> Found:
    """Each opening and closing of the port (or of every port) in the window, oldest first,
    and each port's state at the window's end."""
    if not reader.ever(SourceClass.NETWORK):
        return Found("No network records are in this log (the network sense has not run), so "
                     "I cannot say which ports listened.", answered=False)  # fmt: skip
    number = plan.subject.name
    rows = [r for r in reader.rows(plan.window, source=SourceClass.NETWORK, where=_EVENTS)
            if number is None or str(r.data.get("port")) == number]  # fmt: skip
    what = f"port {number}" if number else "listening ports"
    if not rows:
        return Found(f"No {what} opened or closed {reader.scope(plan.window)}.",
                     answered=number is None)  # fmt: skip
    lines = [(r, _line(reader, r)) for r in rows]
    lines += [(r, state) for r, state in _states(reader, rows)]
    if number is not None:  # the commands that named it: the server, what reached it
        runs = command_runs(reader, number)
        inside = [r for r in runs if plan.window is None or plan.window.contains(r.t)]
        lines += [(r, f"ran {run_line(reader, r)}") for r in inside]
    title = f"{what[:1].upper()}{what[1:]} {reader.scope(plan.window)}, oldest first:"
    return reader.listing(title, lines, plan.window)


def _line(reader: Reader, row: Row) -> str:
    verb = "opened" if row.data.get("event") == "port_opened" else "closed"
    return f"{reader.when(row.t)}  {socket_text(row.data)} {verb} {_holder(row.data)}"


def _states(reader: Reader, rows: list[Row]) -> list[tuple[Row, str]]:
    """Each socket's state after its last record: still open, or closed then."""
    last: dict[tuple[object, object], Row] = {}
    for row in rows:
        last[(row.data.get("address"), row.data.get("port"))] = row
    out = []
    for row in last.values():
        if row.data.get("event") == "port_opened":
            still = f"{socket_text(row.data)} is still open at the end: no close recorded"
            out.append((row, still))
        else:
            out.append((row, f"{socket_text(row.data)} closed at {reader.when(row.t)}"))
    return out


def _holder(data: dict[str, Any]) -> str:
    if not data.get("name"):
        return "(by a process the host did not name)"
    return f"by {data['name']} [{data.get('pid', '?')}]"
