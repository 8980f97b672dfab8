"""Archives: whole old segments moved into a folder that is itself a read-only nerve log.

An archive folder ``DIR`` holds ``DIR/data/log/manifest.jsonl`` (its own hash chain) and
``DIR/data/log/segments/<blake3>.parquet``; ``nerve --workspace DIR replay --verify`` checks
it like any log. Its records have ``op: "archived"``, which makes the log read-only; each
names the live log (``log``: the blake3 of the live manifest's first line), the segments it
took, and the ``payload.erased`` events (whole, in the wire form) that erased rows in them,
since those events stay in the live log.

A move is: copy each segment (temp file, fsync, rename, folder fsync), append the archive's
record, then append the live manifest's ``archive`` record naming the segments, their id
roots (``archived``), the folder (``to``) and the archive's manifest head after the move
(``archive_head``). The live files are then retired like compacted ones. A crash between
steps leaves the segments live in the live log (and maybe copied or recorded in the
archive, which the next move to that folder takes up): nothing is ever in neither.
"""

from __future__ import annotations

import contextlib
import os
import secrets
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import blake3
import pyarrow as pa
import pyarrow.compute as pc

from nerve import fsio
from nerve.clock import Hlc
from nerve.errors import EventError, LogCorrupt, UsageError
from nerve.log import crypt, erasure
from nerve.log import segments as seg
from nerve.log.codec import fixed_bytes
from nerve.log.manifest import ManifestState, SegmentInfo, append_record, read_manifest
from nerve.log.paths import LogPaths
from nerve.log.wire import event_from_json, row_to_json

LOG_IN_FOLDER = Path("data") / "log"


def log_root(folder: Path) -> Path:
    return Path(folder) / LOG_IN_FOLDER


def log_id(state: ManifestState) -> str:
    """What names a log across its archives: the blake3 of its manifest's first line."""
    if not state.records:
        return ""
    # each record's prev is the hash of the line before it, exactly as stored
    return str(state.records[1]["prev"]) if len(state.records) > 1 else state.head


def prefix(segments: list[SegmentInfo], before: Hlc) -> list[SegmentInfo]:
    """The oldest segments wholly before ``before``: an archive always takes a prefix, so
    the archived and the live events stay one ordered history."""
    out = []
    for info in segments:
        if info.max_hlc >= before:
            break
        out.append(info)
    return out


# -- moving segments out -------------------------------------------------------------------


def check_target(live: LogPaths, folder: Path, state: ManifestState) -> LogPaths:
    """The archive's paths, refusing a folder that is not (or cannot become) this log's."""
    folder = Path(folder).expanduser().resolve()
    workspace = live.root.parent.parent.resolve()
    if folder == workspace or live.root.resolve().is_relative_to(folder):
        raise UsageError(f"{folder}: is the live workspace; archive to another folder")
    if folder.is_relative_to(live.root.resolve()):
        raise UsageError(f"{folder}: is inside the live log; archive to another folder")
    if (folder / "nerve.yaml").exists():
        raise UsageError(
            f"{folder}: holds a nerve.yaml (a workspace): an archive is a plain folder"
        )
    target = LogPaths(log_root(folder))
    theirs = read_manifest(target.manifest) if target.manifest.exists() else None
    if theirs is not None and theirs.records:
        if not theirs.read_only:
            raise UsageError(f"{target.root}: is a live log, not an archive; nothing was moved")
        owner = theirs.records[0].get("log")
        if owner != log_id(state):
            raise UsageError(
                f"{target.root}: archives another log (log {str(owner)[:12]}); nothing was moved",
                hint="archive each log to its own folder",
            )
    return target


def move_out(
    live: LogPaths,
    state: ManifestState,
    before: Hlc,
    to: Path,
    tail: list[pa.Table],
    now_ns: Callable[[], int],
) -> tuple[list[SegmentInfo], dict[str, Any] | None]:
    """Copy the segments wholly before ``before`` into the archive ``to`` and record them
    there; the segments, and the live record that completes the move (None: nothing)."""
    target = check_target(live, to, state)
    picked = prefix(state.segments(), before)
    if not picked:
        return [], None
    files = [live.segment(i.name) for i in state.segments()]
    erased = erased_ids(live.segment(i.name) for i in picked)
    head = copy_out(
        live,
        target,
        picked,
        owner=log_id(state),
        erasures=erasure_events(files, tail, erased),
        now_ns=now_ns(),
    )
    body = {
        "op": "archive",
        "remove": [i.name for i in picked],
        "archived": [i.to_json() for i in picked],
        "to": str(Path(to).expanduser().resolve()),
        "archive_head": head,
        "time_ns": now_ns(),
    }
    return picked, body


