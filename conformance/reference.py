"""An independent reference for C1, C2, C3, C3V, C4 and C5, written from
``conformance/README.md`` alone.

It uses the standard library, ``blake3`` and PyNaCl (Ed25519) and never imports ``nerve``
(``conformance/test_reference.py`` checks both by walking this file's syntax tree and by
running it with ``nerve`` made unimportable). Each ``check_*`` function takes a parsed
vector and returns the list of problems found; an empty list means the vector agrees with
the byte layouts and rules the README documents.

Scope: C1 and C2 in full. C3 and C3V in full: observer, detector, value probes and gate
recomputed, every highlight and decision compared. C4: every case's envelope (window,
tokens, BM25 in fixed point, named strata, recency fill, strata, salience) and its digest,
and the Tier-0 intent its query matches; not the answer texts, which the README leaves to
the vector. For C5, the link format and a first-break walk for one key epoch (no ``rotate``
links, no trust record): duplicated, malformed, non-canonical, unknown-key, forked,
bad-signature (without telling an edit from a damaged signature), reordered and excised,
and the checkpoint's size, head and Merkle root.
"""

from __future__ import annotations

import base64
import json
import struct
from collections.abc import Callable, Iterator, Sequence
from typing import Any

import blake3
from nacl.exceptions import BadSignatureError
from nacl.signing import SigningKey, VerifyKey

Problems = list[str]

# -- the event id (README: "The event id, byte by byte") ------------------------------------

TAG = b"nerve.event.v1"
SOURCES = {
    "file_change": 0, "app_focus": 1, "system_log": 2, "process_tree": 3,
    "thermal_power": 4, "shell": 5, "accessibility": 6, "network": 7, "endpoint": 8,
    "salience": 9,
}  # fmt: skip
VENDOR_MIN = 1024
TRUSTS = {"Attested": 0, "FirstParty": 1, "Inferred": 2, "Untrusted": 3}


def b3(data: bytes) -> bytes:
    return blake3.blake3(data).digest()


def source_code(name: str) -> int:
    if name.startswith("vendor:"):
        code = int(name.removeprefix("vendor:"))
        if code < VENDOR_MIN:
            raise ValueError(f"vendor code {code} is below {VENDOR_MIN}")
        return code
    return SOURCES[name]


# -- payloads (README: "Payloads"): RFC 8785, the JSON Canonicalization Scheme -------------

_SHORT_ESCAPES = {
    '"': '\\"',
    "\\": "\\\\",
    "\b": "\\b",
    "\f": "\\f",
    "\n": "\\n",
    "\r": "\\r",
    "\t": "\\t",
}


def jcs_string(text: str) -> str:
    """A JSON string as ECMAScript's JSON.stringify writes it (RFC 8785 §3.2.2.2)."""
    out = ['"']
    for ch in text:
        if ch in _SHORT_ESCAPES:
            out.append(_SHORT_ESCAPES[ch])
        elif ord(ch) < 0x20:
            out.append(f"\\u{ord(ch):04x}")
        else:
            out.append(ch)
    return "".join(out) + '"'


def jcs_number(value: float) -> str:
    """ECMAScript's Number::toString (RFC 8785 §3.2.2.3) from the shortest round-trip digits."""
    if value - value != 0:  # NaN and the infinities
        raise ValueError(f"{value} has no JSON form")
    if value == 0:
        return "0"
    if value < 0:
        return "-" + jcs_number(-value)
    mantissa, _, exp = repr(value).partition("e")
    whole, _, frac = mantissa.partition(".")
    raw = whole + frac
    digits = raw.lstrip("0")
    n = len(whole) + int(exp or 0) - (len(raw) - len(digits))  # value = 0.digits × 10^n
    digits = digits.rstrip("0")
    k = len(digits)
    if k <= n <= 21:
        return digits + "0" * (n - k)
    if 0 < n <= 21:
        return digits[:n] + "." + digits[n:]
    if -6 < n <= 0:
        return "0." + "0" * -n + digits
    e = n - 1
    head = digits if k == 1 else digits[0] + "." + digits[1:]
    return f"{head}e{'+' if e >= 0 else '-'}{abs(e)}"


def _utf16_units(key: str) -> list[int]:
    units = []
    for ch in key:
        cp = ord(ch)
        if cp < 0x10000:
            units.append(cp)
        else:
            units += [0xD800 + ((cp - 0x10000) >> 10), 0xDC00 + ((cp - 0x10000) & 0x3FF)]
    return units


def jcs(value: Any) -> str:
    """RFC 8785 text; integers are written exactly, also beyond 2^53 (README: "Payloads")."""
    if value is None or isinstance(value, bool):
        return {None: "null", True: "true", False: "false"}[value]
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        return jcs_number(value)
    if isinstance(value, str):
        return jcs_string(value)
    if isinstance(value, list):
        return "[" + ",".join(jcs(v) for v in value) + "]"
    keys = sorted(value, key=_utf16_units)
    return "{" + ",".join(jcs_string(k) + ":" + jcs(value[k]) for k in keys) + "}"


def canonical_json(value: Any) -> bytes:
    """A structured payload's bytes: the UTF-8 of its RFC 8785 text."""
    return jcs(value).encode("utf-8")


def payload_bytes(wire: dict[str, Any]) -> bytes:
    """A wire event's payload: ``payload_b64``, the canonical JSON of ``payload``, or empty."""
    if "payload_b64" in wire:
        return base64.b64decode(wire["payload_b64"], validate=True)
    value = wire.get("payload")
    return b"" if value is None else canonical_json(value)


def _field(data: bytes) -> bytes:
    return struct.pack(">I", len(data)) + data


def preimage(wire: dict[str, Any]) -> bytes:
    """The ten length-prefixed fields of a wire event, in the README's order."""
    physical_ns, logical = wire["hlc"]
    valid = wire["valid_time_ns"]
    fields = (
        TAG,
        struct.pack(">QI", physical_ns, logical),
        wire["node"].encode("utf-8"),
        wire["kind"].encode("utf-8"),
        wire["subject"].encode("utf-8"),
        struct.pack(">I", source_code(wire["source"])),
        bytes([TRUSTS[wire["trust"]]]),
        b"" if valid is None else struct.pack(">q", valid),
        b3(payload_bytes(wire)),
        wire["line"].encode("utf-8"),
    )
    return b"".join(_field(f) for f in fields)


