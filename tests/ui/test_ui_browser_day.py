"""The README's picture: the Day page of the recorded real day (``tests/fixtures/day/``) in
Debian's Chromium at 1280 px, driven by Playwright against a real `nerve ui` whose clock reads
the day's "now" (a minute after the recording ended). The screenshot is kept in the test's
folder; NERVE_UI_DOCS=1 refreshes ``docs/ui-recorded-day.png``."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from tests.helpers.browser import chromium, chromium_missing
from tests.helpers.day import Day
from tests.helpers.lines import LineReader

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(chromium_missing() is not None, reason=str(chromium_missing())),
]
DOCS = Path(__file__).resolve().parents[2] / "docs"
SHOT = "ui-recorded-day.png"
# `nerve ui` with time.time_ns and time.time moved to the day's "now", still ticking
SHIFTED = """
import runpy, sys, time
real, shift = time.time_ns, int(sys.argv.pop(1)) - time.time_ns()
time.time_ns = lambda: real() + shift
time.time = lambda: (real() + shift) / 1e9
runpy.run_module("nerve", run_name="__main__")
"""


def _ui_at(day: Day) -> subprocess.Popen[str]:
    """`nerve ui` over the day's workspace, its clock at the day's now, in UTC."""
    argv = [sys.executable, "-c", SHIFTED, str(day.now_ns), "-w", str(day.root), "ui"]
    env = {**os.environ, "TZ": "UTC", "NO_COLOR": "1"}
    return subprocess.Popen(
        argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env
    )


def test_the_recorded_day_page_shows_the_apps_and_the_failed_commands(
    recorded_day_copy: Day, tmp_path: Path
) -> None:
    proc = _ui_at(recorded_day_copy)
    try:
        (login_url,) = LineReader(proc).take(1, timeout=60)
        with chromium(tmp_path / "dl") as context:
            page = context.new_page()
            page.goto(login_url)
            assert page.url == login_url.split("/login")[0] + "/"
            text = page.inner_text("body")
            path = tmp_path / SHOT
            page.screenshot(path=str(path))
    finally:
        proc.send_signal(signal.SIGTERM)
        proc.communicate(timeout=20)
    assert "05 December 2026" in text and "make build" in text and "exit 130" in text, text
    assert " h " not in text.split("in focus")[0], text[:300]  # minutes of a short day, not hours
    if os.environ.get("NERVE_UI_DOCS") == "1":
        shutil.copy(path, DOCS / SHOT)


TIMELINE_SHOTS = {
    (1280, 800): "ui-timeline-recorded-day.png",
    (390, 844): "ui-timeline-recorded-day-phone.png",
}


def test_the_recorded_day_timeline_shows_the_hog_the_leak_and_the_failed_builds(
    recorded_day_copy: Day, tmp_path: Path
) -> None:
    proc = _ui_at(recorded_day_copy)
    seen: dict[int, dict[str, object]] = {}
    try:
        (login_url,) = LineReader(proc).take(1, timeout=60)
        with chromium(tmp_path / "dl") as context:
            page = context.new_page()
            page.goto(login_url)
            for (width, height), shot in TIMELINE_SHOTS.items():
                page.set_viewport_size({"width": width, "height": height})
                page.goto(login_url.split("/login")[0] + "/timeline")
                seen[width] = page.evaluate(FOUND)
                page.screenshot(path=str(tmp_path / shot), full_page=True)
                with page.expect_navigation(wait_until="load"):
                    page.click("#memory-line a.mark.surfaced")  # the leak's decision
                seen[width]["decision"] = page.evaluate(DECISION)
                page.screenshot(path=str(tmp_path / f"decision-{width}.png"), full_page=True)
    finally:
        proc.send_signal(signal.SIGTERM)
        proc.communicate(timeout=20)
    for width, found in seen.items():
        assert found["scroll"] <= width, (width, found["scroll"])  # fits, no sideways scroll
        assert found["bars"] >= 10 and found["away"] == 1, found
        failed = [t for t in found["failed"] if "make build · exit 2" in t]
        assert len(failed) == 4 and all(w > 0 for w in found["failed_px"]), found
        assert any("top cpu" in t for t in found["cpu_marks"]), found  # the hog
        assert any("memgrow.py" in t for t in found["memory_marks"]), found  # the leak
        assert found["lines"] == [True, True], found  # both readings drawn, not empty
        decision = found["decision"]
        assert decision["scroll"] <= width and decision["line"] > 100, decision
        assert "memgrow.py" in decision["mark"], decision  # the moment, on the reading's line
    if os.environ.get("NERVE_UI_DOCS") == "1":
        for shot in TIMELINE_SHOTS.values():
            shutil.copy(tmp_path / shot, DOCS / shot)


# what the page shows, read in the browser: sizes as laid out, titles as hovered
FOUND = """() => {
  const titles = (sel) => [...document.querySelectorAll(sel)].map((e) => e.textContent);
  const failed = [...document.querySelectorAll("#commands-lane g.cmd.failed line")];
  return {
    scroll: document.documentElement.scrollWidth,
    bars: document.querySelectorAll("#windows-lane rect.bar").length,
    away: document.querySelectorAll("#away-lane rect.afk").length,
    failed: titles("#commands-lane g.cmd.failed > title"),
    failed_px: failed.map((e) => e.getBoundingClientRect().height),
    cpu_marks: titles("#cpu-line a.mark.surfaced > title"),
    memory_marks: titles("#memory-line a.mark.surfaced > title"),
    lines: ["#cpu-line polyline", "#memory-line polyline"].map(
      (s) => document.querySelector(s).getBoundingClientRect().width > 100),
  };
}"""

# the decision page's chart: its width, and the mark's hover text
DECISION = """() => ({
  scroll: document.documentElement.scrollWidth,
  line: document.querySelector("#reading-line polyline").getBoundingClientRect().width,
  mark: document.querySelector("#reading-line a.mark > title").textContent,
})"""
