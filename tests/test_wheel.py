"""The wheel, built as a release would be (``pip wheel``, hatchling) into a temp folder: it
holds what nerve needs at run time and nothing else, and ``nerve conformance`` runs from it."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
LEFTOVERS = (".orig", ".rej", ".bak", "~", ".pyc", ".swp")


@pytest.fixture(scope="module")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("wheel")
    subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--no-deps", "--quiet", "-w", str(out), str(ROOT)],
        check=True,
        capture_output=True,
        timeout=120,
    )
    (built,) = out.glob("nerve-*.whl")
    return built


def _names(wheel: Path) -> list[str]:
    with zipfile.ZipFile(wheel) as z:
        return z.namelist()


def test_the_wheel_holds_no_leftovers_and_no_test_or_generator(wheel: Path) -> None:
    names = _names(wheel)
    assert [n for n in names if n.endswith(LEFTOVERS)] == []
    base = [n.rsplit("/", 1)[-1] for n in names]
    assert [b for b in base if b.startswith(("test_", "generate")) or b == "conftest.py"] == []
    shipped = [n for n in names if n.startswith("nerve/_bundled/conformance/")]
    assert shipped and all(n.startswith("nerve/_bundled/conformance/v1/") for n in shipped)
    assert all(n.endswith(".json") for n in shipped)


def test_the_wheel_bundles_every_vector_projection_sense_and_workflow(wheel: Path) -> None:
    names = set(_names(wheel))
    tracked = subprocess.run(
        ["git", "-C", str(ROOT), "ls-files", "conformance/v1", "projections", "senses",
         "workflows", "nerve.yaml"],
        check=True, capture_output=True, text=True,
    ).stdout.split()  # fmt: skip
    assert tracked and {f"nerve/_bundled/{t}" for t in tracked} <= names


def test_nerve_conformance_runs_from_the_unpacked_wheel(wheel: Path, tmp_path: Path) -> None:
    with zipfile.ZipFile(wheel) as z:
        z.extractall(tmp_path)
    env = {**os.environ, "PYTHONPATH": str(tmp_path), "NO_COLOR": "1"}

    def run(*args: str) -> str:
        proc = subprocess.run(
            [sys.executable, *args], cwd=tmp_path, env=env, capture_output=True, text=True,
            timeout=120,
        )  # fmt: skip
        assert proc.returncode == 0, proc.stdout + proc.stderr
        return proc.stdout

    where = run("-c", "from nerve.resources import bundled; print(bundled('conformance'))")
    assert where.strip() == str(tmp_path / "nerve" / "_bundled" / "conformance")
    report = json.loads(run("-m", "nerve", "conformance", "--json"))
    vectors = sorted(p.name for p in (ROOT / "conformance" / "v1").glob("*.json"))
    assert report["ok"] and sorted(v["file"] for v in report["vectors"]) == vectors
