"""Projection digests: the same for the same events however they were segmented, compacted
or imported, and different when an event differs."""

from __future__ import annotations

import json
import tempfile
from pathlib import Path
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from nerve.events import NERVE_SOURCE, Event, SourceClass, Trust
from nerve.log.reader import replay_digest
from nerve.log.store import EventLog
from nerve.log.wire import event_from_json, event_to_json
from nerve.query import DEFAULT_SETTINGS, connect, projection_digest
from nerve.resources import bundled
from nerve.workspace import init_workspace
from tests.conftest import run_cli

T0 = 1_700_000_000_000_000_000
VIEWS = ("activity", "attention_budget", "salience", "sense_state", "workflow_runs")

_state = st.fixed_dictionaries(
    {"n": st.integers(-(2**62), 2**62), "f": st.floats(allow_nan=False, allow_infinity=False)}
)
_spec = st.one_of(
    st.tuples(st.just("observation"), st.sampled_from(list(SourceClass)), st.integers(0, 3)),
    st.tuples(st.just("sense.state"), st.sampled_from(["cpu", "disk", "ünï"]), _state),
    st.tuples(
        st.just("workflow.status"),
        st.sampled_from(["r1", "r2"]),
        st.sampled_from(["queued", "started", "completed"]),
    ),
    st.tuples(st.just("workflow.message"), st.sampled_from(["r1", "r2"]), st.just(None)),
    st.tuples(
        st.just("attention.decision"),
        st.sampled_from(["surface", "hold:value"]),
        st.integers(0, 10**6),
    ),
)


def _event(index: int, gap: int, spec: tuple[Any, ...]) -> Event:
    kind, a, b = spec
    hlc = (T0 + (index // 2) * gap, index % 2)  # pairs share a physical time
    if kind == "observation":
        return Event(hlc=hlc, node="n", kind=kind, source=int(a), trust=Trust(b),
                     line=f"obs {index}", payload={"i": index, "x": index / 7})  # fmt: skip
    payload: Any
    if kind == "sense.state":
        payload = {"state": b, "reason": "interval"}
    elif kind == "workflow.status":
        payload = {"status": b, "workflow": "w", "request": {"prompt": "p", "max_rounds": 3}}
    elif kind == "workflow.message":
        payload = {"role": "writer", "text": "t"}
    else:
        payload = {"outcome": a, "probe": "novelty", "value_milli": 700, "cost_milli": 100,
                   "charged_uj": b, "budget_before_uj": 10**6, "budget_after_uj": 10**6 - b,
                   "chain_seq": index}  # fmt: skip
    subject = a if kind != "attention.decision" else ""
    return Event(hlc=hlc, node="n", kind=kind, subject=subject, source=NERVE_SOURCE,
                 trust=Trust.FIRST_PARTY, line=f"{kind} {index}", payload=payload)  # fmt: skip


def _digests(root: Path) -> dict[str, Any]:
    conn = connect(root, [bundled("projections")], DEFAULT_SETTINGS)
    try:
        views = {name: projection_digest(conn, name) for name in VIEWS}
    finally:
        conn.close()
    return {"replay": replay_digest(root).digest, **views}


@settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    specs=st.lists(_spec, min_size=1, max_size=30),
    gap=st.sampled_from([1, 1_000_000_000, 45_000_000_000]),
    cuts=st.lists(st.integers(1, 29), max_size=4),
    compact=st.booleans(),
)
def test_digests_survive_segmentation_compaction_and_import(
    specs: list[tuple[Any, ...]], gap: int, cuts: list[int], compact: bool
) -> None:
    events = [_event(i, gap, spec) for i, spec in enumerate(specs)]
    with tempfile.TemporaryDirectory() as tmp:
        whole, split, wired = Path(tmp, "whole"), Path(tmp, "split"), Path(tmp, "wired")
        with EventLog(whole, node="a") as log:
            log.import_events(events)  # all in the unsealed tail
        with EventLog(split, node="b") as log:
            start = 0
            for cut in sorted({c for c in cuts if c < len(events)}):
                log.import_events(events[start:cut])
                log.seal()
                start = cut
            log.import_events(events[start:])
            log.seal()
            if compact:
                log.compact()
        copied = [event_from_json(json.loads(json.dumps(event_to_json(e)))) for e in events]
        with EventLog(wired, node="c") as log:
            log.import_events(copied)
        expected = _digests(whole)
        assert _digests(split) == expected
        assert _digests(wired) == expected


def test_a_changed_event_changes_its_projection_digest(tmp_path: Path) -> None:
    state = ("sense.state", "cpu", {"n": 1, "f": 0.5})
    events = [_event(0, 1, state), _event(1, 1, ("attention.decision", "surface", 5))]
    changed = [_event(0, 1, ("sense.state", "cpu", {"n": 1, "f": 0.25})), events[1]]
    for name, batch in (("a", events), ("b", changed)):
        with EventLog(tmp_path / name, node="n") as log:
            log.import_events(batch)
    a, b = _digests(tmp_path / "a"), _digests(tmp_path / "b")
    assert a["sense_state"] != b["sense_state"]
    assert a["attention_budget"] == b["attention_budget"] and a["replay"] != b["replay"]
    assert a["workflow_runs"] == (
        0,
        "af1349b9f5f9a1a6a0404dea36dcc9499bcb25c9adc112b7cc9a93cae41f3262",
    )


def test_replay_projections_from_the_cli(tmp_path: Path) -> None:
    ws = init_workspace(tmp_path / "ws")
    with EventLog(ws.log_root, node="n") as log:
        log.import_events([_event(0, 1, ("sense.state", "cpu", {"n": 1, "f": 1e-7}))])
    args = ("--workspace", str(ws.root), "replay", "--projections")
    report = json.loads(run_cli(*args, "--json").stdout)
    views = {v["name"]: v for v in report["projections"]}
    assert sorted(views) == sorted(VIEWS) and views["sense_state"]["rows"] == 1
    want = _digests(ws.log_root)["sense_state"]
    assert (views["sense_state"]["rows"], views["sense_state"]["digest"]) == want
    text = run_cli(*args).stdout
    assert f"projection sense_state: 1 rows, digest {want[1]}" in text
