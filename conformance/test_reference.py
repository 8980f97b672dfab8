"""The shipped vectors checked by an implementation that shares no code with nerve.

``conformance/reference.py`` is written from ``conformance/README.md`` alone: if nerve's
encoder and its checker agreed on a wrong byte, the reference would still disagree. Each
vector is also altered in the places a shared mistake could hide (a preimage byte, a
re-tagged id, a link byte, ``log_id``, ``nonce``), and the reference must reject it. Only
the last checks here import nerve: for a few damaged chains, the reference's first break and
``nerve.chain.verify_chain``'s must agree, and on a stream past ``max_probes`` the probes
evicted must be the same.
"""

from __future__ import annotations

import ast
import copy
import importlib
import importlib.util
import json
import re
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

HERE = Path(__file__).resolve().parent
REFERENCE = HERE / "reference.py"


def _load() -> ModuleType:
    spec = importlib.util.spec_from_file_location("conformance_reference", REFERENCE)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


ref = _load()


def _vector(name: str) -> dict[str, Any]:
    data: dict[str, Any] = json.loads((HERE / "v1" / name).read_text(encoding="utf-8"))
    return data


def _imported_roots(tree: ast.AST) -> set[str]:
    roots = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            roots |= {alias.name.split(".")[0] for alias in node.names}
        elif isinstance(node, ast.ImportFrom):
            roots.add((node.module or "").split(".")[0] if node.level == 0 else ".")
    return roots


def test_the_reference_does_not_import_nerve() -> None:
    tree = ast.parse(REFERENCE.read_text(encoding="utf-8"))
    roots = _imported_roots(tree)
    assert "nerve" not in roots and "." not in roots
    assert roots <= {"__future__", "base64", "json", "struct", "collections", "typing"} | {
        "blake3",
        "nacl",
    }, roots
    names = {n.id for n in ast.walk(tree) if isinstance(n, ast.Name)}
    assert not names & {"__import__", "importlib", "exec", "eval"}


def test_the_reference_checks_every_vector_with_nerve_unimportable() -> None:
    script = (
        "import json, sys\n"
        "sys.modules['nerve'] = None  # any import of nerve now fails\n"
        f"sys.path.insert(0, {str(HERE)!r})\n"
        "import reference as r\n"
        f"v = lambda n: json.loads(open({str(HERE / 'v1')!r} + '/' + n).read())\n"
        "c3, c5 = v('c3_attention.json'), v('c5_chain.json')\n"
        "print(json.dumps([r.check_c1(v('c1_replay_digest.json')), r.check_c2("
        "v('c2_event_id.json')), r.check_c5(c5), r.check_c5_against_c3(c5, c3),"
        " r.check_n1(v('n1_payload_jcs.json')), r.check_n2(v('n2_projections.json')),"
        " r.check_c3(c3), r.check_c3v(v('c3_values.json')), r.check_c4(v('c4_recall.json'))]))\n"
        "assert sys.modules['nerve'] is None\n"
        "assert not any(m.startswith('nerve.') for m in sys.modules)\n"
    )
    proc = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, check=False
    )
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout) == [[], [], [], [], [], [], [], [], []]


def test_c1_preimages_ids_and_replay_digest() -> None:
    vec = _vector("c1_replay_digest.json")
    assert ref.check_c1(vec) == []
    assert len(vec["events"]) == 8 and {e["trust"] for e in vec["events"]} == set(ref.TRUSTS)


def test_the_replay_digest_follows_the_documented_order_not_the_listing() -> None:
    vec = copy.deepcopy(_vector("c1_replay_digest.json"))
    for key in ("events", "preimages", "ids"):
        vec[key].reverse()
    assert ref.check_c1(vec) == []
    listed = ref.b3(b"".join(bytes.fromhex(i) for i in vec["ids"])).hex()
    assert listed != vec["replay_digest"]


