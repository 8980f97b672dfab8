"""The attention pipeline: observer -> detector -> gate, deterministic and resumable."""

from __future__ import annotations

import json

import pytest
from pydantic import ValidationError

from nerve.attention.detector import DetectorParams
from nerve.attention.gate import GateConfig, UserContext
from nerve.attention.pipeline import Attention, PipelineConfig
from nerve.canonical import canonical_json
from nerve.errors import EventError

CONFIG = PipelineConfig(
    window=8,
    detector=DetectorParams(warmup=4, debounce=2),
    gate=GateConfig(surface_cost_uj=100, budget_capacity_uj=150, refill_uj_per_s=2),
)
BUSY = UserContext(engagement_milli=300, active_modality="visual")  # cost 180 + 300
ABSORBED = UserContext(engagement_milli=1000, active_modality="visual")  # cost 600 + 300


def _stream(n: int = 120) -> list[tuple[bytes, int, int, int]]:
    """A quiet round-robin of three sources with a rare source every 17th event."""
    out = []
    for i in range(n):
        source = 9 if i % 17 == 16 else i % 3
        trust = 3 if i % 29 > 24 else 1
        out.append((i.to_bytes(32, "big"), source, trust, i * 1_000_000_000))
    return out


def _run(att: Attention, events: list[tuple[bytes, int, int, int]]) -> list[tuple[object, ...]]:
    out: list[tuple[object, ...]] = []
    for event_id, source, trust, t in events:
        ctx = ABSORBED if int.from_bytes(event_id, "big") // 17 % 3 == 2 else BUSY
        for h, d in att.observe(event_id, source, trust, t, ctx):
            out.append((h.seq, h.probe, h.score_milli, d.outcome, d.budget_after_uj))
    return out


def test_stream_yields_every_outcome_exactly() -> None:
    # (seq, probe, score, outcome, budget left): the rare source's novelty spikes, gated for
    # a user who is busy, or absorbed every third time, on a 150 µJ budget refilling 2 µJ/s
    assert _run(Attention(CONFIG), _stream()) == [
        (50, "novelty", 659, "hold:value", 150),
        (67, "novelty", 651, "surface", 50),
        (84, "novelty", 645, "hold:budget", 84),
        (101, "novelty", 642, "hold:value", 118),
        (118, "novelty", 641, "surface", 50),
    ]


def test_two_runs_are_byte_identical() -> None:
    a, b = Attention(CONFIG), Attention(CONFIG)
    assert _run(a, _stream()) == _run(b, _stream())
    assert canonical_json(a.snapshot()) == canonical_json(b.snapshot())


def test_restore_midway_matches_an_unbroken_run() -> None:
    events = _stream()
    whole = Attention(CONFIG)
    expected = _run(whole, events)
    first = Attention(CONFIG)
    head = _run(first, events[:60])
    second = Attention(CONFIG)
    second.restore(json.loads(json.dumps(first.snapshot())))
    assert head + _run(second, events[60:]) == expected
    assert second.snapshot() == whole.snapshot()


def test_event_id_must_be_32_bytes() -> None:
    with pytest.raises(EventError):
        Attention().observe(b"short", 0, 1, 0, BUSY)


def test_bad_snapshot_leaves_state_alone() -> None:
    att = Attention(CONFIG)
    _run(att, _stream(20))
    before = att.snapshot()
    broken = json.loads(json.dumps(before))
    broken["gate"]["budget_uj"] = -5
    with pytest.raises(EventError):
        att.restore(broken)
    assert att.snapshot() == before


def test_config_defaults_and_validation() -> None:
    config = PipelineConfig.model_validate({"detector": {"k_milli": 2000}})
    assert (config.window, config.detector.k_milli, config.detector.warmup) == (64, 2000, 8)
    assert config.gate.surface_cost_uj == 250_000
    for bad in ({"windw": 3}, {"gate": {"budget": 1}}, {"window": 0}, {"window": "64"}):
        with pytest.raises(ValidationError):
            PipelineConfig.model_validate(bad)
