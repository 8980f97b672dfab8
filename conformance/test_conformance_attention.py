"""C3 (attention) and C5 (chain integrity): the vectors pass, regenerate byte for byte, and
a vector altered anywhere that matters fails."""

from __future__ import annotations

import copy
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from nerve.attention.gate import GateConfig
from nerve.conformance import CHECKERS, run_all
from nerve.conformance.attention import busy_pass, context_from_json

HERE = Path(__file__).resolve().parent
FILES = {"C3": "c3_attention.json", "C5": "c5_chain.json", "C3V": "c3_values.json"}


def _vector(name: str) -> dict[str, Any]:
    data: dict[str, Any] = json.loads((HERE / "v1" / FILES[name]).read_text(encoding="utf-8"))
    return data


def _check(vec: dict[str, Any]) -> tuple[bool, str]:
    run_all(HERE / "v1")  # registers the C3 / C5 checkers
    return CHECKERS[vec["vector"]](vec)


def test_the_published_vectors_pass() -> None:
    results = {r.vector: r for r in run_all(HERE / "v1")}
    for name, file in FILES.items():
        assert results[name].file == file
        assert results[name].ok, results[name].detail


def test_the_generator_reproduces_the_published_files(tmp_path: Path) -> None:
    script = HERE / "generate_attention.py"
    subprocess.run([sys.executable, str(script), str(tmp_path)], check=True, cwd=HERE.parent)
    for file in FILES.values():
        assert (tmp_path / file).read_bytes() == (HERE / "v1" / file).read_bytes(), file


def test_the_busy_pass_shows_every_outcome_and_the_idle_pass_is_mixed() -> None:
    vec = _vector("C3")
    busy = [r["decision"]["outcome"] for r in vec["busy"]["decisions"]]
    idle = [r["decision"]["outcome"] for r in vec["idle"]["decisions"]]
    assert set(busy) == {"surface", "hold:value", "hold:budget"}
    assert set(idle) == {"surface", "hold:value"}
    assert {r["highlight"]["probe"] for r in vec["idle"]["decisions"]} == {
        "salience",
        "novelty",
        "uncertainty",
    }


C3_TAMPERS = [
    ("idle", 1, "decision", "budget_after_uj"),
    ("idle", 0, "highlight", "score_milli"),
    ("busy", 3, "decision", "budget_before_uj"),
    ("busy", 7, "decision", "charged_uj"),
]


@pytest.mark.parametrize(("part", "index", "record", "field"), C3_TAMPERS)
def test_c3_fails_when_a_published_figure_is_off_by_one(
    part: str, index: int, record: str, field: str
) -> None:
    vec = copy.deepcopy(_vector("C3"))
    vec[part]["decisions"][index][record][field] += 1
    ok, detail = _check(vec)
    assert not ok
    assert f"{part} decision {index}" in detail


def test_c3_fails_when_the_stream_or_config_changes() -> None:
    vec = copy.deepcopy(_vector("C3"))
    vec["stream"][40]["trust"] = 3
    assert not _check(vec)[0]
    vec = copy.deepcopy(_vector("C3"))
    del vec["config"]["detector"]["k_milli"]
    assert _check(vec) == (False, "config must list every parameter explicitly")


def test_c3_fails_when_the_busy_pass_lacks_an_outcome() -> None:
    vec = copy.deepcopy(_vector("C3"))
    busy = vec["busy"]
    busy["gate"]["budget_capacity_uj"] = 10_000_000  # a budget that never runs dry
    gate = GateConfig.model_validate(busy["gate"])
    ctx = context_from_json(busy["context"])
    busy["decisions"] = busy_pass(gate, ctx, vec["stream"], vec["idle"]["decisions"])
    assert _check(vec) == (False, "busy pass lacks outcome(s) ['hold:budget']")


def test_c5_excision_breaks_exactly_at_the_middle() -> None:
    vec = _vector("C5")
    assert vec["middle"] == len(vec["links"]) // 2
    assert vec["excised"] == {
        "ok": False,
        "links": vec["middle"],
        "seq": vec["middle"],
        "kind": "excised",
    }


@pytest.mark.parametrize(
    ("field", "value"),
    [
        ("middle", 4),
        ("excised", {"ok": False, "links": 5, "seq": 4, "kind": "excised"}),
        ("excised", {"ok": False, "links": 5, "seq": 5, "kind": "reordered"}),
        ("verify", {"ok": True, "links": 9, "seq": None, "kind": None}),
        ("pinned_key", "00" * 32),
        ("log_id", "00" * 32),
        ("nonce", "00" * 16),
    ],
)
def test_c5_fails_when_a_published_fact_is_wrong(field: str, value: Any) -> None:
    vec = copy.deepcopy(_vector("C5"))
    vec[field] = value
    assert not _check(vec)[0]


def test_c5_fails_when_a_link_is_edited() -> None:
    vec = copy.deepcopy(_vector("C5"))
    raw = bytearray(bytes.fromhex(vec["links"][3]))
    raw[-1] ^= 1
    vec["links"][3] = raw.hex()
    ok, detail = _check(vec)
    assert not ok
    assert detail.startswith(("link_ids", "verify"))


def test_an_altered_c3v_fails() -> None:
    vec = _vector("C3V")
    assert _check(vec)[0], _check(vec)[1]
    for change in ("score", "reading", "config"):
        bad = copy.deepcopy(vec)
        if change == "score":
            bad["idle"]["decisions"][-1]["highlight"]["score_milli"] += 1
        elif change == "reading":
            event = bad["idle"]["decisions"][-1]["event"]
            name = next(iter(bad["stream"][event]["readings"]))
            bad["stream"][event]["readings"][name] += 10_000
        else:
            bad["config"]["values"]["sustain"] += 1
        assert not _check(bad)[0], change


def test_an_altered_ranged_pass_fails() -> None:
    vec = _vector("C3V")
    assert {r["highlight"]["score_milli"] for r in vec["ranged"]["decisions"]} >= {900, 1000}
    for change in ("score", "values"):
        bad = copy.deepcopy(vec)
        if change == "score":
            bad["ranged"]["decisions"][0]["highlight"]["score_milli"] += 1
        else:
            bad["ranged"]["values"]["range_bins"] = 16
        assert not _check(bad)[0], change
