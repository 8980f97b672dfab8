"""Any change to a seal's body is caught at or before that seal's epoch (CONTRIBUTING §17)."""

from __future__ import annotations

import json
from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st

from nerve.conformance.seal import run_case
from nerve.seal import Seed

VECTOR = json.loads(
    (Path(__file__).resolve().parents[2] / "conformance" / "v1" / "s1_seals.json").read_text()
)
SEED = Seed.parse(VECTOR["seed"])
GOOD = VECTOR["cases"][0]  # every epoch sealed: verifies whole


@settings(max_examples=400)
@given(
    st.integers(0, len(GOOD["notes"]) - 1),
    st.integers(min_value=0),
    st.sampled_from("0123456789") | st.characters(codec="utf-8", exclude_characters="\r"),
)
def test_a_changed_body_character_fails_at_or_before_its_epoch(
    which: int, where: int, char: str
) -> None:
    note = GOOD["notes"][which]
    body_len = note.index("\n\n")
    at = where % body_len
    if note[at] == char:
        return
    notes = list(GOOD["notes"])
    notes[which] = note[:at] + char + note[at + 1 :]
    report = run_case(SEED, {**GOOD, "notes": notes})
    assert report.failure is not None and report.failure.epoch <= which, (at, char)


def test_the_untouched_case_verifies() -> None:
    assert run_case(SEED, GOOD).ok
