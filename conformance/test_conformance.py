"""The published vectors pass, and regenerating them reproduces the committed bytes."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from nerve.conformance import run_all

HERE = Path(__file__).resolve().parent


def test_every_vector_passes() -> None:
    results = run_all(HERE / "v1")
    assert results, "no vectors found"
    assert [r for r in results if not r.ok] == []


def test_generator_reproduces_the_published_files(tmp_path: Path) -> None:
    before = {p.name: p.read_bytes() for p in (HERE / "v1").glob("*.json")}
    subprocess.run([sys.executable, str(HERE / "generate.py")], check=True, cwd=HERE.parent)
    after = {p.name: p.read_bytes() for p in (HERE / "v1").glob("*.json")}
    assert after == before
