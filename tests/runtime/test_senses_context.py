"""Context worth having: processes with their cost, shell commands with their outcome through
the real hook in real shells, and the focused window under a real X server and window manager.
"""

from __future__ import annotations

import os
import random
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
from nerve.shellhook import hook, install_line, parse_spool_line
from tests.runtime.test_senses_builtin import initial, load, poll, run

# --- processes -------------------------------------------------------------------------------


def _tops(result: Any) -> list[dict[str, Any]]:
    return [o.payload for o in result.observations if o.payload.get("event") == "top"]


# A loaded machine (the suite's own workers) can hold five processes busier than one hog:
# the test is about how the hog is named, so every process over the floor is on the top.
WIDE = {"top_n": 50}


def test_processes_top_names_a_cpu_hog_with_its_cost(tmp_path: Path) -> None:
    hog = subprocess.Popen([sys.executable, "-c", "while True: pass"])
    try:
        state = run("processes", initial("processes"), tmp_path, **WIDE).state  # the baseline
        first = run("processes", state, tmp_path, **WIDE)  # primes this worker's CPU counters
        found: list[dict[str, Any]] = []
        about = [e for t in _tops(first) for k in ("cpu", "memory", "over") for e in t[k]]

        def hog_on_top() -> bool:
            nonlocal first
            first = run("processes", first.state, tmp_path, **WIDE)
            tops = _tops(first)
            about.extend(e for t in tops for k in ("cpu", "memory", "over") for e in t[k])
            found[:] = [e for t in tops for e in t["cpu"] if e["pid"] == hog.pid]
            return bool(found)

        assert poll(hog_on_top, timeout=60)
        again = run("processes", first.state, tmp_path, **WIDE)
    finally:
        hog.kill()
        hog.wait()
    entry = found[0]
    assert entry["cpu_permille"] >= 10 and entry["rss_bytes"] > 0
    # its command line and user go out the first time it is on a top, not in every sample
    [described] = [e for e in about if e["pid"] == hog.pid and "cmdline" in e]
    assert described["cmdline"].endswith("while True: pass") and described["user"]
    later = [e for t in _tops(again) for e in t["cpu"] if e["pid"] == hog.pid]
    assert all("cmdline" not in e for e in later)
    assert abs(entry["start_time"] - time.time()) < 120
    (top,) = _tops(first)
    assert set(top["readings"]) == {"top_cpu_permille", "top_rss_bytes", "over_threshold"}
    assert all(isinstance(v, int) for v in top["readings"].values())
    assert len(top["memory"]) in (0, 3) and top["interval_ms"] > 0  # sent when it moved


def test_processes_top_is_quiet_when_nothing_moves(tmp_path: Path) -> None:
    sense = load("processes")
    quiet = {"min_cpu_percent": 50, "top_every_s": 3600, "top_min_s": 0}
    opts = sense._options(SenseContext("processes", tmp_path, quiet))
    idle = {"1": sense._Proc(1, "a", 0.0, 0.0, 100 * 2**20), "2": sense._Proc(2, "b", 0.0, 0.0, 50)}
    obs, state = sense._top(idle, None, opts)
    assert obs is not None and [e["pid"] for e in obs.payload["memory"]] == [1, 2]
    again, kept = sense._top(idle, state, opts)
    assert again is None and kept == state  # nothing moved: nothing sent
    busy = {**idle, "2": sense._Proc(2, "b", 0.0, 90.0, 50)}
    hot, _ = sense._top(busy, state, opts)
    assert hot is not None and hot.payload["memory"] == []  # CPU news, the memory list unchanged
    assert [e["pid"] for e in hot.payload["cpu"]] == [2]
    _, hot_state = sense._top(busy, state, opts)
    same, same_state = sense._top(busy, hot_state, opts)
    assert same is None and same_state == hot_state  # the same busy process: not sent again
    busier = {**idle, "2": sense._Proc(2, "b", 0.0, 100.0, 50)}
    hotter, hotter_state = sense._top(busier, hot_state, opts)
    assert hotter is not None and hotter.payload["cpu"][0]["cpu_permille"] == 1000  # moved
    quiet, _ = sense._top(idle, hotter_state, opts)
    assert quiet is not None and quiet.payload["cpu"] == []  # gone quiet: said once
    grown = {**idle, "1": sense._Proc(1, "a", 0.0, 0.0, 120 * 2**20)}
    moved, _ = sense._top(grown, state, opts)
    assert moved is not None and moved.payload["memory"]  # a tenth more: sent again


