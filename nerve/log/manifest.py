"""The manifest: a hash-chained list of records saying which segments are live.

One canonical-JSON record per line. ``prev`` is the blake3 (hex) of the previous line's
bytes, so editing, dropping or reordering a record breaks the chain at that record.

Records by ``op``: ``seal``, ``compact``, ``adopt``, ``repair``; ``rewrite`` (an erasure:
``add[i]`` replaces ``remove[i]`` with the same ids, ``erasure`` names the ``payload.erased``
events); ``archive`` (segments moved to an archive folder, ``archived`` naming them); and,
in an archive's own manifest, ``archived`` (which makes that log read-only).
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import blake3

from nerve import fsio
from nerve.canonical import canonical_json, legacy_json
from nerve.clock import Hlc
from nerve.errors import LogCorrupt, LogError

ZERO_HASH = "0" * 64


@dataclass(frozen=True)
class SegmentInfo:
    """One sealed segment as the manifest records it."""

    name: str  # blake3 hex of the file bytes
    rows: int
    min_hlc: Hlc
    max_hlc: Hlc
    root: str  # blake3 hex over the segment's event ids, in order

    def to_json(self) -> dict[str, Any]:
        return {
            "segment": self.name,
            "rows": self.rows,
            "min": list(self.min_hlc),
            "max": list(self.max_hlc),
            "root": self.root,
        }

    @classmethod
    def from_json(cls, obj: dict[str, Any]) -> SegmentInfo:
        return cls(
            str(obj["segment"]),
            int(obj["rows"]),
            Hlc(*obj["min"]),
            Hlc(*obj["max"]),
            str(obj["root"]),
        )


@dataclass
class ManifestState:
    """The manifest folded: live segments in HLC order and the newest sealed WAL generation."""

    records: list[dict[str, Any]] = field(default_factory=list)
    live: dict[str, SegmentInfo] = field(default_factory=dict)
    retired: dict[str, int] = field(default_factory=dict)  # name -> time_ns it was removed
    sealed_gen: int = 0
    lost_gens: set[int] = field(default_factory=set)  # WAL generations a repair wrote off
    archived: dict[str, SegmentInfo] = field(default_factory=dict)  # moved to an archive
    erasures: set[str] = field(default_factory=set)  # payload.erased ids a rewrite carried out
    read_only: bool = False  # an archive: nothing appends to it but another archive move
    head: str = ZERO_HASH
    size: int = 0  # bytes of the good prefix
    # A record failed and could not be cut back off: the file may hold it whole. Until a
    # later append cuts the file back to ``size``, nothing it might name may be deleted.
    uncertain: bool = False

    def segments(self) -> list[SegmentInfo]:
        return sorted(self.live.values(), key=lambda s: (s.min_hlc, s.max_hlc))

    def max_hlc(self) -> Hlc | None:
        return max((s.max_hlc for s in self.live.values()), default=None)

    def known(self) -> set[str]:
        return set(self.live) | set(self.retired)


def line_hash(line: bytes) -> str:
    return blake3.blake3(line).hexdigest()


def _apply(state: ManifestState, rec: dict[str, Any]) -> None:
    for obj in rec.get("add", []):
        info = SegmentInfo.from_json(obj)
        state.live[info.name] = info
        state.retired.pop(info.name, None)
    for name in rec.get("remove", []):
        if state.live.pop(name, None) is not None:
            state.retired[name] = int(rec.get("time_ns", 0))
    if "wal_gen" in rec:
        state.sealed_gen = max(state.sealed_gen, int(rec["wal_gen"]))
    state.lost_gens.update(int(g) for g in rec.get("lost_wal_gens", []))
    for obj in rec.get("archived", []):
        info = SegmentInfo.from_json(obj)
        state.archived[info.name] = info
    state.erasures.update(str(e) for e in rec.get("erasure", []))
    state.read_only = state.read_only or rec.get("op") == "archived"


def read_manifest(
    path: Path, *, strict_tail: bool = False, errors: list[LogCorrupt] | None = None
) -> ManifestState:
    """Fold the manifest. A torn last line is ignored (or raises with ``strict_tail``).

    With ``errors`` given, the first bad record is appended there instead of raised and the
    state folded so far is returned.
    """
    state = ManifestState()
    try:
        data = fsio.read_bytes(path)
    except FileNotFoundError:
        return state
    pos = 0
    for number, raw in enumerate(data.split(b"\n")[:-1], start=1):
        try:
            rec = _parse_line(path, number, raw, state)
        except LogCorrupt as exc:
            if errors is None:
                raise
            errors.append(exc)
            return state
        _apply(state, rec)
        state.records.append(rec)
        state.head = line_hash(raw)
        pos += len(raw) + 1
    if pos < len(data) and strict_tail:
        raise LogCorrupt(f"{path}: line {len(state.records) + 1} is incomplete (torn write)")
    state.size = pos
    return state


def _parse_line(path: Path, number: int, raw: bytes, state: ManifestState) -> dict[str, Any]:
    where = f"{path}: line {number}"
    try:
        rec = json.loads(raw)
    except ValueError:
        raise LogCorrupt(f"{where}: not valid JSON") from None
    if not isinstance(rec, dict) or (canonical_json(rec) != raw and legacy_json(rec) != raw):
        raise LogCorrupt(f"{where}: record is not canonical JSON (edited?)")
    if rec.get("seq") != len(state.records):
        raise LogCorrupt(
            f"{where}: seq {rec.get('seq')} where {len(state.records)} was expected "
            "(a record was removed, duplicated or reordered)"
        )
    if rec.get("prev") != state.head:
        before = f"line {number - 1}" if number > 1 else "the genesis (zero) hash"
        raise LogCorrupt(
            f"{where}: prev does not match the hash of {before} "
            f"({before} was edited, or a record was removed or reordered)"
        )
    try:
        for obj in [*rec.get("add", []), *rec.get("archived", [])]:
            SegmentInfo.from_json(obj)
    except (KeyError, TypeError, ValueError) as exc:
        raise LogCorrupt(f"{where}: malformed segment entry: {exc}") from None
    return rec


def append_record(path: Path, state: ManifestState, body: dict[str, Any]) -> dict[str, Any]:
    """Append one record durably (write, fsync) and fold it into ``state``.

    A record that fails is cut back off the file; if even that fails, the record may be
    stored after all: ``state.uncertain`` says so (callers then delete nothing it names)
    and the error says the outcome is unknown until the next open settles it.
    """
    rec = {**body, "seq": len(state.records), "prev": state.head}
    line = canonical_json(rec)
    created = not path.exists()
    fd = fsio.open_file(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND)
    try:
        if os.fstat(fd).st_size != state.size:
            _cut(fd, path, state)  # drop a torn tail (or a failed record) first
        state.uncertain = False
        try:
            fsio.write_all(fd, line + b"\n", site="manifest.write", path=path)
            fsio.fsync(fd, site="manifest.fsync", path=path)
            if created:
                fsio.fsync_dir(path.parent, site="manifest.dirsync")
        except OSError as exc:
            _cut_after_failure(fd, path, state, exc)
            raise
    finally:
        os.close(fd)
    _apply(state, rec)
    state.records.append(rec)
    state.head = line_hash(line)
    state.size += len(line) + 1
    return rec


def _cut(fd: int, path: Path, state: ManifestState) -> None:
    fsio.truncate(fd, state.size, site="manifest.truncate", path=path)
    os.fsync(fd)


def _cut_after_failure(fd: int, path: Path, state: ManifestState, exc: OSError) -> None:
    """A record that is not durable is not a record: cut it off, or say it may be one."""
    try:
        _cut(fd, path, state)
    except OSError as cut:
        state.uncertain = True
        raise LogError(
            f"{path}: a manifest record failed ({exc.strerror}) and could not be cut back "
            f"off ({cut.strerror}): it may be stored; nothing it names is deleted, and the "
            "next open of the log settles it",
            hint="fix the disk, then run any nerve command that opens the log",
        ) from exc
