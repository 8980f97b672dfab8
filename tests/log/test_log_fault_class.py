"""One I/O error at every durable syscall of append, seal, compact, forget, archive, repair,
and an import of a copied log with erasures.

Each operation runs once with every durable call recorded (``tests/helpers/syscalls.py``:
``os``'s write, fsync, fdatasync, ftruncate, rename, replace, unlink, mkdir and creating
opens, each named by the line of nerve making it). Then, for each recorded call, the
operation runs again on a fresh copy of the same log with exactly that call failing (EIO,
then ENOSPC), and once more with the disk breaking there (EIO at that call and at every
durable call after it: a failed fsync whose cut-back fails too). The process then "ends"
(the writer is dropped), and:

- the log opens again (a repair's log: after a clean repair), with no fault;
- every acknowledged event is stored exactly once; an append refused as "not stored" is not
  stored at all;
- ``verify`` finds no problem, and the operation, run again, completes.

The counts (faults per site, events acknowledged, lost, duplicated) are printed at the end.
"""

from __future__ import annotations

import collections
import contextlib
import errno
import functools
import json
import shutil
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import pyarrow as pa
import pyarrow.compute as pc
import pytest

from nerve.errors import NerveError
from nerve.log.drafts import Draft
from nerve.log.manifest import read_manifest
from nerve.log.reader import events_since
from nerve.log.segments import read_segment
from nerve.log.store import EventLog
from nerve.log.verify import verify
from nerve.log.wal import wal_name
from nerve.log.wire import event_to_json, stored_event_from_json
from tests.helpers import syscalls

# (errno, sticky): one call fails; or the disk breaks at that call and every later one fails
MODES = ((errno.EIO, False), (errno.ENOSPC, False), (errno.EIO, True))


def _open(root: Path, **kw: object) -> EventLog:
    return EventLog(root, node="f", seal_max_events=10**9, **kw)  # type: ignore[arg-type]


def _add(log: EventLog, start: int, count: int = 3) -> list[bytes]:
    drafts = [Draft.of(source=1, line=f"e{start + i}") for i in range(count)]
    return [bytes(x) for x in log.append_drafts(drafts).column("id").to_pylist()]


def _odd(table: pa.Table) -> pa.ChunkedArray:
    line = table.column("line")
    ours = pc.match_substring_regex(line, r"^e\d+$")
    numbers = pc.cast(pc.if_else(ours, pc.utf8_slice_codeunits(line, 1), "0"), pa.int64())
    return pc.equal(pc.bit_wise_and(numbers, 1), 1)


def _build(root: Path, *, tail: bool = True, retire_now: bool = False) -> list[bytes]:
    """Three sealed segments and (``tail``) an unsealed tail; the acknowledged ids."""
    acked: list[bytes] = []
    with _open(root) as log:
        for n in range(3):
            acked += _add(log, 3 * n)
            log.seal()
        if tail:
            acked += _add(log, 9)
        if retire_now:
            log.retire_grace_ns = 0
    return acked


@dataclass
class Op:
    """An operation under test: how to build its log, run it, and where its events are."""

    name: str
    build: Callable[[Path], list[bytes]]
    run: Callable[[Path], list[bytes]]  # returns ids it acknowledged
    repair: bool = False  # the log is damaged before the op (a repair's log)


def _log_root(ws: Path) -> Path:
    return ws / "data" / "log"


def _run_seal(ws: Path) -> list[bytes]:
    with _open(_log_root(ws)) as log:
        log.seal()
    return []


def _run_compact(ws: Path) -> list[bytes]:
    with _open(_log_root(ws), retire_grace_ns=0) as log:
        log.compact(target_rows=1000)
    return []


def _run_forget(ws: Path) -> list[bytes]:
    with _open(_log_root(ws), retire_grace_ns=0) as log:
        log.erase(_odd, reason="fault", selection={})
    return []


def _run_archive(ws: Path) -> list[bytes]:
    with _open(_log_root(ws), retire_grace_ns=0) as log:
        log.archive(log.manifest.segments()[1].max_hlc, ws.parent / "archive", vacuum=True)
    return []


def _run_append(ws: Path) -> list[bytes]:
    with _open(_log_root(ws)) as log:
        return _add(log, 100)


def _run_repair(ws: Path) -> list[bytes]:
    with _open(_log_root(ws), repair=True):
        pass
    return []