def test_a_busy_top_waits_top_min_s_unless_a_hog_appears(tmp_path: Path) -> None:
    sense = load("processes")
    opts = sense._options(SenseContext("processes", tmp_path, {"top_min_s": 3600}))

    def procs(*shares: float) -> dict[str, Any]:
        return {str(i): sense._Proc(i, f"p{i}", 0.0, s, 50) for i, s in enumerate(shares, 1)}

    first, state = sense._top(procs(30, 20), None, opts)
    assert first is not None
    held, kept = sense._top(procs(50, 10), state, opts)  # changed, but too soon
    assert held is None and kept == state
    hog, _ = sense._top(procs(50, 95), state, opts)  # one newly at cpu_percent (80): at once
    assert hog is not None and hog.payload["cpu"][0]["cpu_permille"] == 950


def test_a_crash_loop_goes_out_at_once_then_at_most_twice_per_brief_every_s(
    tmp_path: Path,
) -> None:
    sense = load("processes")
    opts = sense._options(SenseContext("processes", tmp_path, {"brief_every_s": 60}))
    brief = sense._Brief.of(None)
    second = 10**9

    def loop(now_s: int) -> Any:
        for _ in range(3):
            brief.count("cc1")
        return brief.flush(now_s * second, opts)

    assert loop(1000) is not None  # three exits of one name: at once
    assert loop(1010) is None  # again 10 s later: it waits
    assert loop(1030).payload["counts"] == {"cc1": 6}  # half of brief_every_s on: sent


def test_processes_top_n_options_are_checked(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match=r"senses\.processes\.options\.top_n"):
        load("processes").compute(
            initial("processes"), SenseContext("processes", tmp_path, {"top_n": 0})
        )


# --- the shell hook, in real shells -------------------------------------------------------------


def _interactive(shell: str, lines: list[str], tmp: Path, spool: Path) -> None:
    hook_file = tmp / f"hook.{shell}"
    hook_file.write_text(hook(shell))
    argv = {"bash": ["bash", "--norc", "--noprofile", "-i"], "zsh": ["zsh", "-f", "-i"]}[shell]
    env = {
        "PATH": os.environ["PATH"],
        "HOME": str(tmp),
        "HISTFILE": str(tmp / f"hist-{shell}"),
        "NERVE_SHELL_SPOOL": str(spool),
        "HISTCONTROL": "ignorespace",
        "TERM": "dumb",
    }
    script = "\n".join([f"source {hook_file}", *lines, "exit 0", ""])
    subprocess.run(
        argv, input=script, env=env, capture_output=True, text=True, timeout=60, check=False
    )


SHELLS = [s for s in ("bash", "zsh") if shutil.which(s)]


@pytest.mark.parametrize("shell", SHELLS)
def test_the_hook_records_exit_duration_cwd_and_session(shell: str, tmp_path: Path) -> None:
    spool = tmp_path / "state" / "shell.spool"
    work = tmp_path / "a dir"  # (a tab would be completion to an interactive shell)
    work.mkdir()
    _interactive(
        shell,
        [
            f"cd '{work}'",
            "ls /no/such/place",
            "sleep 0.3",
            "printf 'a\\nb' >/dev/null",
            "echo  two   spaces  >/dev/null",
            "cd /",
            "true",
            " echo hidden",
        ],
        tmp_path,
        spool,
    )
    assert (spool.stat().st_mode & 0o777) == 0o600  # only its owner may read the commands
    records = [parse_spool_line(line) for line in spool.read_text().splitlines()]
    by_command = {r.command: r for r in records}
    expected = {f"cd '{work}'", "ls /no/such/place", "sleep 0.3", "printf 'a\\nb' >/dev/null"}
    expected |= {"echo  two   spaces  >/dev/null", "cd /", "true"}  # spacing kept
    if shell == "zsh":
        expected.add(" echo hidden")  # zsh hands preexec the line as typed
        assert expected <= set(by_command)
    else:
        assert set(by_command) == expected  # history kept no hidden command: nor does the hook
    assert by_command["ls /no/such/place"].exit != 0 and by_command["sleep 0.3"].exit == 0
    assert by_command["ls /no/such/place"].cwd == str(work)
    assert by_command["cd /"].cwd == by_command["true"].cwd == "/"  # a new folder is seen
    assert by_command["sleep 0.3"].duration_ms >= 250
    assert len({r.session for r in records}) == 1 and records[0].shell == shell


