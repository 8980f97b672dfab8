"""The Senses page words each sense for a person: its state (running, unavailable and why,
erroring with its error, not running), the last reading with its age, the schedule in units,
the last and next compute as times; no raw nanoseconds."""

from __future__ import annotations

from nerve.ui.data import sense_row

S = 10**9
NOW = 1_800_000_000 * S


def _sense(**over: object) -> dict[str, object]:
    base: dict[str, object] = {
        "name": "cpu", "interval_ms": 5000, "on": [], "computes": 12, "errors": 0,
        "last_ns": NOW - 3 * S, "last_line": "cpu 12%", "last_line_ns": NOW - 3 * S,
        "unavailable": "", "last_error": "",
    }  # fmt: skip
    return {**base, **over}


def test_a_running_sense_says_its_reading_its_age_and_when_it_computes_next() -> None:
    row = sense_row(_sense(), True, NOW)
    assert row["state"] == "running"
    assert row["latest"] == "cpu 12% · 3s ago"
    assert row["schedule"] == "every 5 s"
    assert row["next_ns"] == NOW + 2 * S


def test_unavailable_erroring_and_not_running_say_so() -> None:
    gone = sense_row(_sense(unavailable="no X display (headless)"), True, NOW)
    assert gone["state"] == "unavailable: no X display (headless)"
    failing = sense_row(_sense(last_error="ValueError: bad"), True, NOW)
    assert failing["state"] == "erroring: ValueError: bad"
    idle = sense_row(_sense(), False, NOW)
    assert idle["state"] == "not running" and idle["latest"] == "" and idle["next_ns"] is None


def test_a_schedule_reads_in_units_and_names_what_wakes_it() -> None:
    assert sense_row(_sense(interval_ms=600_000), True, NOW)["schedule"] == "every 10 min"
    assert sense_row(_sense(interval_ms=1500), True, NOW)["schedule"] == "every 1.5 s"
    woken = sense_row(_sense(interval_ms=None, on=["files"]), True, NOW)
    assert woken["schedule"] == "on files" and woken["next_ns"] is None
    assert sense_row(_sense(interval_ms=None), True, NOW)["schedule"] == "when triggered"
