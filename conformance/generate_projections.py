"""Regenerate N2, the projection-digest vector (deterministic; run from the repo root).

python conformance/generate_projections.py [OUT_DIR]     # default: conformance/v1

A small log (sense states with floats, big integers and non-ASCII, gate decisions) and the
canonical rows and digest of two projections over it, ``sense_state`` and
``attention_budget``, computed from the projection SQL shipped in ``projections/``.
"""

from __future__ import annotations

import json
import sys
import tempfile
from pathlib import Path
from typing import Any

from nerve.events import NERVE_SOURCE, Event, SourceClass, Trust
from nerve.log.store import EventLog
from nerve.log.wire import event_to_json
from nerve.query import DEFAULT_SETTINGS, connect, lines_digest, projection_lines
from nerve.resources import bundled

HERE = Path(__file__).resolve().parent / "v1"
NODE = "conformance-node"
T0 = 1_700_000_000_000_000_000
VIEWS = ("sense_state", "attention_budget")


def _control(index: int, kind: str, subject: str, payload: Any) -> Event:
    return Event(
        hlc=(T0 + index * 1_000_000_000, index % 2), node=NODE, kind=kind, subject=subject,
        source=NERVE_SOURCE, trust=Trust.FIRST_PARTY, line=f"{kind} {subject}".strip(),
        payload=payload,
    )  # fmt: skip


def _decision(index: int, outcome: str, charged: int, after: int) -> Event:
    body = {"outcome": outcome, "probe": "novelty", "value_milli": 812, "cost_milli": 150,
            "charged_uj": charged, "budget_before_uj": after + charged,
            "budget_after_uj": after, "chain_seq": index,
            "source_event": "ab" * 32, "source_line": "modified src/ä.py"}  # fmt: skip
    return _control(index, "attention.decision", "", body)


def events() -> list[Event]:
    return [
        _control(0, "sense.state", "cpu", {"state": {"load": 0.1 + 0.2, "since_ns": T0}}),
        Event(
            hlc=(T0 + 1_500_000_000, 0),
            node=NODE,
            kind="observation",
            subject="s",
            source=int(SourceClass.SHELL),
            trust=Trust.FIRST_PARTY,
            line="git status",
            payload={"cmd": "git status"},
        ),
        _decision(2, "surface", 250_000, 750_000),
        _control(3, "sense.state", "cpu", {"state": {"load": 1e-7, "since_ns": T0 + 3}}),
        _control(4, "sense.state", "énergie", {"state": {"uj": 2**60 + 1, "tags": ["⚡", "😀"]}}),
        _decision(5, "hold:value", 0, 750_000),
        _decision(6, "hold:budget", 0, 123_881),
    ]


def build() -> dict[str, Any]:
    evs = events()
    with tempfile.TemporaryDirectory() as tmp:
        with EventLog(Path(tmp), node="conformance") as log:
            log.import_events(evs)
        conn = connect(Path(tmp), [bundled("projections")], DEFAULT_SETTINGS)
        try:
            views = [_view(conn, name) for name in VIEWS]
        finally:
            conn.close()
    return {
        "vector": "N2",
        "description": "Projection digests: each row as the RFC 8785 object {column: value}, "
        "lines sorted by their bytes, blake3 over each line and a newline.",
        "settings": DEFAULT_SETTINGS,
        "events": [event_to_json(e) for e in evs],
        "projections": views,
    }


def _view(conn: Any, name: str) -> dict[str, Any]:
    lines = projection_lines(conn, name)
    return {
        "name": name,
        "sql": f"projections/{name}.sql",
        "rows": len(lines),
        "lines": [line.decode("utf-8") for line in lines],
        "digest": lines_digest(lines),
    }


def main(folder: Path = HERE) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    text = json.dumps(build(), indent=2, ensure_ascii=False) + "\n"
    (folder / "n2_projections.json").write_text(text, encoding="utf-8")


if __name__ == "__main__":
    main(Path(sys.argv[1]) if len(sys.argv) > 1 else HERE)
