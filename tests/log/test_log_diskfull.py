"""A real full disk: a size-limited tmpfs, filled until writes fail, then freed.

Skipped (with the reason) where this process may not mount a file system.
"""

from __future__ import annotations

import collections
import json
import os
import stat
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from nerve.errors import LogError
from nerve.log.drafts import Draft
from nerve.log.reader import events_since
from nerve.log.store import EventLog
from nerve.log.verify import verify
from tests.daemon_util import COUNTER, write_sense
from tests.helpers.smallfs import fill, small_tmpfs


@pytest.fixture
def small_fs(tmp_path: Path) -> Iterator[Path]:
    with small_tmpfs(tmp_path / "mnt") as mnt:
        yield mnt


def _fill(folder: Path, leave: int) -> Path:
    """A ballast file taking all but about ``leave`` bytes of the file system."""
    fill(folder, leave)
    return folder / "ballast"


def _batch(start: int, count: int, size: int = 2000) -> list[Draft]:
    return [
        Draft.of(source=1, line=f"e{start + i}", payload={"blob": os.urandom(size // 2).hex()})
        for i in range(count)
    ]


def _ids(table: object) -> list[bytes]:
    return [bytes(x) for x in table.column("id").to_pylist()]  # type: ignore[attr-defined]


def test_full_disk_refuses_appends_keeps_every_acked_event_and_recovers(small_fs: Path) -> None:
    root = small_fs / "log"
    acked: list[bytes] = []
    log = EventLog(root, node="d", seal_max_events=60)
    acked += _ids(log.append_drafts(_batch(0, 50)))  # unsealed: 50 events, ~100 KB
    ballast = _fill(small_fs, leave=40_000)
    refused = 0
    for n in range(50, 120, 5):  # each batch fits in the WAL until it does not; seals fail
        try:
            acked += _ids(log.append_drafts(_batch(n, 5)))
        except LogError as exc:
            assert "No space left on device" in str(exc)
            refused += 1
    assert refused, "the disk never filled"
    assert log.seal_error is not None  # the size-triggered seal failed: kept, not raised
    ballast.unlink()
    acked += _ids(log.append_drafts(_batch(1000, 100)))  # space is back: appends and seal
    assert log.seal_error is None and log.tail_rows == 0  # the retry sealed every generation
    log.close()
    log = EventLog(root, node="d")
    acked += _ids(log.append_drafts(_batch(2000, 3)))
    log.close()
    stored = collections.Counter(e.id for e in events_since(root))
    assert [i for i, n in stored.items() if n > 1] == []
    assert [i for i in acked if i not in stored] == []
    report = verify(root)
    assert report.ok, report.problems
    assert report.warnings == []


def _nerve(ws: Path, *args: str, stdin: str | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "nerve", "--workspace", str(ws), *args],
        capture_output=True,
        text=True,
        input=stdin,
        timeout=60,
    )


def _warmed(ws: Path, timeout: float = 60.0) -> None:
    """Wait until the daemon has loaded its senses (``start`` returns once it listens)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        done = _nerve(ws, "status", "--json")
        if done.returncode == 0 and json.loads(done.stdout).get("warming") is False:
            return
        time.sleep(0.1)
    raise AssertionError("the daemon did not finish its warm-up")


def test_emit_acknowledges_a_stored_batch_when_the_seal_after_it_fails(small_fs: Path) -> None:
    ws = small_fs / "ws"
    assert _nerve(small_fs, "init", str(ws)).returncode == 0
    config = ws / "nerve.yaml"
    config.write_text(config.read_text().replace("seal_max_events: 100000", "seal_max_events: 60"))
    lines = "".join(
        json.dumps({"source": "shell", "line": f"e{i}", "payload": {"b": os.urandom(1000).hex()}})
        + "\n"
        for i in range(50)
    )
    assert _nerve(ws, "emit", "--jsonl", "-", stdin=lines).returncode == 0
    ballast = _fill(small_fs, leave=60_000)
    batch = "".join(lines.replace('"e', '"f').splitlines(keepends=True)[:12])  # WAL takes them
    first = _nerve(ws, "emit", "--jsonl", "-", "--key", "batch-1", "--json", stdin=batch)
    assert first.returncode == 0, first.stderr
    assert "Traceback" not in first.stderr
    assert "warning: the events are stored, but sealing them" in first.stderr
    again = _nerve(ws, "emit", "--jsonl", "-", "--key", "batch-1", "--json", stdin=batch)
    assert again.returncode == 0, again.stderr
    assert again.stdout == first.stdout  # the first result, and nothing appended twice
    ballast.unlink()
    assert _nerve(ws, "seal").returncode == 0
    lines_stored = [e.line for e in events_since(ws / "data" / "log")]
    assert collections.Counter(lines_stored)["f0"] == 1
    assert len([x for x in lines_stored if x.startswith("f")]) == batch.count("\n")
    assert verify(ws / "data" / "log").ok


def _states(ws: Path) -> int:
    return sum(1 for e in events_since(ws / "data" / "log") if e.kind == "sense.state")


def test_a_daemon_on_a_full_disk_refuses_then_recovers_and_keys_dedupe(small_fs: Path) -> None:
    ws = small_fs / "ws"
    assert _nerve(small_fs, "init", str(ws)).returncode == 0
    write_sense(ws, "counter", COUNTER)
    (ws / "nerve.yaml").write_text(
        "senses:\n  counter: {group: a, path: senses/counter, interval: 100ms}\n"
        "attention: {enabled: false}\nlog: {seal_max_events: 40}\n"
    )
    assert _nerve(ws, "daemon", "start").returncode == 0
    _warmed(ws)  # the sense runs once the warm-up has loaded it
    try:
        data = ws / "data"
        modes = {
            p.name: oct(stat.S_IMODE(p.stat().st_mode))
            for p in (data / "nerve.pid", data / "daemon.log")
        }
        assert modes == {"nerve.pid": "0o600", "daemon.log": "0o600"}
        rows = [json.dumps({"source": "shell", "line": f"k{i}"}) for i in range(5)]
        batch = "\n".join(rows) + "\n"
        first = _nerve(ws, "emit", "--jsonl", "-", "--key", "K1", "--json", stdin=batch)
        again = _nerve(ws, "emit", "--jsonl", "-", "--key", "K1", "--json", stdin=batch)
        assert first.returncode == again.returncode == 0
        assert first.stdout == again.stdout
        ballast = _fill(small_fs, leave=0)
        big = json.dumps({"source": "shell", "line": "big", "payload": {"b": "x" * 60_000}})
        refused = _nerve(ws, "emit", "--jsonl", "-", stdin=big + "\n")
        assert refused.returncode == 1 and "Traceback" not in refused.stderr
        assert "No space left on device" in refused.stderr
        _logged(ws, "result not stored")  # the sense's results cannot be stored meanwhile
        ballast.unlink()
        computed = _states(ws)
        deadline = time.monotonic() + 30
        while _states(ws) <= computed + 3 and time.monotonic() < deadline:
            time.sleep(0.2)
        assert _states(ws) > computed + 3, "the sense stopped computing after the disk filled"
        done = _nerve(ws, "emit", "--jsonl", "-", stdin=big + "\n")
        assert done.returncode == 0, done.stderr
        assert _nerve(ws, "seal").returncode == 0
    finally:
        _nerve(ws, "daemon", "stop")
    lines = [e.line for e in events_since(ws / "data" / "log")]
    assert [x for x in lines if x.startswith("k")] == [f"k{i}" for i in range(5)]
    assert lines.count("big") == 1
    assert verify(ws / "data" / "log").ok


def _logged(ws: Path, text: str, timeout: float = 30.0) -> None:
    """Wait until the daemon's log says ``text``."""
    log = ws / "data" / "daemon.log"
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if text in log.read_text(errors="replace"):
            return
        time.sleep(0.1)
    raise AssertionError(f"the daemon log never said {text!r}")
