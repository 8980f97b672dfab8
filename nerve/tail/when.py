"""Times as people write and read them: ``--since 10m`` / an ISO-8601 time / an HLC stamp in,
local (or UTC) time out."""

from __future__ import annotations

import functools
import re
import time as _time
from datetime import UTC, datetime, timedelta, tzinfo
from datetime import time as dtime

from nerve.clock import LOGICAL_MAX, PHYSICAL_MAX, Hlc, bound
from nerve.errors import NerveError, UsageError

_AGO = re.compile(r"(\d+(?:\.\d+)?)\s*(s|m|h|d|w)")
_UNIT_S = {"s": 1, "m": 60, "h": 3600, "d": 86_400, "w": 604_800}
_STAMP = re.compile(r"\d+\.\d+|\d{16,}")  # as `tail --hlc` prints it; or bare nanoseconds
_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
NS = 1_000_000_000


def parse_instant(
    text: str, *, now_ns: int | None = None, tz: tzinfo | None = None, end: bool = False
) -> Hlc:
    """A stamp for ``10m`` / ``2h`` / ``3d`` ago, an ISO-8601 time (naive = local time, or
    ``tz``; a bare time of day is today) or an HLC stamp. ``end`` stamps a time at the last
    logical value of its nanosecond, so an end bound includes everything stamped then.

    Junk is a :class:`UsageError` naming the value.
    """
    raw = text.strip()
    now_ns = _time.time_ns() if now_ns is None else now_ns
    ago = _AGO.fullmatch(raw)
    if ago:
        ns = now_ns - int(float(ago.group(1)) * _UNIT_S[ago.group(2)] * NS)
        return bound(ns, LOGICAL_MAX if end else 0)
    if _STAMP.fullmatch(raw):
        try:
            head, _, tail = raw.partition(".")
            return bound(int(head), int(tail or 0)) if int(head) > PHYSICAL_MAX else Hlc.parse(raw)
        except NerveError:
            pass
    moment = _datetime(raw, tz, now_ns)
    if moment is None:
        raise UsageError(
            f"{text!r} is not a duration (10m, 2h, 3d), an ISO-8601 time "
            "(2024-05-01T14:00, with or without a zone) or an HLC stamp"
        )
    ns = (moment - _EPOCH) // timedelta(microseconds=1) * 1000
    return bound(ns, LOGICAL_MAX if end else 0)


def _datetime(raw: str, tz: tzinfo | None, now_ns: int) -> datetime | None:
    try:
        moment = datetime.fromisoformat(raw)
    except ValueError:
        try:
            clock = dtime.fromisoformat(raw)
        except ValueError:
            return None
        today = datetime.fromtimestamp(now_ns / NS, tz).date()
        moment = datetime.combine(today, clock)
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=tz) if tz is not None else moment.astimezone()
    return moment


@functools.lru_cache(maxsize=4096)
def _second(seconds: int, utc: bool, short: bool) -> tuple[str, str]:
    """Text before and after the fraction for one second (DST shifts with the second)."""
    moment = datetime.fromtimestamp(seconds, UTC if utc else None)
    if not utc:
        moment = moment.astimezone()
    if short:
        return moment.strftime("%b %d %H:%M:%S"), "Z" if utc else ""
    zone = "Z" if utc else moment.strftime("%z")
    if zone != "Z":
        zone = f"{zone[:3]}:{zone[3:]}"
    return moment.strftime("%Y-%m-%dT%H:%M:%S"), zone


def format_times(physical_ns: list[int], *, utc: bool = False, short: bool = False) -> list[str]:
    """Each stamp's time: ISO 8601 with the zone offset and microseconds, or with ``short``
    ``May 01 14:03:22.123`` for a terminal. Local time unless ``utc``."""
    out = []
    for ns in physical_ns:
        seconds, frac = divmod(ns, NS)
        head, zone = _second(seconds, utc, short)
        part = f"{frac // 1_000_000:03d}" if short else f"{frac // 1000:06d}"
        out.append(f"{head}.{part}{zone}")
    return out
