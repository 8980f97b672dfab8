"""Golden outputs: rich renderings compared whole with files under tests/golden/.

The dev view draws a frame with its own clock, so nothing needs masking. To rewrite a
golden file after a deliberate change: ``NERVE_UPDATE_GOLDEN=1 pytest tests/cli/test_golden.py``.
"""

from __future__ import annotations

import io
import logging
import os
from pathlib import Path

import pytest
from rich.console import Console

from nerve.dev.view import render
from nerve.runtime.frame import AgentRead, Frame, Highlight, SenseRow
from nerve.runtime.journal import Entry

GOLDEN = Path(__file__).parent.parent / "golden"
NOW = 1_750_000_000.0
BUNDLED = ["cpu", "memory", "disk", "network", "power", "processes", "files", "shell"]
EXTRA = ["gpu", "battery", "wifi", "bluetooth", "temperature-of-the-north-rack", "fans"]
MORE = ["audio", "camera", "usb", "printer", "calendar"]


def _sense(index: int, name: str) -> SenseRow:
    group = "system" if index < 5 else name
    line = f"{name} reading {index}" + (" with a tail of detail" * (index % 4))
    last = None if index == 9 else NOW - 1.5 - index * 7
    return SenseRow(name, group, 120 * index + 3, 2 if index == 7 else 0, last, 1.5 * index, line)


def _frame(
    *, senses: list[str], alerts: tuple[str, ...] = (), agents: tuple[AgentRead, ...] = ()
) -> Frame:
    decisions = tuple(
        Highlight(
            NOW - 600 + i * 90,
            "surface" if i % 3 == 0 else ("hold:budget" if i % 2 else "hold:value"),
            "novelty",
            f"cpu {50 + i}% load1 1.{i} (2 cores)",
        )
        for i in range(7)
    )
    restarted = "group system worker restarted (pid 12 -> 13): worker exited with code -9"
    errors = (
        Entry(NOW - 4000, logging.WARNING, "sense shell: exception: RuntimeError: unplugged\nat"),
        Entry(NOW - 75, logging.WARNING, restarted),
    )
    return Frame(
        workspace="/home/someone/projects/with/a/rather/long/path/nerve",
        pid=4242,
        now_s=NOW,
        started_s=NOW - 3723,
        events=1_234_567,
        rate=12.46,
        segments=3,
        senses=tuple(_sense(i, n) for i, n in enumerate(senses)),
        highlights=decisions,
        errors=errors,
        alerts=alerts,
        agents=agents,
    )


AGENTS = (
    AgentRead(NOW - 300, "claude-code", "ask", "ok", 4, 1_912),
    AgentRead(NOW - 62, "claude-code", "query", "refused", 0, 0),
    AgentRead(NOW - 8, "claude-code", "recent", "ok", 50, 14_305),
)


def _drawn(frame: Frame, width: int, height: int) -> str:
    out = io.StringIO()
    console = Console(file=out, width=width, height=height, color_system=None, legacy_windows=False)
    console.print(render(frame, width, height))
    return out.getvalue()


def _check(name: str, text: str) -> None:
    path = GOLDEN / name
    if os.environ.get("NERVE_UPDATE_GOLDEN"):
        path.write_text(text, encoding="utf-8")
    assert text == path.read_text(encoding="utf-8")


@pytest.mark.parametrize(
    ("name", "width", "height", "frame"),
    [
        ("dev_80x24.txt", 80, 24, _frame(senses=BUNDLED + EXTRA + MORE)),  # "… N more"
        (
            "dev_200x50.txt",
            200,
            50,
            _frame(senses=BUNDLED + EXTRA, alerts=("seal failing: No space left on device",)),
        ),
        ("dev_100x30_agents.txt", 100, 30, _frame(senses=BUNDLED, agents=AGENTS)),
    ],
)
def test_dev_view_matches_its_golden_drawing(
    name: str, width: int, height: int, frame: Frame
) -> None:
    text = _drawn(frame, width, height)
    lines = text.splitlines()
    assert len(lines) == height and max(len(line) for line in lines) == width
    _check(name, text)


# -- the CLI's terminal output, drawn at 80×24 and 200×50 --------------------------------------

SIZES = [(80, 24), (200, 50)]
T0 = 1_750_000_000 * 10**9  # 2025-06-15T15:06:40Z


def _wire(i: int, kind: str, source: str, subject: str, line: str, payload: object) -> str:
    import json

    obj = {"hlc": [T0 + i * 1_500_000_000, 0], "node": "golden", "kind": kind, "source": source,
           "subject": subject, "trust": "FirstParty", "line": line, "payload": payload}  # fmt: skip
    return json.dumps(obj)


