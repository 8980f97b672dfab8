"""Events as JSON, without Arrow: what the socket, ``emit --jsonl`` and ``import`` carry.

Split from :mod:`nerve.log.codec` so a CLI command that only talks to the daemon never loads
pyarrow or numpy.
"""

from __future__ import annotations

import base64
import re
from typing import Any

from nerve.canonical import legacy_json, parse_canonical
from nerve.clock import Hlc
from nerve.errors import EventError
from nerve.events import (
    ErasedEvent,
    Event,
    Trust,
    check_kind,
    check_text,
    check_valid_time,
    cid,
    parse_source,
    parse_trust,
    payload_bytes,
    source_name,
    trust_name,
    validate_fields,
)

_HEX64 = re.compile(r"[0-9a-f]{64}")  # a content id as text
ERASED_TEXT = "<erased>"  # how text output shows an erased line (JSON says "erased": true)


def _payload_wire(data: bytes) -> dict[str, Any]:
    """``payload`` when the bytes are canonical JSON (not ``null``), else ``payload_b64``:
    raw bytes, and JSON nesting deeper than the limit, travel as base64."""
    if not data:
        return {"payload": None}
    parsed = parse_canonical(data)
    if parsed is not None and parsed[0] is not None:
        return {"payload": parsed[0]}
    return {"payload_b64": base64.b64encode(data).decode("ascii")}


def row_to_json(row: dict[str, Any]) -> dict[str, Any]:
    """A table row (``to_pylist`` form) in the wire form ``nerve import`` reads.

    An erased row (null payload, see :mod:`nerve.log.erasure`) has ``"erased": true`` and
    neither ``line`` nor ``payload``: absent, so it never reads as an empty value."""
    out: dict[str, Any] = {
        "hlc": [row["physical_ns"], row["logical"]],
        "node": row["node"],
        "kind": row["kind"],
        "subject": row["subject"],
        "source": source_name(row["source"]),
        "trust": trust_name(row["trust"]),
        "valid_time_ns": row["valid_time_ns"],
        "line": row["line"],
        "payload_cid": row["payload_cid"].hex(),
        "id": row["id"].hex(),
    }
    if row["payload"] is None:
        del out["line"]
        out["erased"] = True
        return out
    out.update(_payload_wire(row["payload"]))
    return out


def event_to_json(event: Event | ErasedEvent) -> dict[str, Any]:
    line, payload = (event.line, event.payload) if isinstance(event, Event) else (None, None)
    return row_to_json(
        {
            "physical_ns": event.hlc.physical_ns,
            "logical": event.hlc.logical,
            "node": event.node,
            "kind": event.kind,
            "subject": event.subject,
            "source": event.source,
            "trust": int(event.trust),
            "valid_time_ns": event.valid_time_ns,
            "line": line,
            "payload_cid": event.payload_cid,
            "id": event.id,
            "payload": payload,
        }
    )


_DRAFT_KEYS = {
    "source",
    "trust",
    "line",
    "payload",
    "payload_b64",
    "valid_time_ns",
    "kind",
    "subject",
}
_WIRE_KEYS = _DRAFT_KEYS | {"hlc", "node", "id", "payload_cid"}
_ERASED_KEYS = {"erased", "hlc", "node", "id", "payload_cid", "kind", "subject", "source"}
_ERASED_KEYS |= {"trust", "valid_time_ns"}
_ERASED_HINT = (
    "an erased event's id can no longer be recomputed: it is imported with the rest of a "
    "copied log (`nerve import`), never sent as a new event"
)


def wire_payload(obj: dict[str, Any]) -> bytes:
    if "payload_b64" in obj:
        if "payload" in obj and obj["payload"] is not None:
            raise EventError("give either payload or payload_b64, not both")
        try:
            return base64.b64decode(str(obj["payload_b64"]), validate=True)
        except ValueError:
            raise EventError("payload_b64 is not valid base64") from None
    return payload_bytes(obj.get("payload"))


def draft_from_json(obj: Any, *, default_kind: str = "observation") -> dict[str, Any]:
    """Validate one ``nerve emit --jsonl`` object into draft fields; raise ``EventError``."""
    if not isinstance(obj, dict):
        raise EventError(f"expected a JSON object, got {type(obj).__name__}")
    extra = sorted(set(obj) - _DRAFT_KEYS)
    if extra:
        raise EventError(f"unknown field(s): {_names(extra)}")
    if "source" not in obj:
        raise EventError("missing field: source")
    return _draft_fields(obj, default_kind)


def _names(keys: list[str]) -> str:
    """Field names for a message: as written, or quoted when one holds a control character
    (a line break in a key must not break the message's line)."""
    return ", ".join(key if key.isprintable() else repr(key) for key in keys)


_RESERVED = {"payload.erased": "`nerve forget` and retention write it, with the erasure itself"}


def _kind(value: Any) -> str:
    kind = check_kind(value)
    if kind in _RESERVED:
        raise EventError(f"kind {kind!r} cannot be sent: {_RESERVED[kind]}", field="kind")
    return kind


