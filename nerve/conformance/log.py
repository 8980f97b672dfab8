"""Conformance checkers C1 (replay digest), C2 (event ids), N1 (canonical payloads) and N2
(projection digests): the log's published bytes."""

from __future__ import annotations

import json
import tempfile
from pathlib import Path
from typing import Any

import blake3

from nerve.events import Event, id_preimage
from nerve.log.codec import fixed_bytes, table_from_events
from nerve.log.wire import event_from_json
from nerve.resources import bundled

__all__ = ["CHECKERS", "check_c1", "check_c2", "check_n1", "check_n2", "preimage_of"]


def preimage_of(ev: Event) -> bytes:
    return id_preimage(
        ev.hlc,
        ev.node,
        ev.kind,
        ev.subject,
        ev.source,
        ev.trust,
        ev.valid_time_ns,
        ev.payload_cid,
        ev.line,
    )


def check_c1(vec: dict[str, Any]) -> tuple[bool, str]:
    """A fixed event sequence replays to the published digest, however it is segmented."""
    from nerve.log.reader import replay_digest
    from nerve.log.store import EventLog

    events = [event_from_json(obj) for obj in vec["events"]]
    for index, (ev, pre, eid) in enumerate(zip(events, vec["preimages"], vec["ids"], strict=True)):
        if preimage_of(ev).hex() != pre or ev.id.hex() != eid:
            return False, f"event {index}: preimage or id differs from the published bytes"
    batch_ids = fixed_bytes(table_from_events(events).column("id"))
    if batch_ids != b"".join(ev.id for ev in events):
        return False, "batch id computation disagrees with the reference encoding"
    direct = blake3.blake3(batch_ids).hexdigest()
    with tempfile.TemporaryDirectory() as tmp:
        with EventLog(Path(tmp), node="conformance") as log:
            half = len(events) // 2
            log.import_events(events[:half])
            log.seal()
            log.import_events(events[half:])
        stored = replay_digest(Path(tmp)).digest
    want = vec["replay_digest"]
    if direct != want or stored != want:
        return False, f"digest {direct} (direct) / {stored} (stored log), published {want}"
    return True, f"{len(events)} events replay to {want[:16]}…"


def check_c2(vec: dict[str, Any]) -> tuple[bool, str]:
    """A fixed event's id matches; re-tagging its source class or trust changes it."""
    base = vec["event"]
    ev = event_from_json(base)
    if preimage_of(ev).hex() != vec["preimage"] or ev.id.hex() != vec["event_id"]:
        return False, f"id {ev.id.hex()} differs from the published {vec['event_id']}"
    for case in vec["retagged"]:
        changed = event_from_json({**base, **case["change"], "id": None})
        if changed.id.hex() != case["event_id"] or changed.id == ev.id:
            return False, f"re-tagging {case['change']} gave {changed.id.hex()}"
    return True, f"event id {ev.id.hex()[:16]}…; {len(vec['retagged'])} re-tags change it"


def check_n1(vec: dict[str, Any]) -> tuple[bool, str]:
    """Each payload's JSON text canonicalises to the published RFC 8785 bytes and address."""
    from nerve.canonical import canonical_json, parse_canonical

    for case in vec["cases"]:
        data = canonical_json(json.loads(case["input"]), field=case["name"])
        want = case["canonical"].encode("utf-8")
        if data != want:
            return False, f"{case['name']}: wrote {data!r}, published {want!r}"
        if blake3.blake3(data).hexdigest() != case["payload_cid"]:
            return False, f"{case['name']}: payload address differs from the published one"
        if parse_canonical(want) is None:
            return False, f"{case['name']}: the published bytes do not read back as canonical"
    return True, f"{len(vec['cases'])} payloads in RFC 8785 form with their addresses"


def check_n2(vec: dict[str, Any]) -> tuple[bool, str]:
    """The published events, imported into a fresh log, give each projection the published
    canonical rows and digest (with the shipped projection SQL and the given settings)."""
    from nerve.log.store import EventLog
    from nerve.query import connect, lines_digest, projection_lines

    with tempfile.TemporaryDirectory() as tmp:
        with EventLog(Path(tmp), node="conformance") as log:
            log.import_events(event_from_json(obj) for obj in vec["events"])
        conn = connect(Path(tmp), [bundled("projections")], vec["settings"])
        try:
            got = {p["name"]: projection_lines(conn, p["name"]) for p in vec["projections"]}
        finally:
            conn.close()
    for view in vec["projections"]:
        lines = got[view["name"]]
        if [line.decode("utf-8") for line in lines] != view["lines"]:
            return False, f"projection {view['name']}: rows differ from the published ones"
        if lines_digest(lines) != view["digest"] or len(lines) != view["rows"]:
            return False, f"projection {view['name']}: digest differs from {view['digest']}"
    names = ", ".join(v["name"] for v in vec["projections"])
    return True, f"projection digests of {names} reproduced"


CHECKERS = {"C1": check_c1, "C2": check_c2, "N1": check_n1, "N2": check_n2}
