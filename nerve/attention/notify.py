"""Delivering a surfaced highlight to the person: a desktop notification, a configured command.

The desktop notification goes through ``desktop-notifier`` (the freedesktop Notifications
service over the D-Bus session bus on Linux, the notification centre on macOS). Its title is
the surfacing's cause in words and its body the gate's reason (both from
:func:`nerve.attention.reason.reason_of`), with two actions: **Open** shows the decision's
page in the web UI (``nerve ui --open --next /attention/SEQ``, through the login link) and
**Mute 1 h** records an ``attention.mute`` event for the probe. ``desktop: auto`` sends one
when a notification service answers on the session bus, ``on`` always tries, ``off`` never.
With no service, :class:`Notices` says so once in the daemon's log and in ``nerve status``;
the surfacing is still recorded, shown by ``nerve dev``, the UI and ``nerve attend --follow``.

Mute, quiet hours and do-not-disturb are **delivery filters**: the gate decides and the chain
seals exactly as without them (so ``attend --replay --recompute`` is unchanged), and the daemon
writes why a surfacing was not sent into the decision's ``delivery`` field, which the reason
renders ("not sent: muted until 21:30").

The command runs argv-only (never through a shell) with the decision as JSON in the
``NERVE_DECISION`` environment variable. A delivery that fails is recorded as an
``attention.notify_failed`` event; nothing else is lost.
"""

from __future__ import annotations

import asyncio
import json
import logging
import os
import sys
import time
from collections.abc import Callable, Mapping
from typing import Any

from nerve.attention.kinds import MUTE
from nerve.attention.needs import Records
from nerve.attention.reason import reason_of
from nerve.attention.settings import NotifyConfig, quiet_span
from nerve.errors import report

TIMEOUT_S = 10.0
MUTE_NS = 3600 * 1_000_000_000  # "Mute 1 h"
NOTIFICATIONS = "org.freedesktop.Notifications"
_NS_PER_S = 1_000_000_000


# -- when a surfacing is not sent --------------------------------------------------------


def clock_time(ns: int, localtime: Callable[[float], time.struct_time] = time.localtime) -> str:
    """``HH:MM`` of a wall-clock time in nanoseconds, local time."""
    return time.strftime("%H:%M", localtime(ns / _NS_PER_S))


def in_quiet_hours(span: tuple[int, int], minute: int) -> bool:
    """Whether ``minute`` (after midnight) is in ``span``, which may run past midnight."""
    first, end = span
    if first <= end:
        return first <= minute < end
    return minute >= first or minute < end


def withheld(
    settings: NotifyConfig,
    mutes: Mapping[str, int],
    probe: str,
    now_ns: int,
    localtime: Callable[[float], time.struct_time] = time.localtime,
) -> str | None:
    """Why a surfacing of ``probe`` at ``now_ns`` is not sent to the person (``muted until
    21:30``, ``quiet hours 22:00-07:00``, ``do not disturb``); None when it is sent."""
    until = mutes.get(probe, 0)
    if until > now_ns:
        return f"muted until {clock_time(until, localtime)}"
    if settings.dnd:
        return "do not disturb"
    span = quiet_span(settings.quiet) if settings.quiet else None
    if span is not None:
        local = localtime(now_ns / _NS_PER_S)
        if in_quiet_hours(span, local.tm_hour * 60 + local.tm_min):
            return f"quiet hours {settings.quiet.strip()}"
    return None


def mute_of(payload: Mapping[str, Any]) -> tuple[str, int] | None:
    """(probe, until ns) of a stored ``attention.mute`` payload; None when it is not one."""
    probe, until = payload.get("probe"), payload.get("until_ns")
    if isinstance(probe, str) and isinstance(until, int) and not isinstance(until, bool):
        return probe, until
    return None


# -- whether a notification service is there ----------------------------------------------


