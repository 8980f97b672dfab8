"""Redaction at capture, on a real log and a real daemon: what reaches the WAL is already
redacted, dropped events never reach it, and imports a rule would change are refused."""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest

from nerve.workspace import init_workspace
from tests.conftest import run_cli
from tests.daemon_util import Daemon, started, write_sense
from tests.helpers.workflows import running, write_workflow

GHP = "ghp_" + "A1b2C3d4E5" * 3 + "F6g7H8"
PRIVACY = r"""
privacy:
  rules:
    - {name: corp-host, regex: 'db\.corp\.example', source: shell}
    - {name: no-browser, action: drop, sense: browser}
  shell: {exclude: [pass]}
"""
LEAKY = """
from nerve import Result
initial_state = {"n": 0, "url": "", "seen": ""}
def compute(state):
    # "seen" is what the kernel handed back: the state as stored, redacted
    return Result(state={"n": state["n"] + 1, "url": "https://me:hunter22@host/x",
                         "seen": state["url"]})
"""


def _stored_bytes(root: Path) -> bytes:
    """Every byte nerve keeps under data/: WAL, segments, manifest, daemon log."""
    return b"".join(p.read_bytes() for p in sorted((root / "data").rglob("*")) if p.is_file())


def _jsonl(path: Path, *objects: object) -> Path:
    path.write_text("".join(json.dumps(o) + "\n" for o in objects))
    return path


def _tail(root: Path, *args: str) -> list[dict[str, object]]:
    out = run_cli("--workspace", str(root), "tail", "--all", "--json", *args).stdout
    return [json.loads(line) for line in out.splitlines()]


def test_emit_without_a_daemon_redacts_and_drops_before_the_wal(tmp_path: Path) -> None:
    ws = init_workspace(tmp_path / "ws")
    (ws.root / "nerve.yaml").write_text("senses: {}\n" + PRIVACY)
    batch = _jsonl(
        tmp_path / "in.jsonl",
        {"source": "shell", "line": f"$ export GITHUB_TOKEN={GHP}",
         "payload": {"command": f"export GITHUB_TOKEN={GHP}", "n": 1}},
        {"source": "endpoint", "subject": "browser", "line": "visited example.com"},
        {"source": "shell", "line": "$ pass show bank", "payload": {"command": "pass show bank"}},
        {"source": "endpoint", "line": "plain"},
    )  # fmt: skip
    proc = run_cli("--workspace", str(ws.root), "emit", "--jsonl", str(batch))
    assert "stored 2 events" in proc.stderr
    events = _tail(ws.root)
    assert [e["line"] for e in events] == ["$ export GITHUB_TOKEN=[redacted:github-token]", "plain"]
    assert events[0]["payload"] == {
        "_redacted": {"github-token": 1},
        "command": "export GITHUB_TOKEN=[redacted:github-token]",
        "n": 1,
    }
    stored = _stored_bytes(ws.root)
    assert GHP.encode() not in stored
    assert b"pass show bank" not in stored and b"example.com" not in stored


def test_import_a_rule_would_change_is_refused_at_its_line(tmp_path: Path) -> None:
    source = init_workspace(tmp_path / "src")
    (source.root / "nerve.yaml").write_text("privacy: {detectors: {enabled: false}}\n")
    for line in ("clean one", f"T={GHP}"):
        run_cli("--workspace", str(source.root), "emit", "--source", "shell", "--line", line)
    exported = _jsonl(tmp_path / "events.jsonl", *_tail(source.root))
    target = init_workspace(tmp_path / "dst")
    proc = run_cli("--workspace", str(target.root), "import", str(exported), check=False)
    assert proc.returncode == 1
    assert proc.stderr.startswith(
        f"PrivacyError: {exported}:2: the privacy rules would redact it (github-token ×1); "
        "an imported event keeps its id, which binds its payload, so it cannot be changed; "
        "nothing was imported\n"
    )
    assert (
        "remove or fix that event (`nerve privacy test` shows what fires), or send it with "
        "`nerve emit`, which redacts" in proc.stderr
    )
    assert _tail(target.root) == []
    first = _jsonl(tmp_path / "clean.jsonl", _tail(source.root)[0])
    run_cli("--workspace", str(target.root), "import", str(first))
    assert [e["line"] for e in _tail(target.root)] == ["clean one"]


def test_an_import_is_screened_and_its_attestations_checked_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The privacy rules and attestations of an import are checked in one place, the
    writer's ``Import.apply``: once per import, not once by the client and again there."""
    from nerve.log import attest
    from nerve.logops import import_stream
    from nerve.privacy.policy import Policy

    calls: list[str] = []
    screen, check_batch = Policy.screen, attest.check_batch
    monkeypatch.setattr(Policy, "screen", lambda *a: calls.append("screen") or screen(*a))
    monkeypatch.setattr(attest, "check_batch", lambda *a: calls.append("attest") or check_batch(*a))
    ws = init_workspace(tmp_path / "ws")
    line = {
        "hlc": [time.time_ns(), 0],
        "node": "elsewhere",
        "kind": "observation",
        "source": "shell",
    }
    with _jsonl(tmp_path / "i.jsonl", {**line, "line": "ls"}).open() as stream:
        assert import_stream(ws, stream, "i.jsonl") == 1
    assert calls == ["attest", "screen"]


