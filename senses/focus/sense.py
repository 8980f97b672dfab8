"""The application and window in focus, and away/back (no input for a while), on X11 and
macOS.

Source class ``app_focus``, trust ``FirstParty`` (we ask the window server ourselves). On X11
each compute reads the root window's ``_NET_ACTIVE_WINDOW`` (EWMH), that window's ``WM_CLASS``,
``_NET_WM_NAME`` (else ``WM_NAME``) and ``_NET_WM_PID``, and the time since the last input
from the MIT-SCREEN-SAVER extension. Observations, one per change:

- ``{"event": "focus", "app", "title", "window", "pid", "readings": {"idle_ms"}}`` when the
  focused application or title changes, and at a worker's first compute (so time spent in
  an app is never carried across a gap when nerve was not running);
- ``{"event": "away", "idle_ms", "readings": {"idle_ms"}}`` once no input has come for
  ``idle_s``, and ``{"event": "back", "away_ms", "readings": {"away_ms"}}`` at the next input.

Titles pass the privacy rules before the log like every payload; an application named in
``exclude_apps`` (its WM_CLASS class or instance, any case) is recorded as ``app:
"(excluded)"`` with no title, so time stays accounted for without saying what it was.

Without an X display (a headless machine, or Wayland without XWayland's ``DISPLAY``) there is
nothing to observe: the first compute says so once in state and every later one returns at
once, recording nothing, until the display it would use changes (a daemon started again
inside a desktop session) or, for a display that could not be opened (an X server not up
yet at boot), ``retry_s`` has passed.

On macOS (with ``pyobjc-framework-Quartz``, installed with nerve there) the focus is the
frontmost on-screen window of the normal layer in Quartz's window list (its owner's name and
pid, its number and title: no run loop needed, unlike ``NSWorkspace``), and idle time the
HID system's seconds since any input. Titles need the Screen Recording permission; without
it Quartz gives none and the app alone is recorded.

Options: ``idle_s`` (300), ``exclude_apps`` ([]), ``display`` (``$DISPLAY``), ``retry_s`` (60).
"""

from __future__ import annotations

import contextlib
import os
import sys
import time
import warnings
from typing import Any, NamedTuple

from nerve.contract import Observation, Result, SenseContext
from nerve.events import SourceClass, Trust
from nerve.privacy.cut import shorten

initial_state: dict[str, Any] = {"status": None, "note": None}

_TITLE_MAX = 200
_EXCLUDED = "(excluded)"


class _Options(NamedTuple):
    idle_ms: int
    exclude: frozenset[str]
    display: str | None
    retry_ns: int


class _Focus(NamedTuple):
    app: str
    title: str
    window: int
    pid: int | None


_conn: dict[str, Any] = {}  # the worker's X connection, opened on first use
_fresh = {"first": True}  # a worker's first compute reports the focus even if unchanged
_tried = {"at": 0}  # when this worker last failed to open the display (monotonic ns)
_MAC = sys.platform == "darwin"
_ANY_INPUT = 0xFFFFFFFF  # kCGAnyInputEventType


def compute(state: dict[str, Any], ctx: SenseContext) -> Result | None:
    opts = _options(ctx)
    if _MAC:
        return _on_macos(state, opts)
    if state.get("status") == "unavailable" and not _look_again(state, opts):
        return None  # said once; nothing to observe costs nothing
    display, why = _display(opts)
    if display is None:
        _tried["at"] = time.monotonic_ns()
        if state.get("status") == "unavailable" and state.get("display") == opts.display:
            return None  # still not there: already said
        return Result(state={"status": "unavailable", "note": why, "display": opts.display})
    try:
        focus, idle_ms = _read(display, opts)
    except Exception as exc:  # the server went away or refused: drop it, try again later
        _forget()
        return Result(state={**state, "status": "error", "note": f"X11 read failed: {exc}"})
    return _changes(state, focus, idle_ms, opts)


def _on_macos(state: dict[str, Any], opts: _Options) -> Result | None:
    if state.get("status") == "unavailable" and _tried["at"]:
        return None  # said once: a module cannot appear within this worker
    try:
        import Quartz  # type: ignore[import-not-found]
    except ImportError:
        _tried["at"] = time.monotonic_ns()
        if state.get("status") == "unavailable":
            return None
        why = "pyobjc-framework-Quartz is not installed: nothing to observe"
        return Result(state={"status": "unavailable", "note": why, "display": None})
    try:
        focus, idle_ms = _read_quartz(Quartz, opts)
    except Exception as exc:  # the window server refused: say so, try again next compute
        return Result(state={**state, "status": "error", "note": f"Quartz read failed: {exc}"})
    return _changes(state, focus, idle_ms, opts)


