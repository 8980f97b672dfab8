"""The time a question asks about, as a :class:`Window`: ``[start_ns, end_ns)`` with the words
that say it.

What is read (lower case, anywhere in the question; the first match of each kind wins):

- a day: ``today``, ``yesterday``, ``on monday`` … ``sunday`` (the most recent such day
  before today), ``this morning`` (05–12), ``this afternoon`` (12–18), ``this evening`` /
  ``tonight`` (18–24), ``last night``, ``this week``;
- a time of day: ``7:42``, ``07:42:10``, ``7pm``, ``7:42 pm``, ``noon``, ``midnight``,
  ``half past seven`` (7:30), ``quarter to 8`` (7:45); a time without am/pm and without a
  leading zero that could be either half of the day is the most recent of the two; with a
  leading zero or over 12 it is 24-hour;
- ``at T`` (the whole minute, or the whole second when T has seconds), ``around T`` (five
  minutes either side), ``between T and T`` / ``from T to T`` (up to the second T: "and
  19:31" ends at 19:31:00), ``since T``, ``after T``, ``before T``, ``until T`` (T a time
  of day, on the day named or the most recent);
- ``the last N minutes|hours|days`` (``the last hour``, ``the last few minutes`` = 5),
  ``N minutes ago`` (the whole minute, second, hour it names: a moment, ``point_ns``),
  ``now`` / ``right now`` / ``currently`` / ``lately`` (a moment);
- ``T - T`` / ``T to T`` (clock times with a colon or am/pm: the span between them);
- ``at the start`` / ``at the beginning`` / ``when I began`` / ``when nerve started`` and
  ``at the end`` / ``by the end``: the first or last half minute the log recorded, a
  moment (``edge`` "start" or "end"; :func:`at_edge` places it on the log, and a reading
  then is the first or the last one).

Everything is a function of the question, ``now_ns`` and ``tz`` (None: the machine's zone).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import datetime, tzinfo
from datetime import time as dtime

__all__ = [
    "NS", "TIME_WORDS", "Window", "at_edge", "edge_window", "find_window", "local", "stamp",
]  # fmt: skip

NS = 1_000_000_000
_MIN = 60 * NS
_DAY = 86_400 * NS
_AROUND = 5 * _MIN
_SLACK = 2 * NS
_FEW = {"a": 1, "an": 1, "one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6,
        "seven": 7, "eight": 8, "nine": 9, "eleven": 11, "twelve": 12,
        "ten": 10, "fifteen": 15, "twenty": 20, "thirty": 30, "few": 5, "couple of": 2}  # fmt: skip
_UNIT = {"s": 1, "sec": 1, "secs": 1, "second": 1, "seconds": 1, "m": 60, "min": 60,
         "mins": 60, "minute": 60, "minutes": 60, "h": 3600, "hr": 3600, "hrs": 3600,
         "hour": 3600, "hours": 3600, "d": 86_400, "day": 86_400, "days": 86_400,
         "week": 604_800, "weeks": 604_800}  # fmt: skip
_WEEKDAYS = ("monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday")
_PARTS = {"this morning": (5, 12), "this afternoon": (12, 18), "this evening": (18, 24),
          "tonight": (18, 24), "last night": (-6, 5)}  # fmt: skip

_COUNT = (r"(\d+|an?|one|two|three|four|five|six|seven|eight|nine|ten|eleven|twelve|fifteen|"
          r"twenty|thirty|few|couple of)")  # fmt: skip
_UNITS = r"(seconds?|secs?|minutes?|mins?|hours?|hrs?|days?|weeks?|[smhd])"
_T = r"(noon|midnight|\d{1,2}:\d{2}(?::\d{2})?(?:\s*[ap]\.?m\.?)?|\d{1,2}\s*[ap]\.?m\.?|\d{1,2})"
_CLOCK = re.compile(r"(?:(noon|midnight)|(\d{1,2})(?::(\d{2}))?(?::(\d{2}))?\s*(?:([ap])\.?m\.?)?)")
_T_SAID = r"(\d{1,2}:\d{2}(?::\d{2})?(?:\s*[ap]\.?m\.?)?|\d{1,2}\s*[ap]\.?m\.?)"
"""A time of day said as one (a colon or am/pm): "7" alone may be a count."""
_BETWEEN = re.compile(
    rf"\b(?:between|from)\s+{_T}\s+(?:and|to|until|till|-)\s+{_T}(?![\w:])|"
    rf"(?<![\w:]){_T_SAID}\s*(?:-|–|to|until|till)\s*{_T_SAID}(?![\w:])"
)
_REL = re.compile(
    rf"\b(at|around|about|since|after|before|until|till|by)\s+{_T}(?![\w:/.-])"
    r"(?!\s*(?:seconds?|secs?|minutes?|mins?|hours?|hrs?|days?|[smh])\b)"
)  # "about 9 minutes ago" is no clock time
_BARE = re.compile(
    r"(?<![\w:.])(\d{1,2}:\d{2}(?::\d{2})?(?:\s*[ap]\.?m\.?)?|\d{1,2}\s*[ap]\.?m\.?)"
)
_LAST = re.compile(
    rf"\b(?:in |over |during |for )?(?:the )?(?:last|past)\s+(?:{_COUNT}\s*)?{_UNITS}\b"
)
_AGO = re.compile(rf"\b{_COUNT}\s*{_UNITS}\s+ago\b")
_NOW = re.compile(r"\b(right now|now|currently|at the moment|lately|these days)\b")
_EDGE = re.compile(
    r"\b(?:(?:at|by|near|towards?) the (?:very )?(start|beginning|end|finish)(?: of (?:it|the "
    r"(?:day|log|recording|session)))?|at (first)|when (?:i|you|nerve|the daemon|recording|the "
    r"recording) (?:first )?(began|begun|started)(?: (?:working|watching|recording|up))?(?=\s*$|,))"
)
_EDGE_SAID = {"start": "at the start", "end": "at the end"}
_MONTHS = ("january", "february", "march", "april", "may", "june", "july", "august",
           "september", "october", "november", "december")  # fmt: skip
_MONTH = r"(jan|feb|mar|apr|may|jun|jul|aug|sep|oct|nov|dec)[a-z]*\.?"
_DATE = re.compile(
    rf"\b(?:on )?(?:(\d{{4}})-(\d{{2}})-(\d{{2}})|{_MONTH}\s+(\d{{1,2}})(?:st|nd|rd|th)?"
    rf"|(\d{{1,2}})(?:st|nd|rd|th)?\s+(?:of\s+)?{_MONTH})(?:,?\s+(\d{{4}}))?\b"
)
_DAY_WORDS = re.compile(
    r"\b(today|yesterday|this morning|this afternoon|this evening|tonight|last night|"
    r"this week|(?:on |last )?(?:monday|tuesday|wednesday|thursday|friday|saturday|sunday))\b"
)
_SINCE_DAY = re.compile(r"\bsince (yesterday|this morning|this afternoon|this evening)\b")
_UNIT_WORDS = re.compile(rf"{_UNITS}|{_COUNT}|{'|'.join(_WEEKDAYS)}|{'|'.join(_MONTHS)}")
TIME_WORDS = (_REL, _LAST, _AGO, _NOW, _EDGE, _DAY_WORDS, _UNIT_WORDS)
"""The patterns that read a time, for telling a word this module reads from a mistyped one."""


@dataclass(frozen=True)
class Window:
    """``[start_ns, end_ns)`` and how to say it; ``point_ns`` is the moment a question named
    ("2 minutes ago", "now"), when it named one."""

    start_ns: int
    end_ns: int
    label: str
    point_ns: int | None = None
    clock: bool = False  # named by a time of day or "N ago": at, around, between, before …
    edge: str | None = None  # "start" / "end" of the log (:func:`at_edge` places it)

    def contains(self, t: int) -> bool:
        return self.start_ns <= t < self.end_ns

    def to_json(self) -> dict[str, object]:
        return {
            "start_ns": self.start_ns,
            "end_ns": self.end_ns,
            "label": self.label,
            "point_ns": self.point_ns,
            "clock": self.clock,
        }


def local(ns: int, tz: tzinfo | None) -> datetime:
    """``ns`` as a local time (``tz``, else the machine's zone)."""
    moment = datetime.fromtimestamp(ns // NS, tz)
    return moment if tz is not None else moment.astimezone()


def _ns(moment: datetime) -> int:
    return round(moment.timestamp()) * NS  # whole seconds: midnights


def stamp(ns: int, tz: tzinfo | None, now_ns: int) -> str:
    """``07:42:10`` today, ``Mon 07:42`` this week, else ``2026-05-06 07:42``."""
    moment, today = local(ns, tz), local(now_ns, tz).date()
    if moment.date() == today:
        return moment.strftime("%H:%M:%S")
    if (today - moment.date()).days < 7:
        return moment.strftime("%a %H:%M:%S")
    return moment.strftime("%Y-%m-%d %H:%M")


def _midnight(day: datetime) -> datetime:
    start = datetime.combine(day.date(), dtime())
    return start.replace(tzinfo=day.tzinfo)


def _date(text: str, now_ns: int, tz: tzinfo | None) -> tuple[Window, str] | None:
    """A calendar date ("2026-12-05", "December 5th", "5 Dec"), in the year named or the
    most recent such day, and the words that named it."""
    match = _DATE.search(text)
    if match is None:
        return None
    iso_y, iso_m, iso_d, month_a, day_a, day_b, month_b, year = match.groups()
    now = local(now_ns, tz)
    if iso_y:
        y, m, d = int(iso_y), int(iso_m), int(iso_d)
    else:
        name = (month_a or month_b or "")[:3]
        m = next(i for i, full in enumerate(_MONTHS, 1) if full.startswith(name))
        d, y = int(day_a or day_b), int(year) if year else now.year
    try:
        day = now.replace(year=y, month=m, day=d, hour=0, minute=0, second=0, microsecond=0)
    except ValueError:
        return None
    if not year and not iso_y and day > now:
        day = day.replace(year=y - 1)
    start = _ns(day)
    return Window(start, start + _DAY, f"on {day.strftime('%Y-%m-%d')}"), match[0]


def _day(text: str, now_ns: int, tz: tzinfo | None) -> tuple[Window, str] | None:
    """The day (or part of one) the question names, and the words that named it."""
    match = _DAY_WORDS.search(text)
    if match is None:
        return _date(text, now_ns, tz)
    word, today = match[1], _midnight(local(now_ns, tz))
    start = _ns(today)
    if word == "yesterday":
        return Window(start - _DAY, start, "yesterday"), match[0]
    if word == "this week":
        monday = start - local(now_ns, tz).weekday() * _DAY
        return Window(monday, now_ns + 1, "this week"), match[0]
    if word in _PARTS:
        first, last = _PARTS[word]
        if word == "this morning" and now_ns < start + first * 3600 * NS:
            first = 0  # up before five, "this morning" is since midnight
        return Window(start + first * 3600 * NS, start + last * 3600 * NS, word), match[0]
    name = word.split()[-1]
    if name in _WEEKDAYS:
        back = (today.weekday() - _WEEKDAYS.index(name)) % 7  # "on Saturday": today, if it is
        back = back or (7 if word.startswith("last") else 0)
        day = start - back * _DAY
        return Window(day, day + _DAY, f"on {name.capitalize()}"), match[0]
    return Window(start, now_ns + 1, "today"), match[0]


def _clock(raw: str, day_ns: int | None, now_ns: int, tz: tzinfo | None) -> tuple[int, int] | None:
    """A time of day as ``(ns, precision_ns)``: on ``day_ns``'s day when given, else the most
    recent such moment (see the module for which half of the day)."""
    match = _CLOCK.fullmatch(raw.strip())
    if match is None:
        return None
    word, hour_s, minute_s, second_s, half = match.groups()
    hour = {"noon": 12, "midnight": 0}[word] if word else int(hour_s)
    minute, second = int(minute_s or 0), int(second_s or 0)
    if half:
        if not 1 <= hour <= 12:
            return None
        hour = hour % 12 + (12 if half == "p" else 0)
    if hour > 23 or minute > 59 or second > 59:
        return None
    precision = NS if second_s else (_MIN if minute_s or half or word else 3600 * NS)
    offset = (hour * 3600 + minute * 60 + second) * NS
    either = not half and not word and hour_s is not None and 1 <= hour <= 11
    either = either and not hour_s.startswith("0")
    return _resolve(offset, either, day_ns, now_ns, tz), precision


def _resolve(offset: int, either: bool, day_ns: int | None, now_ns: int, tz: tzinfo | None) -> int:
    """The moment ``offset`` into a day: ``day_ns``'s, else the latest not after now."""
    today = _ns(_midnight(local(now_ns, tz)))
    days = [day_ns] if day_ns is not None else [today, today - _DAY]
    halves = [offset, offset + 12 * 3600 * NS] if either else [offset]
    found = [d + h for d in days for h in halves]
    past = [t for t in found if t <= now_ns]
    if day_ns is not None:
        return min(found)  # "yesterday at 9": the morning
    return max(past) if past else min(found)


def _say(ns: int, precision: int, tz: tzinfo | None) -> str:
    moment = local(ns, tz)
    return moment.strftime("%H:%M:%S" if precision == NS else "%H:%M")


def _count(raw: str | None) -> int:
    if raw is None:
        return 1
    return int(raw) if raw.isdigit() else _FEW[raw]


def _relative(text: str, now_ns: int) -> tuple[Window, str] | None:
    """``the last N units`` or ``N units ago``."""
    if match := _LAST.search(text):
        seconds = _count(match[1]) * _UNIT[match[2]]
        said = f"{match[1] + ' ' if match[1] else ''}{match[2]}"
        return Window(now_ns - seconds * NS, now_ns + 1, f"the last {said}"), match[0]
    if match := _AGO.search(text):
        unit = _UNIT[match[2]] * NS
        point = now_ns - _count(match[1]) * unit
        return Window(point - unit // 2, point + unit // 2, match[0], point, True), match[0]
    return None


def _timed(
    text: str, day: Window | None, now_ns: int, tz: tzinfo | None
) -> tuple[Window, str] | None:
    """A window built on a time of day: between, at, around, since, after, before, until."""
    day_ns = None  # the midnight of the day named ("at 9 this morning": 09:00, not 05:00 + 9 h)
    if day is not None and day.label != "today":
        day_ns = _ns(_midnight(local(day.start_ns, tz)))
    if match := _BETWEEN.search(text):
        said = (match[1], match[2]) if match[1] else (match[3], match[4])
        first, second = (_clock(m, day_ns, now_ns, tz) for m in said)
        if first is not None and second is not None:
            end = second[0] + (second[1] if second[1] < _MIN else 0)  # its last second, if said
            end += _DAY if end <= first[0] else 0  # "between 19:29 and 19:31" ends at 19:31:00
            label = f"between {_say(first[0], first[1], tz)} and {_say(*second, tz)}"
            return Window(first[0], end, label, clock=True), match[0]
    match = _REL.search(text)
    how, raw = (match[1], match[2]) if match else ("at", None)
    if match is None and (bare := _BARE.search(text)):
        match, raw = bare, bare[1]
    if match is None or raw is None:
        return None
    found = _clock(raw, day_ns, now_ns, tz)
    if found is None:
        return None
    return _around(how, found, day, now_ns, tz), match[0]


def _around(
    how: str, found: tuple[int, int], day: Window | None, now_ns: int, tz: tzinfo | None
) -> Window:
    t, precision = found
    said = _say(t, precision, tz)
    if how in ("around", "about"):
        return Window(t - _AROUND, t + _AROUND, f"around {said} (±5 min)", t, clock=True)
    if how in ("since", "after"):
        return Window(t, now_ns + 1, f"{how} {said}", clock=True)
    if how in ("before", "until", "till", "by"):
        start = day.start_ns if day is not None else _ns(_midnight(local(t, tz)))
        return Window(start, t, f"{how} {said}", clock=True)
    if precision == NS:  # a second: the senses see a change a moment after it, and a person
        return Window(t - _SLACK, t + 2 * _SLACK, f"at {said}", t, clock=True)  # is a second out
    return Window(t, t + precision, f"at {said}", t, clock=True)


_SPOKEN = re.compile(
    r"\b(half|quarter) (past|to) (\d{1,2}|one|two|three|four|five|six|seven|eight|nine|ten|"
    r"eleven|twelve)\b"
)
_HOURS = {w: n for n, w in enumerate(["zero", "one", "two", "three", "four", "five", "six",
          "seven", "eight", "nine", "ten", "eleven", "twelve"])}  # fmt: skip


def _spoken(match: re.Match[str]) -> str:
    """A time said in words as a clock time: "half past seven" is "7:30"."""
    hour = int(match[3]) if match[3].isdigit() else _HOURS[match[3]]
    minutes = 30 if match[1] == "half" else 15
    if match[2] == "to":
        hour, minutes = (hour - 1) % 12 or 12, 60 - minutes
    return f"{hour}:{minutes:02d}"


def find_window(text: str, now_ns: int, tz: tzinfo | None) -> tuple[Window | None, str]:
    """The window ``text`` (lower case) names, and the text without the words that named it."""
    text = _SPOKEN.sub(_spoken, text)
    text = re.sub(r"\b(?:roughly|approximately|approx|circa|nearly|near)\b(?= (?:at )?\d)",
                  "around", text)  # fmt: skip
    if match := _SINCE_DAY.search(text):
        day = _day(match[1], now_ns, tz)
        if day is not None:
            start = day[0].start_ns
            return Window(start, now_ns + 1, f"since {match[1]}"), text.replace(match[0], " ")
    day = _day(text, now_ns, tz)
    rest = text.replace(day[1], " ") if day else text
    timed = _timed(rest, day[0] if day else None, now_ns, tz)
    if timed is not None:
        window, words = timed
        if day is not None and day[0].label != "today":
            label = f"{day[0].label} {window.label}"
            window = Window(window.start_ns, window.end_ns, label, window.point_ns, True)
        return window, rest.replace(words, " ")
    if day is not None:
        return day[0], rest
    if (found := _relative(text, now_ns)) is not None:
        return found[0], text.replace(found[1], " ")
    if match := _EDGE.search(text):
        edge = "end" if match[1] in ("end", "finish") else "start"
        return edge_window(edge, now_ns), text.replace(match[0], " ", 1)
    if match := _NOW.search(text):
        return Window(now_ns, now_ns + 1, "now", now_ns), text.replace(match[0], " ", 1)
    return None, text


_EDGE_NS = 30 * NS


def edge_window(edge: str, now_ns: int) -> Window:
    """The log's start or end (``edge``), a moment :func:`at_edge` places on the log."""
    return Window(now_ns, now_ns + 1, _EDGE_SAID[edge], now_ns, True, edge)


def at_edge(window: Window, first_ns: int, last_ns: int) -> Window:
    """An ``edge`` window placed on the log's span: its first or last half minute, a moment."""
    if window.edge == "start":
        return Window(first_ns, first_ns + _EDGE_NS, window.label, first_ns, True, "start")
    return Window(last_ns - _EDGE_NS, last_ns + 1, window.label, last_ns, True, "end")
