"""Full verification: every id from its fields, every address from its bytes, the chain.

A report lists problems in log order; the first names the first corrupt thing.

An erased row (payload and line null, see :mod:`nerve.log.erasure`) cannot have its id
recomputed: it is checked against the segment's id root in the manifest instead, and must be
named, with the fields it keeps, by an intact ``payload.erased`` event. Such rows are
reported as notes; a missing payload or line that no erasure names is corruption.
"""

from __future__ import annotations

import collections
import contextlib
import os
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import blake3
import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from nerve import fsio
from nerve.clock import Hlc
from nerve.errors import LogCorrupt, LogError
from nerve.log import anchor as anchors
from nerve.log import archive, crypt, erasure
from nerve.log.buffers import read_file
from nerve.log.codec import (
    SCHEMA,
    check_types,
    conform,
    fixed_bytes,
    hash_each,
    ids_of,
    kept_hashes,
)
from nerve.log.lazy import pc
from nerve.log.manifest import ManifestState, SegmentInfo, read_manifest
from nerve.log.paths import LogPaths
from nerve.log.reader import Checkpoint, IdHasher, feed_archives
from nerve.log.recovery import ids_of_tables, missing_generations, settle_segments
from nerve.log.segments import ids_root, schema_for
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
    (crash debris) or what was settled and recorded (adoptions, repairs, quarantine);
    ``notes`` say what verified differently and why (erasures)."""

    events: int = 0
    digest: str = ""
    segments: int = 0
    problems: list[Problem] = field(default_factory=list)
    warnings: list[Problem] = field(default_factory=list)
    notes: list[Problem] = field(default_factory=list)
    checkpoints: list[Checkpoint] = field(default_factory=list)
    covers: str = ""
    archives: list[dict[str, Any]] = field(default_factory=list)
    keyless: bool = False  # an encrypted log checked without its key: addresses and chain

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
            "notes": [p.to_json() for p in self.notes],
            "checkpoints": [c.to_json() for c in self.checkpoints],
            "covers": self.covers,
            "archives": self.archives,
        } | ({"keyless": True} if self.keyless else {})


@dataclass
class _Erased:
    """What verification gathers about erasures as it reads the log."""

    rows: list[tuple[str, np.ndarray, bytes, bytes]] = field(default_factory=list)
    found: list[erasure.Erasure] = field(default_factory=list)
    # event id -> the applied erasure naming it: each must be found erased, never intact
    named: dict[bytes, str] = field(default_factory=dict)


def _first_mismatch(a: bytes, b: bytes) -> int | None:
    if a == b:
        return None
    left = np.frombuffer(a, dtype=np.uint8).reshape(-1, 32)
    right = np.frombuffer(b, dtype=np.uint8).reshape(-1, 32)
    rows = min(len(left), len(right))
    diff = (left[:rows] != right[:rows]).any(axis=1)
    return int(diff.argmax()) if diff.any() else rows


def _row_problem(
    table: pa.Table, name: str, erased: _Erased | None = None, hashes: bytes | None = None
) -> Problem | None:
    """The first row whose payload address or id does not match its fields; erased rows
    (only in a segment, with ``erased`` given) are set aside for :func:`_check_erasures`.
    ``hashes``: blake3 of each row's payload, when the caller has them already."""
    missing = np.asarray(_missing(table).to_numpy(zero_copy_only=False), dtype=bool)
    if not missing.any():
        return _whole_rows(table, name, hashes) or _order_problem(table, name)
    rows = np.flatnonzero(missing)
    if erased is None:
        return Problem(name, "payload or line is missing (null)", int(rows[0]), "payload")
    picked = table.take(pa.array(rows))
    half = pc.xor(pc.is_null(picked.column("payload")), pc.is_null(picked.column("line")))
    if pc.any(half).as_py():
        first = int(rows[np.flatnonzero(half.to_numpy(zero_copy_only=False))[0]])
        return Problem(
            name, "payload or line is missing but not both (an erasure takes both)", first, "line"
        )
    erased.rows.append((name, rows, fixed_bytes(picked.column("id")), kept_hashes(picked)))
    keep = np.flatnonzero(~missing)
    kept = None if hashes is None else _taken(hashes, keep)
    problem = _whole_rows(table.take(pa.array(keep)), name, kept)
    if problem is not None and problem.row is not None:
        problem = Problem(problem.file, problem.message, int(keep[problem.row]), problem.field)
    return problem or _order_problem(table, name)