def test_n1_payload_bytes_agree_with_the_reference_and_rfc8785() -> None:
    """The published bytes are recomputed by two implementations nerve does not share:
    the reference, and the ``rfc8785`` package where JCS's own integer range allows."""
    import rfc8785

    vec = _vector("n1_payload_jcs.json")
    assert ref.check_n1(vec) == []
    safe = 0
    for case in vec["cases"]:
        try:
            theirs = rfc8785.dumps(json.loads(case["input"]))
        except rfc8785.IntegerDomainError:
            continue  # 1700000000000000001: JCS itself has no exact form; nerve keeps digits
        assert theirs == case["canonical"].encode("utf-8"), case["name"]
        safe += 1
    assert safe == len(vec["cases"]) - 1
    altered = copy.deepcopy(vec)
    altered["cases"][0]["canonical"] = altered["cases"][0]["canonical"].replace("1e-7", "1e-07")
    assert ref.check_n1(altered) != []


def test_n2_rows_and_digests_and_what_breaks_them() -> None:
    vec = _vector("n2_projections.json")
    assert ref.check_n2(vec) == []
    assert {v["name"] for v in vec["projections"]} == {"sense_state", "attention_budget"}
    for change in ("reorder", "float-text", "digest"):
        altered = copy.deepcopy(vec)
        view = altered["projections"][0]
        if change == "reorder":
            view["lines"].reverse()
        elif change == "float-text":
            view["lines"] = [line.replace("1e-7", "1e-07") for line in view["lines"]]
        else:
            view["digest"] = "00" * 32
        assert ref.check_n2(altered) != [], change


def test_c2_id_and_retags() -> None:
    assert ref.check_c2(_vector("c2_event_id.json")) == []


def test_the_readme_byte_table_is_the_c2_preimage() -> None:
    readme = (HERE / "README.md").read_text(encoding="utf-8")
    section = readme.split("The C2 event's preimage, field by field", 1)[1].split("## ", 1)[0]
    rows = re.findall(r"^\| (\d) \| \w+ \| `([0-9a-f]{8})` \| `([0-9a-f]*)`", section, re.M)
    assert [int(r[0]) for r in rows] == list(range(10))
    vec = _vector("c2_event_id.json")
    assert "".join(length + data for _, length, data in rows) == vec["preimage"]
    assert f"Its id is `{vec['event_id']}`" in section
    assert ref.preimage(vec["event"]).hex() == vec["preimage"]


def test_c5_links_log_id_and_nonce() -> None:
    vec = _vector("c5_chain.json")
    assert ref.check_c5(vec) == []
    assert ref.verify([bytes.fromhex(h) for h in vec["links"]], bytes(32))["kind"] == (
        "unknown-key"
    )


def test_c5_seals_the_c3_idle_pass() -> None:
    assert ref.check_c5_against_c3(_vector("c5_chain.json"), _vector("c3_attention.json")) == []


def _flip_hex(text: str, at: int) -> str:
    return text[:at] + ("1" if text[at] == "0" else "0") + text[at + 1 :]


def _c1_preimage(vec: dict[str, Any]) -> None:
    vec["preimages"][3] = _flip_hex(vec["preimages"][3], 40)


def _c1_id(vec: dict[str, Any]) -> None:
    vec["ids"][5] = _flip_hex(vec["ids"][5], 0)


def _c1_digest(vec: dict[str, Any]) -> None:
    vec["replay_digest"] = _flip_hex(vec["replay_digest"], 63)


def _c2_id(vec: dict[str, Any]) -> None:
    vec["event_id"] = "00" * 32


def _c2_retag(vec: dict[str, Any]) -> None:
    vec["retagged"][2]["event_id"] = vec["event_id"]


def _c2_event(vec: dict[str, Any]) -> None:
    vec["event"]["valid_time_ns"] += 1
    vec["event"].pop("id")


