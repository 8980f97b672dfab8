"""A workspace whose log holds attention decisions of every kind: some surfaced, some held
for value, some held for budget (what the audit notebook explains)."""

from __future__ import annotations

from pathlib import Path

from nerve.attention.service import replay
from nerve.clock import Hlc
from nerve.events import Event, SourceClass, Trust
from nerve.workspace import WorkspaceDir, init_workspace

T0 = 1_750_000_000_000_000_000
STEP_NS = 3 * 10**9
CYCLE = 40  # observations per cycle: shell, then a burst of untrusted endpoint events

# Steady shell work keeps engagement full (cost 600‰). In odd cycles an app-focus event makes
# the modality visual for two minutes, so the endpoint burst that follows also pays the 300‰
# interference and is held for value. The budget holds two surfacings and refills 120 mJ per
# cycle, so it runs short and some highlights that were worth it are held for budget.
ATTENTION = """
attention:
  window: 16
  detector: {warmup: 4, debounce: 3, k_milli: 2000}
  gate: {budget_capacity_uj: 500000, refill_uj_per_s: 1000}
  context: {modality_window: 2m}
  chain: {checkpoint_every: 4}
"""


def observation(i: int) -> Event:
    cycle, phase = divmod(i, CYCLE)
    if phase >= CYCLE - 4:
        source, trust = SourceClass.ENDPOINT, Trust.UNTRUSTED
    elif cycle % 2 == 1 and phase == 12:
        source, trust = SourceClass.APP_FOCUS, Trust.FIRST_PARTY
    else:
        source, trust = SourceClass.SHELL, Trust.FIRST_PARTY
    return Event(
        hlc=Hlc(T0 + i * STEP_NS, 0),
        node="n",
        kind="observation",
        source=int(source),
        trust=trust,
        line=f"{source.name.lower()} #{i}",
        payload={"i": i},
    )


def attended_workspace(root: Path) -> WorkspaceDir:
    """Six cycles of observations, attended to and sealed."""
    ws = init_workspace(root)
    (ws.root / "nerve.yaml").write_text("senses: {}\n" + ATTENTION)
    ws = WorkspaceDir(ws.root)
    with ws.open_log() as log:
        log.import_events([observation(i) for i in range(6 * CYCLE)])
        replay(log, ws.config.attention, ws.data / "keys")
    return ws
