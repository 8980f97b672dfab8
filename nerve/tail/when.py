"""Times as people write and read them: ``--since 10m`` / an ISO-8601 time / an HLC stamp /
everyday words (``yesterday``, ``this morning``, ``last 10 minutes``, ``since 9``) in, local
(or UTC) time out.

:func:`parse_period` reads a whole time phrase as a period ``[start, end]``;
:func:`find_period` finds one inside a question (``ask``). The words: ``now``; ``today``,
``yesterday``, ``this week`` / ``last week`` (weeks start on Monday); ``this morning``
(05:00-12:00), ``this afternoon`` (12:00-18:00), ``this evening`` / ``tonight``
(18:00-24:00), ``last night`` (yesterday 18:00 to today 05:00); ``last/past N
minutes|hours|days|weeks`` (``the last hour``, ``last few minutes`` = 5; ``last week`` alone
is the calendar week before this one, ``the last week`` seven days); ``N minutes ago``;
a time of day ``9``, ``9:30``, ``3pm``, ``15:00``, ``noon``, ``midnight`` (today; a time
still to come today is yesterday's); ``since T``, ``after T``, ``before T``, ``at T`` (a
point), ``between T and T`` / ``from T to T``.
"""

from __future__ import annotations

import functools
import re
import time as _time
from datetime import UTC, datetime, timedelta, tzinfo
from datetime import time as dtime
from typing import NamedTuple

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
        period = parse_period(raw, now_ns=now_ns, tz=tz)
        if period is None:
            raise UsageError(
                f"{text!r} is not a duration (10m, 2h, 3d), an ISO-8601 time "
                "(2024-05-01T14:00, with or without a zone), an HLC stamp or a time in words "
                "(yesterday, this morning, last 10 minutes, since 9)"
            )
        return Hlc(max(period.end_ns if end else period.start_ns, 0), LOGICAL_MAX if end else 0)
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


# -- time in words -----------------------------------------------------------------------------


class Period(NamedTuple):
    """``[start_ns, end_ns]`` (both included) and how to say it; a point has start == end."""

    start_ns: int
    end_ns: int
    label: str

    @property
    def point(self) -> bool:
        return self.start_ns == self.end_ns


_NUMBER_WORDS = {
    "a": 1, "an": 1, "one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6,
    "ten": 10, "fifteen": 15, "twenty": 20, "thirty": 30, "few": 5, "couple of": 2,
}  # fmt: skip
_UNITS = {
    "s": 1, "sec": 1, "secs": 1, "second": 1, "seconds": 1,
    "m": 60, "min": 60, "mins": 60, "minute": 60, "minutes": 60,
    "h": 3600, "hr": 3600, "hrs": 3600, "hour": 3600, "hours": 3600,
    "d": 86_400, "day": 86_400, "days": 86_400, "w": 604_800, "week": 604_800, "weeks": 604_800,
}  # fmt: skip
_COUNT = r"(\d+|a|an|one|two|three|four|five|six|ten|fifteen|twenty|thirty|few|couple of)"
_UNIT = r"(seconds?|secs?|minutes?|mins?|hours?|hrs?|days?|weeks?|[smhdw])"
_CLOCK = r"(noon|midnight|\d{1,2}(?::\d{2})?(?:\s*[ap]\.?m\.?)?)"
_NAMED = (
    r"(right now|now|currently|today|yesterday|this week|last week|this morning|"
    r"this afternoon|this evening|tonight|last night)"
)
_LAST = re.compile(rf"\b(?:last|past)\s+(?:{_COUNT}\s*)?{_UNIT}\b")
_LAST_WEEK = re.compile(r"(?<!the )(?<!in )\blast week\b")
_AGO_WORDS = re.compile(rf"\b{_COUNT}\s*{_UNIT}\s+ago\b")
_BETWEEN = re.compile(rf"\b(?:between|from)\s+{_CLOCK}\s+(?:and|to|until|till)\s+{_CLOCK}\b")
_SINCE = re.compile(rf"\b(since|after|before|until|at|around)\s+(?:{_NAMED}|{_CLOCK})(?![\w:/.-])")
_NAMED_RE = re.compile(rf"\b{_NAMED}\b")
_CLOCK_RE = re.compile(
    r"(?:(noon|midnight)|(\d{1,2})(?::(\d{2}))?\s*(?:([ap])\.?m\.?)?)", re.IGNORECASE
)
_DAY_NS = 86_400 * NS


def _unit_s(unit: str) -> int:
    return _UNITS[unit]


def _count(text: str | None) -> int:
    if text is None:
        return 1
    return int(text) if text.isdigit() else _NUMBER_WORDS[text]


def _local(now_ns: int, tz: tzinfo | None) -> datetime:
    moment = datetime.fromtimestamp(now_ns / NS, tz)
    return moment if tz is not None else moment.astimezone()


def _ns(moment: datetime) -> int:
    return (moment - _EPOCH) // timedelta(microseconds=1) * 1000


def _day_start(now_ns: int, tz: tzinfo | None, days_back: int = 0) -> datetime:
    today = _local(now_ns, tz).date() - timedelta(days=days_back)
    start = datetime.combine(today, dtime())
    return start.replace(tzinfo=tz) if tz is not None else start.astimezone()


