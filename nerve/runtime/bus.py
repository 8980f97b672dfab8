"""The signal bus: sense results published in memory to the senses that listen ``on`` them.

Nothing read from the log ever publishes here: the bus carries only live results.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable

Handler = Callable[[str], None]


class SignalBus:
    def __init__(self) -> None:
        self._subs: dict[str, list[Handler]] = defaultdict(list)
        self.published = 0

    def subscribe(self, sense: str, handler: Handler) -> None:
        self._subs[sense].append(handler)

    def listened(self, sense: str) -> bool:
        """Whether any sense listens ``on`` this one (a signal nobody hears is not stored)."""
        return bool(self._subs.get(sense))

    def clear(self) -> None:
        self._subs.clear()

    def publish(self, sense: str) -> int:
        """Deliver ``sense``'s signal; returns how many subscribers heard it."""
        self.published += 1
        handlers = list(self._subs.get(sense, ()))
        for handler in handlers:
            handler(sense)
        return len(handlers)
