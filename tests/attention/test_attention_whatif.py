"""What-if on the recorded day: ``nerve attend --replay --with FILE [--since …]`` attends to
the log again under other settings, lists what would differ, and writes nothing."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pytest

import nerve
from nerve.attention.whatif import settings_from, what_if
from nerve.config.issues import InvalidConfig
from nerve.errors import UsageError
from nerve.query import connect
from tests.conftest import run_cli
from tests.helpers.day import Day


def _tree_digest(root: Path) -> str:
    h = hashlib.sha256()
    for path in sorted(p for p in root.rglob("*") if p.is_file()):
        h.update(str(path.relative_to(root)).encode() + b"\0" + path.read_bytes())
    return h.hexdigest()


def _file(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "what-if.yaml"
    path.write_text(text)
    return path


# The gate rules the day was recorded under: the defaults before floor crossings, parallel
# jobs and downloads, transfers' persistence and the drift's hold (attention_days_bench's
# tuning days changed them).
RECORDED_RULES = {
    "explain": False,
    "crossings": False,
    "drift_hold_s": 0,
    "floors": {"processes.top_cpu_permille": 500, "shell.failure_streak": 0},
    "persist": {"network.down_kib_per_s": 0, "network.up_kib_per_s": 0},
    "drift_rates": {"disk.free_mib": 240},
}


def test_the_daemons_own_settings_change_nothing(recorded_day: Day) -> None:
    ws = nerve.open(recorded_day.root)
    own = ws.settings.attention()
    own = own.model_copy(update={"rules": own.rules.model_copy(update=RECORDED_RULES)})
    result = what_if(connect(recorded_day.root / "data" / "log"), own)
    assert result.same and result.recorded == result.would
    surfaced, held = result.recorded
    assert surfaced > 0 and held > 0  # the day holds both kinds
    count = ws.sql("SELECT count(*) FROM events WHERE kind = 'observation'").fetchall()[0][0]
    assert result.replayed == count


def test_other_settings_list_each_differing_decision(
    recorded_day_copy: Day, tmp_path: Path
) -> None:
    root = recorded_day_copy.root
    before = _tree_digest(root)
    path = _file(tmp_path, "attention:\n  rules:\n    confirm_s: 0\n")
    proc = run_cli("attend", "--replay", "--with", str(path), "--json", cwd=root)
    data = json.loads(proc.stdout)
    assert data["changes"], "without confirmation the day's decisions differ"
    for change in data["changes"]:
        assert change["recorded"] != change["would"]
        assert change["line"]
    # a decision confirmed later is made at once: some that were held as passing go away
    assert any(c["recorded"] == "hold:transient" for c in data["changes"])
    text = run_cli("attend", "--replay", "--with", str(path), cwd=root).stdout
    assert "would differ" in text and "nothing written" in text
    assert f"{len(data['changes'])} decisions would differ" in text
    assert _tree_digest(root) == before, "a what-if wrote to the workspace"


def test_since_compares_only_the_window(recorded_day: Day, tmp_path: Path) -> None:
    ws = nerve.open(recorded_day.root)
    settings = settings_from(
        _file(tmp_path, "attention:\n  rules:\n    confirm_s: 0\n"), ws.settings.attention()
    )
    conn = connect(recorded_day.root / "data" / "log")
    whole = what_if(conn, settings)
    middle = sorted(c.at_ns for c in whole.changes)[len(whole.changes) // 2]
    window = what_if(conn, settings, since_ns=middle)
    assert window.changes == tuple(c for c in whole.changes if c.at_ns >= middle)
    assert window.replayed == whole.replayed  # the baselines still learn from the first
    after = what_if(conn, settings, since_ns=2**62)
    assert after.same and after.recorded == (0, 0)


def test_a_file_is_laid_over_the_workspaces_settings(recorded_day: Day, tmp_path: Path) -> None:
    own = nerve.open(recorded_day.root).settings.attention()
    path = _file(tmp_path, "attention:\n  rules:\n    confirm_s: 0\n")
    laid = settings_from(path, own)
    assert laid.rules.confirm_s == 0
    assert laid.model_dump()["detector"] == own.model_dump()["detector"]


@pytest.mark.parametrize(
    ("text", "error", "words"),
    [
        ("senses: {}\n", UsageError, "no attention: settings"),
        ("attention:\n  rules:\n    confirm_s: -3\n", InvalidConfig, "what-if.yaml:3"),
        ("attention:\n  rules:\n    nope: 1\n", InvalidConfig, "nope"),
    ],
)
def test_a_bad_file_is_named(
    recorded_day: Day, tmp_path: Path, text: str, error: type[Exception], words: str
) -> None:
    own = nerve.open(recorded_day.root).settings.attention()
    with pytest.raises(error, match=words.replace(".", r"\.")):
        settings_from(_file(tmp_path, text), own)


def test_with_is_a_replay_option(recorded_day: Day, tmp_path: Path) -> None:
    path = _file(tmp_path, "attention:\n  rules:\n    confirm_s: 0\n")
    for args in (
        ["attend", "--with", str(path)],
        ["attend", "--replay", "--check", "--with", str(path)],
        ["attend", "--replay", "--since", "7d"],
    ):
        proc = run_cli(*args, cwd=recorded_day.root, check=False)
        assert proc.returncode == 2, args
        assert "--with FILE with --replay" in proc.stderr
        assert "Traceback" not in proc.stderr
    missing = run_cli(
        "attend", "--replay", "--with", str(tmp_path / "none.yaml"), cwd=recorded_day.root,
        check=False,
    )  # fmt: skip
    assert missing.returncode == 2 and "none.yaml: cannot read" in missing.stderr
