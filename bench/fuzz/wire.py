"""One event as JSON (``nerve.log.wire``): what ``nerve emit --jsonl`` sends as a draft and
``nerve import`` reads as a stored event (whole, or erased). The text is decoded as the
socket and ``import`` decode it (``loads_bounded``); text that is not JSON is the caller's
refusal, not the reader's, so it ends the input."""

from __future__ import annotations

import json
from typing import Any

from nerve.canonical import loads_bounded
from nerve.clock import Hlc
from nerve.errors import NerveError
from nerve.events import Event
from nerve.log.wire import draft_from_json, event_to_json, stored_event_from_json

from . import placed

# The modules whose branches guide the fuzzer (only they are instrumented).
COVERED = ("nerve.log.wire", "nerve.events", "nerve.canonical")


def seeds() -> list[bytes]:
    """A draft, a whole event with its id, one with raw bytes, an erased one."""
    event = Event(
        Hlc(1_733_400_000_000_000_000, 3),
        "host-a",
        "observation",
        "cpu",
        7,
        payload={"load": 0.5, "cores": [1, 2]},
        line="cpu 50%",
    )
    raw = Event(
        Hlc(1_733_400_000_000_000_001, 0),
        "host-a",
        "sense.state",
        "disk",
        2,
        payload=b"\x00\xffraw",
        valid_time_ns=-5,
    )
    erased = {**event_to_json(event), "erased": True}
    del erased["line"], erased["payload"]
    draft = {"source": "cpu", "kind": "observation", "payload": {"v": 1}, "trust": "Untrusted"}
    objects: list[Any] = [draft, event_to_json(event), event_to_json(raw), erased]
    return [json.dumps(obj).encode() for obj in objects]


def TestOneInput(data: bytes) -> None:
    """The same object read as a draft and as a stored event."""
    try:
        obj = loads_bounded(data, field="event")
    except NerveError as exc:
        placed(exc, "event")
        return
    except (ValueError, UnicodeDecodeError):
        return  # not JSON: refused before the wire reader sees it
    for read in (draft_from_json, stored_event_from_json):
        try:
            read(obj)
        except NerveError as exc:
            placed(exc)
