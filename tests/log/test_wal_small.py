"""Small WAL frames (CBOR rows, frame magic ``NFR2``, version 2 files) beside Arrow frames:
round trips, torn tails, old version 1 files, junk bodies, and the same stored rows as the
Arrow path."""

from __future__ import annotations

import dataclasses
import os
import struct
import tempfile
import time
import zlib
from pathlib import Path

import cbor2
import pyarrow as pa
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from nerve.clock import HybridClock
from nerve.errors import LogCorrupt
from nerve.log import codec, segments, store, unsealed, wal
from nerve.log.fields import EventFields
from nerve.log.reader import TailReader, snapshot, table_since
from nerve.log.store import EventLog
from nerve.log.verify import verify

T0 = time.time_ns()  # the clocks below stand still here (batch keys are kept 24 h)


def _log(root: Path, **kw: object) -> EventLog:
    clock = HybridClock(lambda: T0)
    return EventLog(root, node="n", durability="os", clock=clock, seal_max_events=10**9, **kw)  # type: ignore[arg-type]


def _columns(lines: list[str], source: int = 7) -> EventFields:
    return EventFields(
        kind=["observation"] * len(lines),
        subject=["cpu"] * len(lines),
        source=[source] * len(lines),
        trust=[1] * len(lines),
        valid_time_ns=[None if i % 2 else T0 + i for i in range(len(lines))],
        payload=[f'{{"i":{i}}}'.encode() for i in range(len(lines))],
        line=lines,
    )


def _wal(root: Path) -> Path:
    return sorted((root / "wal").iterdir())[-1]


def _frames(path: Path) -> list[tuple[int, int]]:
    """(magic, byte offset) of every frame in a WAL file, read without nerve's scanner."""
    data = path.read_bytes()
    out, pos = [], 16
    while pos + 12 <= len(data):
        magic, length, _ = struct.unpack_from(">III", data, pos)
        out.append((magic, pos))
        pos += 12 + length
    return out


def _unsealed(log: EventLog) -> pa.Table:
    return pa.concat_tables(log._unsealed())


def test_small_batches_round_trip_through_small_frames(tmp_path: Path) -> None:
    root = tmp_path / "log"
    with _log(root) as log:
        returned = [log.append_columns(_columns([f"a{i}" for i in range(n)])) for n in (1, 3)]
        assert log.append_count(_columns(["c0", "c1"])) == 2
        written = _unsealed(log)
    path = _wal(root)
    assert path.read_bytes()[4:8] == struct.pack(">I", wal.VERSION) == b"\0\0\0\x02"
    assert [m for m, _ in _frames(path)] == [wal.SMALL_MAGIC] * 3
    assert written.num_rows == 6
    assert written.slice(0, 4).equals(pa.concat_tables(returned))
    assert codec.ids_of(written) == codec.fixed_bytes(written.column("id"))
    scanned = wal.scan(path)
    assert scanned.frames == 3 and len(scanned.tables) == 1  # a run of small frames: one table
    assert scanned.table().equals(written)
    assert TailReader(root).poll().equals(written)
    with _log(root) as log:  # recovery reads the frames back
        assert _unsealed(log).equals(written)
        log.seal()
    assert verify(root).ok


def test_a_torn_small_frame_is_cut_and_the_ones_before_it_kept(tmp_path: Path) -> None:
    root = tmp_path / "log"
    with _log(root) as log:
        for i in range(3):
            log.append_count(_columns([f"x{i}"]))
        kept = _unsealed(log).slice(0, 2)
    path = _wal(root)
    last = _frames(path)[-1][1]
    os.truncate(path, path.stat().st_size - 5)  # the last append, half written
    assert any("torn final frame" in str(w) for w in verify(root).warnings)
    with _log(root) as log:
        assert _unsealed(log).equals(kept)
        assert path.stat().st_size == last  # cut back to the last whole frame
        log.append_count(_columns(["after"]))
        lines = _unsealed(log).column("line").to_pylist()
    assert lines == ["x0", "x1", "after"]


def _as_version_1(path: Path) -> pa.Table:
    """Rewrite a generation as an older writer left it: version 1, Arrow frames only."""
    table = wal.scan(path).table()
    header = struct.pack(">4sIQ", wal.FILE_MAGIC, 1, wal.wal_gen(path) or 0)
    halves = [table.slice(0, 1), table.slice(1)]
    path.write_bytes(header + b"".join(wal.encode_frame(t) for t in halves))
    return table


def test_a_version_1_file_is_read_and_appended_to_with_arrow_frames(tmp_path: Path) -> None:
    root = tmp_path / "log"
    with _log(root) as log:
        log.append_count(_columns(["old0", "old1"]))
    old = _as_version_1(_wal(root))
    with _log(root) as log:
        assert _unsealed(log).equals(old)
        log.append_count(_columns(["new0"]))
        log.append_columns(_columns([f"big{i}" for i in range(codec.SMALL_BATCH + 1)]))
        written = _unsealed(log)
    path = _wal(root)
    assert path.read_bytes()[4:8] == b"\0\0\0\x01"  # still readable by an older nerve
    assert {m for m, _ in _frames(path)} == {wal.FRAME_MAGIC}
    with _log(root) as log:
        assert _unsealed(log).equals(written)
        log.seal()
        log.append_count(_columns(["next"]))  # a new generation: version 2, small frames
    assert _wal(root).read_bytes()[4:8] == b"\0\0\0\x02"
    assert [m for m, _ in _frames(_wal(root))] == [wal.SMALL_MAGIC]


