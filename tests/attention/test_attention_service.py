"""Attention over a real log: replay, check, the salience projection, audit and the daemon."""

from __future__ import annotations

import dataclasses
import json
import os
import signal
import sys
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from nerve.attention.observer import Observer
from nerve.attention.service import DECISION_FIELDS
from nerve.clock import Hlc
from nerve.events import Event, SourceClass, Trust
from nerve.log.drafts import Draft
from nerve.log.reader import snapshot
from nerve.query import projection_digest
from nerve.workspace import WorkspaceDir, init_workspace
from tests.conftest import run_cli
from tests.daemon_util import Daemon, write_sense

T0 = 1_700_000_000_000_000_000
ATTENTION = """
attention:
  window: 16
  detector: {warmup: 4, debounce: 3, k_milli: 2000}
  gate: {budget_capacity_uj: 600000, refill_uj_per_s: 1000}
  chain: {checkpoint_every: 4}
"""


def stream(count: int = 400) -> list[Event]:
    """Steady shell activity broken by bursts of rarer, less trusted sources."""
    events = []
    for i in range(count):
        phase = i % 50
        if phase < 40:
            src, trust = SourceClass.SHELL, Trust.FIRST_PARTY
        elif phase < 45:
            src, trust = SourceClass.ENDPOINT, Trust.UNTRUSTED
        else:
            src, trust = SourceClass.NETWORK, Trust.INFERRED
        events.append(
            Event(
                hlc=Hlc(T0 + i * 2_000_000_000, 0),
                node="n",
                kind="observation",
                source=int(src),
                trust=trust,
                line=f"obs {i} {src.name.lower()}",
                payload={"i": i},
            )
        )
    return events


def make_workspace(root: Path, events: list[Event], attention: str = ATTENTION) -> WorkspaceDir:
    """A workspace whose log holds ``events``, imported in one batch."""
    workspace = init_workspace(root)
    (workspace.root / "nerve.yaml").write_text("senses: {}\n" + attention)
    with WorkspaceDir(workspace.root).open_log() as log:
        log.import_events(events)
    return WorkspaceDir(workspace.root)


@pytest.fixture
def ws(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> WorkspaceDir:
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "verifier-state"))
    return make_workspace(tmp_path / "ws", stream())


def cli(ws: WorkspaceDir, *args: str, check: bool = True, **kw: object) -> object:
    return run_cli("--workspace", str(ws.root), *args, check=check, **kw)  # type: ignore[arg-type]


def jcli(ws: WorkspaceDir, *args: str) -> dict[str, object]:
    return json.loads(cli(ws, *args, "--json").stdout)  # type: ignore[attr-defined]


def test_replay_is_idempotent_and_recompute_gives_the_same(ws: WorkspaceDir) -> None:
    first = jcli(ws, "attend", "--replay")
    assert first["observed"] == 400 and first["decisions"] > 3
    assert jcli(ws, "attend", "--replay") == {"appended": 0, "decisions": 0, "observed": 0}
    assert jcli(ws, "attend", "--recompute")["ok"] is True
    budget = (
        ws.connect().execute("SELECT outcome, budget_after_uj FROM attention_budget").fetchall()
    )
    outcomes = Counter(o for o, _ in budget)
    assert outcomes["surface"] and (outcomes["hold:budget"] or outcomes["hold:value"])
    assert all(b >= 0 for _, b in budget)
    assert jcli(ws, "replay", "--verify")["ok"] is True


def test_check_is_the_hidden_old_name_of_recompute(ws: WorkspaceDir) -> None:
    cli(ws, "attend", "--replay")
    new = cli(ws, "attend", "--recompute").stdout  # type: ignore[attr-defined]
    assert new.startswith("recompute ok: ") and new.endswith(" all equal to the log's\n")
    assert cli(ws, "attend", "--check").stdout == new  # type: ignore[attr-defined]
    shown = cli(ws, "attend", "--help", env={"COLUMNS": "200"}).stdout  # type: ignore[attr-defined]
    assert "--recompute" in shown and "--check" not in shown


def _recorded_decisions(ws: WorkspaceDir) -> list[dict[str, Any]]:
    rows = ws.connect().execute(
        "SELECT payload FROM events WHERE kind = 'attention.decision' ORDER BY physical_ns, logical"
    )
    return [json.loads(bytes(row[0])) for row in rows.fetchall()]


