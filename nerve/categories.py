"""Categories of time in focus, and the focus spells the day's totals are summed from.

A category rule names a category (nested with ``>``, as in ``Work > Code``) and a pattern for
the focused application, the window title or both (regular expressions, any case; an empty
pattern matches anything). The first rule in ``nerve.yaml``'s ``categories:`` list that
matches a spell gives its category; a spell no rule matches is ``Uncategorized``.

Both reach SQL as a projection every connection over the log defines
(:func:`define`), so ``nerve query``, ``nerve ask`` and ``nerve ui`` see the same spells and
categories:

- ``nerve_categories``: the rules, one row each (``pos``, ``category``, ``app``, ``title``);
- ``focus_spells``: one row per spell of the focus sense (``app_focus``): ``start_ns``,
  ``end_ns`` (NULL while it lasts), ``afk`` (true from ``away`` to the next ``back`` or
  focus), ``app``, ``title`` and ``category`` (NULL on an away spell). A focus lasts until
  the next focus or ``away``, or until the daemon stops (or starts again after a crash) or
  capture pauses, since nothing is seen after those; ``back`` resumes the focus it left.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, field_validator

from nerve.events import SourceClass

__all__ = [
    "ENDS",
    "SPELLS_VIEW",
    "TABLE",
    "UNCATEGORIZED",
    "CategoryRule",
    "define",
    "ends_between",
    "rule_rows",
    "with_rules",
]

TABLE = "nerve_categories"
SPELLS_VIEW = "focus_spells"
UNCATEGORIZED = "Uncategorized"
# DuckDB matches with RE2, which has no look-around and no back-references.
# the kinds after which the focus sense has seen nothing: a spell ends there, unseen time
ENDS = ("daemon.stopped", "daemon.started", "capture.paused")
_NOT_RE2 = re.compile(r"\(\?<?[=!]|\\[1-9]")


class CategoryRule(BaseModel):
    """One entry of ``categories:``: ``name`` and an ``app`` and/or ``title`` pattern."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    name: str = Field(min_length=1, max_length=200)
    app: str = ""
    title: str = ""

    @field_validator("name")
    @classmethod
    def _tidy_name(cls, value: str) -> str:
        parts = [p.strip() for p in value.split(">")]
        if not all(parts):
            raise ValueError(f"category {value!r} has an empty part between '>'")
        return " > ".join(parts)

    @field_validator("app", "title")
    @classmethod
    def _pattern(cls, value: str) -> str:
        try:
            re.compile(value)
        except re.error as exc:
            raise ValueError(f"pattern {value!r} is not a regular expression: {exc}") from None
        if _NOT_RE2.search(value):
            raise ValueError(f"pattern {value!r} uses look-around or a back-reference")
        return value


def rule_rows(rules: Sequence[CategoryRule | Sequence[str]]) -> list[tuple[str, str, str]]:
    """The rules as (category, app, title) rows, as ``nerve_settings`` carries them."""
    out = []
    for rule in rules:
        if isinstance(rule, CategoryRule):
            out.append((rule.name, rule.app, rule.title))
        else:
            name, app, title = (str(v) for v in rule)
            out.append((name, app, title))
    return out


_SPELLS = f"""
WITH f AS (
    SELECT coalesce(valid_time_ns, physical_ns) AS t, logical, data->>'event' AS event,
           data->>'app' AS app, data->>'title' AS title
    FROM events
    WHERE kind = 'observation' AND source = {int(SourceClass.APP_FOCUS)}
      AND data->>'event' IN ('focus', 'away', 'back')
    UNION ALL  -- nothing is observed from a daemon's stop (or a crash) to the next start,
    SELECT physical_ns, logical,  -- nor while capture is paused (a resume goes on as before)
           CASE WHEN kind = 'capture.resumed' THEN 'back' ELSE 'end' END, NULL, NULL
    FROM events WHERE kind IN ({", ".join(repr(k) for k in (*ENDS, "capture.resumed"))})
), o AS (
    SELECT t, event,
           lead(t) OVER (ORDER BY t, logical) AS next_t,
           last_value(CASE WHEN event = 'focus' THEN coalesce(app, '') END IGNORE NULLS)
               OVER (ORDER BY t, logical ROWS UNBOUNDED PRECEDING) AS cur_app,
           last_value(CASE WHEN event = 'focus' THEN coalesce(title, '') END IGNORE NULLS)
               OVER (ORDER BY t, logical ROWS UNBOUNDED PRECEDING) AS cur_title
    FROM f
), s AS (
    SELECT t AS start_ns, next_t AS end_ns, event = 'away' AS afk,
           CASE WHEN event <> 'away' THEN coalesce(nullif(cur_app, ''), '(no window)') END
               AS app,
           CASE WHEN event <> 'away' THEN cur_title END AS title
    FROM o WHERE event = 'away' OR (event <> 'end' AND cur_app IS NOT NULL)
)
SELECT start_ns, end_ns, afk, app, title,
       CASE WHEN NOT afk THEN coalesce((
           SELECT c.category FROM {TABLE} c
           WHERE (c.app = '' OR regexp_matches(s.app, c.app, 'i'))
             AND (c.title = '' OR regexp_matches(s.title, c.title, 'i'))
           ORDER BY c.pos LIMIT 1), '{UNCATEGORIZED}') END AS category
FROM s
"""


def ends_between(conn: Any, lo: int, hi: int) -> list[tuple[int, str]]:
    """The moments from ``lo`` to ``hi`` (ns) after which the focus sense saw nothing
    (``end``: a daemon's stop or start, a pause) or saw again (``back``: a resume), as
    (time, word) pairs: what ends and resumes a spell outside the focus sense's own events."""
    kinds = (*ENDS, "capture.resumed")
    rows = conn.execute(
        f"SELECT physical_ns, kind FROM events WHERE kind IN ({', '.join('?' * len(kinds))}) "
        "AND physical_ns >= ? AND physical_ns < ?",
        [*kinds, lo, hi],
    ).fetchall()
    return [(int(t), "back" if k == "capture.resumed" else "end") for t, k in rows]


def define(conn: Any, rules: Sequence[CategoryRule | Sequence[str]], kind: str = "TEMP ") -> None:
    """Create ``nerve_categories`` from the rules and ``focus_spells`` over the connection's
    ``events`` view (``kind``: ``"TEMP "`` or ``""`` to store them in the database)."""
    rows = rule_rows(rules)
    conn.execute(
        f"CREATE OR REPLACE {kind}TABLE {TABLE} "
        "(pos INTEGER, category VARCHAR, app VARCHAR, title VARCHAR)"
    )
    if rows:
        conn.executemany(
            f"INSERT INTO {TABLE} VALUES (?, ?, ?, ?)",
            [(i, *row) for i, row in enumerate(rows)],
        )
    conn.execute(f"CREATE OR REPLACE {kind}VIEW {SPELLS_VIEW} AS {_SPELLS}")


def with_rules(text: str, rules: Sequence[CategoryRule]) -> str:
    """``nerve.yaml``'s text with its ``categories:`` list replaced by the rules (comments and
    the rest of the file kept as they were)."""
    import io

    from ruamel.yaml import YAML

    yaml = YAML()
    yaml.preserve_quotes = True
    doc = yaml.load(text) if text.strip() else None
    if doc is None:
        doc = {}
    listed = [{k: v for k, v in r.model_dump().items() if v or k == "name"} for r in rules]
    if listed:
        doc["categories"] = listed
    else:
        doc.pop("categories", None)
    out = io.StringIO()
    yaml.dump(doc, out)
    return out.getvalue()
