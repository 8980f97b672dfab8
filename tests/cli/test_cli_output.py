"""Rows wherever they go: --limit obeyed on pipes, --csv and --json where rows come out, a
pager only for a person at a terminal, tail --grep / --sense, and small words said right."""

from __future__ import annotations

import csv
import fcntl
import io
import json
import os
import struct
import subprocess
import sys
import termios
import time
from pathlib import Path

from nerve.api import Workspace
from nerve.mcp.access import Access, Recorder
from nerve.workspace import WorkspaceDir
from tests.conftest import run_cli
from tests.helpers.tty import run_tty


def cli(ws: WorkspaceDir, *args: str, **kw: object) -> subprocess.CompletedProcess[str]:
    return run_cli("--workspace", str(ws.root), *args, **kw)  # type: ignore[arg-type]


def _lines(ws: WorkspaceDir, count: int) -> None:
    batch = "".join(
        json.dumps({"source": "shell", "line": f"cmd {i}", "subject": "cpu" if i % 2 else ""})
        + "\n"
        for i in range(count)
    )
    cli(ws, "emit", "--jsonl", "-", input=batch)


def test_a_typed_limit_is_obeyed_on_a_pipe(workspace: WorkspaceDir) -> None:
    sql = "SELECT range AS n FROM range(1000)"
    assert cli(workspace, "query", sql, "--limit", "3").stdout == "n\n0\n1\n2\n"
    assert len(cli(workspace, "query", sql, "--limit", "3", "--json").stdout.splitlines()) == 3
    assert len(cli(workspace, "query", sql, "--csv", "--limit", "2").stdout.splitlines()) == 3
    assert len(cli(workspace, "query", sql).stdout.splitlines()) == 1001  # unset: every row
    _lines(workspace, 10)
    assert len(cli(workspace, "tail", "--limit", "2").stdout.splitlines()) == 2


def test_tail_csv_grep_and_sense(workspace: WorkspaceDir) -> None:
    _lines(workspace, 6)
    rows = list(csv.reader(io.StringIO(cli(workspace, "tail", "--csv").stdout)))
    assert rows[0] == ["time", "source", "kind", "subject", "trust", "node", "line"]
    assert [r[-1] for r in rows[1:]] == [f"cmd {i}" for i in range(6)]
    assert rows[1][0].endswith("Z")  # CSV times are UTC
    grep = cli(workspace, "tail", "--grep", "CMD 3").stdout.splitlines()
    assert [line.split("\t")[-1] for line in grep] == ["cmd 3"]
    sense = cli(workspace, "tail", "--sense", "cpu", "--json").stdout.splitlines()
    assert [json.loads(x)["line"] for x in sense] == ["cmd 1", "cmd 3", "cmd 5"]


def test_audit_access_keeps_one_row_a_line(workspace: WorkspaceDir) -> None:
    reason = "1 validation error for QueryArgs\nsql\n  Field required\n    For further information"
    Recorder(Workspace(workspace)).record(
        Access("rawclient", "0.1", "stdio", "s1", "query", {}, outcome="refused", reason=reason)
    )
    piped = cli(workspace, "audit", "access").stdout.splitlines()
    assert len(piped) == 2 and piped[1].count("\t") == piped[0].count("\t")
    assert "Field required" in piped[1]
    rows = list(csv.reader(io.StringIO(cli(workspace, "audit", "access", "--csv").stdout)))
    assert len(rows) == 2 and "Field required" in rows[1][-1]
    held = cli(workspace, "audit", "held", "--csv").stdout.splitlines()
    assert held[0].endswith(",why")


def _on_a_terminal(ws: WorkspaceDir, *args: str, env: dict[str, str]) -> str:
    """stdin and stdout on a 80×24 pseudo-terminal: a person, so the pager may engage."""
    master, slave = os.openpty()
    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 24, 80, 0, 0))
    proc = subprocess.Popen(
        [sys.executable, "-m", "nerve", "--workspace", str(ws.root), *args],
        stdin=slave, stdout=slave, stderr=subprocess.DEVNULL,
        env={**os.environ, "TERM": "xterm", "NO_COLOR": "1", **env},
    )  # fmt: skip
    os.close(slave)
    out = b""
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        try:
            chunk = os.read(master, 65536)
        except OSError:  # the child closed the terminal
            break
        if not chunk:
            break
        out += chunk
    proc.wait(timeout=60)
    os.close(master)
    return out.decode().replace("\r\n", "\n")


def test_a_pager_only_for_long_output_at_a_terminal(
    workspace: WorkspaceDir, tmp_path: Path
) -> None:
    pager = tmp_path / "pager"
    pager.write_text('#!/bin/sh\necho "paged $(wc -l) lines"\n')
    pager.chmod(0o755)
    env = {"NERVE_PAGER": str(pager)}
    long_sql, short_sql = "SELECT range AS n FROM range(60)", "SELECT 1 AS n"
    assert _on_a_terminal(workspace, "query", long_sql, env=env).strip() == "paged 62 lines"
    assert "paged" not in _on_a_terminal(workspace, "query", short_sql, env=env)
    kept = _on_a_terminal(workspace, "query", long_sql, "--no-pager", env=env)
    assert "paged" not in kept and "59" in kept
    off = _on_a_terminal(workspace, "query", long_sql, env={"NERVE_PAGER": ""})
    assert "paged" not in off and "59" in off
    text, _, _ = run_tty("--workspace", str(workspace.root), "query", long_sql, env=env)
    assert "paged" not in text  # stdin is not a terminal: nobody to page for
    assert "paged" not in cli(workspace, "query", long_sql, env=env).stdout


def test_small_words(workspace: WorkspaceDir, tmp_path: Path) -> None:
    one = cli(workspace, "emit", "-s", "shell", "-l", "ls").stdout.split()
    assert one[:4] == ["stored", "observation", "hlc", one[3]] and one[4] == "id"
    batch = tmp_path / "b.jsonl"
    batch.write_text('{"source": "shell", "line": "a"}\n')
    assert cli(workspace, "emit", "--jsonl", str(batch), "--key", "k").stderr == "stored 1 event\n"
    again = cli(workspace, "emit", "--jsonl", str(batch), "--key", "k").stderr
    assert again == "already stored: 1 event under key 'k', none added\n"
    line = cli(workspace, "tail", "--json", "-n", "1").stdout
    other = tmp_path / "other"
    cli(workspace, "init", str(other))
    assert run_cli("-w", str(other), "import", "-", input=line).stderr == "imported 1 event\n"
    cli(workspace, "emit", "-s", "vendor:1024", "--kind", "sense.state", "--subject", "cpu",
        "-p", '{"state": {"note": null}}')  # fmt: skip
    assert cli(workspace, "sense", "state", "cpu").stdout == "cpu holds no state (note: empty)\n"
    typo = cli(workspace, "sense", "state", "cpuu", check=False)
    assert typo.returncode == 2 and typo.stderr.startswith(
        "UsageError: no stored state for sense 'cpuu'; did you mean 'cpu'?\n"
    )
    names = cli(workspace, "query", "SELECT DISTINCT source_name FROM events ORDER BY 1").stdout
    assert names.split() == ["source_name", "nerve", "shell"]


def test_forget_names_nerves_own_source_nerve(workspace: WorkspaceDir) -> None:
    cli(workspace, "emit", "-s", "vendor:1024", "--kind", "note", "-l", "secret a", "-q")
    cli(workspace, "emit", "-s", "shell", "-l", "secret b", "-q")
    said = cli(workspace, "forget", "--match", "secret").stdout
    assert "shell 1, nerve 1" in said and "vendor:1024" not in said
