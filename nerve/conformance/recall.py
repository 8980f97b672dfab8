"""Conformance checker C4: recall's envelope and Tier 0 (Sense v0.1 §6)."""

from __future__ import annotations

import tempfile
from pathlib import Path
from typing import Any

from nerve.log.wire import event_from_json

__all__ = ["CHECKERS", "check_c4"]


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


CHECKERS = {"C4": check_c4}
