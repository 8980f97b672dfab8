"""The shared digest the daemon keeps across rounds (``SharedTally``: only new events read,
one running LtHash sum per log) is the digest computed afresh, whatever happens to the logs
between rounds: appends, a seal and compaction, old segments archived, an erasure, a peer's
events arriving, the stored tallies lost or torn; and the multiset hash does not depend on
the order events arrive in."""

from __future__ import annotations

import os
import random
import tempfile
from pathlib import Path

import pyarrow.compute as pc
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from nerve.clock import Hlc
from nerve.events import Event
from nerve.log.drafts import Draft
from nerve.log.reader import events_since
from nerve.log.store import EventLog
from nerve.sync import lthash
from nerve.sync.group import Group, Transport
from nerve.sync.history import SharedTally, shared_digest
from nerve.sync.ops import engine_for
from nerve.workspace import WorkspaceDir
from tests.sync.conftest import device, emit


def _fresh(ws: WorkspaceDir) -> tuple[str, int]:
    engine = engine_for(ws, Group.new("g", Transport("nats", "nats://x"), "d"))
    found = shared_digest(ws.log_root, ws.node, engine.sharing, engine.folder)
    return found.digest, found.events


def _tally(ws: WorkspaceDir) -> SharedTally:
    engine = engine_for(ws, Group.new("g", Transport("nats", "nats://x"), "d"))
    return SharedTally(engine.folder, ws.log_root, ws.node, engine.sharing)


def _kept(tally: SharedTally) -> tuple[str, int]:
    found = tally.read()
    return found.digest, found.events


def test_the_kept_digest_is_the_fresh_one_through_appends_imports_and_erasures(
    tmp_path: Path,
) -> None:
    ws = device(tmp_path, "alpha")
    tally = _tally(ws)
    assert _kept(tally) == _fresh(ws) and _fresh(ws)[1] == 0
    emit(ws, 30, "first")
    assert _kept(tally) == _fresh(ws) and _fresh(ws)[1] == 30
    emit(ws, 5, "second")
    with ws.open_log() as log:
        log.seal()
        log.compact(target_rows=1000)
    assert _kept(tally) == _fresh(ws) and _fresh(ws)[1] == 35
    with ws.open_log() as log:
        log.erase(lambda t: pc.equal(t.column("line"), "first 3"), reason="test", selection={})
    assert _kept(tally) == _fresh(ws) and _fresh(ws)[1] == 34
    with ws.open_log() as log:
        log.append_drafts([Draft.of("observation", line="third")])
        log.seal()
        log.archive(Hlc(2**62, 0), tmp_path / "archive", vacuum=True)
    assert _kept(tally) == _fresh(ws) and _fresh(ws)[1] == 0
    emit(ws, 2, "fourth")
    assert _kept(tally) == _fresh(ws) and _fresh(ws)[1] == 2


def test_a_round_with_nothing_new_reads_no_log(tmp_path: Path, monkeypatch: object) -> None:
    from nerve.log import reader

    ws = device(tmp_path, "alpha")
    emit(ws, 10, "first")
    tally = _tally(ws)
    before = _kept(tally)
    calls: list[Path] = []
    real = reader.snapshot

    def counted(root: Path, previous: reader.Snapshot | None = None) -> reader.Snapshot:
        calls.append(root)
        return real(root, previous)

    monkeypatch.setattr(reader, "snapshot", counted)  # type: ignore[attr-defined]
    assert _kept(tally) == before and calls == []
    emit(ws, 1, "second")
    assert _kept(tally) == _fresh(ws) and calls


# -- property: random histories -------------------------------------------------------------

_STEP = st.one_of(
    st.tuples(st.just("emit"), st.integers(1, 40)),
    st.tuples(st.just("peer"), st.integers(1, 40)),
    st.tuples(st.just("seal"), st.just(0)),
    st.tuples(st.just("compact"), st.just(0)),
    st.tuples(st.just("erase"), st.integers(0, 10**6)),
    st.tuples(st.just("archive"), st.just(0)),
    st.tuples(st.just("forget"), st.just(0)),
    st.tuples(st.just("reopen"), st.just(0)),
)


def _peer_events(ws: WorkspaceDir, folder: Path, count: int) -> None:
    """``count`` events of node ``beta`` into a peer log, as the engine stores them."""
    source = ws.root.parent / "beta-src"
    with EventLog(source, node="beta") as log:
        log.append_drafts([Draft.of("observation", line=f"b {i}") for i in range(count)])
    root = folder / "peers" / "p0" / "log"
    root.parent.mkdir(parents=True, exist_ok=True)
    with EventLog(root, node="alpha") as peer:
        held = peer.newest
        peer.import_events([e for e in events_since(source) if e.hlc > held])


def _apply(ws: WorkspaceDir, tally: SharedTally, step: tuple[str, int], n: int) -> SharedTally:
    what, arg = step
    folder = ws.data / "sync"
    if what == "emit":
        emit(ws, arg, f"e{n}")
    elif what == "peer":
        _peer_events(ws, folder, arg)
    elif what in ("seal", "compact"):
        with ws.open_log() as log:
            log.seal()
            if what == "compact":
                log.compact(target_rows=1000)
    elif what == "erase":
        lines = [e.line for e in events_since(ws.log_root) if isinstance(e, Event)]
        if lines:
            gone = random.Random(arg).choice(lines)
            with ws.open_log() as log:
                log.erase(lambda t: pc.equal(t.column("line"), gone), reason="t", selection={})
    elif what == "archive":
        with ws.open_log() as log:
            log.seal()
            log.archive(Hlc(2**62, 0), ws.root.parent / f"archive{n}", vacuum=True)
    elif what == "forget":
        (folder / "digest.json").unlink(missing_ok=True)
        return _tally(ws)
    elif what == "reopen":
        return _tally(ws)
    return tally


@settings(
    max_examples=12, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(steps=st.lists(_STEP, min_size=1, max_size=7))
def test_the_kept_digest_equals_a_full_recomputation_after_any_steps(
    steps: list[tuple[str, int]],
) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        ws = device(Path(tmp), "alpha")
        tally = _tally(ws)
        for n, step in enumerate(steps):
            tally = _apply(ws, tally, step, n)
            assert _kept(tally) == _fresh(ws), steps[: n + 1]


@given(st.lists(st.binary(min_size=32, max_size=32), max_size=40), st.randoms())
def test_the_multiset_hash_ignores_order_and_adds_up(ids: list[bytes], rnd: random.Random) -> None:
    whole = lthash.add_ids(lthash.zero(), b"".join(ids))
    shuffled = list(ids)
    rnd.shuffle(shuffled)
    cut = rnd.randint(0, len(ids))
    parts = lthash.add_ids(
        lthash.add_ids(lthash.zero(), b"".join(shuffled[:cut])), b"".join(shuffled[cut:])
    )
    assert (whole == parts).all()
    assert lthash.from_bytes(lthash.to_bytes(whole)).tolist() == whole.tolist()
    if ids:
        assert not (whole == lthash.add_ids(whole, os.urandom(32))).all()
