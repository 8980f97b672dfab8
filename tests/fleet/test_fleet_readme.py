"""The fleet walkthrough in docs/fleet.md runs as written: three workspaces, one table, verified."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
MARK = "<!-- fleet-walkthrough"


def _walkthrough() -> str:
    text = (ROOT / "docs" / "fleet.md").read_text()
    block = text[text.index(MARK) :]
    body = block.split("```sh\n", 1)[1].split("```", 1)[0]
    return body


def test_the_readme_fleet_walkthrough_works_as_written(tmp_path: Path) -> None:
    script = f'nerve() {{ "{sys.executable}" -m nerve "$@"; }}\nset -e\n' + _walkthrough()
    env = {
        **os.environ,
        "HOME": str(tmp_path),
        "XDG_STATE_HOME": str(tmp_path / "state"),
        "NO_COLOR": "1",
    }
    proc = subprocess.run(
        ["bash", "-c", script], capture_output=True, text=True, env=env, timeout=300, cwd=tmp_path
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    out = proc.stdout
    assert "host\tn\ndesktop\t1\nlaptop\t1\nserver\t1\n" in out
    assert out.count("ok    ") == 3
    assert (tmp_path / "fleet-demo" / "warehouse" / "catalog.db").is_file()
