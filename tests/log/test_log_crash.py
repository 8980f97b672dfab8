"""SIGKILL a real writer process at random moments; every acknowledged event survives once."""

from __future__ import annotations

import threading
from pathlib import Path

from tests.crash_util import CrashTally, crash_rounds

KILLS_PER_LOG = 26  # two logs side by side: 52 kills across append, seal and compact


def test_sigkill_at_random_moments_loses_and_duplicates_nothing(tmp_path: Path) -> None:
    tallies: dict[int, CrashTally] = {}
    errors: list[BaseException] = []

    def run(seed: int) -> None:
        try:
            tallies[seed] = crash_rounds(tmp_path / f"log{seed}", KILLS_PER_LOG, seed)
        except BaseException as exc:  # reported below, with its message
            errors.append(exc)

    threads = [threading.Thread(target=run, args=(seed,)) for seed in (1, 2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors, errors
    assert sorted(tallies) == [1, 2]
    for tally in tallies.values():
        assert tally.kills == KILLS_PER_LOG
        assert tally.duplicated == 0, "duplicated events"
        assert tally.lost == 0, f"{tally.lost} acknowledged events lost"
        assert tally.problems == []
        assert tally.acked > 100
