"""Retention's limits applied to rows: an event's kind's limit, else its source's, else the
default; and what a retention erasure records of them."""

from __future__ import annotations

import pyarrow as pa

from nerve.config.models import RetentionConfig
from nerve.events import parse_source
from nerve.privacy.selection import retention_predicate, retention_recorded

NOW = 1_800_000_000 * 10**9
MINUTE = 60 * 10**9
LIMITS = RetentionConfig(default="1d", sources={"shell": "1h"}, kinds={"note.added": "1m"})


def _rows(*rows: tuple[str, str, int]) -> pa.Table:
    """A table of (source, kind, minutes before NOW) rows, as the log stores them."""
    return pa.table(
        {
            "source": [parse_source(source) for source, _, _ in rows],
            "kind": [kind for _, kind, _ in rows],
            "physical_ns": [NOW - ago * MINUTE for _, _, ago in rows],
        }
    )


def test_an_event_expires_past_its_kind_s_else_its_source_s_else_the_default_limit() -> None:
    rows = _rows(
        ("process_tree", "sense.state", 25 * 60),  # past the default day
        ("process_tree", "sense.state", 23 * 60),
        ("shell", "sense.state", 61),  # past the shell's hour
        ("shell", "sense.state", 59),
        ("shell", "note.added", 2),  # the kind's minute wins over the source's hour
        ("process_tree", "note.added", 0),
    )
    expired = retention_predicate(LIMITS, NOW)(rows).to_pylist()
    assert expired == [True, False, True, False, True, False]


def test_without_a_default_only_the_named_sources_and_kinds_expire() -> None:
    rows = _rows(("process_tree", "sense.state", 10**6), ("shell", "sense.state", 61))
    limits = RetentionConfig(sources={"shell": "1h"})
    assert retention_predicate(limits, NOW)(rows).to_pylist() == [False, True]


def test_a_retention_erasure_records_the_limits_and_the_time_applied() -> None:
    assert retention_recorded(LIMITS, NOW) == {
        "retention": {
            "now_ns": NOW,
            "default": "24h",
            "sources": {"shell": "1h"},
            "kinds": {"note.added": "1m"},
        }
    }
    assert retention_recorded(RetentionConfig(), NOW) == {"retention": {"now_ns": NOW}}
