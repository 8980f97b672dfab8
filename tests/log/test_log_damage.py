"""Damaged files, lost manifest records, hostile paths: reported, refused, never deleted."""

from __future__ import annotations

import os
import stat
import warnings
from pathlib import Path

import pytest

from nerve.errors import LogCorrupt, LogDamageWarning, UnsafePath
from nerve.log.drafts import Draft
from nerve.log.reader import events_since, replay_digest, snapshot
from nerve.log.segments import write_segment
from nerve.log.store import EventLog
from nerve.log.verify import verify
from tests.conftest import run_cli


def _log(root: Path, batches: int = 3, seal_each: bool = False) -> list[bytes]:
    ids: list[bytes] = []
    with EventLog(root, node="n", seal_max_events=10**9) as log:
        for b in range(batches):
            drafts = [Draft.of(source=1, line=f"b{b}e{i}", payload={"i": i}) for i in range(4)]
            ids += [bytes(x) for x in log.append_drafts(drafts).column("id").to_pylist()]
            if seal_each:
                log.seal()
    return ids


def _wal(root: Path) -> Path:
    return sorted((root / "wal").iterdir())[-1]


def _stored(root: Path) -> list[bytes]:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", LogDamageWarning)
        return [e.id for e in events_since(root)]


# -- item 9: WAL damage is never silent ---------------------------------------------------


def test_a_flipped_byte_in_the_last_frame_is_reported_refused_and_repaired(tmp_path: Path) -> None:
    root = tmp_path / "log"
    ids = _log(root)
    wal = _wal(root)
    data = bytearray(wal.read_bytes())
    data[-10] ^= 0x01
    wal.write_bytes(bytes(data))
    report = verify(root)
    assert not report.ok
    assert "fail their checksum" in str(report.problems[0])
    with pytest.raises(LogCorrupt, match="damaged bytes"):
        EventLog(root, node="n")
    assert wal.read_bytes() == bytes(data)  # a refused writer changed nothing
    with pytest.warns(LogDamageWarning, match="damaged bytes"):
        snapshot(root)
    with EventLog(root, node="n", repair=True) as log:
        assert "could not be read" in log.recovered[0]
    quarantined = list((root / "quarantine").iterdir())
    assert [p.read_bytes() for p in quarantined] == [bytes(data)]  # the original, kept whole
    events = list(events_since(root))
    assert [e.id for e in events[:-1]] == ids[:8]  # the last frame's 4 events are gone
    assert events[-1].kind == "log.recovered"
    after = verify(root)
    assert after.ok and any("quarantine" in str(w) for w in after.warnings)


def test_a_damaged_middle_frame_warns_readers_and_repair_keeps_later_frames(tmp_path: Path) -> None:
    root = tmp_path / "log"
    ids = _log(root)
    wal = _wal(root)
    data = bytearray(wal.read_bytes())
    data[40] ^= 0xFF  # inside the first frame
    wal.write_bytes(bytes(data))
    with pytest.warns(LogDamageWarning):
        assert snapshot(root).tail.num_rows == 0
    assert "later frames are intact" in str(verify(root).problems[0])
    with EventLog(root, node="n", repair=True):
        pass
    assert _stored(root)[:8] == ids[4:]  # frames 2 and 3 survive the repair


def test_a_wal_cut_mid_frame_is_reported_with_the_bytes_it_loses(tmp_path: Path) -> None:
    root = tmp_path / "log"
    _log(root)
    wal = _wal(root)
    size = wal.stat().st_size
    os.truncate(wal, size - 30)
    report = verify(root)
    assert report.ok  # a torn final frame is what a crash mid-append leaves
    assert any("torn final frame" in str(w) for w in report.warnings)
    assert any("bytes from byte" in str(w) for w in report.warnings)


@pytest.mark.parametrize("header", [b"", b"NWAL\x00\x00"])
def test_a_generation_a_crash_left_without_its_header_is_debris(
    tmp_path: Path, header: bytes
) -> None:
    """Killed between creating the next generation's file and writing its header."""
    root = tmp_path / "log"
    ids = _log(root)
    (root / "wal" / "0000000000000002.wal").write_bytes(header)
    assert verify(root).ok
    with EventLog(root, node="n") as log:
        log.append_drafts([Draft.of(source=1, line="after")])
    assert _stored(root)[:12] == ids and len(_stored(root)) == 13
    assert verify(root).ok and verify(root).warnings == []


@pytest.mark.parametrize("how", ["delete", "rename"])
def test_a_lost_wal_generation_is_reported_and_the_writer_refuses(tmp_path: Path, how: str) -> None:
    root = tmp_path / "log"
    ids = _log(root, batches=2, seal_each=True)
    with EventLog(root, node="n") as log:
        log.append_drafts([Draft.of(source=1, line="unsealed")])
    wal = _wal(root)
    if how == "delete":
        wal.unlink()
    else:
        wal.rename(wal.with_suffix(".bak"))
    report = verify(root)
    assert not report.ok and "are missing" in str(report.problems[0])
    with pytest.raises(LogCorrupt, match="missing"):
        EventLog(root, node="n")
    with EventLog(root, node="n", repair=True) as log:
        assert "written off as lost" in log.recovered[0]
        log.append_drafts([Draft.of(source=1, line="after")])
    assert _stored(root)[:8] == ids
    after = verify(root)
    assert after.ok and any("written off" in str(w) for w in after.warnings)


