"""What ``nerve repair`` does for live segments that are gone (deleted, or not a regular file).

Each such segment is rebuilt from what still holds its events: the files it replaced (a
compaction's inputs, still in ``segments/`` during the reader grace, or any other
content-named file there) and WAL generations sealed into it but not yet dropped. Rows are
taken within the segment's HLC range, deduplicated by id, and erasures already carried out
are applied again, so a rebuild never brings back an erased payload.

A rebuild whose ids give the recorded id root replaces the segment whole. Otherwise what was
found is kept as a new segment and the rest is written off: the ``repair`` record names the
segment, its HLC range, and how many events were kept and lost (``lost_segments``).
"""

from __future__ import annotations

import contextlib
from dataclasses import dataclass, field
from typing import Any

import blake3
import numpy as np
import pyarrow as pa

from nerve import fsio
from nerve.clock import Hlc
from nerve.errors import LogError
from nerve.log import erasure
from nerve.log import segments as seg
from nerve.log import wal as walmod
from nerve.log.codec import EMPTY, fixed_bytes
from nerve.log.lazy import pc
from nerve.log.manifest import ManifestState, SegmentInfo
from nerve.log.paths import LogPaths


@dataclass
class Salvage:
    """The record body a repair appends for gone segments, and what it says in words."""

    remove: list[str] = field(default_factory=list)
    add: list[SegmentInfo] = field(default_factory=list)
    restored: list[str] = field(default_factory=list)  # rebuilt byte for byte, same name
    lost: list[dict[str, Any]] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)

    def body(self, now_ns: int) -> dict[str, Any]:
        return {
            "op": "repair",
            "remove": self.remove,
            "add": [i.to_json() for i in self.add],
            "lost_segments": self.lost,
            "restored": self.restored,
            "time_ns": now_ns,
        }


def gone(paths: LogPaths, state: ManifestState) -> list[SegmentInfo]:
    """Live segments whose file is missing or is not a regular file."""
    return [s for s in state.segments() if not fsio.is_regular(paths.segment(s.name))]


def salvage(paths: LogPaths, state: ManifestState, broken: list[SegmentInfo]) -> Salvage:
    """Rebuild each broken segment from what else holds its events; see the module doc."""
    out = Salvage()
    sources = _sources(paths, state)
    erased = _erased_ids(paths, state, broken)
    for info in broken:
        table = _rows_in(sources, info)
        own = [e for e in erasure.erasures_in(table) if e.id in state.erasures]
        table = _reerase(table, _ids_named(own, erased))
        new = seg.write_segment(paths.segments, table) if table.num_rows else None
        if new is not None and new.name == info.name:
            out.restored.append(info.name)  # the same bytes: the file is simply back
        else:
            out.remove.append(info.name)
            out.add += [new] if new is not None else []
        out.notes.append(_note(info, new, out))
    return out


def _note(info: SegmentInfo, new: SegmentInfo | None, out: Salvage) -> str:
    where = f"live segment {info.name[:12]} (HLC {info.min_hlc} to {info.max_hlc})"
    if new is not None and new.root == info.root and new.rows == info.rows:
        return f"{where} was gone: rebuilt whole ({info.rows} events) from the files it replaced"
    kept = new.rows if new is not None else 0
    out.lost.append({**info.to_json(), "kept": kept, "lost": info.rows - kept})
    return (
        f"{where} was gone: {info.rows - kept} of its {info.rows} events are lost, "
        f"{kept} kept (found in other files)"
    )


def _sources(paths: LogPaths, state: ManifestState) -> list[pa.Table]:
    """Every readable copy of events not in a live segment: content-named files that are
    not live, and WAL generations already sealed."""
    out = []
    for path in sorted(paths.segments.iterdir()):
        name = path.name.removesuffix(".parquet")
        if name in state.live or path.name.startswith(".") or not fsio.is_regular(path):
            continue
        with contextlib.suppress(OSError, LogError):
            if blake3.blake3(fsio.read_bytes(path)).hexdigest() == name:
                out.append(seg.read_segment(path))
    for gen, path in paths.wal_files():
        if gen <= state.sealed_gen and fsio.is_regular(path):
            with contextlib.suppress(OSError, LogError):
                out += walmod.scan(path, strict=False).tables
    return out


def _rows_in(sources: list[pa.Table], info: SegmentInfo) -> pa.Table:
    """The distinct events of ``sources`` stamped within ``info``'s HLC range, sorted."""
    parts = [seg.up_to(seg.after(t, _before(info.min_hlc)), info.max_hlc) for t in sources]
    parts = [p for p in parts if p.num_rows]
    if not parts:
        return EMPTY
    table = seg.sort_events(seg.concat(parts))
    raw = fixed_bytes(table.column("id"))
    ids = np.frombuffer(raw, dtype=np.uint8).reshape(-1, 32)
    _, first = np.unique(ids, axis=0, return_index=True)
    return seg.sort_events(table.take(pa.array(np.sort(first))))


def _before(stamp: Hlc) -> Hlc:
    if stamp.logical:
        return Hlc(stamp.physical_ns, stamp.logical - 1)
    return Hlc(stamp.physical_ns - 1, 2**32 - 1)


def _erased_ids(paths: LogPaths, state: ManifestState, broken: list[SegmentInfo]) -> list[bytes]:
    """Ids that erasures already carried out name: a rebuild must not bring them back."""
    names = {b.name for b in broken}
    readable = [(s, paths.segment(s.name)) for s in state.segments() if s.name not in names]
    found = erasure.stored_erasures(readable, [])
    return _ids_named([e for e in found if e.id in state.erasures], [])


def _ids_named(found: list[erasure.Erasure], more: list[bytes]) -> list[bytes]:
    return [*more, *(bytes.fromhex(i) for e in found for i in e.events)]


def _reerase(table: pa.Table, erased: list[bytes]) -> pa.Table:
    if not table.num_rows or not erased:
        return table
    wanted = pa.array(erased, pa.binary(32))
    mask = np.asarray(pc.is_in(table.column("id"), wanted).to_numpy(zero_copy_only=False))
    rows = np.flatnonzero(mask)
    return erasure.erase_rows(table, rows) if len(rows) else table
