"""Every durable write site, failing: nothing acknowledged is lost, nothing is duplicated.

Each site in ``nerve.fsio.SITES`` has a scenario here: acknowledge events, make the site fail
(as a full or broken disk would), clear the fault, carry on; then every acknowledged event is
stored exactly once, verify is clean, and the writer takes new events.
"""

from __future__ import annotations

import ast
import collections
import contextlib
import errno
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
import pytest

from nerve import fsio
from nerve.api import Workspace
from nerve.chain.keys import Keyring
from nerve.chain.trust import TrustRecord
from nerve.errors import LogError, NerveError
from nerve.log.drafts import Draft
from nerve.log.reader import events_since
from nerve.log.store import EventLog
from nerve.log.verify import verify
from nerve.mcp import token as mcp_token
from nerve.workspace import WorkspaceDir, init_workspace

ROOT = Path(__file__).resolve().parents[2]


class Ledger:
    """A writer and the ids it acknowledged."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.acked: list[bytes] = []
        self.log = EventLog(root, node="f", seal_max_events=10**9)
        self.n = 0

    def add(self, count: int = 3) -> None:
        drafts = [Draft.of(source=1, line=f"e{self.n + i}") for i in range(count)]
        table = self.log.append_drafts(drafts)
        self.n += count
        self.acked += [bytes(x) for x in table.column("id").to_pylist()]

    def reopen(self) -> None:
        self.log.close()
        self.log = EventLog(self.root, node="f", seal_max_events=10**9)

    def check(self) -> None:
        """Every acknowledged event once, verify clean, and the writer still takes events."""
        self.add(2)
        self.reopen()
        self.add(1)
        self.log.seal()
        self.log.close()
        stored = collections.Counter(e.id for e in events_since(self.root))
        assert not [i for i, n in stored.items() if n > 1], "duplicated events"
        lost = [i for i in self.acked if i not in stored]
        assert not lost, f"{len(lost)} acknowledged events lost"
        report = verify(self.root)
        assert report.ok, report.problems


def _append_fails(tmp_path: Path, site: str) -> None:
    led = Ledger(tmp_path / "log")
    led.add()
    with fsio.inject(site) as fault, pytest.raises(LogError, match="not stored"):
        led.add()
    assert fault.fired == 1
    led.add()
    led.check()


def _append_and_cut_fail(tmp_path: Path, site: str) -> None:
    """The append fails and so does cutting it off: appends are refused until the cut works."""
    led = Ledger(tmp_path / "log")
    led.add()
    with fsio.inject("wal.write"), fsio.inject(site, times=2) as cut:
        with pytest.raises(LogError, match="MAY be stored"):
            led.add()  # never "not stored": half a frame is still in the file
        with pytest.raises(LogError, match="could not be cut off"):
            led.add()
    assert cut.fired == 2
    led.add()  # the cut succeeds first, then the append
    led.check()


def _seal_and_compact_fail(tmp_path: Path, site: str) -> None:
    led = Ledger(tmp_path / "log")
    for _ in range(3):
        led.add()
        led.log.seal()
    led.add()
    with fsio.inject(site) as fault, pytest.raises((NerveError, OSError)):
        led.log.seal()
    assert fault.fired == 1
    led.add()  # appends go on while the seal is pending
    assert led.log.seal() is not None  # the retry takes the failed generation too
    with fsio.inject(site) as fault, pytest.raises((NerveError, OSError)):
        led.log.compact(target_rows=1000)
    assert fault.fired == 1
    assert led.log.compact(target_rows=1000).merged >= 2
    with fsio.inject(site) as fault, pytest.raises((NerveError, OSError)):
        led.log.erase(_odd_lines, reason="fault", selection={})
    assert fault.fired == 1
    led.log.erase(_odd_lines, reason="fault", selection={})  # finishes, or does, the erasure
    odd = len([i for i in range(led.n) if i % 2])
    led.check()
    assert len([e for e in events_since(led.root) if e.erased]) == odd


def _record_and_cut_fail(tmp_path: Path, site: str) -> None:
    """A manifest record fails and so does cutting it back off: it may be stored, so the
    segment it names is kept (not deleted as unrecorded); after the process ends the log
    opens, and holds every acknowledged event once, for seal, compact and erase alike."""
    for op in ("seal", "compact", "erase"):
        led = Ledger(tmp_path / op / "log")
        for _ in range(3):
            led.add()
            led.log.seal()
        led.add()
        log = led.log
        with (
            fsio.inject("manifest.fsync", err=errno.EIO),
            fsio.inject(site, err=errno.EIO) as cut,
            pytest.raises((NerveError, OSError), match=r"may be stored|MAY be stored"),
        ):
            if op == "seal":
                log.seal()
            elif op == "compact":
                log.compact(target_rows=1000)
            else:
                log.erase(_odd_lines, reason="fault", selection={})
        assert cut.fired == 1
        led.log.close()  # the process ends here, as `nerve seal` / `nerve compact` would
        led.log = EventLog(led.root, node="f", seal_max_events=10**9)
        led.check()


def _first_record_sync_fails(tmp_path: Path, site: str) -> None:
    """The manifest's creation cannot be made durable: the seal fails, the retry works."""
    led = Ledger(tmp_path / "log")
    led.add()
    with fsio.inject(site) as fault, pytest.raises((NerveError, OSError)):
        led.log.seal()
    assert fault.fired == 1
    assert led.log.seal() is not None
    led.check()