@pytest.mark.parametrize(
    ("name", "alter", "check"),
    [
        ("c1_replay_digest.json", _c1_preimage, "check_c1"),
        ("c1_replay_digest.json", _c1_id, "check_c1"),
        ("c1_replay_digest.json", _c1_digest, "check_c1"),
        ("c2_event_id.json", _c2_id, "check_c2"),
        ("c2_event_id.json", _c2_retag, "check_c2"),
        ("c2_event_id.json", _c2_event, "check_c2"),
    ],
)
def test_an_altered_event_vector_fails(
    name: str, alter: Callable[[dict[str, Any]], None], check: str
) -> None:
    vec = copy.deepcopy(_vector(name))
    alter(vec)
    assert getattr(ref, check)(vec) != []


def _resigned(vec: dict[str, Any], index: int, change: Callable[[dict[str, Any]], None]) -> None:
    """Edit link ``index``'s core and sign it again with the published seed."""
    from nacl.signing import SigningKey

    core = ref.open_link(bytes.fromhex(vec["links"][index]))[0]
    change(core)
    core_bytes = ref.cbor_encode(core)
    sig = SigningKey(bytes.fromhex(vec["seed"])).sign(ref.DOMAIN + core_bytes).signature
    vec["links"][index] = ref.cbor_encode({"core": core_bytes, "sig": sig}).hex()


C5_ALTERATIONS: dict[str, Callable[[dict[str, Any]], None]] = {
    "log_id": lambda v: v.update(log_id=_flip_hex(v["log_id"], 10)),
    "nonce": lambda v: v.update(nonce=_flip_hex(v["nonce"], 0)),
    "seed": lambda v: v.update(seed=_flip_hex(v["seed"], 5)),
    "link byte": lambda v: v["links"].__setitem__(4, _flip_hex(v["links"][4], 200)),
    "link id": lambda v: v["link_ids"].__setitem__(2, _flip_hex(v["link_ids"][2], 7)),
    "kinds": lambda v: v["kinds"].__setitem__(9, "decision"),
    "excised kind": lambda v: v["excised"].update(kind="reordered"),
    "verify count": lambda v: v["verify"].update(links=9),
    "re-signed genesis nonce": lambda v: _resigned(v, 0, lambda c: c.update(nonce=bytes(16))),
    "re-signed checkpoint root": lambda v: _resigned(v, 9, lambda c: c.update(root=bytes(32))),
    "re-signed prev": lambda v: _resigned(v, 3, lambda c: c.update(prev=bytes(32))),
}


@pytest.mark.parametrize("what", sorted(C5_ALTERATIONS))
def test_an_altered_c5_fails(what: str) -> None:
    vec = copy.deepcopy(_vector("c5_chain.json"))
    C5_ALTERATIONS[what](vec)
    assert ref.check_c5(vec) != [], what


def test_an_altered_c3_decision_no_longer_matches_its_link() -> None:
    c3 = copy.deepcopy(_vector("c3_attention.json"))
    c3["idle"]["decisions"][2]["decision"]["budget_after_uj"] += 1
    problems = ref.check_c5_against_c3(_vector("c5_chain.json"), c3)
    assert problems == ["decision link 2: ['budget_uj'] differ from C3's idle decision"]


@pytest.mark.parametrize(
    "raw",
    [
        bytes.fromhex("1817"),  # 23 in a two-byte head: not the shortest form
        bytes.fromhex("a2616201616101"),  # {"b": 1, "a": 1}: keys out of order
        bytes.fromhex("f5"),  # true
        bytes.fromhex("9f01ff"),  # an indefinite-length array
        bytes.fromhex("0100"),  # a trailing byte
    ],
)
def test_the_reference_decoder_rejects_what_is_not_det_cbor(raw: bytes) -> None:
    with pytest.raises(ref.CborError):
        ref.cbor_decode(raw)


def _with(links: list[bytes], index: int, raw: bytes) -> list[bytes]:
    return [*links[:index], raw, *links[index + 1 :]]


def _long_heads(raw: bytes) -> bytes:
    """The same link with the core's length in a 4-byte head: decodable, not deterministic."""
    _, core_bytes, sig = ref.open_link(raw)
    head = bytes([0x5A]) + len(core_bytes).to_bytes(4, "big")
    return (
        b"".join(
            [bytes([0xA2]), ref.cbor_encode("sig"), ref.cbor_encode(sig), ref.cbor_encode("core")]
        )
        + head
        + core_bytes
    )


