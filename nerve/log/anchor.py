"""The manifest's anchor: the chain a verifier last accepted, kept outside the data folder.

The manifest is hash-chained, not signed: whoever can write ``data/`` can rewrite a record
and re-chain every record after it. A key kept beside the data would not help (the same
person can read it and re-sign). So, as the audit chain does with its trust record, a
verifier keeps ``<trust folder>/manifests/<log>.json`` outside ``data/``: how many records
it accepted and the hash of the last one. A later verify whose manifest has fewer records,
or another record at that place, reports the chain as rewritten.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

import blake3

from nerve import fsio
from nerve.canonical import canonical_json
from nerve.log.manifest import ManifestState


@dataclass(frozen=True)
class Anchor:
    records: int  # how many records were accepted
    head: str  # the hash of the last of them

    @classmethod
    def of(cls, state: ManifestState) -> Anchor:
        return cls(len(state.records), state.head)


def anchor_file(trust_dir: Path, log_root: Path) -> Path:
    """Where the anchor of the log at ``log_root`` lives under a trust folder."""
    key = blake3.blake3(str(Path(log_root).resolve()).encode()).hexdigest()[:32]
    return Path(trust_dir) / "manifests" / f"{key}.json"


def load(path: Path) -> Anchor | None:
    try:
        obj = json.loads(fsio.read_bytes(path))
        return Anchor(int(obj["records"]), str(obj["head"]))
    except FileNotFoundError:
        return None
    except (ValueError, KeyError, TypeError, OSError):
        return None  # an unreadable anchor anchors nothing; the next verify writes it anew


def _head_at(state: ManifestState, count: int) -> str:
    """The hash of record ``count - 1``: the next record's ``prev``, or the head."""
    return str(state.records[count]["prev"]) if count < len(state.records) else state.head


def check(state: ManifestState, anchor: Anchor) -> str | None:
    """Why ``state`` is not a continuation of the accepted chain, or None."""
    if not anchor.records:
        return None
    if len(state.records) < anchor.records:
        return (
            f"holds {len(state.records)} records, fewer than the {anchor.records} a verify "
            "accepted before (records removed, or the chain rewritten)"
        )
    if _head_at(state, anchor.records) != anchor.head:
        return (
            f"record {anchor.records - 1} is not the one a verify accepted before: the chain "
            "was rewritten (records edited and re-chained)"
        )
    return None


def advance(path: Path, state: ManifestState) -> None:
    """Accept ``state``'s chain (durably, owner-only)."""
    fsio.private_dir(path.parent)
    body = canonical_json({"records": len(state.records), "head": state.head})
    fsio.write_private(path, body + b"\n", site="trust.write", exclusive=False)