def _missing(table: pa.Table) -> pa.ChunkedArray:
    return pc.or_(pc.is_null(table.column("payload")), pc.is_null(table.column("line")))


def _taken(hashes: bytes, rows: np.ndarray) -> bytes:
    return bytes(np.frombuffer(hashes, dtype=np.uint8).reshape(-1, 32)[rows].tobytes())


def _whole_rows(table: pa.Table, name: str, hashes: bytes | None = None) -> Problem | None:
    computed = hash_each(table.column("payload")) if hashes is None else hashes
    bad_cid = _first_mismatch(computed, fixed_bytes(table.column("payload_cid")))
    bad_id = _first_mismatch(ids_of(table), fixed_bytes(table.column("id")))
    if bad_cid is not None and (bad_id is None or bad_cid <= bad_id):
        return Problem(name, "payload bytes do not match payload_cid", bad_cid, "payload")
    if bad_id is not None:
        return Problem(
            name, "id does not match the event's fields (a field was changed)", bad_id, "id"
        )
    return None


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


def _check_segment(
    paths: LogPaths, info: SegmentInfo, hasher: IdHasher, erased: _Erased, keyless: bool = False
) -> tuple[list[Problem], int]:
    path = paths.segment(info.name)
    name = _rel(paths, path)
    if not fsio.is_regular(path):
        what = "is not a regular file" if os.path.lexists(path) else "is missing (deleted?)"
        return [Problem(name, f"live segment {what}")], 0
    try:
        data = read_file(path)  # Arrow's memory: see nerve.log.buffers
    except FileNotFoundError:
        return [Problem(name, "live segment is missing (deleted?)")], 0
    problems: list[Problem] = []
    if blake3.blake3(data).hexdigest() != info.name:
        problems.append(Problem(name, "segment bytes do not match its address (file changed)"))
    if keyless:  # the address is over the ciphertext: proven whole without reading it
        return problems, info.rows
    try:
        plain = crypt.open_bytes(data, name) if crypt.has_envelope(data) else data
        stored = pq.read_table(pa.BufferReader(plain)).select(SCHEMA.names)
        check_types(stored.schema)
        # each payload is hashed once: that fills the addresses a segment leaves out (see
        # codec.stored_form) and checks the ones it keeps
        hashes = hash_each(stored.column("payload"))
        table = conform(stored, hashes)
        table = table.cast(schema_for(table))
    except (pa.ArrowInvalid, pa.ArrowTypeError, OSError, KeyError, LogCorrupt) as exc:
        return [*problems, Problem(name, f"cannot be read as an event segment: {exc}")], 0
    problems += _segment_rows(table, info, name, erased, hashes)
    problems += _named_but_intact(table, name, erased.named)
    hasher.feed(table.column("id"), table.column("kind"))
    erased.found += erasure.erasures_in(table)
    return _merge(problems), table.num_rows


def _segment_rows(
    table: pa.Table, info: SegmentInfo, name: str, erased: _Erased, hashes: bytes
) -> list[Problem]:
    problems = []
    row = _row_problem(table, name, erased, hashes)
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


