"""What the daemon costs: libraries it never uses stay unloaded, and what a compute that
changed nothing records (see docs/daemon.md, "What a compute records")."""

from __future__ import annotations

import os
import shutil
import signal
import sys
import time
from pathlib import Path
from typing import Any

import psutil
import pytest

from nerve.log.drafts import Draft
from tests.daemon_util import Daemon, started

ROOT = Path(__file__).resolve().parents[2]


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


def test_the_daemon_loads_neither_duckdb_nor_pandas(bundled: Path) -> None:
    with started(bundled) as d:
        d.wait_for(lambda: d.events("observation", "cpu"), what="a cpu observation")
        kernel = psutil.Process(d.pid())
        maps = _mapped(kernel.pid)
        children = [" ".join(c.cmdline()) for c in kernel.children()]
        status = d.request({"type": "status"})
    assert "libarrow" in maps  # it built arrays and stored them: pyarrow's probe has run
    assert "pandas" not in maps
    # it rebuilt its state from projections at start, in its query process, not in itself
    assert "duckdb" not in maps
    assert sum("nerve.runtime.queries" in c for c in children) <= 1
    assert status["ok"]


def test_the_query_process_starts_on_a_query_and_stops_when_idle(tmp_path: Path) -> None:
    from nerve.runtime.queries import QueryChild, QueryError
    from nerve.workspace import WorkspaceDir

    ws = WorkspaceDir.at(tmp_path)
    with ws.open_log() as log:
        log.append_drafts([Draft.control("note", "t", "one", {"n": 1})])
    child = QueryChild(idle_s=0.5)
    assert child.pid is None  # nothing started before a query
    conn = child.connect(tmp_path)
    assert conn.execute("SELECT subject, line FROM events").fetchall() == [("t", "one")]
    assert child.pid is not None and child.pid != os.getpid()
    rows = child.connect(tmp_path, projections=False).execute("SELECT count(*) FROM events")
    assert rows.fetchone() == (1,) and rows.fetchone() is None
    with pytest.raises(QueryError, match="no_such_table"):
        conn.execute("SELECT * FROM no_such_table")
    _wait(lambda: child.pid is None, "the idle query process to stop")
    assert child.connect(tmp_path).execute("SELECT count(*) FROM events").fetchall() == [(1,)]
    assert child.started == 2
    child.close()
    assert child.pid is None


def _wait(check: Any, what: str, timeout: float = 30.0) -> None:
    deadline = time.monotonic() + timeout
    while not check():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.05)


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


# A counter sense whose state is stored only at checkpoints (state_records).
READING = """
from nerve import Observation, Result
initial_state = {"n": 0}
state_records = "checkpoints"
def compute(state):
    n = state["n"] + 1
    return Result(state={"n": n}, observations=[Observation(source="endpoint", line=f"count {n}")])
"""


def _reading_workspace(root: Path, records: str = "checkpoints") -> Path:
    (root / "senses" / "reading").mkdir(parents=True)
    code = READING.replace('"checkpoints"', repr(records))
    (root / "senses" / "reading" / "sense.py").write_text(code)
    (root / "nerve.yaml").write_text("senses:\n  reading: {group: a, interval: 100ms}\n")
    return root


def _reading_counts(d: Daemon) -> list[int]:
    return [int(e["line"].split()[1]) for e in d.events("observation", "reading")]


def test_a_checkpointed_state_is_stored_at_start_and_stop_and_resumes_after_a_clean_stop(
    tmp_path: Path,
) -> None:
    ws = _reading_workspace(tmp_path)
    with started(ws) as d:
        d.wait_for(lambda: len(_reading_counts(d)) >= 8, what="8 computes")
        live = d.events("sense.state", "reading")

        def shown() -> int:  # counted once the result is stored: a moment after the event
            senses = d.request({"type": "list-senses"})["senses"]
            return int(next(s["computes"] for s in senses if s["name"] == "reading"))

        d.wait_for(lambda: shown() >= 8, what="8 computes shown")
    assert len(live) == 1 and live[0]["data"]["state"] == {"n": 1}  # the first compute only
    states = d.events("sense.state", "reading")
    last = max(_reading_counts(d))
    assert states[-1]["data"]["reason"] == "checkpoint"
    assert states[-1]["data"]["state"] == {"n": last}  # the stop stored the exact state
    assert sum(s["data"]["computes"] for s in states) == last  # every compute counted
    with started(ws) as d:
        d.wait_for(lambda: max(_reading_counts(d)) > last, what="a compute after restart")
    counts = _reading_counts(d)
    assert counts == list(range(1, len(counts) + 1))  # went on from the exact state