def test_the_sense_reads_the_spool_and_nothing_is_lost_meanwhile(tmp_path: Path) -> None:
    if "bash" not in SHELLS:
        pytest.skip("no bash")
    spool = tmp_path / "shell.spool"
    opts = {"spool": str(spool), "files": [str(tmp_path / ".bash_history")]}
    _interactive("bash", ["false", "true"], tmp_path, spool)  # no sense ran: as a daemon down
    first = run("shell", initial("shell"), tmp_path, **opts)
    assert [(o.payload["command"], o.payload["exit"]) for o in first.observations] == [
        ("false", 1),
        ("true", 0),
    ]
    obs = first.observations[0]
    assert (obs.source, obs.trust) == (SourceClass.SHELL, Trust.INFERRED)
    assert obs.line == "$ false [exit 1]" and obs.payload["readings"]["failure_streak"] == 1
    assert obs.valid_time_ns == parse_spool_line(spool.read_text().splitlines()[0]).start_ns
    assert first.state["hooked"] == ["bash"]
    _interactive("bash", ["false", "false"], tmp_path, spool)
    again = run("shell", first.state, tmp_path, **opts)
    assert [o.payload["readings"]["failure_streak"] for o in again.observations] == [1, 2]
    assert not run("shell", again.state, tmp_path, **opts).observations


def test_a_full_spool_is_renamed_and_late_lines_are_read(tmp_path: Path) -> None:
    spool = tmp_path / "shell.spool"
    line = "nerve1\tbash\t1.1\t1700000000.5\t1700000001.0\t{code}\t/tmp\tcmd {n}\n"
    spool.write_text("".join(line.format(code=0, n=n) for n in range(3)))
    opts = {"spool": str(spool), "files": [], "spool_max_bytes": 10}
    first = run("shell", initial("shell"), tmp_path, **opts)
    assert len(first.observations) == 3 and not spool.exists()
    with open(f"{spool}.1", "a") as late:  # a shell that opened the spool just before
        late.write(line.format(code=3, n=9))
    spool.write_text("junk line\n" + line.format(code=0, n=10))
    second = run("shell", first.state, tmp_path, **opts)
    assert [o.payload["command"] for o in second.observations] == ["cmd 9", "cmd 10"]
    assert "1 bad spool line(s) refused; first at byte 0" in second.state["spool"]["note"]
    assert second.state["spool"]["refused"] == 1
    assert Path(f"{spool}.1").read_text().endswith("cmd 10\n")  # the old one read, then gone


def test_the_hook_line_for_each_shell(tmp_path: Path) -> None:
    assert install_line("bash") == ('eval "$(nerve shell-hook bash)"', "~/.bashrc")
    assert install_line("fish")[0] == "nerve shell-hook fish | source"
    readme = (Path(__file__).resolve().parents[2] / "docs" / "context.md").read_text()
    for shell in ("bash", "zsh", "fish"):
        assert install_line(shell)[0] in readme


def test_a_secret_in_a_command_is_redacted_before_the_log(tmp_path: Path) -> None:
    from nerve.log.drafts import Draft
    from nerve.privacy.policy import Policy

    spool = tmp_path / "shell.spool"
    token = "ghp_" + "a1B2c3D4e5F6g7H8i9J0k1L2m3N4o5P6q7R8"
    spool.write_text(
        f"nerve1\tbash\t1.1\t1700000000.5\t1700000001.0\t0\t/tmp\tgit push https://x:{token}@h/r\n"
    )
    result = run("shell", initial("shell"), tmp_path, spool=str(spool), files=[])
    (obs,) = result.observations
    draft = Draft.of(
        "observation", source=obs.source, line=obs.line, payload=dict(obs.payload), subject="shell"
    )
    captured = Policy().capture(draft)
    assert captured is not None and token not in captured.line
    assert token.encode() not in captured.payload


# --- focus, under a real X server ---------------------------------------------------------------


def test_focus_without_a_display_says_so_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("DISPLAY", raising=False)
    monkeypatch.setenv("WAYLAND_DISPLAY", "wayland-0")
    first = run("focus", initial("focus"), tmp_path)
    assert first.state["status"] == "unavailable" and "Wayland" in first.state["note"]
    assert not first.observations
    assert load("focus").compute(first.state, SenseContext("focus", tmp_path, {})) is None


