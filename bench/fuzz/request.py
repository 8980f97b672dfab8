"""One line on the daemon's socket (``nerve.runtime.ipc.parse_request``), then what the
socket's handlers read from it before they reach the kernel: whether it is answered while
warming up, the command it carries (``nerve.commands.command_of``), and an ``emit``'s
drafts or an ``import``'s events."""

from __future__ import annotations

import json

# nerve.commands loads these when it parses; the fuzzer instruments them, so load them now
import nerve.log.attest
import nerve.log.wire  # noqa: F401
from nerve.commands.log import parse_drafts, parse_events
from nerve.commands.table import command_of
from nerve.errors import NerveError
from nerve.runtime.control import answers_warming
from nerve.runtime.ipc import parse_request

from . import placed
from .wire import seeds as event_seeds

# The modules whose branches guide the fuzzer (only they are instrumented).
COVERED = (
    "nerve.runtime.ipc",
    "nerve.runtime.control",
    "nerve.commands",
    "nerve.log.attest",
    "nerve.log.wire",
    "nerve.events",
    "nerve.canonical",
)


def seeds() -> list[bytes]:
    """Requests the CLI sends: status, an emit, an import, a staged part, a trigger."""
    events = [json.loads(line) for line in event_seeds()]
    requests = [
        {"type": "status"},
        {"type": "emit", "events": [events[0]], "key": "k1"},
        {"type": "import", "events": events[1:]},
        {"type": "emit", "events": [events[0]], "stage": "s1", "more": True},
        {"type": "trigger_sense", "sense": "cpu"},
    ]
    return [json.dumps(request).encode() + b"\n" for request in requests]


def TestOneInput(data: bytes) -> None:
    """A request, or a refusal for the client; its events parsed as the handler would."""
    try:
        request = parse_request(data)
    except NerveError as exc:
        placed(exc, "request", "events[", "payload")
        return
    answers_warming(request)
    try:
        command_of(request)
    except NerveError as exc:
        placed(exc, "request field", "command field", "unknown request", "a command", "event ")
    events = request.get("events")
    if not isinstance(events, list):
        return
    for parse in (parse_drafts, parse_events):
        try:
            parse(events)
        except NerveError as exc:
            placed(exc, "event ", "payload")
