"""The focus sense in process: its options checked by name, what a focus, an away and a back
become (the observation, its time and the state kept), when a display that was not there is
looked for again, and what it reads of windows a test makes itself on a real X server (Xvfb,
no window manager: the test sets the root's active window as one would). With a window
manager and real applications: ``test_senses_context.py``."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from nerve.contract import SenseContext
from nerve.events import SourceClass, Trust
from tests.runtime.test_senses_builtin import initial, load, run

sense = load("focus")
MS = 1_000_000
IDLE = sense._Options(idle_ms=60_000, exclude=frozenset(), display=":9", retry_ns=10**9)


def _options(tmp: Path, **given: Any) -> Any:
    return sense._options(SenseContext("focus", tmp, given))


@pytest.fixture
def seen(monkeypatch: pytest.MonkeyPatch) -> None:
    """A worker past its first compute: an unchanged focus is not said again."""
    monkeypatch.setitem(sense._fresh, "first", False)


def test_options_default_and_read_as_the_sense_uses_them(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("DISPLAY", ":3")
    assert _options(tmp_path) == (300_000, frozenset(), ":3", 60 * 10**9)
    given = {"idle_s": 1.5, "exclude_apps": ["KeePassXC", "bank"], "display": "", "retry_s": 0.25}
    assert _options(tmp_path, **given) == (1500, {"keepassxc", "bank"}, None, 250_000_000)
    monkeypatch.delenv("DISPLAY")
    assert _options(tmp_path).display is None


@pytest.mark.parametrize(
    ("key", "bad", "what"),
    [
        ("idle_s", 0, "a positive number"),
        ("idle_s", -1, "a positive number"),
        ("idle_s", True, "a positive number"),
        ("idle_s", "5", "a positive number"),
        ("retry_s", 0, "a positive number"),
        ("retry_s", False, "a positive number"),
        ("retry_s", "1", "a positive number"),
        ("exclude_apps", "bank", "a list of names"),
        ("exclude_apps", ["bank", ""], "a list of names"),
        ("exclude_apps", [3], "a list of names"),
        ("display", 0, "text"),
    ],
)
def test_a_bad_option_is_refused_by_its_name(tmp_path: Path, key: str, bad: Any, what: str) -> None:
    with pytest.raises(ValueError) as caught:
        _options(tmp_path, **{key: bad})
    assert str(caught.value) == f"senses.focus.options.{key} must be {what}, got {bad!r}"


def test_a_worker_s_first_compute_says_the_focus_then_only_changes(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setitem(sense._fresh, "first", True)
    editor = sense._Focus("code", "notes.md", 4411, 812)
    before = time.time_ns()
    first = sense._changes({}, editor, 2500, IDLE)
    [obs] = first.observations
    assert obs.line == "focus code: notes.md" and before <= obs.valid_time_ns <= time.time_ns()
    assert (obs.source, obs.trust) == (SourceClass.APP_FOCUS, Trust.FIRST_PARTY)
    assert obs.payload == {"event": "focus", "app": "code", "title": "notes.md",
                           "window": 4411, "pid": 812, "readings": {"idle_ms": 2500}}  # fmt: skip
    assert first.state == {"status": "ok", "note": None, "focus": ["code", "notes.md"],
                           "away_since": None}  # fmt: skip
    assert sense._fresh["first"] is False
    assert not sense._changes(first.state, editor, 10, IDLE).observations
    [moved] = sense._changes(first.state, editor._replace(title="todo.md"), None, IDLE).observations
    assert moved.payload["title"] == "todo.md" and moved.payload["readings"] == {}


@pytest.mark.usefixtures("seen")
def test_no_window_and_no_title_are_said_plainly() -> None:
    [none] = sense._changes({"focus": ["code", "x"]}, None, 0, IDLE).observations
    assert none.line == "focus: no window"
    assert none.payload == {"event": "focus", "app": "", "title": "", "window": 0, "pid": None,
                            "readings": {"idle_ms": 0}}  # fmt: skip
    assert sense._changes({"focus": None}, None, 0, IDLE).state["focus"] is None
    [bare] = sense._changes({}, sense._Focus("xterm", "", 7, None), None, IDLE).observations
    assert bare.line == "focus xterm" and bare.payload["pid"] is None
    long = sense._Focus("xterm", "t" * 300, 7, 1)
    [cut] = sense._changes({}, long, None, IDLE).observations
    assert len(cut.line) == 200 and cut.line.startswith("focus xterm: ttt")


@pytest.mark.usefixtures("seen")
def test_away_from_the_idle_limit_and_back_at_the_next_input() -> None:
    here = {"focus": None}
    assert not sense._changes(here, None, 59_999, IDLE).observations
    before = time.time_ns()
    away = sense._changes(here, None, 60_000, IDLE)
    after = time.time_ns()
    [obs] = away.observations
    since = away.state["away_since"]
    assert before - 60_000 * MS <= since <= after - 60_000 * MS
    assert obs.valid_time_ns == since and obs.line == "away: no input for 60 s"
    assert obs.payload == {"event": "away", "idle_ms": 60_000, "readings": {"idle_ms": 60_000}}
    still = sense._changes(away.state, None, 90_000, IDLE)
    assert not still.observations and still.state["away_since"] == since
    assert sense._changes(away.state, None, None, IDLE).state["away_since"] == since
    left = {**away.state, "away_since": time.time_ns() - 125_000 * MS}  # away for 125 s
    back = sense._changes(left, None, 5_000, IDLE)  # input 5 s ago
    [obs] = back.observations
    assert obs.payload["event"] == "back" and back.state["away_since"] is None
    away_ms = obs.payload["away_ms"]
    assert 120_000 <= away_ms < 121_000 and obs.payload["readings"] == {"away_ms": away_ms}
    assert obs.line == "back after 120 s away"


def test_a_display_missing_or_refused_is_looked_for_again_only_when_it_may_have_come(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    gone = {"status": "unavailable", "display": ":9"}
    monkeypatch.setitem(sense._tried, "at", 0)
    assert sense._look_again(gone, IDLE)  # never tried in this worker
    monkeypatch.setitem(sense._tried, "at", time.monotonic_ns())
    assert not sense._look_again(gone, IDLE)  # tried within retry_s
    assert sense._look_again({**gone, "display": ":8"}, IDLE)  # another display named now
    assert sense._look_again({**gone, "display": None}, IDLE)  # one now, where there was none
    assert not sense._look_again({"status": "unavailable"}, IDLE)  # none kept: the same one
    monkeypatch.setitem(sense._tried, "at", time.monotonic_ns() - 10**9)
    assert sense._look_again(gone, IDLE)  # retry_s has passed
    headless = IDLE._replace(display=None)
    assert not sense._look_again({"status": "unavailable", "display": None}, headless)
    assert sense._look_again({"status": "unavailable", "display": ":1"}, headless)


def test_without_a_display_named_the_reason_says_which_session_it_is(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    headless = IDLE._replace(display=None)
    monkeypatch.delenv("WAYLAND_DISPLAY", raising=False)
    assert sense._display(headless) == (None, "no X display (headless)")
    monkeypatch.setenv("WAYLAND_DISPLAY", "wayland-0")
    assert sense._display(headless) == (None, "Wayland session without an X display")


def test_a_display_that_cannot_be_opened_is_not_tried_again_within_retry_s(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setitem(sense._tried, "at", 0)
    opened: list[Any] = []
    real = sense._display
    monkeypatch.setattr(sense, "_display", lambda opts: opened.append(opts) or real(opts))
    display = f":{59_000 + os.getpid() % 900}"  # no server: no socket is made for it
    ctx = SenseContext("focus", tmp_path, {"display": display, "retry_s": 3600})
    gone = sense.compute(initial("focus"), ctx)
    assert gone.state["status"] == "unavailable" and len(opened) == 1
    assert gone.state["note"].startswith(f"cannot open X display {display!r}: ")
    assert sense.compute(gone.state, ctx) is None and len(opened) == 1  # not tried again


class _Quartz:
    """Quartz as a window server that refuses the window list."""

    kCGWindowListOptionOnScreenOnly = kCGWindowListExcludeDesktopElements = kCGNullWindowID = 0

    def CGWindowListCopyWindowInfo(self, option: int, relative: int) -> list[Any]:
        raise RuntimeError("window server refused")


def _mac(monkeypatch: pytest.MonkeyPatch, quartz: Any) -> None:
    monkeypatch.setattr(sense, "_MAC", True)
    monkeypatch.setitem(sys.modules, "Quartz", quartz)
    monkeypatch.setitem(sense._tried, "at", 0)


def test_on_macos_a_refused_read_is_an_error_in_state(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _mac(monkeypatch, _Quartz())
    failed = run("focus", {"focus": ["code", "x"]}, tmp_path)
    assert not failed.observations
    assert failed.state == {"focus": ["code", "x"], "status": "error",
                            "note": "Quartz read failed: window server refused"}  # fmt: skip


def test_on_macos_without_quartz_a_state_kept_from_before_is_not_said_again(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _mac(monkeypatch, None)  # None in sys.modules: the import fails
    kept = {"status": "unavailable", "note": "pyobjc-framework-Quartz is not installed"}
    assert sense.compute(kept, SenseContext("focus", tmp_path, {})) is None
    assert sense._tried["at"] > 0


# --- windows the test makes on a real X server ---------------------------------------------------


@pytest.fixture
def xvfb() -> Iterator[tuple[str, subprocess.Popen[bytes]]]:
    """A bare Xvfb on a display it picks itself, and its process."""
    if shutil.which("Xvfb") is None:
        pytest.skip("missing Xvfb (.ci/run installs it)")
    read_end, write_end = os.pipe()
    args = ["Xvfb", "-screen", "0", "320x240x24", "-nolisten", "tcp", "-displayfd"]
    server = subprocess.Popen(
        [*args, str(write_end)], stderr=subprocess.DEVNULL, pass_fds=(write_end,)
    )
    os.close(write_end)
    with os.fdopen(read_end) as chosen:
        display = f":{chosen.readline().strip()}"
    sense._forget()  # a connection kept from an earlier server of the same number is dead
    try:
        yield display, server
    finally:
        sense._forget()
        server.terminate()
        server.wait(timeout=10)


class _Desk:
    """Windows on an X display and the root's active window, set as a window manager would."""

    def __init__(self, name: str) -> None:
        from Xlib import display

        self.name = name
        self.x = display.Display(name)
        self.root = self.x.screen().root

    def window(self, wm_class: tuple[str, str] | None = None, **props: Any) -> Any:
        from Xlib import X, Xatom

        w = self.root.create_window(0, 0, 10, 10, 0, X.CopyFromParent)
        if wm_class is not None:
            w.set_wm_class(*wm_class)
        if "wm_name" in props:
            w.set_wm_name(props["wm_name"])
        if "net_name" in props:
            utf8 = self.x.intern_atom("UTF8_STRING")
            w.change_property(self._atom("_NET_WM_NAME"), utf8, 8, props["net_name"].encode())
        if "pid" in props:
            w.change_property(self._atom("_NET_WM_PID"), Xatom.CARDINAL, 32, [props["pid"]])
        return w

    def activate(self, window_id: int) -> None:
        from Xlib import Xatom

        self.root.change_property(self._atom("_NET_ACTIVE_WINDOW"), Xatom.WINDOW, 32, [window_id])
        self.x.sync()

    def _atom(self, name: str) -> int:
        return int(self.x.intern_atom(name))


