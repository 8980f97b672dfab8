"""The bounded-state salience observer (Sense v0.1 §4).

Fed one observation at a time as ``(source, trust)``, it projects three scalars in
``[0, 1]``, each an exact :class:`Ratio` of integer counts:

- **salience** = occurrences of the current source in the recency window / window length;
- **novelty** = 1 − (all-time occurrences of the source, this one included / all seen);
- **uncertainty** = ``Inferred``/``Untrusted`` observations in the window / window length.

No floats are used, so two runs over the same observations project byte-identically. State is
the window (the last ``window`` observations) and all-time per-source counts; it round-trips
through :meth:`Observer.snapshot` / :meth:`Observer.restore` as plain JSON values.
"""

from __future__ import annotations

from collections import Counter, deque
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from nerve.errors import EventError
from nerve.events import Trust, check_source

DEFAULT_WINDOW = 64
SNAPSHOT_VERSION = 1


def round_div(num: int, den: int) -> int:
    """``num / den`` rounded half-up (towards +∞ on a tie), in integers; ``den > 0``."""
    return (2 * num + den) // (2 * den)


@dataclass(frozen=True, slots=True)
class Ratio:
    """An exact rational in ``[0, 1]``; :attr:`milli` is it in thousandths, rounded half-up."""

    num: int
    den: int

    def __post_init__(self) -> None:
        if self.den <= 0 or not 0 <= self.num <= self.den:
            raise EventError(f"ratio {self.num}/{self.den} is not in [0, 1]")

    @property
    def milli(self) -> int:
        return round_div(1000 * self.num, self.den)


@dataclass(frozen=True, slots=True)
class Projection:
    """The three scalars after observation number ``seq`` (0-based)."""

    seq: int
    source: int
    trust: Trust
    salience: Ratio
    novelty: Ratio
    uncertainty: Ratio

    def milli(self) -> dict[str, int]:
        """``{"salience": …, "novelty": …, "uncertainty": …}`` in thousandths."""
        return {
            "salience": self.salience.milli,
            "novelty": self.novelty.milli,
            "uncertainty": self.uncertainty.milli,
        }


def _is_low_trust(trust: int) -> bool:
    return trust in (Trust.INFERRED, Trust.UNTRUSTED)


def _check_trust(trust: int) -> Trust:
    if isinstance(trust, bool) or trust not in (0, 1, 2, 3):
        raise EventError(f"trust {trust!r} is not 0..3")
    return Trust(trust)


class Observer:
    """Exact-count salience / novelty / uncertainty over a recency window."""

    def __init__(self, window: int = DEFAULT_WINDOW) -> None:
        if isinstance(window, bool) or not isinstance(window, int) or window < 1:
            raise EventError(f"observer window must be a positive integer, got {window!r}")
        self.window = window
        self._reset()

    def _reset(self) -> None:
        self._recent: deque[tuple[int, Trust]] = deque(maxlen=self.window)
        self._window_counts: Counter[int] = Counter()
        self._window_low = 0
        self._counts: Counter[int] = Counter()
        self._total = 0

    @property
    def seen(self) -> int:
        """How many observations have been fed in all."""
        return self._total

    def observe(self, source: int, trust: int) -> Projection:
        """Feed one observation and return the projection that includes it."""
        level = _check_trust(trust)
        self._push(check_source(source), level)
        size = len(self._recent)
        return Projection(
            seq=self._total - 1,
            source=source,
            trust=level,
            salience=Ratio(self._window_counts[source], size),
            novelty=Ratio(self._total - self._counts[source], self._total),
            uncertainty=Ratio(self._window_low, size),
        )

    def _push(self, source: int, trust: Trust) -> None:
        if len(self._recent) == self.window:
            old_source, old_trust = self._recent[0]
            self._window_counts[old_source] -= 1
            if self._window_counts[old_source] == 0:
                del self._window_counts[old_source]
            self._window_low -= _is_low_trust(old_trust)
        self._recent.append((source, trust))
        self._window_counts[source] += 1
        self._window_low += _is_low_trust(trust)
        self._counts[source] += 1
        self._total += 1

    def snapshot(self) -> dict[str, Any]:
        """Plain JSON state: window entries oldest first and all-time counts by source."""
        return {
            "v": SNAPSHOT_VERSION,
            "window": self.window,
            "recent": [[source, int(trust)] for source, trust in self._recent],
            "counts": [[source, n] for source, n in sorted(self._counts.items())],
        }

    def restore(self, snapshot: Mapping[str, Any]) -> None:
        """Replace state with ``snapshot``; keeps the newest ``self.window`` window entries.

        Raises ``EventError`` if the snapshot is malformed or inconsistent.
        """
        recent, counts = _read_snapshot(snapshot)
        fresh = Observer(self.window)
        fresh._counts.update(counts)
        fresh._total = sum(counts.values())
        for source, trust in recent[-self.window :]:
            fresh._recent.append((source, trust))
            fresh._window_counts[source] += 1
            fresh._window_low += _is_low_trust(trust)
        if any(n > fresh._counts[s] for s, n in fresh._window_counts.items()):
            raise EventError("observer snapshot: window holds more of a source than all-time")
        self.__dict__.update(fresh.__dict__)


def _read_snapshot(snapshot: Mapping[str, Any]) -> tuple[list[tuple[int, Trust]], dict[int, int]]:
    if snapshot.get("v") != SNAPSHOT_VERSION:
        raise EventError(f"observer snapshot version {snapshot.get('v')!r} is not 1")
    try:
        recent = [(check_source(s), _check_trust(t)) for s, t in snapshot["recent"]]
        counts = {check_source(s): n for s, n in snapshot["counts"]}
    except (KeyError, TypeError, ValueError) as exc:
        raise EventError(f"observer snapshot is malformed: {exc!r}") from None
    if any(isinstance(n, bool) or not isinstance(n, int) or n < 1 for n in counts.values()):
        raise EventError("observer snapshot: counts must be positive integers")
    return recent, counts