def test_the_walk_names_the_break_the_readme_describes_as_nerve_does() -> None:
    from nerve.chain import verify_chain  # the check: two implementations agree

    vec = _vector("c5_chain.json")
    key, links = bytes.fromhex(vec["pinned_key"]), [bytes.fromhex(h) for h in vec["links"]]
    damaged_sig = bytearray(links[2])
    damaged_sig[10] ^= 1  # inside the signature, which comes first in the envelope
    cases = {
        "duplicated": (3, [*links[:3], links[1], *links[3:]]),
        "reordered": (3, [*links[:3], links[4], links[3], *links[5:]]),
        "non-canonical": (2, _with(links, 2, _long_heads(links[2]))),
        "malformed": (2, _with(links, 2, links[2][:-1])),
        "bad-signature": (2, _with(links, 2, bytes(damaged_sig))),
        "excised": (2, [*links[:2], *links[3:]]),
    }
    for kind, (seq, presented) in cases.items():
        want = {"ok": False, "links": seq, "seq": seq, "kind": kind}
        assert ref.verify(presented, key) == want, kind
        report = verify_chain(presented, pinned_key=key)
        assert report.first_break is not None, kind
        assert (report.first_break.seq, report.first_break.kind) == (seq, kind)


def test_the_merkle_root_follows_rfc_6962_splits() -> None:
    leaves = [bytes([i]) * 32 for i in range(5)]
    h = ref.b3
    left = h(b"\x01" + h(b"\x01" + h(b"\x00" + leaves[0]) + h(b"\x00" + leaves[1]))
             + h(b"\x01" + h(b"\x00" + leaves[2]) + h(b"\x00" + leaves[3])))  # fmt: skip
    assert ref.merkle_root(leaves) == h(b"\x01" + left + h(b"\x00" + leaves[4]))
    assert ref.merkle_root([]) == h(b"")


def test_c3_and_c3v_decisions_recomputed_from_the_readme() -> None:
    assert ref.check_c3(_vector("c3_attention.json")) == []
    assert ref.check_c3v(_vector("c3_values.json")) == []