def _odd_lines(table: pa.Table) -> pa.ChunkedArray:
    line = table.column("line")
    ours = pc.match_substring_regex(line, r"^e\d+$")  # not the payload.erased event's line
    numbers = pc.cast(pc.if_else(ours, pc.utf8_slice_codeunits(line, 1), "0"), pa.int64())
    return pc.equal(pc.bit_wise_and(numbers, 1), 1)


def _retired_unlink_fails(tmp_path: Path, site: str) -> None:
    """A compacted-away segment that cannot be deleted stays (it is not live) and goes later."""
    led = Ledger(tmp_path / "log")
    for _ in range(3):
        led.add()
        led.log.seal()
    led.log.retire_grace_ns = 0
    with fsio.inject(site) as fault:
        assert led.log.compact(target_rows=1000).merged == 3
    assert fault.fired == 1
    left = len(list((led.root / "segments").iterdir()))
    assert left == 1 + 1  # the merged segment, and the retired file the fault kept
    led.log.maybe_seal()  # the writer's upkeep tries again
    assert len(list((led.root / "segments").iterdir())) == 1
    led.check()


def _archive_copy_fails(tmp_path: Path, site: str) -> None:
    """A copy into the archive fails: nothing moves, no stray file is left, a retry moves."""
    led = Ledger(tmp_path / "ws" / "data" / "log")
    for _ in range(3):
        led.add()
        led.log.seal()
    led.add()
    cut, folder = led.log.newest, tmp_path / "archive"
    manifest = (led.root / "manifest.jsonl").read_bytes()
    with fsio.inject(site) as fault, pytest.raises(OSError):
        led.log.archive(cut, folder)
    assert fault.fired == 1
    assert (led.root / "manifest.jsonl").read_bytes() == manifest
    assert [p.name for p in (folder / "data" / "log" / "segments").iterdir()] == []
    led.check()
    assert len(led.log.archive(cut, folder)) == 3  # check() sealed the rest after the cut
    assert verify(led.root, [folder]).ok and verify(folder / "data" / "log").ok


def _rotation_fails(tmp_path: Path, site: str) -> None:
    led = Ledger(tmp_path / "log")
    led.add()
    with fsio.inject(site) as fault, pytest.raises((NerveError, OSError)):
        led.log.seal()
    assert fault.fired == 1
    led.add()
    assert led.log.seal() is not None
    led.check()


def _unlink_fails(tmp_path: Path, site: str) -> None:
    """The seal is recorded; only dropping the sealed WAL fails: the next open drops it."""
    led = Ledger(tmp_path / "log")
    led.add()
    with fsio.inject(site) as fault:
        assert led.log.seal() is not None
    assert fault.fired == 1
    assert len(list((led.root / "wal").iterdir())) == 2
    led.check()


def _quarantine_fails(tmp_path: Path, site: str) -> None:
    led = Ledger(tmp_path / "log")
    led.add()
    led.log.close()
    stray = led.root / "segments" / ("cd" * 32 + ".parquet")
    stray.write_bytes(b"not a segment")
    with fsio.inject(site) as fault, pytest.raises(OSError):
        EventLog(led.root, node="f")
    assert fault.fired == 1 and stray.exists()  # refused, and nothing deleted
    led.log = EventLog(led.root, node="f")
    assert not stray.exists() and (led.root / "quarantine" / stray.name).exists()
    led.check()


