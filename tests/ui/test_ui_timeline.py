"""The timeline (``/timeline``) in process, on the recorded real day (``tests/fixtures/day/``):
bars per app and per window title, time away as a band, the commands as ticks with the
failed ``make build`` runs marked, the CPU and memory readings as lines with the hog and the
leak on them and what nerve surfaced and held there linked to its decision; moved and zoomed
in local times; and nothing a privacy rule withholds."""

from __future__ import annotations

import re
import time
from collections.abc import Iterator

import pytest
from starlette.testclient import TestClient

from nerve.ui.dayline import rounded
from tests.helpers.day import Day
from tests.helpers.uiclient import as_json, logged_in


@pytest.fixture
def day(recorded_day_copy: Day, monkeypatch: pytest.MonkeyPatch) -> Iterator[Day]:
    monkeypatch.setenv("XDG_STATE_HOME", str(recorded_day_copy.root.parent / "state"))
    monkeypatch.setenv("TZ", "UTC")
    time.tzset()
    monkeypatch.setattr("time.time_ns", lambda: recorded_day_copy.now_ns)
    yield recorded_day_copy
    monkeypatch.undo()
    time.tzset()


def client(day: Day) -> TestClient:
    return logged_in(day.root)


def lane(html: str, name: str) -> str:
    """One lane's SVG, as served."""
    found = re.search(rf'<svg id="{name}".*?</svg>', html, re.S)
    assert found, name
    return found.group(0)


def test_the_recorded_day_is_drawn_as_windows_commands_and_readings(day: Day) -> None:
    c = client(day)
    html = c.get("/timeline").text
    assert "Saturday 05 December 2026, 19:22–19:34" in html  # the span with data, round ends
    windows = lane(html, "windows-lane")
    for title in ("main.c (~/work/project/src) - VIM", "undefined reference to main"):
        assert title in windows
    assert "XTerm" in lane(html, "apps-lane") and "Firefox" in lane(html, "apps-lane")
    assert lane(html, "away-lane").count('class="afk"') == 1  # the three minutes away
    commands = lane(html, "commands-lane")
    failed = re.findall(r'<g class="cmd failed"><title>([^<]*)</title>', commands)
    assert sum("$ make build · exit 2" in f for f in failed) == 4, failed
    assert any("exit 130" in f for f in failed)  # the `yes` hog, stopped with ^C
    cpu, memory = lane(html, "cpu-line"), lane(html, "memory-line")
    assert "<polyline" in cpu and "<polyline" in memory
    assert "<polyline" in lane(html, "disk-line") and "<polyline" in lane(html, "down-line")
    assert re.search(r"free disk /<small>lowest \d+ GiB at", html)  # free disk warns low
    hog = re.findall(r'<a href="/attention/(\d+)" class="mark surfaced"><title>([^<]*)', cpu)
    assert any("top cpu" in t for _, t in hog), hog  # the hog surfaced, on the CPU line
    leak = re.findall(r'<a href="/attention/(\d+)" class="mark surfaced"><title>([^<]*)', memory)
    assert any("memgrow.py" in t for _, t in leak), leak  # the leak surfaced, on memory
    assert c.get(f"/attention/{leak[0][0]}").status_code == 200
    assert "make build" in html.split('id="failed"')[1]  # and in words below the picture


def test_the_json_twin_holds_the_readings_and_the_ns_times(day: Day) -> None:
    got = as_json(client(day), "/timeline")
    cpu, memory, load, disk, down, up = got["readings"]
    assert max(v for _, v in load["points"]) > 15  # the loaded machine's load at the start
    assert 70 < min(v for _, v in disk["points"]) < 80  # GiB free on /, ~74 that day
    assert down["points"] and up["points"] and down["unit"] == "KiB/s"
    assert max(v for _, v in cpu["points"]) == 100.0 and min(v for _, v in cpu["points"]) < 20
    assert max(v for _, v in memory["points"]) > 2000 > min(v for _, v in memory["points"])
    assert got["ticks"][0] == got["since"] and got["ticks"][-1] == got["until"]
    assert {d["line"] for d in got["decisions"]} >= {"cpu", "memory", "load", ""}


def test_zoom_and_move_keep_local_times_in_the_form(day: Day) -> None:
    c = client(day)
    html = c.get("/timeline?since=2026-12-05 19:26&until=2026-12-05 19:30").text
    assert "19:26–19:30" in html and 'value="2026-12-05 19:26"' in html
    zoom = re.search(r'href="([^"]+)" id="zoom-in"', html)
    assert zoom and "since=2026-12-05%2019%3A27%3A00" in zoom.group(1)
    assert not re.search(r"\d{19}", zoom.group(1))  # no raw stamps in what the form gets
    assert c.get(zoom.group(1).replace("&amp;", "&")).status_code == 200
    assert c.get("/timeline?since=junk").status_code == 400


def test_a_withheld_window_is_not_drawn(day: Day) -> None:
    with (day.root / "nerve.yaml").open("a") as out:
        out.write(
            "privacy:\n  rules:\n    - {name: so, regex: 'Stack Overflow', action: drop}\n"
            "    - {name: build, regex: 'make build', action: drop}\n"
        )
    html = client(day).get("/timeline").text
    assert "Stack Overflow" not in html and "undefined reference" not in html
    assert "make build" not in html and "$ make clean" in html  # the other commands stay


def test_a_window_widens_to_round_times() -> None:
    minute = 60 * 10**9
    lo, hi, step = rounded(1796498578 * 10**9, 1796499191 * 10**9)
    assert step == 2 * minute and lo % step == 0 and hi % step == 0
    assert rounded(0, 7 * 3600 * 10**9)[2] == 60 * minute