def copy_out(
    live: LogPaths,
    target: LogPaths,
    infos: list[SegmentInfo],
    *,
    owner: str,
    erasures: list[dict[str, Any]],
    now_ns: int,
) -> str:
    """Copy ``infos`` into the archive and record them there; the archive's new head."""
    fsio.private_dir(target.root)
    fsio.private_dir(target.segments)
    crypt.copy_keyring(live.root, target.root)  # an archive is a log: it needs its keyring
    theirs = read_manifest(target.manifest)
    todo = [i for i in infos if i.name not in theirs.live]
    for info in todo:
        _copy(live.segment(info.name), target.segments, info.name)
    if todo:
        body = {
            "op": "archived",
            "add": [i.to_json() for i in todo],
            "remove": [],
            "log": owner,
            "erasure": [e["id"] for e in erasures],
            "erasure_events": erasures,
            "time_ns": now_ns,
        }
        append_record(target.manifest, theirs, body)
    return theirs.head


def _copy(source: Path, folder: Path, name: str) -> None:
    data = fsio.read_bytes(source)
    if blake3.blake3(data).hexdigest() != name:
        raise LogCorrupt(
            f"{source}: segment bytes do not match its address; nothing was moved",
            hint="run `nerve replay --verify` for a full report",
        )
    final = seg.segment_path(folder, name)
    tmp = folder / f".tmp-{secrets.token_hex(8)}.parquet"
    try:
        fd = fsio.open_file(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL)
        try:
            fsio.write_all(fd, data, site="archive.write", path=tmp)
            fsio.fsync(fd, site="archive.fsync", path=tmp)
        finally:
            os.close(fd)
        fsio.rename(tmp, final, site="archive.rename")
        fsio.fsync_dir(folder, site="archive.dirsync")
    except BaseException:
        for path in (tmp, final):  # no record names the copy yet: leave no stray file
            with contextlib.suppress(OSError):
                os.unlink(path)
        raise


def erasure_events(
    files: Iterable[Path], tail: Iterable[pa.Table], erased_ids: set[bytes]
) -> list[dict[str, Any]]:
    """The ``payload.erased`` events (wire form) in these segments and tail that name any
    of ``erased_ids``; a segment holding none is read for its kinds only."""
    if not erased_ids:
        return []
    out = []
    for table in [*erasure.tables_with_erasures(files), *tail]:
        for found in erasure.erasures_in(table):
            if any(bytes.fromhex(e) in erased_ids for e in found.events):
                row = table.filter(pc.equal(table.column("id"), bytes.fromhex(found.id)))
                out.append(row_to_json(row.to_pylist()[0]))
    return out


def erased_ids(paths: Iterable[Path]) -> set[bytes]:
    """The ids of erased rows in these segment files."""
    out: set[bytes] = set()
    for path in paths:
        table = seg.read_segment(path, ["id", "line"])
        raw = fixed_bytes(table.filter(erasure.is_erased(table)).column("id"))
        out.update(raw[i : i + 32] for i in range(0, len(raw), 32))
    return out


def embedded_erasures(state: ManifestState) -> tuple[list[erasure.Erasure], list[str]]:
    """The erasures an archive's records carry, each checked against its id; and problems."""
    found, problems = [], []
    for rec in state.records:
        for obj in rec.get("erasure_events", []):
            try:
                event = event_from_json(obj, own=True)
            except EventError as exc:
                problems.append(
                    f"record {rec['seq']}: a payload.erased event does not verify: {exc}"
                )
                continue
            found.append(erasure.Erasure.parse(event.id, event.payload))
    return found, problems


# -- reading archives back -----------------------------------------------------------------


@dataclass
class Part:
    """One ``archive`` record of the live manifest, and where its segments were found."""

    seq: int
    to: str
    head: str
    segments: list[SegmentInfo]
    folder: Path | None = None
    problem: str | None = None  # why it could not be used (None: found and intact)
    missing: bool = False  # no folder holds it (as against: found but altered)

    @property
    def events(self) -> int:
        return sum(s.rows for s in self.segments)

    def to_json(self) -> dict[str, Any]:
        return {
            "record": self.seq,
            "to": self.to,
            "folder": None if self.folder is None else str(self.folder),
            "segments": len(self.segments),
            "events": self.events,
            "reachable": self.problem is None,
            "problem": self.problem,
        }


