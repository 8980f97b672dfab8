"""Regenerate the C1 and C2 vectors (deterministic; run from the repo root).

python conformance/generate.py [OUT_DIR]     # default: conformance/v1
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import blake3

from nerve.clock import Hlc
from nerve.conformance import preimage_of
from nerve.events import Event, SourceClass, Trust
from nerve.log.wire import event_to_json

HERE = Path(__file__).resolve().parent / "v1"
NODE = "conformance-node"
T0 = 1_700_000_000_000_000_000


def c1_events() -> list[Event]:
    specs = [
        (
            SourceClass.FILE_CHANGE,
            Trust.FIRST_PARTY,
            b'{"change":"modified","path":"src/a.py"}',
            "modified src/a.py",
            T0 + 5,
        ),
        (SourceClass.SHELL, Trust.INFERRED, b'{"cmd":"git status"}', "git status", None),
        (SourceClass.APP_FOCUS, Trust.UNTRUSTED, b"", "", None),
        (SourceClass.SYSTEM_LOG, Trust.ATTESTED, bytes(range(8)), "binary payload", T0),
        (SourceClass.NETWORK, Trust.FIRST_PARTY, b'{"rx_bps":1200}', "rx 1.2 kB/s", None),
        (2048, Trust.UNTRUSTED, b'{"x":1}', "vendor class 2048", None),
        (SourceClass.THERMAL_POWER, Trust.FIRST_PARTY, b'{"uj":42}', "énergie ⚡ 42 µJ", -1),
        (SourceClass.SALIENCE, Trust.INFERRED, b"{}", "salience", None),
    ]
    events = []
    for i, (src, trust, payload, line, vt) in enumerate(specs):
        hlc = Hlc(T0 + (i // 3) * 1_000, i % 3)
        events.append(
            Event(
                hlc=hlc,
                node=NODE,
                kind="observation",
                subject=f"s{i}",
                source=int(src),
                trust=trust,
                valid_time_ns=vt,
                payload=payload,
                line=line,
            )
        )
    return events


def write(folder: Path, name: str, data: dict[str, object]) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / name).write_text(
        json.dumps(data, indent=2, ensure_ascii=False) + "\n", encoding="utf-8"
    )


def main(folder: Path = HERE) -> None:
    events = c1_events()
    ids = b"".join(e.id for e in events)
    write(
        folder,
        "c1_replay_digest.json",
        {
            "vector": "C1",
            "description": "A fixed event sequence and its replay digest: "
            "blake3 over the 32-byte ids in order.",
            "events": [event_to_json(e) for e in events],
            "preimages": [preimage_of(e).hex() for e in events],
            "ids": [e.id.hex() for e in events],
            "replay_digest": blake3.blake3(ids).hexdigest(),
        },
    )
    base = events[0]
    wire = event_to_json(base)
    retags = [
        {"source": "shell"},
        {"source": "vendor:1024"},
        {"trust": "Attested"},
        {"trust": "Untrusted"},
    ]
    cases = []
    for change in retags:
        changed = Event(
            hlc=base.hlc,
            node=base.node,
            kind=base.kind,
            subject=base.subject,
            source=_source(change, base.source),
            trust=_trust(change, base.trust),
            valid_time_ns=base.valid_time_ns,
            payload=base.payload,
            line=base.line,
        )
        cases.append({"change": change, "event_id": changed.id.hex()})
    write(
        folder,
        "c2_event_id.json",
        {
            "vector": "C2",
            "description": "A fixed event's id; re-tagging its source class or trust "
            "changes the id.",
            "event": wire,
            "preimage": preimage_of(base).hex(),
            "event_id": base.id.hex(),
            "retagged": cases,
        },
    )


def _source(change: dict[str, str], default: int) -> int:
    from nerve.events import parse_source

    return parse_source(change["source"]) if "source" in change else default


def _trust(change: dict[str, str], default: Trust) -> Trust:
    from nerve.events import parse_trust

    return parse_trust(change["trust"]) if "trust" in change else default


if __name__ == "__main__":
    main(Path(sys.argv[1]) if len(sys.argv) > 1 else HERE)