def event_id(wire: dict[str, Any]) -> bytes:
    return b3(preimage(wire))


def replay_digest(events: Sequence[dict[str, Any]]) -> bytes:
    """blake3 over the raw ids in order: (physical_ns, logical), node bytes, then id."""
    keyed = [(tuple(e["hlc"]), e["node"].encode("utf-8"), event_id(e)) for e in events]
    return b3(b"".join(eid for _, _, eid in sorted(keyed)))


def _wire_claims(index: int, wire: dict[str, Any]) -> Problems:
    problems = []
    cid = b3(payload_bytes(wire)).hex()
    if wire.get("payload_cid") not in (None, cid):
        problems.append(f"event {index}: payload_cid {wire['payload_cid']}, computed {cid}")
    eid = event_id(wire).hex()
    if wire.get("id") not in (None, eid):
        problems.append(f"event {index}: id {wire['id']}, computed {eid}")
    return problems


def check_c1(vec: dict[str, Any]) -> Problems:
    events = vec["events"]
    problems: Problems = []
    if not len(events) == len(vec["preimages"]) == len(vec["ids"]):
        return ["events, preimages and ids differ in length"]
    for index, (wire, pre, eid) in enumerate(
        zip(events, vec["preimages"], vec["ids"], strict=True)
    ):
        problems += _wire_claims(index, wire)
        if preimage(wire).hex() != pre:
            problems.append(f"event {index}: preimage differs from the published bytes")
        if event_id(wire).hex() != eid:
            problems.append(f"event {index}: id {event_id(wire).hex()}, published {eid}")
    digest = replay_digest(events).hex()
    if digest != vec["replay_digest"]:
        problems.append(f"replay digest {digest}, published {vec['replay_digest']}")
    return problems


def check_n1(vec: dict[str, Any]) -> Problems:
    """Payload JSON texts and their RFC 8785 bytes and addresses (README: "Payloads")."""
    problems: Problems = []
    for case in vec["cases"]:
        data = canonical_json(json.loads(case["input"]))
        if data != case["canonical"].encode("utf-8"):
            problems.append(f"{case['name']}: canonical form is {data!r}")
        elif b3(data).hex() != case["payload_cid"]:
            problems.append(f"{case['name']}: payload address differs")
    return problems


def check_n2(vec: dict[str, Any]) -> Problems:
    """Projection rows are RFC 8785 objects, sorted by their UTF-8 bytes, and the digest is
    blake3 over each line and a newline (README: "Projection digests"). Running the SQL
    itself needs DuckDB; this checks the encoding, order and digest of the published rows."""
    problems: Problems = []
    for view in vec["projections"]:
        lines = [line.encode("utf-8") for line in view["lines"]]
        if any(canonical_json(json.loads(line)) != line for line in lines):
            problems.append(f"{view['name']}: a row is not in RFC 8785 form")
        if lines != sorted(lines) or len(lines) != view["rows"]:
            problems.append(f"{view['name']}: rows are not sorted by their bytes")
        if b3(b"".join(line + b"\n" for line in lines)).hex() != view["digest"]:
            problems.append(f"{view['name']}: digest differs")
    return problems


def check_c2(vec: dict[str, Any]) -> Problems:
    base = vec["event"]
    problems = _wire_claims(0, base)
    if preimage(base).hex() != vec["preimage"]:
        problems.append("the event's preimage differs from the published bytes")
    base_id = event_id(base).hex()
    if base_id != vec["event_id"]:
        problems.append(f"event id {base_id}, published {vec['event_id']}")
    for case in vec["retagged"]:
        changed = {**base, **case["change"]}
        got = event_id(changed).hex()
        if got != case["event_id"] or got == base_id:
            problems.append(f"re-tagged {case['change']}: id {got}, published {case['event_id']}")
    return problems


# -- deterministic CBOR (README: "C5 — the link format") -------------------------------------


class CborError(ValueError):
    """Bytes that are not deterministic CBOR of the allowed types."""


class NonCanonical(CborError):
    """CBOR of the allowed types, but not in its deterministic form."""


def _head(major: int, arg: int) -> bytes:
    if arg < 24:
        return bytes([major << 5 | arg])
    for info, size in ((24, 1), (25, 2), (26, 4), (27, 8)):
        if arg < 1 << (8 * size):
            return bytes([major << 5 | info]) + arg.to_bytes(size, "big")
    raise CborError(f"argument {arg} needs more than 8 bytes")


def cbor_encode(value: Any) -> bytes:
    """Integers, byte strings, text, arrays and text-keyed maps; shortest heads, sorted keys."""
    if isinstance(value, bool) or value is None:
        raise CborError(f"{value!r} is not allowed")
    if isinstance(value, int):
        return _head(0, value) if value >= 0 else _head(1, -1 - value)
    if isinstance(value, bytes):
        return _head(2, len(value)) + value
    if isinstance(value, str):
        raw = value.encode("utf-8")
        return _head(3, len(raw)) + raw
    if isinstance(value, list):
        return _head(4, len(value)) + b"".join(cbor_encode(v) for v in value)
    if isinstance(value, dict):
        pairs = [(cbor_encode(k), cbor_encode(v)) for k, v in value.items()]
        pairs.sort(key=lambda kv: (len(kv[0]), kv[0]))
        return _head(5, len(pairs)) + b"".join(k + v for k, v in pairs)
    raise CborError(f"cannot encode {type(value).__name__}")


class _Reader:
    def __init__(self, data: bytes) -> None:
        self.data, self.pos = data, 0

    def take(self, n: int) -> bytes:
        if self.pos + n > len(self.data):
            raise CborError("truncated")
        chunk = self.data[self.pos : self.pos + n]
        self.pos += n
        return chunk

    def item(self) -> Any:
        first = self.take(1)[0]
        major, info = first >> 5, first & 0x1F
        if info < 24:
            arg = info
        elif info <= 27:
            arg = int.from_bytes(self.take(1 << (info - 24)), "big")
        else:
            raise CborError(f"additional information {info} (indefinite or reserved)")
        return self.value(major, arg)

    def value(self, major: int, arg: int) -> Any:
        if major == 0:
            return arg
        if major == 1:
            return -1 - arg
        if major == 2:
            return self.take(arg)
        if major == 3:
            return self.take(arg).decode("utf-8")
        if major == 4:
            return [self.item() for _ in range(arg)]
        if major == 5:
            return self.mapping(arg)
        raise CborError(f"major type {major} (tags, floats, simple values) is not allowed")

    def mapping(self, count: int) -> dict[str, Any]:
        out: dict[str, Any] = {}
        for _ in range(count):
            key = self.item()
            if not isinstance(key, str) or key in out:
                raise CborError(f"map key {key!r} is not a new text string")
            out[key] = self.item()
        return out


