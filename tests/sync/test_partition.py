"""The randomised partition suite (``bench/sync_partition_bench.py``) at CI size: one short
seeded run on a three-node NATS cluster and one on SeaweedFS, three devices with real
daemons behind fault-injecting proxies, partitions, server kills and pauses, daemons killed
mid-send and mid-import, skewed clocks and repeated boxes; then heal, and every device holds
the same shared digest with every acknowledged event exactly once, and verifies."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.helpers.partition import nats_place
from tests.helpers.partition_run import run, s3_places

# seeds whose 14 steps hold a link fault, server faults, a daemon kill and repeated boxes,
# and no emit of thousands (those are the bench's)
DEVICES, STEPS, HEAL_S = (3, 3), 14, 60.0


@pytest.mark.slow
def test_a_short_randomised_run_on_a_nats_cluster_converges(tmp_path: Path) -> None:
    report = run(
        11,
        tmp_path,
        lambda folder, seed: nats_place(folder / "nats"),
        devices=DEVICES,
        steps=STEPS,
        heal_s=HEAL_S,
    )
    print(f"{report.seconds:.1f} s, converged in {report.converge_s} s, {report.acked} acked")
    assert report.passed, report.text()
    assert report.acked > 0


@pytest.mark.slow
def test_a_short_randomised_run_on_s3_converges(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from tests.helpers.seaweed import seaweed

    with seaweed(tmp_path / "s3", bucket="sync") as server:
        for name, value in server.env.items():
            monkeypatch.setenv(name, value)
        with s3_places(server) as place_of:
            report = run(6, tmp_path, place_of, devices=DEVICES, steps=STEPS, heal_s=HEAL_S)
    print(f"{report.seconds:.1f} s, converged in {report.converge_s} s, {report.acked} acked")
    assert report.passed, report.text()
    assert report.acked > 0
