"""Log text never drives the terminal: every command that shows it, piped or on a terminal,
writes control characters, C1 controls and bidi overrides as visible escapes; ``--json``
keeps the text exact, ``--csv`` too but for a leading ``'`` on a cell that would be a
formula."""

from __future__ import annotations

import csv
import dataclasses
import io
import json
import re
import subprocess
from pathlib import Path

import pytest

from nerve.workspace import WorkspaceDir, init_workspace
from tests.attention.test_attention_service import make_workspace, stream
from tests.conftest import run_cli
from tests.daemon_util import started, write_sense
from tests.helpers.terminal import drawn

TITLE = "title \x1b]0;pwned\x07 [bold]x[/bold] \x1b]52;c;cHduZWQ=\x07 end"
SCREEN = "sub\x1b[2J\x1b[1;1H"
CSI = "red \x9b31m bidi \u202eevil\u202c \u2066iso\u2069 \u200fmark"
HIDDEN = "safe\rHIDDEN \x1bP1$q\x1b\\ \x1b_apc\x1b\\ \x1b^pm\x1b\\ \x7f"
HOSTILE = [TITLE, SCREEN, CSI, HIDDEN]
SPOOF = "\nverified_through_here  yes"  # a line that would read as one of a link's fields
# What a terminal acts on: C0 but tab and newline, DEL, C1, bidi controls.
DRIVES = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]")
STYLE = re.compile("\x1b\\[[0-9;]*m")  # rich's own styling on a terminal (bold, dim)


def cli(
    ws: WorkspaceDir, *args: str, check: bool = True, input: str | None = None
) -> subprocess.CompletedProcess[str]:
    return run_cli("--workspace", str(ws.root), *args, check=check, input=input)


def assert_inert(*texts: str) -> None:
    """Nothing a terminal would act on, and the hostile text still there to read."""
    for text in texts:
        found = DRIVES.search(text)
        assert found is None, f"{found.group()!r} reaches the terminal in {text!r}"


def _emit(ws: WorkspaceDir) -> None:
    batch = [
        {"source": "shell", "line": TITLE, "subject": SCREEN, "payload": {"t": TITLE}},
        {"source": "shell", "line": CSI, "subject": "=cmd|' /C calc'!A0", "payload": {}},
        {"source": "shell", "line": HIDDEN, "payload": {"exit": 2, "cmd": HIDDEN}},
        {"source": "shell", "line": f"make {TITLE}", "payload": {"exit": 2, "cmd": TITLE}},
    ]
    cli(ws, "emit", "--jsonl", "-", input="".join(json.dumps(e) + "\n" for e in batch))


@pytest.fixture
def hostile(workspace: WorkspaceDir) -> WorkspaceDir:
    _emit(workspace)
    return workspace


def on_terminal(monkeypatch: pytest.MonkeyPatch, ws: WorkspaceDir, *args: str) -> str:
    """What ``nerve ARGS`` draws on an 200-column stand-in terminal, and says on stderr,
    without rich's own bold and dim."""
    text = drawn(monkeypatch, 200, 50, "--workspace", str(ws.root), *args)
    return STYLE.sub("", text)


def test_tail_piped_and_on_a_terminal(
    hostile: WorkspaceDir, monkeypatch: pytest.MonkeyPatch
) -> None:
    piped = cli(hostile, "tail")
    assert_inert(piped.stdout, piped.stderr)
    assert "title \\x1b]0;pwned\\x07 [bold]x[/bold]" in piped.stdout
    assert "sub\\x1b[2J" in piped.stdout and "\\u202eevil" in piped.stdout
    assert "safe\\rHIDDEN" in piped.stdout and len(piped.stdout.splitlines()) == 4
    term = on_terminal(monkeypatch, hostile, "tail")
    assert_inert(term)
    assert "[bold]x[/bold]" in term and "\\x9b31m" in term


def test_tail_json_keeps_the_exact_text(hostile: WorkspaceDir) -> None:
    out = cli(hostile, "tail", "--json").stdout
    assert "\x1b" not in out  # JSON escapes C0 itself
    events = [json.loads(line) for line in out.splitlines()]
    shell = [e for e in events if e["source"] == "shell"]
    assert [e["line"] for e in shell] == [TITLE, CSI, HIDDEN, f"make {TITLE}"]
    assert shell[0]["subject"] == SCREEN and shell[0]["payload"] == {"t": TITLE}


def test_tail_and_query_csv_are_exact_but_for_formulas(hostile: WorkspaceDir) -> None:
    rows = list(csv.reader(io.StringIO(cli(hostile, "tail", "--csv").stdout)))
    assert [r[-1] for r in rows[1:]] == [TITLE, CSI, HIDDEN, f"make {TITLE}"]
    assert rows[2][3] == "'=cmd|' /C calc'!A0"
    sql = (
        "SELECT line, subject, -1 AS n FROM events WHERE source_name = 'shell' ORDER BY physical_ns"
    )
    rows = list(csv.reader(io.StringIO(cli(hostile, "query", sql, "--csv").stdout)))
    assert rows[1] == [TITLE, SCREEN, "-1"]  # a number is no formula
    assert rows[2] == [CSI, "'=cmd|' /C calc'!A0", "-1"]
    tabbed = cli(hostile, "query", "SELECT '\tx' AS a, '\r=1' AS b, '@x' AS c", "--csv").stdout
    assert tabbed.split("\n")[1] == "'\tx,\"'\r=1\",'@x"


