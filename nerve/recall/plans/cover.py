"""What a plan cannot answer, said as final (:attr:`Found.final`): a window wholly outside the
span the log recorded, or one reaching back to a day before the log began (saying "no
commands then" would be a confident answer from nothing), and words of the question that
name nothing the log holds ("what http *status* did curl get?": answering with curl's run
would answer another question). Each says what was understood and what is missing.
"""

from __future__ import annotations

from nerve.recall.plans.log import Found, Reader
from nerve.recall.plans.parse import Plan
from nerve.recall.plans.window import NS, Window, local

__all__ = ["beyond", "uncovered", "unknown_words"]

_SUBJECTS = {
    "anything": "anything recorded", "activity": "what you were doing", "command": "commands",
    "process": "processes", "window": "windows in focus", "away": "time away",
    "folder": "folders", "reading": "readings", "attention": "nerve's attention decisions",
    "file": "file changes", "running": "what was running", "daemon": "nerve's daemon",
    "port": "listening ports",
}  # fmt: skip
"""Each subject kind in plain words, for saying what a question was read as."""

_DAY = 86_400 * NS


def _day_of(reader: Reader, ns: int) -> str:
    """The local day of ``ns`` in plain words: "Sat 5 Dec"."""
    moment = local(ns, reader.tz)
    return f"{moment.strftime('%a')} {moment.day} {moment.strftime('%b')}"


def _covers(reader: Reader, first: int, last: int) -> str:
    """The span the log covers in words: "19:22:53 to 19:33:11 on Sat 5 Dec"."""
    start, end = local(first, reader.tz), local(last, reader.tz)
    clock = f"{start.strftime('%H:%M:%S')} to {end.strftime('%H:%M:%S')}"
    if start.date() == end.date():
        return f"{clock} on {_day_of(reader, first)}"
    return (f"{_day_of(reader, first)} {start.strftime('%H:%M:%S')} to "
            f"{_day_of(reader, last)} {end.strftime('%H:%M:%S')}")  # fmt: skip


def _day_start(reader: Reader, ns: int) -> int:
    moment = local(ns, reader.tz)
    midnight = moment.replace(hour=0, minute=0, second=0, microsecond=0)
    return round(midnight.timestamp()) * NS


def uncovered(reader: Reader, plan: Plan) -> Found | None:
    """A final, unanswered :class:`Found` when the plan's window lies outside what the log
    recorded (or reaches back to a day before the log began); None when the log covers it."""
    window = plan.window
    if window is None or window.point_ns == reader.now_ns:
        return None  # "now": the newest readings and the window in focus still stand
    if window.start_ns > reader.now_ns:  # "this afternoon" asked at 10:00
        starts = reader.when(window.start_ns)
        text = f"{window.label.capitalize()} has not begun yet: it starts at {starts}."
        return Found(text + _understood(plan), (), False, 0, True)
    span = reader.span()
    if span is None:
        text = "Nothing is recorded in this log yet, so I cannot answer."
        return Found(text + _understood(plan), (), False, 0, True)
    first, last = span
    covers = _covers(reader, first, last)
    if beyond(window, span):
        text = f"Nothing was recorded {reader.scope(window)}: the log covers {covers}."
        return Found(text + _understood(plan), (), False, 0, True)
    if window.start_ns < _day_start(reader, first) and window.end_ns - window.start_ns >= _DAY:
        begins = f"{local(first, reader.tz).strftime('%H:%M:%S')} on {_day_of(reader, first)}"
        text = (f"The log begins at {begins}, so it cannot tell {window.label}, which reaches "
                f"back before it (the log covers {covers}).")  # fmt: skip
        return Found(text + _understood(plan), (), False, 0, True)
    return None


def beyond(window: Window | None, span: tuple[int, int] | None) -> bool:
    """Whether ``window`` lies wholly outside the log's ``span`` (first, last): nothing at all
    can be said of it, whatever the question asks."""
    if window is None or span is None:
        return False
    return window.end_ns <= span[0] or window.start_ns > span[1]


def _understood(plan: Plan) -> str:
    """What the question was read as, for a person to check: " I understood: commands, …"."""
    return f" I understood: {_what(plan)}, {plan.window.label if plan.window else 'the whole log'}."


def _what(plan: Plan) -> str:
    """The plan's subject in plain words: "commands matching `curl`"."""
    subject = plan.subject
    what = _SUBJECTS.get(subject.kind, subject.kind)
    if subject.kind == "reading":
        what = subject.reading or what
    if subject.name:
        what += f" matching `{subject.name}`"
    return what


def unknown_words(reader: Reader, plan: Plan) -> Found:
    """The plan's leftover words (:attr:`Subject.unplaced`) as a final, unanswered Found."""
    words = ", ".join(f"'{w}'" for w in plan.subject.unplaced)
    text = (f"I understood: {_what(plan)}, {reader.scope(plan.window)}; but the log holds "
            f"nothing I can match to {words}, so I cannot answer that part. Ask about the "
            "commands, windows, files or readings themselves.")  # fmt: skip
    return Found(text, (), False, 0, True)