def test_a_file_mixing_arrow_and_small_frames_reads_in_commit_order(tmp_path: Path) -> None:
    root = tmp_path / "log"
    big = [f"big{i}" for i in range(codec.SMALL_BATCH + 4)]
    with _log(root) as log:
        log.append_count(_columns(["s0"]))
        log.append_count(_columns(big))  # more than SMALL_BATCH rows: an Arrow frame
        log.append_count(_columns(["s1", "s2"]))
        log.append_drafts([store.Draft.of(line="keyed")], key="k1")  # keyed: an Arrow frame
        log.append_count(_columns(["s3"]))
        written = _unsealed(log)
    small, arrow = wal.SMALL_MAGIC, wal.FRAME_MAGIC
    assert [m for m, _ in _frames(_wal(root))] == [small, arrow, small, arrow, small]
    lines = written.column("line").to_pylist()
    assert lines[:1] == ["s0"] and lines[1 : 1 + len(big)] == big
    assert lines[1 + len(big) :][:2] == ["s1", "s2"] and lines[-1] == "s3"
    with _log(root) as log:
        assert _unsealed(log).equals(written)
        assert log.append_drafts([store.Draft.of(line="again")], key="k1").num_rows == 1
        info = log.seal()
    assert info is not None and info.rows == written.num_rows
    assert verify(root).ok


def _with_frame(root: Path, body: bytes, magic: int = wal.SMALL_MAGIC) -> tuple[Path, int]:
    path = _wal(root)
    offset = path.stat().st_size
    with open(path, "ab") as f:
        f.write(struct.pack(">III", magic, len(body), zlib.crc32(body)) + body)
    return path, offset


_GOOD_ROW = [T0, 0, "n", "observation", "cpu", 7, 1, None, b"c" * 32, b"{}", "l", b"i" * 32]


@pytest.mark.parametrize(
    ("body", "says"),
    [
        (b"\xff\xfe junk", "no readable CBOR rows"),
        (cbor2.dumps([_GOOD_ROW]) + b"\x00", "1 bytes follow its rows"),
        (cbor2.dumps({"rows": 1}), "not a list of rows"),
        (cbor2.dumps([]), "not a list of rows"),
        (cbor2.dumps([_GOOD_ROW[:11]]), "row 0 does not match"),
        (cbor2.dumps([_GOOD_ROW, [*_GOOD_ROW[:5], "7", *_GOOD_ROW[6:]]]), "row 1 does not match"),
        (cbor2.dumps([[*_GOOD_ROW[:8], b"short", *_GOOD_ROW[9:]]]), "row 0 does not match"),
        (cbor2.dumps([[*_GOOD_ROW[:1], 2**32, *_GOOD_ROW[2:]]]), "row 0 does not match"),
        (cbor2.dumps([[2**64, *_GOOD_ROW[1:]]]), "row 0 does not match"),
    ],
    ids=lambda value: None if isinstance(value, str) else "body",  # bodies hold a clock stamp
)
def test_junk_in_a_small_frame_is_refused_naming_the_file_and_byte(
    tmp_path: Path, body: bytes, says: str
) -> None:
    root = tmp_path / "log"
    with _log(root) as log:
        log.append_count(_columns(["fine"]))
    path, offset = _with_frame(root, body)
    with pytest.raises(LogCorrupt, match=f"{path.name}: frame at byte {offset} .*{says}") as exc:
        _log(root)
    assert str(path) in str(exc.value)
    with pytest.raises(LogCorrupt, match=f"frame at byte {offset}"):
        TailReader(root).poll()
    assert any(f"byte {offset}" in str(p) for p in verify(root).problems)


def test_a_good_small_frame_decodes_and_one_in_a_version_1_file_is_damage(
    tmp_path: Path,
) -> None:
    root = tmp_path / "log"
    with _log(root) as log:
        log.append_count(_columns(["fine"]))
    _with_frame(root, cbor2.dumps([_GOOD_ROW]))
    with _log(root) as log:
        assert _unsealed(log).column("line").to_pylist() == ["fine", "l"]
    _as_version_1(_wal(root))
    _, offset = _with_frame(root, cbor2.dumps([_GOOD_ROW]))
    with pytest.raises(LogCorrupt, match=f"damaged bytes from byte {offset}"):
        _log(root)