def test_query_table_piped_and_on_a_terminal(
    hostile: WorkspaceDir, monkeypatch: pytest.MonkeyPatch
) -> None:
    sql = "SELECT line, subject, payload::VARCHAR AS p FROM events WHERE source_name = 'shell'"
    piped = cli(hostile, "query", sql)
    assert_inert(piped.stdout, piped.stderr)
    assert "\\x1b]52;c;cHduZWQ=\\x07" in piped.stdout
    term = on_terminal(monkeypatch, hostile, "query", sql)
    assert_inert(term)
    assert "[bold]x[/bold]" in term and "sub\\x1b[2J" in term
    named = on_terminal(monkeypatch, hostile, "query", 'SELECT 1 AS "\x1b]0;col\x07"')
    assert_inert(named)  # a column's name is shown safe too
    exact = [json.loads(x) for x in cli(hostile, "query", sql, "--json").stdout.splitlines()]
    assert [r["line"] for r in exact] == [TITLE, CSI, HIDDEN, f"make {TITLE}"]


def test_ask_quotes_the_log_safely(hostile: WorkspaceDir, monkeypatch: pytest.MonkeyPatch) -> None:
    question = "what did I run in the last hour?"
    piped = cli(hostile, "ask", question)
    assert_inert(piped.stdout, piped.stderr)
    assert "title \\x1b]0;pwned\\x07" in piped.stdout
    assert_inert(on_terminal(monkeypatch, hostile, "ask", question))
    answer = json.loads(cli(hostile, "ask", question, "--json").stdout)
    assert f"make {TITLE}" in answer["answer"]


def test_an_error_quoting_log_text_is_shown_safe(hostile: WorkspaceDir) -> None:
    failed = cli(hostile, "query", "SELECT line::INTEGER FROM events", check=False)
    assert failed.returncode == 2 and "pwned" in failed.stderr
    assert_inert(failed.stdout, failed.stderr)


def test_audit_held_and_show(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "verifier-state"))
    events = [
        dataclasses.replace(e, line=f"{e.line} {HOSTILE[i % 4]}{SPOOF}")
        for i, e in enumerate(stream())
    ]
    ws = make_workspace(tmp_path / "ws", events)
    cli(ws, "attend", "--replay")
    held = cli(ws, "audit", "held")
    assert_inert(held.stdout, held.stderr)
    assert "\\x1b" in held.stdout
    assert_inert(on_terminal(monkeypatch, ws, "audit", "held"))
    exact = [json.loads(x) for x in cli(ws, "audit", "held", "--json").stdout.splitlines()]
    assert any(h["source_line"].endswith(tuple(h + SPOOF for h in HOSTILE)) for h in exact)
    seq = str(exact[0]["chain_seq"])
    show = cli(ws, "audit", "show", seq)
    assert_inert(show.stdout, show.stderr)
    assert "source_line" in show.stdout and "\\x" in show.stdout
    spoofed = [x for x in show.stdout.splitlines() if x.startswith("verified_through_here")]
    assert len(spoofed) == 1  # a newline in the source line cannot forge a field
    link = json.loads(cli(ws, "audit", "show", seq, "--json").stdout)
    assert link["source_line"] == exact[0]["source_line"]


SENSE = f"""
from nerve import Observation, Result
initial_state = {{"n": 0}}
CALLS = [0]
def compute(state):
    CALLS[0] += 1
    n = state["n"] + 1
    if CALLS[0] % 2 == 0:
        raise RuntimeError({TITLE + " " + CSI!r})
    return Result(
        state={{"n": n, "seen": {HIDDEN!r}}},
        observations=[Observation(source="endpoint", line={SCREEN + " " + TITLE!r})],
    )
"""


def test_a_sense_that_sees_hostile_text(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """status, logs and sense history/state over a real daemon whose sense's results and
    errors carry escape sequences."""
    ws = init_workspace(tmp_path / "ws")
    write_sense(ws.root, "snoop", SENSE)
    (ws.root / "nerve.yaml").write_text("senses:\n  snoop: {interval: 200ms}\n")
    with started(ws.root) as daemon:
        daemon.wait_for(lambda: daemon.events("sense.error", "snoop"), what="a sense error")
        daemon.wait_for(lambda: len(daemon.events("sense.state", "snoop")) >= 2, what="states")
        status = cli(ws, "status")
        assert_inert(status.stdout, status.stderr)
        assert "snoop" in status.stdout and "\\x1b]0;pwned" in status.stdout
        assert_inert(on_terminal(monkeypatch, ws, "status"))
        logs = cli(ws, "logs", "-n", "200")
        assert_inert(logs.stdout, logs.stderr)
    history = cli(ws, "sense", "history", "snoop")
    assert_inert(history.stdout, history.stderr)
    assert "\\x1b[2J" in history.stdout and "pwned" in history.stdout
    assert_inert(on_terminal(monkeypatch, ws, "sense", "history", "snoop"))
    state = cli(ws, "sense", "state", "snoop")
    assert_inert(state.stdout, state.stderr)
    assert json.loads(cli(ws, "sense", "state", "snoop", "--json").stdout)["seen"] == HIDDEN
    lines = [
        json.loads(x) for x in cli(ws, "sense", "history", "snoop", "--json").stdout.splitlines()
    ]
    assert any(TITLE in (r["line"] or "") for r in lines)  # exact, as stored