async def missing_service(environ: Mapping[str, str] = os.environ) -> str | None:
    """Why no desktop notification can be shown here (``no D-Bus session``, ``no
    notification server``), or None when a service answers (always on macOS)."""
    if sys.platform == "darwin":
        return None
    address = environ.get("DBUS_SESSION_BUS_ADDRESS")
    if not address:
        return "no D-Bus session"
    from dbus_fast import Message
    from dbus_fast.aio import MessageBus

    try:
        bus = await asyncio.wait_for(MessageBus(bus_address=address).connect(), TIMEOUT_S)
    except (OSError, ValueError, TimeoutError, Exception):  # dbus-fast raises its own too
        return "no D-Bus session"
    try:
        for member in ("ListNames", "ListActivatableNames"):
            reply = await bus.call(
                Message(
                    destination="org.freedesktop.DBus",
                    path="/org/freedesktop/DBus",
                    interface="org.freedesktop.DBus",
                    member=member,
                )
            )
            if reply is not None and NOTIFICATIONS in (reply.body[0] if reply.body else []):
                return None
        return "no notification server"
    finally:
        bus.disconnect()


class Notices:
    """Whether surfacings reach the desktop, as ``nerve status`` says it; a change is said
    once in the daemon's log."""

    def __init__(self) -> None:
        self.state = "not checked yet"

    def describe(self) -> str:
        return self.state

    def set(self, state: str) -> None:
        if state != self.state:  # unavailable is a warning; reaching the desktop is news
            report(f"notifications: {state}", warning=state.startswith("unavailable"))
        self.state = state


# -- sending ------------------------------------------------------------------------------


def _quiet_library() -> None:
    """desktop-notifier logs a traceback for each failed send; ours says it once."""
    logger = logging.getLogger("desktop_notifier")
    logger.propagate = False
    logger.addHandler(logging.NullHandler())


