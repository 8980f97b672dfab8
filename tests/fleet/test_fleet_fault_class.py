"""One I/O error at every local durable call of ``fleet ship`` (the fault class of
``tests/log/test_log_fault_class.py``, for the fleet).

A host has shipped one segment and sealed two more. Its ship runs once with every durable
call recorded: ``os`` calls nerve makes (``data/fleet``'s state and lock, the segment,
manifest and head files put in the local warehouse), pyiceberg's writes of the table's
files, and the SQLite catalog's statements and commits (``tests/helpers/fleetio.py``).
Then, for each call, the ship runs again from the same state with that call failing (EIO;
ENOSPC; and the disk breaking there: that call and every later one, one test each).

After each: the ship either finished or said what failed in one line (a ``NerveError``,
no traceback); a ship run again without a fault finishes; then every live segment is
registered exactly once, none is lost, and ``fleet verify`` is clean.
"""

from __future__ import annotations

import collections
import errno
import shutil
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from nerve.errors import NerveError
from nerve.fleet import ship as ship_module
from nerve.fleet import warehouse as warehouse_module
from nerve.fleet.ship import ship
from nerve.fleet.verify import verify_fleet
from nerve.fleet.warehouse import open_warehouse, resolve, segment_name
from nerve.log.manifest import read_manifest
from nerve.workspace import WorkspaceDir
from tests.conftest import run_cli
from tests.helpers import fleetio, syscalls
from tests.helpers.fleet import add_segment, make_host

pytest.importorskip("pyiceberg")

MODES = ((errno.EIO, False), (errno.ENOSPC, False), (errno.EIO, True))


@dataclass
class Tally:
    faults: collections.Counter[str] = field(default_factory=collections.Counter)
    segments: int = 0
    lost: int = 0
    duplicated: int = 0
    refused: int = 0  # ships that failed with a one-line error
    refused_but_registered: int = 0  # of those, ships whose commit had landed
    unverifiable: int = 0
    failures: list[str] = field(default_factory=list)


def _registered(ws: WorkspaceDir) -> collections.Counter[str]:
    cfg = ws.config.fleet
    assert cfg is not None
    wh = open_warehouse(resolve(cfg, ws.data))
    return collections.Counter(segment_name(f.file_path) for f in wh.data_files())


def _live(ws: WorkspaceDir) -> list[str]:
    return [s.name for s in read_manifest(ws.log_root / "manifest.jsonl").segments()]


def _verify(ws: WorkspaceDir, trust: Path) -> list[str]:
    cfg = ws.config.fleet
    assert cfg is not None
    reports = verify_fleet(open_warehouse(resolve(cfg, ws.data)), trust)
    return [f"{r.host}: {kind}: {text}" for r in reports for kind, text in r.problems]


def _restore(saved: Path, base: Path) -> None:
    """The host and warehouse back as they were (in place: the table's paths are absolute)."""
    shutil.rmtree(base)
    shutil.copytree(saved, base, symlinks=True)


def _faulted(ws: WorkspaceDir, site: str, nth: int, mode: tuple[int, bool]) -> tuple[str, bool]:
    """Ship with one call failing: (what went wrong, whether the ship said it failed)."""
    with fleetio.failing(site, nth, mode[0], sticky=mode[1]):
        try:
            ship(ws)
        except NerveError as exc:
            text = str(exc)
            return ("" if text.strip() and "\n" not in text else f"not one line: {text!r}"), True
        except Exception as exc:  # anything else is a traceback a user would see
            return f"{type(exc).__name__} (not a nerve error): {exc}", True
    return "", False


def _check(ws: WorkspaceDir, trust: Path, tally: Tally) -> str:
    """After a faulted ship: a ship run again finishes; every live segment is registered
    once; verify is clean."""
    live = _live(ws)
    try:
        ship(ws)  # the retry
    except NerveError as exc:
        return f"the retry failed: {exc}"
    now = _registered(ws)
    lost = [n for n in live if n not in now]
    dup = [n for n, count in now.items() if count > 1]
    tally.segments += len(live)
    tally.lost += len(lost)
    tally.duplicated += len(dup)
    problems = _verify(ws, trust)
    tally.unverifiable += bool(problems)
    out = [f"{len(lost)} lost"] * bool(lost) + [f"{len(dup)} registered twice"] * bool(dup)
    return "; ".join(out + problems)


# one test per mode, so that parallel workers share the ~20 seconds of a whole run
@pytest.mark.parametrize("mode", MODES, ids=["EIO", "ENOSPC", "EIO-sticky"])
def test_one_io_error_at_any_local_durable_call_of_a_ship(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    mode: tuple[int, bool],
) -> None:
    monkeypatch.setattr(ship_module, "UPLOAD_THREADS", 1)  # the same call order every run
    # A ship waits this long on a catalog another holds; a lock a faulted commit left
    # behind (SQLite may keep the transaction open) must fail the case, not stall it.
    monkeypatch.setattr(warehouse_module, "COMMIT_DEADLINE_S", 15.0)
    trust = tmp_path / "trust"
    base = tmp_path / "base"
    warehouse = (base / "warehouse").as_uri()
    ws = make_host(base / "host", "host", warehouse, rows=20, ages_h=(3,))
    run_cli("-w", str(ws.root), "fleet", "init", "--warehouse", warehouse)
    ship(ws)
    add_segment(ws, rows=10)
    add_segment(ws, rows=10)
    saved = tmp_path / "saved"
    shutil.copytree(base, saved, symlinks=True)
    with fleetio.recording() as plan:
        ship(ws)
    assert sorted(_registered(ws)) == sorted(_live(ws))  # the clean run ships both
    calls = syscalls.instances(plan.calls)
    assert any(s.startswith("iceberg") for s in plan.calls)
    assert any(s.startswith("sqlite") for s in plan.calls)
    assert any(s.startswith("nerve/fleet") for s in plan.calls)
    tally = Tally()
    how = errno.errorcode[mode[0]] + (" and every call after it" if mode[1] else "")
    for site, nth in calls:
        _restore(saved, base)
        ws = WorkspaceDir.at(base / "host")
        tally.faults[site] += 1
        outcome, refused = _faulted(ws, site, nth, mode)
        tally.refused += refused and not outcome
        if refused and not outcome and set(_registered(ws)) == set(_live(ws)):
            tally.refused_but_registered += 1
        if not outcome:
            outcome = _check(ws, trust, tally)
        if outcome:
            tally.failures.append(f"{site} #{nth} {how}: {outcome}")
    with capsys.disabled():
        print(
            f"\n[ship, {how}] {len(calls)} durable calls at {len(tally.faults)} sites, "
            f"{sum(tally.faults.values())} faults, {tally.refused} refused in one line "
            f"({tally.refused_but_registered} of them after the commit); "
            f"segments {tally.segments}, lost "
            f"{tally.lost}, registered twice {tally.duplicated}, verify not clean "
            f"{tally.unverifiable}"
        )
        for site, n in sorted(tally.faults.items()):
            print(f"  {n:3d}  {site}")
    assert not tally.failures, "\n".join(tally.failures)
