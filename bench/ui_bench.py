"""`nerve ui`'s timeline (the picture of the day) and its day summary against ActivityWatch's
own web UI (its Timeline and Activity views), in the same headless Chromium.

    .venv/bin/python bench/ui_bench.py [--aw-webui DIR] [--events N] [--rounds R] [--big N]
                                       [--screenshots DIR] [--quick]

A generated day of window-focus events (``--events``, spread over the last 23 hours, each with
an app, a title and a duration) is written into both stores: a nerve workspace (imported and
sealed; as its focus sense records them, a ``focus`` event at each start and an ``away`` where
aw's events leave a gap and after the last) and a real ``aw-server`` process (one
``aw-watcher-window`` bucket, events posted through its REST API; run as its users run it, not
``--testing``, with its ``memory`` storage, as 0.12.0's peewee and sqlite storages fail with
today's aw-core and werkzeug: a created-time type error and a cross-thread SQLite handle; and
with Flask 2.2, as its query API, which the Activity view asks, sets ``app.json_encoder``,
which Flask 2.3 dropped: every query answers 500 there).

The aw-server wheel on PyPI (0.12.0) ships aw-webui's ``index.html`` but not the ``js/``
bundles it names, so its pages cannot paint. ``--aw-webui DIR`` gives a built aw-webui: the
folder its production build writes (``index.html``, ``js/``, ``css/``, ``static/``). The
bench copies the installed ``aw_server`` package into its temporary folder with ``DIR`` as
its ``static/`` and runs that copy, so aw-server's own code serves the pages, as the
ActivityWatch bundle does (no proxy in between). The build matching 0.12.0 is aw-webui at the
commit aw-server 0.12.0 pins as its submodule (e4f20a0, 2022-07-12: its CSS hashes equal
the wheel's). Without ``--aw-webui``, aw is measured by what its timeline must fetch before
it can paint anything, the day's events of the bucket, a lower bound on its time and bytes;
the bench says so beside the ratios.

Then, ``--rounds`` times, each in a fresh browser context (empty cache and storage), the
same Chromium (Debian's, through Playwright) loads nerve's timeline for the day (``/timeline``:
a bar per window and per app, away time, commands, readings; and its event-count page
``/timeline/counts``, reported beside it) and
aw-webui's Timeline view set to its last 24 hours (its default duration, a setting kept in
localStorage). Each is timed to **painted**, defined alike for both: the first frame after
the timeline's drawn marks exist (the window bars ``#windows-lane rect.bar``, the counts
page's ``#timeline .lane rect``; aw-webui's ``.vis-item``) and no
request in flight for 0.5 s (Playwright's "network idle"), whichever is later, on the page's
own clock from the start of navigation. Bytes are what crossed the wire until then (CDP's
``encodedDataLength``). aw-webui's timeline (vis-timeline) grows worse than linearly with the
events it draws (here, 1,000 took 6 s and 3,000 took 97 s at load 18; 20,000 had not painted
after 15 minutes), so a day is 2,000 focus changes, one every ~40 s; a page that does not
paint within ``--paint-timeout`` fails the run with a one-line message.

Then the day summaries, ``--rounds`` times alike: nerve's day at a glance (``/?day=``: time
per app, per window title, per category, away apart) against aw-webui's Activity view of the
same date (``#/activity/<host>/day/<date>/view/summary``: top apps, top titles, categories,
its hourly bar chart), painted when nerve's per-app rows (``#apps td.name``) or aw-webui's top
apps (``svg.appsummary g``) exist and the network is idle. Both show a calendar day of the
viewer's zone, and the generated day spans two in most zones, so the ``nerve ui`` process
(``TZ``) and the browser (its context's zone) are both put in the one whose clocks read 23:xx
now (``Etc/GMT+5`` at 04:00 UTC), where the day is one date; aw-webui's day, which starts at
04:00 unless set, is set to start at midnight (a localStorage setting, as its Settings page
keeps it). The Activity view counts window time only while ``aw-watcher-afk`` says
``not-afk``: before this pair, an afk bucket is posted, ``not-afk`` over each window and
``afk`` over each time nerve records as away (after the timeline pair: aw's Timeline would
draw it as a second lane of as many items again). Without ``--aw-webui`` the stand-in for the
Activity view is the date's window events request.

Both servers answer once untimed first (a running server is what is compared, not its
start-up). Ratios are nerve / aw (fastest round each); goals are ≤ 0.5 for both. ``--big``
builds a second log of that many events stamped within one day and times the timeline page for
that day in process (the server's time, median of 5 after a first request, reported apart: it
builds the segment's summary and finds the rows the privacy rules change), and a search over
the week (``/events?text=``, one match, median of 5, and its first). The ``nerve ui`` process's
memory and CPU while idle are reported. The live tail is followed over server-sent events while
events are appended at ``--rate`` per second for ``--live-seconds``: every one must arrive,
once, in order. Checks: nerve's timeline counts every event of the day, its picture draws a bar
for every window, and its pages load clean (no failed request, no error); aw returns every
event posted; with ``--aw-webui``, aw-server serves the build, aw-webui shows every event
("Events shown") and no request of its own fails (but the two that fail for every offline user:
an icon its build does not write, and its release check, sent to GitHub, which the bench's
browser does not resolve: nothing leaves loopback), nor any script; the day summaries agree
(each app's seconds on nerve's page, its JSON twin, equal aw-server's own answer to the
Activity view's query, within a second), nerve's page lists every app, aw-webui draws its top
five with those durations (it painted the day, not "No data"), both pages load clean; in a
full run, the goals. ``--quick``: 1,000 events, 1 round, a 20k big log. ``--screenshots DIR``
keeps each page's last load as a PNG. The last line is ``RESULT {json}``, both pairs' ratios
under ``ratios``; progress goes to stderr."""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import time
import urllib.parse
import urllib.request
from collections.abc import Sequence
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any, TextIO

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import nerve
from nerve.clock import Hlc
from nerve.events import Event, SourceClass, Trust
from nerve.log.fields import EventFields
from nerve.workspace import WorkspaceDir, init_workspace
from tests.helpers.browser import CHROMIUM, CHROMIUM_ARGS, UiProcess

sys.path.insert(0, str(Path(__file__).resolve().parent))

from benchkit import failed_checks, finish, load_avg_1m, new_parser, say, workdir