def test_a_decision_page_draws_the_reading_it_fired_on(day: Day) -> None:
    c = client(day)
    leak = next(
        d for d in as_json(c, "/timeline")["decisions"]
        if d["probe"] == "processes.top_rss_bytes" and not d["held"]
    )  # fmt: skip
    got = as_json(c, f"/attention/{leak['seq']}")["reading"]
    line = got["line"]
    assert line["name"] == "processes.top_rss_bytes" and line["unit"] == "MiB"
    assert got["since"] <= leak["at"] < got["until"] and line["count"] >= 10
    (moment,) = line["marks"]
    assert moment["at"] == leak["at"] and 700 < moment["value"] < 800  # memgrow.py's 743 MiB
    html = c.get(f"/attention/{leak['seq']}").text
    assert 'id="reading-line"' in html and "<polyline" in lane(html, "reading-line")
    novelty = next(d for d in as_json(c, "/timeline")["decisions"] if d["probe"] == "novelty")
    assert as_json(c, f"/attention/{novelty['seq']}")["reading"] is None  # no reading to draw


def test_the_windows_list_is_time_per_title_longest_first_and_capped() -> None:
    """A day of many focus changes lists each window title once, with its total time, the
    longest first, and says how many more there are rather than listing thousands of rows."""
    from nerve.ui.dayline import TOP_TITLES, drawn

    s = 10**9
    spells = [  # 60 titles, title k in focus k+1 times for 10 s each, in turns
        {"start": i * 10 * s, "end": (i + 1) * 10 * s, "afk": False, "app": "Editor",
         "title": f"file{k}.c"}
        for i, k in enumerate(k for r in range(60) for k in range(60) if k >= r)
    ]  # fmt: skip
    end = spells[-1]["end"]
    found = {"since": 0, "until": end, "spells": spells, "commands": [], "readings": [],
             "decisions": []}  # fmt: skip
    titles = drawn(found)["titles"]
    top = titles["top"]
    assert len(top) == TOP_TITLES
    assert [t["title"] for t in top[:3]] == ["file59.c", "file58.c", "file57.c"]
    assert top[0]["ns"] == 60 * 10 * s and top[0]["spells"] == 60
    assert titles["more"] == 60 - TOP_TITLES
    assert sum(t["ns"] for t in top) + titles["more_ns"] == end  # every second counted once


def test_bar_lanes_escape_titles_and_shade_only_visible_time_away() -> None:
    """The bar lanes are written outside the template: a hostile title stays text; time away
    shades the other strips only where it is wide enough to see, the away lane has all of it."""
    from nerve.ui.dayline import bars, drawn

    s = 10**9
    hostile = '"><script>alert(1)</script><img src=x onerror=alert(2)>'
    spells = [
        {"start": 0, "end": 600 * s, "afk": False, "app": "Fire<fox>", "title": hostile},
        {"start": 600 * s, "end": 600 * s + s // 2, "afk": True, "app": None, "title": None},
        {"start": 601 * s, "end": 700 * s, "afk": False, "app": "Vim", "title": "a & b"},
        {"start": 700 * s, "end": 1000 * s, "afk": True, "app": None, "title": None},  # 5 min
    ]
    found = {"since": 0, "until": 1000 * s, "spells": spells, "commands": [], "readings": [],
             "decisions": []}  # fmt: skip
    d = drawn(found)
    assert [a["start"] for a in d["away"]] == [600 * s, 700 * s]
    assert [a["start"] for a in d["band"]] == [700 * s]  # half a second is under a pixel
    windows, apps = str(bars("windows", d["windows"])), str(bars("apps", d["apps"]))
    assert "<script>" not in windows and "<img" not in windows and "&lt;script&gt;" in windows
    assert "Fire&lt;fox&gt;" in apps and "a &amp; b" in windows
    assert windows.count("<a href=") == 2 and 'href="/events?since=0&amp;until=600' in windows
    assert str(bars("away", d["away"])).count('class="afk"') == 2


def test_moves_keep_the_span_and_stop_at_the_log() -> None:
    """Earlier and later keep the span and go no further than the log's first and last
    event (to whole seconds); zoom out is cut to the log; a move with nowhere to go is None."""
    from nerve.ui.dayline import moves

    s, minute = 10**9, 60 * 10**9
    logged = (100 * s + 5, 1000 * s - 7)  # the log: [100 s, 1000 s) to whole seconds
    inner = moves(400 * s, 600 * s, logged)
    assert inner["earlier"] == (200 * s, 400 * s) and inner["later"] == (600 * s, 800 * s)
    assert inner["zoom_in"] == (450 * s, 550 * s) and inner["zoom_out"] == (300 * s, 700 * s)
    near = moves(150 * s, 950 * s, logged)
    assert near["earlier"] == (100 * s, 900 * s) and near["later"] == (200 * s, 1000 * s)
    assert near["zoom_out"] == (100 * s, 1000 * s)  # the whole log, no wider
    edge = moves(100 * s, 1000 * s, logged)
    assert edge["earlier"] is edge["later"] is edge["zoom_out"] is None
    assert moves(200 * s, 200 * s + minute, logged)["zoom_in"] is None  # never under a minute


def test_a_window_asked_for_is_cut_to_the_log_and_a_minute_wide() -> None:
    from nerve.ui.dayline import fitted, ticks

    s = 10**9
    logged = (100 * s + 5, 1000 * s - 7)
    assert fitted(0, 2000 * s, logged) == (100 * s, 1000 * s)
    assert fitted(400 * s, 410 * s, logged) == (375 * s, 435 * s)  # widened about its middle
    assert fitted(5000 * s, 6000 * s, logged) == (5000 * s, 6000 * s)  # no data: as asked
    assert ticks(30 * s, 330 * s) == [60 * s, 120 * s, 180 * s, 240 * s, 300 * s]
