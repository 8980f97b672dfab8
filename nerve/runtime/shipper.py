"""``fleet.ship: auto``: the daemon ships after each seal, in a child process.

The child is ``nerve fleet ship`` itself, so the daemon never loads pyiceberg and a ship
that hangs or crashes cannot take the kernel with it. A failed ship is reported in the
daemon log and tried again with backoff; the next success says how many attempts it took.
"""

from __future__ import annotations

import asyncio
import json
import os
import sys
from typing import Any

from nerve.runtime import journal

CHECK_S = 2.0
BACKOFF_MAX_S = 300.0
TIMEOUT_S = 600.0


async def ship_loop(kernel: Any) -> None:
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
        ok, text = await _ship_once(kernel.ws.root)
        if not ok:
            failures += 1
            wait = min(max(wait, CHECK_S) * 2, BACKOFF_MAX_S)
            journal.warn(f"fleet ship failed (attempt {failures}), retry in {wait:.0f} s: {text}")
            continue
        if failures:
            journal.say(f"fleet ship succeeded after {failures} failed attempts")
        shipped, wait, failures = size, CHECK_S, 0
        if text:
            journal.say(text)


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
