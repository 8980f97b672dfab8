"""Regenerate the C4 (synthesis cascade) vector; the output is deterministic.

python conformance/generate_c4.py [OUT_DIR]     # default: conformance/v1

A fixed log of 24 events (file changes, shell commands, resource readings, attention
decisions, a sense error, and records that are not candidates), and questions: four recall
questions Tier 0 answers with no model call, and two open-ended ones that escalate. For each,
the published envelope (canonical JSON and its blake3) and, for recall, the answer.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

from nerve.canonical import canonical_json
from nerve.clock import Hlc
from nerve.events import NERVE_SOURCE, Event, SourceClass, Trust
from nerve.log.wire import event_to_json
from nerve.query import connect
from nerve.recall.core import RetrievalParams
from nerve.recall.tier0 import answer, retrieve_for

HERE = Path(__file__).resolve().parent / "v1"
NODE = "conformance-node"
T0 = 1_700_000_000_000_000_000
S = 1_000_000_000
PARAMS = RetrievalParams(k=6, window=18, salience_window=8)

RECALL = (
    "Which files changed recently?",
    "What was the last command I ran?",
    "What did you show me?",
    "Why was the cpu reading held?",
)
OPEN = (
    "Why did git push fail on the network this morning?",
    "Summarise my afternoon in two sentences.",
    # the observation's line whole: it ranks before the newer decisions quoting it (same score)
    "net en0 down 2400.0 KiB/s up 880.0 KiB/s",
)

FC, SH, TP, NW, PT = (
    SourceClass.FILE_CHANGE,
    SourceClass.SHELL,
    SourceClass.THERMAL_POWER,
    SourceClass.NETWORK,
    SourceClass.PROCESS_TREE,
)


def _file(path: str, change: str) -> tuple[int, str, str, Any]:
    return (FC, "files", f"file {change} {path}", {"change": change, "path": path})


def _shell(command: str) -> tuple[int, str, str, Any]:
    return (SH, "shell", f"$ {command}", {"command": command})


def _decision(outcome: str, value: int, before: int, after: int, seen: str) -> dict[str, Any]:
    return {
        "outcome": outcome,
        "probe": "salience",
        "value_milli": value,
        "cost_milli": 400,
        "charged_uj": before - after,
        "budget_before_uj": before,
        "budget_after_uj": after,
        "source_event": "00" * 32,
        "source_line": seen,
        "chain_seq": 0,
    }


# (source, subject, line, payload); kind "observation" unless the payload says otherwise.
OBSERVATIONS: list[tuple[int, str, str, Any]] = [
    _file("src/app.py", "modified"),
    _shell("git status"),
    (TP, "cpu", "cpu 12.5% load1 0.40 (8 cores)", {"percent": 12.5}),
    _file("README.md", "modified"),
    (NW, "network", "net en0 down 12.0 KiB/s up 3.0 KiB/s", {"nic": "en0"}),
    _shell("pytest -q"),
    (PT, "processes", "top python 41% cpu, 212 processes", {"top": "python"}),
    _file("src/app.py", "modified"),
    _shell("git push origin main"),
    (NW, "network", "net en0 down 2400.0 KiB/s up 880.0 KiB/s", {"nic": "en0"}),
    (TP, "cpu", "cpu 88.0% load1 3.10 (8 cores)", {"percent": 88.0}),
    _file("docs/guide.md", "added"),
    _file("notes/résumé.txt", "deleted"),
    (TP, "cpu", "cpu 35.0% load1 1.20 (8 cores)", {"percent": 35.0}),
    (2048, "vendor", "vendor probe ok", None),
]
DECISIONS = [
    ("surface", 900, 1_000_000, 750_000, "net en0 down 2400.0 KiB/s up 880.0 KiB/s"),
    ("hold:value", 300, 750_000, 750_000, "cpu 35.0% load1 1.20 (8 cores)"),
    ("hold:budget", 800, 100_000, 100_000, "net en0 down 2400.0 KiB/s up 880.0 KiB/s"),
]


def _observation(i: int, spec: tuple[int, str, str, Any]) -> Event:
    source, subject, line, payload = spec
    trust = Trust.INFERRED if source == SH else Trust.FIRST_PARTY
    body = b"" if payload is None else canonical_json(payload)
    hlc = Hlc(T0 + (i // 2) * S, i % 2)  # pairs share a physical time: logical breaks ties
    return Event(hlc, NODE, "observation", subject, int(source), trust, None, body, line)


def _own(hlc: Hlc, kind: str, line: str, payload: Any) -> Event:
    body = canonical_json(payload)
    return Event(hlc, NODE, kind, "attention", NERVE_SOURCE, Trust.FIRST_PARTY, None, body, line)


def c4_events() -> list[Event]:
    """The fixed log: observations, then decisions, an error and non-candidate records."""
    events = [_observation(i, spec) for i, spec in enumerate(OBSERVATIONS)]
    later = T0 + 10 * S
    for j, (outcome, value, before, after, seen) in enumerate(DECISIONS):
        payload = _decision(outcome, value, before, after, seen)
        events.append(
            _own(Hlc(later + j * S, 0), "attention.decision", f"{outcome}: {seen}", payload)
        )
    events.append(_own(Hlc(later + 4 * S, 0), "sense.state", "", {"state": {"n": 1}}))
    error = Event(
        Hlc(later + 5 * S, 0), NODE, "sense.error", "disk", NERVE_SOURCE, Trust.FIRST_PARTY,
        None, canonical_json({"error": "OSError"}), "sense disk: compute raised OSError: EIO",
    )  # fmt: skip
    events.append(error)
    events.append(_own(Hlc(later + 6 * S, 0), "ask.question", "ask: earlier", {"question": "x"}))
    events.append(_own(Hlc(later + 7 * S, 0), "chain.link", "link 0", {"seq": 0}))
    events.append(_own(Hlc(later + 8 * S, 0), "attention.highlight", "salience spike 0.900", {}))
    events.append(_own(Hlc(later + 9 * S, 0), "config.loaded", "nerve.yaml", {}))
    return events


def _case(conn: Any, query: str, expect: str) -> dict[str, Any]:
    retrieval = retrieve_for(conn, query, PARAMS)
    found = answer(retrieval)
    if (found is not None) != (expect == "deterministic"):
        raise SystemExit(f"{query!r}: expected {expect}, Tier 0 gave {found}")
    case: dict[str, Any] = {"query": query, "expect": expect}
    if found is not None:
        case |= {
            "model_call": False,
            "intent": found.intent,
            "answer": found.text,
            "spans": list(found.spans),
            "energy": found.energy.to_json(),
        }
    envelope = retrieval.envelope
    return case | {"envelope_digest": envelope.digest, "envelope": envelope.to_json()}


def build(tmp: Path) -> dict[str, Any]:
    from nerve.log.store import EventLog

    events = c4_events()
    with EventLog(tmp, node="generator") as log:
        log.import_events(events)
    conn = connect(tmp)
    try:
        cases = [_case(conn, q, "deterministic") for q in RECALL]
        cases += [_case(conn, q, "escalate") for q in OPEN]
    finally:
        conn.close()
    return {
        "vector": "C4",
        "description": "A fixed log and questions: recall questions are answered by Tier 0 "
        "with no model call and an honest zero Estimator figure; open-ended ones escalate. "
        "Each envelope is published as canonical JSON with its blake3 digest.",
        "params": {
            "k": PARAMS.k,
            "window": PARAMS.window,
            "kinds": list(PARAMS.kinds),
            "salience_window": PARAMS.salience_window,
        },
        "events": [event_to_json(e) for e in events],
        "cases": cases,
    }


def main(out: Path = HERE) -> None:
    import tempfile

    with tempfile.TemporaryDirectory() as tmp:
        vector = build(Path(tmp))
    out.mkdir(parents=True, exist_ok=True)
    text = json.dumps(vector, indent=2, ensure_ascii=False) + "\n"
    (out / "c4_recall.json").write_text(text, encoding="utf-8")


if __name__ == "__main__":
    main(Path(sys.argv[1]) if len(sys.argv) > 1 else HERE)
