"""One true reason per hold: a ``hold:transient`` keeps the one check it failed, with its
figures (nerve.attention.rules), and its reason says that check alone (nerve.attention.reason)."""

from __future__ import annotations

from typing import Any

from nerve.attention.detector import Highlight
from nerve.attention.reason import reason_of
from nerve.attention.rules import Rules, ValueRulesConfig

S = 10**9
CPU, TOP = "value:cpu.busy_permille", "value:processes.top_cpu_permille"


def _held(probe: str, fire: int, later: int, before: dict[str, int]) -> dict[str, Any]:
    """The machine's readings ``before``, then a fire of ``probe`` at ``fire`` (baseline 100)
    and ``later`` a minute on: the transient hold's ``held`` figures."""
    rules = Rules(ValueRulesConfig())
    rules.apply(before, [], 0, 0, lambda p: None, lambda p: None)
    h = Highlight(probe, fire, 100, 20, 500, 1, "surprise", 1)
    rules.apply({probe: fire}, [h], 1, S, lambda p: None, lambda p: None)
    out = rules.apply({probe: later}, [], 2, 62 * S, lambda p: None, lambda p: None)
    ((ended, action),) = [o for o in out if o[0].probe == probe]
    assert action == "hold:transient"
    assert ended.held is not None
    return dict(ended.held)


def _words(probe: str, reading: int, held: dict[str, Any]) -> str:
    decision = {
        "outcome": "hold:transient",
        "probe": probe,
        "highlight": {"probe": probe, "value_milli": reading, "baseline_milli": 100,
                      "sigma_milli": 20, "kind": "surprise", "direction": 1, "held": held},
    }  # fmt: skip
    return reason_of(decision).words()


def test_each_hold_keeps_the_check_it_failed() -> None:
    fell = _held(CPU, 900, 150, {})
    assert fell == {"check": "fell_back", "bar": 400, "after_s": 61}
    assert "fell back to 15 % within 61 s (it had to stay above 50 %" in _words(CPU, 150, fell)
    floor = _held(TOP, 700, 700, {})
    assert floor["check"] == "under_floor" and floor["floor"] == 800
    assert "stayed under its floor: 70 % within 61 s, below 80 %" in _words(TOP, 700, floor)
    # a machine of at least 7.5 cores (a process at 75 % of one, the machine 10 % busy),
    # then busy at 90 % while its busiest process holds at most one core: a build
    job = _held(CPU, 900, 900, {CPU: 100, TOP: 750})
    assert job["check"] == "parallel_job", job
    said = _words(CPU, 900, job)
    assert said.startswith("held as passing: explained by a parallel job"), said
    assert "or was explained" not in said and "stopped growing" not in said
