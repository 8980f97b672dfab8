"""Full verification: every id from its fields, every address from its bytes, the chain.

A report lists problems in log order; the first names the first corrupt thing.
"""

from __future__ import annotations

import contextlib
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import blake3
import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from nerve.clock import Hlc
from nerve.errors import LogCorrupt
from nerve.log.buffers import read_file
from nerve.log.codec import SCHEMA, fixed_bytes, hash_each, ids_of
from nerve.log.manifest import ManifestState, SegmentInfo, read_manifest
from nerve.log.paths import LogPaths
from nerve.log.recovery import ids_of_tables, missing_generations, settle_segments
from nerve.log.segments import ids_root
from nerve.log.wal import scan


@dataclass(frozen=True)
class Problem:
    """One corrupt thing: the file, and where known the row (0-based) and field."""

    file: str
    message: str
    row: int | None = None
    field: str | None = None

    def __str__(self) -> str:
        where = self.file
        if self.row is not None:
            where += f" row {self.row}"
        if self.field is not None:
            where += f" field {self.field}"
        return f"{where}: {self.message}"

    def to_json(self) -> dict[str, Any]:
        return {"file": self.file, "row": self.row, "field": self.field, "message": self.message}


@dataclass
class VerifyReport:
    """``problems`` fail verification; ``warnings`` name what a writer settles on its own
    (crash debris) or what was settled and recorded (adoptions, repairs, quarantine)."""

    events: int = 0
    digest: str = ""
    segments: int = 0
    problems: list[Problem] = field(default_factory=list)
    warnings: list[Problem] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not self.problems

    def to_json(self) -> dict[str, Any]:
        return {
            "events": self.events,
            "digest": self.digest,
            "ok": self.ok,
            "segments": self.segments,
            "problems": [p.to_json() for p in self.problems],
            "warnings": [p.to_json() for p in self.warnings],
        }


def _first_mismatch(a: bytes, b: bytes) -> int | None:
    if a == b:
        return None
    left = np.frombuffer(a, dtype=np.uint8).reshape(-1, 32)
    right = np.frombuffer(b, dtype=np.uint8).reshape(-1, 32)
    rows = min(len(left), len(right))
    diff = (left[:rows] != right[:rows]).any(axis=1)
    return int(diff.argmax()) if diff.any() else rows


def _row_problem(table: pa.Table, name: str) -> Problem | None:
    """The first row whose payload address or id does not match its fields."""
    bad_cid = _first_mismatch(
        hash_each(table.column("payload")), fixed_bytes(table.column("payload_cid"))
    )
    bad_id = _first_mismatch(ids_of(table), fixed_bytes(table.column("id")))
    if bad_cid is not None and (bad_id is None or bad_cid <= bad_id):
        return Problem(name, "payload bytes do not match payload_cid", bad_cid, "payload")
    if bad_id is not None:
        return Problem(
            name, "id does not match the event's fields (a field was changed)", bad_id, "id"
        )
    return _order_problem(table, name)


def _order_problem(table: pa.Table, name: str) -> Problem | None:
    phys = table.column("physical_ns").to_numpy()
    logi = table.column("logical").to_numpy().astype(np.int64)
    if len(phys) < 2:
        return None
    back = (phys[1:] < phys[:-1]) | ((phys[1:] == phys[:-1]) & (logi[1:] < logi[:-1]))
    if back.any():
        return Problem(name, "events are out of HLC order", int(back.argmax()) + 1, "hlc")
    return None


def _rel(paths: LogPaths, path: Path) -> str:
    """A path as the user knows it: from the workspace when the log is in ``data/log``."""
    base = paths.root.parent.parent if paths.root.parent.name == "data" else paths.root.parent
    return str(path.relative_to(base))


