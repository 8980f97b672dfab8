"""The conformance suite: published vectors in ``conformance/v1`` checked against nerve.

Each vector file is JSON with a ``vector`` key naming its checker. ``run_all`` runs every
file; another implementation can read the same files and README to check itself.
"""

from __future__ import annotations

import json
import tempfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import blake3

from nerve.conformance.attention import CHECKERS as ATTENTION_CHECKERS
from nerve.events import Event, id_preimage
from nerve.log.codec import fixed_bytes, table_from_events
from nerve.log.wire import event_from_json
from nerve.resources import bundled


@dataclass(frozen=True)
class VectorResult:
    vector: str
    file: str
    ok: bool
    detail: str

    def to_json(self) -> dict[str, Any]:
        return {"vector": self.vector, "file": self.file, "ok": self.ok, "detail": self.detail}


Checker = Callable[[dict[str, Any]], tuple[bool, str]]
CHECKERS: dict[str, Checker] = {}


def checker(name: str) -> Callable[[Checker], Checker]:
    def register(fn: Checker) -> Checker:
        CHECKERS[name] = fn
        return fn

    return register


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


@checker("C1")
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


@checker("C2")
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


@checker("N1")
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


@checker("N2")
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


def run_file(path: Path) -> VectorResult:
    try:
        vec = json.loads(path.read_text(encoding="utf-8"))
        name = str(vec["vector"])
    except (OSError, ValueError, KeyError, TypeError) as exc:
        return VectorResult("?", path.name, False, f"unreadable vector: {exc}")
    check = CHECKERS.get(name)
    if check is None:
        return VectorResult(name, path.name, False, f"no checker for vector {name}")
    try:
        ok, detail = check(vec)
    except KeyError as exc:
        ok, detail = False, f"missing field {exc} (a vector {name} needs it)"
    except Exception as exc:  # a vector that crashes the checker is a failure, not a crash
        ok, detail = False, f"{type(exc).__name__}: {exc}"
    return VectorResult(name, path.name, ok, detail)


def run_all(folder: Path | None = None) -> list[VectorResult]:
    """Check every ``*.json`` vector in ``folder`` (default: the shipped ``conformance/v1``),
    each by the checker its ``vector`` key names; any folder laid out the same way works,
    such as another implementation's vectors. ``UsageError`` if it holds none."""
    from nerve.errors import UsageError

    folder = folder or bundled("conformance") / "v1"
    if not folder.is_dir():
        raise UsageError(f"{folder} is not a folder of conformance vectors")
    files = sorted(folder.glob("*.json"))
    if not files:
        raise UsageError(
            f"{folder} holds no *.json vectors",
            hint="a folder laid out like conformance/v1: one JSON file per vector, each with "
            f"a 'vector' key ({', '.join(sorted(CHECKERS))})",
        )
    return [run_file(p) for p in files]


@checker("C4")
def check_c4(vec: dict[str, Any]) -> tuple[bool, str]:
    """A recall query is answered with no model call; an open-ended one escalates (§6).

    The published events are imported into a fresh log; each case's envelope must match the
    published canonical JSON and digest, and Tier 0 must answer exactly as published (or not
    at all, for ``expect: escalate``).
    """
    from nerve.log.store import EventLog
    from nerve.query import connect
    from nerve.recall.core import RetrievalParams

    raw = vec["params"]
    params = RetrievalParams(raw["k"], raw["window"], tuple(raw["kinds"]), raw["salience_window"])
    with tempfile.TemporaryDirectory() as tmp:
        with EventLog(Path(tmp), node="conformance") as log:
            log.import_events(event_from_json(obj) for obj in vec["events"])
        conn = connect(Path(tmp))
        try:
            problems = [_c4_case(conn, case, params) for case in vec["cases"]]
        finally:
            conn.close()
    failed = [p for p in problems if p]
    if failed:
        return False, failed[0]
    kinds = [case["expect"] for case in vec["cases"]]
    return True, (
        f"{kinds.count('deterministic')} recall queries answered with no model call, "
        f"{kinds.count('escalate')} escalated; envelopes byte-identical"
    )


def _c4_case(conn: Any, case: dict[str, Any], params: Any) -> str | None:
    from nerve.canonical import canonical_json
    from nerve.recall.tier0 import answer, retrieve_for

    retrieval = retrieve_for(conn, case["query"], params)
    envelope, found = retrieval.envelope, answer(retrieval)
    where = f"query {case['query']!r}"
    if envelope.canonical != canonical_json(case["envelope"]):
        return f"{where}: the envelope differs from the published one"
    if envelope.digest != case["envelope_digest"]:
        return f"{where}: envelope digest {envelope.digest}, published {case['envelope_digest']}"
    if case["expect"] == "escalate":
        return None if found is None else f"{where}: Tier 0 answered; it must escalate"
    if found is None:
        return f"{where}: Tier 0 escalated; it must answer with no model call"
    got = {"intent": found.intent, "answer": found.text, "spans": list(found.spans)}
    want = {key: case[key] for key in got}
    if got != want or found.energy.to_json() != case["energy"] or case["model_call"]:
        return f"{where}: Tier 0 answered {got}, published {want}"
    return None


CHECKERS.update(ATTENTION_CHECKERS)  # C3 and C5 live in a module of their own
