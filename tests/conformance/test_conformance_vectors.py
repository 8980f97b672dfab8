"""`nerve conformance --vectors DIR` checks any folder laid out like conformance/v1."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

from tests.conftest import run_cli

V1 = Path(__file__).resolve().parents[2] / "conformance" / "v1"


def _run(folder: Path, check: bool = False) -> tuple[int, dict[str, object] | str]:
    proc = run_cli("conformance", "--vectors", str(folder), "--json", check=check)
    return proc.returncode, json.loads(proc.stdout) if proc.stdout else proc.stderr


def test_a_copy_of_the_shipped_vectors_passes_and_an_altered_one_fails(tmp_path: Path) -> None:
    copy = tmp_path / "theirs"
    shutil.copytree(V1, copy)
    code, out = _run(copy)
    assert code == 0 and isinstance(out, dict) and out["ok"]
    names = {v["vector"] for v in out["vectors"]}  # type: ignore[attr-defined]
    assert names == {"C1", "C2", "C3", "C3V", "C4", "C5", "N1", "N2", "S1"}
    n1 = copy / "n1_payload_jcs.json"
    n1.write_text(n1.read_text(encoding="utf-8").replace("1e-7,", "1e-07,"), encoding="utf-8")
    (copy / "x_missing.json").write_text('{"vector": "N2", "events": []}\n')
    (copy / "y_unknown.json").write_text('{"vector": "Z9"}\n')
    code, out = _run(copy)
    assert code == 1 and isinstance(out, dict) and not out["ok"]
    failed = {v["file"]: v["detail"] for v in out["vectors"] if not v["ok"]}  # type: ignore[attr-defined]
    assert sorted(failed) == ["n1_payload_jcs.json", "x_missing.json", "y_unknown.json"]
    assert "floats: wrote" in failed["n1_payload_jcs.json"]
    assert failed["x_missing.json"].startswith("missing field 'settings'")
    assert failed["y_unknown.json"] == "no checker for vector Z9"
    text = run_cli("conformance", "--vectors", str(copy), check=False).stdout
    assert "FAIL N1: floats: wrote" in text and "PASS C1:" in text


def test_a_folder_without_vectors_is_a_usage_error(tmp_path: Path) -> None:
    code, err = _run(tmp_path)
    assert code == 2 and isinstance(err, str) and "holds no *.json vectors" in err
    code, err = _run(tmp_path / "nowhere")
    assert code == 2 and "is not a folder of conformance vectors" in str(err)
