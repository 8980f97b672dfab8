"""Narrow terminals (80 and 60 columns): `tail` keeps a command's `[exit N]` and the time,
cutting the middle of the command instead; `status` and `sense list` fit the width; a
terminal that reports no width is taken as 80 columns, not as none."""

from __future__ import annotations

import fcntl
import io
import os
import pty
import re
import struct
import sys
import termios
from pathlib import Path

import pytest

from nerve.cli.daemon_cmds import status_lines
from nerve.cli.main import run
from nerve.cli.tail_cmd import fit_line
from nerve.workspace import init_workspace
from tests.conftest import run_cli
from tests.helpers.terminal import drawn

COMMAND = "pytest -q tests/runtime/test_senses_builtin.py -k 'processes and not slow' -x"
TIME = re.compile(r"\b\d\d:\d\d:\d\d")
HEALTH = {
    "pid": 4242, "uptime_s": 3723.4, "events": 1_234_567, "commits": 23_456, "segments": 310,
    "tail_rows": 53_120, "senses": 9, "groups": {"system": {}}, "capture": {"paused": False},
    "warming": True,
    "sense_results": [
        {"name": "focus", "computes": 10, "errors": 0, "last_result": "",
         "unavailable": "no X display (headless)"},
        {"name": "temperature-of-the-north-rack", "computes": 120, "errors": 2,
         "last_result": "rack inlet 24.5 °C", "last_result_ns": 1,
         "last_error": "compute exceeded its 300 ms timeout; the worker was restarted"},
    ],
}  # fmt: skip


@pytest.fixture
def shell_ws(tmp_path: Path) -> Path:
    root = init_workspace(tmp_path / "ws").root
    ws = ("--workspace", str(root), "emit", "-q", "--source", "shell", "--subject", "shell")
    run_cli(*ws, "--line", f"{COMMAND} [exit 12]")
    run_cli(*ws, "--line", "ls")
    return root


@pytest.mark.parametrize("width", [60, 80])
def test_tail_keeps_the_exit_code_and_the_time(
    shell_ws: Path, monkeypatch: pytest.MonkeyPatch, width: int
) -> None:
    lines = drawn(monkeypatch, width, 24, "-w", str(shell_ws), "tail").splitlines()
    assert len(lines) == 2 and all(len(line) <= width for line in lines)
    failed = lines[0]
    assert TIME.search(failed) and failed.endswith(" [exit 12]"), failed
    assert "pytest -q" in failed and "…" in failed  # the middle of the command is what goes


def test_a_line_is_cut_in_the_middle_before_its_tag() -> None:
    line = f"{COMMAND} [exit 12]"
    assert fit_line(line, len(line)) == line
    cut = fit_line(line, 40)
    assert len(cut) == 40 and cut.startswith("pytest -q tests/") and cut.endswith("-x [exit 12]")
    assert fit_line("process started python3 -m pytest tests [18288]", 30).endswith(" [18288]")
    assert fit_line("a plain line that is long enough to be cut", 20) == "a plain line that…"
    port = "port 127.0.0.1:51059 closed (was held by nats-server [12173])"
    assert fit_line(port, 32) == "port 127.0.0.1:51059 closed…"  # not "closed (wa…"


@pytest.mark.parametrize("width", [60, 80])
def test_status_fits_the_terminal(width: int) -> None:
    lines = status_lines(HEALTH, width)
    assert all(len(line) <= width for line in lines), "\n".join(lines)
    assert any("unavailable: no X" in line for line in lines)
    assert " ".join(" ".join(lines).split()).count("warming up") == 1  # wrapped, not cut


def test_status_at_80_columns_keeps_the_computes_and_puts_an_error_under_its_row() -> None:
    lines = status_lines(HEALTH, 80)
    table = lines[lines.index("") + 1 :]
    assert table[0].split() == ["sense", "computes", "errors", "last"], "\n".join(lines)
    assert table[2].split()[:3] == ["temperature-of-the-north-rack", "120", "2"]
    error = HEALTH["sense_results"][1]["last_error"]  # type: ignore[index]
    assert table[3] == f"  error: {error}" and all(len(line) <= 80 for line in lines)


PORT = "port 127.0.0.1:51059 closed (was held by nats-server [12173])"


@pytest.mark.parametrize("width", [50, 60, 80])
def test_status_cuts_a_port_reading_at_a_word_and_keeps_its_age(width: int) -> None:
    import time

    sense = {"name": "network", "computes": 3, "errors": 0, "last_result": PORT}
    sense["last_result_ns"] = time.time_ns() - 3 * 10**9
    row = status_lines({**HEALTH, "warming": False, "sense_results": [sense]}, width)[-1]
    assert len(row) <= width and row.endswith("… · 3s ago"), row
    shown = row[row.index("port ") :].removesuffix("… · 3s ago")
    assert PORT.startswith(shown) and PORT[len(shown)] == " ", row  # cut where a word ends