def _check_segment(paths: LogPaths, info: SegmentInfo, hasher: Any) -> tuple[list[Problem], int]:
    path = paths.segment(info.name)
    name = _rel(paths, path)
    try:
        data = read_file(path)  # Arrow's memory: see nerve.log.buffers
    except FileNotFoundError:
        return [Problem(name, "live segment is missing (deleted?)")], 0
    problems: list[Problem] = []
    if blake3.blake3(data).hexdigest() != info.name:
        problems.append(Problem(name, "segment bytes do not match its address (file changed)"))
    try:
        table = pq.read_table(pa.BufferReader(data))
        table = table.select(SCHEMA.names).cast(SCHEMA)
    except (pa.ArrowInvalid, pa.ArrowTypeError, OSError, KeyError) as exc:
        return [*problems, Problem(name, f"cannot be read as an event segment: {exc}")], 0
    problems += _segment_rows(table, info, name)
    hasher.update(fixed_bytes(table.column("id")))
    return _merge(problems), table.num_rows


def _segment_rows(table: pa.Table, info: SegmentInfo, name: str) -> list[Problem]:
    problems = []
    row = _row_problem(table, name)
    if row is not None:
        problems.append(row)
    if table.num_rows != info.rows:
        problems.append(
            Problem(name, f"holds {table.num_rows} rows, the manifest says {info.rows}")
        )
    elif ids_root(fixed_bytes(table.column("id"))) != info.root:
        problems.append(
            Problem(name, "ids do not match the manifest's root (rows changed or reordered)")
        )
    elif table.num_rows and (_stamp(table, 0) != info.min_hlc or _stamp(table, -1) != info.max_hlc):
        problems.append(Problem(name, "HLC range does not match the manifest"))
    return problems


def _merge(problems: list[Problem]) -> list[Problem]:
    """Fold a row-level finding into the file-level one so the first problem is precise."""
    if len(problems) >= 2 and problems[0].row is None and problems[1].row is not None:
        first, detail = problems[0], problems[1]
        merged = Problem(
            first.file,
            f"{first.message}; first bad row: {detail.message}",
            detail.row,
            detail.field,
        )
        return [merged, *problems[2:]]
    return problems


def _stamp(table: pa.Table, index: int) -> Hlc:
    row = index if index >= 0 else table.num_rows + index
    return Hlc(table.column("physical_ns")[row].as_py(), table.column("logical")[row].as_py())


def verify(root: Path) -> VerifyReport:
    """Recompute everything the log claims; never raises for corruption, reports it."""
    paths = LogPaths(Path(root))
    report = VerifyReport()
    errors: list[LogCorrupt] = []
    state = read_manifest(paths.manifest, errors=errors)
    rel = _rel(paths, paths.manifest)
    report.problems += [Problem(rel, str(e).split(": ", 1)[-1]) for e in errors]
    _check_manifest_tail(paths, state, report)
    hasher = blake3.blake3()
    previous: SegmentInfo | None = None
    for info in state.segments():
        if previous is not None and info.min_hlc < previous.max_hlc:
            report.problems.append(
                Problem(rel, f"segment {info.name[:12]} overlaps the one before it")
            )
        problems, rows = _check_segment(paths, info, hasher)
        report.problems += problems
        report.events += rows
        report.segments += 1
        previous = info
    tail_ids = _check_tail(paths, state, report, hasher)
    _check_unlisted(paths, state, tail_ids, report)
    report.digest = hasher.hexdigest()
    return report


def _check_manifest_tail(paths: LogPaths, state: ManifestState, report: VerifyReport) -> None:
    rel = _rel(paths, paths.manifest)
    with contextlib.suppress(FileNotFoundError):
        extra = paths.manifest.stat().st_size - state.size
        if extra > 0 and not report.problems:
            report.warnings.append(
                Problem(rel, f"a torn last record ({extra} bytes) that the next writer cuts")
            )
    for rec in state.records:
        if rec.get("op") in ("adopt", "repair"):
            report.warnings.append(Problem(rel, _recorded(rec)))