def parts(state: ManifestState) -> list[Part]:
    return [
        Part(
            int(rec["seq"]),
            str(rec.get("to", "")),
            str(rec.get("archive_head", "")),
            [SegmentInfo.from_json(o) for o in rec.get("archived", [])],
        )
        for rec in state.records
        if rec.get("op") == "archive"
    ]


def locate(part: Part, candidates: Iterable[Path], *, full: bool = False) -> Part:
    """Find the folder holding ``part``: its manifest chain holds the recorded head and
    lists every segment, and each segment file's ids give the recorded root (``full``:
    and its bytes their blake3 name, as verify checks)."""
    tried, stripped = [], None
    for folder in dict.fromkeys([*candidates, Path(part.to)]):
        root = log_root(folder)
        if not (root / "manifest.jsonl").is_file():
            tried.append(str(folder))
            if stripped is None and _holds_segments(LogPaths(root), part):
                stripped = folder
            continue
        part.folder = folder
        part.problem = _check_part(part, LogPaths(root), full)
        return part
    if stripped is not None:  # the segments are there, the manifest that binds them is not
        part.folder = stripped
        part.problem = "its manifest.jsonl is missing (deleted?): its segments are not bound"
        return part
    part.missing = True
    part.problem = f"not found (looked in {', '.join(tried) or 'no folder'})"
    return part


def _holds_segments(paths: LogPaths, part: Part) -> bool:
    """True when a folder holds the log folder an archive leaves, or any of its segments."""
    if paths.manifest.exists() or os.path.lexists(paths.manifest):
        return True  # there, but not a file
    return paths.segments.is_dir() and (
        any(paths.segment(i.name).exists() for i in part.segments)
        or not any(paths.segments.iterdir())
    )


def _check_part(part: Part, paths: LogPaths, full: bool) -> str | None:
    errors: list[LogCorrupt] = []
    theirs = read_manifest(paths.manifest, errors=errors)
    if errors:
        return f"its manifest is damaged: {errors[0]}"
    if part.head not in _heads(theirs):
        return (
            "its manifest does not hold the head the live log recorded "
            "(altered, or another archive)"
        )
    for info in part.segments:
        path = paths.segment(info.name)
        if info.name not in theirs.live or not path.exists():
            return f"segment {info.name[:12]} is missing"
        try:
            if full and blake3.blake3(fsio.read_bytes(path)).hexdigest() != info.name:
                return f"segment {info.name[:12]}: its bytes do not match its name (altered)"
            ids = fixed_bytes(seg.read_segment(path, ["id"]).column("id"))
        except crypt.KeyMissing:
            continue  # encrypted, no key: its address (checked when ``full``) is the proof
        except (LogCorrupt, OSError) as exc:
            return f"segment {info.name[:12]} cannot be read (altered): {exc}"
        if seg.ids_root(ids) != info.root:
            return f"segment {info.name[:12]} holds other ids than were archived (altered)"
    return None


def _heads(state: ManifestState) -> set[str]:
    return {str(rec["prev"]) for rec in state.records[1:]} | (
        {state.head} if state.records else set()
    )


def archived_ids(part: Part) -> list[pa.Table]:
    """The id (and kind) columns of a located, intact part's segments, in order."""
    assert part.folder is not None and part.problem is None
    paths = LogPaths(log_root(part.folder))
    try:
        return [seg.read_segment(paths.segment(i.name), ["id", "kind"]) for i in part.segments]
    except crypt.KeyMissing:
        return []  # encrypted, no key: the digest is not computed (verify says keyless)


@dataclass
class Coverage:
    """What a replay of the live log covers, given its archives."""

    parts: list[Part] = field(default_factory=list)

    @property
    def whole(self) -> bool:
        return all(p.problem is None for p in self.parts)

    @property
    def altered(self) -> list[Part]:
        return [p for p in self.parts if p.problem is not None and not p.missing]

    def describe(self, total: int) -> str:
        """In words, for ``total`` events fed to the digest."""
        if not self.parts:
            return "the whole history (nothing archived)"
        archived = sum(p.events for p in self.parts)
        live_events = total - archived if self.whole else total
        if self.whole:
            where = ", ".join(dict.fromkeys(str(p.folder) for p in self.parts))
            return (
                f"the whole history: {archived} archived events (read from {where}) "
                f"and {live_events} live ones"
            )
        gone = [p for p in self.parts if p.problem is not None]
        why = "; ".join(f"{p.folder or p.to}: {p.problem}" for p in gone)
        return (
            f"only the live log ({live_events} events); the {archived} older events archived "
            f"in {sum(len(p.segments) for p in self.parts)} segments are not included ({why})"
        )
