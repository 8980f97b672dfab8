"""Batches sent to the daemon in several requests, held until the last part arrives.

A client with more events than one request may carry (``daemon.max_request_bytes``) sends
them in parts on the same ``stage`` id::

    {"type": "emit", "events": [...], "stage": "ID", "more": true}  -> {"ok": true, "staged": N}
    {"type": "emit", "events": [...], "stage": "ID"}                -> the reply for all N

(``import`` the same way). Each part is checked when it arrives; the daemon appends nothing
until the last part, then the whole batch at once: one group commit for ``emit``, one
import for ``import``. So a batch is all or nothing however many parts it took, and the
daemon's own events cannot land between two parts of an import and break its order.

A part that is refused drops the whole stage; so does silence: a stage no part has reached
for ``STAGE_TTL_S`` is forgotten, as are all of them when the daemon stops. All stages
together hold at most ``MAX_STAGED`` events, and at most ``MAX_STAGES`` are open at once:
many clients (or one opening many ids) cannot make the daemon hold more than one batch may.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from nerve.errors import UsageError

STAGE_TTL_S = 120.0
MAX_STAGED = 2_000_000
MAX_STAGES = 16


@dataclass
class _Stage:
    request_type: str
    items: list[Any] = field(default_factory=list)
    touched: float = 0.0


class Stages:
    """Parts of batches, by stage id, until their last part arrives."""

    def __init__(self, now: Callable[[], float] = time.monotonic) -> None:
        self._now = now
        self._held: dict[str, _Stage] = {}

    def count(self, stage: str) -> int:
        """Events held so far for ``stage`` (0 for a new one)."""
        held = self._held.get(stage)
        return len(held.items) if held else 0

    def add(self, stage: str, request_type: str, items: list[Any], *, more: bool) -> list[Any]:
        """Hold ``items``; return the whole batch when this is the last part, else ``[]``."""
        now = self._now()
        self._held = {k: s for k, s in self._held.items() if now - s.touched < STAGE_TTL_S}
        if stage not in self._held and len(self._held) >= MAX_STAGES:
            raise UsageError(
                f"{MAX_STAGES} staged batches are already open; stage {stage!r} is refused",
                field="stage",
                hint="finish or abandon the open batches first (an idle one is dropped after "
                f"{STAGE_TTL_S:.0f} s)",
            )
        held = self._held.pop(stage, None) or _Stage(request_type)
        if held.request_type != request_type:
            raise UsageError(
                f"stage {stage!r} was opened by a {held.request_type!r} request, "
                f"not {request_type!r}; the stage is dropped",
                field="stage",
            )
        held.items += items
        held.touched = now
        if len(held.items) + self._others(stage) > MAX_STAGED:
            raise UsageError(
                f"stage {stage!r} would bring the staged events past {MAX_STAGED} (all open "
                "stages together); the stage is dropped",
                field="stage",
                hint="send fewer events per batch, or stop the daemon and run the command again",
            )
        if more:
            self._held[stage] = held
            return []
        return held.items

    def _others(self, stage: str) -> int:
        return sum(len(s.items) for k, s in self._held.items() if k != stage)

    def drop(self, stage: str) -> None:
        self._held.pop(stage, None)
