"""Tier 0 by parts: a question parsed into a :class:`~nerve.recall.plans.parse.Plan` (window,
subject, measure; :mod:`~nerve.recall.plans.parse`, :mod:`~nerve.recall.plans.window`) and
answered by SQL over ``events`` (:mod:`~nerve.recall.plans.things`,
:mod:`~nerve.recall.plans.readings`, :mod:`~nerve.recall.plans.attention`).

:func:`answer_plan` returns None when the question names nothing a plan reads (the older
intents in :mod:`nerve.recall.tier0` and :mod:`nerve.recall.facts` then try). An answer says
the window and subject it used, cites its events and what it left out; when a part is
missing or matches nothing, it says what it understood and asks (not answered).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from datetime import tzinfo

import duckdb

from nerve.recall.plans.attention import attention
from nerve.recall.plans.checks import checks
from nerve.recall.plans.compare import compare
from nerve.recall.plans.cover import beyond, uncovered, unknown_words
from nerve.recall.plans.daemon import daemon
from nerve.recall.plans.during import during
from nerve.recall.plans.log import Found, Reader
from nerve.recall.plans.parse import Plan, Subject, mended, parse, window_of
from nerve.recall.plans.ports import ports
from nerve.recall.plans.readings import reading
from nerve.recall.plans.things import (
    activity,
    anything,
    away,
    commands,
    files,
    folders,
    processes,
    running_at,
    windows,
)
from nerve.recall.plans.window import Window, at_edge, find_window
from nerve.recall.plans.words import known_of

__all__ = [
    "Found", "Plan", "Subject", "Window", "answer_plan", "find_window", "mend", "parse",
]  # fmt: skip


def mend(conn: duckdb.DuckDBPyConnection, question: str) -> str:
    """The question with its mistyped words read as the parser's own ("waht comands failed"
    is "what commands failed"), for every part of Tier 0 to read; as it was when none is."""
    return mended(question, known_of(conn))


_BY_KIND: dict[str, Callable[[Reader, Plan], Found | None]] = {
    "anything": anything,
    "activity": activity,
    "away": away,
    "folder": folders,
    "command": commands,
    "file": files,
    "process": processes,
    "running": running_at,
    "window": windows,
    "reading": reading,
    "attention": attention,
    "daemon": daemon,
    "port": ports,
    "check": checks,
}


def answer_plan(
    conn: duckdb.DuckDBPyConnection,
    question: str,
    *,
    now_ns: int,
    tz: tzinfo | None,
    last_word: bool = True,
) -> tuple[Plan, Found] | None:
    """The question's plan and what it found, or None (see the module). A time the log does
    not cover is said so (:mod:`.cover`); with nothing after Tier 0 (``last_word``: no
    fallback model), a time wholly outside the log is the answer whatever the rest of the
    question ("which commands failed yesterday?" in a log begun today)."""
    plan = parse(question, now_ns=now_ns, tz=tz, known=known_of(conn))
    reader = Reader(conn, now_ns, tz)
    if plan is not None and plan.window is not None and plan.window.edge is not None:
        span = reader.span()  # "at the start": the log's first half minute
        plan = replace(plan, window=at_edge(plan.window, *span) if span else None)
    if plan is not None and plan.during is not None:
        placed = during(reader, plan)
        if isinstance(placed, Found):
            return plan, placed
        plan = placed
    timed = plan or Plan(question, window_of(question, now_ns, tz), Subject("anything"), "list")
    if (outside := uncovered(reader, timed)) is not None:  # final when the subject was read
        final = plan is not None or (last_word and beyond(timed.window, reader.span()))
        return timed, outside if final else replace(outside, final=False)
    if plan is None:
        return None
    if plan.subject.unplaced:
        return plan, unknown_words(reader, plan)
    if plan.measure == "compare":
        return plan, compare(reader, plan)
    found = _BY_KIND[plan.subject.kind](reader, plan)
    return None if found is None else (plan, found)