def test_a_checkpointed_state_restarts_from_its_baseline_after_sigkill(tmp_path: Path) -> None:
    ws = _reading_workspace(tmp_path)
    with started(ws) as d:
        d.wait_for(lambda: len(_reading_counts(d)) >= 5, what="5 computes")
        _sigkill(d)
    killed_at = max(_reading_counts(d))
    assert killed_at >= 5
    with started(ws) as d:
        d.wait_for(lambda: len(_reading_counts(d)) > killed_at + 1, what="2 computes after restart")
        log = (ws / "data" / "daemon.log").read_text()
    after = _reading_counts(d)[killed_at:]
    # the stored checkpoint (n=1, from the first compute) predates what was observed since:
    # the sense starts a new baseline rather than from that stale reading
    assert after[:2] == [1, 2]
    assert "reading: the daemon did not stop cleanly; starting from initial_state" in log


def test_a_changed_state_of_an_every_change_sense_survives_sigkill(tmp_path: Path) -> None:
    ws = _reading_workspace(tmp_path, records="changes")
    with started(ws) as d:
        d.wait_for(lambda: len(_reading_counts(d)) >= 5, what="5 computes")
        _sigkill(d)
    killed_at = max(_reading_counts(d))
    with started(ws) as d:
        d.wait_for(lambda: len(_reading_counts(d)) > killed_at + 1, what="2 computes after restart")
    counts = _reading_counts(d)
    assert counts == list(range(1, len(counts) + 1))  # every change was stored


def test_a_bad_state_records_value_is_a_load_error_naming_the_file(tmp_path: Path) -> None:
    ws = _reading_workspace(tmp_path, records="sometimes")
    with started(ws) as d:
        errors = d.wait_for(lambda: d.events("sense.error", "reading"), what="the load error")
    error = errors[0]["data"]
    assert error["kind"] == "load" and "reading/sense.py" in error["error"]
    assert "state_records must be 'changes' or 'checkpoints', got 'sometimes'" in error["error"]
    assert not d.events("observation", "reading")


def _sigkill(d: Daemon) -> None:
    pid = d.pid()
    os.kill(pid, signal.SIGKILL)
    d.wait_for(lambda: _gone(pid), what="the killed daemon to exit")


def _gone(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    return False


SLOW = """
import time
from pathlib import Path
from nerve import Observation, Result
initial_state = {"n": 0}
def compute(state):
    (Path(__file__).parent / "started").write_text("x")
    time.sleep(1.0)
    n = state["n"] + 1
    return Result(state={"n": n}, observations=[Observation(source="endpoint", line=f"done {n}")])
"""


def test_a_compute_running_at_stop_is_stored_not_dropped(tmp_path: Path) -> None:
    (tmp_path / "senses" / "slow").mkdir(parents=True)
    (tmp_path / "senses" / "slow" / "sense.py").write_text(SLOW)
    (tmp_path / "nerve.yaml").write_text("senses:\n  slow: {group: a, interval: 1h}\n")
    started_mark = tmp_path / "senses" / "slow" / "started"
    with started(tmp_path) as d:
        d.wait_for(lambda: d.events("observation", "slow"), what="the first compute")
        started_mark.unlink()
        d.request({"type": "trigger-sense", "sense": "slow"})
        d.wait_for(started_mark.exists, what="the second compute to start")
        d.stop()  # while it sleeps
    lines = [e["line"] for e in d.events("observation", "slow")]
    assert lines == ["done 1", "done 2"]
    states = d.events("sense.state", "slow")
    assert states[-1]["data"]["state"] == {"n": 2}


def test_the_bench_compares_insert_rates_only_like_for_like() -> None:
    import importlib.util
    import io

    path = Path(__file__).resolve().parents[2] / "bench" / "footprint_bench.py"
    spec = importlib.util.spec_from_file_location("footprint_bench_render", path)
    assert spec is not None and spec.loader is not None
    bench = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = bench
    spec.loader.exec_module(bench)
    side = {"bytes_per_event": 1.0, "inserts_per_s": 10, "query_ms": 1.0}
    ratios = {
        "bytes_per_event": 0.1,
        "insert_rate": 1.5,
        "insert_rate_durable": 1.2,
        "insert_rate_table": 0.3,
        "query_latency": 0.5,
    }
    peer = {
        "stream_events": 1, "nerve": side, "nerve_fsync": side, "nerve_table": side,
        "aw": side, "aw_eager": side, "ratios": ratios,
        "codecs": {"rows": 1, "bytes_per_event": {}},
    }  # fmt: skip
    out = io.StringIO()
    bench.render_peer(peer, out)
    text = out.getvalue()
    assert "durable: nerve `fsync` / aw-core a commit per insert: 1.2" in text
    assert "buffered: nerve `os` / aw-core lazy commits: 1.5" in text
    assert "power loss" in text and "up to 50 inserts" in text  # what each side promises