def _draft_fields(obj: dict[str, Any], default_kind: str, *, own: bool = False) -> dict[str, Any]:
    kind = obj.get("kind", default_kind)
    return {
        "kind": check_kind(kind) if own else _kind(kind),
        "subject": check_text("subject", obj.get("subject", "")),
        "source": parse_source(obj["source"]),
        "trust": int(parse_trust(obj.get("trust", "Untrusted"))),
        "valid_time_ns": check_valid_time(obj.get("valid_time_ns")),
        "payload": wire_payload(obj),
        "line": check_text("line", obj.get("line", "")),
    }


def stored_event_from_json(obj: Any) -> Event | ErasedEvent:
    """One event of a copied log (``nerve import``): a whole event, its id checked, of any
    kind; or an erased one (``"erased": true``), with the id and payload address it has
    as stored. The log checks that every ``payload.erased`` comes with what it erased."""
    if isinstance(obj, dict) and obj.get("erased") is True:
        return _erased_from_json(obj)
    return event_from_json(obj, own=True)


def _erased_from_json(obj: dict[str, Any]) -> ErasedEvent:
    extra = sorted(set(obj) - _ERASED_KEYS)
    if extra:
        raise EventError(f"an erased event has no {_names(extra)}", field=extra[0])
    for key in ("hlc", "node", "kind", "source", "id", "payload_cid"):
        if key not in obj:
            raise EventError(f"missing field: {key}")
    hlc = obj["hlc"]
    if not (isinstance(hlc, list) and len(hlc) == 2 and all(type(x) is int for x in hlc)):
        raise EventError(f"hlc must be [physical_ns, logical] integers, got {hlc!r}")
    kind, subject = check_kind(obj["kind"]), check_text("subject", obj.get("subject", ""))
    source, trust = parse_source(obj["source"]), int(parse_trust(obj.get("trust", "Untrusted")))
    valid = check_valid_time(obj.get("valid_time_ns"))
    validate_fields(Hlc(*hlc), obj["node"], kind, subject, source, trust, valid, "")
    ids = [_digest(obj, key) for key in ("payload_cid", "id")]
    return ErasedEvent(Hlc(*hlc), obj["node"], kind, subject, source, Trust(trust), valid, *ids)


def _digest(obj: dict[str, Any], key: str) -> bytes:
    value = obj[key]
    try:
        raw = bytes.fromhex(value) if isinstance(value, str) else b""
    except ValueError:
        raw = b""
    if len(raw) != 32:
        raise EventError(f"{key} must be 64 hex digits, got {str(value)[:80]!r}", field=key)
    return raw


def event_from_json(obj: Any, *, own: bool = False) -> Event:
    """Read one whole event in the wire form; a given ``id`` must match the recomputed one.
    ``own``: an event this log wrote (an archive's copy), so a reserved kind is fine."""
    if not isinstance(obj, dict):
        raise EventError(f"expected a JSON object, got {type(obj).__name__}")
    if obj.get("erased") is True:
        raise EventError(f"event {obj.get('id', '?')} is erased: {_ERASED_HINT}", field="erased")
    extra = sorted(set(obj) - _WIRE_KEYS)
    if extra:
        raise EventError(f"unknown field(s): {_names(extra)}")
    for key in ("hlc", "node", "kind", "source"):
        if key not in obj:
            raise EventError(f"missing field: {key}")
    hlc = obj["hlc"]
    if not (isinstance(hlc, list) and len(hlc) == 2 and all(type(x) is int for x in hlc)):
        raise EventError(f"hlc must be [physical_ns, logical] integers, got {hlc!r}")
    fields = _draft_fields(obj, "observation", own=own)
    fields["payload"] = _stored_form(obj, fields["payload"])
    node = obj["node"]
    validate_fields(
        Hlc(*hlc),
        node,
        fields["kind"],
        fields["subject"],
        fields["source"],
        fields["trust"],
        fields["valid_time_ns"],
        fields["line"],
    )
    event = Event(hlc=Hlc(*hlc), node=node, **fields)
    _check_claimed(obj, "payload_cid", event.payload_cid)
    _check_claimed(obj, "id", event.id)
    return event


def _stored_form(obj: dict[str, Any], data: bytes) -> bytes:
    """The payload bytes a ``"payload"`` value was stored as: canonical JSON (RFC 8785), or
    nerve's first form when the claimed ``payload_cid`` names those bytes (an event written
    before JCS, exported by a nerve of that time)."""
    claimed = obj.get("payload_cid")
    if "payload_b64" in obj or not isinstance(claimed, str) or claimed == cid(data).hex():
        return data
    try:
        legacy = legacy_json(obj.get("payload"))
    except (TypeError, ValueError):
        return data
    return legacy if cid(legacy).hex() == claimed else data


def _check_claimed(obj: dict[str, Any], key: str, actual: bytes) -> None:
    claimed = obj.get(key)
    if claimed is not None and claimed != actual.hex():
        shown = claimed if isinstance(claimed, str) and _HEX64.fullmatch(claimed) else "given"
        raise EventError(f"{key} {shown} does not match the fields (recomputed {actual.hex()})")


def payload_text(data: bytes) -> str:
    if not data:
        return '"payload":null'
    parsed = parse_canonical(data)
    if parsed is not None and parsed[0] is not None:
        return '"payload":' + parsed[1]
    return '"payload_b64":"' + base64.b64encode(data).decode("ascii") + '"'