X_TOOLS = ("Xvfb", "openbox", "xterm", "xdotool")
XVFB = ["Xvfb", "-screen", "0", "800x600x24", "-nolisten", "tcp"]


@pytest.fixture
def xserver(tmp_path: Path) -> Iterator[str]:
    missing = [t for t in X_TOOLS if shutil.which(t) is None]
    if missing:
        pytest.skip(f"missing {', '.join(missing)} (.ci/run installs them)")
    # Xvfb picks a free display and writes its number to the pipe: a fixed number per
    # worker would meet the previous test's server while it is still going away
    read_end, write_end = os.pipe()
    procs = [
        subprocess.Popen(
            [*XVFB, "-displayfd", str(write_end)],
            stderr=subprocess.DEVNULL,
            pass_fds=(write_end,),
        )
    ]
    os.close(write_end)
    with os.fdopen(read_end) as chosen:
        display = f":{chosen.readline().strip()}"
    env = {**os.environ, "DISPLAY": display}
    try:
        assert poll(
            lambda: (
                subprocess.run(
                    ["xdotool", "getmouselocation"], env=env, capture_output=True
                ).returncode
                == 0
            ),
            timeout=20,
        )
        wm = [_window_manager(env)]
        procs.append(wm[0])

        def managed() -> bool:
            # openbox started the instant the server answers sometimes exits at once (exit 1,
            # nothing said): start it again rather than wait for a manager that is gone
            if wm[0].poll() is not None:
                wm[0] = _window_manager(env)
                procs.append(wm[0])
            return _root_has(env, "_NET_SUPPORTING_WM_CHECK")

        # the window manager may take long to start on a loaded machine
        assert poll(managed, timeout=60)
        yield display
    finally:
        for proc in reversed(procs):
            proc.terminate()
            proc.wait(timeout=10)


def _window_manager(env: dict[str, str]) -> subprocess.Popen[bytes]:
    return subprocess.Popen(
        ["openbox"], env=env, stderr=subprocess.DEVNULL, stdout=subprocess.DEVNULL
    )


def _root_has(env: dict[str, str], atom: str) -> bool:
    out = (
        subprocess.run(["xprop", "-root", atom], env=env, capture_output=True, text=True)
        if shutil.which("xprop")
        else None
    )
    if out is not None:
        return "window id" in out.stdout
    return (
        subprocess.run(["xdotool", "getactivewindow"], env=env, capture_output=True).returncode == 0
    )


def _xterm(display: str, title: str, *instance: str) -> subprocess.Popen[bytes]:
    """An xterm titled ``title``; its WM_CLASS instance is ``instance`` when one is given."""
    env = {**os.environ, "DISPLAY": display}
    named = ["-name", *instance] if instance else []
    return subprocess.Popen(
        ["xterm", *named, "-T", title, "-e", "sleep", "60"], env=env, stderr=subprocess.DEVNULL
    )


def _focused(display: str, tmp: Path, state: Any, **opts: Any) -> tuple[Any, list[dict[str, Any]]]:
    result = run("focus", state, tmp, display=display, **opts)
    return result.state, [o.payload for o in result.observations]


