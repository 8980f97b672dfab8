"""Audit bundles: the sealed surfacing log in one JSON file that verifies on another machine.

Format ``nerve-audit-bundle/2``, canonical JSON:

- ``log_id`` and ``public_key``: what the genesis link claims. The key is never trusted
  because the bundle carries it: anyone can re-sign a whole chain under a fresh key (the log
  id then changes with it, since it is ``blake3(key + nonce)``). A bundle verifies against a
  key given with ``--key``, the key pinned by an earlier verification of the same log id,
  or, only when asked with ``--trust-bundle-key``, the key it carries.
- ``links``: every link, hex.
- ``decisions``: one entry per decision link, in seq order: what the link signed, by the
  names ``nerve audit held`` uses (``chain_seq``, ``outcome``, ``probe``, ``value_milli``,
  ``cost_milli``, ``charged_uj``, ``budget_after_uj``, ``trust``, ``source_event``), plus
  ``source_line`` and ``source``, the other fields of the source event (``hlc``, ``node``,
  ``kind``, ``subject``, ``source``, ``valid_time_ns``, ``payload_cid``). A link signs the
  source event's id, and the id is blake3 over those fields and the line, so the line is
  proven too. Verification checks every entry against its link; an entry that disagrees
  fails it (``edited`` at that link's seq, naming the entry). An unknown line is ``null``.

Version 1 bundles carried the decision events as recorded, unsigned; they are refused.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from nerve.attention.audit import Verdict, chain_links, verify
from nerve.canonical import canonical_json, det_cbor_decode
from nerve.chain import Break, ChainReport, TrustRecord, default_trust_dir, peek_log_id, trust_path
from nerve.chain.links import digest
from nerve.clock import Hlc
from nerve.errors import ChainError, NerveError, UsageError
from nerve.events import id_preimage
from nerve.query import connect

BUNDLE_FORMAT = "nerve-audit-bundle/2"
# Entry name -> (link field, how the link's value reads in the entry).
_SIGNED: dict[str, tuple[str, Callable[[Any], Any]]] = {
    "outcome": ("decision", str),
    "probe": ("probe", str),
    "value_milli": ("value", int),
    "cost_milli": ("cost", int),
    "charged_uj": ("charged_uj", int),
    "budget_after_uj": ("budget_uj", int),
    "trust": ("trust", int),
    "source_event": ("event", bytes.hex),
}
_SOURCE_COLUMNS = (
    "id, physical_ns, logical, node, kind, subject, source, valid_time_ns, payload_cid, line"
)
NO_KEY_HINT = (
    "pass --key PUB (the log owner's public key, e.g. from `nerve audit show 0` on their "
    "machine), or --trust-bundle-key to take the key the bundle carries"
)


def _cores(links: list[bytes]) -> list[dict[str, Any]]:
    return [det_cbor_decode(det_cbor_decode(raw)["core"]) for raw in links]


def _sources(log_root: Path, ids: list[bytes]) -> dict[bytes, tuple[Any, ...]]:
    rows = (
        connect(log_root)
        .execute(
            f"SELECT {_SOURCE_COLUMNS} FROM events WHERE id IN (SELECT unnest(?::BLOB[]))", [ids]
        )
        .fetchall()
    )
    return {bytes(row[0]): row[1:] for row in rows}


def _entry(core: Mapping[str, Any], source: tuple[Any, ...] | None) -> dict[str, Any]:
    entry: dict[str, Any] = {"chain_seq": core["seq"]}
    entry.update({name: read(core[field]) for name, (field, read) in _SIGNED.items()})
    entry["source_line"] = entry["source"] = None
    if source is not None:
        p, lo, node, kind, subject, src, valid, pcid, line = source
        entry["source_line"] = line
        entry["source"] = {
            "hlc": str(Hlc(p, lo)), "node": node, "kind": kind, "subject": subject,
            "source": src, "valid_time_ns": valid, "payload_cid": bytes(pcid).hex(),
        }  # fmt: skip
    return entry


def build(log_root: Path) -> dict[str, Any]:
    """The bundle of the log at ``log_root``, as a JSON-ready dict."""
    links = chain_links(log_root)
    if not links:
        raise UsageError("the log has no sealed decisions yet (no chain links)")
    cores = _cores(links)
    decided = [c for c in cores if c["kind"] == "decision"]
    sources = _sources(log_root, [c["event"] for c in decided])
    return {
        "format": BUNDLE_FORMAT,
        "public_key": cores[0].get("key", b"").hex() or None,
        "log_id": cores[0]["log"].hex(),
        "links": [raw.hex() for raw in links],
        "decisions": [_entry(c, sources.get(c["event"])) for c in decided],
    }


def export(log_root: Path, out: Path) -> dict[str, Any]:
    from nerve.log.crypt import is_encrypted

    if is_encrypted(log_root) and out.resolve().is_relative_to(log_root.parent.resolve()):
        raise UsageError(
            f"{out}: a bundle quotes source lines in plaintext and may not go under "
            f"{log_root.parent} of an encrypted workspace"
        )
    data = build(log_root)
    out.write_bytes(canonical_json(data) + b"\n")
    return {"path": str(out), "links": len(data["links"]), "public_key": data["public_key"]}


def read(path: Path) -> tuple[list[bytes], bytes | None, list[Any]]:
    """Links, carried key and decision entries of a bundle; a bad file is a clear error."""
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
        if data.get("format") != BUNDLE_FORMAT:
            raise ValueError(f"format is {data.get('format')!r}, not {BUNDLE_FORMAT}")
        links = [bytes.fromhex(h) for h in data["links"]]
        key = bytes.fromhex(data["public_key"]) if data.get("public_key") else None
        entries = data["decisions"]
        if not isinstance(entries, list):
            raise ValueError("decisions is not a list")
    except FileNotFoundError:
        raise UsageError(f"{path}: no such bundle") from None
    except (ValueError, KeyError, TypeError, AttributeError) as exc:
        raise UsageError(
            f"{path}: not an audit bundle: {exc}", hint="export it again: nerve audit export"
        ) from None
    return links, key, entries


def bundle_key(
    links: list[bytes],
    carried: bytes | None,
    *,
    given: bytes | None,
    trust_carried: bool,
    trust_dir: Path,
) -> tuple[bytes, str]:
    """The key to verify a bundle with, and where it came from; ChainError if there is none."""
    if given is not None:
        return given, "--key"
    log_id = peek_log_id(links)
    record = TrustRecord.load(trust_path(log_id, trust_dir)) if log_id else None
    if record is not None:
        return record.key, "trust record"
    if trust_carried and carried is not None:
        return carried, "bundle"
    name = log_id.hex() if log_id else "(unreadable genesis link)"
    raise ChainError(
        f"bundle for log {name}: no key is pinned for this log, and the key a bundle "
        "carries proves nothing by itself",
        hint=NO_KEY_HINT,
    )


def check_decisions(links: list[bytes], entries: list[Any]) -> Break | None:
    """The first decision entry that disagrees with its signed link, as a break; else None.

    Called on a chain that verified, so every link decodes.
    """
    decided = [c for c in _cores(links) if c["kind"] == "decision"]
    for k, core in enumerate(decided):
        if k >= len(entries):
            return _edited(core["seq"], f"no decisions entry for decision link {core['seq']}")
        why = _entry_problem(entries[k], core)
        if why is not None:
            return _edited(core["seq"], f"decisions entry {k}: {why}")
    if len(entries) > len(decided):
        return _edited(len(links), f"decisions entry {len(decided)}: no decision link left")
    return None


def _edited(seq: int, message: str) -> Break:
    return Break(seq, "edited", message)


def _entry_problem(entry: Any, core: Mapping[str, Any]) -> str | None:
    if not isinstance(entry, dict):
        return "not an object"
    seq = entry.get("chain_seq")
    if type(seq) is not int or seq != core["seq"]:
        return f"chain_seq is {seq!r}, the next decision link is {core['seq']}"
    for name, (field, read) in _SIGNED.items():
        signed, given = read(core[field]), entry.get(name)
        if type(given) is not type(signed) or given != signed:  # JSON true is not 1
            return f"{name} is {given!r}, link {core['seq']} signed {signed!r}"
    return _line_problem(entry, core)


def _line_problem(entry: dict[str, Any], core: Mapping[str, Any]) -> str | None:
    """A source line must be proven: its source event's fields hash to the signed event id."""
    line, source = entry.get("source_line"), entry.get("source") or {}
    if line is None:
        return None
    try:
        pre = id_preimage(
            Hlc.parse(source["hlc"]),
            source["node"],
            source["kind"],
            source["subject"],
            source["source"],
            core["trust"],
            source["valid_time_ns"],
            bytes.fromhex(source["payload_cid"]),
            line,
        )
    except (NerveError, TypeError, KeyError, ValueError, AttributeError, OverflowError) as exc:
        return f"source_line is {line!r}, but its source's fields are unusable: {exc!r}"
    if digest(pre) != core["event"]:
        return (
            f"source_line is {line!r}, but with its source's fields it does not hash to the "
            f"event link {core['seq']} signed"
        )
    return None


def verify_bundle(
    path: Path,
    *,
    key: bytes | None = None,
    trust_bundle_key: bool = False,
    trust_dir: Path | None = None,
    record: bool = True,
) -> Verdict:
    """Verify a bundle's links against a trusted key, then its decisions against the links."""
    folder = trust_dir or default_trust_dir()
    links, carried, entries = read(path)
    pinned, key_from = bundle_key(
        links, carried, given=key, trust_carried=trust_bundle_key, trust_dir=folder
    )

    def decisions_hold(report: ChainReport) -> Break | None:
        return check_decisions(links, entries)

    return verify(
        links,
        origin=f"key:{pinned.hex()}",
        key=pinned,
        key_from=key_from,
        trust_dir=folder,
        record=record,
        also=decisions_hold,
    )
