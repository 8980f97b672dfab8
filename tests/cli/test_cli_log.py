"""The log commands end to end, through the real CLI in subprocesses."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path

import pytest

from nerve.workspace import WorkspaceDir
from tests.conftest import run_cli
from tests.helpers.lines import LineReader


def cli(ws: WorkspaceDir, *args: str, **kw: object) -> object:
    return run_cli("--workspace", str(ws.root), *args, **kw)  # type: ignore[arg-type]


def test_init_refuses_to_overwrite(tmp_path: Path) -> None:
    run_cli("init", str(tmp_path / "w"))
    assert (tmp_path / "w" / "nerve.yaml").exists()
    proc = run_cli("init", str(tmp_path / "w"), check=False)
    assert proc.returncode == 2
    assert proc.stderr.startswith("UsageError: ") and "already exists" in proc.stderr


def test_emit_tail_and_query(workspace: WorkspaceDir) -> None:
    out = cli(
        workspace,
        "emit",
        "--source",
        "shell",
        "--trust",
        "FirstParty",
        "--line",
        "ls -la",
        "--payload",
        '{"cmd": "ls"}',
        "--valid-time",
        "123",
        "--json",
    ).stdout  # type: ignore[attr-defined]
    stored = json.loads(out)
    assert stored["payload"] == {"cmd": "ls"} and stored["trust"] == "FirstParty"
    assert stored["valid_time_ns"] == 123 and stored["source"] == "shell"
    tail = cli(workspace, "tail", "--json").stdout  # type: ignore[attr-defined]
    assert json.loads(tail) == stored
    q = cli(
        workspace, "query", "SELECT data->>'cmd' AS cmd, trust_name FROM events", "--json"
    ).stdout  # type: ignore[attr-defined]
    assert json.loads(q) == {"cmd": "ls", "trust_name": "FirstParty"}
    csv = cli(
        workspace, "query", "SELECT source_name, count(*) AS n FROM events GROUP BY ALL", "--csv"
    ).stdout  # type: ignore[attr-defined]
    assert csv == "source_name,n\nshell,1\n"


def test_emit_jsonl_batch_and_junk_line(workspace: WorkspaceDir, tmp_path: Path) -> None:
    batch = tmp_path / "batch.jsonl"
    batch.write_text(
        '{"source": "file_change", "line": "a"}\n\n{"source": "network", "payload": {"rx": 1}}\n'
    )
    cli(workspace, "emit", "--jsonl", str(batch))
    batch.write_text('{"source": "file_change"}\n{"source": "nope"}\n')
    proc = cli(workspace, "emit", "--jsonl", str(batch), check=False)
    assert proc.returncode == 1  # type: ignore[attr-defined]
    assert f"{batch}:2: unknown source class 'nope'" in proc.stderr  # type: ignore[attr-defined]
    proc = cli(workspace, "emit", "--jsonl", "-", input="{not json\n", check=False)
    assert "<stdin>:1: not valid JSON" in proc.stderr  # type: ignore[attr-defined]
    rows = cli(workspace, "tail", "--all", "--json").stdout.splitlines()  # type: ignore[attr-defined]
    assert len(rows) == 2  # nothing from the failed batches


def test_a_keyed_retry_says_already_stored_whatever_the_wall_clock_says(
    workspace: WorkspaceDir, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The emit's own result says the key was used before: with the wall clock set back a
    day after the first emit (the first batch's stamps now lie in the future), the retry
    still says nothing was added, and a fresh key still says stored."""
    first = cli(workspace, "emit", "-s", "shell", "-l", "ls", "--key", "k1").stdout  # type: ignore[attr-defined]
    assert first.startswith("stored observation")
    wall = time.time_ns
    monkeypatch.setattr(time, "time_ns", lambda: wall() - 86_400 * 10**9)
    again = cli(workspace, "emit", "-s", "shell", "-l", "ls", "--key", "k1")
    assert again.stderr == "already stored: 1 event under key 'k1', none added\n"  # type: ignore[attr-defined]
    assert again.stdout == first  # type: ignore[attr-defined]
    fresh = cli(workspace, "emit", "-s", "shell", "-l", "pwd", "--key", "k2")
    assert fresh.stderr == "" and fresh.stdout.startswith("stored observation")  # type: ignore[attr-defined]


def test_tail_all_json_piped_into_import_copies_the_log(
    workspace: WorkspaceDir, tmp_path: Path
) -> None:
    cli(workspace, "emit", "--source", "shell", "--line", "one")
    cli(workspace, "seal")
    cli(workspace, "emit", "--source", "network", "--payload", '{"b": [1, 2.5, "x"]}')
    (tmp_path / "blob.bin").write_bytes(bytes(range(256)))
    cli(
        workspace,
        "emit",
        "--jsonl",
        "-",
        input=json.dumps({"source": "app_focus", "payload_b64": "AAEC"}) + "\n",
    )
    dump = cli(workspace, "tail", "--all", "--json").stdout  # type: ignore[attr-defined]
    other = tmp_path / "copy"
    run_cli("init", str(other))
    run_cli("--workspace", str(other), "import", "-", input=dump)
    a = json.loads(cli(workspace, "replay", "--json").stdout)  # type: ignore[attr-defined]
    b = json.loads(run_cli("--workspace", str(other), "replay", "--verify", "--json").stdout)
    assert a["digest"] == b["digest"] and a["events"] == b["events"] == 3 and b["ok"]
    again = run_cli("--workspace", str(other), "import", "-", input=dump, check=False)
    assert (
        again.returncode == 1
        and "OrderError" in again.stderr
        and "nothing was imported" in again.stderr
    )
    # says why, in times a person reads, and what to do instead
    said = again.stderr
    assert "a log only grows at its end" in said and " UTC), not after the log's newest " in said
    assert "\nhint: import into a new workspace (nerve init DIR" in said