@pytest.fixture
def desk(xvfb: tuple[str, subprocess.Popen[bytes]]) -> Iterator[_Desk]:
    made = _Desk(xvfb[0])
    try:
        yield made
    finally:
        made.x.close()


def _one(state: dict[str, Any], tmp: Path, **opts: Any) -> Any:
    """The one observation a compute makes (the sense's state says why when there is none)."""
    result = run("focus", state, tmp, **opts)
    assert len(result.observations) == 1, result.state
    return result.observations[0]


@pytest.mark.usefixtures("seen")
def test_the_active_window_s_class_title_and_pid_are_read(desk: _Desk, tmp_path: Path) -> None:
    opts = {"display": desk.name, "idle_s": 3600, "exclude_apps": ["KEEPASSXC"]}
    editor = desk.window(("notes", "Gedit"), net_name="café — notes", wm_name="old", pid=4242)
    desk.activate(editor.id)
    obs = _one({}, tmp_path, **opts)
    assert {k: obs.payload[k] for k in ("app", "title", "window", "pid")} == {
        "app": "Gedit", "title": "café — notes", "window": editor.id, "pid": 4242,
    }  # fmt: skip
    assert isinstance(obs.payload["readings"]["idle_ms"], int)  # MIT-SCREEN-SAVER
    plain = desk.window(("xload", "XLoad"), wm_name="load average")
    desk.activate(plain.id)
    obs = _one({}, tmp_path, **opts)
    assert (obs.payload["title"], obs.payload["pid"]) == ("load average", None)
    unnamed = desk.window(("", "xclock"))
    desk.activate(unnamed.id)
    obs = _one({}, tmp_path, **opts)
    assert (obs.payload["app"], obs.payload["title"], obs.line) == ("xclock", "", "focus xclock")
    instance = desk.window(("keepassxc", ""), net_name="passwords.kdbx", pid=7)
    desk.activate(instance.id)
    obs = _one({}, tmp_path, **opts)
    assert obs.payload["app"] == "(excluded)" and obs.payload["title"] == ""
    desk.activate(0)
    obs = _one({"focus": ["x", "y"]}, tmp_path, **opts)
    assert obs.line == "focus: no window"


def test_a_server_gone_between_reads_is_an_error_then_opened_afresh(
    xvfb: tuple[str, subprocess.Popen[bytes]], tmp_path: Path
) -> None:
    display, server = xvfb
    first = run("focus", initial("focus"), tmp_path, display=display)
    assert first.state["status"] == "ok" and sense._conn.get("name") == display
    server.terminate()
    server.wait(timeout=10)
    failed = run("focus", first.state, tmp_path, display=display)
    assert failed.state["status"] == "error" and not failed.observations
    assert failed.state["note"].startswith("X11 read failed: ")
    assert failed.state["focus"] == first.state["focus"] and sense._conn == {}
