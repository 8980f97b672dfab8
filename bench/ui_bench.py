"""`nerve ui`'s timeline against ActivityWatch's aw-server, in the same headless Chromium.

    .venv/bin/python bench/ui_bench.py [--events N] [--rounds R] [--big N] [--quick]

A generated day of window-focus events (``--events``, spread over the last 24 hours, each
with an app, a title and a duration) is written into both stores: a nerve workspace (imported
and sealed) and a real ``aw-server`` process (``--testing``, one ``aw-watcher-window``
bucket, events posted through its REST API; its ``memory`` storage, as 0.12.0's peewee and
sqlite storages fail with today's aw-core and werkzeug: a created-time type error and a
cross-thread SQLite handle). Then, ``--rounds`` times, each in a fresh browser context (empty
cache), Debian's Chromium loads:

* **nerve**: ``nerve ui``'s timeline for the last 24 hours, timed from navigation to the
  first painted swimlane mark (the next animation frame after ``#timeline .lane rect``
  exists), bytes counted over the wire (CDP ``encodedDataLength``) until the network is idle;
* **aw**: what aw-webui's timeline must fetch before it can paint anything, the day's events
  of the bucket (``/api/0/buckets/<id>/events?start=…&end=…``), timed and counted the same
  way. The aw-webui build that PyPI's ``aw-server`` 0.12.0 ships has ``index.html`` but not
  the ``js/`` bundles it names (the bench reports how many of its requests fail), so aw's page
  cannot be painted here; its data request alone is a lower bound on its time and bytes, and
  a ratio under the goal against that bound holds against the full page a fortiori.

Both servers answer once untimed first (a running server is what is compared, not its
start-up). Ratios are nerve / aw (fastest round each); goals are ≤ 0.5 for both. ``--big``
builds a second log of that many events stamped within one day and times the timeline page
for that day in process (the server's time, median of 5 after a first request, reported
apart: it builds the segment's summary and finds the rows the privacy rules change), and a
search over the week (``/events?text=``, one match, median of 5, and its first). The
``nerve ui`` process's memory and CPU while idle are reported. The live tail is followed
over server-sent events while events are appended at ``--rate`` per second for
``--live-seconds``: every one must arrive, once, in order. Checks: nerve's timeline counts
every event of the day; aw returns every event posted; in a full run, the goals.
``--quick``: 1,000 events, 1 round, a 20k big log. The last line is ``RESULT {json}``;
progress goes to stderr.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import statistics
import subprocess
import sys
import time
import urllib.parse
import urllib.request
from collections.abc import Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, TextIO

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from nerve.clock import Hlc
from nerve.events import Event, SourceClass, Trust
from nerve.log.fields import EventFields
from nerve.workspace import WorkspaceDir, init_workspace
from tests.helpers.browser import CHROMIUM, CHROMIUM_ARGS, UiProcess

sys.path.insert(0, str(Path(__file__).resolve().parent))

from benchkit import failed_checks, finish, load_avg_1m, new_parser, say, workdir

DEFAULTS = {"events": 20_000, "rounds": 5, "big": 1_000_000, "live_seconds": 10.0, "rate": 5_000}
QUICK = {"events": 1_000, "rounds": 1, "big": 20_000, "live_seconds": 1.0, "rate": 1_000}
GOAL_RATIO = 0.5
GOAL_BIG_MS = 300
GOAL_SEARCH_MS = 500
DAY_NS = 86_400 * 10**9
APPS = [
    ("firefox", "nerve ui — timeline"),
    ("code", "data.py — nerve"),
    ("kitty", "pytest -q"),
    ("slack", "#dev"),
    ("evince", "paper.pdf"),
    ("thunderbird", "Inbox"),
]
BUCKET = "aw-watcher-window_benchhost"


def day_of_events(count: int, end_ns: int) -> list[tuple[int, int, str, str]]:
    """(start ns, duration ns, app, title) spread evenly over the 24 hours before ``end_ns``."""
    step = DAY_NS // count
    start = end_ns - DAY_NS
    return [
        (start + i * step, step * (1 + i % 3) // 3, *APPS[(i * 7 + i // 11) % len(APPS)])
        for i in range(count)
    ]


def nerve_store(root: Path, day: list[tuple[int, int, str, str]]) -> WorkspaceDir:
    ws = init_workspace(root)
    (root / "nerve.yaml").write_text("senses: {}\nlog:\n  durability: os\n")
    ws = WorkspaceDir(root)
    events = [
        Event(
            hlc=Hlc(t, 0),
            node="bench",
            kind="observation",
            subject="window",
            source=int(SourceClass.APP_FOCUS),
            trust=Trust.FIRST_PARTY,
            line=f"{app} — {title}",
            payload={"app": app, "title": title, "duration_ms": d // 10**6},
        )
        for t, d, app, title in day
    ]
    with ws.open_log() as log:
        log.import_events(events)
        log.seal()
    return ws


# -- aw-server -------------------------------------------------------------------------------


def free_port() -> int:
    from nerve.ui.server import free_port as pick

    return pick()


def start_aw(work: Path) -> tuple[subprocess.Popen[bytes], str]:
    port = free_port()
    env = {
        **os.environ,
        **{
            k: str(work / k.lower()) for k in ("XDG_DATA_HOME", "XDG_CONFIG_HOME", "XDG_CACHE_HOME")
        },
    }
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "aw_server",
            "--testing",
            "--storage",
            "memory",
            "--host",
            "127.0.0.1",
            "--port",
            str(port),
        ],
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


def _post(url: str, body: Any) -> None:
    req = urllib.request.Request(
        url, json.dumps(body).encode(), {"content-type": "application/json"}, method="POST"
    )
    urllib.request.urlopen(req, timeout=60).read()


def aw_store(base: str, day: list[tuple[int, int, str, str]]) -> None:
    _post(
        f"{base}/api/0/buckets/{BUCKET}",
        {"client": "aw-watcher-window", "type": "currentwindow", "hostname": "benchhost"},
    )
    events = [
        {"timestamp": _iso(t), "duration": d / 1e9, "data": {"app": app, "title": title}}
        for t, d, app, title in day
    ]
    for i in range(0, len(events), 1_000):
        _post(f"{base}/api/0/buckets/{BUCKET}/events", events[i : i + 1_000])


def _iso(ns: int) -> str:
    return datetime.fromtimestamp(ns / 1e9, UTC).isoformat()


# -- the browser -----------------------------------------------------------------------------


def load(
    browser: Any, url: str, painted: str | None, cookie: dict[str, Any] | None
) -> dict[str, Any]:
    """One cold load: ms to painted (or to load), bytes over the wire, failed requests."""
    context = browser.new_context(viewport={"width": 1280, "height": 800})
    try:
        if cookie is not None:
            context.add_cookies([cookie])
        page = context.new_page()
        cdp = context.new_cdp_session(page)
        cdp.send("Network.enable")
        got: dict[str, float] = {"bytes": 0, "failed": 0}
        cdp.on(
            "Network.loadingFinished",
            lambda e: got.__setitem__("bytes", got["bytes"] + e["encodedDataLength"]),
        )
        cdp.on("Network.loadingFailed", lambda e: got.__setitem__("failed", got["failed"] + 1))
        page.on("response", lambda r: got.__setitem__("failed", got["failed"] + (r.status >= 400)))
        t0 = time.perf_counter()
        page.goto(url, wait_until="commit")
        if painted is not None:
            page.wait_for_selector(painted, state="attached", timeout=60_000)
        else:
            page.wait_for_load_state("load")
        page.evaluate("new Promise(r => requestAnimationFrame(() => r()))")
        ms = (time.perf_counter() - t0) * 1000
        page.wait_for_load_state("networkidle")
        body = page.evaluate("document.body ? document.body.innerText.length : 0")
        return {
            "ms": round(ms, 1),
            "bytes": int(got["bytes"]),
            "failed": int(got["failed"]),
            "text_chars": body,
        }
    finally:
        context.close()


def best(rounds: list[dict[str, Any]]) -> dict[str, Any]:
    return min(rounds, key=lambda r: r["ms"])


# -- the parts -------------------------------------------------------------------------------


def side_by_side(work: Path, args: argparse.Namespace) -> dict[str, Any]:
    from playwright.sync_api import sync_playwright

    from nerve.ui.auth import COOKIE, Keys, token_path

    now = time.time_ns()
    day = day_of_events(args.events, now)
    say(f"{len(day)} events over the last 24 h into nerve and aw-server")
    state = {"XDG_STATE_HOME": str(work / "state")}
    os.environ.update(state)
    ws = nerve_store(work / "ws", day)
    aw, aw_base = start_aw(work / "aw")
    ui = UiProcess(ws.root, state)
    try:
        aw_store(aw_base, day)
        host = ui.base.split("//")[1].split(":")[0]
        cookie = {
            "name": COOKIE,
            "value": Keys(token_path(ws)).cookie(),
            "domain": host,
            "path": "/",
            "httpOnly": True,
            "sameSite": "Strict",
        }
        since, until = now - DAY_NS, now + 10**9
        nerve_url = f"{ui.base}/?since={since}&until={until}"
        window = urllib.parse.urlencode({"start": _iso(since), "end": _iso(until), "limit": -1})
        aw_url = f"{aw_base}/api/0/buckets/{BUCKET}/events?{window}"
        with sync_playwright() as pw:
            browser = pw.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
            try:
                load(browser, nerve_url, "#timeline .lane rect", cookie)  # warm: not timed
                load(browser, aw_url, None, None)
                nerve_runs, aw_runs = [], []
                for r in range(args.rounds):
                    say(f"round {r + 1}/{args.rounds}")
                    nerve_runs.append(load(browser, nerve_url, "#timeline .lane rect", cookie))
                    aw_runs.append(load(browser, aw_url, None, None))
                aw_page = load(browser, aw_base + "/", None, None)
            finally:
                browser.close()
        counted = _timeline_count(ui.base, cookie["value"], since, until)
        posted = len(json.loads(urllib.request.urlopen(aw_url, timeout=60).read()))
        idle = _idle(ui.proc.pid)
    finally:
        ui.stop()
        aw.terminate()
        aw.wait(timeout=20)
    n, a = best(nerve_runs), best(aw_runs)
    return {
        "nerve": n,
        "aw_events_request": a,
        "aw_webui_page": aw_page,
        "time_ratio": round(n["ms"] / a["ms"], 3),
        "bytes_ratio": round(n["bytes"] / a["bytes"], 3),
        "nerve_counted": counted,
        "aw_returned": posted,
        "ui_idle": idle,
    }


def _timeline_count(base: str, cookie: str, since: int, until: int) -> int:
    req = urllib.request.Request(
        f"{base}/?since={since}&until={until}",
        headers={"accept": "application/json", "cookie": f"nerve_ui={cookie}"},
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
    cookie = Keys(token_path(ws)).cookie()

    def follow() -> None:
        req = urllib.request.Request(
            f"{ui.base}/live/stream?after={after}", headers={"cookie": f"nerve_ui={cookie}"}
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
    ws = build_log(work / "big", events)
    app = build_app(ws, Keys(token_path(ws)), Served("127.0.0.1", 80))
    client = TestClient(app, base_url="http://127.0.0.1:80")
    client.get(f"/login?token={token(ws)}", follow_redirects=False)
    times, total = [], 0
    for _ in range(6):
        t0 = time.perf_counter()
        r = client.get("/?since=24h", headers={"accept": "application/json"})
        times.append((time.perf_counter() - t0) * 1000)
        total = sum(r.json()["counts"])
        html = client.get("/?since=24h")
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
    args = parser.parse_args(argv)
    base = QUICK if args.quick else DEFAULTS
    for name, value in base.items():
        if getattr(args, name) is None:
            setattr(args, name, value)
    return args


def checks(result: dict[str, Any], args: argparse.Namespace) -> dict[str, bool]:
    side = result["side_by_side"]
    out = {
        "nerve_counts_every_event": side["nerve_counted"] == args.events,
        "aw_returns_every_event": side["aw_returned"] == args.events,
    }
    if "live" in result:
        live = result["live"]
        out["live_no_loss"] = live["missing"] == 0 and live["received"] == live["appended"]
        out["live_no_doubles"] = live["doubled"] == 0
        out["live_in_order"] = live["in_order"]
    if not args.quick:
        out["time_goal"] = side["time_ratio"] <= GOAL_RATIO
        out["bytes_goal"] = side["bytes_ratio"] <= GOAL_RATIO
        if "big" in result:
            out["big_timeline_goal"] = result["big"]["ms_median"] <= GOAL_BIG_MS
            out["big_search_goal"] = result["big"]["search_week_ms_median"] <= GOAL_SEARCH_MS
    return out


def main(argv: Sequence[str] | None = None, out: TextIO = sys.stdout) -> int:
    args = parse_args(argv)
    missing = [m for m in ("aw_server", "playwright") if importlib.util.find_spec(m) is None]
    if missing or not Path(CHROMIUM).exists():
        need = missing or CHROMIUM
        say(f"missing: {need} (pip install -e '.[test,bench]'; apt-get install chromium)")
        return 1
    with workdir("nerve-ui-bench-", keep=args.keep) as work:
        result: dict[str, Any] = {"side_by_side": side_by_side(work, args)}
        if args.live_seconds:
            result["live"] = live_rate(work, args.live_seconds, args.rate)
        if args.big:
            result["big"] = big_timeline(work, args.big)
    result.update(events=args.events, rounds=args.rounds, load_avg_1m=load_avg_1m())
    result["checks"] = checks(result, args)
    result["failed_checks"] = failed_checks(result["checks"])
    render(result, out)
    return finish(result, out)


def render(result: dict[str, Any], out: TextIO) -> None:
    s = result["side_by_side"]
    n, a = s["nerve"], s["aw_events_request"]
    print(f"nerve timeline painted   {n['ms']:8.1f} ms  {n['bytes']:>10,} B", file=out)
    print(
        f"aw events request        {a['ms']:8.1f} ms  {a['bytes']:>10,} B  (lower bound)", file=out
    )
    print(f"ratio nerve/aw           time {s['time_ratio']}  bytes {s['bytes_ratio']}", file=out)
    w = s["aw_webui_page"]
    print(f"aw-webui page            {w['bytes']:,} B, {w['failed']} failed requests", file=out)
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


if __name__ == "__main__":
    raise SystemExit(main())
