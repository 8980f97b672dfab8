"""The published vectors pass, and regenerating them reproduces the committed bytes.

``conformance/v1`` is only ever read here: the generators write into a temporary folder and
the result is compared byte for byte with the committed files, so a changed byte in a
shipped vector fails the suite and stays changed.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from nerve.conformance import run_all

HERE = Path(__file__).resolve().parent
V1 = HERE / "v1"
C1_C2 = ("c1_replay_digest.json", "c2_event_id.json")
# Every shipped vector and the test that regenerates it into tmp_path and compares bytes.
REGENERATED = {
    "c1_replay_digest.json": "test_conformance.py",
    "c2_event_id.json": "test_conformance.py",
    "c3_attention.json": "test_conformance_attention.py",
    "c3_values.json": "test_conformance_attention.py",
    "c5_chain.json": "test_conformance_attention.py",
    "c4_recall.json": "test_conformance_c4.py",
    "n1_payload_jcs.json": "test_conformance.py",
    "n2_projections.json": "test_conformance.py",
    "s1_seals.json": "test_conformance_seal.py",
}


def _shipped() -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in V1.glob("*.json")}


def test_every_vector_passes() -> None:
    results = run_all(V1)
    assert results, "no vectors found"
    assert [r for r in results if not r.ok] == []


def test_generator_reproduces_the_published_files(tmp_path: Path) -> None:
    before = _shipped()
    script = HERE / "generate.py"
    subprocess.run([sys.executable, str(script), str(tmp_path)], check=True, cwd=HERE.parent)
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(C1_C2)
    for name in C1_C2:
        assert (tmp_path / name).read_bytes() == before[name], name
    assert _shipped() == before, "the generator wrote into conformance/v1"


def test_every_shipped_vector_is_regenerated_and_compared() -> None:
    assert sorted(_shipped()) == sorted(REGENERATED)
    for name, module in REGENERATED.items():
        assert name in (HERE / module).read_text(encoding="utf-8"), (name, module)


@pytest.mark.parametrize(
    ("script", "name"),
    [
        ("generate_payloads.py", "n1_payload_jcs.json"),
        ("generate_projections.py", "n2_projections.json"),
    ],
)
def test_nerves_own_vectors_are_regenerated_byte_for_byte(
    tmp_path: Path, script: str, name: str
) -> None:
    before = _shipped()[name]
    subprocess.run([sys.executable, str(HERE / script), str(tmp_path)], check=True, cwd=HERE.parent)
    assert sorted(p.name for p in tmp_path.iterdir()) == [name]
    assert (tmp_path / name).read_bytes() == before
