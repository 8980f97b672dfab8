"""Auditing the sealed surfacing log: verify it, list what was held, show a link.

The verifier pins what it has seen in a trust folder OUTSIDE the daemon's data folder
(``$XDG_STATE_HOME/nerve/trust``): per log, the last checkpoint it accepted (a
:class:`~nerve.chain.TrustRecord`), and per origin (a workspace, or a genesis key for
bundles) which log it is. So a truncated tail, a rolled-back copy and a fresh genesis passed
off as the same log are all caught on the next verification.

When no pin names the origin, the record kept for the log id the chain claims is used (a log
verified before under another origin is still held to what was accepted then).

Bundles (``nerve audit export``, ``nerve audit verify BUNDLE``) are in
:mod:`nerve.attention.bundle`.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import blake3

from nerve import fsio
from nerve.attention.kinds import DECISION, LINK
from nerve.canonical import det_cbor_decode
from nerve.chain import TrustRecord, default_trust_dir, peek_log_id, trust_path, verify_chain
from nerve.chain.verify import Break, ChainReport
from nerve.errors import ChainError, UsageError
from nerve.query import connect


def chain_links(log_root: Path) -> list[bytes]:
    rows = (
        connect(log_root)
        .execute(f"SELECT payload FROM events WHERE kind = '{LINK}' ORDER BY physical_ns, logical")
        .fetchall()
    )
    return [bytes(r[0]) for r in rows]


def decisions(log_root: Path, where: str = "TRUE") -> list[dict[str, Any]]:
    rows = (
        connect(log_root)
        .execute(
            "SELECT physical_ns, logical, strftime(ts, '%Y-%m-%dT%H:%M:%S') AS ts, payload "
            f"FROM events WHERE kind = '{DECISION}' AND {where} ORDER BY physical_ns, logical"
        )
        .fetchall()
    )
    return [{"hlc": f"{p}.{lo}", "ts": ts, **json.loads(bytes(raw))} for p, lo, ts, raw in rows]


def held(log_root: Path, since_ns: int | None = None) -> list[dict[str, Any]]:
    """Every held decision (why: value, cost, budget), its source event and chain seq."""
    where = "data->>'outcome' LIKE 'hold:%'"
    if since_ns is not None:
        where += f" AND physical_ns >= {int(since_ns)}"
    return decisions(log_root, where)


def _plain(value: Any) -> Any:
    if isinstance(value, bytes):
        return value.hex()
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_plain(v) for v in value]
    return value


def decode_link(raw: bytes) -> dict[str, Any]:
    envelope = det_cbor_decode(raw)
    core = det_cbor_decode(envelope["core"])
    out: dict[str, Any] = _plain(core)
    out["id"] = blake3.blake3(envelope["core"]).hexdigest()
    out["signed"] = "by old and new key" if "sig2" in envelope else "by the epoch's key"
    return out


def show(log_root: Path, seq: int) -> dict[str, Any]:
    links = chain_links(log_root)
    if not 0 <= seq < len(links):
        raise UsageError(f"no link {seq}: the chain has {len(links)} links (0..{len(links) - 1})")
    link = decode_link(links[seq])
    report = verify_chain(links[: seq + 1])
    link["verified_through_here"] = report.ok
    if link.get("kind") == "decision":
        found = decisions(log_root, f"(data->>'chain_seq')::BIGINT = {seq}")
        link["source_line"] = found[0]["source_line"] if found else None
    return link


@dataclass(frozen=True)
class Verdict:
    report: ChainReport
    origin: str
    pinned: str  # where the key came from: "--key", "trust record", "bundle", "first use"
    recorded: bool

    def to_json(self) -> dict[str, Any]:
        return {
            **self.report.to_json(),
            "origin": self.origin,
            "key": None if self.report.genesis_key is None else self.report.genesis_key.hex(),
            "key_from": self.pinned,
            "trust_recorded": self.recorded,
        }


def _pin_path(trust_dir: Path, origin: str) -> Path:
    return trust_dir / "origins" / f"{blake3.blake3(origin.encode()).hexdigest()[:32]}.json"


def _load_record(trust_dir: Path, origin: str) -> TrustRecord | None:
    try:
        pin = json.loads(_pin_path(trust_dir, origin).read_text())
    except FileNotFoundError:
        return None
    except ValueError as exc:
        raise ChainError(f"trust pin for {origin} is not JSON: {exc}") from None
    return TrustRecord.load(trust_path(bytes.fromhex(pin["log_id"]), trust_dir))


def _record_for_log(folder: Path, links: list[bytes]) -> TrustRecord | None:
    claimed = peek_log_id(links)
    return None if claimed is None else TrustRecord.load(trust_path(claimed, folder))


def verify(
    links: list[bytes],
    *,
    origin: str,
    key: bytes | None,
    key_from: str,
    trust_dir: Path | None = None,
    record: bool = True,
    also: Callable[[ChainReport], Break | None] | None = None,
) -> Verdict:
    """Verify against the pinned key and the last accepted checkpoint; advance them if ok.

    ``also`` runs on a chain that verified; a break it returns fails the verification.
    """
    folder = trust_dir or default_trust_dir()
    trusted = _load_record(folder, origin) or _record_for_log(folder, links)
    pinned_key, pinned = key, key_from
    if pinned_key is None and trusted is not None:
        pinned_key, pinned = trusted.key, "trust record"
    report = verify_chain(links, pinned_key=pinned_key, trusted=trusted)
    if report.ok and also is not None and (brk := also(report)) is not None:
        report = replace(report, first_break=brk)
    saved = False
    if report.ok and record and report.anchor is not None:
        new = trusted.accept(report) if trusted is not None else TrustRecord.from_report(report)
        new.save(trust_path(new.log_id, folder))
        _save_pin(folder, origin, new.log_id)
        saved = True
    return Verdict(report, origin, pinned if pinned_key is not None else "first use", saved)


def _save_pin(folder: Path, origin: str, log_id: bytes) -> None:
    path = _pin_path(folder, origin)
    fsio.private_dir(path.parent)
    body = json.dumps({"origin": origin, "log_id": log_id.hex()}) + "\n"
    fsio.write_private(path, body.encode(), site="trust.write", exclusive=False)


def log_id_of(links: list[bytes]) -> str | None:
    found = peek_log_id(links)
    return found.hex() if found else None
