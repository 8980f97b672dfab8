"""Erasure: the payload bytes and line of named events removed; ids, order and digest kept.

An erased row keeps every column but ``payload`` and ``line``, which become null (a segment
holding one is written with :data:`~nerve.log.codec.ERASABLE_SCHEMA`). Its ``payload_cid``
and ``id`` stay, so the replay digest and the segment's id root are unchanged, but the id can
no longer be recomputed from the row. What binds the row instead:

- the manifest: a ``rewrite`` record replaces each segment with one holding the same ids in
  the same order (same id root), so the ids still chain back to the record that sealed them;
- the ``payload.erased`` event(s) the rewrite names, which list every erased event's id and
  the blake3 of its preimage without the line (``kept``): the fields an erasure keeps.

An erasure is one ``payload.erased`` event per :data:`PART_EVENTS` erased events, appended
in one group commit, then one ``rewrite`` record swapping every affected segment at once.
The new files are written before the event is appended and discarded if anything after
fails; an event whose rewrite never got recorded is *pending* and is carried out by the
next erasure (:func:`pending`).
"""

from __future__ import annotations

import collections
import json
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa

from nerve.errors import LogCorrupt
from nerve.log import segments as seg
from nerve.log.batchkeys import KEY_KIND
from nerve.log.codec import SCHEMA, fixed_bytes, ids_of, kept_hashes
from nerve.log.drafts import Draft
from nerve.log.lazy import pc
from nerve.log.manifest import SegmentInfo

ERASED_KIND = "payload.erased"
# Records nerve needs to verify and resume itself: never erased, whatever the selection.
PROTECTED_KINDS = frozenset({ERASED_KIND, KEY_KIND, "chain.link", "attention.snapshot"})
PART_EVENTS = 50_000
NO_PAYLOAD = [n for n in SCHEMA.names if n != "payload"]

Predicate = Callable[[pa.Table], "pa.Array | pa.ChunkedArray"]


@dataclass
class Found:
    """The rows of one segment (``name``; None for the unsealed tail) an erasure takes."""

    name: str | None
    rows: np.ndarray
    ids: bytes
    cids: bytes
    kept: bytes
    sources: collections.Counter[int]

    @property
    def count(self) -> int:
        return len(self.rows)


@dataclass
class Plan:
    """What a selection takes, and what it matched but leaves (already erased, protected)."""

    found: list[Found] = field(default_factory=list)
    already: int = 0
    protected: int = 0
    replaced: list[tuple[SegmentInfo, SegmentInfo]] = field(default_factory=list)
    erasures: list[str] = field(default_factory=list)  # the payload.erased ids recorded

    @property
    def count(self) -> int:
        return sum(f.count for f in self.found)

    def ids(self) -> list[bytes]:
        raw = b"".join(f.ids for f in self.found)
        return [raw[i : i + 32] for i in range(0, len(raw), 32)]


def is_erased(table: pa.Table) -> pa.Array | pa.ChunkedArray:
    """Rows whose payload and line were erased (both are null together)."""
    return pc.is_null(table.column("line"))


def _mask(table: pa.Table, predicate: Predicate) -> np.ndarray:
    picked = pc.fill_null(predicate(table), False)
    return np.asarray(picked.to_numpy(zero_copy_only=False), dtype=bool)


def select(name: str | None, table: pa.Table, predicate: Predicate, plan: Plan) -> Found | None:
    """The rows of ``table`` the predicate takes; counts what it matched but leaves."""
    if not table.num_rows:
        return None
    wanted = _mask(table, predicate)
    if not wanted.any():
        return None
    erased = np.asarray(is_erased(table).to_numpy(zero_copy_only=False), dtype=bool)
    kinds = pc.is_in(table.column("kind"), pa.array(sorted(PROTECTED_KINDS)))
    protected = np.asarray(kinds.to_numpy(zero_copy_only=False), dtype=bool)
    plan.already += int((wanted & erased).sum())
    plan.protected += int((wanted & protected & ~erased).sum())
    rows = np.flatnonzero(wanted & ~erased & ~protected)
    if not len(rows):
        return None
    return _found(name, table.take(pa.array(rows)), rows)


