"""C4 (synthesis cascade): the vector passes, regenerates byte for byte, and a vector altered
anywhere that matters fails."""

from __future__ import annotations

import copy
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from nerve.conformance import check_c4, run_all

HERE = Path(__file__).resolve().parent
FILE = HERE / "v1" / "c4_recall.json"


def _vector() -> dict[str, Any]:
    data: dict[str, Any] = json.loads(FILE.read_text(encoding="utf-8"))
    return data


def test_the_published_vector_passes() -> None:
    results = {r.vector: r for r in run_all(HERE / "v1")}
    assert results["C4"].file == FILE.name
    assert results["C4"].ok, results["C4"].detail


def test_the_generator_reproduces_the_published_file(tmp_path: Path) -> None:
    script = HERE / "generate_c4.py"
    subprocess.run([sys.executable, str(script), str(tmp_path)], check=True, cwd=HERE.parent)
    assert (tmp_path / FILE.name).read_bytes() == FILE.read_bytes()


def test_the_vector_covers_both_outcomes() -> None:
    cases = _vector()["cases"]
    assert {c["expect"] for c in cases} == {"deterministic", "escalate"}
    for case in cases:
        if case["expect"] == "deterministic":
            assert case["model_call"] is False
            assert case["energy"] == {
                "estimated_uj": 0,
                "measured_uj": None,
                "provenance": "Estimator",
            }


def _alter_answer(vec: dict[str, Any]) -> None:
    vec["cases"][0]["answer"] += "!"


def _alter_expectation(vec: dict[str, Any]) -> None:
    vec["cases"][-1]["expect"] = "deterministic"
    vec["cases"][-1] |= {"intent": "x", "answer": "x", "spans": [], "model_call": False}


def _alter_digest(vec: dict[str, Any]) -> None:
    vec["cases"][1]["envelope_digest"] = "0" * 64


def _alter_envelope(vec: dict[str, Any]) -> None:
    vec["cases"][2]["envelope"]["spans"][0]["rank"] += 1


def _alter_event(vec: dict[str, Any]) -> None:
    event = vec["events"][3]  # "file modified README.md", inside the window
    event["line"] = event["line"].replace("README.md", "README.rst")
    event.pop("id", None)


def _alter_params(vec: dict[str, Any]) -> None:
    vec["params"]["k"] += 1


@pytest.mark.parametrize(
    "alter",
    [
        _alter_answer,
        _alter_expectation,
        _alter_digest,
        _alter_envelope,
        _alter_event,
        _alter_params,
    ],
)
def test_an_altered_vector_fails(alter: Any) -> None:
    vec = copy.deepcopy(_vector())
    alter(vec)
    ok, detail = check_c4(vec)
    assert not ok, detail
