"""What a person was doing: the focused windows (with the commands and files around
them), time per app, and what happened in a period."""

from __future__ import annotations

from nerve.events import SourceClass
from nerve.query import EVENTS_IN_TIME, time_args
from nerve.recall.day import time_per
from nerve.recall.facts.ask import Ask, Row, answer, never, nothing
from nerve.recall.facts.commands import cmd, exit_note
from nerve.recall.tier0 import Tier0Answer
from nerve.tail.when import Period

__all__ = ["doing", "happened", "time_per_app"]


_AROUND_NS = 5 * 60 * 10**9  # "at 15:00": commands and files within five minutes of it


def _spells(ask: Ask, period: Period | None) -> list[tuple[Row, int, int]]:
    """Each focus (its row) with the part of the period it lasted: ``(row, start, end)``.

    A focus lasts until the next focus or ``away``, or until the daemon stops or capture
    pauses (:data:`nerve.categories.ENDS`: nothing was seen after those); ``back`` and a
    resume resume the focus it left.
    """
    from nerve.categories import ends_between

    span = period or Period(0, ask.now_ns, "")
    rows = ask.rows(SourceClass.APP_FOCUS, period=Period(0, span.end_ns, ""))
    seen: list[tuple[int, str, Row | None]] = [(r.t, str(r.data.get("event")), r) for r in rows]
    seen += [(t, word, None) for t, word in ends_between(ask.conn, 0, span.end_ns)]
    spells: list[tuple[Row, int, int]] = []
    current: Row | None = None
    since: int | None = None
    for t, event, row in sorted(seen, key=lambda e: e[0]):
        if event in ("focus", "away", "end") and current is not None and since is not None:
            _clip(spells, current, since, t, span)
        if event == "focus" and row is not None:
            current, since = row, t
        elif event in ("away", "end"):
            since = None
        elif event == "back":
            since = t
    if current is not None and since is not None:
        _clip(spells, current, since, min(span.end_ns, ask.now_ns), span)
    return spells


def _clip(
    spells: list[tuple[Row, int, int]], row: Row, since: int, until: int, span: Period
) -> None:
    start, end = max(since, span.start_ns), min(until, span.end_ns)
    if end > start or (span.point and since <= span.start_ns <= until):
        spells.append((row, start, end))


def _app(row: Row) -> str:
    return str(row.data.get("app") or "(no window)")


def doing(ask: Ask) -> Tier0Answer:
    focus_ever = ask.ever(SourceClass.APP_FOCUS)
    period = ask.period or Period(ask.now_ns - 3600 * 10**9, ask.now_ns, "the last hour")
    spells = _spells(ask, period) if focus_ever else []
    near = (
        period
        if not period.point
        else Period(period.start_ns - _AROUND_NS, period.end_ns + _AROUND_NS, "")
    )
    commands = [r for r in ask.rows(SourceClass.SHELL, period=near)]
    files = [r for r in ask.rows(SourceClass.FILE_CHANGE, period=near)]
    if not spells and not commands and not files:
        if not focus_ever:
            what = "the focused window (the focus sense needs an X display)"
            return never("doing", f"{what}, nor commands or file changes then")
        return nothing(ask, "doing", "recorded activity")
    lines: list[tuple[Row, str]] = []
    for row, start, end in reversed(spells):
        title = str(row.data.get("title") or "")
        lasted = f", {(end - start) // 10**9} s" if end > start else ""
        lines.append(
            (row, f"{ask.when(start)}  {_app(row)}{': ' + title if title else ''}{lasted}")
        )
    lines += [(r, f"{ask.when(r.t)}  $ {cmd(r)}{exit_note(r)}") for r in reversed(commands[-3:])]
    lines += [
        (r, f"{ask.when(r.t)}  file {r.data.get('change', 'changed')} {r.data.get('path', '?')}")
        for r in reversed(files[-3:])
    ]
    scope = ask.scope() if ask.period is not None else "in the last hour"
    title = f"What you were doing {scope}: windows in focus, newest first"
    return answer(
        "doing", title + (", then commands and files:" if commands or files else ":"), lines
    )


def time_per_app(ask: Ask) -> Tier0Answer:
    if not ask.ever(SourceClass.APP_FOCUS):
        return never("time_per_app", "the focused window (the focus sense needs an X display)")
    span = ask.period or Period(0, ask.now_ns, "")
    cite: dict[str, Row] = {}
    for row, _, _ in _spells(ask, ask.period):
        cite.setdefault(_app(row), row)
    # the totals are the UI's day's, from focus_spells (one function: nerve.recall.day)
    totals = time_per(ask.conn, span.start_ns, span.end_ns, ask.now_ns, "app")
    used = [(cite[a], f"{a}: {_duration(ns)}") for a, ns in totals if a in cite]
    if not used:
        return nothing(ask, "time_per_app", "time in focus")
    return answer("time_per_app", f"Time per app {ask.scope()} (time away not counted):", used)


def _duration(ns: int) -> str:
    seconds = ns // 10**9
    hours, rest = divmod(seconds, 3600)
    return f"{hours} h {rest // 60} min" if hours else f"{rest // 60} min {rest % 60} s"


def happened(ask: Ask) -> Tier0Answer:
    period = ask.period or Period(ask.now_ns - 3600 * 10**9, ask.now_ns, "the last hour")
    scoped = Ask(ask.conn, ask.text, period, ask.now_ns, ask.tz)
    sql = (
        f"SELECT source_name, count(*) FROM {EVENTS_IN_TIME} WHERE kind = 'observation' "
        "GROUP BY 1 ORDER BY 2 DESC, 1"
    )
    counts = ask.conn.execute(sql, time_args(period.start_ns, period.end_ns + 1)).fetchall()
    if not counts:
        return nothing(scoped, "happened", "observations")
    parts = ", ".join(f"{n} {s}" for s, n in counts)
    lines: list[tuple[Row, str]] = []
    for source in (
        SourceClass.SHELL,
        SourceClass.FILE_CHANGE,
        SourceClass.APP_FOCUS,
        SourceClass.PROCESS_TREE,
    ):
        for r in reversed(scoped.rows(source)[-2:]):
            lines.append((r, f"{ask.when(r.t)}  {r.line}"))
    scope = scoped.scope()
    return answer(
        "happened", f"{scope[:1].upper()}{scope[1:]}: {parts} observations. Among them:", lines
    )
