"""A verifier of epoch seals written from docs/sealing.md and conformance/README.md ("S1")
alone — it imports nothing of nerve — checks the published S1 vector: every case comes out
as the vector says, and the test state regenerates the published public keys."""

from __future__ import annotations

import base64
import hashlib
import json
from pathlib import Path
from typing import Any

import blake3
from nacl.exceptions import BadSignatureError
from nacl.signing import SigningKey, VerifyKey

VECTOR = Path(__file__).resolve().parents[2] / "conformance" / "v1" / "s1_seals.json"
NS = 10**9


def b64(text: str) -> bytes:
    return base64.b64decode(text, validate=True)


def parse_seed(text: str) -> dict[str, Any]:
    tag, version, root, start, epoch, bits = text.split("-")
    assert (tag, version) == ("nerve", "seal1")
    return {
        "root": bytes.fromhex(root),
        "start": int(start),
        "epoch": int(epoch),
        "bits": int(bits),
    }


def leaf_of(path: list[bytes], index: int, pk: bytes) -> bytes:
    node = blake3.blake3(b"\x00" + pk).digest()
    for level, sibling in enumerate(path):
        pair = sibling + node if index >> level & 1 else node + sibling
        node = blake3.blake3(b"\x01" + pair).digest()
    return node


def read_note(text: str) -> dict[str, Any] | None:
    """The note's fields, or None when it is not the documented shape or its signature
    fails (the caller tells them apart by trying the signature separately)."""
    body, _, sigs = text.partition("\n\n")
    lines = body.split("\n")
    if len(lines) != 8:
        return None
    origin = lines[0]
    epoch, time_, chain, key, proof = (line.split(" ") for line in lines[3:])
    pk = b64(key[1])
    raw = b"".join(
        b64(line.split(" ")[2])
        for line in sigs.strip("\n").split("\n")
        if line.startswith("\u2014 " + origin + " ")
    )
    keyhash = hashlib.sha256(origin.encode() + b"\n\x01" + pk).digest()[:4]
    signed = False
    if len(raw) == 68 and raw[:4] == keyhash:
        try:
            VerifyKey(pk).verify((body + "\n").encode(), raw[4:])
            signed = True
        except BadSignatureError:
            pass
    path = b64(proof[1])
    hashes = [path[i : i + 32] for i in range(0, len(path), 32)]
    return {
        "origin": origin, "records": int(lines[1]), "mhead": b64(lines[2]),
        "epoch": int(epoch[1]), "time": int(time_[1]), "links": int(chain[1]),
        "chead": b64(chain[2]), "pk": pk, "path": hashes,
        "signed": signed, "text": text,
    }  # fmt: skip


def check(seed: dict[str, Any], case: dict[str, Any]) -> dict[str, Any]:
    notes: dict[int, Any] = {}
    for text in case["notes"]:
        note = read_note(text)
        assert note is not None
        if note["epoch"] in notes and notes[note["epoch"]]["text"] != text:
            return {"ok": False, "epoch": note["epoch"], "kind": "forked"}
        notes[note["epoch"]] = note
    mlines = [bytes.fromhex(h) for h in case["manifest_line_hashes"]]
    links = [bytes.fromhex(h) for h in case["link_ids"]]
    now, length = case["now_ns"], seed["epoch"]
    origin = "nerve.seal/" + seed["root"].hex()[:16]
    prev = None
    for n in range(max(notes, default=-1) + 1):
        note = notes.get(n)
        starts = (seed["start"] + n * length) * NS
        if note is None:
            return {"ok": False, "epoch": n, "kind": "missing"}
        if not note["signed"]:
            return {"ok": False, "epoch": n, "kind": "bad-signature"}
        if note["origin"] != origin or leaf_of(note["path"], n, note["pk"]) != seed["root"]:
            return {"ok": False, "epoch": n, "kind": "wrong-key"}
        if (
            note["time"] < starts
            or (prev and note["time"] < prev["time"])
            or note["time"] > now + length * NS
        ):
            return {"ok": False, "epoch": n, "kind": "clock"}
        r, k = note["records"], note["links"]
        if (
            (prev and r < prev["records"])
            or r > len(mlines)
            or (mlines[r - 1] if r else bytes(32)) != note["mhead"]
        ):
            return {"ok": False, "epoch": n, "kind": "manifest"}
        if (
            (prev and k < prev["links"])
            or k > len(links)
            or (links[k - 1] if k else bytes(32)) != note["chead"]
        ):
            return {"ok": False, "epoch": n, "kind": "chain"}
        prev = note
    if not notes:
        return {"ok": False, "epoch": 0, "kind": "missing"}
    current = (now // NS - seed["start"]) // length
    last = max(notes)
    if current - last > 1:
        return {"ok": False, "epoch": last + 1, "kind": "stale"}
    return {"ok": True, "epochs": len(notes)}  # fmt: skip


def test_every_published_case_comes_out_as_the_vector_says() -> None:
    vec = json.loads(VECTOR.read_text(encoding="utf-8"))
    seed = parse_seed(vec["seed"])
    results = {case["name"]: check(seed, case) for case in vec["cases"]}
    assert results == {case["name"]: case["expect"] for case in vec["cases"]}
    assert sum(not r["ok"] for r in results.values()) >= 8


def test_the_test_state_gives_the_published_keys_and_root() -> None:
    vec = json.loads(VECTOR.read_text(encoding="utf-8"))
    state = bytes.fromhex(vec["state0"])
    keys = []
    for _ in vec["public_keys"]:
        seed = blake3.blake3(state, derive_key_context="nerve.seal/v1 key").digest()
        keys.append(bytes(SigningKey(seed).verify_key).hex())
        state = blake3.blake3(state, derive_key_context="nerve.seal/v1 state").digest()
    assert keys == vec["public_keys"]
    level = [blake3.blake3(b"\x00" + bytes.fromhex(k)).digest() for k in keys]
    while len(level) > 1:
        level = [
            blake3.blake3(b"\x01" + level[i] + level[i + 1]).digest()
            for i in range(0, len(level), 2)
        ]
    assert level[0] == parse_seed(vec["seed"])["root"]
