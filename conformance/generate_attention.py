"""Regenerate the C3 (attention), C3V (value probes) and C5 (chain integrity) vectors; the
output is deterministic.

python conformance/generate_attention.py [OUT_DIR]     # default: conformance/v1

The signal stream, the configurations, the Ed25519 seed and the genesis nonce are fixed
below; Ed25519 signatures are deterministic, so every byte of the output is reproducible.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import blake3

from nerve.attention.detector import DetectorParams
from nerve.attention.gate import GateConfig, UserContext
from nerve.attention.pipeline import PipelineConfig
from nerve.attention.values import ValueParams
from nerve.chain import ChainWriter, Keyring
from nerve.clock import Hlc
from nerve.conformance.attention import (
    Record,
    busy_pass,
    chain_summary,
    context_to_json,
    idle_pass,
    run_stream,
)
from nerve.events import Event, SourceClass, Trust

HERE = Path(__file__).resolve().parent / "v1"
NODE = "conformance-node"
T0 = 1_700_000_000_000_000_000
MS = 1_000_000
SEED = blake3.blake3(b"nerve conformance C5: a published test key, never a real one").digest()
NONCE = blake3.blake3(b"nerve conformance C5 nonce").digest()[:16]

# A steady round-robin of four first-party sources, one event every 2 s, broken by bursts
# (250 ms apart): shell twice (salience, novelty), an Untrusted endpoint and later an
# Untrusted app_focus (uncertainty), one Inferred accessibility event and an Untrusted vendor
# class (novelty).
_ROUND_ROBIN = (
    SourceClass.FILE_CHANGE,
    SourceClass.APP_FOCUS,
    SourceClass.SYSTEM_LOG,
    SourceClass.NETWORK,
)
_PHASES: list[tuple[int | None, Trust, int]] = [
    (None, Trust.FIRST_PARTY, 32),
    (SourceClass.SHELL, Trust.FIRST_PARTY, 6),
    (None, Trust.FIRST_PARTY, 12),
    (SourceClass.ENDPOINT, Trust.UNTRUSTED, 5),
    (None, Trust.FIRST_PARTY, 16),
    (SourceClass.ACCESSIBILITY, Trust.INFERRED, 1),
    (None, Trust.FIRST_PARTY, 12),
    (SourceClass.SHELL, Trust.FIRST_PARTY, 6),
    (None, Trust.FIRST_PARTY, 12),
    (SourceClass.APP_FOCUS, Trust.UNTRUSTED, 6),
    (None, Trust.FIRST_PARTY, 24),
    (2048, Trust.UNTRUSTED, 3),
    (None, Trust.FIRST_PARTY, 4),
]

CONFIG = PipelineConfig(
    window=8,
    detector=DetectorParams(
        alpha_num=1,
        alpha_den=8,
        k_milli=2500,
        floor_milli=500,
        min_sigma_milli=50,
        debounce=4,
        warmup=8,
    ),
    gate=GateConfig(budget_capacity_uj=10_000_000),  # generous: 40 surfacings
)
IDLE = UserContext(engagement_milli=0, active_modality="none")
BUSY = UserContext(engagement_milli=500, active_modality="visual")
# The same value and cost terms; room for one surfacing, refilled at 2.222 mJ/s.
BUSY_GATE = CONFIG.gate.model_copy(update={"budget_capacity_uj": 300_000, "refill_uj_per_s": 2_222})


def stream() -> list[Record]:
    """The signal stream: each event's id, source and trust codes, and HLC physical time."""
    out, t, i = [], T0, 0
    for source, trust, count in _PHASES:
        for k in range(count):
            t += (2_000 if source is None else 250) * MS
            src = int(_ROUND_ROBIN[k % 4] if source is None else source)
            ev = Event(Hlc(t, 0), NODE, "observation", f"c3-{i}", src, trust)
            out.append(
                {"event_id": ev.id.hex(), "source": src, "trust": int(trust), "hlc_physical_ns": t}
            )
            i += 1
    return out


def c3(events: list[Record]) -> dict[str, Any]:
    """The idle pass over ``events``, then its highlights re-gated for the busy user."""
    idle = idle_pass(CONFIG, events, IDLE)
    busy = busy_pass(BUSY_GATE, BUSY, events, idle)
    assert {r["decision"]["outcome"] for r in busy} == {"surface", "hold:value", "hold:budget"}
    return {
        "vector": "C3",
        "description": "A fixed signal stream through observer, detector and gate for an idle "
        "user, then the same highlights re-gated for a busy user on a small budget.",
        "config": CONFIG.model_dump(exclude={"values"}),  # C3 predates value probes
        "stream": events,
        "idle": {"context": context_to_json(IDLE), "decisions": idle},
        "busy": {
            "gate": BUSY_GATE.model_dump(),
            "context": context_to_json(BUSY),
            "decisions": busy,
        },
    }