# -- item 3: a manifest that lost records -------------------------------------------------


@pytest.mark.parametrize("damage", ["shorten", "empty", "torn"])
def test_a_manifest_that_lost_records_never_costs_a_segment(tmp_path: Path, damage: str) -> None:
    root = tmp_path / "log"
    ids = _log(root, batches=3, seal_each=True)
    digest = replay_digest(root)
    manifest = root / "manifest.jsonl"
    lines = manifest.read_bytes().splitlines(keepends=True)
    if damage == "shorten":
        manifest.write_bytes(b"".join(lines[:1]))
    elif damage == "empty":
        manifest.write_bytes(b"")
    else:
        manifest.write_bytes(b"".join(lines[:1]) + lines[1][:20])
    report = verify(root)
    assert not report.ok
    assert any("the manifest does not list" in str(p) for p in report.problems)
    with EventLog(root, node="n") as log:
        assert any("re-adopted" in note for note in log.recovered)
    events = list(events_since(root))
    assert [e.id for e in events[: len(ids)]] == ids
    assert events[len(ids)].kind == "log.recovered"
    segments = list((root / "segments").iterdir())
    assert len(segments) == 3  # nothing deleted
    assert verify(root).ok
    assert digest.events == len(ids)


def test_an_interrupted_seal_leaves_a_copy_that_is_dropped_not_adopted(tmp_path: Path) -> None:
    """A segment whose events are all still in the WAL is a redundant copy, not an orphan."""
    root = tmp_path / "log"
    ids = _log(root)
    info = write_segment(root / "segments", snapshot(root).tail)  # renamed, never recorded
    copy = root / "segments" / f"{info.name}.parquet"
    report = verify(root)
    assert report.ok and any("stored elsewhere" in str(w) for w in report.warnings)
    with EventLog(root, node="n"):
        pass
    assert not copy.exists()
    assert _stored(root) == ids


# -- items 7 and 8: owner-only files, no symlinks followed --------------------------------


def _modes(root: Path) -> dict[str, int]:
    return {
        str(p.relative_to(root)): stat.S_IMODE(p.lstat().st_mode)
        for p in [root, *root.rglob("*")]
        if not p.is_socket()
    }


def test_every_file_under_data_is_owner_only_whatever_the_umask(tmp_path: Path) -> None:
    old = os.umask(0o000)
    try:
        root = tmp_path / "ws"
        run_cli("init", str(root))
        run_cli("--workspace", str(root), "emit", "--source", "shell", "--line", "x")
        run_cli("--workspace", str(root), "seal")
        run_cli("--workspace", str(root), "audit", "verify", check=False)
    finally:
        os.umask(old)
    modes = _modes(root / "data")
    assert modes, "nothing written"
    loose = {
        name: oct(mode)
        for name, mode in modes.items()
        if mode != (0o700 if (root / "data" / name).is_dir() else 0o600)
    }
    assert loose == {}


def test_a_symlinked_lock_or_wal_is_refused_and_its_target_untouched(tmp_path: Path) -> None:
    root = tmp_path / "log"
    _log(root, batches=1)
    victim = tmp_path / "victim"
    victim.write_bytes(b"precious")
    (root / "LOCK").unlink()
    (root / "LOCK").symlink_to(victim)
    with pytest.raises(UnsafePath, match="symlink"):
        EventLog(root, node="n")
    assert victim.read_bytes() == b"precious"
    (root / "LOCK").unlink()
    wal = _wal(root)
    wal.rename(tmp_path / "moved.wal")
    wal.symlink_to(victim)
    with pytest.raises((UnsafePath, LogCorrupt)):
        EventLog(root, node="n")
    assert victim.read_bytes() == b"precious"


def test_a_symlinked_folder_under_data_is_refused(tmp_path: Path) -> None:
    root = tmp_path / "ws"
    run_cli("init", str(root))
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir(mode=0o755)
    (root / "data" / "keys").symlink_to(elsewhere)
    run_cli("--workspace", str(root), "emit", "--source", "shell", "--line", "x")
    done = run_cli("--workspace", str(root), "attend", "--replay", check=False)
    assert done.returncode == 1
    assert "UnsafePath" in done.stderr and "Traceback" not in done.stderr
    assert list(elsewhere.iterdir()) == []
    assert stat.S_IMODE(elsewhere.stat().st_mode) == 0o755


def test_the_daemon_will_not_replace_a_file_at_its_socket_path(tmp_path: Path) -> None:
    root = tmp_path / "ws"
    run_cli("init", str(root))
    keep = root / "data" / "nerve.sock"
    keep.write_text("not a socket")
    done = run_cli("--workspace", str(root), "daemon", "start", check=False, timeout=90)
    assert done.returncode == 1
    assert "not a socket" in done.stderr
    assert keep.read_text() == "not a socket"
