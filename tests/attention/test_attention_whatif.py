"""What-if on the recorded day: ``nerve attend --replay --with FILE [--since …]`` attends to
the log again under other settings, lists what would differ, and writes nothing."""

from __future__ import annotations

import hashlib
import json
import random
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

import nerve
from nerve.attention import values as values_module
from nerve.attention.service import Attender, Obs, read_observations, readings_and_facts
from nerve.attention.settings import AttentionConfig
from nerve.attention.whatif import settings_from, what_if
from nerve.canonical import canonical_json
from nerve.chain import Keyring
from nerve.clock import Hlc
from nerve.config.issues import InvalidConfig
from nerve.errors import UsageError
from nerve.events import Event, SourceClass, Trust
from nerve.query import connect
from tests.attention.test_attention_service import make_workspace
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
# tuning days changed them), and reading lines that could fire novelty.
RECORDED_RULES = {
    "explain": False,
    "crossings": False,
    "drift_hold_s": 0,
    "floors": {"processes.top_cpu_permille": 500, "shell.failure_streak": 0},
    "persist": {"network.down_kib_per_s": 0, "network.up_kib_per_s": 0},
    "drift_rates": {"disk.free_mib": 240},
    "reading_novelty": True,
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
        ["attend", "--replay", "--recompute", "--with", str(path)],
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


# -- the replay's own path against the daemon's ---------------------------------------------

T0 = 1_767_225_600_000_000_000  # a Thursday, 00:00 UTC
S = 1_000_000_000


def _machine(hours: int = 8) -> list[Event]:
    """A machine's observations every 10 s: a noisy CPU with a hog for ten minutes, memory
    that leaks for an hour, free disk that falls, network counters mostly at rest (a port
    opened for a while), and a command that fails now and then."""
    rng, out = random.Random(7), []

    def add(t: int, sense: str, source: SourceClass, **readings: int) -> None:
        payload = json.dumps({"readings": readings}, sort_keys=True).encode()
        line = f"{sense} {sorted(readings.items())}"
        event = Event(Hlc(t, len(out)), "m", "observation", sense, int(source),
                      Trust.FIRST_PARTY, None, payload, line)  # fmt: skip
        out.append(event)

    free = 80_000
    for k in range(hours * 360):
        t, hour = T0 + k * 10 * S, k // 360
        hog, leak = 720 <= k < 780, 1080 <= k < 1440
        add(t, "cpu", SourceClass.ENDPOINT, busy_permille=rng.randint(900, 990) if hog
            else rng.randint(20, 60 + 40 * (hour % 3)))  # fmt: skip
        add(t, "memory", SourceClass.ENDPOINT, used_mib=4200 + rng.randint(0, 5)
            + (k - 1080) * 3 * leak)  # fmt: skip
        free -= rng.randint(0, 2)
        add(t, "disk", SourceClass.ENDPOINT, **{"free_mib:/": free})
        add(t, "network", SourceClass.NETWORK, errors=0, listening_ports=14 + (1500 <= k < 1560),
            down_kib_per_s=rng.randint(0, 4))  # fmt: skip
        if k % 37 == 0:
            add(t, "shell", SourceClass.SHELL, failure_streak=int(rng.random() < 0.3))
    return out


def _one_at_a_time(events: list[Event], settings: AttentionConfig) -> Attender:
    """The daemon's attender: each observation attended as it is committed."""
    att = Attender(settings, None)
    for e in events:
        assert e.payload is not None
        obs = Obs(e.id, e.source, e.trust, e.hlc.physical_ns, e.hlc.logical, e.line,
                  e.subject, *readings_and_facts(e.payload))  # fmt: skip
        att.observe([obs])
    return att


@pytest.mark.parametrize("change", [{}, {"rules": {"confirm_s": 0}}])
def test_the_replay_decides_as_the_daemon_does(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, change: dict[str, Any]
) -> None:
    """The what-if's path (the log read at once, the value probes stepped probe by probe,
    a reading at rest counted rather than stepped) makes every decision the daemon's path
    makes, field for field."""
    events = _machine()
    ws = make_workspace(tmp_path / "ws", events, "")
    settings = AttentionConfig.model_validate(change)
    repeats = []
    counted = values_module._rest
    monkeypatch.setattr(values_module, "_rest", lambda *a: repeats.append(a[-1]) or counted(*a))
    att = Attender(settings, None)
    att.observe(read_observations(connect(ws.log_root)))
    assert sum(repeats) > len(events) // 2, "readings at rest are counted, not stepped"
    daemon = _one_at_a_time(events, settings)
    outcomes = Counter(d["outcome"] for d in daemon.decisions)
    assert outcomes["surface"] and len(outcomes) > 1, outcomes
    assert att.decisions == daemon.decisions
    assert canonical_json(att.snapshot()) == canonical_json(daemon.snapshot())


def test_a_log_the_daemon_attended_replays_the_same(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Decisions sealed one observation at a time, as the daemon seals them, are what the
    what-if makes again under the same settings: nothing differs."""
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "state"))
    events = _machine(4)
    ws = make_workspace(tmp_path / "ws", events, "")
    settings = AttentionConfig()
    att = Attender(settings, Keyring.ephemeral(bytes(32)))
    with ws.open_log() as log:
        for obs in read_observations(connect(ws.log_root)):
            att.observe([obs])
            log.append_drafts(att.take())
    result = what_if(connect(ws.log_root), settings)
    assert result.same and result.recorded == result.would
    assert sum(result.recorded) == len(att.decisions) > 0