def _found(name: str | None, picked: pa.Table, rows: np.ndarray) -> Found:
    ids = fixed_bytes(picked.column("id"))
    recomputed = ids_of(picked)
    if recomputed != ids:
        differ = np.frombuffer(ids, np.uint8) != np.frombuffer(recomputed, np.uint8)
        bad = int(differ.reshape(-1, 32).any(axis=1).argmax())
        raise LogCorrupt(
            f"{name or 'the unsealed tail'}: row {int(rows[bad])} does not match its id; "
            "nothing was erased",
            hint="run `nerve replay --verify` for a full report",
        )
    sources = collections.Counter(int(s) for s in picked.column("source").to_pylist())
    cids = fixed_bytes(picked.column("payload_cid"))
    return Found(name, rows, ids, cids, kept_hashes(picked), sources)


def erase_rows(table: pa.Table, rows: np.ndarray) -> pa.Table:
    """``table`` with the payload and line of ``rows`` set to null; every other column kept."""
    mask = np.zeros(table.num_rows, dtype=bool)
    mask[rows] = True
    picked = pa.array(mask)
    for name, kind in (("payload", pa.binary()), ("line", pa.string())):
        index = table.schema.get_field_index(name)
        column = pc.if_else(picked, pa.scalar(None, kind), table.column(name))
        table = table.set_column(index, pa.field(name, kind, nullable=True), column)
    return table


def rewrite(
    folder: Path,
    segments: Iterable[tuple[SegmentInfo, Path]],
    predicate: Predicate,
    *,
    columns: list[str] | None = None,
    write: bool = True,
) -> Plan:
    """Read each segment once; for each the predicate touches, write its erased copy as a
    new content-named file (unless ``write`` is false: a dry run). The files are not live
    until a manifest record says so; :attr:`Plan.replaced` pairs old and new."""
    plan = Plan()
    try:
        for info, path in segments:
            table = seg.read_segment(path, columns if not write else None)
            found = select(info.name, table, predicate, plan)
            if found is None:
                continue
            plan.found.append(found)
            if write:
                new = seg.write_segment(folder, erase_rows(table, found.rows))
                _check_same_ids(info, new)
                plan.replaced.append((info, new))
    except BaseException:
        discard(folder, [new for _, new in plan.replaced])
        raise
    return plan


def _check_same_ids(old: SegmentInfo, new: SegmentInfo) -> None:
    if _shape(old) != _shape(new):
        raise LogCorrupt(f"segment {old.name}: its erased copy holds other ids; nothing was erased")


def _shape(info: SegmentInfo) -> tuple[Any, ...]:
    return (info.rows, info.min_hlc, info.max_hlc, info.root)


def discard(folder: Path, infos: Iterable[SegmentInfo]) -> None:
    """Delete files written for a rewrite that was never recorded."""
    for info in infos:
        seg.segment_path(folder, info.name).unlink(missing_ok=True)


def record_body(plan: Plan, erasures: list[str]) -> dict[str, Any]:
    """The manifest record that makes a rewrite live: ``add[i]`` replaces ``remove[i]``."""
    return {
        "op": "rewrite",
        "remove": [old.name for old, _ in plan.replaced],
        "add": [new.to_json() for _, new in plan.replaced],
        "erasure": erasures,
    }


# -- the payload.erased event -------------------------------------------------------------


