"""``fleet.ship: auto``: the daemon ships after each seal, in a child process.

The child is ``nerve fleet ship`` itself, so the daemon never loads pyiceberg and a ship
that hangs or crashes cannot take the kernel with it. A failed ship is reported in the
daemon log and tried again with backoff and jitter; the next success says how many
attempts it took.

With ``fleet.ship_interval`` a host ships at most once per interval, at an offset into it
drawn from its host name: a thousand hosts shipping hourly spread over the hour instead of
all committing on the hour.
"""

from __future__ import annotations

import asyncio
import json
import os
import random
import sys
import time
from typing import TYPE_CHECKING, Protocol

import blake3

from nerve.runtime import journal

if TYPE_CHECKING:
    from nerve.config.models import NerveConfig
    from nerve.workspace import Workspace


class Shipping(Protocol):
    """What the ship loop reads of the kernel: the workspace and ``fleet:`` in force."""

    @property
    def ws(self) -> Workspace: ...

    @property
    def config(self) -> NerveConfig: ...


CHECK_S = 2.0
BACKOFF_MAX_S = 300.0
TIMEOUT_S = 600.0
SLOT_STEP_S = 30.0


async def ship_loop(kernel: Shipping) -> None:
    """Watch the manifest; when it grew since the last good ship, ship."""
    manifest = kernel.ws.log_root / "manifest.jsonl"
    shipped, wait, failures = -1, CHECK_S, 0
    while True:
        await asyncio.sleep(wait)
        fleet = kernel.config.fleet
        if fleet is None or fleet.ship != "auto":
            wait = CHECK_S
            continue
        size = _size(manifest)
        if size == shipped or size <= 0:
            continue
        if fleet.ship_interval and not failures:
            await _until_slot(kernel, fleet.ship_interval)
        ok, text = await _ship_once(kernel.ws.root)
        if not ok:
            failures += 1
            wait = random.uniform(0.5, 1.0) * min(CHECK_S * 2**failures, BACKOFF_MAX_S)
            journal.warn(f"fleet ship failed (attempt {failures}), retry in {wait:.0f} s: {text}")
            continue
        if failures:
            journal.say(f"fleet ship succeeded after {failures} failed attempts")
        shipped, wait, failures = size, CHECK_S, 0
        if text:
            journal.say(text)


def slot_offset(host: str, interval: int) -> float:
    """Seconds into each interval at which ``host`` ships: stable per host, uniform over
    hosts (from blake3 of the name)."""
    digest = int.from_bytes(blake3.blake3(host.encode()).digest()[:8], "big")
    return digest / 2**64 * interval


def next_slot(now: float, host: str, interval: int) -> float:
    """The first moment after ``now`` (epoch seconds) that is ``host``'s slot."""
    offset = slot_offset(host, interval)
    start = now - (now - offset) % interval
    return start + interval if start <= now else start


async def _until_slot(kernel: Shipping, interval: int) -> None:
    from nerve.fleet.warehouse import resolve

    if kernel.config.fleet is None:
        return
    host = resolve(kernel.config.fleet, kernel.ws.data).host
    target = next_slot(time.time(), host, interval)
    while (remaining := target - time.time()) > 0:  # in steps: a settings edit is seen
        await asyncio.sleep(min(remaining, SLOT_STEP_S))
        fleet = kernel.config.fleet
        if fleet is None or fleet.ship != "auto" or fleet.ship_interval != interval:
            return


def _size(path: os.PathLike[str]) -> int:
    try:
        return os.stat(path).st_size
    except OSError:
        return -1


async def _ship_once(root: os.PathLike[str]) -> tuple[bool, str]:
    proc = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "nerve",
        "--workspace",
        str(root),
        "fleet",
        "ship",
        "--json",
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
        stdin=asyncio.subprocess.DEVNULL,
        start_new_session=True,  # a Ctrl+C to the daemon's group is the daemon's to handle
    )
    try:
        out, err = await asyncio.wait_for(proc.communicate(), TIMEOUT_S)
    except (TimeoutError, asyncio.CancelledError):
        proc.kill()
        await proc.wait()
        if asyncio.current_task() is not None and asyncio.current_task().cancelling():  # type: ignore[union-attr]
            raise
        return False, f"no answer in {TIMEOUT_S:.0f} s (killed)"
    if proc.returncode != 0:
        lines = err.decode(errors="replace").strip().splitlines()
        return False, lines[0] if lines else f"exit {proc.returncode}"
    return True, _summary(out)


def _summary(out: bytes) -> str:
    try:
        result = json.loads(out)
    except ValueError:
        return ""
    if not result.get("added") and not result.get("removed"):
        return ""
    return (
        f"fleet: shipped {result['added']} segment(s), dropped {result['removed']} "
        f"(manifest record {result['seq']})"
    )