GOLDEN_EVENTS = [
    _wire(0, "daemon.started", "vendor:1024", "daemon", "daemon started (pid 4242)", {"pid": 4242}),
    _wire(1, "observation", "endpoint", "cpu", "cpu 37.3% load1 2.61 (2 cores)", {"load1": 2.61}),
    _wire(2, "observation", "thermal_power", "power",
          "energy cpu ~64.300 J estimated (no powercap counter)", {"uj": 64_300_000}),
    _wire(3, "observation", "process_tree", "processes",
          "process started python3 -m pytest tests/test_query_output.py [18288]", {"pid": 18288}),
    _wire(4, "attention.decision", "vendor:1024", "surface",
          "surface (novelty): cpu 97% for 10 minutes while the build ran", {"outcome": "surface"}),
    _wire(5, "observation", "shell", "shell", "git push origin main", {"cmd": "git push"}),
    _wire(6, "sense.error", "vendor:1024", "disk",
          "sense disk: compute raised OSError: [Errno 5] Input/output error", {"kind": "compute"}),
]  # fmt: skip


@pytest.fixture
def golden_ws(tmp_path: Path) -> Path:
    from nerve.logops import import_stream
    from nerve.workspace import init_workspace

    ws = init_workspace(tmp_path / "ws")
    import_stream(ws, io.StringIO("\n".join(GOLDEN_EVENTS) + "\n"), "<golden>")
    return ws.root


def _sized(name: str, width: int, height: int) -> str:
    return f"{name}_{width}x{height}.txt"


@pytest.mark.parametrize(("width", "height"), SIZES)
def test_query_select_star_keeps_ids_time_and_text_whole(
    golden_ws: Path, monkeypatch: pytest.MonkeyPatch, width: int, height: int
) -> None:
    from tests.helpers.terminal import drawn

    text = drawn(monkeypatch, width, height, "-w", str(golden_ws), "query",
                 "SELECT * FROM events ORDER BY physical_ns", "--limit", "5")  # fmt: skip
    assert all(len(line) <= width for line in text.splitlines()[:7])
    assert "…" not in text.splitlines()[0]  # no header is cut
    _check(_sized("query", width, height), text)


@pytest.mark.parametrize(("width", "height"), SIZES)
def test_tail_gives_the_line_the_room(
    golden_ws: Path, monkeypatch: pytest.MonkeyPatch, width: int, height: int
) -> None:
    from tests.helpers.terminal import drawn

    text = drawn(monkeypatch, width, height, "-w", str(golden_ws), "tail", "--utc", "--all-kinds")
    lines = text.splitlines()
    assert len(lines) == len(GOLDEN_EVENTS) and all(len(line) <= width for line in lines)
    line_room = width - lines[2].index("energy cpu")
    assert line_room >= 30  # at 80 columns the text gets room, not 11 characters
    _check(_sized("tail", width, height), text)


def _listings(width: int) -> str:
    """The listings that cut ids in half: workflow runs, agent access, senses."""
    from nerve.cli.output import render_rows
    from tests.helpers.terminal import FakeTerminal, plain

    out = FakeTerminal()
    runs = ["run", "workflow", "status", "reason", "rounds", "max_rounds", "prompt", "dry_run",
            "source", "sense", "requested_at", "updated_at"]  # fmt: skip
    render_rows(runs, [
        ["digest-1796155536900909941-3", "digest", "done", "", 2, 4, "summarise the day", False,
         "schedule", "", "2025-06-15 15:06:40", "2025-06-15 15:07:02"],
        ["review-1796155599900000000-0", "review", "running", "waiting for a check", 1, 3,
         "review the diff of the branch everyday", False, "sense", "files",
         "2025-06-15 15:08:00", "2025-06-15 15:08:30"],
    ], fmt="table", title="workflow runs", file=out)  # fmt: skip
    access = ["time", "client", "version", "transport", "tool", "outcome", "rows", "bytes",
              "args_digest", "reason"]  # fmt: skip
    render_rows(access, [
        ["2025-06-15 15:06:40", "rawclient", "0.1", "stdio", "query", "refused", 0, 0,
         "9f2c" * 16, "only SELECT is allowed: the statement is a DELETE"],
        ["2025-06-15 15:06:41", "claude-code", "2.0.1", "http", "recent", "ok", 50, 14305,
         "1a2b" * 16, ""],
    ], fmt="table", title="agent access", file=out)  # fmt: skip
    senses = ["name", "group", "interval_ms", "on", "throttle_ms", "timeout_ms", "computes",
              "errors", "last_line"]  # fmt: skip
    render_rows(senses, [
        ["processes", "system", 5000, "[]", None, 30000, 74, 0, "process exited python [30088]"],
        ["temperature-of-the-north-rack", "rack", 10000, "[]", None, 30000, 3, 1,
         "rack inlet 24.5 °C, outlet 31.0 °C"],
    ], fmt="table", title="senses", file=out)  # fmt: skip
    return plain(out.getvalue())


