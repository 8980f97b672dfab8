"""When ticks fall: cron times in a time zone, a sense's stable jitter, ticks in a gap.

All times are wall-clock nanoseconds since the epoch; the scheduler turns them into its
monotonic clock. Cron expressions are read by ``cronsim``, which follows cron's rules across
daylight-saving changes (a time skipped in spring runs once at the next valid minute, a time
repeated in autumn runs once, ``*/30``-style minutes run through both hours).
"""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime, tzinfo
from functools import lru_cache

import blake3

NS = 1_000_000_000


@lru_cache(maxsize=64)
def zone(name: str | None) -> tzinfo:
    """The named IANA zone; None means the machine's local zone."""
    if name is None:
        local = datetime.now().astimezone().tzinfo
        assert local is not None
        return local
    from zoneinfo import ZoneInfo

    return ZoneInfo(name)


def cron_times(expr: str, tz: str | None, after_wall_ns: int) -> Iterator[int]:
    """The wall times (ns) ``expr`` fires at, strictly after ``after_wall_ns``, in order."""
    from cronsim import CronSim

    start = datetime.fromtimestamp(after_wall_ns // NS, UTC).astimezone(zone(tz))
    for when in CronSim(expr, start):
        at = int(when.timestamp()) * NS
        if at > after_wall_ns:
            yield at


def next_cron(expr: str, tz: str | None, after_wall_ns: int) -> int:
    return next(cron_times(expr, tz, after_wall_ns))


def count_cron(expr: str, tz: str | None, since_ns: int, until_ns: int, cap: int) -> int:
    """How many times ``expr`` fires in ``(since_ns, until_ns]``, counting at most ``cap``."""
    count = 0
    for at in cron_times(expr, tz, since_ns):
        if at > until_ns or count >= cap:
            break
        count += 1
    return count


def stable_fraction(sense: str) -> float:
    """A number in [0, 1) fixed by the sense's name: the same on every start and machine."""
    digest = blake3.blake3(b"nerve.jitter\0" + sense.encode()).digest()[:8]
    return int.from_bytes(digest, "big") / 2**64


def jitter_ns(sense: str, jitter_ms: int) -> int:
    """How far this sense's ticks are shifted: a stable share of ``jitter_ms``."""
    return int(stable_fraction(sense) * jitter_ms * 1_000_000)