def _build_copy(root: Path) -> list[bytes]:
    """The usual log, and beside it a copy of a newer log with an erasure to import (its
    erased events, the payload.erased naming them, and whole events)."""
    acked = _build(root)
    source = root.parents[2] / "source"
    with _open(source, retire_grace_ns=0) as log:
        _add(log, 200, count=6)
        log.seal()
        log.erase(_odd, reason="fault", selection={})
        _add(log, 206)
    lines = [json.dumps(event_to_json(e)) for e in events_since(source)]
    (root.parents[2] / "copy.jsonl").write_text("\n".join(lines) + "\n")
    return acked


def _run_import(ws: Path) -> list[bytes]:
    text = (ws.parent / "copy.jsonl").read_text().splitlines()
    events = [stored_event_from_json(json.loads(line)) for line in text]
    with _open(_log_root(ws)) as log:
        log.import_events(events, key="copy")  # run again: the key says it is stored
    return [e.id for e in events]


def _build_damaged(root: Path) -> list[bytes]:
    """A log whose merged segment is gone (its compacted inputs remain) and whose WAL
    holds a damaged frame before good ones."""
    acked = _build(root, tail=False)
    with _open(root) as log:  # grace keeps the inputs
        log.compact(target_rows=1000)
        merged = log.manifest.segments()[0].name
        _add(log, 20)  # the frame damaged below: a repair writes these off
        acked += _add(log, 23)
        gen = log._wal.gen
    (root / "segments" / f"{merged}.parquet").unlink()
    wal = root / "wal" / wal_name(gen)
    data = bytearray(wal.read_bytes())
    data[30] ^= 0xFF  # inside the first frame's body: that frame is lost, the next kept
    wal.write_bytes(bytes(data))
    return acked


OPS = [
    Op("append", _build, _run_append),
    Op("seal", _build, _run_seal),
    Op("compact", functools.partial(_build, tail=False), _run_compact),
    Op("forget", _build, _run_forget),
    Op("archive", _build, _run_archive),
    Op("repair", _build_damaged, _run_repair, repair=True),
    Op("import", _build_copy, _run_import),
]


def _stored(ws: Path) -> collections.Counter[bytes]:
    """Every stored event id, live and archived (by the live manifest's own records)."""
    root = _log_root(ws)
    ids: collections.Counter[bytes] = collections.Counter(e.id for e in events_since(root))
    archive = _log_root(ws.parent / "archive") / "segments"
    for name in read_manifest(root / "manifest.jsonl").archived:
        table = read_segment(archive / f"{name}.parquet", ["id"])
        ids.update(bytes(x) for x in table.column("id").to_pylist())
    return ids


@dataclass
class Tally:
    faults: collections.Counter[str] = field(default_factory=collections.Counter)
    acked: int = 0
    lost: int = 0
    duplicated: int = 0
    refused_seen: int = 0
    unopenable: int = 0
    failures: list[str] = field(default_factory=list)


def _after_fault(op: Op, ws: Path, acked: list[bytes], refused: list[bytes], tally: Tally) -> str:
    """Check one faulted run; returns what went wrong ('' if nothing)."""
    root = _log_root(ws)
    if op.repair:
        with contextlib.suppress(NerveError, OSError):
            _open(root).close()  # may still refuse: the damage may be unrepaired
        _run_repair(ws)
    try:
        _open(root).close()
    except (NerveError, OSError) as exc:
        tally.unopenable += 1
        return f"unopenable: {exc}"
    stored = _stored(ws)
    lost = [i for i in acked if i not in stored]
    dup = [i for i, n in stored.items() if n > 1]
    seen = [i for i in refused if i in stored]
    tally.acked += len(acked)
    tally.lost += len(lost)
    tally.duplicated += len(dup)
    tally.refused_seen += len(seen)
    report = verify(root, [ws.parent / "archive"])
    problems = [str(p) for p in report.problems]
    op.run(ws)  # the operation, run again, completes
    if not verify(root, [ws.parent / "archive"]).ok:
        problems.append("verify fails after the operation was run again")
    out = [f"{len(lost)} lost"] * bool(lost) + [f"{len(dup)} duplicated"] * bool(dup)
    out += [f"{len(seen)} refused but stored"] * bool(seen) + problems
    return "; ".join(out)