def _read_quartz(quartz: Any, opts: _Options) -> tuple[_Focus | None, int | None]:
    listed = quartz.CGWindowListCopyWindowInfo(
        quartz.kCGWindowListOptionOnScreenOnly | quartz.kCGWindowListExcludeDesktopElements,
        quartz.kCGNullWindowID,
    )
    front = next((w for w in listed or () if w.get("kCGWindowLayer") == 0), None)
    idle_s = quartz.CGEventSourceSecondsSinceLastEventType(
        quartz.kCGEventSourceStateHIDSystemState, _ANY_INPUT
    )
    idle_ms = None if idle_s is None else int(float(idle_s) * 1000)
    if front is None:
        return None, idle_ms
    app = str(front.get("kCGWindowOwnerName") or "")
    if app.lower() in opts.exclude:
        return _Focus(_EXCLUDED, "", 0, None), idle_ms
    title = shorten(str(front.get("kCGWindowName") or ""), _TITLE_MAX)
    pid = front.get("kCGWindowOwnerPID")
    window = int(front.get("kCGWindowNumber") or 0)
    return _Focus(app, title, window, int(pid) if pid is not None else None), idle_ms


def _look_again(state: dict[str, Any], opts: _Options) -> bool:
    """Whether an unavailable display may have come: the state is kept across restarts, so a
    daemon first started outside a desktop session must not stay blind inside one."""
    if state.get("display", opts.display) != opts.display:
        return True  # another display to try (or one now, where there was none)
    if opts.display is None:
        return False  # no display named: nothing can change within this process
    return _tried["at"] == 0 or time.monotonic_ns() - _tried["at"] >= opts.retry_ns


def _options(ctx: SenseContext) -> _Options:
    idle_s = ctx.options.get("idle_s", 300)
    if isinstance(idle_s, bool) or not isinstance(idle_s, int | float) or idle_s <= 0:
        raise ValueError(
            f"senses.{ctx.name}.options.idle_s must be a positive number, got {idle_s!r}"
        )
    apps = ctx.options.get("exclude_apps", [])
    if not isinstance(apps, list) or not all(isinstance(a, str) and a for a in apps):
        raise ValueError(
            f"senses.{ctx.name}.options.exclude_apps must be a list of names, got {apps!r}"
        )
    display = ctx.options.get("display", os.environ.get("DISPLAY"))
    if display is not None and not isinstance(display, str):
        raise ValueError(f"senses.{ctx.name}.options.display must be text, got {display!r}")
    retry_s = ctx.options.get("retry_s", 60)
    if isinstance(retry_s, bool) or not isinstance(retry_s, int | float) or retry_s <= 0:
        raise ValueError(
            f"senses.{ctx.name}.options.retry_s must be a positive number, got {retry_s!r}"
        )
    return _Options(
        int(idle_s * 1000),
        frozenset(a.lower() for a in apps),
        display or None,
        int(retry_s * 1e9),
    )


def _display(opts: _Options) -> tuple[Any, str]:
    """The open X display, or None and why there is nothing to observe."""
    if opts.display is None:
        if os.environ.get("WAYLAND_DISPLAY"):
            return None, "Wayland session without an X display: nothing to observe"
        return None, "no X display (headless): nothing to observe"
    if _conn.get("name") == opts.display:
        return _conn["display"], ""
    _forget()  # another display named: the old connection is closed, not left to the GC
    try:
        from Xlib import display as xdisplay  # type: ignore[import-untyped]
    except ImportError:
        return None, "python-xlib is not installed: nothing to observe"
    with warnings.catch_warnings():
        # python-xlib leaves a socket that failed to connect to the collector; it is closed
        # as the exception goes, here, not a warning later
        warnings.simplefilter("ignore", ResourceWarning)
        try:
            opened = xdisplay.Display(opts.display)
        except Exception as exc:  # no server at that name, or access refused
            why = f"cannot open X display {opts.display!r}: {exc}"
        else:
            why = ""
    if why:
        return None, why
    _conn.update(name=opts.display, display=opened, atoms={})
    return opened, ""


