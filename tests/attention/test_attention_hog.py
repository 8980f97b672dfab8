"""Attention over a quiet hour of the bundled senses' readings: a CPU hog is surfaced within
two minutes, the idle hum of the network counters is held.

The observations are shaped as the bundled ``cpu``, ``network`` and ``processes`` senses
write them (their payloads' ``readings``, at their ``nerve.yaml`` intervals; once every
compute, once as the senses send them: on change, with keyframes), stored as JSON
payload bytes and attended by :class:`nerve.attention.service.Attender` with the default
settings: the daemon's own path.
"""

from __future__ import annotations

import json
import random
from typing import Any

import pytest

from nerve.attention.service import Attender, Obs, readings_from_bytes
from nerve.attention.settings import AttentionConfig
from nerve.events import SourceClass, Trust
from nerve.machine.deadband import Deadband
from tests.runtime.test_senses_builtin import load

S = 10**9
T0 = 1_767_261_600 * S  # 2026-01-01 10:00 UTC
HOG = (T0 + 40 * 60 * S, T0 + 44 * 60 * S)
EARLY = (T0 + 60 * S, T0 + 5 * 60 * S)  # in the daemon's first minutes: probes barely warm


Row = tuple[int, str, int, str, dict[str, Any]]


def _rows(seed: int, hog_at: tuple[int, int]) -> list[Row]:
    rng = random.Random(seed)
    rows = []
    for t in range(T0, T0 + 3600 * S, 5 * S):
        hog = hog_at[0] <= t < hog_at[1]
        busy = min(1000, max(0, round(rng.gauss(80, 10)) + (500 if hog else 0)))
        cpu = {"percent": busy / 10, "readings": {"busy_permille": busy}}
        rows.append((t, "cpu", SourceClass.ENDPOINT, f"cpu {busy / 10:.1f}%", cpu))
        if t in hog_at:  # a top is sent when it changed: the hog came, and went
            permille = 990 if hog else 0
            top = {"event": "top", "readings": {"top_cpu_permille": permille, "over_threshold": 0}}
            line = "top cpu: yes 99%" if hog else "top cpu: idle"
            rows.append((t + 1, "processes", SourceClass.PROCESS_TREE, line, top))
    for t in range(T0 + 3 * S, T0 + 3600 * S, 10 * S):
        down, up = (rng.randint(0, 2), rng.randint(0, 1)) if rng.random() < 0.5 else (0, 0)
        net = {"nic": "all", "readings": {"down_kib_per_s": down, "up_kib_per_s": up,
                                          "errors": 0, "listening_ports": 12}}  # fmt: skip
        line = f"net all down {down:.1f} KiB/s up {up:.1f} KiB/s"
        rows.append((t, "network", SourceClass.NETWORK, line, net))
    return sorted(rows, key=lambda r: r[0])


def _on_change(rows: list[Row]) -> list[Row]:
    """The rows the senses send: a reading when it moved by its band, or a keyframe."""
    sent = Deadband()
    bands = {name: load(name)._BANDS for name in ("cpu", "network")}
    return [
        r
        for r in rows
        if r[1] not in bands or sent.news(r[1], r[4]["readings"], bands[r[1]], 60 * S, r[0])
    ]


def _attend(
    seed: int, on_change: bool = False, hog_at: tuple[int, int] = HOG
) -> tuple[list[dict[str, Any]], dict[str, tuple[int, str]]]:
    observations, seen = [], {}
    rows = _rows(seed, hog_at)
    rows = _on_change(rows) if on_change else rows
    for i, (t, sense, source, line, payload) in enumerate(rows):
        eid = i.to_bytes(32, "big")
        seen[eid.hex()] = (t, sense)
        stored = json.dumps(payload, sort_keys=True).encode()
        observations.append(
            Obs(eid, int(source), int(Trust.FIRST_PARTY), t, 0, line, sense,
                readings_from_bytes(stored))
        )  # fmt: skip
    attender = Attender(AttentionConfig(), None)
    attender.observe(observations)
    return attender.decisions, seen


@pytest.mark.parametrize("hog_at", [HOG, EARLY], ids=["at-40-min", "in-the-first-minutes"])
@pytest.mark.parametrize("on_change", [False, True], ids=["every-compute", "on-change"])
def test_a_cpu_hog_is_surfaced_in_time_and_the_idle_network_is_held(
    on_change: bool, hog_at: tuple[int, int]
) -> None:
    for seed in (1, 2, 3):
        decisions, seen = _attend(seed, on_change, hog_at)
        surfaced = [seen[d["source_event"]] for d in decisions if d["outcome"] == "surface"]
        assert any(
            hog_at[0] <= t <= hog_at[0] + 120 * S and sense in ("cpu", "processes")
            for t, sense in surfaced
        ), (seed, surfaced)
        network = [d["outcome"] for d in decisions if seen[d["source_event"]][1] == "network"]
        assert network and all(o.startswith("hold") for o in network), (seed, network)