def _fault_run(
    op: Op, base: Path, work: Path, site: str, nth: int, mode: tuple[int, bool]
) -> tuple[str, list[bytes], bool]:
    """Run ``op`` on a copy of ``base`` with one call failing: (what went wrong, ids it
    acknowledged, whether it refused an append as "not stored")."""
    shutil.copytree(base, work, symlinks=True)
    new: list[bytes] = []
    with syscalls.failing(site, nth, mode[0], sticky=mode[1]):
        try:
            new = op.run(work / "ws")
        except (NerveError, OSError) as exc:
            return "", new, op.name == "append" and "not stored" in str(exc)
        except Exception as exc:  # anything else is a traceback a user would see
            return f"{type(exc).__name__} (not a nerve error): {exc}", new, False
    return "", new, False


@pytest.mark.parametrize("op", OPS, ids=[o.name for o in OPS])
def test_one_io_error_at_any_durable_call_loses_nothing(
    tmp_path: Path, op: Op, capsys: pytest.CaptureFixture[str]
) -> None:
    base = tmp_path / "base"
    acked = op.build(_log_root(base / "ws"))
    probe = tmp_path / "probe"
    shutil.copytree(base, probe, symlinks=True)
    with syscalls.recording() as plan:
        op.run(probe / "ws")
    assert not [i for i in acked if i not in _stored(probe / "ws")]  # the clean run keeps all
    calls = syscalls.instances(plan.calls)
    assert calls, "the operation made no durable call"
    tally = Tally()
    for index, (site, nth) in enumerate(calls):
        for mode in MODES:
            work = tmp_path / f"run-{index}-{mode[0]}-{mode[1]}"
            outcome, new, refused = _fault_run(op, base, work, site, nth, mode)
            tally.faults[site] += 1
            how = errno.errorcode[mode[0]] + (" and every call after it" if mode[1] else "")
            if outcome:
                tally.failures.append(f"{site} #{nth} {how}: {outcome}")
                continue
            # an append refused as "not stored" must not appear: find its ids by line
            gone = _refused_ids(work / "ws") if refused else []
            what = _after_fault(op, work / "ws", acked + new, gone, tally)
            if what:
                tally.failures.append(f"{site} #{nth} {how}: {what}")
            shutil.rmtree(work)
    with capsys.disabled():
        print(
            f"\n[{op.name}] {len(calls)} durable calls at {len(tally.faults)} sites, "
            f"{sum(tally.faults.values())} faults; acknowledged {tally.acked}, lost "
            f"{tally.lost}, duplicated {tally.duplicated}, refused-but-stored "
            f"{tally.refused_seen}, unopenable {tally.unopenable}"
        )
        for site, n in sorted(tally.faults.items()):
            print(f"  {n:3d}  {site}")
    assert not tally.failures, "\n".join(tally.failures)


def _refused_ids(ws: Path) -> list[bytes]:
    """Ids of the appended lines e100..e102 found stored (a refused append must have none)."""
    with contextlib.suppress(NerveError, OSError):
        _open(_log_root(ws)).close()
    wanted = {f"e{n}" for n in range(100, 103)}
    return [e.id for e in events_since(_log_root(ws)) if not e.erased and e.line in wanted]


@pytest.mark.parametrize("how", ["seal", "compact"])
def test_a_record_whose_fsync_and_cut_back_fail_never_bricks_the_log(
    tmp_path: Path, how: str
) -> None:
    """Issue repro: the manifest's fsync fails with EIO and so does cutting the record back
    off, while deleting still works. The record may be stored, so its segment must stay:
    the log opens, every acknowledged event is there once, and verify is clean."""
    ws = tmp_path / "ws"
    acked = _build(_log_root(ws), tail=how == "seal")

    def sync_or_cut(site: str) -> bool:
        return site.startswith("nerve/log/manifest.py") and site.endswith(("fsync", "ftruncate"))

    with syscalls.failing_where(sync_or_cut, errno.EIO), pytest.raises((NerveError, OSError)):
        (_run_seal if how == "seal" else _run_compact)(ws)
    _open(_log_root(ws)).close()  # opens: nothing it names was deleted
    stored = _stored(ws)
    assert [i for i in acked if stored[i] != 1] == []
    assert verify(_log_root(ws)).ok