@pytest.mark.parametrize(("width", "height"), SIZES)
def test_listings_keep_ids_and_names_whole(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], width: int, height: int
) -> None:
    monkeypatch.setenv("COLUMNS", str(width))
    text = _listings(width) + capsys.readouterr().err
    assert "digest-1796155536900909941-3" in text and "review-1796155599900000000-0" in text
    assert "2025-06-15 15:06:40" in text and "rawclient" in text
    assert "temperature-of-the-north-rack" in text
    _check(_sized("listings", width, height), text)


HEALTH = {
    "pid": 4242, "uptime_s": 3723.4, "events": 1, "commits": 1, "segments": 3, "tail_rows": 53,
    "senses": 3, "groups": {"system": {}}, "capture": None,
    "sense_results": [
        {"name": "cpu", "computes": 5, "errors": 0,
         "last_result": "cpu 27.3% load1 2.48 (2 cores)"},
        {"name": "temperature-of-the-north-rack", "computes": 120, "errors": 2,
         "last_result": "rack inlet 24.5 °C",
         "last_error": "compute exceeded its 300 ms timeout; the worker was restarted"},
        {"name": "files", "computes": 10, "errors": 0, "last_result": "nothing new"},
    ],
}  # fmt: skip


@pytest.mark.parametrize(("width", "height"), SIZES)
def test_status_lines_align_and_fit(width: int, height: int) -> None:
    from nerve.cli.daemon_cmds import status_lines

    text = "\n".join(status_lines(HEALTH, width)) + "\n"
    assert "1 event appended (1 commit), 3 segments" in text and "in 1 group\n" in text
    assert all(len(line) <= width for line in text.splitlines())
    _check(_sized("status", width, height), text)


LINK = {
    "t": T0, "v": 1,
    "hl": {"seq": 230, "probe": "novelty", "score": 239, "sigma": 138, "value": 926,
           "baseline": 488},
    "log": "9c" * 32, "seq": 1, "cost": 0, "kind": "decision", "prev": "ff" * 32, "epoch": 0,
    "event": "bc" * 32, "probe": "novelty", "trust": 1, "value": 239,
    "energy": {"provenance": 2, "estimated_uj": 250000}, "decision": "surface",
    "budget_uj": 750000, "charged_uj": 250000, "id": "bc" * 32, "signed": "by the epoch's key",
    "verified_through_here": True, "source_line": "net all down 0.0 KiB/s up 0.0 KiB/s",
}  # fmt: skip


@pytest.mark.parametrize(("width", "height"), SIZES)
def test_audit_held_says_why_and_show_labels_its_fields(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], width: int, height: int
) -> None:
    from nerve.attention.reason import reason_of
    from nerve.cli.attend_cmds import held_lines
    from nerve.cli.audit_words import link_lines
    from tests.helpers.terminal import FakeTerminal, plain

    monkeypatch.setenv("COLUMNS", str(width))
    held = [
        {"chain_seq": 5, "ts": "2025-06-15T15:06:40", "outcome": "hold:value", "probe": "novelty",
         "value_milli": 45, "cost_milli": 0, "budget_before_uj": 10**6, "budget_after_uj": 10**6,
         "source_event": "38" * 32, "source_line": "cpu 99.8% load1 4.67 (2 cores)"},
        {"chain_seq": 9, "ts": "2025-06-15T15:09:10", "outcome": "hold:budget",
         "probe": "uncertainty", "value_milli": 610, "cost_milli": 150, "budget_before_uj": 1200,
         "budget_after_uj": 1200, "source_event": "7a" * 32, "source_line": "mem 91% swap 40%"},
    ]  # fmt: skip
    for row in held:
        row["why"] = reason_of(row).words()
    assert held[0]["why"] == (
        "held, not worth an interruption: its value 0.045 beat the interruption cost 0 by "
        "only 0.045, not by more than the margin"
    )
    assert held[1]["why"].startswith("held for the budget: worth an interruption")
    assert "budget held only 1.2 mJ, less than the price of a surfacing" in held[1]["why"]
    out = FakeTerminal()
    out.write("".join(line + "\n" for line in held_lines(held, width)))
    shown = "\n".join(link_lines(LINK))
    assert "{" not in shown and "hl.value" in shown and "not what the gate weighed" in shown
    _check(_sized("audit", width, height), plain(out.getvalue()) + capsys.readouterr().err + shown)
