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