def test_focus_started_headless_looks_again_inside_a_desktop(
    xserver: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # the state outlives the daemon: one first started with no display (at boot, over ssh)
    # must not stay blind when started again with one
    monkeypatch.delenv("DISPLAY", raising=False)
    monkeypatch.delenv("WAYLAND_DISPLAY", raising=False)
    headless = run("focus", initial("focus"), tmp_path).state
    assert headless["status"] == "unavailable" and "headless" in headless["note"]
    assert load("focus").compute(headless, SenseContext("focus", tmp_path, {})) is None
    one = _xterm(xserver, "after boot")
    try:
        seen: list[dict[str, Any]] = []
        state: Any = headless

        def titled() -> bool:
            nonlocal state
            state, out = _focused(xserver, tmp_path, state, idle_s=3600)
            seen.extend(out)
            return any(p.get("title") == "after boot" for p in seen)

        assert poll(titled, timeout=20), (state, seen)
        assert state["status"] == "ok"
    finally:
        one.kill()
        one.wait()


def _free_display() -> str:
    """A display number no X server holds (no lock file, no socket), picked at random so
    parallel workers and a server still going away do not meet."""
    rng = random.Random()
    for _ in range(100):
        n = rng.randrange(2000, 60000)
        if not any(Path(p).exists() for p in (f"/tmp/.X{n}-lock", f"/tmp/.X11-unix/X{n}")):
            return f":{n}"
    raise AssertionError("no free X display number")


def test_focus_retries_a_display_that_could_not_be_opened(tmp_path: Path) -> None:
    """An X server not up yet (at boot): said once, left alone for ``retry_s`` even once the
    server is there, then opened on the first compute after ``retry_s``."""
    if shutil.which("Xvfb") is None:
        pytest.skip("missing Xvfb (.ci/run installs it)")
    sense, display = load("focus"), _free_display()
    gone = run("focus", initial("focus"), tmp_path, display=display).state
    assert gone["status"] == "unavailable" and "cannot open X display" in gone["note"]
    server = subprocess.Popen([*XVFB[:1], display, *XVFB[1:]], stderr=subprocess.DEVNULL)
    try:
        up = {**os.environ, "DISPLAY": display}
        assert poll(lambda: _answers(up), timeout=20)
        # said once: within retry_s a compute records nothing and opens nothing, server or not
        within = SenseContext("focus", tmp_path, {"display": display, "retry_s": 3600})
        assert sense.compute(gone, within) is None
        time.sleep(0.3)
        after = run("focus", gone, tmp_path, display=display, retry_s=0.2).state
        assert after["status"] == "ok", after
    finally:
        opened = sense._conn.get("display") if sense._conn.get("name") == display else None
        if opened is not None:
            opened.close()
            sense._conn.clear()
        server.terminate()
        server.wait(timeout=10)


def _answers(env: dict[str, str]) -> bool:
    probe = ["xdotool", "getmouselocation"] if shutil.which("xdotool") else ["xprop", "-root"]
    return subprocess.run(probe, env=env, capture_output=True).returncode == 0


def test_focus_follows_real_windows_and_idle(xserver: str, tmp_path: Path) -> None:
    env = {**os.environ, "DISPLAY": xserver}
    one = _xterm(xserver, "first window")
    two = None
    try:
        state: Any = initial("focus")
        seen: list[dict[str, Any]] = []

        def titled(title: str) -> bool:
            nonlocal state
            state, out = _focused(xserver, tmp_path, state, idle_s=3600)
            seen.extend(out)
            return any(p.get("event") == "focus" and p["title"] == title for p in seen)

        assert poll(lambda: titled("first window"), timeout=20), seen
        focus = next(p for p in seen if p.get("title") == "first window")
        assert focus["app"].lower() == "xterm" and focus["pid"] == one.pid
        assert isinstance(focus["readings"]["idle_ms"], int)
        two = _xterm(xserver, "second window")
        assert poll(lambda: titled("second window"), timeout=20), seen
        # focus back to the first through the window manager, as a click would
        subprocess.run(
            ["xdotool", "search", "--name", "first window", "windowactivate"], env=env, check=False
        )
        seen.clear()
        assert poll(lambda: titled("first window"), timeout=20), seen
        # idle: no input for longer than idle_s, then input again
        state, out = _focused(xserver, tmp_path, state, idle_s=0.001)
        assert [p["event"] for p in out] == ["away"]
        subprocess.run(
            ["xdotool", "mousemove", "10", "10", "mousemove", "20", "20"], env=env, check=True
        )
        state, out = _focused(xserver, tmp_path, state, idle_s=0.5)
        assert [p["event"] for p in out] == ["back"] and out[0]["away_ms"] >= 0
    finally:
        for proc in (one, two):
            if proc is not None:
                proc.kill()
                proc.wait()


# WM_CLASS is ("SecretPlans", "XTerm"); each name is given in a case neither part has, so a
# match that is case-sensitive on either side (the option's or the window's) misses it.
@pytest.mark.parametrize("excluded", ["xTERM", "SECRETPLANS"], ids=["class", "instance"])
def test_an_excluded_app_keeps_its_title_out(xserver: str, tmp_path: Path, excluded: str) -> None:
    term = _xterm(xserver, "secret plans", "SecretPlans")
    try:
        state: Any = initial("focus")
        seen: list[dict[str, Any]] = []

        def got() -> bool:
            nonlocal state
            state, out = _focused(xserver, tmp_path, state, exclude_apps=[excluded], idle_s=3600)
            seen.extend(out)
            return any(p.get("app") == "(excluded)" for p in seen)

        assert poll(got, timeout=20), seen
        assert all("secret" not in str(p) for p in seen)
    finally:
        term.kill()
        term.wait()


# --- focus on macOS: Quartz cannot run here, so a stand-in gives its documented shapes ----------


class _Quartz:
    """What the sense calls of pyobjc's Quartz, answering as a macOS window server does:
    on-screen windows front to back (menu bar and dock on other layers), idle in seconds."""

    kCGWindowListOptionOnScreenOnly, kCGWindowListExcludeDesktopElements = 1, 16
    kCGNullWindowID, kCGEventSourceStateHIDSystemState = 0, 1

    def __init__(self, windows: list[dict[str, Any]], idle_s: float) -> None:
        self.windows, self.idle_s = windows, idle_s
        self.asked: list[Any] = []

    def CGWindowListCopyWindowInfo(self, option: int, relative: int) -> list[dict[str, Any]]:
        self.asked.append((option, relative))
        return self.windows

    def CGEventSourceSecondsSinceLastEventType(self, state: int, kind: int) -> float:
        assert (state, kind) == (1, 0xFFFFFFFF)  # the HID system, any input
        return self.idle_s


_MENU_BAR = {"kCGWindowLayer": 25, "kCGWindowOwnerName": "Window Server", "kCGWindowNumber": 3}


def _mac(monkeypatch: pytest.MonkeyPatch, quartz: Any) -> Any:
    sense = load("focus")
    monkeypatch.setattr(sense, "_MAC", True)
    monkeypatch.setitem(sys.modules, "Quartz", quartz)
    monkeypatch.setitem(sense._fresh, "first", True)
    monkeypatch.setitem(sense._tried, "at", 0)
    return sense


def test_focus_on_macos_reads_the_frontmost_window_and_idle(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    editor = {"kCGWindowLayer": 0, "kCGWindowOwnerName": "Code", "kCGWindowOwnerPID": 812,
              "kCGWindowNumber": 4411, "kCGWindowName": "notes.md — nerve"}  # fmt: skip
    behind = {**editor, "kCGWindowOwnerName": "Safari", "kCGWindowName": "docs"}
    quartz = _Quartz([_MENU_BAR, editor, behind], idle_s=2.5)
    _mac(monkeypatch, quartz)
    first = run("focus", initial("focus"), tmp_path)
    [obs] = first.observations
    assert obs.payload == {"event": "focus", "app": "Code", "title": "notes.md — nerve",
                           "window": 4411, "pid": 812, "readings": {"idle_ms": 2500}}  # fmt: skip
    assert quartz.asked == [(1 | 16, 0)]  # on-screen only, without the desktop
    assert not run("focus", first.state, tmp_path).observations  # nothing changed
    quartz.windows = [_MENU_BAR, {**behind, "kCGWindowName": None}]  # no Screen Recording
    second = run("focus", first.state, tmp_path)
    [moved] = second.observations
    assert (moved.payload["app"], moved.payload["title"]) == ("Safari", "")
    assert moved.line == "focus Safari"
    quartz.idle_s = 400.0
    [away] = run("focus", second.state, tmp_path, idle_s=300).observations
    assert away.payload["event"] == "away" and away.payload["idle_ms"] == 400_000


def test_focus_on_macos_keeps_an_excluded_app_s_title_out(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    bank = {"kCGWindowLayer": 0, "kCGWindowOwnerName": "Bank", "kCGWindowOwnerPID": 9,
            "kCGWindowNumber": 7, "kCGWindowName": "balance 1,234"}  # fmt: skip
    _mac(monkeypatch, _Quartz([bank], idle_s=0))
    # in a case the owner's name does not have: the match ignores case on both sides
    [obs] = run("focus", initial("focus"), tmp_path, exclude_apps=["bANK"]).observations
    assert obs.payload["app"] == "(excluded)" and "balance" not in str(obs.payload)


def test_focus_on_macos_without_quartz_says_so_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    sense = _mac(monkeypatch, None)  # None in sys.modules: the import fails
    first = run("focus", initial("focus"), tmp_path)
    assert first.state["status"] == "unavailable"
    assert "pyobjc-framework-Quartz" in first.state["note"]
    assert sense.compute(first.state, SenseContext("focus", tmp_path, {})) is None