def _key_write_fails(tmp_path: Path, site: str) -> None:
    folder = tmp_path / "keys"
    with fsio.inject(site) as fault, pytest.raises(OSError):
        Keyring.open(folder)
    assert fault.fired == 1
    assert list(folder.iterdir()) == []  # no half-written key left to be read as one
    ring = Keyring.open(folder)
    assert Keyring.open(folder).public_key() == ring.public_key()


def _keyring_write_fails(tmp_path: Path, site: str) -> None:
    """A rotation that cannot write leaves the old wrapped key whole (and no stray file);
    a new keyring that cannot be written leaves no keyring to be read as one."""
    from nerve.log import crypt

    old, new = b"o" * 32, b"n" * 32
    with fsio.inject(site) as fault, pytest.raises(OSError):
        crypt.new_keyring(tmp_path / "fresh", old, crypt.file_source())
    assert fault.fired == 1 and not crypt.is_encrypted(tmp_path / "fresh")
    root = tmp_path / "log"
    crypt.new_keyring(root, old, crypt.file_source())
    with EventLog(root, node="f") as log:
        log.append(line="kept")
    before = sorted(p.name for p in root.iterdir())
    with fsio.inject(site) as fault, pytest.raises(OSError):
        crypt.rewrap(root, old, new, crypt.file_source())
    assert fault.fired == 1 and sorted(p.name for p in root.iterdir()) == before
    crypt.forget_keys()
    assert crypt.unlock(root, old)
    with pytest.raises(crypt.WrongKey):
        crypt.unlock(root, new)
    crypt.rewrap(root, old, new, crypt.file_source())
    crypt.forget_keys()
    crypt.unlock(root, new)
    assert [e.line for e in events_since(root)][-1] == "kept"
    crypt.forget_keys()


def _trust_write_fails(tmp_path: Path, site: str) -> None:
    path = tmp_path / "trust" / "record.json"
    first = TrustRecord(b"a" * 32, b"b" * 32, 3, b"c" * 32, b"d" * 32)
    first.save(path)
    second = TrustRecord(b"a" * 32, b"b" * 32, 9, b"e" * 32, b"f" * 32)
    with fsio.inject(site) as fault, pytest.raises(OSError):
        second.save(path)
    assert fault.fired == 1
    assert TrustRecord.load(path) == first  # the old record stands whole
    assert [p.name for p in path.parent.iterdir()] == ["record.json"]
    second.save(path)
    assert TrustRecord.load(path) == second


def _token_write_fails(tmp_path: Path, site: str) -> None:
    ws = Workspace(WorkspaceDir(tmp_path / "ws"))
    env = {"XDG_STATE_HOME": str(tmp_path / "state")}
    first = mcp_token.token(ws, environ=env)
    with fsio.inject(site) as fault, pytest.raises(OSError):
        mcp_token.token(ws, rotate=True, environ=env)
    assert fault.fired == 1
    path = mcp_token.token_path(ws, env)
    assert mcp_token.read(path) == first  # the old token stands whole
    assert [p.name for p in path.parent.iterdir()] == [path.name]
    assert mcp_token.token(ws, rotate=True, environ=env) != first


def _ui_token_write_fails(tmp_path: Path, site: str) -> None:
    from nerve.ui import auth

    ws = Workspace(WorkspaceDir(tmp_path / "ws"))
    env = {"XDG_STATE_HOME": str(tmp_path / "state")}
    first = auth.token(ws, environ=env)
    with fsio.inject(site) as fault, pytest.raises(OSError):
        auth.token(ws, rotate=True, environ=env)
    assert fault.fired == 1
    assert auth.token(ws, environ=env) == first  # the old token stands whole
    assert auth.token(ws, rotate=True, environ=env) != first


def _fleet_write_fails(tmp_path: Path, site: str) -> None:
    from nerve.fleet.ship import ship
    from nerve.fleet.warehouse import FleetError
    from tests.conftest import run_cli
    from tests.helpers.fleet import make_host

    warehouse = tmp_path / "warehouse"
    ws = make_host(tmp_path / "h", "h", warehouse.as_uri(), rows=20, ages_h=(2, 1))
    run_cli("-w", str(ws.root), "fleet", "init", "--warehouse", warehouse.as_uri())
    with fsio.inject(site, after=1) as fault, pytest.raises(FleetError, match="cannot write"):
        ship(ws)  # the second segment's upload fails: nothing is registered
    assert fault.fired == 1
    assert not [p for p in warehouse.rglob("*") if p.name.endswith(".tmp")]
    result = ship(ws)
    assert (result.added, result.removed) == (2, 0)
    env = {"XDG_STATE_HOME": str(tmp_path / "state")}
    assert run_cli("-w", str(ws.root), "fleet", "verify", env=env).returncode == 0