def test_recompute_names_the_first_difference(ws: WorkspaceDir, tmp_path: Path) -> None:
    stricter = ATTENTION.replace("k_milli: 2000", "k_milli: 2600")
    cli(ws, "attend", "--replay")
    # What the stricter detector decides, recorded by a replay of its own in another log
    other = make_workspace(tmp_path / "other", stream(), stricter)
    cli(other, "attend", "--replay")
    recorded, computed = _recorded_decisions(ws), _recorded_decisions(other)
    fields = (*DECISION_FIELDS, "highlight")
    index = next(
        i
        for i, (a, b) in enumerate(zip(recorded, computed, strict=False))
        if any(a[f] != b[f] for f in fields)
    )
    (ws.root / "nerve.yaml").write_text("senses: {}\n" + stricter)
    proc = cli(ws, "attend", "--recompute", "--json", check=False)
    assert proc.returncode == 1  # type: ignore[attr-defined]
    diff = json.loads(proc.stdout)["difference"]  # type: ignore[attr-defined]
    field = diff["field"]
    assert (diff["index"], diff["source_event"]) == (index, recorded[index]["source_event"])
    assert field in fields and recorded[index][field] != computed[index][field]
    assert (diff["recorded"], diff["computed"]) == (recorded[index][field], computed[index][field])


def test_salience_projection_equals_the_observer(ws: WorkspaceDir, tmp_path: Path) -> None:
    conn = ws.connect()
    rows = conn.execute(
        "SELECT salience_milli, novelty_milli, uncertainty_milli FROM salience"
    ).fetchall()
    observer = Observer(16)
    expected = [tuple(observer.observe(e.source, int(e.trust)).milli().values()) for e in stream()]
    assert rows == expected
    count, digest = projection_digest(conn, "salience")
    assert count == 400
    # The same events split over two segments give the same digest; one re-tagged event
    # gives another.
    events = stream()
    split = make_workspace(tmp_path / "split", events[:150])
    with split.open_log() as log:
        log.seal()
        log.import_events(events[150:])
    assert len(snapshot(split.log_root).segments) == 1  # one sealed, the rest in the tail
    assert projection_digest(WorkspaceDir(split.root).connect(), "salience") == (count, digest)
    retagged = events[:]
    retagged[10] = dataclasses.replace(retagged[10], trust=Trust.UNTRUSTED)
    changed = make_workspace(tmp_path / "changed", retagged)
    assert projection_digest(changed.connect(), "salience")[1] != digest


def test_audit_verify_export_and_tampering(ws: WorkspaceDir, tmp_path: Path) -> None:
    cli(ws, "attend", "--replay")
    ok = jcli(ws, "audit", "verify")
    assert ok["ok"] is True and ok["links"] > 5 and ok["trust_recorded"] is True
    assert not any(
        str(p).startswith(str(ws.data)) for p in (tmp_path / "verifier-state").rglob("*")
    )
    bundle = tmp_path / "audit.json"
    cli(ws, "audit", "export", "--out", str(bundle))
    data = json.loads(bundle.read_text())
    other = {"XDG_STATE_HOME": str(tmp_path / "elsewhere")}
    proc = run_cli("audit", "verify", str(bundle), "--key", data["public_key"], "--json", env=other)
    assert json.loads(proc.stdout)["ok"] is True
    proc = run_cli("audit", "verify", str(bundle), "--key", "ab" * 32, check=False, env=other)
    assert proc.returncode == 15  # unknown key

    def verdict(links: list[str], env: dict[str, str]) -> tuple[int, dict[str, object]]:
        bad = tmp_path / "bad.json"
        bad.write_text(json.dumps({**data, "links": links}))
        p = run_cli("audit", "verify", str(bad), "--json", "--no-record", check=False, env=env)
        return p.returncode, json.loads(p.stdout)["break"]

    links = list(data["links"])
    middle = len(links) // 2
    code, brk = verdict(links[:middle] + links[middle + 1 :], other)
    assert (code, brk["seq"], brk["kind"]) == (11, middle, "excised")
    swapped = links[:]
    swapped[2], swapped[3] = swapped[3], swapped[2]
    assert verdict(swapped, other)[1]["seq"] == 2
    code, brk = verdict(links[:-3], other)
    assert code == 18 and brk["kind"] == "truncated"


def test_fresh_genesis_is_caught(ws: WorkspaceDir, tmp_path: Path) -> None:
    cli(ws, "attend", "--replay")
    key = jcli(ws, "audit", "show", "0")["key"]
    bundle = tmp_path / "b1.json"
    cli(ws, "audit", "export", "--out", str(bundle))
    assert run_cli("audit", "verify", str(bundle), "--key", str(key)).returncode == 0
    clone = init_workspace(tmp_path / "clone")
    (clone.root / "nerve.yaml").write_text((ws.root / "nerve.yaml").read_text())
    (clone.root / "data" / "keys").mkdir(parents=True)
    for path in (ws.data / "keys").iterdir():  # same key, new log: a fresh genesis
        target = clone.root / "data" / "keys" / path.name
        target.write_bytes(path.read_bytes())
        target.chmod(0o600)
    with WorkspaceDir(clone.root).open_log() as log:
        log.import_events(stream(120))
    cli(WorkspaceDir(clone.root), "attend", "--replay")
    bundle2 = tmp_path / "b2.json"
    cli(WorkspaceDir(clone.root), "audit", "export", "--out", str(bundle2))
    proc = run_cli("audit", "verify", str(bundle2), "--key", str(key), "--json", check=False)
    assert proc.returncode == 21 and json.loads(proc.stdout)["break"]["kind"] == "fresh-genesis"


