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


def chain_links(log_root: Path) -> list[bytes]:
    """The sealed surfacing chain's links, in HLC order: read from the segments' ``kind``
    and ``payload`` columns with Arrow (a row-group filter), without DuckDB's start-up."""
    return [payload for _, payload in _payloads_of(log_root, LINK)]


def _payloads_of(log_root: Path, kind: str) -> list[tuple[tuple[int, int], bytes]]:
    """``((physical_ns, logical), payload)`` of every stored event of ``kind`` whose payload
    is kept, in HLC order: segments (filtered as Parquet is read), then the unsealed tail."""
    import pyarrow.parquet as pq

    from nerve.log.reader import snapshot
    from nerve.log.segments import check_regular, reading, source

    snap = snapshot(log_root)
    columns = ["physical_ns", "logical", "kind", "payload"]
    parts = [snap.tail.select(columns)]
    for path in snap.files:
        check_regular(path)
        with reading(path):  # an encrypted segment is read from its plaintext
            parts.append(
                pq.read_table(source(path), columns=columns, filters=[("kind", "=", kind)])
            )
    found = [
        ((row["physical_ns"], row["logical"]), row["payload"])
        for part in parts
        for row in part.to_pylist()
        if row["kind"] == kind and row["payload"] is not None
    ]
    return sorted(found, key=lambda item: item[0])


def _decision_at(log_root: Path, seq: int) -> dict[str, Any] | None:
    """The gate decision sealed as chain link ``seq``, if the log holds it."""
    for _, raw in _payloads_of(log_root, DECISION):
        decision = json.loads(raw)
        if isinstance(decision, dict) and decision.get("chain_seq") == seq:
            return decision
    return None


def decisions(log_root: Path, where: str = "TRUE") -> list[dict[str, Any]]:
    from nerve.query import connect

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
    """Link ``seq`` decoded, whether the chain verifies through it and, for a decision, the
    observed line and why it was decided so (:func:`~nerve.attention.reason.reason_of`)."""
    from nerve.attention.reason import reason_of

    links = chain_links(log_root)
    if not 0 <= seq < len(links):
        raise UsageError(f"no link {seq}: the chain has {len(links)} links (0..{len(links) - 1})")
    link = decode_link(links[seq])
    report = verify_chain(links[: seq + 1])
    link["verified_through_here"] = report.ok
    if link.get("kind") == "decision":
        found = _decision_at(log_root, seq)
        link["source_line"] = found["source_line"] if found else None
        link["cause"] = reason_of(found).cause if found else None
        link["why"] = reason_of(found).words() if found else None
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
    empty_ok: bool = False,
) -> Verdict:
    """Verify against the pinned key and the last accepted checkpoint; advance them if ok.

    ``also`` runs on a chain that verified; a break it returns fails the verification.
    ``empty_ok``: see :func:`~nerve.chain.verify.verify_chain`.
    """
    folder = trust_dir or default_trust_dir()
    trusted = _load_record(folder, origin) or _record_for_log(folder, links)
    pinned_key, pinned = key, key_from
    if pinned_key is None and trusted is not None:
        pinned_key, pinned = trusted.key, "trust record"
    report = verify_chain(links, pinned_key=pinned_key, trusted=trusted, empty_ok=empty_ok)
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