@pytest.mark.parametrize("width", [60, 80])
def test_sense_list_fits_the_terminal(
    shell_ws: Path, monkeypatch: pytest.MonkeyPatch, width: int
) -> None:
    text = drawn(monkeypatch, width, 24, "-w", str(shell_ws), "sense", "list")
    table = [line for line in text.splitlines() if not line.startswith("…")]  # stderr's note
    assert len(table) > 3 and all(len(line) <= width for line in table), text
    assert "[]" not in text  # a sense with no triggers has an empty "on" cell


def test_an_error_and_its_hint_wrap_between_words_at_a_terminal(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from tests.helpers.terminal import FakeTerminal

    monkeypatch.chdir(tmp_path)  # no nerve.yaml here or above: the error has a long hint
    monkeypatch.setenv("NERVE_WORKSPACE", "")
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "data"))
    monkeypatch.setenv("COLUMNS", "80")
    piped = run_cli("status", check=False).stderr
    monkeypatch.setattr(sys, "stderr", FakeTerminal())
    with pytest.raises(SystemExit):
        run(["status"])
    shown = sys.stderr.getvalue()  # type: ignore[attr-defined]
    assert len(piped.splitlines()) == 2 and max(map(len, piped.splitlines())) > 80  # whole
    wide = [ln for ln in shown.splitlines() if len(ln) > 80 and " " in ln.strip()]
    assert wide == [], shown  # only a word longer than the terminal (a deep path) may pass it
    heads = [ln.split(":")[0] for ln in shown.splitlines() if not ln.startswith("  ")]
    assert heads == ["UsageError", "hint"] and len(shown.splitlines()) > 2  # the rest indented
    assert " ".join(shown.split()) == " ".join(piped.split())  # the same words, none cut


def _unsized_pty() -> tuple[int, int]:
    """A real pty that reports 0 columns and 0 rows, as one nobody sized does."""
    main, side = pty.openpty()
    fcntl.ioctl(side, termios.TIOCSWINSZ, struct.pack("HHHH", 0, 0, 0, 0))
    return main, side


def _drained(main: int) -> str:
    """All a pty's other side wrote before it was closed, then the pty closed."""
    chunks = []
    while True:
        try:
            chunk = os.read(main, 65536)
        except OSError:  # EIO: the other side is closed and everything was read
            break
        if not chunk:
            break
        chunks.append(chunk)
    os.close(main)
    return b"".join(chunks).decode()


def test_tail_on_a_terminal_of_no_width_still_prints(
    shell_ws: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    main, side = _unsized_pty()
    monkeypatch.delenv("COLUMNS", raising=False)
    monkeypatch.setenv("NO_COLOR", "1")
    with os.fdopen(side, "w") as term:
        monkeypatch.setattr(sys, "stdout", term)
        monkeypatch.setattr(sys, "stderr", io.StringIO())
        with pytest.raises(SystemExit):
            run(["--no-pager", "-w", str(shell_ws), "tail"])
        term.flush()
    shown = _drained(main)
    assert "[exit 12]" in shown and " ls" in shown, repr(shown)


def test_tail_says_at_a_terminal_when_nothing_matches(
    shell_ws: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def said(*args: str) -> str:
        return drawn(monkeypatch, 80, 24, "-w", str(shell_ws), "tail", *args)

    assert said("--grep", "no such text") == "note: no event matches\n"
    assert said("--since", "2099-01-01T00:00").startswith("note: no event matches from ")
    backwards = said("--since", "10m", "--until", "20m")
    assert all(len(line) <= 80 for line in backwards.splitlines()), backwards
    flowing = " ".join(line.strip() for line in backwards.splitlines())
    assert "until" in flowing and flowing.endswith("(the window ends before it starts)")
    assert "[exit 12]" in said() and "note:" not in said()
    piped = run_cli("-w", str(shell_ws), "tail", "--grep", "no such text")
    assert piped.stdout == piped.stderr == ""  # a script reads no rows, and no note


@pytest.mark.parametrize("width", [60, 80])
def test_the_note_of_columns_left_out_fits_the_terminal(
    shell_ws: Path, monkeypatch: pytest.MonkeyPatch, width: int
) -> None:
    sql = "SELECT * FROM events"
    lines = drawn(monkeypatch, width, 24, "-w", str(shell_ws), "query", sql).splitlines()
    told = [i for i, line in enumerate(lines) if "columns left out" in line]
    assert told and all(len(line) <= width for line in lines[told[0] :]), lines
    assert "(a wider terminal, --csv or --json shows them)" in " ".join(
        line.strip() for line in lines[told[0] :]
    )
