"""``nerve audit verify --seed``: every epoch's seal checked against that epoch's own key,
none missing from epoch 0 to the last, the last one recent, and the log as it is now
agreeing with every head a seal committed to. The first failing epoch is named.

Checks, epoch by epoch from 0 (the first failure wins):

- ``missing``: no seal for an epoch before the last one (a dropped or skipped epoch);
  ``stale``: the last seal is of neither this epoch nor the one before (so it was made
  more than two epochs ago: seals deleted, the log replaced by an older copy, or sealing
  stopped).
- ``malformed``: a note that does not parse; ``forked``: two different seals of one epoch.
- ``wrong-key``: the note's key is not epoch n's leaf under the seed's root (a seal made
  with another epoch's key, or another set-up's); ``bad-signature``: the key did not sign it.
- ``clock``: the seal's time is before its epoch began, before the previous seal's, or after
  now (a clock set back or forward).
- ``manifest``: the manifest now has fewer records than sealed, a sealed record's line is
  not the one sealed, or a seal counts fewer records than the one before;
  ``segment``: a live segment's bytes do not hash to its name (reported at the first seal
  that covers the record that added it); ``chain``: likewise for surfacing-chain links.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import blake3

from nerve import fsio
from nerve.chain.merkle import verify_inclusion
from nerve.seal.note import ZERO, NoteError, Seal, parse, signed_by_key
from nerve.seal.seed import Seed

RECENT_EPOCHS = 1  # the newest seal is of this epoch or the one before (made < 2 epochs ago)
Bad = tuple[str, str]  # (kind, message) of a seal that cannot be used at all


@dataclass(frozen=True)
class Failure:
    epoch: int
    kind: str
    message: str


@dataclass
class SealReport:
    seed: Seed
    epochs: int = 0  # seals that verified
    late: list[int] = field(default_factory=list)  # epochs sealed after they ended
    failure: Failure | None = None

    @property
    def ok(self) -> bool:
        return self.failure is None

    def to_json(self) -> dict[str, Any]:
        f = self.failure
        return {
            "ok": self.ok,
            "origin": self.seed.origin,
            "epochs_verified": self.epochs,
            "late_epochs": self.late,
            "failure": None
            if f is None
            else {"epoch": f.epoch, "kind": f.kind, "message": f.message},
        }


@dataclass(frozen=True)
class LogView:
    """The log as it is now: manifest line hashes, bad-segment record indexes, link ids."""

    lines: list[bytes]  # blake3 of each manifest line
    bad_records: dict[int, str]  # manifest record index -> why a segment it added is bad
    links: list[bytes]  # surfacing-chain link ids, in order


def read_log(log_root: Path) -> LogView:
    """What the seals are checked against, read from ``log_root``."""
    from nerve.chain import link_id
    from nerve.log.paths import LogPaths

    paths = LogPaths(log_root)
    try:
        raw = fsio.read_bytes(paths.manifest)
    except FileNotFoundError:
        raw = b""
    lines = raw.split(b"\n")[:-1]
    return LogView(
        [blake3.blake3(line).digest() for line in lines],
        _bad_segments(paths, lines),
        [link_id(link) for link in _links(log_root)],
    )


def _bad_segments(paths: Any, lines: Sequence[bytes]) -> dict[int, str]:
    """Manifest records whose added segments, still live, no longer hash to their names."""
    import json

    from nerve.log.manifest import read_manifest

    live = set(read_manifest(paths.manifest, errors=[]).live)
    bad: dict[int, str] = {}
    for index, line in enumerate(lines):
        try:
            added = [str(a["segment"]) for a in json.loads(line).get("add", [])]
        except (ValueError, AttributeError, KeyError, TypeError):
            continue  # an unreadable record is caught by its line hash
        for name in (n for n in added if n in live):
            why = _segment_fault(paths.segment(name), name)
            if why is not None:
                bad.setdefault(index, why)
    return bad


def _segment_fault(path: Path, name: str) -> str | None:
    try:
        data = fsio.read_bytes(path)
    except OSError as exc:
        return f"segment {name[:16]}… cannot be read: {exc.strerror or exc}"
    if blake3.blake3(data).hexdigest() != name:
        return f"segment {name[:16]}…'s bytes do not hash to its name (rewritten)"
    return None


def _links(log_root: Path) -> list[bytes]:
    from nerve.attention.audit import chain_links
    from nerve.errors import NerveError

    try:
        return chain_links(log_root)
    except NerveError:
        return []  # an unreadable segment is reported as a bad segment


def verify(seed: Seed, notes: list[str], log: LogView, now_ns: int) -> SealReport:
    """Check every seal note (what ``SealDir.notes`` reads) against ``seed`` and
    ``log``; the first failure."""
    report = SealReport(seed)
    by_epoch = _collect(notes)
    last = max(by_epoch, default=-1)
    previous: Seal | None = None
    for epoch in range(last + 1):
        seal = by_epoch.get(epoch)
        why = _check(seed, epoch, seal, previous, log, now_ns)
        if why is not None:
            report.failure = Failure(epoch, *why)
            return report
        assert isinstance(seal, Seal)
        if seal.time_ns >= seed.starts_ns(epoch + 1):
            report.late.append(epoch)
        report.epochs += 1
        previous = seal
    report.failure = _tail(seed, last, log, now_ns, previous)
    return report


def _collect(notes: list[str]) -> dict[int, Seal | Bad]:
    """Seals by epoch; a note that does not parse is kept as ``malformed`` at the epoch
    after the one before it, one whose key did not sign it as ``bad-signature``, and two
    different seals of one epoch as ``forked``."""
    by_epoch: dict[int, Seal | Bad] = {}
    for note in notes:
        try:
            seal, sig = parse(note)
        except NoteError as exc:
            by_epoch.setdefault(max(by_epoch, default=-1) + 1, ("malformed", str(exc)))
            continue
        found: Seal | Bad = seal
        if not signed_by_key(seal, sig):
            found = ("bad-signature", "the seal's key did not sign it (edited after sealing)")
        if by_epoch.setdefault(seal.epoch, found) != found:
            by_epoch[seal.epoch] = ("forked", f"two different seals of epoch {seal.epoch}")
    return by_epoch


def _check(
    seed: Seed,
    epoch: int,
    seal: Seal | Bad | None,
    previous: Seal | None,
    log: LogView,
    now_ns: int,
) -> Bad | None:
    if seal is None:
        return "missing", f"no seal for epoch {epoch} (dropped, or the epoch was skipped)"
    if isinstance(seal, tuple):
        return seal
    return (
        _check_key(seed, epoch, seal)
        or _check_time(seed, seal, previous, now_ns)
        or _check_log(seal, previous, log)
    )


def _check_key(seed: Seed, epoch: int, seal: Seal) -> Bad | None:
    if seal.origin != seed.origin:
        return "wrong-key", f"sealed under set-up {seal.origin}, not the seed's {seed.origin}"
    if not verify_inclusion(seal.key, epoch, seed.horizon, seal.proof, seed.root):
        return "wrong-key", f"the key is not epoch {epoch}'s under the seed's root"
    return None


def _check_time(seed: Seed, seal: Seal, previous: Seal | None, now_ns: int) -> Bad | None:
    if seal.time_ns < seed.starts_ns(seal.epoch):
        return "clock", f"sealed at {seal.time_ns}, before its epoch began (a clock set back)"
    if previous is not None and seal.time_ns < previous.time_ns:
        return "clock", "sealed before the previous epoch's seal (a clock set back)"
    if seal.time_ns > now_ns + seed.epoch_s * 1_000_000_000:
        return "clock", f"sealed at {seal.time_ns}, after now (a clock set forward)"
    return None


def _check_log(seal: Seal, previous: Seal | None, log: LogView) -> Bad | None:
    if previous is not None and seal.records < previous.records:
        return "manifest", f"seals {seal.records} manifest records, fewer than the epoch before"
    if seal.records > len(log.lines):
        return "manifest", (
            f"the manifest holds {len(log.lines)} records, fewer than the {seal.records} "
            "sealed (truncated, or an older copy)"
        )
    if (log.lines[seal.records - 1] if seal.records else ZERO) != seal.manifest_head:
        return "manifest", f"manifest record {seal.records - 1} is not the one sealed (rewritten)"
    for index in range(previous.records if previous else 0, seal.records):
        if index in log.bad_records:
            return "segment", f"manifest record {index}: {log.bad_records[index]}"
    if previous is not None and seal.links < previous.links:
        return "chain", "seals fewer surfacing-chain links than the epoch before"
    if seal.links > len(log.links):
        return "chain", f"the chain has {len(log.links)} links, fewer than the {seal.links} sealed"
    if (log.links[seal.links - 1] if seal.links else ZERO) != seal.chain_head:
        return "chain", f"chain link {seal.links - 1} is not the one sealed (rewritten)"
    return None


def _tail(
    seed: Seed, last: int, log: LogView, now_ns: int, previous: Seal | None
) -> Failure | None:
    """After the last seal: it must be recent, and nothing may be wrong past it."""
    current = seed.epoch_at(now_ns)
    if last < 0:
        return Failure(0, "missing", "no seals at all (sealing never ran, or every seal dropped)")
    if current - last > RECENT_EPOCHS:
        return Failure(
            last + 1,
            "stale",
            f"the last seal is of epoch {last}, {current - last} epochs ago "
            "(newer seals deleted, an older copy of the log, or sealing stopped)",
        )
    sealed = previous.records if previous else 0
    for index in sorted(i for i in log.bad_records if i >= sealed):
        return Failure(last + 1, "segment", f"manifest record {index}: {log.bad_records[index]}")
    return None
