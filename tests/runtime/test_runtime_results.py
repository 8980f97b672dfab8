"""What a batch of worker replies stores, without a daemon: ``nerve.runtime.results``."""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from nerve.canonical import canonical_json
from nerve.log.drafts import Draft
from nerve.privacy.policy import Policy
from nerve.privacy.settings import PrivacyConfig, RuleConfig
from nerve.runtime.committer import Columns
from nerve.runtime.groups import Job, Reply
from nerve.runtime.results import STATE_CHECKPOINT_NS, Results, SenseStats, state_payload


class Rules:
    def __init__(self, policy: Policy | None = None) -> None:
        self.privacy = policy or Policy()


class Gate:
    """The pause switch: keeps every observation unless told to withhold them."""

    def __init__(self) -> None:
        self.withhold = False

    def screen(self, sense: str, observations: list[Draft]) -> list[Draft]:
        return [] if self.withhold else observations


class Clock:
    def __init__(self) -> None:
        self.now = 1_000

    def __call__(self) -> int:
        return self.now


def _results(policy: Policy | None = None, **kwargs: Any) -> tuple[Results, Gate, Clock]:
    gate, clock = Gate(), Clock()
    results = Results(
        Rules(policy),
        gate,
        kwargs.get("listened", lambda sense: False),
        lambda sense, raw: (None, []),
        now_ns=clock,
        wall_ns=clock,
    )
    for name in ("a", "b"):
        results.stats[name] = SenseStats("g")
        results.memory.set(name, {"n": 0})
    return results, gate, clock


def _reply(sense: str, state: Any, **body: Any) -> Reply:
    return Reply(Job(sense, "interval", 100_000), 300_000, {"ok": True, "state": state} | body)


def _rows(columns: Columns) -> list[tuple[str, str, Any]]:
    return [
        (kind, subject, json.loads(payload) if payload else None)
        for kind, subject, payload in zip(
            columns.kind, columns.subject, columns.payload, strict=True
        )
    ]


@given(
    state=st.recursive(
        st.none() | st.integers() | st.text(),
        lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(), inner, max_size=3),
        max_leaves=8,
    ),
    reason=st.text(),
    duration=st.none() | st.integers() | st.floats(allow_nan=False, allow_infinity=False),
    lateness=st.integers(min_value=0, max_value=2**62),
    computes=st.integers(min_value=1, max_value=10**9),
    withheld=st.none() | st.integers(min_value=1, max_value=1000),
)
def test_the_state_payload_is_what_canonical_json_makes_of_it(
    state: Any, reason: str, duration: Any, lateness: int, computes: int, withheld: int | None
) -> None:
    obj: dict[str, Any] = {
        "state": state,
        "reason": reason,
        "duration_ms": duration,
        "lateness_us": lateness,
        "computes": computes,
    }
    if withheld is not None:
        obj["withheld"] = withheld
    built = state_payload(canonical_json(state), reason, duration, lateness, computes, withheld)
    assert built == canonical_json(obj)


def test_a_batch_stores_each_changed_state_in_order_and_memory_waits_for_stored() -> None:
    results, _, _ = _results()
    outcome = results.take([_reply("a", {"n": 1}), _reply("b", {"n": 7}, duration_ms=0.5)])
    rows = _rows(outcome.columns)
    assert [(k, s) for k, s, _ in rows] == [("sense.state", "a"), ("sense.state", "b")]
    assert rows[1][2] == {
        "state": {"n": 7},
        "reason": "interval",
        "duration_ms": 0.5,
        "lateness_us": 200,
        "computes": 1,
    }
    assert results.memory.state_of("a") == {"n": 0}  # not yet durable
    list(results.stored(outcome))
    assert results.memory.state_of("a") == {"n": 1}
    assert results.memory.canonical("b") == b'{"n":7}'
    assert results.stats["a"].computes == 1 and results.stats["a"].lateness_us == [200]


def test_a_checkpointed_sense_counts_unchanged_computes_and_records_them_when_due() -> None:
    results, _, clock = _results()
    results.memory.state_records["a"] = "checkpoints"
    first = results.take([_reply("a", {"n": 1})])  # the first compute since start: recorded
    list(results.stored(first))
    for n in (2, 3):
        clock.now += 1
        quiet = results.take([_reply("a", {"n": n})])
        assert len(quiet.columns) == 0
        list(results.stored(quiet))
    assert results.stats["a"].unrecorded == 2
    clock.now += STATE_CHECKPOINT_NS
    due = results.take([_reply("a", {"n": 4})])
    (row,) = _rows(due.columns)
    assert row[2]["computes"] == 3 and row[2]["state"] == {"n": 4}


