"""Hybrid logical clock (Kulkarni et al., 2014).

A stamp is ``(physical_ns, logical)``. ``physical_ns`` follows the wall clock but never goes
backwards; ``logical`` orders events that share a physical value. Stamps compare as tuples.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Mapping
from typing import NamedTuple

from nerve.errors import ClockError

LOGICAL_MAX = 2**32 - 1
PHYSICAL_MAX = 2**63 - 1
DEFAULT_MAX_OFFSET_NS = 500_000_000
SKEW_ENV = "NERVE_CLOCK_SKEW_MS"


class Hlc(NamedTuple):
    """One stamp; tuples order stamps exactly as the log does."""

    physical_ns: int
    logical: int

    def __str__(self) -> str:
        return f"{self.physical_ns}.{self.logical}"

    @classmethod
    def parse(cls, text: str) -> Hlc:
        """Read ``PHYSICAL.LOGICAL`` or ``PHYSICAL`` (logical 0)."""
        head, _, tail = text.strip().partition(".")
        try:
            return check_stamp(cls(int(head), int(tail or 0)))
        except ValueError:
            raise ClockError(
                f"not an HLC stamp: {text!r} (expected PHYSICAL_NS[.LOGICAL])"
            ) from None


HLC_ZERO = Hlc(0, 0)


def bound(physical_ns: int, logical: int = 0) -> Hlc:
    """A time bound as a stamp in the log's range: before 1970 is the first stamp, past
    ``PHYSICAL_MAX`` (year 2262) the last one, so a far bound selects all or nothing."""
    if physical_ns > PHYSICAL_MAX:
        return Hlc(PHYSICAL_MAX, LOGICAL_MAX)
    return Hlc(max(physical_ns, 0), min(max(logical, 0), LOGICAL_MAX))


def check_stamp(stamp: Hlc) -> Hlc:
    """Return ``stamp`` if both parts are in range, else raise ``ClockError``."""
    if not 0 <= stamp.physical_ns <= PHYSICAL_MAX:
        raise ClockError(f"physical_ns {stamp.physical_ns} is outside 0..2^63-1")
    if not 0 <= stamp.logical <= LOGICAL_MAX:
        raise ClockError(f"logical {stamp.logical} is outside 0..2^32-1")
    return stamp


def wall_clock(environ: Mapping[str, str] = os.environ) -> Callable[[], int]:
    """A clock's default physical source: ``time.time_ns``, moved by ``NERVE_CLOCK_SKEW_MS``
    milliseconds when ``environ`` sets it (how a test runs one daemon with a wall clock ahead
    of or behind the others'; nothing else reads it)."""
    text = environ.get(SKEW_ENV, "").strip()
    if not text:
        return time.time_ns
    try:
        skew_ns = int(text) * 1_000_000
    except ValueError:
        raise ClockError(f"{SKEW_ENV}={text!r} is not a whole number of milliseconds") from None
    return lambda: time.time_ns() + skew_ns


class HybridClock:
    """Issues strictly increasing stamps; the physical source is injectable for tests (by
    default the wall clock, see :func:`wall_clock`)."""

    def __init__(
        self,
        physical: Callable[[], int] | None = None,
        *,
        max_offset_ns: int = DEFAULT_MAX_OFFSET_NS,
        last: Hlc = HLC_ZERO,
    ) -> None:
        self._physical = physical or wall_clock()
        self.max_offset_ns = max_offset_ns
        self._last = last

    @property
    def last(self) -> Hlc:
        return self._last

    def seed(self, stored_max: Hlc) -> None:
        """Make every later stamp strictly exceed ``stored_max`` (called when a log opens)."""
        self._last = max(self._last, stored_max)

    def now(self) -> Hlc:
        """The local/send rule: a stamp strictly after every stamp issued or seen."""
        return self.reserve(1)

    def reserve(self, count: int) -> Hlc:
        """Reserve ``count`` consecutive stamps and return the first.

        The stamps are ``(p, c), (p, c+1), …``. If the logical counter would overflow, the
        physical part is advanced by one nanosecond instead, which keeps the order total.
        """
        if count < 1:
            raise ValueError("count must be at least 1")
        pt = self._physical()
        last_p, last_c = self._last
        if pt > last_p:
            first = Hlc(pt, 0)
        elif last_c + count <= LOGICAL_MAX:
            first = Hlc(last_p, last_c + 1)
        else:
            first = Hlc(last_p + 1, 0)
        if first.logical + count - 1 > LOGICAL_MAX:
            raise ClockError(f"cannot reserve {count} stamps in one physical tick")
        self._last = Hlc(first.physical_ns, first.logical + count - 1)
        return first

    def receive(self, remote: Hlc) -> Hlc:
        """The receive rule: merge a remote stamp, refusing one too far in the future."""
        check_stamp(remote)
        pt = self._physical()
        ahead = remote.physical_ns - pt
        if ahead > self.max_offset_ns:
            raise ClockError(
                f"remote stamp {remote} is {ahead / 1e6:.1f} ms ahead of this clock "
                f"(max offset {self.max_offset_ns / 1e6:.1f} ms)",
                hint="check the remote host's clock, or raise max_offset",
            )
        last_p, last_c = self._last
        p = max(last_p, remote.physical_ns, pt)
        if p == last_p == remote.physical_ns:
            c = max(last_c, remote.logical) + 1
        elif p == last_p:
            c = last_c + 1
        elif p == remote.physical_ns:
            c = remote.logical + 1
        else:
            c = 0
        if c > LOGICAL_MAX:
            p, c = p + 1, 0
        self._last = Hlc(p, c)
        return self._last