def _named_but_intact(table: pa.Table, name: str, named: dict[bytes, str]) -> list[Problem]:
    """Rows an applied erasure names whose payload and line are still there: the erasure
    record lies (or the rewrite it recorded was undone)."""
    if not named or not table.num_rows:
        return []
    wanted = pa.array(list(named), pa.binary(32))
    hit = pc.and_(pc.is_in(table.column("id"), wanted), pc.invert(_missing(table)))
    rows = np.flatnonzero(np.asarray(hit.to_numpy(zero_copy_only=False), dtype=bool))
    out = []
    for row in rows.tolist()[:10]:
        eid = bytes(table.column("id")[row].as_py())
        out.append(
            Problem(
                name,
                f"payload.erased {named[eid][:12]} (carried out, says the manifest) names this "
                "event, but its payload and line are intact: the erasure record lies",
                row,
                "payload",
            )
        )
    return out


def _applied_names(
    paths: LogPaths, state: ManifestState, embedded: list[erasure.Erasure]
) -> dict[bytes, str]:
    """Every event id an erasure the manifest says was carried out names."""
    if not state.erasures:
        return {}
    tables: list[pa.Table] = []
    for info in state.segments():
        with contextlib.suppress(LogError, OSError, pa.ArrowException):
            tables += erasure.tables_with_erasures([paths.segment(info.name)])
    for gen, path in paths.wal_files():
        if gen > state.sealed_gen:
            with contextlib.suppress(LogError, OSError):
                tables += scan(path, strict=False).tables
    found = [e for t in tables for e in erasure.erasures_in(t)] + embedded
    return {bytes.fromhex(eid): e.id for e in found if e.id in state.erasures for eid in e.events}


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


def verify(
    root: Path, archives: Sequence[Path] = (), *, anchor: Path | None = None
) -> VerifyReport:
    """Recompute everything the log claims; never raises for corruption, reports it.

    Segments moved to archive folders (``archives``, else the folder recorded) are checked
    against the ids the live manifest recorded, and counted in the digest, when reachable;
    ``nerve --workspace ARCHIVE replay --verify`` checks an archive through and through.
    ``anchor``: the file keeping the manifest chain this verifier accepted before
    (:mod:`nerve.log.anchor`); a rewritten chain is a problem, a clean verify advances it."""
    paths = LogPaths(Path(root))
    report = VerifyReport(keyless=_keyless(paths.root))
    errors: list[LogCorrupt] = []
    rel = _rel(paths, paths.manifest)
    try:
        state = read_manifest(paths.manifest, errors=errors)
    except LogError as exc:  # not a regular file: nothing else can be checked against it
        report.problems.append(Problem(rel, str(exc).split(": ", 1)[-1]))
        return report
    report.problems += [Problem(rel, str(e).split(": ", 1)[-1]) for e in errors]
    _check_manifest_tail(paths, state, report)
    hasher, erased = IdHasher(), _Erased()
    embedded, bad = archive.embedded_erasures(state)
    erased.found += embedded
    erased.named = _applied_names(paths, state, embedded)
    report.problems += [Problem(rel, m) for m in bad]
    coverage = feed_archives(state, archives, hasher, full=True)
    _report_archives(coverage, report)
    archived_events = hasher.events
    previous: SegmentInfo | None = None
    for info in state.segments():
        if previous is not None and info.min_hlc < previous.max_hlc:
            report.problems.append(
                Problem(rel, f"segment {info.name[:12]} overlaps the one before it")
            )
        problems, rows = _check_segment(paths, info, hasher, erased, report.keyless)
        report.problems += problems
        report.events += rows
        report.segments += 1
        previous = info
    tail_ids = _check_tail(paths, state, report, hasher, erased)
    _check_unlisted(paths, state, tail_ids, report)
    _check_erasures(state, erased, report)
    report.digest = "" if report.keyless else hasher.hexdigest()
    report.checkpoints = hasher.checkpoints if coverage.whole else []  # a partial count misleads
    if report.keyless:
        report.notes.append(Problem(rel, _KEYLESS))
    report.events += archived_events
    report.covers = coverage.describe(report.events)
    if anchor is not None:
        _check_anchor(anchor, state, report, rel)
    return report


_KEYLESS = (
    "encrypted, checked without the key: every segment's address, the WAL's checksums and "
    "the manifest chain; event ids and the replay digest need the key"
)