def c5(events: list[Record]) -> dict[str, Any]:
    """The idle pass's decisions, sealed after a genesis link and followed by a checkpoint."""
    keyring = Keyring.ephemeral(SEED)
    writer = ChainWriter.create(keyring, nonce=NONCE, checkpoint_every=0)
    for index, highlight, decision in run_stream(CONFIG, events, IDLE):
        ev = events[index]
        event_id = bytes.fromhex(ev["event_id"])
        writer.append_decision(event_id, ev["trust"], highlight, decision, ev["hlc_physical_ns"])
    writer.checkpoint()
    links = list(writer.links)
    summary = chain_summary(links, keyring.public_key(), len(links) // 2)
    assert summary["verify"]["ok"] and summary["excised"]["kind"] == "excised"
    return {
        "vector": "C5",
        "description": "A sealed surfacing log (genesis, the C3 idle-pass decisions, a "
        "checkpoint) verifies whole; without its middle link it breaks there as excised.",
        "seed": SEED.hex(),
        "nonce": NONCE.hex(),
        "pinned_key": keyring.public_key().hex(),
        "log_id": writer.log_id.hex(),
        "links": [raw.hex() for raw in links],
        **summary,
    }


# C3V: three senses with readings, every 10 s for 100 minutes (600 steps), noise from a fixed
# linear congruential generator: ``cpu`` holds steady, then drops, then a hog (a sustained
# rise); ``disk`` loses a little, then fills steadily (a trend); ``net`` hums with a spike
# every 10 minutes (the norm after a few) and one far larger; ``shell`` observes now and then,
# and once in a rush (its rate).
# The idle pass keeps the predictions alone (range_bins 0), as C3V was first published; the
# ranged pass adds values never seen, learned from ten minutes on.
V_CONFIG = PipelineConfig(window=8, gate=GateConfig(budget_capacity_uj=10_000_000),
                           values=ValueParams(range_bins=0))  # fmt: skip
R_VALUES = ValueParams(novel_warmup_s=600, novel_quiet_s=900)
V_T0 = T0 - T0 % (3_600 * 1_000 * MS)  # on the hour


def _lcg(seed: int) -> Any:
    state = seed
    while True:
        state = (state * 6364136223846793005 + 1442695040888963407) % 2**64
        yield state >> 40  # 24 bits


def value_stream() -> list[Record]:
    noise, out = _lcg(2026), []
    for i in range(600):
        t = V_T0 + i * 10_000 * MS
        for subject, readings in _value_readings(i, noise):
            ev = Event(Hlc(t, len(out) % 4), NODE, "observation", subject, 8, Trust.FIRST_PARTY)
            out.append({"event_id": ev.id.hex(), "source": int(SourceClass.ENDPOINT),
                        "trust": int(Trust.FIRST_PARTY), "hlc_physical_ns": t,
                        "subject": subject, "readings": readings})  # fmt: skip
    return out


def _value_readings(i: int, noise: Any) -> list[tuple[str, dict[str, int]]]:
    cpu = 60 + next(noise) % 21 - (45 if 150 <= i < 190 else 0) + (500 if 300 <= i < 340 else 0)
    disk = 90_000 - i // 30 + next(noise) % 5 - (max(0, i - 500) * 150 if i >= 500 else 0)
    net = next(noise) % 3 + (300 if i % 60 == 30 else 0) + (5_000 if i == 470 else 0)
    rows = [("cpu", {"busy_permille": cpu}), ("disk", {"free_mib": disk}),
            ("net", {"down_kib_per_s": net})]  # fmt: skip
    if i % 37 == 0 or 400 <= i < 430:
        rows.append(("shell", {}))
    return rows


def c3v(events: list[Record]) -> dict[str, Any]:
    idle = idle_pass(V_CONFIG, events, IDLE)
    probes = {r["highlight"]["probe"] for r in idle}
    assert {"value:cpu.busy_permille", "value:disk.free_mib", "value:net.down_kib_per_s"} <= probes
    ranged = idle_pass(V_CONFIG.model_copy(update={"values": R_VALUES}), events, IDLE)
    novel = {r["highlight"]["score_milli"] for r in ranged} & {1000, 900}
    assert novel == {1000, 900}, novel  # a record and a bin never visited
    return {
        "vector": "C3V",
        "description": "Value probes: senses' readings (a sustained rise and a drop, a steady "
        "fill, spikes that are the norm and one that is not, a sense's rate) through observer, "
        "detector, value probes and gate for an idle user.",
        "config": V_CONFIG.model_dump(),
        "stream": events,
        "idle": {"context": context_to_json(IDLE), "decisions": idle},
        "ranged": {"values": R_VALUES.model_dump(), "decisions": ranged},
    }


def write(folder: Path, name: str, data: dict[str, Any]) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    indent = None if data["vector"] == "C3V" else 2  # C3V's long stream: one line per event
    text = json.dumps(data, indent=indent, ensure_ascii=False) + "\n"
    if indent is None:
        text = text.replace('}, {"event_id"', '},\n{"event_id"')
    (folder / name).write_text(text, encoding="utf-8")


def main(folder: Path = HERE) -> None:
    events = stream()
    write(folder, "c3_attention.json", c3(events))
    write(folder, "c5_chain.json", c5(events))
    write(folder, "c3_values.json", c3v(value_stream()))


if __name__ == "__main__":
    main(Path(sys.argv[1]) if len(sys.argv) > 1 else HERE)