def _config_write_fails(tmp_path: Path, site: str) -> None:
    """Saving categories from the UI: the old nerve.yaml stands whole and no event says
    otherwise; the same save then succeeds."""
    wsd = init_workspace(tmp_path / "ws")
    ws = Workspace(wsd)
    before = wsd.config_path.read_bytes()
    rules = [{"name": "code", "app": "code", "title": ""}]
    with fsio.inject(site) as fault, pytest.raises(OSError):
        ws.settings.set_categories(rules)
    assert fault.fired == 1
    assert wsd.config_path.read_bytes() == before
    assert [p.name for p in wsd.root.iterdir() if p.name.endswith(".tmp")] == []
    assert not [e for e in _events(wsd) if e.kind == "categories.set"]
    assert [r.name for r in ws.settings.set_categories(rules)] == ["code"]
    assert len([e for e in _events(wsd) if e.kind == "categories.set"]) == 1


def _events(ws: WorkspaceDir) -> list[Any]:
    return list(events_since(ws.log_root))


def _seal_setup_fails(tmp_path: Path, site: str) -> None:
    """A set-up cut short leaves no set-up behind (a retry is not refused), and sealing
    that fails at an epoch resumes at the next try with every seal verifying."""
    import time

    from nerve.runtime.sealing import heads_now
    from nerve.seal import Sealer, setup
    from nerve.seal.note import parse
    from nerve.seal.verify import read_log, verify

    ws = init_workspace(tmp_path / "ws")
    folder = ws.data / "seals"
    start = time.time_ns() - 3 * 60 * 1_000_000_000
    if site in ("seal.keys", "seal.setup"):
        with fsio.inject(site) as fault, pytest.raises(OSError):
            setup(folder, 60, bits=4, now_ns=start)
        assert fault.fired == 1
        assert sorted(p.name for p in folder.iterdir()) == []
    seed = setup(folder, 60, bits=4, now_ns=start)
    sealer = Sealer(folder, lambda: heads_now(ws.log_root))
    assert sealer.seal_due(seed.starts_ns(0) + 1) == [0]
    with fsio.inject(site, partial=True) as fault, contextlib.suppress(OSError):
        sealer.seal_due(seed.starts_ns(2) + 1)
    sealer = Sealer(folder, lambda: heads_now(ws.log_root))  # as a restarted daemon would
    sealer.seal_due(seed.starts_ns(3) + 1)
    notes = sealer.store.notes()
    assert sorted(parse(n)[0].epoch for n in notes) == [0, 1, 2, 3]  # each once, none torn
    report = verify(seed, notes, read_log(ws.log_root), seed.starts_ns(3) + 2)
    assert report.failure is None, report.failure
    assert fault.fired >= (1 if site in ("seal.state", "seal.append") else 0)


def _witness_write_fails(tmp_path: Path, site: str) -> None:
    from nerve.runtime.sealing import heads_now
    from nerve.seal import Sealer, setup
    from nerve.seal.verify import read_log
    from nerve.seal.witness import cosign

    ws = init_workspace(tmp_path / "ws")
    folder = ws.data / "seals"
    seed = setup(folder, 60, bits=4)
    Sealer(folder, lambda: heads_now(ws.log_root)).seal_due()
    notes = Sealer(folder, lambda: heads_now(ws.log_root)).store.notes()
    witness = tmp_path / "witness"
    view = read_log(ws.log_root)
    with fsio.inject(site, after=1) as fault, pytest.raises(OSError):
        cosign(witness, seed, notes, view)
    assert fault.fired == 1
    done = cosign(witness, seed, notes, view)  # the memory it kept still continues
    assert done.epoch == 0