def _unlisted_by_name(paths: LogPaths, state: ManifestState, report: VerifyReport) -> None:
    """Without the key, a segment file the manifest does not list is named, not read."""
    for path in sorted(paths.segments.glob("*.parquet")):
        if not path.name.startswith(".tmp-") and path.stem not in state.live:
            report.warnings.append(
                Problem(
                    _rel(paths, path),
                    "not in the manifest (without the key its events cannot be compared "
                    "with the log's; verify with the key to settle it)",
                )
            )


def _keyless(root: Path) -> bool:
    """True for an encrypted log whose key is not given (a wrong key given is an error)."""
    try:
        crypt.cipher_for(root)
    except crypt.KeyMissing:
        return True
    return False


def _check_anchor(path: Path, state: ManifestState, report: VerifyReport, rel: str) -> None:
    accepted = anchors.load(path)
    why = None if accepted is None else anchors.check(state, accepted)
    if why is not None:
        report.problems.append(
            Problem(rel, f"the manifest {why}; if you changed it on purpose, delete {path}")
        )
    if report.ok:
        try:
            anchors.advance(path, state)
        except OSError as exc:
            report.warnings.append(Problem(str(path), f"cannot record the verified chain: {exc}"))


def _report_archives(coverage: archive.Coverage, report: VerifyReport) -> None:
    report.archives = [p.to_json() for p in coverage.parts]
    for part in coverage.parts:
        where = str(part.folder or part.to)
        what = f"archive of manifest record {part.seq} ({part.events} events)"
        if part.missing:
            report.warnings.append(Problem(where, f"{what}: {part.problem}"))
        elif part.problem is not None:
            report.problems.append(Problem(where, f"{what}: {part.problem}"))


def _check_manifest_tail(paths: LogPaths, state: ManifestState, report: VerifyReport) -> None:
    rel = _rel(paths, paths.manifest)
    with contextlib.suppress(FileNotFoundError):
        extra = paths.manifest.stat().st_size - state.size
        if extra > 0 and not report.problems:
            report.warnings.append(
                Problem(rel, f"a torn last record ({extra} bytes) that the next writer cuts")
            )
    added: dict[str, SegmentInfo] = {}
    for rec in state.records:
        if rec.get("op") in ("adopt", "repair"):
            report.warnings.append(Problem(rel, _recorded(rec)))
        if rec.get("op") == "rewrite":
            report.problems += [Problem(rel, m) for m in _rewrite_problems(rec, added)]
        added.update((i.name, i) for i in map(SegmentInfo.from_json, rec.get("add", [])))


def _rewrite_problems(rec: dict[str, Any], added: dict[str, SegmentInfo]) -> list[str]:
    """An erasure's rewrite must keep every id, in order: each new segment has the rows,
    HLC range and id root of the one it replaces."""
    out = []
    for old, obj in zip(rec.get("remove", []), rec.get("add", []), strict=False):
        new, before = SegmentInfo.from_json(obj), added.get(old)
        if before is None or (before.rows, before.min_hlc, before.max_hlc, before.root) != (
            new.rows,
            new.min_hlc,
            new.max_hlc,
            new.root,
        ):
            out.append(
                f"record {rec['seq']}: rewrite of segment {old[:12]} into {new.name[:12]} "
                "changes its ids (an erasure keeps every id): not an erasure"
            )
    if len(rec.get("remove", [])) != len(rec.get("add", [])):
        out.append(f"record {rec['seq']}: rewrite removes and adds different numbers of segments")
    return out


