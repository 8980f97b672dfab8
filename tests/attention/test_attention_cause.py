"""A decision's cause names what its own reading is about: the busiest process for a CPU
reading, the largest for a memory one (never the other), and neither for how many processes
started or exited a minute."""

from __future__ import annotations

from nerve.attention.cause import Witness, cause_of, facts_of

MIB = 1024 * 1024
PAYLOAD = {
    "cpu": [{"name": "yes", "pid": 16845, "cpu_permille": 480, "rss_bytes": 2 * MIB}],
    "memory": [{"name": "memgrow.py", "pid": 17085, "cpu_permille": 20, "rss_bytes": 743 * MIB}],
}


def _decision(probe: str) -> dict[str, object]:
    witness = Witness()
    facts = facts_of(PAYLOAD)
    witness.see("processes", facts, {}, 1)
    return {"probe": probe, "source_line": "top cpu: yes", "cause": witness.facts(
        "processes", facts, probe)}  # fmt: skip


def test_a_memory_reading_names_the_largest_process() -> None:
    words = cause_of(_decision("value:processes.top_rss_bytes"))
    assert words == "memory: memgrow.py [17085] holds 743 MiB"


def test_a_cpu_reading_names_the_busiest_process() -> None:
    words = cause_of(_decision("value:processes.top_cpu_permille"))
    assert words == "CPU: yes [16845] uses 48 % of a core"


def test_an_old_record_of_a_memory_reading_is_not_explained_by_cpu() -> None:
    """Decisions stored before the largest process was kept carry only the busiest one: their
    cause falls back to the observation's own line rather than a CPU sentence."""
    old = {
        "probe": "value:processes.top_rss_bytes",
        "source_line": "top cpu: yes 48% [16845]; memory: memgrow.py 743 MiB [17085]",
        "cause": {"sense": "processes", "busiest": PAYLOAD["cpu"][0]},
    }
    assert cause_of(old) == "processes: " + str(old["source_line"])


def test_a_count_of_processes_is_not_explained_by_the_busiest_one() -> None:
    for probe in ("value:processes.per_min", "value:processes.brief_exits"):
        assert cause_of(_decision(probe)) == "processes: top cpu: yes", probe
    cpu = {"source_line": "cpu 91.0%", "cause": {"sense": "cpu", "busiest": PAYLOAD["cpu"][0]}}
    assert cause_of({**cpu, "probe": "value:cpu.per_min"}) == "cpu: cpu 91.0%"
    assert cause_of({**cpu, "probe": "value:cpu.busy_permille"}).startswith("CPU: yes [16845]")