def _clock(text: str, now_ns: int, tz: tzinfo | None) -> int | None:
    """A time of day as the most recent such moment (today, else yesterday), or None."""
    match = _CLOCK_RE.fullmatch(text.strip())
    if match is None:
        return None
    word, hour_s, minute_s, half = match.groups()
    hour = {"noon": 12, "midnight": 0}[word.lower()] if word else int(hour_s)
    minute = int(minute_s or 0)
    if half:
        hour = hour % 12 + (12 if half.lower() == "p" else 0)
    if hour > 23 or minute > 59:
        return None
    start = _day_start(now_ns, tz) + timedelta(hours=hour, minutes=minute)
    moment = _ns(start)
    return moment - _DAY_NS if moment > now_ns else moment


def _named(word: str, now_ns: int, tz: tzinfo | None) -> Period:
    day = _day_start(now_ns, tz)
    hours = {"this morning": (5, 12), "this afternoon": (12, 18), "this evening": (18, 24)}
    hours["tonight"] = hours["this evening"]
    if word in ("now", "right now", "currently"):
        return Period(now_ns, now_ns, "now")
    if word == "today":
        return Period(_ns(day), now_ns, "today")
    if word == "yesterday":
        return Period(_ns(day) - _DAY_NS, _ns(day) - 1, "yesterday")
    if word == "last night":
        return Period(_ns(day) - 6 * 3600 * NS, _ns(day) + 5 * 3600 * NS, "last night")
    if word in hours:
        first, last = hours[word]
        end = min(now_ns, _ns(day) + last * 3600 * NS - 1)
        return Period(_ns(day) + first * 3600 * NS, end, word)
    monday = _ns(day) - _local(now_ns, tz).weekday() * _DAY_NS
    if word == "this week":
        return Period(monday, now_ns, "this week")
    return Period(monday - 7 * _DAY_NS, monday - 1, "last week")


def _at(text: str, now_ns: int, tz: tzinfo | None) -> Period | None:
    if _NAMED_RE.fullmatch(text):
        return _named(text, now_ns, tz)
    moment = _clock(text, now_ns, tz)
    return None if moment is None else Period(moment, moment, text)


def _bounded(how: str, target: Period, now_ns: int) -> Period:
    label = f"{how} {target.label}"
    if how in ("since", "after"):
        return Period(target.start_ns, now_ns, label)
    if how in ("before", "until"):
        return Period(0, target.start_ns, label)
    return target if how == "at" or not target.point else Period(*target[:2], label)


def find_period(text: str, *, now_ns: int | None = None, tz: tzinfo | None = None) -> Period | None:
    """The first time phrase in ``text`` (a question) as a period, or None (see the module)."""
    now_ns = _time.time_ns() if now_ns is None else now_ns
    found = _find(" ".join(text.lower().split()), now_ns, tz)
    return None if found is None else found[0]


def _find(low: str, now_ns: int, tz: tzinfo | None) -> tuple[Period, re.Match[str]] | None:
    if match := _BETWEEN.search(low):
        first, second = _clock(match[1], now_ns, tz), _clock(match[2], now_ns, tz)
        if first is not None and second is not None:
            second += _DAY_NS if second < first else 0
            label = f"between {match[1]} and {match[2]}"
            return Period(first, min(second, now_ns), label), match
    if match := _LAST_WEEK.search(low):  # the calendar week; "the last week" is 7 days
        return _named("last week", now_ns, tz), match
    if match := _LAST.search(low):
        seconds = _count(match[1]) * _unit_s(match[2])
        span = f"{match[1] + ' ' if match[1] else ''}{match[2]}"
        return Period(now_ns - seconds * NS, now_ns, f"the last {span}"), match
    if match := _AGO_WORDS.search(low):
        moment = now_ns - _count(match[1]) * _unit_s(match[2]) * NS
        return Period(moment, moment, match[0]), match
    if match := _SINCE.search(low):
        target = _at(match[2] or match[3], now_ns, tz)
        if target is not None:
            return _bounded(match[1], target, now_ns), match
    if match := _NAMED_RE.search(low):
        return _named(match[1], now_ns, tz), match
    return None


def parse_period(
    text: str, *, now_ns: int | None = None, tz: tzinfo | None = None
) -> Period | None:
    """A whole time phrase (``yesterday``, ``since 9``, ``last 10 minutes``) or None."""
    now_ns = _time.time_ns() if now_ns is None else now_ns
    low = re.sub(r"^(?:(?:in|during|over|for)\s+)?(?:the\s+)?", "", " ".join(text.lower().split()))
    if (moment := _clock(low, now_ns, tz)) is not None:
        return Period(moment, moment, low)
    if match := re.fullmatch(rf"{_COUNT}\s*{_UNIT}", low):
        seconds = _count(match[1]) * _unit_s(match[2])
        return Period(now_ns - seconds * NS, now_ns, f"the last {low}")
    found = _find(low, now_ns, tz)
    if found is None or found[1].span() != (0, len(low)):
        return None  # "yesterday-ish" is no time: only a whole phrase is
    return found[0]
