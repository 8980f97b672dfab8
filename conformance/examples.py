"""The worked examples in ``conformance/README.md``, computed from the vectors and nerve.

python conformance/examples.py            # print every example
python conformance/examples.py --write    # rewrite the README's example blocks

Each README block follows a line ``<!-- example: NAME -->``; ``test_readme_examples.py``
regenerates every block and fails if a byte differs.
"""

from __future__ import annotations

import json
import re
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

import blake3
from nacl.signing import VerifyKey

from nerve.canonical import canonical_json, det_cbor, det_cbor_decode
from nerve.chain.links import DOMAIN
from nerve.chain.merkle import leaf_hash, merkle_root, node_hash
from nerve.events import cid
from nerve.log.attest import claim, sign
from nerve.log.drafts import Draft
from nerve.log.manifest import ManifestState, append_record

HERE = Path(__file__).resolve().parent
README = HERE / "README.md"
WIDTH = 32  # bytes of hex per line
T0 = 1_700_000_000_000_000_000


def _vector(name: str) -> dict[str, Any]:
    data: dict[str, Any] = json.loads((HERE / "v1" / name).read_text(encoding="utf-8"))
    return data


def _wrap(data: bytes, indent: str = "    ") -> list[str]:
    return [indent + data[i : i + WIDTH].hex() for i in range(0, len(data), WIDTH)] or [indent]


def _head_len(encoded: bytes) -> int:
    info = encoded[0] & 0x1F
    return 1 if info < 24 else 1 + (1 << (info - 24))


def _annotate(value: Any, depth: int = 0) -> list[str]:
    """det-CBOR bytes of ``value``, one item a line, with what each is."""
    pad = "  " * depth
    raw = det_cbor(value)
    if isinstance(value, dict):
        keys = sorted(value, key=lambda k: (len(det_cbor(k)), det_cbor(k)))
        out = [f"{pad}{raw[: _head_len(raw)].hex():<24} map, {len(value)} pairs"]
        for key in keys:
            out.append(f"{pad}  {det_cbor(key).hex():<22} {json.dumps(key)}")
            out += _annotate(value[key], depth + 2)
        return out
    if isinstance(value, bytes) and len(value) > 16:
        head = raw[: _head_len(raw)]
        return [f"{pad}{head.hex():<24} bytes({len(value)})", *_wrap(value, pad + "  ")]
    shown = value.hex() if isinstance(value, bytes) else json.dumps(value)
    return [f"{pad}{raw.hex():<24} {shown}"]


def payload_floats() -> str:
    text = "[1e-7, 1E21, 1e20, -0.0, 0.30000000000000004, 4.50, 2e-3, 1e-27, 5e-324]"
    data = canonical_json(json.loads(text))
    return "\n".join(
        [f"input        {text}", f"canonical    {data.decode()}", f"payload_cid  {cid(data).hex()}"]
    )


def attestation() -> str:
    seed = bytes(range(32))
    draft = Draft.of(source=2, trust=0, subject="sandbox", line="run 7 exited 0",
                     payload={"exit": 0, "run": 7})  # fmt: skip
    body = claim(draft)
    signed = sign(seed, draft)
    lines = ["claim:", *_wrap(body), f"key   {signed['key']}", "sig"]
    lines += _wrap(bytes.fromhex(signed["sig"]))
    lines.append(
        f"trust.attestation payload  {canonical_json(_attest_body(body, signed)).decode()}"
    )
    return "\n".join(lines)


def _attest_body(body: bytes, signed: dict[str, str]) -> dict[str, str]:
    return {"claim": blake3.blake3(body).hexdigest(), **signed}


def link_genesis() -> str:
    raw = bytes.fromhex(_vector("c5_chain.json")["links"][0])
    envelope = det_cbor_decode(raw)
    core = det_cbor_decode(envelope["core"])
    lines = ["envelope:", *_annotate(envelope), "core:", *_annotate(core)]
    return "\n".join(lines)


def signature_input() -> str:
    vec = _vector("c5_chain.json")
    envelope = det_cbor_decode(bytes.fromhex(vec["links"][0]))
    message = DOMAIN + envelope["core"]
    VerifyKey(bytes.fromhex(vec["pinned_key"])).verify(message, envelope["sig"])  # must hold
    return "\n".join(
        [
            f"DOMAIN    {DOMAIN.hex()}  (nerve.chain.v1 and a zero byte)",
            f"message   DOMAIN + core: {len(message)} bytes",
            f"sig       {envelope['sig'][:32].hex()}",
            f"          {envelope['sig'][32:].hex()}",
            f"verifies  under pinned_key {vec['pinned_key']}",
            f"link id   blake3(core) = {blake3.blake3(envelope['core']).hexdigest()}",
        ]
    )


def log_id() -> str:
    vec = _vector("c5_chain.json")
    key, nonce = bytes.fromhex(vec["pinned_key"]), bytes.fromhex(vec["nonce"])
    assert blake3.blake3(key + nonce).hexdigest() == vec["log_id"]
    return "\n".join(
        [
            f"key     {key.hex()}",
            f"nonce   {nonce.hex()}",
            f"log id  blake3(key + nonce) = {vec['log_id']}",
        ]
    )


