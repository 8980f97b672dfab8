"""A day (or a week) at a glance: where the time in focus went, by app, window title and
category, time away apart; the commands run and failed, the folders worked in; and what the
attention gate surfaced and held, with why.

Time comes from the ``focus_spells`` projection (:mod:`nerve.categories`) and from
:func:`time_per` alone, so ``nerve ui``'s first page, ``nerve ask "time per app today"`` and a
``nerve query`` over ``focus_spells`` add up the same spells the same way.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import asdict, dataclass, field
from typing import Any, Literal

import duckdb

from nerve.attention.reason import reason_of
from nerve.canonical import loads_bounded
from nerve.categories import SPELLS_VIEW
from nerve.events import SourceClass
from nerve.query import EVENTS_IN_TIME, time_args

__all__ = ["Day", "Span", "commands_in", "day_of", "decisions_in", "time_per", "time_per_sql"]

Span = Literal["day", "week"]
By = Literal["app", "title", "category"]
_TOP = 12


def time_per_sql(by: str) -> str:
    """The SQL summing time in focus per ``by`` (``app``, ``app, title`` or ``category``)
    over [since, until), a spell still lasting counted to ``now``: named parameters
    ``$since``, ``$until`` and ``$now`` (nanoseconds)."""
    spent = "least(coalesce(end_ns, $now), $until) - greatest(start_ns, $since)"
    return (
        f"SELECT {by}, sum({spent})::BIGINT AS ns FROM {SPELLS_VIEW} "
        f"WHERE NOT afk AND {spent} > 0 GROUP BY ALL ORDER BY ns DESC, {by}"
    )


def time_per(
    conn: duckdb.DuckDBPyConnection, since: int, until: int, now: int, by: str = "app"
) -> list[tuple[Any, ...]]:
    """Time in focus per ``by`` over [since, until): rows of the grouped columns then ns,
    most first (see :func:`time_per_sql`)."""
    args = {"now": now, "until": until, "since": since}
    return [tuple(r) for r in conn.execute(time_per_sql(by), args).fetchall()]


def _away(conn: duckdb.DuckDBPyConnection, since: int, until: int, now: int) -> int:
    """Time away between the first and the last moment in focus of [since, until) (a night
    away is not a day's time away)."""
    end = "least(coalesce(end_ns, $now), $until)"
    bounds = conn.execute(
        f"SELECT min(greatest(start_ns, $since)), max({end}) FROM {SPELLS_VIEW} "
        f"WHERE NOT afk AND {end} > greatest(start_ns, $since)",
        {"now": now, "until": until, "since": since},
    ).fetchone()
    if not bounds or bounds[0] is None:
        return 0
    lo, hi = int(bounds[0]), int(bounds[1])
    spent = "least(coalesce(end_ns, $now), $hi) - greatest(start_ns, $lo)"
    row = conn.execute(
        f"SELECT coalesce(sum({spent}), 0)::BIGINT FROM {SPELLS_VIEW} WHERE afk AND {spent} > 0",
        {"now": now, "hi": hi, "lo": lo},
    ).fetchone()
    return int(row[0]) if row else 0


@dataclass(frozen=True)
class Day:
    """What :func:`day_of` found for [since, until): every time in nanoseconds."""

    since: int
    until: int
    span: str
    active_ns: int
    away_ns: int
    apps: list[dict[str, Any]] = field(default_factory=list)
    titles: list[dict[str, Any]] = field(default_factory=list)
    categories: list[dict[str, Any]] = field(default_factory=list)
    commands: list[dict[str, Any]] = field(default_factory=list)
    failed: list[dict[str, Any]] = field(default_factory=list)
    folders: list[dict[str, Any]] = field(default_factory=list)
    decisions: list[dict[str, Any]] = field(default_factory=list)

    def to_json(self) -> dict[str, Any]:
        """The day as plain data (the UI's JSON twin)."""
        return asdict(self)


def day_of(
    conn: duckdb.DuckDBPyConnection, since: int, until: int, now: int, span: str = "day"
) -> Day:
    """The day (or week) [since, until) over a connection with ``events`` and
    ``focus_spells``; ``now`` ends a spell still lasting."""
    apps = time_per(conn, since, until, now, "app")
    titles = time_per(conn, since, until, now, "app, title")
    cats = time_per(conn, since, until, now, "category")
    shell = commands_in(conn, since, until)
    return Day(
        since, until, span,
        active_ns=sum(r[-1] for r in apps),
        away_ns=_away(conn, since, until, now),
        apps=[{"app": a, "ns": n} for a, n in apps],
        titles=[{"app": a, "title": t, "ns": n} for a, t, n in titles[:_TOP * 2]],
        categories=category_tree([(c, n) for c, n in cats]),
        commands=_top(Counter(c["command"] for c in shell), "command"),
        failed=[c for c in shell if c["exit"] not in (0, None)][-_TOP:][::-1],
        folders=_top(Counter(c["cwd"] for c in shell if c["cwd"]), "folder"),
        decisions=decisions_in(conn, since, until),
    )  # fmt: skip


def category_tree(totals: list[tuple[str, int]]) -> list[dict[str, Any]]:
    """Each category and each of its parents (``Work`` above ``Work > Code``) with the time
    under it, parents first, each level most first."""
    under: Counter[str] = Counter()
    for name, ns in totals:
        parts = name.split(" > ")
        for depth in range(1, len(parts) + 1):
            under[" > ".join(parts[:depth])] += ns

    def children(parent: str | None) -> list[dict[str, Any]]:
        depth = 0 if parent is None else parent.count(" > ") + 1
        mine = [
            n for n in under
            if n.count(" > ") == depth and (parent is None or n.startswith(parent + " > "))
        ]  # fmt: skip
        out: list[dict[str, Any]] = []
        for name in sorted(mine, key=lambda n: (-under[n], n)):
            leaf = name.rsplit(" > ", 1)[-1]
            out.append({"category": name, "name": leaf, "depth": depth, "ns": under[name]})
            out += children(name)
        return out

    return children(None)


def _top(counts: Counter[str], key: str) -> list[dict[str, Any]]:
    ranked = sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))[:_TOP]
    return [{key: name, "count": n} for name, n in ranked]


