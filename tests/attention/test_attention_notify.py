"""Surfacings delivered to the person: a real daemon, a real session bus and a real notification
server (dunst under Xvfb), read back; no service said once; quiet hours, do-not-disturb and
mute as delivery filters; ``attend --follow``."""

from __future__ import annotations

import json
import subprocess
import sys
import time
import urllib.request
from http.cookiejar import CookieJar
from pathlib import Path
from typing import Any

import pytest

from nerve.attention.notify import in_quiet_hours, withheld
from nerve.attention.reason import reason_of
from nerve.attention.settings import NotifyConfig, parse_attention
from nerve.errors import ConfigError
from nerve.ui.auth import local_path
from nerve.workspace import init_workspace
from tests.conftest import run_cli
from tests.daemon_util import Daemon, write_sense
from tests.helpers.desktop import notification_desk

ATTENTION = """
attention:
  window: 16
  detector: {warmup: 4, debounce: 3, k_milli: 2000}
  gate: {budget_capacity_uj: 600000, refill_uj_per_s: 1000}
  notify: {NOTIFY}
"""
# Shell commands, now and then a port opened (the network sense's payload): a rare source
# that fires novelty, so something surfaces within seconds.
PORTS = """
import os
from nerve import Observation, Result
initial_state = {"n": 0}
def compute(state):
    n = state["n"] + 1
    if n % 30 < 25:
        obs = Observation(source="shell", trust="FirstParty", line=f"ls {n}")
    else:
        payload = {"event": "port_opened", "proto": "tcp", "address": "127.0.0.1",
                   "port": 8000 + n, "pid": os.getpid(), "name": "devserver", "user": "me"}
        obs = Observation(source="network", trust="FirstParty",
                          line=f"port 127.0.0.1:{8000 + n} opened by devserver", payload=payload)
    return Result(state={"n": n}, observations=[obs])
"""
BROWSER = """#!{python}
import os, sys
with open({out!r}, "a") as f:
    f.write(sys.argv[1] + " " + str(os.getppid()) + "\\n")
"""


def _workspace(tmp_path: Path, notify: str) -> Path:
    root = init_workspace(tmp_path / "ws").root
    write_sense(root, "ports", PORTS)
    (root / "nerve.yaml").write_text(
        "senses:\n  ports: {interval: 20ms}\n" + ATTENTION.replace("{NOTIFY}", notify)
    )
    return root


def _surfaced(daemon: Daemon) -> list[dict[str, Any]]:
    return [
        d["data"] for d in daemon.events("attention.decision") if d["data"]["outcome"] == "surface"
    ]


