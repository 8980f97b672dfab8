"""Conformance checkers C3 (attention) and C5 (chain integrity), Sense v0.1 §9.

:mod:`nerve.conformance.runner` adds :data:`CHECKERS` to its own table. The
JSON forms of highlights, decisions and user contexts defined here are the ones the vectors
publish; ``conformance/generate_attention.py`` writes the vectors with the same functions,
and ``conformance/README.md`` describes every field.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import asdict
from typing import Any

from nerve.attention.detector import Highlight
from nerve.attention.gate import Decision, Gate, GateConfig, UserContext
from nerve.attention.pipeline import Attention, PipelineConfig
from nerve.attention.values import ValueParams
from nerve.chain import Keyring, verify_chain
from nerve.chain.links import digest, parse_link
from nerve.chain.records import OUTCOMES

Record = dict[str, Any]


_RULE_FIELDS = ("kind", "direction", "rate_per_h", "eta_s", "held")  # derived, not in C3/C3V


def highlight_to_json(highlight: Highlight) -> Record:
    """``probe``, ``value_milli``, ``baseline_milli``, ``sigma_milli``, ``score_milli``, ``seq``
    (the fire's ``kind`` and ``direction`` feed the gate rules, and ``held`` is what they
    found, all of which C3 leaves off)."""
    return {k: v for k, v in asdict(highlight).items() if k not in _RULE_FIELDS}


def decision_to_json(decision: Decision) -> Record:
    """The decision's outcome, value, cost, charge, budget before/after and energy figure."""
    return {
        "outcome": decision.outcome,
        "value_milli": decision.value_milli,
        "cost_milli": decision.cost_milli,
        "charged_uj": decision.charged_uj,
        "budget_before_uj": decision.budget_before_uj,
        "budget_after_uj": decision.budget_after_uj,
        "energy": decision.energy.to_json(),
    }


def context_to_json(ctx: UserContext) -> Record:
    return {"engagement_milli": ctx.engagement_milli, "active_modality": ctx.active_modality}


def context_from_json(obj: Record) -> UserContext:
    return UserContext(obj["engagement_milli"], obj["active_modality"])


def run_stream(
    config: PipelineConfig, stream: Sequence[Record], ctx: UserContext
) -> list[tuple[int, Highlight, Decision]]:
    """Feed the stream through a fresh pipeline: ``(event index, highlight, decision)``.

    An event with ``subject`` and ``readings`` (C3V) also steps its value probes."""
    attention, out = Attention(config), []
    for index, ev in enumerate(stream):
        event_id = bytes.fromhex(ev["event_id"])
        pairs = attention.observe(
            event_id, ev["source"], ev["trust"], ev["hlc_physical_ns"], ctx,
            ev.get("subject", ""), ev.get("readings"),
        )  # fmt: skip
        out += [(index, h, d) for h, d in pairs]
    return out


def idle_pass(config: PipelineConfig, stream: Sequence[Record], ctx: UserContext) -> list[Record]:
    """:func:`run_stream` as records ``{"event": index, "highlight": …, "decision": …}``."""
    return [
        {"event": index, "highlight": highlight_to_json(h), "decision": decision_to_json(d)}
        for index, h, d in run_stream(config, stream, ctx)
    ]


def busy_pass(
    gate_config: GateConfig,
    ctx: UserContext,
    stream: Sequence[Record],
    highlights: Sequence[Record],
) -> list[Record]:
    """Gate the idle pass's highlights again, with a fresh gate, at their events' times.

    Each record is ``{"highlight": index in the idle pass, "hlc_physical_ns": …,
    "decision": …}``.
    """
    gate, records = Gate(gate_config), []
    for index, record in enumerate(highlights):
        t_ns = stream[record["event"]]["hlc_physical_ns"]
        decision = gate.decide(Highlight(**record["highlight"]), ctx, t_ns)
        records.append(
            {"highlight": index, "hlc_physical_ns": t_ns, "decision": decision_to_json(decision)}
        )
    return records


def _first_difference(name: str, got: list[Record], want: list[Record]) -> str | None:
    if len(got) != len(want):
        return f"{name}: {len(got)} decisions, published {len(want)}"
    for index, (g, w) in enumerate(zip(got, want, strict=True)):
        if g != w:
            keys = sorted(k for k in g.keys() | w.keys() if g.get(k) != w.get(k))
            return f"{name} decision {index}: {keys} differ: got {g}, published {w}"
    return None


def _outcome_counts(records: list[Record]) -> str:
    counts = Counter(r["decision"]["outcome"] for r in records)
    return ", ".join(f"{counts[o]} {o}" for o in OUTCOMES if counts[o])


