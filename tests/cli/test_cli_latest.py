"""`status`, `dev` and `sense list` against a real daemon: a sense that cannot observe says
`unavailable: WHY`, and a sense's last reading stays shown, with its age, after computes
that observed nothing."""

from __future__ import annotations

import json
from pathlib import Path

from nerve.dev.attach import frame_from
from nerve.runtime.latest import fit_latest, latest_text, unavailable_note
from tests.conftest import run_cli
from tests.daemon_util import started, write_sense

ONCE = """
from nerve import Observation, Result
initial_state = {"n": 0}
def compute(state):
    n = state["n"] + 1
    seen = [Observation(source="endpoint", line="once observed")] if n == 1 else []
    return Result(state={"n": n}, observations=seen)
"""
CONFIG = """senses:
  once: {group: a, interval: 300ms}
  focus: {group: b, interval: 300ms, options: {display: null}}
"""


def _rows(text: str, name: str) -> list[str]:
    return [line for line in text.splitlines() if line.split()[:1] == [name]]


def test_unavailable_and_the_last_reading_kept(tmp_path: Path) -> None:
    root = tmp_path / "ws"
    root.mkdir()
    write_sense(root, "once", ONCE)
    (root / "nerve.yaml").write_text(CONFIG)
    ws = ("--workspace", str(root))
    with started(root) as daemon:

        def computed() -> bool:
            results = daemon.request({"type": "status"})["status"]["sense_results"]
            return all(r["computes"] >= 3 for r in results) and len(results) == 2

        daemon.wait_for(computed, timeout=60, what="three computes of each sense")
        status = run_cli(*ws, "status").stdout
        listed = run_cli(*ws, "sense", "list").stdout
        as_json = [
            json.loads(x) for x in run_cli(*ws, "sense", "list", "--json").stdout.splitlines()
        ]
        health = daemon.request({"type": "status"})["status"]
    for text in (status, listed):
        (focus,) = _rows(text, "focus")
        assert "unavailable: no X display (headless)" in focus and "nothing new" not in focus
        (once,) = _rows(text, "once")
        assert "once observed · " in once and " ago" in once and "nothing new" not in once
    by_name = {s["name"]: s for s in as_json}
    assert by_name["focus"]["unavailable"] == "no X display (headless)"
    assert by_name["once"]["last_line"] == "once observed" and by_name["once"]["unavailable"] == ""
    assert isinstance(by_name["once"]["last_line_ns"], int)
    viewed = {row.name: row.latest for row in frame_from(health, now_s=0, rate=0).senses}
    assert viewed["focus"] == "unavailable: no X display (headless)"
    assert viewed["once"].startswith("once observed · ")  # what `nerve dev` draws


def test_the_latest_text() -> None:
    now = 10**18
    assert latest_text("cpu 12%", now - 65 * 10**9, "", now) == "cpu 12% · 1m ago"
    assert latest_text("", None, "", now) == "nothing new"
    assert latest_text("cpu 12%", now, "no X display", now) == "unavailable: no X display"
    assert unavailable_note(b'{"note":"why","status":"unavailable"}') == "why"
    assert unavailable_note(b'{"note":"unavailable","status":"ok"}') == ""
    assert unavailable_note(b'{"n":1}') == ""


def test_fit_latest_cuts_at_a_word_and_keeps_the_age() -> None:
    text = "port 127.0.0.1:51059 closed (was held by nats-server [12173]) · 3s ago"
    assert fit_latest(text, 80) == text
    assert fit_latest(text, 60) == "port 127.0.0.1:51059 closed (was held by… · 3s ago"
    assert fit_latest(text, 30) == "port 127.0.0.1:51059… · 3s ago"
    assert fit_latest(text, 8) == "port…"  # no room for the age: the reading alone
    assert fit_latest("x" * 30, 10) == "x" * 9 + "…"  # one long word is cut where it must be