def test_privacy_test_shows_what_would_be_stored(tmp_path: Path) -> None:
    ws = init_workspace(tmp_path / "ws")
    (ws.root / "nerve.yaml").write_text("senses: {}\n" + PRIVACY)
    cli = ("--workspace", str(ws.root), "privacy", "test")
    out = run_cli(*cli, f"psql -h db.corp.example TOKEN={GHP}").stdout
    assert out == (
        "psql -h [redacted:corp-host] TOKEN=[redacted:github-token]\n"
        "  corp-host ×1\n  github-token ×1\n"
    )
    assert run_cli(*cli, "pass show bank").stdout == (
        "dropped by shell.exclude: the event would not be stored\n"
    )
    assert run_cli(*cli, "--source", "endpoint", "db.corp.example").stdout == (
        "db.corp.example\n  (no rule fired)\n"
    )
    assert json.loads(run_cli(*cli, "--json", f"x {GHP}").stdout) == {
        "dropped_by": None,
        "fired": {"github-token": 1},
        "line": "x [redacted:github-token]",
        "payload": {"_redacted": {"github-token": 1}, "command": "x [redacted:github-token]"},
        "stored": True,
    }
    proc = run_cli(*cli, "--source", "nope", "x", check=False)
    assert proc.returncode == 1 and "unknown source class 'nope'" in proc.stderr


def test_privacy_detectors_lists_the_pack_and_what_is_on(tmp_path: Path) -> None:
    ws = init_workspace(tmp_path / "ws")
    (ws.root / "nerve.yaml").write_text("privacy: {detectors: {disable: [card-number]}}\n")
    out = run_cli("--workspace", str(ws.root), "privacy", "detectors", "--json").stdout
    rows = [json.loads(line) for line in out.splitlines()]
    assert [r["name"] for r in rows if not r["on"]] == ["card-number"]
    assert len(rows) == 11 and all(r["finds"] for r in rows)


def test_emit_redacts_a_secret_in_the_subject(tmp_path: Path) -> None:
    ws = init_workspace(tmp_path / "ws")
    (ws.root / "nerve.yaml").write_text("senses: {}\n")
    url = f"https://bot:{GHP}@github.com/acme/app.git"
    run_cli("--workspace", str(ws.root), "emit", "--source", "endpoint", "--subject", url,
            "--line", "pushed")  # fmt: skip
    [event] = _tail(ws.root)
    assert event["subject"] == "https://bot:[redacted:github-token]@github.com/acme/app.git"
    assert event["payload"] == {"_redacted": {"github-token": 1}}
    assert GHP.encode() not in _stored_bytes(ws.root)


def _shell_lines(d: Daemon) -> list[str]:
    return [str(e["line"]) for e in d.events("observation", "shell")]


def test_a_daemon_redacts_senses_state_and_socket_emits(tmp_path: Path) -> None:
    ws = init_workspace(tmp_path / "ws")
    hist = tmp_path / "history"
    hist.write_text("")
    write_sense(ws.root, "leaky", LEAKY)
    (ws.root / "nerve.yaml").write_text(
        "senses:\n"
        f"  shell: {{interval: 200ms, options: {{files: ['{hist}']}}}}\n"
        "  leaky: {interval: 200ms}\n" + PRIVACY
    )
    with started(ws.root) as d:
        d.wait_for(lambda: d.events("sense.state", "shell"), what="the shell sense's first look")
        with hist.open("a") as f:
            f.write(f"export GITHUB_TOKEN={GHP}\npass show bank\npsql -h db.corp.example\n")
            f.write("echo done\n")
        d.wait_for(lambda: "$ echo done" in _shell_lines(d), what="the shell commands")
        assert _shell_lines(d) == [
            "$ export GITHUB_TOKEN=[redacted:github-token]",
            "$ psql -h [redacted:corp-host]",
            "$ echo done",
        ]
        first = d.events("observation", "shell")[0]["data"]
        assert first["_redacted"] == {"github-token": 1}  # type: ignore[index]
        assert first["command"] == "export GITHUB_TOKEN=[redacted:github-token]"  # type: ignore[index]

        states = d.wait_for(lambda: d.events("sense.state", "leaky")[1:], what="2 leaky computes")
        redacted_url = "https://me:[redacted:url-password]@host/x"
        assert states[-1]["data"]["state"]["url"] == redacted_url
        assert states[-1]["data"]["state"]["seen"] == redacted_url  # memory holds the log's
        assert states[-1]["data"]["_redacted"] == {"url-password": 1}

        emitted = run_cli("--workspace", str(ws.root), "emit", "--source", "endpoint",
                          "--line", f"key {GHP}", "--json").stdout  # fmt: skip
        assert json.loads(emitted)["line"] == "key [redacted:github-token]"
        leaky_import = _jsonl(tmp_path / "i.jsonl", {
            "hlc": [2**62, 0], "node": "elsewhere", "kind": "observation", "source": "shell",
            "line": f"T={GHP}"})  # fmt: skip
        proc = run_cli("--workspace", str(ws.root), "import", str(leaky_import), check=False)
        assert proc.returncode == 1
        assert f"PrivacyError: {leaky_import}:1: the privacy rules would redact it" in proc.stderr
        wire = json.loads(leaky_import.read_text())
        reply = d.request({"type": "import", "events": [wire]})  # the daemon checks too
        assert reply["error"]["type"] == "PrivacyError"
        assert reply["error"]["message"].startswith("event 1: the privacy rules would redact")

        health = json.loads(run_cli("--workspace", str(ws.root), "status", "--json").stdout)
        assert health["privacy"]["dropped"] == 1  # pass show bank
        assert health["privacy"]["redacted"] >= 4
    stored = _stored_bytes(ws.root)
    assert GHP.encode() not in stored
    assert b"hunter22" not in stored and b"pass show bank" not in stored


