"""Novelty of reading lines: a sampled sense's observation that carries readings (the
network's idle hum after a stretch of other sources) never fires the novelty probe; what is
new in its readings is the value probes' to judge. An event of a rare source still does."""

from __future__ import annotations

from nerve.attention.gate import UserContext
from nerve.attention.pipeline import Attention
from nerve.attention.rules import ValueRulesConfig
from nerve.events import SourceClass

S = 10**9
T0 = 1_767_261_600 * S
IDLE = UserContext(0, "none")
SHELL, NETWORK = int(SourceClass.SHELL), int(SourceClass.NETWORK)


def _novelty(rules: ValueRulesConfig, readings: dict[str, int]) -> list[int]:
    """Forty shell commands, then a network observation (with ``readings``): the
    observations the novelty probe fired at."""
    att, fired = Attention(rules=rules), []
    for i in range(41):
        source, subject, payload = (NETWORK, "network", readings) if i == 40 else (SHELL, "", {})
        eid = i.to_bytes(32, "big")
        for h, _ in att.observe(eid, source, 1, T0 + i * S, IDLE, subject, payload):
            fired += [i] if h.probe == "novelty" else []
    return fired


def test_an_idle_reading_line_is_no_news_but_a_rare_event_is() -> None:
    idle = {"down_kib_per_s": 0, "up_kib_per_s": 0, "listening_ports": 2}
    assert _novelty(ValueRulesConfig(), idle) == []
    assert _novelty(ValueRulesConfig(reading_novelty=True), idle) == [40]
    assert _novelty(ValueRulesConfig(), {}) == [40]  # a port opened: an event, no readings


def test_the_batch_path_agrees() -> None:
    idle = {"down_kib_per_s": 0}
    rules = ValueRulesConfig()
    one = Attention(rules=rules)
    many = Attention(rules=rules)
    n = 200
    ids = [i.to_bytes(32, "big") for i in range(n)]
    sources = [NETWORK if i % 50 == 49 else SHELL for i in range(n)]
    times = [T0 + i * S for i in range(n)]
    subjects = ["network" if s == NETWORK else "" for s in sources]
    readings = [idle if s == NETWORK else None for s in sources]
    singly = []
    for i in range(n):
        for h, d in one.observe(ids[i], sources[i], 1, times[i], IDLE, subjects[i], readings[i]):
            singly.append((i, h, d))
    batched = many.observe_batch(ids, sources, [1] * n, times, lambda i: IDLE, subjects, readings)
    assert batched == singly
    assert not [h for _, h, _ in batched if h.probe == "novelty" and sources[h.seq] == NETWORK]
