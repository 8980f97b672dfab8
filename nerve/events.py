"""The event: Sense v0.1's observed datum plus what nerve needs to run.

An event's id is blake3 over a fixed-order, length-prefixed encoding of every field (see
``conformance/README.md`` for the bytes). Kinds are stable strings, never class paths.
"""

from __future__ import annotations

import difflib
import re
import struct
from dataclasses import dataclass, field
from enum import IntEnum
from typing import Any, ClassVar

import blake3

from nerve.canonical import canonical_json, loads_bounded
from nerve.clock import Hlc, check_stamp
from nerve.errors import EventError

ID_TAG = b"nerve.event.v1"
VENDOR_MIN = 1024
SOURCE_MAX = 2**32 - 1
NERVE_SOURCE = VENDOR_MIN  # nerve's own control records (state, errors, config, runs)


class SourceClass(IntEnum):
    """Sense v0.1 §2 source classes. Codes are stable and append-only."""

    FILE_CHANGE = 0
    APP_FOCUS = 1
    SYSTEM_LOG = 2
    PROCESS_TREE = 3
    THERMAL_POWER = 4
    SHELL = 5
    ACCESSIBILITY = 6
    NETWORK = 7
    ENDPOINT = 8
    SALIENCE = 9


class Trust(IntEnum):
    """Sense v0.1 §2 trust levels; ``UNTRUSTED`` is the default."""

    ATTESTED = 0
    FIRST_PARTY = 1
    INFERRED = 2
    UNTRUSTED = 3


# nerve's own records' trust as a plain int: the writer's fast path takes plain values only
# (an enum member sends a batch down the slower Arrow path).
NERVE_TRUST = int(Trust.FIRST_PARTY)

_TRUST_NAMES = {
    Trust.ATTESTED: "Attested",
    Trust.FIRST_PARTY: "FirstParty",
    Trust.INFERRED: "Inferred",
    Trust.UNTRUSTED: "Untrusted",
}
_TRUST_BY_NAME = {name.lower(): level for level, name in _TRUST_NAMES.items()}
_TRUST_BY_NAME.update({"first_party": Trust.FIRST_PARTY, "firstparty": Trust.FIRST_PARTY})
_GOOD_KINDS: set[str] = set()
_KIND_RE = re.compile(r"^[a-z][a-z0-9_]*(?:[.-][a-z0-9_]+)*$")

# The kinds nerve itself writes (docs/log-format.md); a tail's typo check suggests these.
NERVE_KINDS = (
    "observation",
    "sense.state", "sense.error", "sense.restart", "sense.skipped", "signal",
    "config.loaded", "config.rejected", "daemon.started", "daemon.stopped",
    "log.recovered", "batch.key",
    "workflow.requested", "workflow.rejected", "workflow.deduped", "workflow.status",
    "workflow.started",
    "workflow.decision", "workflow.message", "workflow.question", "workflow.answer",
    "workflow.override", "workflow.error", "workflow.backoff", "workflow.restart",
    "check.fired", "check.verdict",
    "attention.highlight", "attention.decision", "attention.snapshot",
    "attention.notify_failed", "attention.mute", "chain.link",
    "ask.question", "ask.answer", "ask.error",
    "agent.access", "trust.attestation", "seal.stopped",
)  # fmt: skip
AGENT_ACCESS = "agent.access"  # one per MCP tool call (nerve.mcp.access)

# What `nerve ask` records of each question (kept for the audit, not the person's history).
ASK_KINDS = frozenset({"ask.question", "ask.answer", "ask.error"})
# Records nerve keeps for itself (state snapshots, signals, skipped ticks, keys, chain links,
# the questions put to it): every reader of the person's events leaves them out unless asked
# (`--all-kinds`, or a `--kind` naming one) — `tail`, MCP, the UI, `forget --match`, the
# notebooks — through `BOOKKEEPING_KINDS` or the SQL of `bookkeeping_sql`.
BOOKKEEPING_KINDS = frozenset(
    {"sense.state", "sense.skipped", "signal", "batch.key", "chain.link", "attention.snapshot"}
    | ASK_KINDS
)
BOOKKEEPING_MACRO = "nerve_bookkeeping"  # the SQL macro `nerve.query.define_views` defines
NERVE_SOURCE_NAME = "nerve"  # how readers show NERVE_SOURCE


def bookkeeping_sql(column: str = "kind") -> str:
    """SQL true when ``column`` is one of nerve's bookkeeping kinds: the one predicate the
    readers of the person's events (and the ``nerve_bookkeeping`` macro) are built from."""
    names = ", ".join(f"'{kind}'" for kind in sorted(BOOKKEEPING_KINDS))
    return f"({column} IN ({names}))"


