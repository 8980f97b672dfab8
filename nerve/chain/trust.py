"""The verifier's trust record: the last checkpoint it accepted, kept outside the data folder.

Against it, :func:`~nerve.chain.verify.verify_chain` catches truncation, rollback and a
fresh genesis passed off as the same log.

The record is ``<log-id-hex>.json``; beside it ``<log-id-hex>.ids`` holds the id of every
accepted link (32 bytes each, in seq order). The ids let a rollback be reported at the
first link where the presented history differs from the accepted one, not only at the
checkpoint; a record without them (an older trust folder) still catches the rollback there.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from nerve import fsio
from nerve.canonical import canonical_json
from nerve.chain.keys import private_dir
from nerve.chain.links import ID_SIZE, ZERO_ID
from nerve.chain.verify import ChainReport
from nerve.errors import ChainError


def default_trust_dir(environ: Mapping[str, str] | None = None, home: Path | None = None) -> Path:
    """``$XDG_STATE_HOME/nerve/trust``, else ``~/.local/state/nerve/trust``."""
    env = os.environ if environ is None else environ
    base = env.get("XDG_STATE_HOME") or str((home or Path.home()) / ".local" / "state")
    return Path(base) / "nerve" / "trust"


def trust_path(log_id: bytes, folder: Path | None = None) -> Path:
    """Where the trust record for ``log_id`` lives: ``<folder>/<log-id-hex>.json``."""
    return (default_trust_dir() if folder is None else Path(folder)) / f"{log_id.hex()}.json"


@dataclass(frozen=True, slots=True)
class TrustRecord:
    """The last checkpoint a verifier accepted, kept OUTSIDE the daemon's data folder.

    ``size`` counts links through that checkpoint, ``head`` is its id and ``root`` the
    Merkle root over the ids of links ``0..size-1``; ``key`` is the genesis key. ``ids``
    are the accepted links' ids (``size`` of them), or empty when none were kept.
    """

    log_id: bytes
    key: bytes
    size: int
    head: bytes
    root: bytes
    ids: tuple[bytes, ...] = field(default=(), repr=False)

    @classmethod
    def from_report(cls, report: ChainReport) -> TrustRecord:
        """The record a first successful verification establishes (trust on first use)."""
        if not report.ok or report.anchor is None or report.log_id is None:
            raise ChainError("only a chain that verified can be trusted")
        a, key = report.anchor, report.genesis_key or ZERO_ID
        return cls(report.log_id, key, a.size, a.head, a.root, tuple(report.ids[: a.size]))

    def accept(self, report: ChainReport) -> TrustRecord:
        """The record after ``report``; refuses one that is not a consistent extension."""
        new = TrustRecord.from_report(report)
        if new.log_id != self.log_id or new.key != self.key:
            raise ChainError(
                f"report is for log {new.log_id.hex()}, record for {self.log_id.hex()}"
            )
        if len(report.ids) < self.size or report.ids[self.size - 1] != self.head:
            raise ChainError(f"report does not extend the accepted checkpoint at size {self.size}")
        return new

    def to_json(self) -> dict[str, Any]:
        return {
            "log_id": self.log_id.hex(),
            "key": self.key.hex(),
            "size": self.size,
            "head": self.head.hex(),
            "root": self.root.hex(),
        }

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> TrustRecord:
        try:
            hexes = [bytes.fromhex(data[k]) for k in ("log_id", "key", "head", "root")]
            size = data["size"]
        except (KeyError, TypeError, ValueError) as exc:
            raise ChainError(f"trust record is malformed: {exc!r}") from None
        if not isinstance(size, int) or size < 1 or any(len(h) != ID_SIZE for h in hexes):
            raise ChainError("trust record has a bad size or id length")
        return cls(hexes[0], hexes[1], size, hexes[2], hexes[3])

    @classmethod
    def load(cls, path: Path) -> TrustRecord | None:
        """Read the record at ``path`` and the ids beside it; ``None`` if there is none yet."""
        try:
            record = cls.from_json(json.loads(Path(path).read_text()))
        except FileNotFoundError:
            return None
        except ValueError as exc:
            raise ChainError(f"{path}: trust record is not JSON: {exc}") from None
        return replace(record, ids=_read_ids(_ids_path(path), record))

    def save(self, path: Path) -> None:
        """Write the ids, then the record atomically (temp file, fsync, rename), owner-only.

        The ids go first, so a crash between the two leaves extra ids (ignored on load),
        never a record whose ids are missing.
        """
        path = Path(path)
        private_dir(path.parent)
        if self.ids:
            _write_ids(_ids_path(path), self.ids)
        body = canonical_json(self.to_json()) + b"\n"
        fsio.write_private(path, body, site="trust.write", exclusive=False)


def _ids_path(record_path: Path) -> Path:
    return Path(record_path).with_suffix(".ids")


def _read_ids(path: Path, record: TrustRecord) -> tuple[bytes, ...]:
    """The first ``record.size`` ids kept at ``path``; none if they are missing or disagree."""
    try:
        data = fsio.read_bytes(path)[: record.size * ID_SIZE]
    except FileNotFoundError:
        return ()
    ids = tuple(data[i : i + ID_SIZE] for i in range(0, len(data), ID_SIZE))
    # Ids that do not end at the recorded head were not written with this record (ids are
    # chained through each core's ``prev``, so the head vouches for every id before it).
    return ids if len(ids) == record.size and ids[-1] == record.head else ()


def _write_ids(path: Path, ids: tuple[bytes, ...]) -> None:
    """Make ``path`` hold exactly ``ids``: append what is new when the start is already there."""
    fd = fsio.open_file(path, os.O_RDWR | os.O_CREAT)
    try:
        kept = os.fstat(fd).st_size // ID_SIZE
        start = kept if 0 < kept <= len(ids) and _ends_with(fd, kept, ids) else 0
        fsio.truncate(fd, start * ID_SIZE, site="trust.write", path=path)
        os.lseek(fd, start * ID_SIZE, os.SEEK_SET)
        fsio.write_all(fd, b"".join(ids[start:]), site="trust.write", path=path)
        fsio.fsync(fd, site="trust.write", path=path)
    finally:
        os.close(fd)


def _ends_with(fd: int, kept: int, ids: tuple[bytes, ...]) -> bool:
    """Whether the ``kept`` ids on file end with ``ids[kept - 1]``.

    Each link's core names the previous link's id, so one id vouches for all before it.
    """
    return os.pread(fd, ID_SIZE, (kept - 1) * ID_SIZE) == ids[kept - 1]