def cbor_decode(data: bytes) -> Any:
    """Decode one item; it must use every byte and re-encode to exactly the same bytes."""
    reader = _Reader(data)
    value = reader.item()
    if reader.pos != len(data):
        raise CborError(f"{len(data) - reader.pos} trailing byte(s)")
    if cbor_encode(value) != data:
        raise NonCanonical("not in deterministic form")
    return value


# -- C5: the sealed surfacing log ------------------------------------------------------------

DOMAIN = b"nerve.chain.v1\x00"
ZERO_ID = bytes(32)
PROVENANCE = {"HwShunt": 0, "ModelBased": 1, "Estimator": 2}


def _uint(v: Any) -> bool:
    return type(v) is int and v >= 0


def _text(v: Any) -> bool:
    return type(v) is str


def _sized(n: int) -> Callable[[Any], bool]:
    return lambda v: type(v) is bytes and len(v) == n


def _ints_and_text(v: Any) -> bool:
    return type(v) is dict and all(type(x) in (int, str) for x in v.values())


COMMON = {"v": _uint, "log": _sized(32), "epoch": _uint, "seq": _uint, "prev": _sized(32),
          "kind": _text}  # fmt: skip
KINDS = {
    "genesis": {"key": _sized(32), "nonce": _sized(16)},
    "decision": {
        "event": _sized(32), "trust": _uint, "probe": _text, "value": _uint, "cost": _uint,
        "decision": _text, "charged_uj": _uint, "budget_uj": _uint, "hl": _ints_and_text,
        "t": _uint, "energy": _ints_and_text,
    },
    "checkpoint": {"size": _uint, "head": _sized(32), "root": _sized(32)},
}  # fmt: skip


def merkle_root(leaves: Sequence[bytes]) -> bytes:
    """RFC 6962 Merkle Tree Hash with blake3: leaf 0x00 || id, node 0x01 || left || right."""
    if not leaves:
        return b3(b"")
    if len(leaves) == 1:
        return b3(b"\x00" + leaves[0])
    split = 1 << ((len(leaves) - 1).bit_length() - 1)
    return b3(b"\x01" + merkle_root(leaves[:split]) + merkle_root(leaves[split:]))


def open_link(raw: bytes) -> tuple[dict[str, Any], bytes, bytes]:
    """``(core fields, core bytes, signature)``; raise ``CborError`` for a malformed link."""
    envelope = cbor_decode(raw)
    if type(envelope) is not dict or sorted(envelope) != ["core", "sig"]:
        raise CborError("the envelope is not exactly {core, sig}")
    core_bytes, sig = envelope["core"], envelope["sig"]
    if type(core_bytes) is not bytes or not _sized(64)(sig):
        raise CborError("core must be bytes and sig 64 bytes")
    core = cbor_decode(core_bytes)
    if type(core) is not dict:
        raise CborError("the core is not a map")
    return core, core_bytes, sig


def schema_problem(core: dict[str, Any]) -> str | None:
    kind = core.get("kind")
    if not isinstance(kind, str) or kind not in KINDS:
        return f"unknown kind {kind!r}"
    spec = {**COMMON, **KINDS[kind]}
    if set(core) != set(spec):
        return f"fields {sorted(core)}, expected {sorted(spec)}"
    bad = [name for name, ok in spec.items() if not ok(core[name])]
    if bad or core["v"] != 1:
        return f"field(s) {bad or ['v']} of the wrong type, size or value"
    return None


def signed_by(key: bytes, core_bytes: bytes, sig: bytes) -> bool:
    try:
        VerifyKey(key).verify(DOMAIN + core_bytes, sig)
    except BadSignatureError:
        return False
    return True


def _claimed_seq(raw: bytes) -> int | None:
    try:
        seq = open_link(raw)[0].get("seq")
    except (CborError, UnicodeDecodeError):
        return None
    return seq if _uint(seq) else None


class _Walk:
    """The README's first-break walk over links in order, for one key epoch."""

    def __init__(self, links: Sequence[bytes], pinned_key: bytes) -> None:
        self.links, self.key = list(links), pinned_key
        self.ids: list[bytes] = []
        self.log = b""

    def run(self) -> dict[str, Any]:
        for position, raw in enumerate(self.links):
            kind = self.judge(position, raw)
            if kind is not None:
                return {"ok": False, "links": position, "seq": position, "kind": kind}
        return {"ok": True, "links": len(self.links), "seq": None, "kind": None}

    def judge(self, position: int, raw: bytes) -> str | None:
        if raw in self.links[:position]:
            return "duplicated"
        try:
            core, core_bytes, sig = open_link(raw)
        except NonCanonical:
            return "non-canonical"
        except (CborError, UnicodeDecodeError):
            return "malformed"
        found = self.first_rules(position, core, core_bytes, sig)
        if found is not None:
            return found
        self.ids.append(b3(core_bytes))
        return None

    def first_rules(
        self, position: int, core: dict[str, Any], core_bytes: bytes, sig: bytes
    ) -> str | None:
        for rule in self.rules(position, core, core_bytes, sig):
            if rule is not None:
                return rule
        return None

    def rules(
        self, position: int, core: dict[str, Any], core_bytes: bytes, sig: bytes
    ) -> Iterator[str | None]:
        if position == 0:
            yield self.genesis(core)
        elif core.get("log") != self.log:
            yield "forked"
        yield None if signed_by(self.key, core_bytes, sig) else "bad-signature"
        yield "malformed" if schema_problem(core) is not None else None
        yield self.seq_rule(position, core["seq"])
        yield "forked" if core["prev"] != (self.ids[-1] if self.ids else ZERO_ID) else None
        yield self.kind_rule(position, core)

    def genesis(self, core: dict[str, Any]) -> str | None:
        seq = core.get("seq")
        if core.get("kind") != "genesis" and _uint(seq) and seq > 0:
            return self.seq_rule(0, seq)  # the genesis link itself is missing or moved
        if core.get("kind") != "genesis" or schema_problem(core) is not None:
            return "malformed"
        if core["log"] != b3(core["key"] + core["nonce"]):
            return "malformed"
        self.log = core["log"]
        return None if core["key"] == self.key else "unknown-key"

    def seq_rule(self, position: int, seq: int) -> str | None:
        if seq == position:
            return None
        if seq < position:
            return "reordered"
        later = [_claimed_seq(raw) for raw in self.links[position + 1 :]]
        return "reordered" if position in later else "excised"

    def kind_rule(self, position: int, core: dict[str, Any]) -> str | None:
        if core["epoch"] != 0 or (core["kind"] == "genesis") != (position == 0):
            return "malformed"
        if core["kind"] != "checkpoint":
            return None
        agrees = (
            core["size"] == position + 1
            and core["head"] == self.ids[-1]
            and core["root"] == merkle_root(self.ids)
        )
        return None if agrees else "forked"