def _sync_write_fails(tmp_path: Path, site: str) -> None:
    """Joining that cannot write its key or group file joins nothing (and may try again);
    a round that cannot write its state or a device note costs only that round."""
    from nerve.sync import ops
    from nerve.sync.group import Transport as Place
    from tests.helpers.natsd import nats
    from tests.sync.conftest import device, emit

    a, b = device(tmp_path, "alpha"), device(tmp_path, "beta")
    with nats(tmp_path / "nats") as servers:
        place = Place.of({"kind": "nats", "url": servers[0].url}, "test")
        if site in ("sync.key", "sync.group"):
            with fsio.inject(site) as fault, pytest.raises(OSError):
                ops.init(a, "home", place, "alpha")
            assert fault.fired == 1
            assert (
                ops.sync_folder(a).exists() is False
                or not (ops.sync_folder(a) / "group.json").exists()
            )
        group = ops.init(a, "home", place, "alpha")
        ops.join(b, group.code(), "beta")
        emit(a, 3, "from alpha")
        emit(b, 2, "from beta")
        with fsio.inject(site, times=-1) as round_fault:
            for ws in (a, b):
                with contextlib.suppress(OSError):
                    ops.now(ws)
        for _ in range(3):
            for ws in (a, b):
                ops.now(ws)
        reports = [ops.status(ws).to_json() for ws in (a, b)]
        found = {r["in_sync"] for r in reports}
    assert found == {True}, reports
    if site in ("sync.state", "sync.device", "sync.digest"):
        assert round_fault.fired >= 1


SCENARIOS: dict[str, Callable[[Path, str], None]] = {
    "wal.create": _rotation_fails,
    "wal.write": _append_fails,
    "wal.fsync": _append_fails,
    "wal.truncate": _append_and_cut_fail,
    "segment.write": _seal_and_compact_fail,
    "segment.fsync": _seal_and_compact_fail,
    "segment.rename": _seal_and_compact_fail,
    "segment.dirsync": _seal_and_compact_fail,
    "manifest.write": _seal_and_compact_fail,
    "manifest.fsync": _seal_and_compact_fail,
    "manifest.truncate": _record_and_cut_fail,
    "manifest.dirsync": _first_record_sync_fails,
    "wal.dirsync": _rotation_fails,
    "wal.unlink": _unlink_fails,
    "segment.unlink": _retired_unlink_fails,
    "archive.write": _archive_copy_fails,
    "archive.fsync": _archive_copy_fails,
    "archive.rename": _archive_copy_fails,
    "archive.dirsync": _archive_copy_fails,
    "quarantine.move": _quarantine_fails,
    "key.write": _key_write_fails,
    "keyring.write": _keyring_write_fails,
    "trust.write": _trust_write_fails,
    "mcp.token": _token_write_fails,
    "ui.token": _ui_token_write_fails,
    "fleet.write": _fleet_write_fails,
    "fleet.fsync": _fleet_write_fails,
    "config": _config_write_fails,
    "seal.keys": _seal_setup_fails,
    "seal.setup": _seal_setup_fails,
    "seal.state": _seal_setup_fails,
    "seal.append": _seal_setup_fails,
    "witness.write": _witness_write_fails,
    "sync.key": _sync_write_fails,
    "sync.group": _sync_write_fails,
    "sync.state": _sync_write_fails,
    "sync.device": _sync_write_fails,
    "sync.digest": _sync_write_fails,
}


def _sites_in_code() -> set[str]:
    """Every site name the code passes (``site="…"`` or ``fsio.hit("…", …)``)."""
    found: set[str] = set()
    for path in (ROOT / "nerve").rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            if not isinstance(node, ast.Call):
                continue
            for kw in node.keywords:
                if kw.arg == "site" and isinstance(kw.value, ast.Constant):
                    found.add(kw.value.value)
            func = node.func
            if isinstance(func, ast.Attribute) and func.attr == "hit" and node.args:
                first = node.args[0]
                if isinstance(first, ast.Constant):
                    found.add(first.value)
    return found


def test_every_write_site_is_listed_and_has_a_fault_scenario() -> None:
    assert _sites_in_code() == set(fsio.SITES)
    assert set(SCENARIOS) == set(fsio.SITES)


@pytest.mark.parametrize("site", fsio.SITES)
def test_a_fault_at_each_write_site_loses_nothing(tmp_path: Path, site: str) -> None:
    SCENARIOS[site](tmp_path, site)


def test_an_io_error_is_handled_like_a_full_disk(tmp_path: Path) -> None:
    led = Ledger(tmp_path / "log")
    led.add()
    with (
        fsio.inject("wal.fsync", err=errno.EIO),
        pytest.raises(LogError, match="Input/output error"),
    ):
        led.add()
    with fsio.inject("segment.fsync", err=errno.EIO), pytest.raises(OSError):
        led.log.seal()
    led.check()
