"""The README's picture: the Day page of the recorded real day (``tests/fixtures/day/``) in
Debian's Chromium at 1280 px, driven by Playwright against a real `nerve ui` whose clock reads
the day's "now" (a minute after the recording ended). The screenshot is kept in the test's
folder; NERVE_UI_DOCS=1 refreshes ``docs/ui-recorded-day.png``."""

from __future__ import annotations

import os
import re
import shutil
import signal
import subprocess
import sys
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlsplit

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
DARK_DAY = "ui-recorded-day-dark.png"
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
            page.emulate_media(color_scheme="dark")
            page.screenshot(path=str(tmp_path / DARK_DAY))
    finally:
        proc.send_signal(signal.SIGTERM)
        proc.communicate(timeout=20)
    assert "05 December 2026" in text and "make build" in text and "exit 130" in text, text
    assert " h " not in text.split("in focus")[0], text[:300]  # minutes of a short day, not hours
    if os.environ.get("NERVE_UI_DOCS") == "1":
        shutil.copy(path, DOCS / SHOT)
        shutil.copy(tmp_path / DARK_DAY, DOCS / DARK_DAY)


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


def test_a_drag_across_the_timeline_shows_that_span_in_local_times(
    recorded_day_copy: Day, tmp_path: Path
) -> None:
    """A drag across the recorded day's picture goes to the dragged span (to a pixel's
    worth of time), the address and the form in local times, with a mouse at 1280 px and a
    finger at 390 px; a drag of two pixels does nothing; ``later`` and ``zoom out`` keep to
    the log's span. The dragged picture is also shot in dark
    (``ui-timeline-recorded-day-dark.png``)."""
    proc = _ui_at(recorded_day_copy)
    try:
        (login_url,) = LineReader(proc).take(1, timeout=60)
        base = login_url.split("/login")[0]
        with chromium(tmp_path / "dl") as context:
            page = context.new_page()
            errors: list[str] = []  # a script error, or anything the CSP refused
            page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
            page.goto(login_url)
            page.goto(base + "/timeline")
            box = page.locator("#apps-lane").bounding_box()
            start, y = box["x"] + 0.2 * box["width"], box["y"] + box["height"] / 2
            _drag(page, start, start + 2, y)
            page.wait_for_timeout(500)
            assert page.url == base + "/timeline"  # too narrow: a click, not a zoom
            mouse = _zoomed(page, base, _drag)
            address = page.url
            form = [page.input_value(f"input[name={k}]") for k in ("since", "until")]
            page.emulate_media(color_scheme="dark")
            page.screenshot(path=str(tmp_path / DARK_SHOT), full_page=True)
            moved = _press_until_gone(page, "later")
            widest = _press_until_gone(page, "zoom-out")
            page.set_viewport_size({"width": 390, "height": 844})
            finger = _zoomed(page, base, _swipe)
    finally:
        proc.send_signal(signal.SIGTERM)
        proc.communicate(timeout=20)
    assert errors == []
    query = parse_qs(urlsplit(address).query)
    assert not re.search(r"\d{12}", address), address  # no stamps in the address
    for said in (query["since"][0], query["until"][0], *form):
        assert re.fullmatch(r"2026-12-05 \d\d:\d\d(:\d\d)?", said), (said, address, form)
    whole, pixel = mouse["whole"], mouse["pixel"]
    span, second = whole["until"] - whole["since"], 10**9  # the address holds whole seconds
    assert all(abs(m["until"] - m["since"] - 0.4 * span) <= pixel + second for m in moved)
    assert moved[-1]["until"] <= whole["last"] + second  # no later than the last event
    assert widest[-1]["since"] >= whole["first"] - second, (widest[-1], whole)
    assert widest[-1]["until"] <= whole["last"] + second, (widest[-1], whole)
    for zoom in (mouse, finger):
        span = zoom["whole"]["until"] - zoom["whole"]["since"]
        for key, part in (("since", 0.2), ("until", 0.6)):
            wanted = zoom["whole"]["since"] + part * span
            assert abs(zoom["dragged"][key] - wanted) <= zoom["pixel"], (key, zoom)
    if os.environ.get("NERVE_UI_DOCS") == "1":
        shutil.copy(tmp_path / DARK_SHOT, DOCS / DARK_SHOT)


def _zoomed(page: Any, base: str, drag: Any) -> dict[str, Any]:
    """The timeline, then ``drag`` from 20% to 60% across its strips: the window before
    (``whole``, its JSON twin), a pixel's worth of its time, and the window after."""
    page.goto(base + "/timeline")
    whole, box = page.evaluate(TWIN), page.locator("#apps-lane").bounding_box()
    y = box["y"] + box["height"] / 2
    with page.expect_navigation(wait_until="load"):
        drag(page, box["x"] + 0.2 * box["width"], box["x"] + 0.6 * box["width"], y)
    pixel = (whole["until"] - whole["since"]) / box["width"]
    return {"whole": whole, "pixel": pixel, "dragged": page.evaluate(TWIN)}


DARK_SHOT = "ui-timeline-recorded-day-dark.png"
TWIN = "fetch(location.href, {headers: {accept: 'application/json'}}).then((r) => r.json())"


def _drag(page: Any, start: float, end: float, y: float) -> None:
    """A mouse drag from ``start`` to ``end`` across the page at height ``y``."""
    page.mouse.move(start, y)
    page.mouse.down()
    page.mouse.move(end, y, steps=8)
    page.mouse.up()


def _swipe(page: Any, start: float, end: float, y: float) -> None:
    """A finger drawn from ``start`` to ``end`` at height ``y`` (touch events, as a phone
    sends them, through Chromium's DevTools protocol)."""
    cdp = page.context.new_cdp_session(page)
    cdp.send("Emulation.setTouchEmulationEnabled", {"enabled": True, "maxTouchPoints": 1})
    cdp.send(
        "Input.dispatchTouchEvent", {"type": "touchStart", "touchPoints": [{"x": start, "y": y}]}
    )
    for i in range(1, 9):
        x = start + (end - start) * i / 8
        cdp.send(
            "Input.dispatchTouchEvent", {"type": "touchMove", "touchPoints": [{"x": x, "y": y}]}
        )
    cdp.send("Input.dispatchTouchEvent", {"type": "touchEnd", "touchPoints": []})


def _press_until_gone(page: Any, move: str) -> list[dict[str, Any]]:
    """Follow the timeline's ``move`` link until it is offered no more (the log's edge):
    each window it went to (its JSON twin)."""
    seen = []
    for _ in range(12):
        if page.locator(f"a#{move}").count() == 0:
            return seen
        with page.expect_navigation(wait_until="load"):
            page.click(f"a#{move}")
        seen.append(page.evaluate(TWIN))
    raise AssertionError(f"{move} is still offered after 12 moves: {seen[-1]['since']}")