def verify(links: Sequence[bytes], pinned_key: bytes) -> dict[str, Any]:
    """``{"ok", "links", "seq", "kind"}`` for ``links`` under ``pinned_key``."""
    return _Walk(links, pinned_key).run()


def _genesis_problems(vec: dict[str, Any], links: list[bytes]) -> Problems:
    key, nonce, log_id = (bytes.fromhex(vec[k]) for k in ("pinned_key", "nonce", "log_id"))
    problems = []
    if bytes(SigningKey(bytes.fromhex(vec["seed"])).verify_key) != key:
        problems.append("pinned_key is not the Ed25519 public key of seed")
    if b3(key + nonce) != log_id:
        problems.append("log_id is not blake3(pinned_key + nonce)")
    core = open_link(links[0])[0]
    if (core.get("key"), core.get("nonce"), core.get("log")) != (key, nonce, log_id):
        problems.append("the genesis link's key, nonce or log differ from the published ones")
    return problems


def _link_problems(vec: dict[str, Any], links: list[bytes]) -> Problems:
    problems = []
    for index, raw in enumerate(links):
        core, core_bytes, _ = open_link(raw)
        if b3(core_bytes).hex() != vec["link_ids"][index]:
            problems.append(f"link {index}: id is not blake3 of its core")
        if core.get("kind") != vec["kinds"][index]:
            problems.append(f"link {index}: kind {core.get('kind')!r}, published another")
        if core.get("log") != bytes.fromhex(vec["log_id"]):
            problems.append(f"link {index}: names another log")
    return problems


def _excision_problems(vec: dict[str, Any], links: list[bytes]) -> Problems:
    key, middle = bytes.fromhex(vec["pinned_key"]), len(links) // 2
    whole, cut = verify(links, key), verify(links[:middle] + links[middle + 1 :], key)
    problems = []
    if vec["middle"] != middle:
        problems.append(f"middle {vec['middle']}, expected {middle}")
    if whole != vec["verify"] or not whole["ok"] or whole["links"] != len(links):
        problems.append(f"whole log verifies as {whole}, published {vec['verify']}")
    if cut != vec["excised"] or (cut["seq"], cut["kind"]) != (middle, "excised"):
        problems.append(f"without link {middle}: {cut}, published {vec['excised']}")
    return problems


def check_c5(vec: dict[str, Any]) -> Problems:
    links = [bytes.fromhex(h) for h in vec["links"]]
    if not len(links) == len(vec["link_ids"]) == len(vec["kinds"]):
        return ["links, link_ids and kinds differ in length"]
    try:
        return (
            _genesis_problems(vec, links)
            + _link_problems(vec, links)
            + _excision_problems(vec, links)
        )
    except (CborError, UnicodeDecodeError) as exc:
        return [f"a link does not decode: {exc}"]


def _decision_fields(c3: dict[str, Any], record: dict[str, Any]) -> dict[str, Any]:
    """The decision link core fields the README derives from one C3 idle-pass record."""
    event, hl, dec = c3["stream"][record["event"]], record["highlight"], record["decision"]
    energy = {"estimated_uj": dec["energy"]["estimated_uj"],
              "provenance": PROVENANCE[dec["energy"]["provenance"]]}  # fmt: skip
    if dec["energy"]["measured_uj"] is not None:
        energy["measured_uj"] = dec["energy"]["measured_uj"]
    return {
        "event": bytes.fromhex(event["event_id"]), "trust": event["trust"],
        "probe": hl["probe"], "value": dec["value_milli"], "cost": dec["cost_milli"],
        "decision": dec["outcome"], "charged_uj": dec["charged_uj"],
        "budget_uj": dec["budget_after_uj"], "t": event["hlc_physical_ns"], "energy": energy,
        "hl": {"probe": hl["probe"], "value": hl["value_milli"],
               "baseline": hl["baseline_milli"], "sigma": hl["sigma_milli"],
               "score": hl["score_milli"], "seq": hl["seq"]},
    }  # fmt: skip


def check_c5_against_c3(c5: dict[str, Any], c3: dict[str, Any]) -> Problems:
    """C5's decision links seal exactly C3's idle-pass decisions, in order."""
    cores = [open_link(bytes.fromhex(h))[0] for h in c5["links"]]
    decisions = [core for core in cores if core.get("kind") == "decision"]
    records = c3["idle"]["decisions"]
    if len(decisions) != len(records):
        return [f"{len(decisions)} decision links for {len(records)} idle-pass decisions"]
    problems = []
    for index, (core, record) in enumerate(zip(decisions, records, strict=True)):
        want = _decision_fields(c3, record)
        wrong = sorted(name for name, value in want.items() if core.get(name) != value)
        if wrong:
            problems.append(f"decision link {index}: {wrong} differ from C3's idle decision")
    return problems


# -- C3: observer, detector and gate (README: "C3 — attention") ------------------------------


def rdiv(a: int, b: int) -> int:
    """floor((2a + b) / (2b)): half rounds up, also for negative a."""
    return (2 * a + b) // (2 * b)


