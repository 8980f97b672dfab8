"""Delivering a surfaced highlight to the person: a configured command, a desktop notification.

The command runs argv-only (never through a shell) with the decision as JSON in the
``NERVE_DECISION`` environment variable. The desktop notification uses ``notify-send`` when a
graphical session is present (``desktop: auto``), always (``on``) or never (``off``). A
delivery that fails is recorded as an ``attention.notify_failed`` event; nothing else is lost.
"""

from __future__ import annotations

import asyncio
import json
import os
import shutil
from typing import Any

from nerve.attention.host import Records
from nerve.attention.settings import NotifySettings

TIMEOUT_S = 10.0


def _desktop_available() -> bool:
    session = any(
        os.environ.get(v) for v in ("DISPLAY", "WAYLAND_DISPLAY", "DBUS_SESSION_BUS_ADDRESS")
    )
    return session and shutil.which("notify-send") is not None


def channels(settings: NotifySettings, payload: dict[str, Any]) -> list[tuple[str, list[str]]]:
    """The (name, argv) pairs a surfaced decision is delivered through."""
    out: list[tuple[str, list[str]]] = []
    if settings.command:
        out.append(("command", list(settings.command)))
    desktop = settings.desktop == "on" or (settings.desktop == "auto" and _desktop_available())
    if desktop:
        out.append(
            (
                "desktop",
                [
                    "notify-send",
                    "--app-name=nerve",
                    f"nerve: {payload['probe']}",
                    str(payload["source_line"])[:200],
                ],
            )
        )
    return out


async def _run(argv: list[str], env: dict[str, str]) -> str | None:
    """None on success, else why it failed."""
    try:
        proc = await asyncio.create_subprocess_exec(
            *argv,
            env=env,
            stdin=asyncio.subprocess.DEVNULL,
            stdout=asyncio.subprocess.DEVNULL,
            stderr=asyncio.subprocess.PIPE,
        )
    except OSError as exc:
        return f"cannot run {argv[0]}: {exc}"
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


async def deliver(kernel: Records, settings: NotifySettings, payload: dict[str, Any]) -> None:
    env = {**os.environ, "NERVE_DECISION": json.dumps(payload, sort_keys=True)}
    for name, argv in channels(settings, payload):
        error = await _run(argv, env)
        if error is not None:
            await kernel.record(
                "attention.notify_failed",
                name,
                f"notify via {name} failed: {error}",
                {"channel": name, "error": error, "source_event": payload["source_event"]},
            )