DEFAULTS = {"events": 2_000, "rounds": 5, "big": 1_000_000, "live_seconds": 10.0, "rate": 5_000}
QUICK = {"events": 1_000, "rounds": 1, "big": 20_000, "live_seconds": 1.0, "rate": 1_000}
GOAL_RATIO = 0.5
GOAL_BIG_MS = 300
GOAL_SEARCH_MS = 500
DAY_NS = 86_400 * 10**9
SPAN_NS = DAY_NS - 3_600 * 10**9
APPS = [
    ("firefox", "nerve ui — timeline"),
    ("code", "data.py — nerve"),
    ("kitty", "pytest -q"),
    ("slack", "#dev"),
    ("evince", "paper.pdf"),
    ("thunderbird", "Inbox"),
]
HOST = "benchhost"
BUCKET = f"aw-watcher-window_{HOST}"
AFK_BUCKET = f"aw-watcher-afk_{HOST}"


def day_of_events(count: int, end_ns: int) -> list[tuple[int, int, str, str]]:
    """(start ns, duration ns, app, title) spread evenly over the 23 hours before ``end_ns``:
    aw-webui's "last 24 h", taken when each page loads, still holds all of them an hour on."""
    step = SPAN_NS // count
    start = end_ns - SPAN_NS
    return [
        (start + i * step, step * (1 + i % 3) // 3, *APPS[(i * 7 + i // 11) % len(APPS)])
        for i in range(count)
    ]


def away_spells(day: list[tuple[int, int, str, str]], until: int) -> list[tuple[int, int]]:
    """(start ns, duration ns) of each time nothing was in focus: between one window's end and
    the next one's start, and from the last window's end to ``until`` (the person left)."""
    ends = [t + d for t, d, _, _ in day]
    starts = [t for t, _, _, _ in day[1:]] + [until]
    return [(end, start - end) for end, start in zip(ends, starts, strict=True) if end < start]


def nerve_store(
    root: Path, day: list[tuple[int, int, str, str]], until: int
) -> tuple[WorkspaceDir, int]:
    """The day as the focus sense records it: a ``focus`` event at each window's start and an
    ``away`` event where nothing was in focus (:func:`away_spells`: aw's gaps between events,
    and after the last window); the workspace and how many events it holds."""
    ws = init_workspace(root)
    (root / "nerve.yaml").write_text("senses: {}\nlog:\n  durability: os\n")
    ws = WorkspaceDir(root)
    events = [
        _focus(t, f"{app} — {title}", {"event": "focus", "app": app, "title": title})
        for t, _, app, title in day
    ]
    events += [_focus(t, "away", {"event": "away"}) for t, _ in away_spells(day, until)]
    events.sort(key=lambda e: e.hlc.physical_ns)
    with ws.open_log() as log:
        log.import_events(events)
        log.seal()
    return ws, len(events)


def _focus(t: int, line: str, payload: dict[str, Any]) -> Event:
    return Event(
        hlc=Hlc(t, 0),
        node="bench",
        kind="observation",
        subject="window",
        source=int(SourceClass.APP_FOCUS),
        trust=Trust.FIRST_PARTY,
        line=line,
        payload=payload,
    )


# -- aw-server -------------------------------------------------------------------------------


def free_port() -> int:
    from nerve.ui.server import free_port as pick

    return pick()


def start_aw(work: Path, webui: Path | None) -> tuple[subprocess.Popen[bytes], str]:
    """A real ``aw-server`` as its users run it (not ``--testing``: no debug mode, compact
    JSON), serving ``webui`` as its pages when given (see ``aw_package``)."""
    port = free_port()
    env = {
        **os.environ,
        **{
            k: str(work / k.lower()) for k in ("XDG_DATA_HOME", "XDG_CONFIG_HOME", "XDG_CACHE_HOME")
        },
    }
    if webui is not None:
        env["PYTHONPATH"] = os.pathsep.join(
            [str(aw_package(work / "pkg", webui)), *filter(None, [env.get("PYTHONPATH")])]
        )
    argv = ["-m", "aw_server", "--storage", "memory", "--host", "127.0.0.1", "--port", str(port)]
    proc = subprocess.Popen(
        [sys.executable, *argv],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        env=env,
    )
    base = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        try:
            urllib.request.urlopen(base + "/api/0/info", timeout=2).read()
            return proc, base
        except OSError:
            time.sleep(0.2)
    proc.kill()
    raise SystemExit("aw-server did not answer within 60 s")


def aw_package(into: Path, webui: Path) -> Path:
    """A copy of the installed ``aw_server`` package whose ``static/`` is ``webui``: aw-server
    serves its pages from the ``static/`` beside its module, as the ActivityWatch bundle ships
    it, so the copy (first on ``PYTHONPATH``) serves them with aw-server's own code."""
    spec = importlib.util.find_spec("aw_server")
    assert spec is not None and spec.submodule_search_locations is not None
    installed = Path(next(iter(spec.submodule_search_locations)))
    shutil.copytree(
        installed, into / "aw_server", ignore=shutil.ignore_patterns("static", "__pycache__")
    )
    shutil.copytree(webui, into / "aw_server" / "static")
    return into


def webui_problem(webui: Path) -> str | None:
    """Why ``webui`` is not a built aw-webui (its index.html and the scripts it names)."""
    index = webui / "index.html"
    if not index.is_file():
        return f"--aw-webui {webui}: no index.html (give the folder aw-webui's build writes)"
    scripts = re.findall(r'<script[^>]* src="/?([^"]+)"', index.read_text(errors="replace"))
    if not scripts:
        return f"--aw-webui {webui}: index.html names no script (not a built aw-webui)"
    missing = [name for name in scripts if not (webui / name).is_file()]
    if missing:
        return f"--aw-webui {webui}: index.html names {missing[0]}, which is not there"
    return None


def _post(url: str, body: Any) -> None:
    req = urllib.request.Request(
        url, json.dumps(body).encode(), {"content-type": "application/json"}, method="POST"
    )
    urllib.request.urlopen(req, timeout=60).read()


def aw_store(base: str, day: list[tuple[int, int, str, str]]) -> None:
    """The day's windows in aw-server as aw-watcher-window records them: an event each."""
    windows = [_aw_event(t, d, {"app": app, "title": title}) for t, d, app, title in day]
    _bucket(base, BUCKET, "aw-watcher-window", "currentwindow", windows)


def aw_store_afk(base: str, day: list[tuple[int, int, str, str]], until: int) -> None:
    """The day's ``aw-watcher-afk`` bucket (:func:`afk_events`), without which aw-webui's
    Activity view counts no window time."""
    _bucket(base, AFK_BUCKET, "aw-watcher-afk", "afkstatus", afk_events(day, until))


def afk_events(day: list[tuple[int, int, str, str]], until: int) -> list[dict[str, Any]]:
    """aw-watcher-afk's record of the day: ``not-afk`` over each window, ``afk`` over each
    time nerve records as away (:func:`away_spells`), in time order."""
    spells = [(t, d, "not-afk") for t, d, _, _ in day]
    spells += [(t, d, "afk") for t, d in away_spells(day, until)]
    return [_aw_event(t, d, {"status": status}) for t, d, status in sorted(spells)]


def _aw_event(t: int, d: int, data: dict[str, Any]) -> dict[str, Any]:
    return {"timestamp": _iso(t), "duration": d / 1e9, "data": data}


def _bucket(base: str, bucket: str, client: str, kind: str, events: list[Any]) -> None:
    _post(f"{base}/api/0/buckets/{bucket}", {"client": client, "type": kind, "hostname": HOST})
    for i in range(0, len(events), 1_000):
        _post(f"{base}/api/0/buckets/{bucket}/events", events[i : i + 1_000])


def _iso(ns: int) -> str:
    return datetime.fromtimestamp(ns / 1e9, UTC).isoformat()


# -- the browser -----------------------------------------------------------------------------

# Run before each page's own scripts: the page's clock stamps the first frame painted after the
# timeline's drawn marks exist (found as they are added), and keeps every request's timing.
PAINT_PROBE = """
(() => {
  const marks = %s;
  performance.setResourceTimingBufferSize(100000);
  const stamp = () => requestAnimationFrame(() => setTimeout(() => {
    window.__paintedAt = performance.now();
  }));
  const watch = new MutationObserver(() => {
    if (document.querySelector(marks)) { watch.disconnect(); stamp(); }
  });
  watch.observe(document, {childList: true, subtree: true});
})();
"""
# When the network last answered, on the same clock (ms from the start of navigation).
NETWORK_END = """() => Math.max(
  ...performance.getEntriesByType('navigation').map(e => e.responseEnd),
  ...performance.getEntriesByType('resource').map(e => e.responseEnd))"""
# When the request whose URL holds the given text last answered: the timeline's data.
DATA_END = """(part) => Math.max(0, ...performance.getEntries()
  .filter(e => e.name.includes(part) && e.responseEnd !== undefined).map(e => e.responseEnd))"""
QUIET_S = 0.5  # "network idle": no request in flight for this long, as Playwright defines it
NERVE_MARKS = "#timeline .lane rect"  # the event counts (/timeline/counts)
PICTURE_MARKS = "#windows-lane rect.bar"  # the picture of the day (/timeline)
AW_MARKS = ".vis-timeline .vis-item"
# aw-webui keeps its settings in localStorage: one who looks at a day sets the timeline's
# default duration to 24 h (Settings → Timeline).
AW_SETTINGS = "localStorage.setItem('durationDefault', '86400');"
AW_SHOWN = "() => +(document.body.innerText.match(/Events shown:\\s*(\\d+)/) || [0, -1])[1]"
# The day pair's marks: nerve's per-app rows; aw-webui's summary bars (its top apps, drawn
# by the same query that gives its top titles and categories).
DAY_MARKS = "#apps td.name"
AW_DAY_MARKS = "svg.appsummary g[id^='summary_app_']"
# aw-webui's day starts at 04:00 unless set otherwise (Settings → Start of day); nerve's at
# midnight: one who compares days sets aw's to midnight.
AW_DAY_SETTINGS = "localStorage.setItem('startOfDay', '00:00');"
# What each day page shows per app: (name, duration as written on the page).
DAY_SHOWN = """() => Array.from(document.querySelectorAll('#apps tr'), r =>
  [r.querySelector('.name')?.textContent, r.querySelector('.dur')?.textContent])"""
AW_APPS_SHOWN = """() => {
  const apps = document.querySelector('svg.appsummary');
  return apps ? Array.from(apps.querySelectorAll("g[id^='summary_app_']"),
    g => Array.from(g.querySelectorAll('text'), t => t.textContent)) : [];
}"""


class Loader:
    """Cold loads (a fresh browser context each: empty cache and storage, the clock in
    ``zone``) in one Chromium, each timed to painted: the page's marks drawn and the network
    idle; with ``shots``, a screenshot of each page's last load is saved there."""

    def __init__(
        self, browser: Any, timeout_s: float, zone: str, shots: Path | None = None
    ) -> None:
        self.browser = browser
        self.timeout_s = timeout_s
        self.zone = zone
        self.shots = shots

    def rounds(
        self, pair: str, pages: dict[str, dict[str, Any]], count: int
    ) -> dict[str, list[dict[str, Any]]]:
        """Each page of the ``pair`` loaded once untimed (both servers warm), then ``count``
        rounds of every page in turn; the loads of each page."""
        for page in pages.values():
            self.load(**page)
        runs: dict[str, list[dict[str, Any]]] = {name: [] for name in pages}
        for r in range(count):
            say(f"{pair}: round {r + 1}/{count}")
            for name, page in pages.items():
                runs[name].append(self.load(**page, shot=f"{name}.png"))
        return runs

    def load(
        self,
        url: str,
        marks: str | None,
        cookie: dict[str, Any] | None = None,
        settings: str = "",
        inspect: str = "() => null",
        data: str = "/",
        shot: str = "",
    ) -> dict[str, Any]:
        context = self.browser.new_context(
            viewport={"width": 1280, "height": 800}, timezone_id=self.zone
        )
        try:
            if cookie is not None:
                context.add_cookies([cookie])
            if settings:
                context.add_init_script(settings)
            if marks is not None:
                context.add_init_script(PAINT_PROBE % json.dumps(marks))
            page = context.new_page()
            wire = _Wire(context.new_cdp_session(page), page)
            page.goto(url, wait_until="commit")
            if marks is not None:
                self._painted(page, url)
            wire.settle(page, self.timeout_s)
            painted = page.evaluate("window.__paintedAt ?? null")
            network = page.evaluate(NETWORK_END)
            if self.shots is not None and shot:
                page.screenshot(path=self.shots / shot, full_page=True)
            return {
                "ms": round(max(painted or 0, network), 1),
                "marks_painted_ms": None if painted is None else round(painted, 1),
                "network_done_ms": round(network, 1),
                "data_done_ms": round(page.evaluate(DATA_END, data), 1),
                "marks": page.evaluate(f"document.querySelectorAll({json.dumps(marks)}).length")
                if marks
                else 0,
                "shown": page.evaluate(inspect),
                **wire.figures(),
            }
        finally:
            context.close()

    def _painted(self, page: Any, url: str) -> None:
        from playwright.sync_api import TimeoutError as Late

        try:
            page.wait_for_function(
                "() => window.__paintedAt !== undefined",
                polling=50,
                timeout=self.timeout_s * 1000,
            )
        except Late:
            raise SystemExit(f"{url}: no timeline painted within {self.timeout_s:.0f} s") from None


class _Wire:
    """What crossed the wire for one page (CDP's counts), and when it fell quiet."""

    def __init__(self, cdp: Any, page: Any) -> None:
        self.bytes = 0
        self.requests = 0
        self.inflight: set[str] = set()
        self.urls: dict[str, str] = {}
        self.failed: list[str] = []
        self.errors: list[str] = []
        self.page_errors: list[str] = []
        self.off_loopback: list[str] = []
        self.last_change = time.monotonic()
        cdp.send("Network.enable")
        cdp.on("Network.requestWillBeSent", self._sent)
        cdp.on("Network.loadingFinished", self._finished)
        cdp.on("Network.loadingFailed", self._failed)
        page.on("response", self._answered)
        page.on("console", self._logged)
        page.on("pageerror", lambda e: self.page_errors.append(str(e)[:200]))

    def _answered(self, response: Any) -> None:
        if response.status >= 400:
            self.failed.append(f"{response.status} {response.url}")

    def _logged(self, message: Any) -> None:
        if message.type == "error":
            self.errors.append(message.text[:200])

    def _sent(self, event: dict[str, Any]) -> None:
        self.inflight.add(event["requestId"])
        self.requests += event.get("redirectResponse") is None
        url = self.urls[event["requestId"]] = event["request"]["url"]
        if urllib.parse.urlsplit(url).hostname not in (None, "127.0.0.1", "localhost"):
            self.off_loopback.append(url)
        self.last_change = time.monotonic()

    def _finished(self, event: dict[str, Any]) -> None:
        self.bytes += int(event["encodedDataLength"])
        self.inflight.discard(event["requestId"])
        self.last_change = time.monotonic()

    def _failed(self, event: dict[str, Any]) -> None:
        url = self.urls.get(event["requestId"], "?")
        self.failed.append(f"{event.get('errorText', 'failed')} {url}")
        self.inflight.discard(event["requestId"])
        self.last_change = time.monotonic()

    def settle(self, page: Any, deadline_s: float) -> None:
        deadline = time.monotonic() + deadline_s
        while self.inflight or time.monotonic() - self.last_change < QUIET_S:
            if time.monotonic() > deadline:
                raise SystemExit(f"the network did not fall quiet within {deadline_s:.0f} s")
            page.wait_for_timeout(50)  # lets Playwright deliver the network events meanwhile

    def figures(self) -> dict[str, Any]:
        return {
            "bytes": self.bytes,
            "requests": self.requests,
            "failed": self.failed[:10],
            "console_errors": self.errors[:10],
            "page_errors": self.page_errors[:10],
            "off_loopback": self.off_loopback[:10],
        }


def best(rounds: list[dict[str, Any]]) -> dict[str, Any]:
    return min(rounds, key=lambda r: r["ms"])


# -- the parts -------------------------------------------------------------------------------


def side_by_side(work: Path, args: argparse.Namespace) -> dict[str, Any]:
    """The generated day in both stores, both servers up, both pairs of pages loaded
    ``--rounds`` times: ``side_by_side`` (the timelines) and then ``day_summary`` (nerve's day
    page against aw-webui's Activity view). aw's afk bucket is posted between the two: its
    Activity view needs it, and its Timeline would draw it as a second lane of as many items
    again (vis-timeline grows worse than linearly with them), so the timeline pair is measured
    as before, on the windows alone."""
    from playwright.sync_api import sync_playwright

    now = time.time_ns()
    since, until = now - DAY_NS, now + 10**9
    day = day_of_events(args.events, now)
    zone, date, midnight = day_zone(now)
    say(f"{len(day)} events over the last 24 h into nerve and aw-server ({date} in {zone})")
    state = {"XDG_STATE_HOME": str(work / "state")}
    os.environ.update(state)
    ws, stored = nerve_store(work / "ws", day, until)
    aw, aw_base = start_aw(work / "aw", args.aw_webui)
    ui = UiProcess(ws.root, {**state, "TZ": zone})
    webui = args.aw_webui is not None
    try:
        aw_store(aw_base, day)
        cookie = _browser_cookie(ui.base, ws.root)
        with sync_playwright() as pw:
            browser = pw.chromium.launch(executable_path=CHROMIUM, args=BENCH_ARGS)
            try:
                loader = Loader(browser, args.paint_timeout, zone, args.screenshots)
                pages = _timeline_pages(ui.base, aw_base, cookie, since, until, webui)
                runs = loader.rounds("timelines", pages, args.rounds)
                index = None if webui else loader.load(aw_base + "/", None)
                aw_store_afk(aw_base, day, until)
                pages = _day_pages(ui.base, aw_base, cookie, date, midnight, webui)
                runs.update(loader.rounds("day summaries", pages, args.rounds))
            finally:
                browser.close()
        counted = _timeline_count(ui.base, cookie["value"], since, until)
        posted = len(_aw_events(aw_base, since, until))
        served = _serves_build(aw_base, args.aw_webui)
        apps = {"nerve": _nerve_apps(ui.base, cookie["value"], date)}
        apps["aw"] = _aw_apps(aw_base, midnight)
        idle = _idle(ui.proc.pid)
    finally:
        ui.stop()
        aw.terminate()
        aw.wait(timeout=20)
    timeline = _timeline_pair(runs, stored, counted, posted)
    timeline.update(
        aw_peer="aw-webui" if webui else "events request (lower bound)",
        aw_webui_index=index,
        aw_serves_the_build=served,
        ui_idle=idle,
    )
    return {"side_by_side": timeline, "day_summary": _day_pair(runs, apps, date, zone, webui)}


def day_zone(now_ns: int) -> tuple[str, str, int]:
    """A time zone in which the generated day (the 23 hours before ``now_ns``) is one
    calendar day, that day (``YYYY-MM-DD``) and its midnight (ns): the zone whose clocks read
    23:xx at ``now_ns``. Both day summaries show a calendar day of the viewer's zone, so the
    ``nerve ui`` process (``TZ``) and the browser (its context's zone) are put in it."""
    at = datetime.fromtimestamp(now_ns / 1e9, UTC)
    hours = (23 - at.hour) % 24
    hours -= 24 if hours > 14 else 0  # zones run from UTC-12 to UTC+14
    local = at + timedelta(hours=hours)
    midnight = datetime(local.year, local.month, local.day, tzinfo=UTC) - timedelta(hours=hours)
    name = f"Etc/GMT{-hours:+d}" if hours else "Etc/GMT"  # POSIX signs: Etc/GMT+5 is UTC-5
    return name, local.date().isoformat(), int(midnight.timestamp()) * 10**9


def _browser_cookie(base: str, root: Path) -> dict[str, Any]:
    """The ``nerve ui`` session cookie at ``base`` for the browser: logged in."""
    from nerve.ui.auth import Keys, token_path

    return {
        "name": _cookie_name(base),
        "value": Keys(token_path(nerve.open(root))).cookie(),
        "domain": urllib.parse.urlsplit(base).hostname,
        "path": "/",
        "httpOnly": True,
        "sameSite": "Strict",
    }


def _timeline_pages(
    base: str, aw_base: str, cookie: dict[str, Any], since: int, until: int, webui: bool
) -> dict[str, dict[str, Any]]:
    """The timeline pair: nerve's picture of the day and its event-count page, aw's timeline."""
    window = f"since={since}&until={until}"
    nerve_page = {"url": f"{base}/timeline?{window}", "marks": PICTURE_MARKS}
    nerve_page.update(cookie=cookie, data="/timeline?since=")
    counts_page = {"url": f"{base}/timeline/counts?{window}", "marks": NERVE_MARKS}
    counts_page.update(cookie=cookie, data="/timeline/counts?since=")
    return {
        "nerve": nerve_page,
        "nerve_counts_page": counts_page,
        "aw": _aw_page(aw_base, since, until, webui),
    }


def _day_pages(
    base: str, aw_base: str, cookie: dict[str, Any], date: str, midnight: int, webui: bool
) -> dict[str, dict[str, Any]]:
    """The day pair: nerve's day at a glance (``/?day=``) and aw-webui's Activity view of the
    same date (its summary: top apps, titles, categories); without the pages, what aw's
    summary query reads: the date's window events."""
    nerve_day = {"url": f"{base}/?day={date}", "marks": DAY_MARKS, "cookie": cookie}
    nerve_day.update(inspect=DAY_SHOWN, data="/?day=")
    aw_day: dict[str, Any] = {
        "url": _aw_events_url(aw_base, midnight, midnight + DAY_NS),
        "marks": None,
        "data": "/events?",
    }
    if webui:
        aw_day = {"url": f"{aw_base}/#/activity/{HOST}/day/{date}/view/summary"}
        aw_day.update(marks=AW_DAY_MARKS, settings=AW_DAY_SETTINGS, inspect=AW_APPS_SHOWN)
        aw_day.update(data="/query/")
    return {"nerve_day": nerve_day, "aw_activity": aw_day}


def _timeline_pair(
    runs: dict[str, list[dict[str, Any]]], stored: int, counted: int, posted: int
) -> dict[str, Any]:
    """The timeline pair's figures: the fastest round of each page and their ratios."""
    n, a, c = (best(runs[k]) for k in ("nerve", "aw", "nerve_counts_page"))
    return {
        "nerve": n,
        "aw": a,
        "nerve_counts_page": c,
        "counts_time_ratio": round(c["ms"] / a["ms"], 3),
        "counts_bytes_ratio": round(c["bytes"] / a["bytes"], 3),
        "nerve_stored": stored,
        "windows_drawn": n["marks"],
        "rounds_ms": {k: [r["ms"] for r in runs[k]] for k in ("nerve", "nerve_counts_page", "aw")},
        "time_ratio": round(n["ms"] / a["ms"], 3),
        "bytes_ratio": round(n["bytes"] / a["bytes"], 3),
        "nerve_counted": counted,
        "aw_returned": posted,
    }


def _day_pair(
    runs: dict[str, list[dict[str, Any]]],
    apps: dict[str, dict[str, float]],
    date: str,
    zone: str,
    webui: bool,
) -> dict[str, Any]:
    """The day pair's figures: the fastest round of each page, their ratios, and each side's
    seconds per app for the date (nerve's page's JSON twin, aw's own summary query)."""
    n, a = best(runs["nerve_day"]), best(runs["aw_activity"])
    return {
        "date": date,
        "zone": zone,
        "nerve": n,
        "aw": a,
        "aw_peer": "aw-webui Activity" if webui else "the date's window events (stand-in)",
        "rounds_ms": {k: [r["ms"] for r in runs[k]] for k in ("nerve_day", "aw_activity")},
        "time_ratio": round(n["ms"] / a["ms"], 3),
        "bytes_ratio": round(n["bytes"] / a["bytes"], 3),
        "apps_s": apps,
    }


BENCH_ARGS = [*CHROMIUM_ARGS, "--host-resolver-rules=MAP * ~NOTFOUND, EXCLUDE 127.0.0.1"]


def _aw_page(base: str, since: int, until: int, webui: bool) -> dict[str, Any]:
    """aw-webui's Timeline for the last 24 h; without the pages, what it must fetch before it
    can paint anything: the day's events of the bucket."""
    if webui:
        return {
            "url": f"{base}/#/timeline",
            "marks": AW_MARKS,
            "settings": AW_SETTINGS,
            "inspect": AW_SHOWN,
            "data": "/events?",
        }
    return {"url": _aw_events_url(base, since, until), "marks": None, "data": "/events?"}


def _aw_events_url(base: str, since: int, until: int) -> str:
    """aw-server's URL for the window events of [since, until)."""
    window = urllib.parse.urlencode({"start": _iso(since), "end": _iso(until), "limit": -1})
    return f"{base}/api/0/buckets/{BUCKET}/events?{window}"


def _aw_events(base: str, since: int, until: int) -> list[dict[str, Any]]:
    events: list[dict[str, Any]] = json.loads(
        urllib.request.urlopen(_aw_events_url(base, since, until), timeout=60).read()
    )
    return events


# aw-webui's summary query for one host (its canonicalEvents, without categories): window
# events while not afk, summed per app.
AW_APPS_QUERY = [
    f'events = flood(query_bucket("{BUCKET}"));',
    f'not_afk = flood(query_bucket("{AFK_BUCKET}"));',
    'not_afk = filter_keyvals(not_afk, "status", ["not-afk"]);',
    "events = filter_period_intersect(events, not_afk);",
    'RETURN = sort_by_duration(merge_events_by_keys(events, ["app"]));',
]


def _aw_apps(base: str, midnight: int) -> dict[str, float]:
    """aw-server's own answer for the day from ``midnight``: seconds per app in focus."""
    period = f"{_iso(midnight)}/{_iso(midnight + DAY_NS)}"
    body = json.dumps({"timeperiods": [period], "query": AW_APPS_QUERY}).encode()
    req = urllib.request.Request(
        f"{base}/api/0/query/", body, {"content-type": "application/json"}, method="POST"
    )
    (events,) = json.loads(urllib.request.urlopen(req, timeout=60).read())
    return {e["data"]["app"]: round(e["duration"], 3) for e in events}


def _nerve_apps(base: str, cookie: str, date: str) -> dict[str, float]:
    """nerve's day page (its JSON twin) for ``date``: seconds per app in focus."""
    req = urllib.request.Request(
        f"{base}/?day={date}",
        headers={"accept": "application/json", "cookie": f"{_cookie_name(base)}={cookie}"},
    )
    day = json.loads(urllib.request.urlopen(req, timeout=60).read())
    return {a["app"]: round(a["ns"] / 1e9, 3) for a in day["apps"]}


def _serves_build(base: str, webui: Path | None) -> bool | None:
    """Whether aw-server answers ``/`` with the given build's index.html."""
    if webui is None:
        return None
    served = urllib.request.urlopen(base + "/", timeout=60).read()
    return bool(served == (webui / "index.html").read_bytes())


def _cookie_name(base: str) -> str:
    """The session cookie's name for the server at ``base`` (it names the port)."""
    from nerve.ui.auth import cookie_name

    return cookie_name(int(base.rsplit(":", 1)[1]))


def _timeline_count(base: str, cookie: str, since: int, until: int) -> int:
    req = urllib.request.Request(
        f"{base}/timeline/counts?since={since}&until={until}",
        headers={"accept": "application/json", "cookie": f"{_cookie_name(base)}={cookie}"},
    )
    return int(sum(json.loads(urllib.request.urlopen(req, timeout=60).read())["counts"]))


def _idle(pid: int) -> dict[str, Any]:
    import psutil

    proc = psutil.Process(pid)
    for child in [proc, *proc.children(recursive=True)]:
        child.cpu_percent(None)
    time.sleep(2.0)
    return {
        "rss_mb": round(proc.memory_info().rss / 2**20, 1),
        "cpu_percent_over_2s": proc.cpu_percent(None),
    }


def live_rate(work: Path, seconds: float, rate: int) -> dict[str, Any]:
    """Append ``rate`` events/s for ``seconds`` while the live tail (server-sent events from a
    real ``nerve ui``) is followed; what arrived, doubled, and how late the last one was."""
    import threading

    from nerve.ui.auth import Keys, token_path

    root = work / "live"
    ws = init_workspace(root)
    (root / "nerve.yaml").write_text("senses: {}\nlog:\n  durability: os\n")
    ws = WorkspaceDir(root)
    with ws.open_log() as log:
        first = log.append_columns(EventFields(**_columns(["start"])))
    after = f"{first.column('physical_ns')[0].as_py()}.{first.column('logical')[0].as_py()}"
    ui = UiProcess(ws.root, {"XDG_STATE_HOME": os.environ["XDG_STATE_HOME"]})
    seen: list[str] = []
    stop = threading.Event()
    cookie = Keys(token_path(nerve.open(ws.root))).cookie()

    def follow() -> None:
        req = urllib.request.Request(
            f"{ui.base}/live/stream?after={after}",
            headers={"cookie": f"{_cookie_name(ui.base)}={cookie}"},
        )
        with urllib.request.urlopen(req, timeout=60) as stream:
            for raw in stream:
                if raw.startswith(b"data: "):
                    seen.extend(e["line"] for e in json.loads(raw[6:]))
                if stop.is_set():
                    return

    reader = threading.Thread(target=follow, daemon=True)
    reader.start()  # from the stamp of the first event: none appended after it can be missed
    total, batch = int(seconds * rate), max(1, rate // 20)
    t0 = time.perf_counter()
    with ws.open_log() as log:
        for start in range(0, total, batch):
            log.append_columns(
                EventFields(**_columns([f"live {i}" for i in range(start, start + batch)]))
            )
            ahead = t0 + (start + batch) / rate - time.perf_counter()
            if ahead > 0:
                time.sleep(ahead)
    appended_s = time.perf_counter() - t0
    deadline = time.monotonic() + 60
    while len(seen) < total and time.monotonic() < deadline:
        time.sleep(0.05)
    lag_s = time.perf_counter() - t0 - appended_s
    stop.set()
    ui.stop()
    wanted = [f"live {i}" for i in range(total)]
    return {
        "rate_asked": rate, "appended": total, "rate_appended": round(total / appended_s),
        "received": len(seen), "missing": len(set(wanted) - set(seen)),
        "doubled": len(seen) - len(set(seen)), "in_order": seen == wanted,
        "last_arrived_after_s": round(lag_s, 2),
    }  # fmt: skip


def _columns(lines: list[str]) -> dict[str, Any]:
    n = len(lines)
    return {
        "kind": ["observation"] * n, "subject": ["bench"] * n, "source": [5] * n,
        "trust": [1] * n, "valid_time_ns": [None] * n, "payload": [b""] * n, "line": lines,
    }  # fmt: skip


def big_timeline(work: Path, events: int) -> dict[str, Any]:
    """Server time of the timeline page for a day holding ``events`` events."""
    from starlette.testclient import TestClient

    from nerve.ui.app import build_app
    from nerve.ui.auth import Keys, token, token_path
    from nerve.ui.guard import Served
    from tests.helpers.biglog import build_log

    say(f"building a {events:,}-event log for the server-time figure")
    door = nerve.open(build_log(work / "big", events).root)
    app = build_app(door, Keys(token_path(door)), Served("127.0.0.1", 80))
    client = TestClient(app, base_url="http://127.0.0.1:80")
    token(door)
    keys = Keys(token_path(door))
    client.get(f"/login?token={keys.login_code()}", follow_redirects=False)
    times, total = [], 0
    for _ in range(6):
        t0 = time.perf_counter()
        r = client.get("/timeline/counts?since=24h", headers={"accept": "application/json"})
        times.append((time.perf_counter() - t0) * 1000)
        total = sum(r.json()["counts"])
        html = client.get("/timeline/counts?since=24h")
        assert html.status_code == 200
    last = events - 1
    while last % 3 != 2 or last % 30 == 2:  # the rows biglog writes as "<sense> detail <i>"
        last -= 1
    searches = []
    for i in range(6):
        t0 = time.perf_counter()
        found = client.get(
            f"/events?text=detail+{last - 30 * i}&since=7d",
            headers={"accept": "application/json"},
        ).json()
        searches.append((time.perf_counter() - t0) * 1000)
        assert found["events"], found
    return {
        "events": events,
        "in_day": total,
        "ms_median": round(statistics.median(times[1:]), 1),
        "search_week_ms_median": round(statistics.median(searches[1:]), 1),
        "first_ms": round(times[0], 1),  # cold: the segment's summary and screen are built
        "search_first_ms": round(searches[0], 1),
    }


# -- main ------------------------------------------------------------------------------------


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = new_parser(__doc__)
    parser.add_argument("--events", type=int)
    parser.add_argument("--rounds", type=int)
    parser.add_argument("--big", type=int, help="events in the server-time log (0: skip)")
    parser.add_argument("--live-seconds", type=float, help="how long to append (0: skip)")
    parser.add_argument("--rate", type=int, help="events/s appended while the tail follows")
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--keep", action="store_true", help="keep the temporary folder")
    parser.add_argument(
        "--aw-webui",
        type=Path,
        metavar="DIR",
        help="a built aw-webui (its index.html and js/) for aw-server to serve; "
        "without it aw is measured by its events request alone, a lower bound",
    )
    parser.add_argument(
        "--paint-timeout", type=float, default=300.0, help="seconds a page may take to paint"
    )
    parser.add_argument(
        "--screenshots", type=Path, metavar="DIR", help="save each page's last load here"
    )
    args = parser.parse_args(argv)
    if args.aw_webui is not None and (problem := webui_problem(args.aw_webui)):
        parser.error(problem)
    base = QUICK if args.quick else DEFAULTS
    for name, value in base.items():
        if getattr(args, name) is None:
            setattr(args, name, value)
    return args


def checks(result: dict[str, Any], args: argparse.Namespace) -> dict[str, bool]:
    side = result["side_by_side"]
    out = {
        "nerve_counts_every_event": side["nerve_counted"] == side["nerve_stored"],
        "nerve_draws_every_window": side["windows_drawn"] == args.events,
        "aw_returns_every_event": side["aw_returned"] == args.events,
        "nerve_page_clean": _clean(side["nerve"]),
        "nerve_counts_page_clean": _clean(side["nerve_counts_page"]),
    }
    if args.aw_webui is not None:
        out["aw_serves_the_build"] = side["aw_serves_the_build"] is True
        out["aw_webui_shows_every_event"] = side["aw"]["shown"] == args.events
        out["aw_webui_page_clean"] = _clean(side["aw"], AW_KNOWN_FAILURES, console=False)
    if "live" in result:
        live = result["live"]
        out["live_no_loss"] = live["missing"] == 0 and live["received"] == live["appended"]
        out["live_no_doubles"] = live["doubled"] == 0
        out["live_in_order"] = live["in_order"]
    out.update(day_checks(result["day_summary"], args.aw_webui is not None))
    if not args.quick:
        out["time_goal"] = side["time_ratio"] <= GOAL_RATIO
        out["bytes_goal"] = side["bytes_ratio"] <= GOAL_RATIO
        out["day_time_goal"] = result["day_summary"]["time_ratio"] <= GOAL_RATIO
        out["day_bytes_goal"] = result["day_summary"]["bytes_ratio"] <= GOAL_RATIO
        if "big" in result:
            out["big_timeline_goal"] = result["big"]["ms_median"] <= GOAL_BIG_MS
            out["big_search_goal"] = result["big"]["search_week_ms_median"] <= GOAL_SEARCH_MS
    return out


def day_checks(day: dict[str, Any], webui: bool) -> dict[str, bool]:
    """Both day summaries show the same day: the same seconds per app (within one), nerve's
    page a row for each app; with aw-webui, its page draws its top apps with those
    durations, so it painted the day, not "No data"."""
    nerve_s, aw_s = day["apps_s"]["nerve"], day["apps_s"]["aw"]
    out = {
        "day_totals_agree": bool(aw_s) and _same_seconds(nerve_s, aw_s),
        "nerve_day_lists_every_app": day["nerve"]["marks"] == len(aw_s),
        "nerve_day_page_clean": _clean(day["nerve"]),
    }
    if webui:
        shown = {name: _seconds(text) for name, text in day["aw"]["shown"]}
        drawn = {name: aw_s.get(name, -9.0) for name in shown}
        out["aw_webui_activity_shows_the_apps"] = len(shown) == min(5, len(aw_s)) and (
            _same_seconds(shown, drawn)
        )
        out["aw_webui_activity_page_clean"] = _clean(day["aw"], AW_KNOWN_FAILURES, console=False)
    return out


def _same_seconds(a: dict[str, float], b: dict[str, float]) -> bool:
    """The same names, each with the same whole seconds (within one: each side rounds)."""
    return a.keys() == b.keys() and all(abs(int(a[k]) - int(b[k])) <= 1 for k in a)


def _seconds(text: str) -> float:
    """Seconds in aw-webui's way of writing a duration (``3h 2m 5s``)."""
    units = {"h": 3600, "m": 60, "s": 1}
    return float(sum(int(n) * units[u] for n, u in re.findall(r"(\d+)([hms])", text)))


# Requests aw-webui makes that fail here, as they would for its users offline: an SVG icon
# its index.html names but its build does not write, and its release check, which asks GitHub
# (the bench's browser resolves no name but loopback's, so it fails at once).
AW_KNOWN_FAILURES = (
    "/img/icons/favicon.svg",
    "https://api.github.com/repos/ActivityWatch/activitywatch/releases/latest",
)


def _flask_version() -> tuple[int, int]:
    """The installed Flask's (major, minor): aw-server's web framework."""
    from importlib.metadata import version

    major, minor = version("flask").split(".")[:2]
    return int(major), int(minor)


def _clean(load: dict[str, Any], known: Sequence[str] = (), console: bool = True) -> bool:
    """No failed request and nothing off loopback (but the ``known``), no uncaught error, and
    (with ``console``) nothing logged as an error."""
    failed = [f for f in load["failed"] if not f.endswith(tuple(known))]
    away = [u for u in load["off_loopback"] if u not in known]
    logged = load["console_errors"] if console else []
    return not (failed or away or load["page_errors"] or logged)


def main(argv: Sequence[str] | None = None, out: TextIO = sys.stdout) -> int:
    args = parse_args(argv)
    missing = [m for m in ("aw_server", "playwright") if importlib.util.find_spec(m) is None]
    if missing or not Path(CHROMIUM).exists():
        need = missing or CHROMIUM
        say(f"missing: {need} (pip install -e '.[test,bench]'; apt-get install chromium)")
        return 1
    if (flask := _flask_version()) >= (2, 3):
        say(
            f"Flask {flask[0]}.{flask[1]}: aw-server 0.12.0's query API (aw-webui's Activity) "
            "fails with Flask >= 2.3 (pip install -e '.[test,bench]' installs 2.2)"
        )
        return 1
    with workdir("nerve-ui-bench-", keep=args.keep) as work:
        result: dict[str, Any] = side_by_side(work, args)
        if args.live_seconds:
            result["live"] = live_rate(work, args.live_seconds, args.rate)
        if args.big:
            result["big"] = big_timeline(work, args.big)
    result.update(events=args.events, rounds=args.rounds, load_avg_1m=load_avg_1m())
    result["ratios"] = {
        pair: {"time": result[key]["time_ratio"], "bytes": result[key]["bytes_ratio"]}
        for pair, key in (("timeline", "side_by_side"), ("day", "day_summary"))
    }
    result["checks"] = checks(result, args)
    result["failed_checks"] = failed_checks(result["checks"])
    render(result, out)
    return finish(result, out)


def render(result: dict[str, Any], out: TextIO) -> None:
    s = result["side_by_side"]
    n, a = s["nerve"], s["aw"]
    webui = s["aw_peer"] == "aw-webui"
    peer = "aw-webui timeline painted" if webui else "aw events request"
    rows = (("nerve timeline painted", n), ("nerve counts page painted", s["nerve_counts_page"]))
    for name, load in (*rows, (peer, a)):
        _render_load(name, load, out)
    bound = "" if webui else "  (against a lower bound: no --aw-webui DIR given)"
    for what in ("time", "bytes"):
        ratio = s[f"{what}_ratio"]
        verdict = "met" if ratio <= GOAL_RATIO else "missed"
        print(
            f"ratio nerve/aw {what:<12}{ratio:9.3f}   goal <= {GOAL_RATIO}: {verdict}{bound}",
            file=out,
        )
    print(
        f"counts page / aw: time {s['counts_time_ratio']:.3f}, bytes {s['counts_bytes_ratio']:.3f}"
        f"; window bars drawn {s['windows_drawn']:,}",
        file=out,
    )
    if webui:
        print(f"aw-webui shows             {a['shown']:,} events; failed {a['failed']}", file=out)
    else:
        w = s["aw_webui_index"]
        print(
            f"aw-server's own index.html {w['bytes']:,} B, {len(w['failed'])} failed requests "
            "(the wheel ships no js/: aw-webui cannot paint)",
            file=out,
        )
    render_day(result["day_summary"], out)
    print(f"nerve ui idle            {s['ui_idle']}", file=out)
    if "live" in result:
        v = result["live"]
        print(
            f"live tail at {v['rate_appended']:,}/s: {v['received']:,} of {v['appended']:,} "
            f"received, {v['doubled']} doubled, last {v['last_arrived_after_s']} s after",
            file=out,
        )
    if "big" in result:
        b = result["big"]
        print(
            f"timeline, {b['events']:,} events in a day: {b['ms_median']} ms server time "
            f"(first {b['first_ms']} ms)",
            file=out,
        )
        print(
            f"search over the week: {b['search_week_ms_median']} ms "
            f"(first {b['search_first_ms']} ms)",
            file=out,
        )


def render_day(d: dict[str, Any], out: TextIO) -> None:
    """The day pair's lines: both pages' loads, the ratios, each side's seconds per app."""
    webui = d["aw_peer"] == "aw-webui Activity"
    peer = "aw-webui Activity painted" if webui else "aw day's events request"
    for name, load in (("nerve day page painted", d["nerve"]), (peer, d["aw"])):
        _render_load(name, load, out)
    bound = "" if webui else " (against a stand-in: no --aw-webui DIR given)"
    print(
        f"day ratio nerve/aw: time {d['time_ratio']:.3f}, bytes {d['bytes_ratio']:.3f}; goal "
        f"<= {GOAL_RATIO}{bound}; {d['date']} in {d['zone']}",
        file=out,
    )
    for side, apps in d["apps_s"].items():
        listed = ", ".join(f"{app} {sec:,.0f} s" for app, sec in apps.items())
        print(f"seconds per app, {side + ':':<7}{listed}", file=out)
    if webui:
        print(f"aw-webui Activity draws    {d['aw']['shown']}", file=out)


def _render_load(name: str, load: dict[str, Any], out: TextIO) -> None:
    print(
        f"{name:<27}{load['ms']:9.1f} ms {load['bytes']:>11,} B  "
        f"({load['requests']} requests; marks at {load['marks_painted_ms']} ms, "
        f"network done at {load['network_done_ms']} ms)",
        file=out,
    )


if __name__ == "__main__":
    raise SystemExit(main())