def _recorded(rec: dict[str, Any]) -> str:
    if rec["op"] == "adopt":
        rows = sum(int(a["rows"]) for a in rec.get("add", []))
        return f"record {rec['seq']}: {len(rec['add'])} segment(s) ({rows} events) re-adopted"
    lost = ", ".join(str(g) for g in rec.get("lost_wal_gens", []))
    return f"record {rec['seq']}: WAL generation(s) {lost} written off as lost by a repair"


def _check_tail(
    paths: LogPaths, state: ManifestState, report: VerifyReport, hasher: Any
) -> list[pa.Table]:
    files = [(g, p) for g, p in paths.wal_files() if g > state.sealed_gen]
    has_data = bool(state.records) or bool(files)
    missing = missing_generations(state, [g for g, _ in files], has_data)
    if missing:
        gens = ", ".join(str(g) for g in missing)
        report.problems.append(
            Problem(
                _rel(paths, paths.wal),
                f"WAL generation(s) {gens} are missing and the manifest does not account "
                "for them (deleted or renamed files: their events are lost)",
            )
        )
    tables = []
    for index, (_, path) in enumerate(files):
        table = _check_generation(paths, path, index == len(files) - 1, report)
        if table is None:
            continue
        problem = _row_problem(table, _rel(paths, path))
        if problem is not None:
            report.problems.append(problem)
        hasher.update(fixed_bytes(table.column("id")))
        report.events += table.num_rows
        tables.append(table)
    return tables


def _check_generation(
    paths: LogPaths, path: Path, newest: bool, report: VerifyReport
) -> pa.Table | None:
    name = _rel(paths, path)
    try:
        wal = scan(path, strict=False)
    except LogCorrupt as exc:
        report.problems.append(Problem(name, str(exc).split(": ", 1)[-1]))
        return None
    if wal.good_end == wal.size:
        return wal.table()
    where = f"{wal.cut_bytes} bytes from byte {wal.good_end}"
    if wal.later_good:
        report.problems.append(
            Problem(
                name,
                f"frame at byte {wal.good_end} fails its checksum but later frames "
                "are intact (events after it are not counted here)",
            )
        )
    elif wal.damaged:
        report.problems.append(
            Problem(name, f"{where} fail their checksum: damaged, not a torn append")
        )
    elif not newest:
        report.problems.append(
            Problem(name, f"ends in a torn frame ({where}), yet it is not the newest generation")
        )
    else:
        report.warnings.append(
            Problem(
                name,
                f"a torn final frame ({where}): an append a crash interrupted, "
                "never acknowledged; the next writer cuts it",
            )
        )
    return wal.table()


def _check_unlisted(
    paths: LogPaths, state: ManifestState, tail: list[pa.Table], report: VerifyReport
) -> None:
    """Files in segments/ the manifest does not list, and what is in quarantine/."""
    if paths.segments.is_dir():
        found = settle_segments(
            paths, state, ids_of_tables(tail), now_ns=time.time_ns(), grace_ns=2**62
        )
        for path in found.redundant:
            if not path.name.startswith(".tmp-"):
                report.warnings.append(
                    Problem(
                        _rel(paths, path),
                        "not in the manifest, but every event in it "
                        "is stored elsewhere (an interrupted seal or compaction)",
                    )
                )
        for info in found.adopt:
            report.problems.append(
                Problem(
                    _rel(paths, paths.segment(info.name)),
                    f"holds {info.rows} events the manifest does not list (the manifest "
                    "lost records); the next writer re-adopts it",
                )
            )
        for path in found.quarantine:
            report.problems.append(
                Problem(
                    _rel(paths, path),
                    "is not in the manifest and does not fit beside "
                    "the live segments; the next writer moves it to quarantine/",
                )
            )
    if paths.quarantine.is_dir():
        for path in sorted(paths.quarantine.iterdir()):
            report.warnings.append(
                Problem(
                    _rel(paths, path),
                    "kept in quarantine for inspection (see the "
                    "log.recovered events); delete it once inspected",
                )
            )