def _check_erasures(state: ManifestState, erased: _Erased, report: VerifyReport) -> None:
    """Every erased row must be named, with the fields it keeps, by an intact erasure."""
    index: dict[bytes, tuple[erasure.Erasure, bytes]] = {}
    for found in erased.found:
        for eid, held in zip(found.events, found.kept, strict=False):
            index[bytes.fromhex(eid)] = (found, bytes.fromhex(held))
    counts: collections.Counter[str] = collections.Counter()
    for name, rows, ids, kept in erased.rows:
        for j, row in enumerate(rows.tolist()):
            hit = index.get(ids[j * 32 : j * 32 + 32])
            if hit is None:
                report.problems.append(Problem(name, _UNNAMED, row, "payload"))
            elif hit[1] != kept[j * 32 : j * 32 + 32]:
                message = f"fields changed since payload.erased {hit[0].id[:12]} erased this event"
                report.problems.append(Problem(name, message, row, "id"))
            else:
                counts[hit[0].id] += 1
    for found in {e.id: e for e in erased.found}.values():
        _note_erasure(found, counts[found.id], found.id in state.erasures, report)


_UNNAMED = (
    "payload and line are missing and no payload.erased event names this event "
    "(damage or tampering, not an erasure)"
)


def _note_erasure(found: erasure.Erasure, count: int, done: bool, report: VerifyReport) -> None:
    what = f"payload.erased {found.id[:12]} ({found.reason})"
    if not done:
        report.warnings.append(
            Problem(
                what,
                f"lists {len(found.events)} events not erased yet (a forget was interrupted); "
                "the next `nerve forget` or daemon start finishes it",
            )
        )
    elif count:
        report.notes.append(
            Problem(
                what,
                f"{count} events' payload and line erased; their ids cannot be recomputed from "
                "their fields, so they were checked against the segments' id roots in the "
                "manifest, and their other fields against the erasure",
            )
        )


def _recorded(rec: dict[str, Any]) -> str:
    if rec["op"] == "adopt":
        rows = sum(int(a["rows"]) for a in rec.get("add", []))
        return f"record {rec['seq']}: {len(rec['add'])} segment(s) ({rows} events) re-adopted"
    said = []
    if rec.get("lost_wal_gens"):
        gens = ", ".join(str(g) for g in rec["lost_wal_gens"])
        said.append(f"WAL generation(s) {gens} written off as lost")
    for obj in rec.get("lost_segments", []):
        said.append(
            f"segment {str(obj['segment'])[:12]} (HLC {obj['min']} to {obj['max']}) was gone: "
            f"{obj['lost']} of its {obj['rows']} events written off as lost"
        )
    rebuilt = len(rec.get("remove", [])) - len(rec.get("lost_segments", []))
    rebuilt += len(rec.get("restored", []))
    if rebuilt > 0:
        said.append(f"{rebuilt} gone segment(s) rebuilt whole from the files they replaced")
    return f"record {rec['seq']}: by a repair, " + "; ".join(said or ["nothing lost"])


def _check_tail(
    paths: LogPaths, state: ManifestState, report: VerifyReport, hasher: IdHasher, erased: _Erased
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
        newest = index == len(files) - 1
        table = _check_generation(paths, path, newest, report, not report.keyless)
        if table is None or report.keyless:
            continue
        problem = _row_problem(table, _rel(paths, path))
        if problem is not None:
            report.problems.append(problem)
        hasher.feed(table.column("id"), table.column("kind"))
        erased.found += erasure.erasures_in(table)
        report.events += table.num_rows
        tables.append(table)
    return tables


def _check_generation(
    paths: LogPaths, path: Path, newest: bool, report: VerifyReport, decode: bool = True
) -> pa.Table | None:
    name = _rel(paths, path)
    try:
        wal = scan(path, strict=False, decode=decode)
    except LogError as exc:  # LogCorrupt, or UnsafePath: not a regular file
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
    if paths.segments.is_dir() and report.keyless:
        _unlisted_by_name(paths, state, report)
    if paths.segments.is_dir() and not report.keyless:
        found = settle_segments(
            paths, state, ids_of_tables(tail), now_ns=time.time_ns(), grace_ns=2**62
        )
        for path in found.redundant:
            if not path.name.startswith(".tmp-"):
                report.warnings.append(
                    Problem(
                        _rel(paths, path),
                        "not in the manifest, but every event in it "
                        "is stored elsewhere (an interrupted seal, compaction or erasure)",
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
