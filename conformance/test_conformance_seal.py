"""S1 (epoch seals): the vector passes, regenerates byte for byte, and a case whose
expectation or notes are altered fails."""

from __future__ import annotations

import copy
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from nerve.conformance import CHECKERS, run_all

HERE = Path(__file__).resolve().parent
FILE = "s1_seals.json"


def _vector() -> dict[str, Any]:
    data: dict[str, Any] = json.loads((HERE / "v1" / FILE).read_text(encoding="utf-8"))
    return data


def test_the_published_vector_passes() -> None:
    result = {r.vector: r for r in run_all(HERE / "v1")}["S1"]
    assert result.ok and result.file == FILE, result.detail


def test_the_generator_reproduces_the_published_file(tmp_path: Path) -> None:
    script = HERE / "generate_seal.py"
    subprocess.run([sys.executable, str(script), str(tmp_path)], check=True, cwd=HERE.parent)
    assert (tmp_path / FILE).read_bytes() == (HERE / "v1" / FILE).read_bytes()


@pytest.mark.parametrize("index", range(9))
def test_s1_fails_when_a_case_expects_another_outcome(index: int) -> None:
    vec = copy.deepcopy(_vector())
    case = vec["cases"][index]
    case["expect"] = (
        {"ok": False, "epoch": 0, "kind": "missing"}
        if case["expect"]["ok"]
        else {"ok": True, "epochs": 4}
    )
    ok, detail = CHECKERS["S1"](vec)
    assert not ok and case["name"] in detail


def test_s1_fails_when_the_whole_case_loses_a_note() -> None:
    vec = copy.deepcopy(_vector())
    del vec["cases"][0]["notes"][1]
    ok, detail = CHECKERS["S1"](vec)
    assert not ok and "missing" in detail
