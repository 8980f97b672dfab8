"""The recorded real day (tests/fixtures/day) is a sound log that holds what its plan says."""

from __future__ import annotations

from tests.conftest import run_cli
from tests.helpers.day import ARCHIVE, Day


def test_the_recorded_day_verifies(recorded_day: Day) -> None:
    proc = run_cli("--workspace", str(recorded_day.root), "replay", "--verify")
    assert proc.returncode == 0, proc.stderr


def test_the_recorded_day_holds_its_failed_builds(recorded_day: Day) -> None:
    failed = [c for c in recorded_day.plan["commands"] if c["command"] == "make build"]
    assert [c["exit"] for c in failed] == [2, 2, 2, 2, 0]
    proc = run_cli("--workspace", str(recorded_day.root), "query",
                   "SELECT count(*) FROM events WHERE line = '$ make build [exit 2]'")  # fmt: skip
    assert proc.stdout.split()[-1] == "4", proc.stdout


def test_the_recorded_day_stays_small() -> None:
    assert ARCHIVE.stat().st_size < 5_000_000
