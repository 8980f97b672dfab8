"""The day bench's scorer: a repeat of one incident and another sense's surfacing."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType
from typing import Any

BENCH = Path(__file__).resolve().parents[2] / "bench"


def _bench() -> ModuleType:
    sys.path.insert(0, str(BENCH))
    spec = importlib.util.spec_from_file_location("day_bench", BENCH / "attention_day_bench.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules["day_bench"] = module  # its dataclasses look their module up
    spec.loader.exec_module(module)
    return module


def test_a_repeat_counts_once_and_another_senses_surfacing_is_false() -> None:
    b = _bench()
    start = b.T0 + 2 * b.HOUR
    incidents = [b.Incident("cpu_hog", start, start + 6 * b.MIN)]
    obs, decisions = [], []
    for k, (sense, at) in enumerate(
        [("cpu", start + b.MIN), ("cpu", start + 3 * b.MIN), ("memory", start + 4 * b.MIN)]
    ):
        eid = bytes([k]) * 32
        obs.append(b.Obs(eid, 8, 1, at, 0, "line", sense, {}))
        decisions.append(_surfaced(eid, sense))
    figures = b.score(obs, decisions, incidents, 4.0)
    assert figures["repeats"] == 1
    assert figures["recall"] == 1.0
    assert figures["precision"] == 0.5  # the cpu hit against the memory surfacing
    assert len(figures["false_surfaced"]) == 1


def _surfaced(eid: bytes, sense: str) -> dict[str, Any]:
    return {"outcome": "surface", "source_event": eid.hex(), "probe": f"value:{sense}.x",
            "source_line": "line"}  # fmt: skip


def test_several_seeds_report_each_day_and_check_the_worst() -> None:
    b = _bench()
    result = b.run(b.parse_args(["--quick", "--seeds", "1,2"]))
    days = result["per_seed"]
    assert sorted(days) == ["1", "2"] and result["seeds"] == [1, 2]
    assert result["recall"] == min(d["recall"] for d in days.values())
    assert result["precision"] == min(d["precision"] for d in days.values())
    worst_rate = max(d["interruptions_per_hour"] for d in days.values())
    assert result["interruptions_per_hour"] == worst_rate
