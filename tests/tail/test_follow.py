"""Following the log (`nerve tail -f`): only new bytes are read, every event exactly once, in
order, across seals, compactions, imports and half-written commits."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from nerve.clock import Hlc
from nerve.events import Event
from nerve.log.codec import rows_of, table_from_events
from nerve.log.reader import TailReader
from nerve.log.select import TailFilter
from nerve.log.store import EventLog
from nerve.log.wal import encode_small_frame
from nerve.tail import follow_tables
from nerve.workspace import WorkspaceDir

APPENDER = """
import sys
from nerve.log.fields import EventFields
from nerve.workspace import WorkspaceDir
ws = WorkspaceDir.at(sys.argv[1])
with ws.open_log() as log:
    for start in range(0, 6000, 200):
        log.append_columns(EventFields(
            kind=["observation"] * 200, subject=[""] * 200, source=[5] * 200, trust=[3] * 200,
            valid_time_ns=[None] * 200, payload=[b""] * 200,
            line=[str(i) for i in range(start, start + 200)],
        ))
"""


def lines(table: object) -> list[str]:
    return [str(v) for v in table.column("line").to_pylist()]  # type: ignore[attr-defined]


def test_each_event_once_across_seals_compaction_and_imports(log_root: Path) -> None:
    log = EventLog(log_root, node="a", durability="os")
    reader = TailReader(log_root)
    try:
        for i in range(3):
            log.append(source=5, line=f"a{i}")
        assert lines(reader.poll()) == ["a0", "a1", "a2"]
        assert lines(reader.poll()) == []
        log.append(source=5, line="b0")
        log.append(source=5, line="b1")
        log.seal()  # b0, b1 were never read from the WAL: they come from the segment
        log.append(source=5, line="c0")
        assert lines(reader.poll()) == ["b0", "b1", "c0"]
        log.seal()
        log.append(source=5, line="d0")
        log.compact()  # old events in a new segment: nothing to repeat
        assert lines(reader.poll()) == ["d0"]
        newest = log.newest
        imported = [
            Event(
                hlc=Hlc(newest.physical_ns, newest.logical + 1 + i),
                node="b",
                kind="x",
                line=f"i{i}",
            )
            for i in range(2)
        ]
        log.import_events(imported)
        assert lines(reader.poll()) == ["i0", "i1"]
        assert reader.since == imported[-1].hlc
    finally:
        log.close()


def test_a_half_written_commit_is_read_once_it_is_whole(log_root: Path) -> None:
    with EventLog(log_root, node="a", durability="os") as log:
        log.append(source=5, line="first")
    reader = TailReader(log_root)
    assert lines(reader.poll()) == ["first"]
    with EventLog(log_root, node="a", durability="os") as log:
        event = log.append(source=5, line="whole")
    wal = sorted((log_root / "wal").iterdir())[-1]
    data = wal.read_bytes()
    frame = encode_small_frame(rows_of(table_from_events([event])))
    assert data.endswith(frame)
    wal.write_bytes(data[: len(data) - len(frame) // 2])  # the writer is mid-way through it
    assert lines(reader.poll()) == []
    wal.write_bytes(data)
    assert lines(reader.poll()) == ["whole"]


def test_follow_keeps_up_with_another_process_appending(workspace: WorkspaceDir) -> None:
    (workspace.root / "nerve.yaml").write_text("log:\n  seal_max_events: 1000\n  durability: os\n")
    proc = subprocess.Popen([sys.executable, "-c", APPENDER, str(workspace.root)])
    seen: list[str] = []
    try:
        for table in follow_tables(
            workspace, filt=TailFilter(), since=Hlc(0, 0), poll_s=0.05, stop_after_s=60
        ):
            seen += lines(table)
            if len(seen) >= 6000:
                break
    finally:
        proc.wait(timeout=60)
    assert seen == [str(i) for i in range(6000)]  # through six seals, none lost or repeated
