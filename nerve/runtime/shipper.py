"""``fleet.ship: auto``: the daemon ships after each seal, in a child process.

The child is ``nerve fleet ship`` itself, so the daemon never loads pyiceberg and a ship
that hangs or crashes cannot take the kernel with it. A failed ship is reported in the
daemon log and tried again with backoff and jitter; the next success says how many
attempts it took.

With ``fleet.ship_interval`` a host ships at most once per interval, at an offset into it
drawn from its host name: a thousand hosts shipping hourly spread over the hour instead of
all committing on the hour.

With ``fleet.maintain_interval`` the daemon also runs ``nerve fleet maintain`` once per
interval (again a child process, at a moment drawn from the host name).
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
from nerve.runtime.extensions import Loop

if TYPE_CHECKING:
    from nerve.config.models import NerveConfig
    from nerve.workspace import WorkspaceDir


class Shipping(Protocol):
    """What the ship loop reads of the kernel: the workspace and ``fleet:`` in force."""

    @property
    def ws(self) -> WorkspaceDir: ...

    @property
    def config(self) -> NerveConfig: ...


CHECK_S = 2.0
BACKOFF_MAX_S = 300.0
TIMEOUT_S = 600.0
SLOT_STEP_S = 30.0


async def ship_loop(kernel: Shipping) -> None:
    """The daemon's fleet work: ships, and table upkeep on its schedule."""
    await asyncio.gather(_ship_loop(kernel), maintain_loop(kernel))


class FleetShipping(Loop):
    """The ship and maintain loops as a kernel extension: it runs for the daemon's life and
    reads ``fleet:`` as each reload leaves it (no fleet configured: it only waits)."""

    async def start(self, kernel: Shipping) -> None:
        self.spawn(ship_loop(kernel), "fleet-ship")


async def _ship_loop(kernel: Shipping) -> None:
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
        ok, text = await _child(kernel.ws.root, "ship")
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


async def maintain_loop(kernel: Shipping) -> None:
    """With ``fleet.maintain_interval``: ``nerve fleet maintain`` once per interval, at a
    moment of it drawn from the host name (so hosts that all maintain do not all start at
    once; maintains at once are safe, each commit retried against the table as it is). A
    failure is logged and tried again at the next slot."""
    while True:
        fleet = kernel.config.fleet
        interval = fleet.maintain_interval if fleet is not None else 0
        if not interval:
            await asyncio.sleep(CHECK_S)
            continue
        if not await _until_maintain_slot(kernel, interval):
            continue  # the settings changed while waiting
        fleet = kernel.config.fleet
        if fleet is None:  # removed while waiting
            continue
        keep = f"{fleet.maintain_keep}s"
        ok, text = await _child(kernel.ws.root, "maintain", "--keep", keep)
        if ok:
            journal.say(f"fleet maintain: {text}" if text else "fleet maintain: done")
        else:
            journal.warn(f"fleet maintain failed, next try in {interval} s: {text}")


async def _until_maintain_slot(kernel: Shipping, interval: int) -> bool:
    from nerve.fleet.warehouse import resolve

    if kernel.config.fleet is None:
        return False
    host = resolve(kernel.config.fleet, kernel.ws.data).host
    target = next_slot(time.time(), f"{host}/maintain", interval)
    while (remaining := target - time.time()) > 0:
        await asyncio.sleep(min(remaining, SLOT_STEP_S))
        fleet = kernel.config.fleet
        if fleet is None or fleet.maintain_interval != interval:
            return False
    return True


async def _child(root: os.PathLike[str], verb: str, *args: str) -> tuple[bool, str]:
    """``nerve fleet VERB --json`` in a child process: (ok, its summary or first error line)."""
    proc = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "nerve",
        "--workspace",
        str(root),
        "fleet",
        verb,
        "--json",
        *args,
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
    if "snapshots_after" in result:  # a maintain's
        return (
            f"snapshots {result['snapshots_before']} -> {result['snapshots_after']}, "
            f"manifests {result['manifests_before']} -> {result['manifests_after']}, "
            f"metadata.json {result['metadata_bytes_after']} bytes"
        )
    if not result.get("added") and not result.get("removed"):
        return ""
    return (
        f"fleet: shipped {result['added']} segment(s), dropped {result['removed']} "
        f"(manifest record {result['seq']})"
    )