def isqrt(n: int) -> int:
    """The largest r with r·r ≤ n (Newton's method on integers)."""
    if n < 2:
        return n
    r = 1 << ((n.bit_length() + 1) // 2)
    while True:
        s = (r + n // r) // 2
        if s >= r:
            return r
        r = s


LOW_TRUST = (2, 3)  # Inferred, Untrusted


class RefObserver:
    def __init__(self, window: int) -> None:
        self.window, self.recent, self.counts, self.total = window, [], {}, 0

    def observe(self, source: int, trust: int) -> dict[str, int]:
        self.recent = [*self.recent, (source, trust)][-self.window :]
        self.counts[source] = self.counts.get(source, 0) + 1
        self.total += 1
        size = len(self.recent)
        in_window = sum(1 for s, _ in self.recent if s == source)
        low = sum(1 for _, t in self.recent if t in LOW_TRUST)
        return {
            "salience": rdiv(1000 * in_window, size),
            "novelty": rdiv(1000 * (self.total - self.counts[source]), self.total),
            "uncertainty": rdiv(1000 * low, size),
        }


class RefDetector:
    def __init__(self, params: dict[str, int]) -> None:
        self.p = params
        self.state = {probe: [0, 0, 0, 0] for probe in ("salience", "novelty", "uncertainty")}

    def step(self, probe: str, x: int, seq: int) -> dict[str, Any] | None:
        p, st = self.p, self.state[probe]
        n, mean, var, quiet = st
        blocked = quiet > 0 or n < p["warmup"]
        quiet = max(0, quiet - 1)
        fire = None
        if not blocked:
            sigma = max(isqrt(var), 1000 * p["min_sigma_milli"])
            threshold = mean + rdiv(p["k_milli"] * sigma, 1000)
            if x >= p["floor_milli"] and 1000 * x > threshold:
                score = min(1000, rdiv((1000 * x - threshold) * 1000, 1_000_000 - threshold))
                fire = {"probe": probe, "value_milli": x, "seq": seq,
                        "baseline_milli": rdiv(mean, 1000), "sigma_milli": rdiv(sigma, 1000),
                        "score_milli": score}  # fmt: skip
                quiet = p["debounce"]
        if n == 0:
            mean, var = 1000 * x, 0
        else:
            d = 1000 * x - mean
            mean += rdiv(d * p["alpha_num"], p["alpha_den"])
            var += rdiv((d * d - var) * p["alpha_num"], p["alpha_den"])
        self.state[probe] = [n + 1, mean, var, quiet]
        return fire


class RefGate:
    def __init__(self, config: dict[str, Any]) -> None:
        self.c, self.budget, self.last, self.carry = config, config["budget_capacity_uj"], None, 0

    def decide(self, hl: dict[str, Any], ctx: dict[str, Any], t: int) -> dict[str, Any]:
        c = self.c
        if self.last is None:
            self.last = t
        elif t > self.last:
            earned = (t - self.last) * c["refill_uj_per_s"] + self.carry
            self.last = t
            self.budget += earned // 1_000_000_000
            self.carry = earned % 1_000_000_000
            if self.budget >= c["budget_capacity_uj"]:
                self.budget, self.carry = c["budget_capacity_uj"], 0
        value = hl["score_milli"]
        if hl["probe"] == "uncertainty":
            value = rdiv(value * c["uncertainty_discount_milli"], 1000)
        cost = rdiv(ctx["engagement_milli"] * c["displacement_per_engagement_milli"], 1000)
        if ctx["active_modality"] == c["surface_modality"]:
            cost += c["interference_milli"]
        before, charged = self.budget, 0
        if value <= cost + c["margin_milli"]:
            outcome = "hold:value"
        elif before < c["surface_cost_uj"]:
            outcome = "hold:budget"
        else:
            outcome, charged = "surface", c["surface_cost_uj"]
            self.budget -= charged
        return {"outcome": outcome, "value_milli": value, "cost_milli": cost,
                "charged_uj": charged, "budget_before_uj": before,
                "budget_after_uj": self.budget,
                "energy": {"estimated_uj": charged, "measured_uj": None,
                           "provenance": "Estimator"}}  # fmt: skip


def _ref_idle(
    config: dict[str, Any], stream: Sequence[dict[str, Any]], ctx: dict[str, Any]
) -> list[dict[str, Any]]:
    observer, detector = RefObserver(config["window"]), RefDetector(config["detector"])
    gate = RefGate(config["gate"])
    values = RefValues(config["values"]) if "values" in config else None
    out = []
    for index, ev in enumerate(stream):
        readings = observer.observe(ev["source"], ev["trust"])
        seq = observer.total - 1
        fires = [detector.step(p, readings[p], seq) for p in ("salience", "novelty", "uncertainty")]
        if values is not None:
            fires += values.observe(ev.get("subject", ""), ev.get("readings") or {}, seq,
                                    ev["hlc_physical_ns"])  # fmt: skip
        for hl in fires:
            if hl is not None:
                dec = gate.decide(hl, ctx, ev["hlc_physical_ns"])
                out.append({"event": index, "highlight": hl, "decision": dec})
    return out


def _first_mismatch(name: str, got: list[dict[str, Any]], want: list[dict[str, Any]]) -> Problems:
    if len(got) != len(want):
        return [f"{name}: {len(got)} decisions, published {len(want)}"]
    for index, (g, w) in enumerate(zip(got, want, strict=True)):
        if g != w:
            return [f"{name} decision {index}: computed {g}, published {w}"]
    return []


def check_c3(vec: dict[str, Any]) -> Problems:
    """C3's idle pass and busy re-gating, recomputed from the README's rules."""
    idle = _ref_idle(vec["config"], vec["stream"], vec["idle"]["context"])
    problems = _first_mismatch("idle", idle, vec["idle"]["decisions"])
    gate, busy = RefGate(vec["busy"]["gate"]), []
    for index, record in enumerate(idle):
        t = vec["stream"][record["event"]]["hlc_physical_ns"]
        dec = gate.decide(record["highlight"], vec["busy"]["context"], t)
        busy.append({"highlight": index, "hlc_physical_ns": t, "decision": dec})
    return problems + _first_mismatch("busy", busy, vec["busy"]["decisions"])


# -- C3V: value probes (README: "C3V — value probes") ---------------------------------------


def _over(z: int, bar: int) -> int:
    return min(1000, rdiv((z - bar) * 1000, z)) if z > bar else 0


def _ema(a: int, b: int, num: int, den: int) -> int:
    return a + rdiv((b - a) * num, den)


class RefValues:
    FIELDS = ("n", "level", "quiet", "peak", "run", "run_min", "held", "last", "slope",
              "step_err", "fired", "climb")  # fmt: skip

    def __init__(self, params: dict[str, int]) -> None:
        self.p, self.probes, self.times, self.clock = params, {}, {}, 0

    def observe(self, subject: str, readings: dict[str, int], seq: int, t: int) -> list[Any]:
        named = [(k, readings[k]) for k in sorted(readings) if k != "per_min"]
        if subject:
            times = [*self.times.get(subject, []), t][-1000:]
            self.times[subject] = [u for u in times if t - u < 60_000_000_000]
            named.append(("per_min", len(self.times[subject])))
        fires = [self.step(f"value:{subject}.{k}", v, seq, t, subject) for k, v in named]
        if not self.p.get("range_bins"):
            return fires
        kept = [f for f in fires if f is not None]
        best = None
        for f in kept:  # the largest score, the first of a tie
            if best is None or f["score_milli"] > best["score_milli"]:
                best = f
        return [best] if best is not None else []

    def step(self, probe: str, v: int, seq: int, t: int, subject: str = "") -> Any:
        p = self.p
        if probe not in self.probes:
            if len(self.probes) >= p["max_probes"]:
                self._evict(subject)
            self.probes[probe] = {**dict.fromkeys(self.FIELDS, 0), "fits": [[0, 0], [0, 0], [0, 0]],
                                  "tables": [{}, {}], "subject": subject}  # fmt: skip
        s = self.probes[probe]
        self.clock += 1
        s["read"] = self.clock
        x, h = 1000 * v, t // 3_600_000_000_000
        u = self._unseen(s, x, t) if p.get("range_bins") else 0
        n0, level0 = s["n"], s["level"]
        slots = (h % 24, (h + 72) % 168)
        preds = [s["level"] if s["n"] > 0 else None]
        for table, slot in zip(s["tables"], slots, strict=True):
            cell = table.get(slot)
            preds.append(cell[0] if cell and cell[1] >= p["season_min"] else None)
        bias = (1000, p["season_bias_milli"], p["season_bias_milli"])
        ready = [(rdiv(s["fits"][i][0] * bias[i], 1000), i) for i in range(3)
                 if preds[i] is not None and s["fits"][i][1] >= p["season_min"]]  # fmt: skip
        blocked = s["n"] < p["warmup"] or not ready
        q, s["quiet"] = s["quiet"], max(0, s["quiet"] - 1)
        fire = None
        if ready:
            i = min(ready)[1]
            e, pred = s["fits"][i][0], preds[i]
            assert pred is not None
            floor = max(p["min_dev_milli"], rdiv(abs(pred) * p["rel_floor_milli"], 1_000_000))
            sigma = max(e, floor)
            score = max(self._spike(s, rdiv(abs(x - pred) * 1000, sigma)), self._trend(s, x, floor))
            if not (blocked or score == 0 or (q > 0 and score <= 2 * s["fired"])):
                s["quiet"], s["fired"] = p["debounce"], score
                fire = {"probe": probe, "value_milli": rdiv(x, 1000),
                        "baseline_milli": rdiv(pred, 1000), "sigma_milli": rdiv(sigma, 1000),
                        "score_milli": score, "seq": seq}  # fmt: skip
        self._fold(s, x, preds, slots)
        if p.get("range_bins"):
            return self._ranged(s, probe, x, t, seq, u, n0, level0, fire)
        return fire

    def _evict(self, subject: str) -> None:
        held: dict[str, int] = {}
        for s in self.probes.values():
            held[s["subject"]] = held.get(s["subject"], 0) + 1
        most = max(held.values())
        largest = [k for k in held if held[k] == most]
        victim = subject if subject in largest else min(largest)
        oldest = min((s["read"], k) for k, s in self.probes.items() if s["subject"] == victim)
        del self.probes[oldest[1]]

    def _unseen(self, s: dict[str, Any], x: int, t: int) -> int:
        p, nb = self.p, self.p["range_bins"]
        if "bins" not in s:
            s.update(lo=x, hi=x, bins={0}, since=t, novel_q=0, hold=0, novel_at=0)
            return 0
        lo, hi = s["lo"], s["hi"]

        def bin_of(y: int, a: int, b: int) -> int:
            return min(nb - 1, (y - a) * nb // max(b - a, 1))

        span = hi - lo
        o = x - hi if x > hi else lo - x if x < lo else 0
        extreme = o > 0 and (span == 0 or o * p["extreme_bins"] > span)
        if o > 0:
            lo2, hi2, width, carried = min(lo, x), max(hi, x), max(span, 1), set()
            for b in s["bins"]:
                first = lo + -(-(b * width) // nb)
                last = hi if b == nb - 1 else lo + ((b + 1) * width - 1) // nb
                if first <= last:
                    carried |= set(range(bin_of(first, lo2, hi2), bin_of(last, lo2, hi2) + 1))
            s["bins"], s["lo"], s["hi"] = carried, lo2, hi2
        b = bin_of(x, s["lo"], s["hi"])
        unseen = b not in s["bins"]
        s["bins"].add(b)
        return p["extreme_milli"] if extreme else p["unseen_milli"] if unseen else 0

    def _ranged(self, s: dict[str, Any], probe: str, x: int, t: int, seq: int, u: int,
                n0: int, level0: int, fire: Any) -> Any:  # fmt: skip
        p, sec = self.p, 1_000_000_000
        q, s["novel_q"] = s["novel_q"], max(0, s["novel_q"] - 1)
        h, s["hold"] = s["hold"], max(0, s["hold"] - 1)
        recent = s["novel_at"] > 0 and t - s["novel_at"] < p["novel_quiet_s"] * sec
        warm = n0 >= p["warmup"] and t - s["since"] >= p["novel_warmup_s"] * sec
        if u > 0 and q == 0 and warm and not recent:
            s["novel_q"], s["hold"], s["novel_at"] = p["novel_quiet"], p["novel_hold"], t
            sigma = max(1, rdiv(s["hi"] - s["lo"], p["range_bins"]))
            return {"probe": probe, "value_milli": rdiv(x, 1000),
                    "baseline_milli": rdiv(level0, 1000), "sigma_milli": rdiv(sigma, 1000),
                    "score_milli": u, "seq": seq}  # fmt: skip
        if fire is None or h > 0:
            return None
        return {**fire, "score_milli": rdiv(fire["score_milli"] * p["blend_milli"], 1000)}

    def _w(self, count: int) -> tuple[int, int]:
        p = self.p
        return (1, count) if count * p["err_num"] < p["err_den"] else (p["err_num"], p["err_den"])

    def _spike(self, s: dict[str, Any], z: int) -> int:
        p = self.p
        bar = max(p["k_milli"], rdiv(s["peak"] * p["peak_ratio_milli"], 1000))
        spike = rdiv(_over(z, bar) * p["spike_weight_milli"], 1000)
        s["peak"] = max(z, s["peak"] - (s["peak"] >> p["peak_shift"]))
        if z > p["k_milli"]:
            s["run_min"] = min(s["run_min"], z) if s["run"] > 0 else z
            s["run"] += 1
        else:
            s["run"] = s["run_min"] = 0
        s["held"] -= s["held"] >> p["peak_shift"]
        shift = 0
        if s["run"] >= p["sustain"]:
            bar = max(p["k_milli"], rdiv(s["held"] * p["peak_ratio_milli"], 1000))
            shift = _over(s["run_min"], bar)
            s["held"] = max(s["held"], s["run_min"])
        return max(spike, shift)

    def _trend(self, s: dict[str, Any], x: int, floor: int) -> int:
        p = self.p
        step = x - s["last"]
        scale = max(s["step_err"], floor, 1000)
        cap = rdiv(scale * p["clamp_milli"], 1000)
        if s["n"] > 1:
            s["slope"] = _ema(s["slope"], max(-cap, min(cap, step)), p["trend_num"], p["trend_den"])
            s["step_err"] = _ema(s["step_err"], min(abs(step), cap), *self._w(s["n"]))
        elif s["n"] == 1:
            s["step_err"] = abs(step)
        zt = rdiv(abs(s["slope"]) * 1000, scale)
        bar = max(p["trend_k_milli"], s["climb"])
        s["climb"] -= s["climb"] >> p["peak_shift"]
        if zt > bar:
            s["climb"] = zt
        return _over(zt, bar)

    def _fold(
        self, s: dict[str, Any], x: int, preds: list[int | None], slots: tuple[int, int]
    ) -> None:
        p = self.p
        learn = not 0 < s["run"] < p["sustain"]
        for fit, pred in zip(s["fits"], preds, strict=True):
            if pred is None:
                continue
            m = abs(x - pred)
            if fit[1] > 0:
                c = max(fit[0], 1000)
                m = min(m, rdiv(c * p["clamp_milli"], 1000) if learn else c)
                fit[0] = _ema(fit[0], m, *self._w(fit[1] + 1))
            else:
                fit[0] = m
            fit[1] += 1
        s["last"], s["n"] = x, s["n"] + 1
        if not learn:
            return
        s["level"] = x if s["n"] == 1 else _ema(s["level"], x, p["alpha_num"], p["alpha_den"])
        for table, slot in zip(s["tables"], slots, strict=True):
            cell = table.get(slot)
            if cell is None:
                table[slot] = [x, 1]
            else:
                table[slot] = [_ema(cell[0], x, p["season_num"], p["season_den"]), cell[1] + 1]


def check_c3v(vec: dict[str, Any]) -> Problems:
    """C3V's value-probe decisions, recomputed from the README's rules."""
    idle = _ref_idle(vec["config"], vec["stream"], vec["idle"]["context"])
    problems = _first_mismatch("idle", idle, vec["idle"]["decisions"])
    if "ranged" in vec:
        config = {**vec["config"], "values": vec["ranged"]["values"]}
        ranged = _ref_idle(config, vec["stream"], vec["idle"]["context"])
        problems += _first_mismatch("ranged", ranged, vec["ranged"]["decisions"])
    return problems


# -- C4: the synthesis cascade's envelope (README: "C4 — synthesis cascade") ----------------


def _words(text: str) -> frozenset[str]:
    return frozenset(text.split())


STOP = _words(
    "about after all am an and any are as at be been before but by can could did do does done "
    "for from give had has have how if in into is it its just last lately latest list me most "
    "my newest of on or our please recent recently show so some tell than that the their them "
    "then there these this those to us was we were what when where which who why will with "
    "would you your"
)
NAMES = {
    "file_change": "file files edit edited edits editing modified saved wrote written touched "
    "created deleted renamed",
    "shell": "command commands ran run typed executed shell terminal",
    "process_tree": "process processes program programs app apps",
    "thermal_power": "cpu load memory ram disk battery power thermal temperature busy",
    "network": "network net download upload bandwidth traffic wifi internet",
    "app_focus": "focus focused window windows switched",
    "system_log": "syslog journal kernel",
    "attention.decision": "surfaced surface surfacing held hold withheld budget joules decision "
    "decisions interrupted interruption shown showed alerted notified",
    "attention.highlight": "highlight highlights anomaly anomalies spike spikes",
    "sense.error": "error errors failed failure failures failing crashed crash",
}
INTENTS = {  # name: (stratum, triggers, vocabulary)
    "recent_files": ("file_change", "file files edit edited edits modified saved wrote touched",
                     "change changed changes recently save touch work worked working write "
                     "written"),
    "last_command": ("shell", "command commands ran run typed executed shell",
                     "enter entered execute executed previous terminal type"),
    "surfaced": ("attention.decision", "surfaced surface showed shown show+you alerted notified "
                 "interrupted", "alert alerts attention interrupt notification notifications "
                 "notify"),
    "held": ("attention.decision", "held hold withheld holds",
             "attention back decision decisions keep kept not"),
    "budget": ("attention.decision", "budget",
               "attention energy joules left much remain remaining remains spent"),
    "last_error": ("sense.error", "error errors failed failure failures crashed crash",
                   "happened occurred sense senses went wrong"),
}  # fmt: skip


def tokens(text: str) -> list[str]:
    out, run = [], []
    for ch in text + " ":
        if ch.isascii() and ch.isalnum():
            run.append(ch.lower())
        else:
            if len(run) >= 2:
                out.append("".join(run))
            run = []
    return out


def log2_fixed(num: int, den: int) -> int:
    whole = 0
    while den << (whole + 1) <= num:
        whole += 1
    y, fraction = (num << 64) // (den << whole), 0
    for _ in range(16):
        y = (y * y) >> 64
        fraction <<= 1
        if y >= 1 << 65:
            fraction |= 1
            y >>= 1
    return (whole << 16) + fraction


def intent_of(query: str) -> str | None:
    words = tokens(query)
    matched = []
    for name, (_, triggers, vocabulary) in INTENTS.items():
        for trigger in triggers.split():
            need = set(trigger.split("+"))
            if not need <= set(words):
                continue
            known = set(vocabulary.split()) | {w for t in triggers.split() for w in t.split("+")}
            others = [w for w in words if w not in STOP and w not in known]
            if name == "held" or not others:
                matched.append(name)
                break
    return matched[0] if len(matched) == 1 else None


def _stratum(ev: dict[str, Any]) -> str:
    return ev["source"] if ev["kind"] == "observation" else ev["kind"]


def _newest_key(ev: dict[str, Any]) -> tuple[int, int, bytes, bytes]:
    return (ev["hlc"][0], ev["hlc"][1], ev["node"].encode(), bytes.fromhex(ev["id"]))


def _salience(events: list[dict[str, Any]], window: int) -> dict[str, Any] | None:
    obs = [e for e in events if e["kind"] == "observation"]
    if not obs:
        return None
    observer = RefObserver(window)
    for e in obs:
        got = observer.observe(source_code(e["source"]), TRUSTS[e["trust"]])
    return {"source": obs[-1]["source"], **got, "window": window,
            "observations": len(obs), "hlc": obs[-1]["hlc"]}  # fmt: skip


def envelope(events: list[dict[str, Any]], query: str, params: dict[str, Any]) -> dict[str, Any]:
    ordered = sorted(events, key=_newest_key)
    candidates = [e for e in ordered if e["kind"] in params["kinds"]]
    window = candidates[-params["window"] :]
    words = tokens(query)
    terms = sorted(list(dict.fromkeys(w for w in words if w not in STOP))[:32])
    span_tokens = {e["id"]: tokens(e["line"]) for e in window}
    scores = dict.fromkeys(span_tokens, 0)
    for term in terms:
        n = sum(1 for t in span_tokens.values() if term in t)
        idf = log2_fixed(2 * len(window) + 2, 2 * n + 1)
        for eid, toks in span_tokens.items():
            tf = toks.count(term)
            scores[eid] += idf * 11 * tf // (5 * tf + 6)
    newest_first = sorted(window, key=_newest_key, reverse=True)
    rank, strata = {}, {}
    for e in newest_first:
        st = _stratum(e)
        rank[e["id"]] = sum(1 for x in newest_first[: newest_first.index(e)] if _stratum(x) == st)
        strata.setdefault(st, []).append(e)
    present = set(strata)
    intent = intent_of(query)
    named: list[str] = []
    if intent is not None and INTENTS[intent][0] in present:
        named.append(INTENTS[intent][0])
    for w in words:
        for st, vocab in NAMES.items():
            if w in vocab.split() and st in present and st not in named:
                named.append(st)
    # a span whose tokens are the query's, whole and in order, ranks before every other hit
    by_score = sorted((e for e in window if scores[e["id"]] > 0),
                      key=lambda e: (span_tokens[e["id"]] == words, scores[e["id"]],
                                     _newest_key(e)), reverse=True)  # fmt: skip
    hits = by_score[: params["k"]]
    others = sorted((st for st in present if st not in named),
                    key=lambda st: (tuple(-v for v in strata[st][0]["hlc"]), st))  # fmt: skip
    place = {st: i for i, st in enumerate(named + others)}
    hit_ids = {e["id"] for e in hits}

    def fill_key(e: dict[str, Any]) -> tuple[bool, int, int]:
        return (_stratum(e) not in named, rank[e["id"]], place[_stratum(e)])

    rest = sorted((e for e in window if e["id"] not in hit_ids), key=fill_key)
    chosen = [(e, "bm25") for e in hits] + [(e, "fill") for e in rest[: params["k"] - len(hits)]]
    spans = [{"id": e["id"], "hlc": e["hlc"], "source": e["source"], "kind": e["kind"],
              "subject": e["subject"], "line": e["line"], "rank": rank[e["id"]],
              "score": scores[e["id"]], "via": via} for e, via in chosen]  # fmt: skip
    return {
        "version": 1, "query": query, "terms": terms, "named": named, "k": params["k"],
        "spans": spans,
        "window": {"limit": params["window"], "kinds": params["kinds"], "spans": len(window),
                   "complete": len(window) == len(candidates)},
        "strata": [{"stratum": st, "spans": len(strata[st]), "newest": strata[st][0]["hlc"]}
                   for st in sorted(strata)],
        "salience": _salience(ordered, params["salience_window"]),
    }  # fmt: skip


def check_c4(vec: dict[str, Any]) -> Problems:
    """Every case's envelope and digest, and the Tier-0 intent its query matches."""
    problems = []
    for case in vec["cases"]:
        got = envelope(vec["events"], case["query"], vec["params"])
        if got != case["envelope"]:
            keys = sorted(k for k in got if got[k] != case["envelope"].get(k))
            problems.append(f"{case['query']!r}: envelope {keys} differ")
        elif b3(canonical_json(got)).hex() != case["envelope_digest"]:
            problems.append(f"{case['query']!r}: envelope digest differs")
        intent = intent_of(case["query"])
        if case["expect"] == "deterministic" and intent != case.get("intent"):
            problems.append(f"{case['query']!r}: intent {intent}, published {case.get('intent')}")
        if case["expect"] == "escalate" and case.get("model_call") is True and intent:
            problems.append(f"{case['query']!r}: escalates though it matches {intent}")
    return problems
