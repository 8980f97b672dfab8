"""MCP `status` with a daemon running is live: it reads the daemon's own counts, not the
log's sense.state records, which a steady sense writes only at checkpoints minutes apart."""

from __future__ import annotations

from pathlib import Path

import nerve
from nerve.mcp.info import status
from nerve.privacy.screen import Screen
from nerve.workspace import init_workspace
from tests.daemon_util import started, write_sense

STEADY = """
from nerve import Observation, Result
initial_state = {"seen": 1}
def compute(state):
    return Result(state=state, observations=[Observation(source="endpoint", line="all quiet")])
"""


def test_status_counts_what_the_daemon_computed_since_the_last_record(tmp_path: Path) -> None:
    root = init_workspace(tmp_path / "ws").root
    write_sense(root, "steady", STEADY)
    (root / "nerve.yaml").write_text("senses:\n  steady: {interval: 100ms}\n")
    with started(root) as d:

        def live_computes() -> int:
            rows = d.request({"type": "list-senses"})["senses"]
            return int(next(r for r in rows if r["name"] == "steady").get("computes") or 0)

        d.wait_for(lambda: live_computes() >= 5, timeout=90, what="five computes")
        recorded = len(d.events("sense.state", "steady"))
        ws = nerve.open(root)
        out = status(ws, Screen(ws.settings.config.privacy))
        sense = next(s for s in out.senses if s.name == "steady")
        assert out.daemon and sense.computes >= 5 > recorded, (sense, recorded)
        assert sense.last_time is not None and sense.last_line == "all quiet"