class Notifier:
    """Sends surfaced decisions: the desktop notification with its actions, the command.

    ``opener(seq)`` is the argv that shows decision ``seq`` in the web UI; ``clock`` gives
    wall-clock nanoseconds (mutes and quiet hours are the person's time)."""

    def __init__(
        self,
        settings: NotifyConfig,
        kernel: Records,
        notices: Notices,
        opener: Callable[[int], list[str]],
        *,
        environ: Mapping[str, str] = os.environ,
        clock: Callable[[], int] = time.time_ns,
    ) -> None:
        self.settings, self.kernel, self.notices = settings, kernel, notices
        self.opener, self.environ, self.clock = opener, environ, clock
        self.mutes: dict[str, int] = {}  # probe -> muted until (ns)
        self._desktop: Any = None  # one DesktopNotifier: its actions call back while it lives
        self._tasks: set[asyncio.Task[Any]] = set()

    async def start(self) -> None:
        """Find out whether a notification service answers, and say so."""
        if self.settings.desktop == "off":
            self.notices.set("off (attention.notify.desktop: off)")
            return
        await self._check()

    async def _check(self) -> bool:
        missing = await missing_service(self.environ)
        if missing is None:
            self.notices.set("sent to the desktop's notification service")
        else:
            self.notices.set(f"unavailable ({missing})")
        return missing is None

    def note(self, payload: Mapping[str, Any]) -> dict[str, Any]:
        """What the daemon adds to a decision before it is stored: for a surfacing it will
        not send, ``{"delivery": why}`` (not compared by ``attend --recompute``)."""
        if payload.get("outcome") != "surface":
            return {}
        why = withheld(self.settings, self.mutes, str(payload.get("probe")), self.clock())
        return {} if why is None else {"delivery": why}

    def heard(self, payload: Mapping[str, Any]) -> None:
        """A stored ``attention.mute`` event: hold that probe's notifications until then."""
        mute = mute_of(payload)
        if mute is not None:
            probe, until = mute
            self.mutes[probe] = max(until, self.mutes.get(probe, 0))

    async def deliver(self, payload: dict[str, Any]) -> None:
        """Send one surfaced decision through every channel, unless it is withheld."""
        if payload.get("delivery"):
            return
        if self.settings.command:
            await self._command(payload)
        if self.settings.desktop != "off":
            await self._desktop_send(payload)

    async def _command(self, payload: dict[str, Any]) -> None:
        env = {**self.environ, "NERVE_DECISION": json.dumps(payload, sort_keys=True)}
        error = await run_argv(list(self.settings.command), env)
        if error is not None:
            await self._failed("command", error, payload)

    async def _desktop_send(self, payload: dict[str, Any]) -> None:
        unknown = self.settings.desktop == "auto" and not self.notices.state.startswith("sent")
        if unknown and not await self._check():
            return
        error = await self._send(payload)
        if error is not None:
            self.notices.set(f"unavailable ({error})")
            await self._failed("desktop", error, payload)

    async def _send(self, payload: dict[str, Any]) -> str | None:
        """Show the notification; why it could not be shown, or None."""
        from desktop_notifier import Button, DesktopNotifier, Urgency

        if self._desktop is None:
            _quiet_library()
            self._desktop = DesktopNotifier(app_name="nerve")
        reason = reason_of(payload)
        shown: list[bool] = []
        buttons = [
            Button("Open", on_pressed=lambda: self._open(payload)),
            Button("Mute 1 h", on_pressed=lambda: self._mute(payload)),
        ]
        try:
            await asyncio.wait_for(
                self._desktop.send(
                    title=f"nerve: {reason.cause}"[:200],
                    message=reason.words()[:600],
                    urgency=Urgency.Normal,
                    buttons=buttons,
                    on_dispatched=lambda: shown.append(True),
                ),
                TIMEOUT_S,
            )
        except (TimeoutError, OSError) as exc:
            return f"the notification service did not answer: {exc or 'timed out'}"
        return None if shown else "the notification service did not take it"

    def _open(self, payload: Mapping[str, Any]) -> None:
        seq = payload.get("chain_seq")
        if isinstance(seq, int):
            self._spawn(self._open_ui(seq))

    async def _open_ui(self, seq: int) -> None:
        error = await run_argv(self.opener(seq), dict(self.environ), wait=False)
        if error is not None:
            report(f"notification action Open failed: {error}")

    def _mute(self, payload: Mapping[str, Any]) -> None:
        self._spawn(self.mute(str(payload.get("probe")), payload))

    async def mute(self, probe: str, payload: Mapping[str, Any]) -> None:
        """Record that ``probe``'s notifications are muted for an hour from now."""
        until = self.clock() + MUTE_NS
        self.mutes[probe] = max(until, self.mutes.get(probe, 0))
        await self.kernel.record(
            MUTE,
            probe,
            f"muted {probe} until {clock_time(until)} (from a notification)",
            {
                "probe": probe,
                "until_ns": until,
                "source_event": payload.get("source_event"),
                "chain_seq": payload.get("chain_seq"),
            },
        )

    def _spawn(self, work: Any) -> None:
        task = asyncio.ensure_future(work)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    async def _failed(self, channel: str, error: str, payload: Mapping[str, Any]) -> None:
        await self.kernel.record(
            "attention.notify_failed",
            channel,
            f"notify via {channel} failed: {error}",
            {"channel": channel, "error": error, "source_event": payload.get("source_event")},
        )


async def run_argv(argv: list[str], env: dict[str, str], *, wait: bool = True) -> str | None:
    """Run ``argv`` (no shell); None on success, else why it failed. ``wait=False`` starts
    it in a session of its own and does not wait (a UI that keeps serving)."""
    try:
        proc = await asyncio.create_subprocess_exec(
            *argv,
            env=env,
            stdin=asyncio.subprocess.DEVNULL,
            stdout=asyncio.subprocess.DEVNULL,
            stderr=asyncio.subprocess.PIPE if wait else asyncio.subprocess.DEVNULL,
            start_new_session=not wait,
        )
    except OSError as exc:
        return f"cannot run {argv[0]}: {exc}"
    if not wait:
        return None
    try:
        async with asyncio.timeout(TIMEOUT_S):
            _, err = await proc.communicate()
    except TimeoutError:
        proc.kill()
        await proc.wait()
        return f"{argv[0]} took longer than {TIMEOUT_S:.0f} s"
    if proc.returncode:
        return f"{argv[0]} exited {proc.returncode}: {err.decode(errors='replace')[-300:]}"
    return None
