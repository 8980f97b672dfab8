"""What a writer finds when it opens a log, and what it may do about it.

Crash debris is settled without asking: a torn final frame (never acknowledged) is cut, a
WAL generation the manifest already sealed is dropped, and a segment file that only repeats
events held elsewhere (an interrupted seal or compaction) is removed.

Anything that could be someone's data is never deleted. A content-named segment the
manifest does not list is re-adopted when it fits (the manifest lost records) and moved to
``quarantine/`` when it does not. Damaged WAL bytes and missing WAL generations stop the
writer with :class:`~nerve.errors.LogCorrupt`; ``nerve repair`` (``repair=True``) copies a
damaged file to ``quarantine/``, keeps every good frame, and records what was lost.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import blake3
import pyarrow as pa

from nerve import fsio
from nerve.clock import Hlc
from nerve.errors import LogCorrupt, LogError
from nerve.log import crypt
from nerve.log import segments as seg
from nerve.log import wal as walmod
from nerve.log.codec import fixed_bytes
from nerve.log.manifest import ManifestState, SegmentInfo
from nerve.log.paths import LogPaths

REPAIR_HINT = (
    "`nerve replay --verify` reports it; `nerve repair` keeps every good frame, copies the "
    "damaged file to quarantine/ and records what was lost"
)


@dataclass
class WalFound:
    """The unsealed generations, oldest first, as the writer takes them over."""

    pending: list[tuple[int, list[pa.Table]]] = field(default_factory=list)
    current_gen: int = 1
    current: list[pa.Table] = field(default_factory=list)
    truncate_to: int | None = None
    missing: list[int] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)

    def tables(self) -> list[pa.Table]:
        return [t for _, ts in self.pending for t in ts] + self.current


def missing_generations(state: ManifestState, gens: list[int], has_data: bool) -> list[int]:
    """WAL generations that should be on disk and are not (nor written off by a repair).

    Live generations run without a gap from ``sealed_gen + 1``; once a log holds anything
    at least that one exists, since a writer always has a generation open. An archive has
    no writer, hence no WAL.
    """
    if state.read_only:
        return []
    top = max(gens) if gens else (state.sealed_gen + 1 if has_data else 0)
    want = range(state.sealed_gen + 1, top + 1)
    return [g for g in want if g not in gens and g not in state.lost_gens]


def take_over_wal(paths: LogPaths, state: ManifestState, *, repair: bool) -> WalFound:
    files = paths.wal_files()
    for gen, path in files:
        if gen <= state.sealed_gen:  # sealed before a crash; only the delete was lost
            fsio.unlink(path, site="wal.unlink")
    live = [(g, p) for g, p in files if g > state.sealed_gen]
    found = WalFound(current_gen=live[-1][0] if live else state.sealed_gen + 1)
    for index, (gen, path) in enumerate(live):
        newest = index == len(live) - 1
        tables, cut = _take_generation(paths, gen, path, newest, repair, found.notes)
        if newest:
            found.current, found.truncate_to = tables, cut
        else:
            found.pending.append((gen, tables))
    has_data = bool(state.records) or bool(live)
    found.missing = missing_generations(state, [g for g, _ in live], has_data)
    return found


def _take_generation(
    paths: LogPaths, gen: int, path: Path, newest: bool, repair: bool, notes: list[str]
) -> tuple[list[pa.Table], int | None]:
    """A generation's frames, and where to cut the newest one's torn tail."""
    try:
        found = walmod.scan(path)
    except LogCorrupt:
        if not repair:
            raise
        return _repair_generation(paths, gen, path, notes), None
    if found.good_end == found.size:
        return found.tables, None
    if newest and found.torn:
        return found.tables, found.good_end  # an append a crash interrupted: never acked
    if not repair:
        what = "damaged bytes" if found.damaged else "bytes of a torn frame"
        older = "" if newest else " (only the newest generation may end mid-frame)"
        raise LogCorrupt(
            f"{path}: generation {gen} ends in {found.cut_bytes} {what} "
            f"from byte {found.good_end}{older}",
            hint=REPAIR_HINT,
        )
    return _repair_generation(paths, gen, path, notes), None


def _repair_generation(paths: LogPaths, gen: int, path: Path, notes: list[str]) -> list[pa.Table]:
    """Keep every good frame of a damaged generation; the original goes to quarantine."""
    prefix = walmod.scan(path, strict=False)
    later, _ = walmod.frames_after(path, (prefix.bad_offset or prefix.good_end) + 1)
    tables, frames = prefix.tables + later, prefix.frames + len(later)
    kept = quarantine(paths, path, copy=True)
    walmod.write_generation(path, gen, tables, crypt.cipher_for(paths.root))
    rows = sum(t.num_rows for t in tables)
    notes.append(
        f"wal generation {gen}: {prefix.size - prefix.good_end} bytes from byte "
        f"{prefix.good_end} could not be read; kept {frames} good frame(s) ({rows} events); "
        f"the original is {kept.relative_to(paths.root)}"
    )
    return tables


def quarantine(paths: LogPaths, path: Path, *, copy: bool = False) -> Path:
    """Move (or copy) ``path`` into ``quarantine/`` under a name that is never reused."""
    folder = fsio.private_dir(paths.quarantine)
    target = folder / path.name
    number = 1
    while target.exists():
        number += 1
        target = folder / f"{path.name}.{number}"
    if copy:  # durable before the original is rewritten
        fsio.write_private(target, fsio.read_bytes(path), site="quarantine.move")
    else:
        fsio.rename(path, target, site="quarantine.move")
    fsio.fsync_dir(folder, site="quarantine.move")
    return target


# -- segments the manifest does not list --------------------------------------------------


@dataclass
class Orphans:
    adopt: list[SegmentInfo] = field(default_factory=list)
    quarantine: list[Path] = field(default_factory=list)
    redundant: list[Path] = field(default_factory=list)


def settle_segments(
    paths: LogPaths,
    state: ManifestState,
    wal_ids: set[bytes],
    *,
    now_ns: int,
    grace_ns: int,
) -> Orphans:
    """Sort the files in ``segments/`` the manifest does not list as live."""
    found = Orphans()
    unknown: list[tuple[SegmentInfo, set[bytes], Path]] = []
    for path in sorted(paths.segments.iterdir()):
        name = path.name.removesuffix(".parquet")
        if path.name.startswith(".tmp-"):
            found.redundant.append(path)  # an interrupted write, never content-named
        elif name in state.live:
            continue
        elif name in state.retired:
            if now_ns - state.retired[name] > grace_ns:
                found.redundant.append(path)  # compacted away; readers had their grace
        else:
            read = read_orphan(path)
            if read is None:
                found.quarantine.append(path)
            else:
                unknown.append((*read, path))
    unknown.sort(key=lambda item: (item[0].min_hlc, -item[0].rows))
    for info, ids, path in unknown:
        _place(paths, state, found, info, ids, path, wal_ids)
    return found


def _place(
    paths: LogPaths,
    state: ManifestState,
    found: Orphans,
    info: SegmentInfo,
    ids: set[bytes],
    path: Path,
    wal_ids: set[bytes],
) -> None:
    near = [s for s in [*state.live.values(), *found.adopt] if _overlaps(s, info)]
    held = set(wal_ids)
    for other in near:
        held |= _ids(paths.segment(other.name))
    if ids <= held:
        found.redundant.append(path)  # every event is stored elsewhere
    elif not near:
        found.adopt.append(info)
    else:
        found.quarantine.append(path)


def _overlaps(a: SegmentInfo, b: SegmentInfo) -> bool:
    return a.min_hlc <= b.max_hlc and b.min_hlc <= a.max_hlc


def _ids(path: Path) -> set[bytes]:
    data = fixed_bytes(seg.read_segment(path, ["id"]).column("id"))
    return {data[i : i + 32] for i in range(0, len(data), 32)}


def read_orphan(path: Path) -> tuple[SegmentInfo, set[bytes]] | None:
    """A segment's manifest entry rebuilt from its bytes, or None if it does not verify."""
    name = path.name.removesuffix(".parquet")
    try:
        data = fsio.read_bytes(path)
        if blake3.blake3(data).hexdigest() != name:
            return None
        table = seg.read_segment(path)
    except (OSError, LogError):  # LogError: not a regular file (UnsafePath)
        return None
    if table.num_rows == 0:
        return None
    raw = fixed_bytes(table.column("id"))
    info = SegmentInfo(name, table.num_rows, _stamp(table, 0), _stamp(table, -1), seg.ids_root(raw))
    return info, {raw[i : i + 32] for i in range(0, len(raw), 32)}


def _stamp(table: pa.Table, row: int) -> Hlc:
    row = row if row >= 0 else table.num_rows + row
    return Hlc(table.column("physical_ns")[row].as_py(), table.column("logical")[row].as_py())


def ids_of_tables(tables: list[pa.Table]) -> set[bytes]:
    out: set[bytes] = set()
    for table in tables:
        raw = fixed_bytes(table.column("id"))
        out.update(raw[i : i + 32] for i in range(0, len(raw), 32))
    return out
