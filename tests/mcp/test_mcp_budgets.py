"""`nerve.mcp.budgets`'s budgets at their edges: what a byte counts, the last item that fits,
the last row a session may take, and the sessions a server remembers."""

from __future__ import annotations

import datetime as dt

import pytest

from nerve.errors import AccessRefused
from nerve.mcp.budgets import Allowance, Budgets, fit, json_size
from nerve.mcp.settings import McpConfig


def _budgets(rows: tuple[int, int], size: tuple[int, int]) -> Budgets:
    return Budgets(
        McpConfig.model_validate(
            {
                "max_rows": {"call": rows[0], "session": rows[1]},
                "max_bytes": {"call": size[0], "session": size[1]},
            }
        )
    )


def test_a_budget_counts_compact_utf8_json_bytes() -> None:
    assert json_size({"a": "é", "b": [1, 2]}) == len('{"a":"é","b":[1,2]}'.encode())
    assert json_size("\ud800") == 5  # a lone surrogate is counted, not an error
    assert json_size(dt.date(2026, 1, 2)) == len('"2026-01-02"')


def test_fit_keeps_exactly_what_the_bytes_hold() -> None:
    items = ["abcdefgh"] * 5  # 10 bytes of JSON each, 11 with its separator
    assert fit(items, Allowance(10, 256 + 33)) == (items[:3], True)
    assert fit(items, Allowance(10, 256 + 32)) == (items[:2], True)
    assert fit(items, Allowance(10, 100 + 33), overhead=100) == (items[:3], True)
    assert fit(items, Allowance(5, 10**6)) == (items, False)
    assert fit([], Allowance(0, 0)) == ([], False)


def test_a_session_may_take_its_last_row_and_byte_and_no_more() -> None:
    budgets = _budgets((10, 25), (1000, 5000))
    budgets.charge("s", 24, 100)
    assert budgets.allowance("s") == Allowance(1, 1000)
    budgets.charge("s", 1, 0)
    with pytest.raises(AccessRefused, match=r"25 rows / 5,000 bytes .* 25 rows and 100 bytes") as e:
        budgets.allowance("s")
    assert e.value.hint == "start a new session, or raise the budgets under mcp: in nerve.yaml"
    budgets.charge("t", 0, 4999)
    assert budgets.allowance("t") == Allowance(10, 1)
    budgets.charge("t", 0, 1)
    with pytest.raises(AccessRefused, match="0 rows and 5,000 bytes"):
        budgets.allowance("t")
    assert budgets.spent("s") == (25, 100) and budgets.spent("new") == (0, 0)


def test_the_server_forgets_the_session_it_charged_longest_ago(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr("nerve.mcp.budgets._MAX_SESSIONS", 3)
    budgets = _budgets((10, 100), (1000, 10**6))
    for name in ["a", "b", "c"]:
        budgets.charge(name, 1, 1)
    budgets.charge("a", 1, 1)  # a charged again: b is now the oldest
    budgets.charge("d", 1, 1)
    assert budgets.spent("b") == (0, 0)
    assert [budgets.spent(n) for n in ["a", "c", "d"]] == [(2, 2), (1, 1), (1, 1)]
