"""Regenerate the S1 (epoch seals) vector; the output is deterministic.

python conformance/generate_seal.py [OUT_DIR]     # default: conformance/v1

The secret state s_0 below is a published test value, never a real one: with it anyone can
make these seals. Ed25519 signatures are deterministic, so every byte is reproducible.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import blake3

from nerve.seal import Seal, Seed, scheme
from nerve.seal.note import ZERO, sign

HERE = Path(__file__).resolve().parent / "v1"
STATE0 = blake3.blake3(b"nerve conformance S1: a published test state, never a real one").digest()
START_S = 1_700_000_000
EPOCH_S = 60
BITS = 3
NS = 1_000_000_000
# The log the seals are over: five manifest lines and three chain links.
MANIFEST = [blake3.blake3(f"manifest record {i}".encode()).digest() for i in range(5)]
LINKS = [blake3.blake3(f"chain link {i}".encode()).digest() for i in range(3)]
# (manifest records, chain links) sealed at each epoch; epoch 1 is quiet.
SEALED = [(1, 0), (1, 0), (3, 2), (5, 3)]
NOW = (START_S + 4 * EPOCH_S + 5) * NS  # in epoch 4: the last seal (epoch 3) is recent


def _state(epoch: int) -> bytes:
    state = STATE0
    for _ in range(epoch):
        state = scheme.next_state(state)
    return state


def note(
    tree: scheme.KeyTree,
    seed: Seed,
    epoch: int,
    *,
    key_epoch: int | None = None,
    time_ns: int | None = None,
    records: int | None = None,
) -> str:
    """Epoch ``epoch``'s seal (signed with ``key_epoch``'s key, to make a bad one)."""
    recs, links = SEALED[epoch] if epoch < len(SEALED) else SEALED[-1]
    recs = recs if records is None else records
    signer = epoch if key_epoch is None else key_epoch
    key = scheme.epoch_key(_state(signer))
    seal = Seal(
        seed.origin,
        recs,
        MANIFEST[recs - 1] if recs else ZERO,
        epoch,
        (seed.starts_ns(epoch) + NS) if time_ns is None else time_ns,
        links,
        LINKS[links - 1] if links else ZERO,
        bytes(key.verify_key),
        tuple(tree.proof(signer)),
    )
    return sign(seal, key)


def _case(name: str, notes: list[str], expect: dict[str, Any], **log: Any) -> dict[str, Any]:
    return {
        "name": name,
        "notes": notes,
        "manifest_line_hashes": [h.hex() for h in log.get("manifest", MANIFEST)],
        "link_ids": [h.hex() for h in log.get("links", LINKS)],
        "now_ns": log.get("now", NOW),
        "expect": expect,
    }


def _fails(epoch: int, kind: str) -> dict[str, Any]:
    return {"ok": False, "epoch": epoch, "kind": kind}


def s1() -> dict[str, Any]:
    tree = scheme.KeyTree(scheme.public_keys(STATE0, 1 << BITS))
    seed = Seed(tree.root, START_S, EPOCH_S, BITS)
    good = [note(tree, seed, n) for n in range(4)]
    edited = good[2].replace(f"time {seed.starts_ns(2) + NS}", f"time {seed.starts_ns(2) + 2 * NS}")
    rewritten = [*MANIFEST[:2], blake3.blake3(b"another record 2").digest(), *MANIFEST[3:]]
    cases = [
        _case("every epoch sealed, one quiet", good, {"ok": True, "epochs": 4}),
        _case("a quiet epoch's seal dropped", [good[0], *good[2:]], _fails(1, "missing")),
        _case("the newest seals dropped", good[:2], _fails(2, "stale")),
        _case(
            "a seal edited after sealing", [*good[:2], edited, good[3]], _fails(2, "bad-signature")
        ),
        _case(
            "epoch 2 sealed with epoch 3's key",
            [*good[:2], note(tree, seed, 2, key_epoch=3), good[3]],
            _fails(2, "wrong-key"),
        ),
        _case(
            "a sealed manifest record rewritten", good, _fails(2, "manifest"), manifest=rewritten
        ),
        _case("the manifest truncated", good, _fails(3, "manifest"), manifest=MANIFEST[:3]),
        _case(
            "a sealed chain link rewritten",
            good,
            _fails(2, "chain"),
            links=[LINKS[0], ZERO, LINKS[2]],
        ),
        _case(
            "sealed with a clock set back",
            [*good[:3], note(tree, seed, 3, time_ns=seed.starts_ns(2))],
            _fails(3, "clock"),
        ),
    ]
    return {
        "vector": "S1",
        "description": (
            "epoch seals (docs/sealing.md): notes of epochs 0-3 over a five-record manifest "
            "and a three-link chain, verified with the seed; each case names the first "
            "failing epoch and why"
        ),
        "state0": STATE0.hex(),
        "seed": seed.text(),
        "public_keys": [k.hex() for k in tree.leaves],
        "cases": cases,
    }


def write(folder: Path, name: str, data: dict[str, Any]) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    text = json.dumps(data, indent=1, ensure_ascii=False) + "\n"
    (folder / name).write_text(text, encoding="utf-8")


if __name__ == "__main__":
    write(Path(sys.argv[1]) if len(sys.argv) > 1 else HERE, "s1_seals.json", s1())
