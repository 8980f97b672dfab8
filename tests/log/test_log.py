from __future__ import annotations

import multiprocessing
import os
import threading
import time
from pathlib import Path

import blake3
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from nerve.clock import Hlc
from nerve.errors import LogCorrupt, OrderError, WriterLocked
from nerve.events import Event
from nerve.log.codec import fixed_bytes
from nerve.log.drafts import Draft
from nerve.log.reader import events_since, replay_digest, snapshot, table_since
from nerve.log.store import EventLog
from nerve.log.verify import verify
from tests.helpers.crypt import encrypt_log


@pytest.fixture(params=["plain", "encrypted"])
def log_root(
    request: pytest.FixtureRequest, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> Path:
    """Each test runs on a plain log and on an encrypted one (nerve.log.crypt)."""
    root = tmp_path / "log"
    return encrypt_log(root, monkeypatch) if request.param == "encrypted" else root


def fill(log: EventLog, count: int, prefix: str = "e") -> list[bytes]:
    table = log.append_drafts(
        [Draft.of(source=i % 10, line=f"{prefix}{i}", payload={"i": i}) for i in range(count)]
    )
    return [fixed_bytes(table.column("id"))[i * 32 : i * 32 + 32] for i in range(count)]


def test_append_is_readable_and_survives_reopen(log_root: Path) -> None:
    with EventLog(log_root, node="n") as log:
        ev = log.append("observation", source=5, line="ls", payload={"cmd": "ls"})
        assert ev.json_payload() == {"cmd": "ls"}
        ids = [ev.id, *fill(log, 5)]
        newest = log.newest
    with EventLog(log_root, node="n") as log:
        assert log.newest == newest
        later = log.append(source=0, line="later")
        assert later.hlc > newest  # clock seeded past the stored max
    got = [e.id for e in events_since(log_root)]
    assert got == [*ids, later.id]


def test_seal_moves_the_tail_into_a_segment(log_root: Path) -> None:
    with EventLog(log_root, node="n") as log:
        fill(log, 10)
        info = log.seal()
        assert info is not None and info.rows == 10
        assert log.seal() is None
        fill(log, 3, "t")
    snap = snapshot(log_root)
    assert [s.rows for s in snap.segments] == [10] and snap.tail.num_rows == 3
    assert (log_root / "segments" / f"{info.name}.parquet").exists()
    assert (
        blake3.blake3((log_root / "segments" / f"{info.name}.parquet").read_bytes()).hexdigest()
        == info.name
    )
    assert not any(
        p.stat().st_size > 16 and p.name.startswith("0000000000000001")
        for p in (log_root / "wal").iterdir()
    )


def test_seal_by_size_and_by_age(log_root: Path) -> None:
    clock = [0]
    with EventLog(
        log_root, node="n", seal_max_events=4, seal_max_age_ns=100, now_ns=lambda: clock[0]
    ) as log:
        fill(log, 5)
        assert len(snapshot(log_root).segments) == 1
        fill(log, 1)
        assert log.maybe_seal() is None
        clock[0] = 1_000
        assert log.maybe_seal() is not None


def test_seal_due_says_how_long_a_daemon_may_sleep(log_root: Path) -> None:
    clock = [0]
    with EventLog(
        log_root,
        node="n",
        seal_max_events=4,
        seal_max_age_ns=100,
        now_ns=lambda: clock[0],
        background_seal=True,
    ) as log:
        assert log.seal_due_in_ns() is None  # nothing to seal: sleep until a commit
        clock[0] = 10
        fill(log, 1)
        clock[0] = 40
        assert log.seal_due_in_ns() == 70  # the age limit, counted from the first row
        fill(log, 3)
        assert log.seal_due_in_ns() == 0  # the size limit
        assert log.maybe_seal() is not None
        assert log.seal_due_in_ns() is None


def test_events_since_is_strict_and_ordered(log_root: Path) -> None:
    with EventLog(log_root, node="n") as log:
        fill(log, 5)
        log.seal()
        fill(log, 5, "t")
    all_events = list(events_since(log_root))
    middle = all_events[4].hlc
    assert [e.line for e in events_since(log_root, middle)] == [e.line for e in all_events[5:]]
    stamps = [e.hlc for e in all_events]
    assert stamps == sorted(stamps) and len(set(stamps)) == len(stamps)


def test_second_writer_is_refused_naming_the_holder(log_root: Path) -> None:
    with EventLog(log_root, node="n"), pytest.raises(WriterLocked, match=f"pid {os.getpid()}"):
        EventLog(log_root, node="n")
    with EventLog(log_root, node="n"):
        pass  # released on close


def _hold_lock(
    root: str, ready: multiprocessing.synchronize.Event, done: multiprocessing.synchronize.Event
) -> None:
    with EventLog(Path(root), node="other"):
        ready.set()
        done.wait(10)


def test_second_writer_in_another_process(log_root: Path) -> None:
    ctx = multiprocessing.get_context("spawn")
    ready, done = ctx.Event(), ctx.Event()
    proc = ctx.Process(target=_hold_lock, args=(str(log_root), ready, done))
    proc.start()
    try:
        assert ready.wait(20)
        with pytest.raises(WriterLocked, match=f"pid {proc.pid}"):
            EventLog(log_root, node="n")
    finally:
        done.set()
        proc.join(10)


def _imported(events: list[Event], node: str = "remote") -> list[Event]:
    return [
        Event(hlc=Hlc(10**12 + i, 0), node=node, kind="observation", line=f"r{i}")
        for i in range(len(events))
    ]


def test_import_requires_strictly_later_stamps_and_appends_nothing_on_error(log_root: Path) -> None:
    remote = [
        Event(hlc=Hlc(10**12 + i, 0), node="remote", kind="observation", line=f"r{i}")
        for i in range(3)
    ]
    with EventLog(log_root, node="n") as log:
        assert log.import_events(remote) == 3
        with pytest.raises(OrderError, match="not after the log's newest"):
            log.import_events(remote)
        out_of_order = [
            Event(hlc=Hlc(2 * 10**12, 0), node="r", kind="observation"),
            Event(hlc=Hlc(2 * 10**12 - 1, 0), node="r", kind="observation"),
        ]
        with pytest.raises(OrderError, match="event 2"):
            log.import_events(out_of_order)
    assert [e.line for e in events_since(log_root)] == ["r0", "r1", "r2"]


@given(st.lists(st.integers(1, 40), min_size=1, max_size=6), st.booleans())
@settings(
    max_examples=15, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
def test_digest_is_independent_of_segmentation_and_compaction(
    tmp_path_factory: pytest.TempPathFactory, splits: list[int], compact: bool
) -> None:
    events = [
        Event(
            hlc=Hlc(10**15 + i, i % 3),
            node="n",
            kind="observation",
            source=i % 10,
            line=f"x{i}",
            payload=bytes([i % 256]),
        )
        for i in range(sum(splits))
    ]
    expected = blake3.blake3(b"".join(e.id for e in events)).hexdigest()
    root = tmp_path_factory.mktemp("seg") / "log"
    with EventLog(root, node="n") as log:
        start = 0
        for size in splits:
            log.import_events(events[start : start + size])
            log.seal()
            start += size
        if compact:
            log.compact(target_rows=25)
    assert replay_digest(root).digest == expected
    report = verify(root)
    assert report.ok and report.digest == expected and report.events == len(events)


def test_compaction_merges_into_one_step_per_run(log_root: Path) -> None:
    with EventLog(log_root, node="n") as log:
        for _ in range(5):
            fill(log, 10)
            log.seal()
        before = replay_digest(log_root)
        result = log.compact()
        assert (result.merged, result.written, result.rows) == (5, 1, 50)
    assert replay_digest(log_root) == before
    assert [s.rows for s in snapshot(log_root).segments] == [50]
    lines = (log_root / "manifest.jsonl").read_text().splitlines()
    assert '"op":"compact"' in lines[-1] and len(lines) == 6


def test_readers_run_while_a_writer_appends_and_seals(log_root: Path) -> None:
    """Every read during appends, seals and a compaction is a prefix of the final log that
    holds at least every event acknowledged before the read began: no row lost, doubled or
    out of order, and each reader's view only grows."""
    stop = threading.Event()
    acked: list[bytes] = []  # ids the writer got back, in order
    views: dict[int, list[tuple[int, bytes]]] = {0: [], 1: []}  # per reader: (acked before, ids)
    errors: list[BaseException] = []

    def reader(which: int) -> None:
        while not stop.is_set():
            try:
                before = len(acked)
                table = table_since(snapshot(log_root))
                views[which].append((before, fixed_bytes(table.column("id"))))
            except BaseException as exc:
                errors.append(exc)
                return

    with EventLog(log_root, node="n", seal_max_events=50) as log:
        acked += fill(log, 1)
        threads = [threading.Thread(target=reader, args=(i,)) for i in views]
        for t in threads:
            t.start()
        for _ in range(40):
            acked += fill(log, 7)
        log.compact(target_rows=200)
        marks = {which: len(seen) for which, seen in views.items()}
        deadline = time.monotonic() + 30  # each reader reads again after the compaction
        while time.monotonic() < deadline and not errors:
            if all(len(views[w]) > marks[w] for w in views):
                break
            time.sleep(0.01)
        stop.set()
        for t in threads:
            t.join()
    assert not errors, errors
    final = fixed_bytes(table_since(snapshot(log_root)).column("id"))
    assert final == b"".join(acked) and len(final) == 281 * 32
    for which, seen in views.items():
        assert len(seen) >= 2, f"reader {which} read only {len(seen)} times"
        sizes = [len(ids) // 32 for _, ids in seen]
        assert sizes == sorted(sizes), f"reader {which} saw the log shrink: {sizes}"
        for before, ids in seen:
            assert final.startswith(ids), f"reader {which}: a read is not a prefix of the log"
            assert len(ids) >= before * 32, f"reader {which}: {before} acked, read {len(ids) // 32}"
    assert any(0 < len(ids) < len(final) for s in views.values() for _, ids in s), (
        "no read overlapped the writes"
    )


def test_torn_wal_tail_is_truncated_on_open(log_root: Path) -> None:
    with EventLog(log_root, node="n") as log:
        ids = fill(log, 3)
    wal = next((log_root / "wal").iterdir())
    with wal.open("ab") as f:
        f.write(b"NFR1\x00\x00\x10\x00partial")
    with EventLog(log_root, node="n") as log:
        more = fill(log, 1)
    assert [e.id for e in events_since(log_root)] == [*ids, *more]
    assert verify(log_root).ok


def test_a_damaged_frame_before_good_ones_refuses_to_open(log_root: Path) -> None:
    with EventLog(log_root, node="n") as log:
        fill(log, 2)
        fill(log, 2)
    wal = next((log_root / "wal").iterdir())
    data = bytearray(wal.read_bytes())
    data[40] ^= 0xFF
    wal.write_bytes(bytes(data))
    with pytest.raises(LogCorrupt, match="later frames are intact"):
        EventLog(log_root, node="n")


def test_interrupted_seal_states_recover_without_loss_or_duplicates(log_root: Path) -> None:
    with EventLog(log_root, node="n") as log:
        ids = fill(log, 6)
    # 1. a half-written temp file is debris; a file that does not verify is kept aside.
    (log_root / "segments" / ("ab" * 32 + ".parquet")).write_bytes(b"orphan")
    (log_root / "segments" / ".tmp-deadbeef.parquet").write_bytes(b"half")
    with EventLog(log_root, node="n") as log:
        pass
    assert sorted(p.name for p in (log_root / "segments").iterdir()) == []
    assert [p.name for p in (log_root / "quarantine").iterdir()] == ["ab" * 32 + ".parquet"]
    events = list(events_since(log_root))
    assert [e.kind for e in events[6:]] == ["log.recovered"]
    ids = [e.id for e in events]
    digest = replay_digest(log_root)
    # 2. sealed and recorded, but the old WAL was not deleted yet.
    with EventLog(log_root, node="n") as log:
        wal = sorted((log_root / "wal").iterdir())[0]
        saved = wal.read_bytes()
        log.seal()
    wal.write_bytes(saved)
    with EventLog(log_root, node="n"):
        pass
    assert replay_digest(log_root) == digest
    assert [e.id for e in events_since(log_root)] == ids
    # 3. a torn manifest line (the crash hit mid-record) is ignored and later overwritten.
    with (log_root / "manifest.jsonl").open("ab") as f:
        f.write(b'{"add":[{"segm')
    with EventLog(log_root, node="n") as log:
        fill(log, 2)
        log.seal()
    assert verify(log_root).ok and len(list(events_since(log_root))) == 9