def drafts(plan: Plan, reason: str, selection: dict[str, Any]) -> list[Draft]:
    """The ``payload.erased`` event(s) for a plan: one per :data:`PART_EVENTS` events."""
    ids = b"".join(f.ids for f in plan.found)
    kept = b"".join(f.kept for f in plan.found)
    cids = b"".join(f.cids for f in plan.found)
    count = len(ids) // 32
    parts = max(1, -(-count // PART_EVENTS))
    out = []
    for part in range(parts):
        lo, hi = part * PART_EVENTS * 32, min(count, (part + 1) * PART_EVENTS) * 32
        body = {
            "reason": reason,
            "selection": selection,
            "count": (hi - lo) // 32,
            "total": count,
            "part": [part + 1, parts],
            "events": _hex_each(ids[lo:hi]),
            "kept": _hex_each(kept[lo:hi]),
            "cids": sorted(set(_hex_each(cids[lo:hi]))),
        }
        suffix = f" (part {part + 1} of {parts})" if parts > 1 else ""
        line = f"erased the payload and line of {count} events ({reason}){suffix}"
        out.append(Draft.control(ERASED_KIND, reason, line, body))
    return out


def _hex_each(raw: bytes) -> list[str]:
    return [raw[i : i + 32].hex() for i in range(0, len(raw), 32)]


@dataclass(frozen=True)
class Erasure:
    """One ``payload.erased`` event as verify and pending work read it."""

    id: str
    reason: str
    events: list[str]
    kept: list[str]
    cids: list[str]

    @classmethod
    def parse(cls, event_id: bytes, payload: bytes) -> Erasure:
        body = json.loads(payload)
        events, kept = list(body["events"]), list(body["kept"])
        if len(events) != len(kept) or not all(isinstance(x, str) for x in events + kept):
            raise ValueError("events and kept must be lists of hex of one length")
        return cls(event_id.hex(), str(body["reason"]), events, kept, list(body.get("cids", [])))


def erasures_in(table: pa.Table) -> list[Erasure]:
    """Every well-formed ``payload.erased`` event in a table. One that does not parse names
    nothing (so rows it claims to have erased show as corruption)."""
    if "payload" not in table.column_names or not table.num_rows:
        return []
    rows = table.filter(pc.equal(table.column("kind"), ERASED_KIND))
    out = []
    for r in rows.select(["id", "payload"]).to_pylist():
        try:
            out.append(Erasure.parse(r["id"], r["payload"]))
        except (ValueError, KeyError, TypeError):
            continue
    return out


def stored_erasures(
    segments: Iterable[tuple[SegmentInfo, Path]], tail: Iterable[pa.Table]
) -> list[Erasure]:
    """Every ``payload.erased`` event in the segments and the tail, in log order. Only the
    kind column is read from a segment that holds none."""
    found: list[Erasure] = []
    for table in [*tables_with_erasures(path for _, path in segments), *tail]:
        found += erasures_in(table)
    return found


def tables_with_erasures(files: Iterable[Path]) -> list[pa.Table]:
    """The segments (whole) that hold a ``payload.erased`` event; the others are read for
    their kind column only."""
    out = []
    for path in files:
        kinds = seg.read_segment(path, ["kind"]).column("kind")
        if pc.any(pc.equal(kinds, ERASED_KIND)).as_py():
            out.append(seg.read_segment(path))
    return out


def check_kept(plan: Plan, wanted: dict[str, str]) -> None:
    """The rows a pending erasure takes must still hold the fields it recorded."""
    for found in plan.found:
        pairs = zip(_hex_each(found.ids), _hex_each(found.kept), strict=True)
        for index, (eid, kept) in enumerate(pairs):
            if wanted.get(eid) != kept:
                raise LogCorrupt(
                    f"segment {found.name}: row {int(found.rows[index])} (event {eid[:12]}) "
                    "no longer holds the fields its pending erasure recorded; nothing was erased",
                    hint="run `nerve replay --verify` for a full report",
                )


def finish_pending(
    folder: Path,
    segments: list[tuple[SegmentInfo, Path]],
    tail: list[pa.Table],
    done: set[str],
) -> tuple[Plan, list[str]] | None:
    """The rewrite that carries out every pending erasure (its copies written, not yet
    recorded), and their ids; None when none is pending."""
    todo = pending(stored_erasures(segments, tail), done)
    if not todo:
        return None
    wanted = {i: k for e in todo for i, k in zip(e.events, e.kept, strict=True)}
    plan = rewrite(folder, segments, id_predicate(wanted))
    check_kept(plan, wanted)
    return plan, [e.id for e in todo]


def pending(found: Iterable[Erasure], done: set[str]) -> list[Erasure]:
    """Erasures whose rewrite no manifest record carried out (a forget interrupted)."""
    return [e for e in found if e.id not in done]


def id_predicate(ids: Iterable[str]) -> Predicate:
    wanted = pa.array([bytes.fromhex(i) for i in ids], pa.binary(32))

    def take(table: pa.Table) -> pa.Array | pa.ChunkedArray:
        return pc.is_in(table.column("id"), wanted)

    return take