def test_an_unchanged_state_of_an_every_change_sense_is_counted_not_stored() -> None:
    results, _, _ = _results()
    list(results.stored(results.take([_reply("a", {"n": 1})])))
    again = results.take([_reply("a", {"n": 1})])
    assert len(again.columns) == 0 and len(again.moved) == 1
    list(results.stored(again))
    assert results.stats["a"].computes == 2


def test_failures_and_skips_are_reported_and_leave_the_state() -> None:
    results, _, _ = _results()
    failed = Reply(
        Job("a", "interval", 0), 0, {"ok": False, "error_kind": "exception", "error": "boom"}
    )
    skipped = Reply(Job("b", "interval", 0), 0, {"ok": True, "skip": "nothing new"})
    outcome = results.take([failed, skipped])
    assert _rows(outcome.columns) == [
        ("sense.error", "a", {"sense": "a", "kind": "exception", "error": "boom"})
    ]
    assert outcome.errors == [("a", "exception", "boom")]
    assert outcome.skipped == [("b", "nothing new")]
    assert not outcome.moved


def test_an_observation_that_cannot_be_stored_is_a_sense_error_and_stores_nothing_else() -> None:
    results, _, _ = _results()
    bad = _reply("a", {"n": 1}, observations=[{"source": "not-a-source", "line": "x"}])
    outcome = results.take([bad, _reply("b", {"n": 2})])
    kinds = [(k, s) for k, s, _ in _rows(outcome.columns)]
    assert kinds == [("sense.error", "a"), ("sense.state", "b")]
    assert [m.reply.job.sense for m in outcome.moved] == ["b"]


def test_withheld_observations_are_counted_on_the_state_record() -> None:
    results, gate, _ = _results()
    gate.withhold = True
    obs = [{"source": "shell", "line": "ls", "payload": {"cmd": "ls"}}]
    outcome = results.take([_reply("a", {"n": 1}, observations=obs)])
    (row,) = _rows(outcome.columns)
    assert row[0] == "sense.state" and row[2]["withheld"] == 1


def test_observations_follow_their_state_and_a_heard_signal_follows_them() -> None:
    results, _, _ = _results(listened=lambda sense: sense == "a")
    obs = [{"source": "shell", "line": "ls -l", "payload": {"cmd": "ls"}}]
    outcome = results.take([_reply("a", {"n": 1}, observations=obs, signal=True)])
    rows = _rows(outcome.columns)
    assert [k for k, _, _ in rows] == ["sense.state", "observation", "signal"]
    assert rows[0][2]["state"] == {"n": 1}
    assert outcome.moved[0].line == "ls -l"
    assert list(results.stored(outcome)) == ["a"]  # the sense signals once it is stored


@pytest.mark.parametrize("where", ["state", "reason"])
def test_a_rule_firing_in_a_state_changes_what_memory_keeps(where: str) -> None:
    rule = RuleConfig(name="pin", regex="PIN-[0-9]+")
    results, _, _ = _results(Policy(PrivacyConfig(rules=[rule])))
    reply = _reply("a", {"note": "PIN-1234"})
    if where == "reason":
        reply = Reply(Job("a", "on:PIN-9", 0), 0, {"ok": True, "state": {"n": 1}})
    outcome = results.take([reply])
    (row,) = _rows(outcome.columns)
    assert "PIN-" not in json.dumps(row[2])
    list(results.stored(outcome))
    if where == "state":
        assert results.memory.state_of("a") == {"note": "[redacted:pin]"}
        assert results.memory.canonical("a") == canonical_json({"note": "[redacted:pin]"})


def test_an_excluded_process_is_taken_out_of_a_stored_state_and_memory() -> None:
    """A state has no secret a detector finds, so only ``processes.exclude`` changes it: the
    quick test must not let it through whole (the processes sense notes ssh by default)."""
    config = PrivacyConfig.model_validate({"processes": {"exclude": ["ssh"]}})
    results, _, _ = _results(Policy(config))
    ssh = {"name": "ssh", "cmdline": "ssh me@private-host", "create_time": 1.0}
    outcome = results.take([_reply("a", {"notable": {"41": ssh}})])
    (row,) = _rows(outcome.columns)
    assert "private-host" not in json.dumps(row[2])
    list(results.stored(outcome))
    assert results.memory.state_of("a") == {"notable": {}}


def test_checkpoints_at_a_stop_store_the_counts_not_recorded_yet() -> None:
    results, _, _ = _results()
    results.memory.state_records["a"] = "checkpoints"
    list(results.stored(results.take([_reply("a", {"n": 1})])))
    list(results.stored(results.take([_reply("a", {"n": 2})])))
    (row,) = _rows(results.checkpoints())
    assert row == ("sense.state", "a", {"state": {"n": 2}, "reason": "checkpoint", "computes": 1})
    assert len(results.checkpoints()) == 0  # counted once