def checkpoint() -> str:
    vec = _vector("c5_chain.json")
    ids = [bytes.fromhex(h) for h in vec["link_ids"]]
    core = det_cbor_decode(det_cbor_decode(bytes.fromhex(vec["links"][-1]))["core"])
    leaves = ids[: core["seq"]]
    left, right = merkle_root(leaves[:8]), merkle_root(leaves[8:])
    assert node_hash(left, right) == core["root"] == merkle_root(leaves)
    return "\n".join(
        [
            f"checkpoint seq {core['seq']}: size {core['size']} "
            f"(links 0..{core['seq']}, itself included)",
            f"head  {core['head'].hex()}  (id of link {core['seq'] - 1})",
            f"leaf 0  blake3(00 + id 0) = {leaf_hash(ids[0]).hex()}",
            f"{len(leaves)} leaves split after 8: root = blake3(01 + MTH(ids 0..7) + MTH(id 8))",
            f"MTH(ids 0..7)  {left.hex()}",
            f"MTH(id 8)      {right.hex()}  (= leaf 8)",
            f"root           {core['root'].hex()}",
        ]
    )


def provenance() -> str:
    vec = _vector("c5_chain.json")
    cores = [det_cbor_decode(det_cbor_decode(bytes.fromhex(h))["core"]) for h in vec["links"]]
    surfaced = next(c for c in cores if c.get("decision") == "surface")
    measured = {"estimated_uj": 250000, "measured_uj": 241337, "provenance": 0}
    return "\n".join(
        [
            f"decision link {surfaced['seq']} (surface), field energy: Estimator (2)",
            *_annotate(surfaced["energy"]),
            "a hardware reading would be: HwShunt (0), with measured_uj",
            *_annotate(measured),
        ]
    )


def bundle() -> str:
    from nerve.attention.bundle import BUNDLE_FORMAT, _entry

    vec = _vector("c5_chain.json")
    cores = [det_cbor_decode(det_cbor_decode(bytes.fromhex(h))["core"]) for h in vec["links"]]
    first = next(c for c in cores if c["kind"] == "decision")
    return "\n".join(
        [
            f'{{"decisions":[ENTRY, …],"format":"{BUNDLE_FORMAT}","links":["<link 0 hex>", …],'
            f'"log_id":"{vec["log_id"]}","public_key":"{vec["pinned_key"]}"}}',
            "ENTRY for decision link 1 (its source event not in the log: source fields null):",
            canonical_json(_entry(first, None)).decode(),
        ]
    )


def manifest() -> str:
    entry = {"segment": "5e" * 32, "rows": 8, "min": [T0, 0], "max": [T0 + 2000, 1],
             "root": "ab" * 32}  # fmt: skip
    first = {"op": "seal", "add": [entry], "remove": [], "time_ns": T0 + 500, "wal_gen": 1}
    second = {"op": "seal", "add": [], "remove": [], "time_ns": T0 + 1500, "wal_gen": 2}
    with tempfile.TemporaryDirectory() as tmp:
        path, state = Path(tmp, "manifest.jsonl"), ManifestState()
        append_record(path, state, first)
        rec1 = append_record(path, state, second)
        lines = path.read_bytes().splitlines()
    assert rec1["prev"] == blake3.blake3(lines[0]).hexdigest()
    return "\n".join(
        [
            "line 0 (a segment entry; its name and root are stand-ins here):",
            lines[0].decode(),
            "line 1:",
            lines[1].decode(),
            f"line 1's prev = blake3(line 0 without its \\n) = {rec1['prev']}",
        ]
    )


def projection_row() -> str:
    view = next(
        v for v in _vector("n2_projections.json")["projections"] if v["name"] == "sense_state"
    )
    return "\n".join([*view["lines"], f"rows {view['rows']}, digest {view['digest']}"])


def replay_digest() -> str:
    vec = _vector("c1_replay_digest.json")
    events = sorted(
        zip(vec["events"], vec["ids"], strict=True),
        key=lambda p: (p[0]["hlc"], p[0]["node"].encode(), bytes.fromhex(p[1])),
    )
    lines = [f"{e['hlc'][0]}.{e['hlc'][1]}  {e['node']}  {i}" for e, i in events]
    digest = blake3.blake3(b"".join(bytes.fromhex(i) for _, i in events)).hexdigest()
    assert digest == vec["replay_digest"]
    return "\n".join([*lines, f"replay digest = blake3(the 8 ids, 32 bytes each) = {digest}"])


def wire_form() -> str:
    vec = _vector("c1_replay_digest.json")
    shown = [vec["events"][0], vec["events"][2], vec["events"][3]]
    return "\n".join(canonical_json(e).decode() for e in shown)


EXAMPLES: dict[str, Callable[[], str]] = {
    "replay-digest": replay_digest,
    "wire-form": wire_form,
    "payload-floats": payload_floats,
    "attestation": attestation,
    "link-genesis": link_genesis,
    "signature-input": signature_input,
    "log-id": log_id,
    "checkpoint": checkpoint,
    "provenance": provenance,
    "bundle": bundle,
    "manifest": manifest,
    "projection-row": projection_row,
}
_BLOCK = re.compile(r"(<!-- example: ([a-z-]+) -->\n```text\n)(.*?)(```)", re.DOTALL)


def render_readme(text: str) -> str:
    """``text`` with every example block regenerated."""
    return _BLOCK.sub(lambda m: m.group(1) + EXAMPLES[m.group(2)]() + "\n" + m.group(4), text)


def blocks(text: str) -> dict[str, str]:
    return {m.group(2): m.group(3) for m in _BLOCK.finditer(text)}


if __name__ == "__main__":
    if "--write" in sys.argv[1:]:
        README.write_text(render_readme(README.read_text(encoding="utf-8")), encoding="utf-8")
    else:
        for name, make in EXAMPLES.items():
            print(f"## {name}\n{make()}\n")