def source_name(code: int) -> str:
    """``file_change`` for a standard code, ``vendor:<code>`` for a vendor one."""
    if code >= VENDOR_MIN:
        return f"vendor:{code}"
    try:
        return SourceClass(code).name.lower()
    except ValueError:
        raise EventError(f"source code {code} is neither a standard class nor >= 1024") from None


def display_source(code: int) -> str:
    """``source_name`` for people: nerve's own records read ``nerve``, not ``vendor:1024``."""
    return NERVE_SOURCE_NAME if code == NERVE_SOURCE else source_name(code)


def parse_source(text: str | int) -> int:
    """Read a source class name (``shell``), ``vendor:<code>`` or a code; return the code."""
    if isinstance(text, int) and not isinstance(text, bool):
        return check_source(text)
    name = str(text).strip().lower()
    if name.startswith("vendor:"):
        digits = name.removeprefix("vendor:")
        if not digits.isdigit() or int(digits[:_CODE_DIGITS]) < VENDOR_MIN:
            raise EventError(f"vendor source {name[:40]!r} needs a code >= {VENDOR_MIN}")
        return check_source(_code(digits))
    if name.isdigit():
        return check_source(_code(name))
    try:
        return int(SourceClass[name.upper()])
    except KeyError:
        known = [s.name.lower() for s in SourceClass]
        close = difflib.get_close_matches(name, known, n=1)
        guess = f"did you mean {close[0]!r}? " if close else ""
        raise EventError(
            f"unknown source class {text!r} ({guess}one of {', '.join(known)}, or vendor:<code>)"
        ) from None


_CODE_DIGITS = 11  # past 2^32-1 already, and short of Python's limit on int("9" * 5000)


def _code(digits: str) -> int:
    """A code's digits as a number: one too long to be a source is refused as too large."""
    if len(digits.lstrip("0")) > _CODE_DIGITS:
        raise EventError(f"source code {digits[:20]}… ({len(digits)} digits) is too large")
    return int(digits)


def check_source(code: int) -> int:
    if code >= VENDOR_MIN and code <= SOURCE_MAX:
        return code
    if 0 <= code < len(SourceClass):
        return code
    raise EventError(f"source code {code} is neither a standard class nor in 1024..2^32-1")


def trust_name(level: int) -> str:
    return _TRUST_NAMES[Trust(level)]


def parse_trust(text: str | int) -> Trust:
    """Read ``Attested`` / ``FirstParty`` / ``Inferred`` / ``Untrusted`` (any case) or a code."""
    if isinstance(text, int) and not isinstance(text, bool):
        try:
            return Trust(text)
        except ValueError:
            raise EventError(f"trust code {text} is not 0..3") from None
    key = str(text).strip().lower().replace("-", "_")
    if key in _TRUST_BY_NAME:
        return _TRUST_BY_NAME[key]
    raise EventError(f"unknown trust level {text!r} (Attested, FirstParty, Inferred, Untrusted)")


def check_kind(kind: str) -> str:
    if not isinstance(kind, str):
        raise EventError(f"kind must be a string, got {type(kind).__name__}", field="kind")
    if kind in _GOOD_KINDS:
        return kind
    if len(kind) > 128 or not _KIND_RE.match(kind):
        raise EventError(
            f"kind {kind!r} must be a lower-case dotted name like 'sense.state'", field="kind"
        )
    if len(_GOOD_KINDS) < 4096:  # kinds are few; remembering them keeps appends cheap
        _GOOD_KINDS.add(kind)
    return kind


def check_text(name: str, value: Any) -> str:
    """``value`` if it is a string that UTF-8 can encode (no lone surrogates); else EventError."""
    if not isinstance(value, str):
        raise EventError(f"{name} must be a string, got {type(value).__name__}", field=name)
    if not value.isascii():
        try:
            value.encode("utf-8")
        except UnicodeEncodeError as exc:
            bad = value[exc.start : exc.end]
            raise EventError(
                f"{name} is not valid Unicode: {bad!a} at character {exc.start} ({exc.reason})",
                field=name,
            ) from None
    return value


def check_valid_time(value: Any) -> int | None:
    """``value`` if it is ``None`` or a signed 64-bit integer (ns); else EventError."""
    if value is not None and (
        isinstance(value, bool) or not isinstance(value, int) or not -(2**63) <= value < 2**63
    ):
        shown = value if isinstance(value, int | float) else type(value).__name__
        raise EventError(
            f"valid_time_ns {shown!r} must be a signed 64-bit integer of nanoseconds",
            field="valid_time_ns",
        )
    return value


def payload_bytes(payload: Any) -> bytes:
    """Payload bytes: ``bytes`` as given, ``None`` as empty, anything else canonical JSON
    (nesting at most ``nerve.canonical.MAX_NESTING`` levels)."""
    if payload is None:
        return b""
    if isinstance(payload, bytes | bytearray | memoryview):
        return bytes(payload)
    return canonical_json(payload, field="payload")