def test_emit_with_its_text_as_an_argument_points_at_line(workspace: WorkspaceDir) -> None:
    proc = cli(workspace, "emit", "--source", "shell", "make", "build", check=False)
    assert proc.returncode == 2 and proc.stdout == ""  # type: ignore[attr-defined]
    assert proc.stderr.splitlines() == [  # type: ignore[attr-defined]
        "UsageError: emit takes the event's text with --line, not as an argument ('make build')",
        "hint: nerve emit --source shell --line 'make build'",
    ]
    assert "stray" not in cli(workspace, "emit", "--help").stdout  # type: ignore[attr-defined]


def test_import_junk_names_the_line(workspace: WorkspaceDir) -> None:
    proc = cli(
        workspace,
        "import",
        "-",
        input='{"hlc": [1, 0], "node": "n", "kind": "observation", "source": "shell"}\n'
        '{"hlc": "soon"}\n',
        check=False,
    )
    assert proc.returncode == 1 and "<stdin>:2: " in proc.stderr  # type: ignore[attr-defined]
    proc = cli(workspace, "import", str(workspace.root / "missing.jsonl"), check=False)
    assert "no such file" in proc.stderr  # type: ignore[attr-defined]
    proc = cli(workspace, "import", str(workspace.root), check=False)
    assert f"{workspace.root}: a folder, not a file" in proc.stderr  # type: ignore[attr-defined]


def test_seal_compact_replay_and_payload(workspace: WorkspaceDir) -> None:
    for i in range(3):
        cli(workspace, "emit", "--source", "shell", "--line", f"c{i}", "--payload", f'{{"i": {i}}}')
        cli(workspace, "seal")
    before = json.loads(cli(workspace, "replay", "--json").stdout)  # type: ignore[attr-defined]
    assert "merged 3 segments into 1" in cli(workspace, "compact").stdout  # type: ignore[attr-defined]
    after = json.loads(cli(workspace, "replay", "--verify", "--json").stdout)  # type: ignore[attr-defined]
    assert after["digest"] == before["digest"] and after["ok"] and after["segments"] == 1
    row = json.loads(cli(workspace, "tail", "-n", "1", "--json").stdout)  # type: ignore[attr-defined]
    payload = cli(workspace, "payload", row["payload_cid"]).stdout  # type: ignore[attr-defined]
    assert payload == '{"i":2}'


def test_usage_errors_exit_2_and_expected_errors_have_no_traceback(workspace: WorkspaceDir) -> None:
    proc = cli(workspace, "tail", "-n", "lots", check=False)
    assert proc.returncode == 2  # type: ignore[attr-defined]
    proc = cli(workspace, "emit", "--source", "shell", "--payload", "{bad", check=False)
    assert proc.returncode == 2 and "Traceback" not in proc.stderr  # type: ignore[attr-defined]
    assert proc.stderr.startswith("UsageError: --payload is not valid JSON")  # type: ignore[attr-defined]
    proc = cli(workspace, "query", "SELECT * FROM nowhere", check=False)
    assert proc.returncode == 2 and proc.stderr.startswith("UsageError: query failed")  # type: ignore[attr-defined]


def test_a_query_syntax_error_says_where_and_hints_at_the_columns(
    workspace: WorkspaceDir,
) -> None:
    proc = cli(workspace, "query", "SELECT kind\nFROM events WHER kind = 'x'", check=False)
    message, hint = proc.stderr.splitlines()  # type: ignore[attr-defined]
    assert proc.returncode == 2 and "Traceback" not in proc.stderr  # type: ignore[attr-defined]
    assert message == (
        'UsageError: query failed: Parser Error: syntax error at or near "kind" (line 2, column 18)'
    )
    assert hint.startswith("hint: the events view's columns: ") and ", kind, " in hint
    long = "SELECT " + "kind, " * 40 + "1 FRM events"  # DuckDB shows a window of this line
    message = cli(workspace, "query", long, check=False).stderr.splitlines()[0]  # type: ignore[attr-defined]
    assert message.endswith(f'"events" (line 1, column {long.index("events") + 1})'), message


def test_conformance_command(workspace: WorkspaceDir) -> None:
    out = json.loads(cli(workspace, "conformance", "--json").stdout)  # type: ignore[attr-defined]
    assert out["ok"] and {v["vector"] for v in out["vectors"]} >= {"C1", "C2"}


def test_tail_follow_sees_events_appended_by_another_process(workspace: WorkspaceDir) -> None:
    cli(workspace, "emit", "--source", "shell", "--line", "before")
    argv = ["--workspace", str(workspace.root), "tail", "-f", "--json", "--kind", "observation"]
    follower = subprocess.Popen(
        [sys.executable, "-m", "nerve", *argv, "-n", "1"],
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
    )
    try:
        out = LineReader(follower)
        lines = out.take(1, timeout=20)  # it is running and has read the log
        for i in range(3):
            cli(workspace, "emit", "--source", "network", "--line", f"after {i}")
        lines += out.take(3, timeout=20)
    finally:
        follower.kill()
        follower.communicate()  # reaps it and closes its pipes
    got = [json.loads(line)["line"] for line in lines]
    assert got == ["before", "after 0", "after 1", "after 2"]
