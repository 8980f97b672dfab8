"""What the daemon costs: libraries it never uses stay unloaded, and what a compute that
changed nothing records (see README, "What a compute records")."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import pytest

from tests.daemon_util import started

ROOT = Path(__file__).resolve().parent.parent


@pytest.fixture
def bundled(tmp_path: Path) -> Path:
    """A copy of the repository's own workspace: nerve.yaml and the built-in senses."""
    ws = tmp_path / "ws"
    ws.mkdir()
    shutil.copy2(ROOT / "nerve.yaml", ws / "nerve.yaml")
    shutil.copytree(ROOT / "senses", ws / "senses", ignore=shutil.ignore_patterns("__pycache__"))
    return ws


def _mapped(pid: int) -> str:
    return Path(f"/proc/{pid}/maps").read_text()


def test_the_daemon_never_loads_pandas(bundled: Path) -> None:
    with started(bundled) as d:
        d.wait_for(lambda: d.events("observation", "cpu"), what="a cpu observation")
        maps = _mapped(d.pid())
        status = d.request({"type": "status"})
    assert "libarrow" in maps  # it built arrays and stored them: the probe has happened
    assert "pandas" not in maps
    assert status["ok"]


# A sense whose state stops changing after its first compute; each compute leaves a mark in
# a file, so the test knows how many computes really ran.
STILL = """
from pathlib import Path
from typing import Any
from nerve import Result
initial_state = {"n": 0}
def compute(state):
    with open(Path(__file__).parent / "computes", "a") as f:
        f.write("x")
    return Result(state={"n": 1})
"""

COUNTER = """
from nerve import Observation, Result
initial_state = {"n": 0}
def compute(state):
    n = state["n"] + 1
    return Result(state={"n": n}, observations=[Observation(source="endpoint", line=f"count {n}")])
"""

ECHO = """
from nerve import Result
initial_state = {"heard": 0}
def compute(state):
    return Result(state={"heard": state["heard"] + 1}, signal=False)
"""

SHAPES_YAML = """
senses:
  still: {group: a, interval: 100ms}
  counter: {group: a, interval: 100ms}
  echo: {group: b, on: [counter]}
"""


def _shapes_workspace(root: Path) -> Path:
    for name, code in (("still", STILL), ("counter", COUNTER), ("echo", ECHO)):
        (root / "senses" / name).mkdir(parents=True)
        (root / "senses" / name / "sense.py").write_text(code)
    (root / "nerve.yaml").write_text(SHAPES_YAML)
    return root


def _counts(events: list[dict[str, Any]], kind: str) -> dict[str, int]:
    out: dict[str, int] = {}
    for e in events:
        if e["kind"] == kind:
            out[e["subject"]] = out.get(e["subject"], 0) + 1
    return out


def test_a_compute_that_changed_nothing_is_counted_not_stored(tmp_path: Path) -> None:
    ws = _shapes_workspace(tmp_path)
    marks = ws / "senses" / "still" / "computes"
    with started(ws) as d:
        d.wait_for(lambda: marks.exists() and len(marks.read_text()) >= 10, what="10 computes")
        d.wait_for(lambda: len(d.events("observation", "counter")) >= 5, what="5 counts")
        live = d.events()
    ran = len(marks.read_text())
    events = d.events()
    # while running: the unchanged sense stored one state (its first compute since start)
    assert _counts(live, "sense.state")["still"] == 1
    # signals only from the sense someone listens to; the listener's own are not stored
    assert set(_counts(events, "signal")) == {"counter"}
    assert _counts(events, "signal")["counter"] == _counts(events, "observation")["counter"]
    # a changed state is stored every time, and says it stands for one compute
    counter = [
        e["data"] for e in events if e["kind"] == "sense.state" and e["subject"] == "counter"
    ]
    assert [s["computes"] for s in counter] == [1] * _counts(events, "observation")["counter"]
    # the stop stored the count of the computes that were not recorded: nothing is lost
    still = [e["data"] for e in events if e["kind"] == "sense.state" and e["subject"] == "still"]
    assert still[-1]["reason"] == "checkpoint" and still[-1]["state"] == {"n": 1}
    assert sum(s["computes"] for s in still) == ran
    assert all(s["state"] == {"n": 1} for s in still)


def test_a_restart_rebuilds_state_from_the_stored_records(tmp_path: Path) -> None:
    ws = _shapes_workspace(tmp_path)
    with started(ws) as d:
        d.wait_for(lambda: len(d.events("observation", "counter")) >= 3, what="3 counts")
    last = max(int(e["line"].split()[1]) for e in d.events("observation", "counter"))
    with started(ws) as d:
        d.wait_for(
            lambda: len(d.events("observation", "counter")) > last, what="a count after restart"
        )
        senses = {s["name"]: s for s in d.request({"type": "list-senses"})["senses"]}
    counts = [int(e["line"].split()[1]) for e in d.events("observation", "counter")]
    assert counts == list(range(1, len(counts) + 1))  # it went on from where it stopped
    still = d.events("sense.state", "still")
    assert [e["data"]["state"] for e in still] == [{"n": 1}] * len(still)
    assert senses["still"]["computes"] >= 1
