"""Encryption at rest, through the real CLI: an encrypted workspace works with its key, is
refused (writing nothing) with another, verifies without one, and replays to the digest a
plain copy of the same events has."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from tests.conftest import run_cli
from tests.helpers.crypt import SECRETS, files_under, leaks

pytestmark = pytest.mark.filterwarnings("ignore::pytest.PytestUnraisableExceptionWarning")


def _emit_secrets(ws: Path, env: dict[str, str]) -> None:
    run_cli("-w", str(ws), "emit", "-s", "shell", "--line", SECRETS[0], env=env)
    payload = json.dumps({"ref": SECRETS[1], "note": SECRETS[2]})
    run_cli("-w", str(ws), "emit", "-s", "shell", "--subject", SECRETS[3], "-p", payload, env=env)


def test_done_when(tmp_path: Path) -> None:
    key, ws = tmp_path / "K", tmp_path / "ws"
    made = run_cli("init", "--encrypt", "--key-file", str(key), str(ws))
    assert "encrypted workspace" in made.stdout
    assert "encryption:" in (ws / "nerve.yaml").read_text()
    assert os.stat(key).st_mode & 0o777 == 0o600
    env = {"NERVE_KEY_FILE": str(key)}
    _emit_secrets(ws, env)
    assert "sealed 2 events" in run_cli("-w", str(ws), "seal", env=env).stdout
    run_cli("-w", str(ws), "emit", "-s", "shell", "--line", SECRETS[4], env=env)
    rows = run_cli(
        "-w", str(ws), "query", "SELECT line FROM events ORDER BY physical_ns", "--json", env=env
    )
    assert [json.loads(r)["line"] for r in rows.stdout.splitlines()] == [SECRETS[0], "", SECRETS[4]]
    tail = run_cli("-w", str(ws), "tail", "--all", "--json", env=env).stdout
    assert SECRETS[1] in tail and len(tail.splitlines()) == 3
    digest = json.loads(run_cli("-w", str(ws), "replay", "--json", env=env).stdout)["digest"]
    assert leaks(ws / "data") == []

    other = tmp_path / "K2"
    run_cli("key", "new", str(other))
    before = files_under(ws / "data")
    refused = run_cli(
        "-w", str(ws), "emit", "-s", "shell", "--line", "x", env={"NERVE_KEY_FILE": str(other)},
        check=False,
    )
    assert refused.returncode == 1
    assert refused.stderr.startswith("WrongKey: ") and "nothing was written" in refused.stderr
    assert "Traceback" not in refused.stderr
    assert files_under(ws / "data") == before

    keyless = run_cli("-w", str(ws), "replay", "--verify", "--json")
    report = json.loads(keyless.stdout)
    assert keyless.returncode == 0 and report["ok"] is True and report["keyless"] is True
    with_key = json.loads(run_cli("-w", str(ws), "replay", "--verify", "--json", env=env).stdout)
    assert with_key["ok"] is True and with_key["digest"] == digest

    plain = tmp_path / "plain"
    run_cli("init", str(plain))
    (tmp_path / "events.jsonl").write_text(tail)
    run_cli("-w", str(plain), "import", str(tmp_path / "events.jsonl"))
    again = json.loads(run_cli("-w", str(plain), "replay", "--json").stdout)["digest"]
    assert again == digest


def test_reads_without_the_key_are_refused_in_one_line(tmp_path: Path) -> None:
    key, ws = tmp_path / "K", tmp_path / "ws"
    run_cli("init", "--encrypt", "--key-file", str(key), str(ws))
    _emit_secrets(ws, {"NERVE_KEY_FILE": str(key)})
    for args in (("query", "SELECT 1"), ("tail", "--all"), ("replay",), ("emit", "-s", "shell")):
        out = run_cli("-w", str(ws), *args, check=False)
        assert out.returncode == 1, args
        assert out.stderr.startswith("KeyMissing: ") and "Traceback" not in out.stderr, args