BLABBING = f"""
import sys
initial_state = {{"n": 0}}
def compute(state):
    print("using token {GHP}")
    sys.stderr.write("stderr too: token {GHP}\\n")
    raise RuntimeError("token {GHP} refused")
"""


def test_a_senses_error_and_prints_reach_no_file_and_no_status_in_the_clear(
    tmp_path: Path,
) -> None:
    ws = init_workspace(tmp_path / "ws")
    write_sense(ws.root, "blab", BLABBING)
    (ws.root / "nerve.yaml").write_text("senses:\n  blab: {interval: 200ms}\n")
    with started(ws.root) as d:
        errors = d.wait_for(lambda: d.events("sense.error", "blab"), what="a sense.error")
        log = ws.root / "data" / "daemon.log"
        d.wait_for(lambda: "stderr too" in log.read_text(), what="the print in the daemon log")
        status = run_cli("--workspace", str(ws.root), "status", "--json").stdout
        text = run_cli("--workspace", str(ws.root), "status").stdout
    assert "token [redacted:github-token] refused" in errors[0]["line"]
    assert GHP not in status and GHP not in text
    assert "token [redacted:github-token] refused" in status  # last_error, redacted
    daemon_log = log.read_text()
    assert "using token [redacted:github-token]" in daemon_log
    assert GHP not in daemon_log
    assert GHP.encode() not in _stored_bytes(ws.root)


CHATTY_ROLE = f"""
import sys
from nerve.flow import END

def talk(start, messages):
    print("role has token {GHP}", flush=True)
    sys.stderr.write("and on stderr {GHP}\\n")
    return "said"

roles = {{"talk": talk}}

def moderator(context, round, max_rounds):
    return ["talk", END][round]
"""


def test_a_roles_prints_reach_the_daemon_log_redacted(tmp_path: Path) -> None:
    ws = init_workspace(tmp_path / "ws")
    write_workflow(ws.root, "chatty", CHATTY_ROLE)
    (ws.root / "nerve.yaml").write_text("senses: {}\nworkflows:\n  chatty: {}\n")
    log = ws.root / "data" / "daemon.log"
    with running(ws.root) as d:
        run = d.trigger("chatty", prompt="go")["run"]
        d.wait_status(run, "completed")
        d.wait_for(lambda: "and on stderr" in log.read_text(), what="the role's print")
    text = log.read_text()
    assert "role has token [redacted:github-token]" in text
    assert GHP not in text


FAILING_ROLE = f"""
from nerve.flow import END

def fail(start, messages):
    raise RuntimeError("refused token {GHP}")

roles = {{"fail": fail}}

def moderator(context, round, max_rounds):
    return ["fail", END][round]
"""


def test_a_roles_error_and_traceback_are_stored_redacted(tmp_path: Path) -> None:
    ws = init_workspace(tmp_path / "ws")
    write_workflow(ws.root, "failing", FAILING_ROLE)
    (ws.root / "nerve.yaml").write_text("senses: {}\nworkflows:\n  failing: {}\n")
    with running(ws.root) as d:
        run = d.trigger("failing", prompt=f"use {GHP}")["run"]
        d.wait_status(run, "failed")
        failed = d.events("workflow.status", run)[-1]
        status = run_cli("--workspace", str(ws.root), "status", "--json").stdout
    assert "refused token [redacted:github-token]" in failed["line"]
    assert GHP not in json.dumps(failed, default=str) and GHP not in status
    assert GHP.encode() not in _stored_bytes(ws.root)