def test_held_show_and_key_rotation(ws: WorkspaceDir) -> None:
    cli(ws, "attend", "--replay")
    held = [json.loads(x) for x in cli(ws, "audit", "held", "--json").stdout.splitlines()]  # type: ignore[attr-defined]
    assert held and all(h["outcome"].startswith("hold:") for h in held)
    first = held[0]
    assert {"value_milli", "cost_milli", "budget_after_uj", "source_event", "source_line"} <= set(
        first
    )
    link = jcli(ws, "audit", "show", str(first["chain_seq"]))
    assert link["kind"] == "decision" and link["decision"] == first["outcome"]
    assert link["source_line"] == first["source_line"] and link["verified_through_here"] is True
    assert "epoch 1" in cli(ws, "audit", "rotate-key").stdout  # type: ignore[attr-defined]
    with ws.open_log() as log:
        log.append_drafts(
            [
                Draft.of(
                    "observation",
                    source=int(SourceClass.ENDPOINT),
                    trust=Trust.UNTRUSTED,
                    line=f"late {i}",
                )
                for i in range(40)
            ]
        )
    cli(ws, "attend", "--replay")
    report = jcli(ws, "audit", "verify")
    assert report["ok"] is True and report["epoch"] == 1
    keys = sorted((ws.data / "keys").iterdir())
    assert keys and all(oct(p.stat().st_mode & 0o777) == "0o600" for p in keys if p.is_file())


BURSTY = """
from nerve import Observation, Result
initial_state = {"n": 0}
def compute(state):
    n = state["n"] + 1
    src = "shell" if n % 30 < 25 else "endpoint"
    trust = "FirstParty" if n % 30 < 25 else "Untrusted"
    obs = Observation(source=src, trust=trust, line=f"obs {n}")
    return Result(state={"n": n}, observations=[obs])
"""
NOTIFY = """
import os, sys
with open(sys.argv[1], "a") as f:
    f.write(os.environ["NERVE_DECISION"] + "\\n")
"""


def test_daemon_attends_notifies_and_resumes_after_kill_9(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "verifier-state"))
    root = init_workspace(tmp_path / "live").root
    write_sense(root, "bursty", BURSTY)
    script, out = tmp_path / "notify.py", tmp_path / "notified.jsonl"
    script.write_text(NOTIFY)
    (root / "nerve.yaml").write_text(
        "senses:\n  bursty: {interval: 20ms}\n"
        + ATTENTION.replace(
            "chain: {checkpoint_every: 4}",
            "chain: {checkpoint_every: 4}\n"
            f"  notify: {{command: [{sys.executable}, {script}, {out}], desktop: off}}",
        )
    )
    daemon = Daemon(root)
    daemon.start()
    try:
        daemon.wait_for(
            lambda: len(daemon.events("attention.decision")) >= 3, timeout=40, what="decisions"
        )
        daemon.wait_for(out.exists, what="a notification")
        os.kill(daemon.pid(), signal.SIGKILL)
        daemon.start()
        before = len(daemon.events("attention.decision"))
        daemon.wait_for(
            lambda: len(daemon.events("attention.decision")) > before + 1,
            timeout=40,
            what="decisions after restart",
        )
    finally:
        daemon.stop()
    decisions = daemon.events("attention.decision")
    keys = Counter((d["data"]["source_event"], d["data"]["probe"]) for d in decisions)
    assert max(keys.values()) == 1, "a decision was sealed twice"
    notified = [json.loads(x) for x in out.read_text().splitlines()]
    assert notified and all(n["outcome"] == "surface" for n in notified)
    first = next(d["data"] for d in decisions if d["data"]["outcome"] == "surface")
    said = (root / "data" / "daemon.log").read_text()  # the dev view's feed announces it
    assert f"surfaced {first['probe']}: {first['source_line']}" in said
    ws = WorkspaceDir(root)
    assert jcli(ws, "attend", "--recompute")["ok"] is True
    assert jcli(ws, "audit", "verify")["ok"] is True
    assert jcli(ws, "replay", "--verify")["ok"] is True
