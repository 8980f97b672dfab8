"""Epoch seals as a kernel extension: at the start of every epoch, a seal over the
manifest's head and the surfacing chain's head (``nerve.seal``), whether or not anything
happened; epochs missed while the daemon was down are sealed late, at its start.

Without a set-up (``nerve audit seal-setup``) or with ``audit.seal.enabled: false`` it does
nothing. When it cannot seal (a damaged state, a token it cannot reach, the horizon
passed) the daemon keeps logging: ``status`` says it is not sealing and why, the daemon's
log warns, and a ``seal.stopped`` event records it once per reason.
"""

from __future__ import annotations

import asyncio
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

from nerve.errors import NerveError
from nerve.runtime import journal
from nerve.runtime.extensions import Loop

if TYPE_CHECKING:
    from nerve.runtime.extensions import ExtensionNeeds
    from nerve.seal import Heads, Sealer

RETRY_S = 30.0


class Sealing(Loop):
    """The daemon's sealer; :meth:`status` is what ``nerve status`` shows of it."""

    def __init__(self) -> None:
        super().__init__()
        self.sealer: Sealer | None = None
        self.stopped: str | None = None  # why it is not sealing, when set up but failing

    async def start(self, kernel: ExtensionNeeds) -> None:
        folder = kernel.ws.data / "seals"
        if not kernel.config.audit.seal.enabled or not (folder / "setup.json").exists():
            return
        self.spawn(self._run(kernel, folder), "epoch-seals")

    def status(self) -> dict[str, Any] | None:
        """``{"sealing", "last_epoch", "sealed", "why"}``, or None when not set up."""
        if self.sealer is None and self.stopped is None:
            return None
        sealer = self.sealer
        return {
            "sealing": self.stopped is None,
            "last_epoch": None if sealer is None or sealer.last < 0 else sealer.last,
            "sealed": 0 if sealer is None else sealer.sealed,
            "why": self.stopped,
        }

    async def _run(self, kernel: ExtensionNeeds, folder: Path) -> None:
        while True:
            try:
                if self.sealer is None:
                    self.sealer = await asyncio.to_thread(self._open, kernel, folder)
                await asyncio.to_thread(self.sealer.seal_due)
                if self.stopped is not None:
                    journal.say("epoch sealing resumed")
                self.stopped = None
                await asyncio.sleep(_until_next(self.sealer))
            except (NerveError, OSError) as exc:
                await self._not_sealing(kernel, str(exc))
                await asyncio.sleep(RETRY_S)

    def _open(self, kernel: ExtensionNeeds, folder: Path) -> Sealer:
        """The sealer, once the identity that certified the set-up answers (a token)."""
        from nerve.seal import Sealer
        from nerve.seal.token import confirm

        confirm(folder)
        root = kernel.ws.log_root
        return Sealer(folder, lambda: heads_now(root))

    async def _not_sealing(self, kernel: ExtensionNeeds, why: str) -> None:
        if why == self.stopped:
            return
        self.stopped = why
        journal.warn(f"NOT sealing epochs (the log is kept as before): {why}")
        await kernel.record("seal.stopped", "seal", f"not sealing epochs: {why}", {"why": why})


def heads_now(log_root: Path) -> Heads:
    """What a seal commits to, read from the log as it is (the manifest, then the chain's
    links, which the manifest's segments and the unsealed tail hold)."""
    from nerve.attention.audit import chain_links
    from nerve.chain import link_id
    from nerve.log.store import manifest_state
    from nerve.seal import Heads

    state = manifest_state(log_root)
    links = chain_links(log_root)
    head = link_id(links[-1]) if links else bytes(32)
    return Heads(len(state.records), bytes.fromhex(state.head), len(links), head)


def _until_next(sealer: Sealer) -> float:
    """Seconds until the next epoch begins (a little after, so it is surely due)."""
    now = time.time_ns()
    following = sealer.seed.starts_ns(sealer.seed.epoch_at(now) + 1)
    return max(0.05, (following - now) / 1e9 + 0.02)