def check_c3(vec: dict[str, Any]) -> tuple[bool, str]:
    """The stream's highlights and decisions, then the busy re-gating, match exactly."""
    config = PipelineConfig.model_validate(vec["config"])
    listed = config.model_dump()
    if "values" not in vec["config"]:  # C3 predates value probes; its streams have none
        del listed["values"]
    if listed != vec["config"]:
        return False, "config must list every parameter explicitly"
    stream, idle_vec, busy_vec = vec["stream"], vec["idle"], vec["busy"]
    idle = idle_pass(config, stream, context_from_json(idle_vec["context"]))
    busy_gate = GateConfig.model_validate(busy_vec["gate"])
    busy = busy_pass(busy_gate, context_from_json(busy_vec["context"]), stream, idle)
    problem = _first_difference("idle", idle, idle_vec["decisions"]) or _first_difference(
        "busy", busy, busy_vec["decisions"]
    )
    if problem is not None:
        return False, problem
    missing = [o for o in OUTCOMES if o not in {r["decision"]["outcome"] for r in busy}]
    if missing:
        return False, f"busy pass lacks outcome(s) {missing}"
    left = busy[-1]["decision"]["budget_after_uj"]
    return True, (
        f"{len(stream)} events → {len(idle)} highlights; idle: {_outcome_counts(idle)}; "
        f"busy: {_outcome_counts(busy)}, {left} µJ left"
    )


def check_c3v(vec: dict[str, Any]) -> tuple[bool, str]:
    """Value probes: a stream of readings gives exactly the published highlights and decisions."""
    config = PipelineConfig.model_validate(vec["config"])
    if config.model_dump() != vec["config"]:
        return False, "config must list every parameter explicitly, values included"
    stream, idle_vec = vec["stream"], vec["idle"]
    idle = idle_pass(config, stream, context_from_json(idle_vec["context"]))
    problem = _first_difference("idle", idle, idle_vec["decisions"])
    if problem is not None:
        return False, problem
    probes = sorted({r["highlight"]["probe"] for r in idle})
    summary = (
        f"{len(stream)} events → {len(idle)} value highlights ({', '.join(probes)}); "
        f"{_outcome_counts(idle)}"
    )
    if "ranged" not in vec:  # C3V as first published: the predictions alone
        return True, summary
    ranged_vec = vec["ranged"]
    values = ValueParams.model_validate(ranged_vec["values"])
    if values.model_dump() != ranged_vec["values"]:
        return False, "ranged values must list every parameter explicitly"
    ranged_config = config.model_copy(update={"values": values})
    ranged = idle_pass(ranged_config, stream, context_from_json(idle_vec["context"]))
    problem = _first_difference("ranged", ranged, ranged_vec["decisions"])
    if problem is not None:
        return False, problem
    return True, f"{summary}; ranged: {len(ranged)} ({_outcome_counts(ranged)})"


def _break_of(links: list[bytes], key: bytes) -> Record:
    report = verify_chain(links, pinned_key=key)
    brk = report.first_break
    return {
        "ok": report.ok,
        "links": report.links,
        "seq": None if brk is None else brk.seq,
        "kind": None if brk is None else brk.kind,
    }


def chain_summary(links: list[bytes], key: bytes, middle: int) -> Record:
    """What the C5 vector publishes about ``links``: ids, kinds, both verifications."""
    report = verify_chain(links, pinned_key=key)
    return {
        "link_ids": [lid.hex() for lid in report.ids],
        "kinds": [parse_link(raw).core.get("kind") for raw in links],
        "verify": _break_of(links, key),
        "middle": middle,
        "excised": _break_of(links[:middle] + links[middle + 1 :], key),
    }


def _genesis_problem(vec: dict[str, Any], links: list[bytes], key: bytes) -> str | None:
    """``log_id`` must be ``blake3(pinned_key + nonce)``, and the genesis link must carry both."""
    nonce, log_id = bytes.fromhex(vec["nonce"]), bytes.fromhex(vec["log_id"])
    if digest(key + nonce) != log_id:
        return "log_id is not blake3(pinned_key + nonce)"
    core = parse_link(links[0]).core if links else {}
    if (core.get("key"), core.get("nonce"), core.get("log")) != (key, nonce, log_id):
        return "the genesis link's key, nonce or log id differ from the published ones"
    return None


def check_c5(vec: dict[str, Any]) -> tuple[bool, str]:
    """The log verifies to n links; excising the middle link breaks it where published."""
    links = [bytes.fromhex(h) for h in vec["links"]]
    key = bytes.fromhex(vec["pinned_key"])
    if Keyring.ephemeral(bytes.fromhex(vec["seed"])).public_key() != key:
        return False, "pinned_key is not the public key of the published seed"
    problem = _genesis_problem(vec, links, key)
    if problem is not None:
        return False, problem
    if vec["middle"] != len(links) // 2:
        return False, f"middle {vec['middle']} is not link {len(links) // 2} of {len(links)}"
    got = chain_summary(links, key, vec["middle"])
    for field in ("link_ids", "kinds", "verify", "excised"):
        if got[field] != vec[field]:
            return False, f"{field}: got {got[field]}, published {vec[field]}"
    if not got["verify"]["ok"] or got["verify"]["links"] != len(links):
        return False, f"the published log does not verify whole: {got['verify']}"
    cut = got["excised"]
    if (cut["seq"], cut["kind"]) != (vec["middle"], "excised"):
        return False, f"excising link {vec['middle']} must break there as excised, not {cut}"
    return True, (
        f"{len(links)} links verify; excising link {vec['middle']} breaks at "
        f"seq {cut['seq']} ({cut['kind']})"
    )


CHECKERS = {"C3": check_c3, "C3V": check_c3v, "C5": check_c5}