def _forget() -> None:
    """Close and drop the cached connection."""
    old = _conn.get("display")
    _conn.clear()
    if old is not None:
        with contextlib.suppress(Exception):
            old.close()


def _atom(display: Any, name: str) -> int:
    atoms: dict[str, int] = _conn.setdefault("atoms", {})
    if name not in atoms:
        atoms[name] = display.intern_atom(name)
    return atoms[name]


def _read(display: Any, opts: _Options) -> tuple[_Focus | None, int | None]:
    root = display.screen().root
    active = _property(display, root, "_NET_ACTIVE_WINDOW")
    focus = None
    if active and active[0]:
        focus = _window(display, display.create_resource_object("window", active[0]), opts)
    return focus, _idle_ms(display, root)


def _property(display: Any, window: Any, name: str) -> Any:
    prop = window.get_full_property(_atom(display, name), 0)
    return None if prop is None else prop.value


def _window(display: Any, window: Any, opts: _Options) -> _Focus | None:
    from Xlib import error as xerror

    try:
        wm_class = window.get_wm_class() or ("", "")
        title = _property(display, window, "_NET_WM_NAME") or window.get_wm_name() or ""
        pid = _property(display, window, "_NET_WM_PID")
    except xerror.XError:
        return None  # closed between the two reads
    app = wm_class[1] or wm_class[0]
    if {wm_class[0].lower(), wm_class[1].lower()} & opts.exclude:
        return _Focus(_EXCLUDED, "", 0, None)
    text = title.decode("utf-8", "replace") if isinstance(title, bytes) else str(title)
    return _Focus(app, shorten(text, _TITLE_MAX), int(window.id), int(pid[0]) if pid else None)


def _idle_ms(display: Any, root: Any) -> int | None:
    if not display.has_extension("MIT-SCREEN-SAVER"):
        return None
    return int(root.screensaver_query_info().idle)


def _changes(
    state: dict[str, Any], focus: _Focus | None, idle_ms: int | None, opts: _Options
) -> Result:
    now = time.time_ns()
    observations: list[Observation] = []
    away_since = state.get("away_since")
    if idle_ms is not None and away_since is None and idle_ms >= opts.idle_ms:
        away_since = now - idle_ms * 1_000_000
        observations.append(_away(idle_ms, away_since))
    elif idle_ms is not None and away_since is not None and idle_ms < opts.idle_ms:
        observations.append(_back((now - idle_ms * 1_000_000 - away_since) // 1_000_000))
        away_since = None
    seen = [focus.app, focus.title] if focus else None
    if seen != state.get("focus") or _fresh["first"]:
        observations.append(_focused(focus, idle_ms))
    _fresh["first"] = False
    new_state = {"status": "ok", "note": None, "focus": seen, "away_since": away_since}
    return Result(state=new_state, observations=observations)


def _focused(focus: _Focus | None, idle_ms: int | None) -> Observation:
    readings = {"idle_ms": idle_ms} if idle_ms is not None else {}
    if focus is None:
        payload = {"event": "focus", "app": "", "title": "", "window": 0, "pid": None}
        return _observation("focus: no window", {**payload, "readings": readings})
    payload = {
        "event": "focus",
        "app": focus.app,
        "title": focus.title,
        "window": focus.window,
        "pid": focus.pid,
        "readings": readings,
    }
    line = f"focus {focus.app}: {focus.title}" if focus.title else f"focus {focus.app}"
    return _observation(shorten(line, _TITLE_MAX), payload)


def _away(idle_ms: int, since_ns: int) -> Observation:
    payload = {"event": "away", "idle_ms": idle_ms, "readings": {"idle_ms": idle_ms}}
    return _observation(f"away: no input for {idle_ms // 1000} s", payload, since_ns)


def _back(away_ms: int) -> Observation:
    payload = {"event": "back", "away_ms": away_ms, "readings": {"away_ms": away_ms}}
    return _observation(f"back after {away_ms // 1000} s away", payload)


def _observation(line: str, payload: dict[str, Any], at: int | None = None) -> Observation:
    return Observation(
        source=SourceClass.APP_FOCUS,
        line=line,
        payload=payload,
        trust=Trust.FIRST_PARTY,
        valid_time_ns=time.time_ns() if at is None else at,
    )
