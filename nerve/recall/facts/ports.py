"""Listening ports: which were opened or closed, and which still listen."""

from __future__ import annotations

import re
from typing import Any

from nerve.events import SourceClass
from nerve.recall.facts.ask import Ask, Row, answer, any_of, never, nothing
from nerve.recall.tier0 import Tier0Answer
from nerve.tail.when import Period

__all__ = ["port_events"]


_PORT_EVENTS = ("port_opened", "port_closed")


def port_events(ask: Ask) -> Tier0Answer:
    """Listening ports opened (or, when the question says so, closed) in the period."""
    if not _ports_ever(ask):
        return never("ports", "listening ports (the network sense reports them)")
    if re.search(any_of("open", "listening", "listens?"), ask.text) and not re.search(
        any_of("opened", "closed", "close", "stopped", "new"), ask.text
    ):
        return _ports_open(ask)
    event = (
        "port_closed"
        if re.search(any_of("closed", "close", "stopped"), ask.text)
        else "port_opened"
    )
    rows = [r for r in reversed(ask.rows(SourceClass.NETWORK)) if r.data.get("event") == event]
    verb = event.removeprefix("port_")
    if not rows:
        return nothing(ask, "ports", f"listening port {verb}")
    used = [(r, f"{ask.when(r.t)}  {socket_text(r.data)} {verb} {_holder(r.data)}") for r in rows]
    return answer(
        "ports", f"{len(rows)} listening port(s) {verb} {ask.scope()}, newest first:", used
    )


def _ports_open(ask: Ask) -> Tier0Answer:
    """The sockets whose latest event up to the period's end (or now) is an opening."""
    until = ask.period.end_ns if ask.period is not None else ask.now_ns
    latest: dict[tuple[Any, Any], Row] = {}
    for row in ask.rows(SourceClass.NETWORK, period=Period(0, until, "")):
        if row.data.get("event") in _PORT_EVENTS:
            latest[(row.data.get("address"), row.data.get("port"))] = row
    still = [r for r in reversed(latest.values()) if r.data["event"] == "port_opened"]
    at = ask.when(until)
    if not still:
        text = f"No port opened since the network sense began is still listening at {at}."
        return Tier0Answer("ports", text, ())
    used = [(r, f"{socket_text(r.data)} {_holder(r.data)}, since {ask.when(r.t)}") for r in still]
    title = (
        f"Listening at {at}, of the ports opened since the network sense began "
        "(those listening before it are not known):"
    )
    return answer("ports", title, used)


def _ports_ever(ask: Ask) -> bool:
    sql = (
        "SELECT 1 FROM events WHERE kind = 'observation' AND source = ? "
        "AND json_extract_string(data, '$.event') IN ('port_opened', 'port_closed') LIMIT 1"
    )
    return ask.conn.execute(sql, [int(SourceClass.NETWORK)]).fetchone() is not None


def socket_text(data: dict[str, Any]) -> str:
    """A port event's socket as people write it: ``tcp 127.0.0.1:8765``, ``tcp [::1]:22``."""
    ip = str(data.get("address") or "?")
    return f"{data.get('proto', 'tcp')} {f'[{ip}]' if ':' in ip else ip}:{data.get('port', '?')}"


def _holder(data: dict[str, Any]) -> str:
    if not data.get("name"):
        return "(by a process the host did not name)"
    user = f", user {data['user']}" if data.get("user") else ""
    return f"by {data['name']} [{data.get('pid', '?')}]{user}"