def decode_payload(data: bytes) -> Any:
    """Payload bytes as a JSON value, or ``None`` when empty, not JSON, or nested deeper than
    ``nerve.canonical.MAX_NESTING`` (stored raw bytes are never parsed past the limit)."""
    if not data:
        return None
    try:
        return loads_bounded(data, field="payload")
    except (ValueError, UnicodeDecodeError, EventError):
        return None


def cid(data: bytes) -> bytes:
    """Content address of ``data``: its 32-byte blake3 digest."""
    return blake3.blake3(data).digest()


_U32 = struct.Struct(">I")
_HLC = struct.Struct(">QI")
_I64 = struct.Struct(">q")


def _field(data: bytes) -> bytes:
    return _U32.pack(len(data)) + data


def id_preimage(
    hlc: Hlc,
    node: str,
    kind: str,
    subject: str,
    source: int,
    trust: int,
    valid_time_ns: int | None,
    payload_cid: bytes,
    line: str,
) -> bytes:
    """The exact bytes an event id hashes: each field as a u32 big-endian length then bytes."""
    vt = b"" if valid_time_ns is None else _I64.pack(valid_time_ns)
    return b"".join(
        (
            _field(ID_TAG),
            _field(_HLC.pack(hlc[0], hlc[1])),
            _field(node.encode()),
            _field(kind.encode()),
            _field(subject.encode()),
            _field(_U32.pack(source)),
            _field(bytes((trust,))),
            _field(vt),
            _field(payload_cid),
            _field(line.encode()),
        )
    )


@dataclass(frozen=True, slots=True)
class Event:
    """One stored event. ``id`` and ``payload_cid`` are derived from the other fields."""

    hlc: Hlc
    node: str
    kind: str
    subject: str = ""
    source: int = NERVE_SOURCE
    trust: Trust = Trust.UNTRUSTED
    valid_time_ns: int | None = None
    payload: bytes = b""  # any JSON value is accepted and stored as canonical JSON
    line: str = ""
    payload_cid: bytes = field(init=False, repr=False, compare=False)
    id: bytes = field(init=False, repr=False, compare=False)
    erased: ClassVar[bool] = False

    def __post_init__(self) -> None:
        validate_fields(
            self.hlc,
            self.node,
            self.kind,
            self.subject,
            self.source,
            self.trust,
            self.valid_time_ns,
            self.line,
        )
        if not isinstance(self.payload, bytes):  # a JSON value: stored as canonical JSON
            object.__setattr__(self, "payload", payload_bytes(self.payload))
        pcid = cid(self.payload)
        object.__setattr__(self, "payload_cid", pcid)
        object.__setattr__(self, "hlc", Hlc(*self.hlc))
        object.__setattr__(self, "trust", Trust(self.trust))
        pre = id_preimage(
            self.hlc,
            self.node,
            self.kind,
            self.subject,
            self.source,
            self.trust,
            self.valid_time_ns,
            pcid,
            self.line,
        )
        object.__setattr__(self, "id", cid(pre))

    @property
    def source_name(self) -> str:
        return source_name(self.source)

    @property
    def trust_name(self) -> str:
        return trust_name(self.trust)

    def json_payload(self) -> Any:
        """The payload decoded as JSON, or ``None`` if it is empty or not JSON."""
        return decode_payload(self.payload)


@dataclass(frozen=True, slots=True)
class ErasedEvent:
    """A stored event whose payload and line were erased (``payload.erased``): it has
    neither, and its ``id`` and ``payload_cid`` are as stored, since they can no longer be
    recomputed from its fields."""

    hlc: Hlc
    node: str
    kind: str
    subject: str
    source: int
    trust: Trust
    valid_time_ns: int | None
    payload_cid: bytes
    id: bytes
    erased: ClassVar[bool] = True

    @property
    def source_name(self) -> str:
        return source_name(self.source)


def validate_fields(
    hlc: Hlc,
    node: str,
    kind: str,
    subject: str,
    source: int,
    trust: int,
    valid_time_ns: int | None,
    line: str,
) -> None:
    """Raise ``EventError`` naming the first field out of range."""
    try:
        check_stamp(Hlc(*hlc))
    except Exception as exc:
        raise EventError(f"hlc: {exc}") from None
    for name, value in (("node", node), ("subject", subject), ("line", line)):
        check_text(name, value)
    if not node:
        raise EventError("node must not be empty", field="node")
    check_kind(kind)
    check_source(source)
    if trust not in (0, 1, 2, 3):
        raise EventError(f"trust {trust!r} is not 0..3", field="trust")
    check_valid_time(valid_time_ns)