def _generator() -> ModuleType:
    spec = importlib.util.spec_from_file_location("gen_attention", HERE / "generate_attention.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.mark.parametrize(
    ("target", "name", "vector"),
    [
        ("nerve.attention.gate.Gate", "cost_of", "c3"),
        ("nerve.attention.detector.Detector", "_test", "c3"),
        ("nerve.attention.values", "_trend", "c3v"),
    ],
)
def test_a_changed_nerve_with_regenerated_vectors_fails_the_reference(
    target: str, name: str, vector: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The reference does not share nerve's code: a change to the gate, the detector or the
    value probes, with vectors regenerated by the changed nerve, no longer agrees with it."""
    try:
        owner: Any = importlib.import_module(target)  # a module's own function
    except ModuleNotFoundError:
        module_name, cls_name = target.rsplit(".", 1)
        owner = getattr(importlib.import_module(module_name), cls_name)
    original = getattr(owner, name)

    def changed(*args: Any) -> Any:
        out = original(*args)
        if name == "cost_of":
            return out + 40  # interruptions a little dearer
        if name == "_test":
            return out if out is None or out.score_milli < 200 else None  # big fires dropped
        score, *rest = out
        return (score // 2, *rest)  # trends half as strong

    monkeypatch.setattr(owner, name, changed)
    gen = _generator()
    if vector == "c3":
        regenerated = gen.c3(gen.stream()) if name != "_test" else None
        if regenerated is None:  # the changed detector no longer yields every outcome
            idle = gen.idle_pass(gen.CONFIG, gen.stream(), gen.IDLE)
            regenerated = {
                **_vector("c3_attention.json"),
                "idle": {
                    "context": {"engagement_milli": 0, "active_modality": "none"},
                    "decisions": idle,
                },
            }
        assert ref.check_c3(regenerated) != []
    else:
        assert ref.check_c3v(gen.c3v(gen.value_stream())) != []


def test_c4_envelopes_digests_and_intents_recomputed_from_the_readme() -> None:
    vec = _vector("c4_recall.json")
    assert ref.check_c4(vec) == []
    moved = copy.deepcopy(vec)
    moved["cases"][0]["envelope"]["spans"][0]["rank"] += 1  # a published rank that is wrong
    assert ref.check_c4(moved) != []
    renamed = copy.deepcopy(vec)
    spike = next(e for e in renamed["events"] if e["kind"] == "attention.highlight")
    spike["line"] = "salience spike cpu 0.900"  # the log changes, not the cases
    assert ref.check_c4(renamed) != []
    wrong = copy.deepcopy(vec)
    wrong["cases"][1]["intent"] = "recent_files"
    assert ref.check_c4(wrong) != []


@pytest.mark.parametrize("change", ["idf_fixed", "named_strata"])
def test_a_changed_cascade_with_a_regenerated_c4_fails_the_reference(
    change: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    core = importlib.import_module("nerve.recall.core")
    original = getattr(core, change)
    if change == "idf_fixed":  # rarer terms weigh a little more
        monkeypatch.setattr(core, change, lambda spans, holding: original(spans, holding) + 1)
    else:  # the strata a query names served in the opposite order
        monkeypatch.setattr(core, change, lambda query, first=(): original(query, first)[::-1])
    spec = importlib.util.spec_from_file_location("gen_c4", HERE / "generate_c4.py")
    assert spec is not None and spec.loader is not None
    gen = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(gen)
    assert ref.check_c4(gen.build(tmp_path)) != []


@pytest.mark.parametrize("change", ["no_carry", "no_blend"])
def test_a_changed_ranged_probe_with_regenerated_vectors_fails_the_reference(
    change: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """C3V's ranged pass: bins not carried over as the range widens, or the predictions'
    fires not weighed, regenerated by the changed nerve, no longer agree with the reference."""
    from nerve.attention import values

    if change == "no_carry":
        monkeypatch.setattr(values, "_remap", lambda mask, *args: mask)
    else:
        original = values.ValueDetector._blend

        def unweighed(self: Any, *args: Any) -> Any:
            out = original(self, *args)
            if out is not None and out.score_milli < 900:
                return args[4]  # the predictions' own fire, as it was
            return out

        monkeypatch.setattr(values.ValueDetector, "_blend", unweighed)
    gen = _generator()
    assert ref.check_c3v(gen.c3v(gen.value_stream())) != []


def test_the_reference_evicts_the_probes_nerve_evicts() -> None:
    """No vector fills ``max_probes``; on a stream that does (two subjects whose reading
    names churn, a steady one joining late), the reference follows the README's eviction rule to
    the same fires and the same probes kept as nerve."""
    from dataclasses import asdict

    from nerve.attention.values import ValueDetector, ValueParams

    params = ValueParams(max_probes=12, warmup=4, novel_warmup_s=0, novel_quiet_s=0)
    nerve_side, reference = ValueDetector(params), ref.RefValues(params.model_dump())
    t0, fired = 1_767_225_600_000_000_000, 0
    for i in range(600):
        t = t0 + i * 1_000_000_000
        stream = [
            ("mounts", {f"m{(i * 5 + k) % 997}": 100 + k for k in range(5)}),
            ("pods", {f"p{(i * 3 + k) % 991}": 7 for k in range(3)}),
        ]
        if i >= 40 and i % 7 == 0:
            stream.append(("cpu", {"busy": 50 + i % 5 + (400 if i == 560 else 0)}))
        for subject, readings in stream:
            got = [asdict(h) for h in nerve_side.observe(subject, readings, i, t)]
            want = reference.observe(subject, readings, i, t)
            assert [{k: h[k] for k in w} for h, w in zip(got, want, strict=True)] == want, i
            fired += len(want)
    assert fired and sorted(nerve_side.snapshot()["probes"]) == sorted(reference.probes)