def commands_in(conn: duckdb.DuckDBPyConnection, since: int, until: int) -> list[dict[str, Any]]:
    """The shell commands run in [since, until), oldest first: when, command, exit, folder."""
    rows = conn.execute(
        "SELECT coalesce(valid_time_ns, physical_ns) AS t, data->>'command', "
        f"TRY_CAST(data->>'exit' AS BIGINT), data->>'cwd' FROM {EVENTS_IN_TIME} "
        "WHERE kind = 'observation' AND source = ? AND data->>'command' IS NOT NULL "
        "ORDER BY t, logical",
        [*time_args(since, until), int(SourceClass.SHELL)],
    ).fetchall()
    return [{"at": int(t), "command": str(c), "exit": e, "cwd": d or ""} for t, c, e, d in rows]


def decisions_in(conn: duckdb.DuckDBPyConnection, since: int, until: int) -> list[dict[str, Any]]:
    """The gate's decisions in the window, newest first, each with :func:`reason_of`'s words
    and the probe that fired (``""`` when none is stored)."""
    rows = conn.execute(
        "SELECT physical_ns, payload FROM events WHERE kind = 'attention.decision' "
        "AND physical_ns >= ? AND physical_ns < ? AND NOT erased "
        "ORDER BY physical_ns DESC, logical DESC LIMIT 50",
        [since, until],
    ).fetchall()
    out = []
    for at, payload in rows:
        try:
            found = loads_bounded(bytes(payload))
        except ValueError:
            continue
        if not isinstance(found, dict):
            continue
        why = reason_of(found)
        out.append({
            "at": int(at), "outcome": str(found.get("outcome", "")), "held": why.held,
            "seq": found.get("chain_seq"), "seen": str(found.get("source_line") or ""),
            "why": why.words(), "probe": str(found.get("probe") or ""),
        })  # fmt: skip
    return out
