"""A workspace sealed over four past epochs (epoch 1 quiet), built with real logs and real
seal files; the times are set so that the check, now, falls in epoch 4."""

from __future__ import annotations

import shutil
import time
from dataclasses import dataclass, replace
from pathlib import Path

from nerve.attention.service import replay
from nerve.clock import Hlc
from nerve.events import Event
from nerve.log.reader import snapshot
from nerve.runtime.sealing import heads_now
from nerve.seal import Sealer, Seed, setup
from nerve.workspace import WorkspaceDir, init_workspace
from tests.helpers.attended import ATTENTION, observation

EPOCH_S = 60
BITS = 4
NS = 1_000_000_000
BATCHES = {0: range(0, 120), 2: range(120, 200), 3: range(200, 240)}  # epoch 1 is quiet


@dataclass(frozen=True)
class Sealed:
    ws: WorkspaceDir
    seed: Seed
    records: list[int]  # manifest records each epoch's seal covers

    def at(self, epoch: int, offset_s: int = 5) -> int:
        """A time (ns) ``offset_s`` into ``epoch``."""
        return self.seed.starts_ns(epoch) + offset_s * NS

    def first_covering(self, record: int) -> int:
        """The first epoch whose seal covers manifest record ``record``."""
        return next(n for n, count in enumerate(self.records) if count > record)


def _observed(numbers: range, after: Hlc) -> list[Event]:
    """The helper's observations, stamped from now on and after ``after``, the log's newest
    (each batch follows the last one's decisions, which the replay may stamp a little ahead
    of the wall clock)."""
    base = max(time.time_ns(), after.physical_ns + 1_000_000)
    return [
        replace(observation(i), hlc=Hlc(base + k * 1_000_000, 0)) for k, i in enumerate(numbers)
    ]


def build(root: Path, old_copy: Path | None = None) -> Sealed:
    """Set up at ``now - 4 epochs``; events, decisions and segments in epochs 0, 2, 3
    (and, given ``old_copy``, the workspace copied there as it was after epoch 1)."""
    ws = init_workspace(root)
    (ws.root / "nerve.yaml").write_text("senses: {}\n" + ATTENTION)
    ws = WorkspaceDir(ws.root)
    start = time.time_ns() - 4 * EPOCH_S * NS - 10 * NS
    seed = setup(ws.data / "seals", EPOCH_S, bits=BITS, now_ns=start)
    sealer = Sealer(ws.data / "seals", lambda: heads_now(ws.log_root))
    records = []
    for epoch in range(4):
        with ws.open_log() as log:
            if epoch in BATCHES:
                log.import_events(_observed(BATCHES[epoch], snapshot(ws.log_root).newest))
                replay(log, ws.config.attention, ws.data / "keys")
                log.seal()
        assert sealer.seal_due(seed.starts_ns(epoch) + 5 * NS) == [epoch]
        records.append(heads_now(ws.log_root).records)
        if epoch == 1 and old_copy is not None:
            shutil.copytree(ws.root, old_copy, symlinks=True)
    return Sealed(ws, seed, records)