def test_a_surfacing_reaches_dunst_with_its_cause_and_its_actions_work(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The notification dunst shows names the port and the process; Open shows the decision's
    page through the login link; Mute 1 h records attention.mute, and the probe's next
    surfacing is recorded as not sent (the gate's outcome unchanged: check stays exact)."""
    browsed = tmp_path / "browsed.txt"
    browser = tmp_path / "browser.py"
    browser.write_text(BROWSER.format(python=sys.executable, out=str(browsed)))
    browser.chmod(0o755)
    with notification_desk(tmp_path / "desk") as desk:
        for name, value in desk.env.items():
            monkeypatch.setenv(name, value)
        monkeypatch.setenv("BROWSER", str(browser))
        root = _workspace(tmp_path, "{desktop: auto}")
        daemon = Daemon(root)
        daemon.start()
        try:
            daemon.wait_for(lambda: len(desk.notifications()) >= 2, timeout=60, what="two")
            shown, other = desk.notifications()[:2]
            assert shown["appname"] == "nerve"
            assert shown["summary"].startswith("nerve: a new listening port 80")
            assert "on 127.0.0.1, opened by devserver [" in shown["summary"]
            assert shown["body"].startswith("surfaced: its value")
            status = run_cli("--workspace", str(root), "status").stdout
            assert "notifications: sent to the desktop's notification service" in status

            desk.press("Open", shown["summary"])
            daemon.wait_for(browsed.exists, timeout=60, what="the UI opened")
            url, ui_pid = browsed.read_text().split()[:2]
            try:
                assert "/login?token=" in url and "&next=/attention/" in url
                seq = int(url.rsplit("/", 1)[1])
                opener = urllib.request.build_opener(
                    urllib.request.HTTPCookieProcessor(CookieJar())
                )
                with opener.open(url, timeout=30) as page:
                    assert page.url.endswith(f"/attention/{seq}")
                    assert "a new listening port" in page.read().decode()
            finally:
                subprocess.run(["kill", ui_pid], check=False)

            desk.press("Mute 1 h", other["summary"])
            daemon.wait_for(lambda: daemon.events("attention.mute"), what="the mute")
            mute = daemon.events("attention.mute")[0]["data"]
        finally:
            daemon.stop()
    assert mute["probe"] == "novelty" and mute["until_ns"] > time.time_ns() + 3500 * NS
    later = [d for d in _surfaced(daemon) if d.get("delivery")]  # the budget may allow none
    assert all(d["delivery"].startswith("muted until ") for d in later)
    check = run_cli("--workspace", str(root), "attend", "--recompute", "--json").stdout
    assert json.loads(check)["ok"] is True


def test_no_notification_service_is_said_once_and_attend_follow_still_shows_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("DBUS_SESSION_BUS_ADDRESS", raising=False)
    root = _workspace(tmp_path, "{desktop: auto}")
    daemon = Daemon(root)
    follow = subprocess.Popen(  # before the daemon: the budget pays for the first two only
        [sys.executable, "-m", "nerve", "--workspace", str(root), "attend", "--follow"],
        stdout=subprocess.PIPE, text=True,
    )  # fmt: skip
    time.sleep(1.0)  # it has read where the log ends
    daemon.start()
    try:
        assert follow.stdout is not None
        seen = ""
        deadline = time.monotonic() + 60
        while not seen.startswith("surface ") and time.monotonic() < deadline:
            seen = follow.stdout.readline()
        assert seen.startswith("surface novelty: a new listening port 80"), seen
        assert " — surfaced: its value" in seen
        status = run_cli("--workspace", str(root), "status").stdout
        assert "notifications: unavailable (no D-Bus session)" in status
    finally:
        follow.terminate()
        follow.communicate(timeout=10)
        daemon.stop()
    said = (root / "data" / "daemon.log").read_text()
    assert said.count("notifications: unavailable (no D-Bus session)") == 1
    assert not daemon.events("attention.notify_failed")


def test_attend_follow_json_prints_one_object_a_line(tmp_path: Path) -> None:
    root = _workspace(tmp_path, "{desktop: off}")
    daemon = Daemon(root)
    daemon.start()
    follow = subprocess.Popen(
        [sys.executable, "-m", "nerve", "--workspace", str(root), "attend", "-f", "--json"],
        stdout=subprocess.PIPE, text=True,
    )  # fmt: skip
    try:
        assert follow.stdout is not None
        first = json.loads(follow.stdout.readline())
    finally:
        follow.terminate()
        follow.communicate(timeout=10)
        daemon.stop()
    assert set(first) == {
        "chain_seq", "source_event", "outcome", "probe", "cause", "delivery", "words"
    }  # fmt: skip
    assert (
        first["words"]
        == reason_of(
            next(
                d["data"]
                for d in daemon.events("attention.decision")
                if d["data"]["source_event"] == first["source_event"]
            )
        ).words()
    )


# -- the delivery filters --------------------------------------------------------------------

NS = 1_000_000_000


def _at(hour: int, minute: int) -> Any:
    return lambda _s: time.struct_time((2026, 12, 5, hour, minute, 0, 5, 339, 0))


def test_quiet_hours_run_past_midnight_and_dnd_and_mute_withhold() -> None:
    quiet = NotifyConfig(quiet="22:00-07:00")
    assert in_quiet_hours((22 * 60, 7 * 60), 23 * 60) and in_quiet_hours((1320, 420), 0)
    assert not in_quiet_hours((1320, 420), 7 * 60) and not in_quiet_hours((1320, 420), 1319)
    assert in_quiet_hours((9 * 60, 17 * 60), 12 * 60) and not in_quiet_hours((540, 1020), 1020)
    assert withheld(quiet, {}, "novelty", NS, _at(23, 30)) == "quiet hours 22:00-07:00"
    assert withheld(quiet, {}, "novelty", NS, _at(12, 0)) is None
    assert withheld(NotifyConfig(dnd=True), {}, "novelty", NS, _at(12, 0)) == "do not disturb"
    mutes = {"novelty": 3600 * NS}
    assert withheld(NotifyConfig(), mutes, "novelty", NS, _at(12, 0)) == "muted until 12:00"
    assert withheld(NotifyConfig(), mutes, "salience", NS, _at(12, 0)) is None
    assert withheld(NotifyConfig(), mutes, "novelty", 3600 * NS, _at(12, 0)) is None


def test_quiet_hours_that_are_not_a_span_are_refused_naming_the_field() -> None:
    with pytest.raises(ConfigError, match=r"attention\.notify\.quiet: .*HH:MM-HH:MM"):
        parse_attention({"notify": {"quiet": "10pm-7am"}})
    assert parse_attention({"notify": {"quiet": "22:00-07:00", "dnd": True}}).notify.dnd


def test_the_login_goes_on_only_to_a_page_of_this_server() -> None:
    assert local_path("/attention/7") == "/attention/7"
    for bad in ("//evil.example/", "https://evil.example/", "/\\evil", "", "attention/7", "/a b"):
        assert local_path(bad) == "/"