_batches = st.lists(
    st.lists(
        st.tuples(
            st.sampled_from(["observation", "sense.state"]),
            st.text(max_size=5),
            st.sampled_from([0, 7, 1024, 2**32 - 1]),
            st.integers(0, 3),
            st.none() | st.integers(-(2**63), 2**63 - 1),
            st.binary(max_size=30),
            st.text(max_size=12),
        ),
        min_size=1,
        max_size=codec.SMALL_BATCH,
    ),
    min_size=1,
    max_size=6,
)


def _store(root: Path, batches: list[list[tuple[object, ...]]]) -> tuple[pa.Table, pa.Table]:
    """What the log holds after appending ``batches``: in memory, then read back."""
    with _log(root) as log:
        for batch in batches:
            kind, subject, source, trust, vt, payload, line = (
                list(c) for c in zip(*batch, strict=True)
            )
            log.append_count(
                EventFields(
                    kind=kind,
                    subject=subject,
                    source=source,
                    trust=trust,
                    valid_time_ns=vt,
                    payload=payload,
                    line=line,
                )
            )
        written = _unsealed(log)
    with _log(root) as log:
        return written, _unsealed(log)


@given(_batches)
@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
def test_the_small_path_stores_the_rows_the_arrow_path_stores(
    batches: list[list[tuple[object, ...]]],
) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        small, small_read = _store(Path(tmp) / "small", batches)
        saved = store.SMALL_BATCH
        store.SMALL_BATCH = codec.SMALL_BATCH = 0  # every batch: Arrow kernels, Arrow frames
        try:
            wide, wide_read = _store(Path(tmp) / "wide", batches)
        finally:
            store.SMALL_BATCH = codec.SMALL_BATCH = saved
        assert {m for m, _ in _frames(_wal(Path(tmp) / "wide"))} == {wal.FRAME_MAGIC}
        assert {m for m, _ in _frames(_wal(Path(tmp) / "small"))} == {wal.SMALL_MAGIC}
    assert small.equals(wide) and small_read.equals(wide_read) and small.equals(small_read)


def test_small_frames_hold_canonical_cbor() -> None:
    rows = codec.small_rows((T0, 3, 2), node="n", fields=_columns(["a", "b"]))
    frame = wal.encode_small_frame(rows)
    assert frame[12:] == cbor2.dumps(rows, canonical=True)
    assert wal.decode_small(frame[12:], Path("x.wal"), 16) == rows


def test_append_count_hands_hooks_the_stored_rows_and_refuses_bad_values(tmp_path: Path) -> None:
    root = tmp_path / "log"
    seen: list[pa.Table] = []
    with _log(root) as log:
        log.append_count(_columns(["quiet"]))  # no hook: no table is built
        log.on_commit.append(seen.append)
        assert log.append_count(_columns(["a", "b"])) == 2
        size = _wal(root).stat().st_size
        for column, bad in [("source", 2**32), ("trust", 256), ("valid_time_ns", 2**63)]:
            columns = dataclasses.replace(_columns(["bad"]), **{column: [bad]})
            with pytest.raises((pa.ArrowInvalid, OverflowError)):
                log.append_count(columns)
        assert _wal(root).stat().st_size == size  # nothing of a refused batch was written
        # the Arrow path takes bytes as text: so here
        converted = dataclasses.replace(_columns(["?"]), line=[b"utf-8 bytes"])
        log.append_count(converted)
        stored = _unsealed(log)
    assert len(seen) == 2 and pa.concat_tables(seen).equals(stored.slice(1))
    assert stored.column("line").to_pylist() == ["quiet", "a", "b", "utf-8 bytes"]


def test_commit_tables_are_merged_in_order_and_read_and_sealed_the_same(tmp_path: Path) -> None:
    """Many commits' tables, small and large, are merged a run at a time (a seal frees a few
    tables, not one per commit); the tail reads and seals the same rows in the same order."""
    root = tmp_path / "log"
    big = codec.SMALL_BATCH + 1
    with _log(root) as log:
        for i in range(2 * unsealed.MERGE_TABLES + 5):
            n = big if i % 3 else 2  # large commits with small ones (kept as rows) between
            log.append_columns(_columns([f"c{i}.{j}" for j in range(n)]))
        pieces = log._unsealed()
        assert len(pieces) < unsealed.MERGE_TABLES  # one per commit would be 133
        written = pa.concat_tables(pieces)
        expected = [f"c{i}.{j}" for i in range(133) for j in range(big if i % 3 else 2)]
        assert written.column("line").to_pylist() == expected
        assert TailReader(root).poll().equals(written)
        log.seal()
    assert table_since(snapshot(root)).equals(written)
    assert verify(root).ok


def test_of_kind_picks_one_kind_s_rows_in_order_and_none_when_absent(tmp_path: Path) -> None:
    with _log(tmp_path / "log") as log:
        fields = dataclasses.replace(_columns(["a0", "b0", "a1"]), kind=["a", "b", "a"])
        table = log.append_columns(fields)
    picked = segments.of_kind(table, "a")
    assert picked is not None and picked.column("line").to_pylist() == ["a0", "a1"]
    assert segments.of_kind(table, "c") is None
