"""The suite's hypothesis profile: no test fails by the clock (see tests/helpers)."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st


def test_no_example_has_a_deadline() -> None:
    assert settings().deadline is None
    assert settings(max_examples=5).deadline is None  # a test's own settings inherit it


@given(st.integers())
def test_a_given_test_inherits_no_deadline(n: int) -> None:
    assert settings.default is not None and settings.default.deadline is None
