"""Why the gate decided as it did: one :class:`Reason` per decision, made by :func:`reason_of`
from the stored ``attention.decision`` payload alone (settings may have changed since).

Every surface (``nerve audit held``, the web UI's Attention pages, MCP's ``highlights`` and
``ask``, ``nerve ask "why was … held?"``, the audit notebook) renders this one value, so a
decision is explained the same way everywhere. What each rule compared, from the decision:

- ``surface``: the gate's value beat the interruption cost plus the margin, and the budget
  could pay: ``charged_uj`` left it at ``budget_after_uj``;
- ``hold:value``: the value did not beat the cost plus the margin (the margin is a setting,
  not stored: the sentence says by how much the value beat the cost, if at all);
- ``hold:budget``: the value did beat it, but the budget (after its refill) was below the
  price of a surfacing;
- ``hold:direction`` (a gate rule, :mod:`nerve.attention.rules`): a value probe fired the
  other way than the one that matters for its reading; value and cost were not compared;
- a ``drift`` (a gate rule, :mod:`nerve.attention.drift`; ``kind`` says so) is a reading
  creeping steadily the way that matters: ``rate_per_h`` and ``eta_s`` give its rate and
  the projected time to no headroom; the gate then decided it as any confirmed excursion;
- ``hold:transient`` (a gate rule): a fire in the direction of concern was not confirmed;
  the reading stored is the one that ended it, and ``held`` the one check it failed with
  its figures (:meth:`nerve.attention.rules.Rules.resolve`): it fell back short of its bar,
  stopped growing, stayed under its floor, or was explained by a parallel job or a
  download. A decision recorded before ``held`` was stored says only which of these it
  may have been (within the fire's spread of its baseline it plainly fell back).

Beside the rule, a reason carries the decision's **cause**, what happened and where
(:func:`nerve.attention.cause.cause_of`), and its **delivery**: why a surfacing was not sent
to the person (muted, quiet hours, do not disturb: delivery filters the daemon applies after
the gate, written into the decision; the outcome stays ``surface``).

Gate figures are thousandths (shown as decimals), budgets µJ (shown as mJ), and a value
probe's reading is in the reading's own unit (shown with the unit its name ends in).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Literal

from nerve.attention.cause import cause_of

__all__ = ["Reason", "Rule", "decision_json", "decision_line", "reason_of", "thousandths"]

Rule = Literal["surfaced", "value", "budget", "direction", "transient", "unknown"]
_RULES: dict[str, Rule] = {
    "surface": "surfaced",
    "hold:value": "value",
    "hold:budget": "budget",
    "hold:direction": "direction",
    "hold:transient": "transient",
}
_VALUE_PREFIX = "value:"  # nerve.attention.values.VALUE_PREFIX, without its import
# A reading's name ending -> (divisor, unit) for its plain rendering.
_UNITS: tuple[tuple[str, int, str], ...] = (
    ("_permille", 10, " %"),
    ("_centi", 100, ""),
    ("_kib_per_s", 1, " KiB/s"),
    ("_mib", 1, " MiB"),
    ("_bytes", 1, " bytes"),
    ("per_min", 1, " a minute"),
)


@dataclass(frozen=True, slots=True)
class Reason:
    """One decision's reason: its outcome, the rule that decided it and the figures that rule
    compared (``None`` where the stored decision lacks one)."""

    outcome: str
    rule: Rule
    probe: str
    value_milli: int | None = None
    cost_milli: int | None = None
    budget_before_uj: int | None = None
    charged_uj: int | None = None
    budget_after_uj: int | None = None
    reading: int | None = None  # the highlight's reading (own unit for a value probe)
    baseline: int | None = None
    sigma: int | None = None
    direction: int = 0  # +1 a rise, -1 a fall, 0 not known
    kind: str = ""  # the fire's kind: record, unseen, surprise, trend, return, floor, drift
    rate_per_h: int | None = None  # a drift's steady rate, the reading's unit per hour
    eta_s: int | None = None  # a drift's projected seconds to no headroom (0: not known)
    cause: str = ""  # what happened and where (nerve.attention.cause)
    failed: Mapping[str, Any] | None = None  # hold:transient: the check it failed, figures
    delivery: str | None = None  # why a surfacing was not sent ("muted until 21:30")

    @property
    def held(self) -> bool:
        return self.outcome.startswith("hold:")

    def words(self) -> str:
        """One sentence a person understands, figures in plain units (and, for a surfacing
        not sent, why not)."""
        said = _WORDS.get(self.rule, _unknown)(self)
        return (
            said
            if self.delivery is None
            else f"{said}; not sent as a notification: " + (self.delivery)
        )

    def to_json(self) -> dict[str, Any]:
        """The reason as plain JSON: rule, figures and its sentence."""
        out = {name: getattr(self, name) for name in self.__slots__}
        return {**out, "words": self.words()}


def decision_json(decision: Mapping[str, Any]) -> dict[str, Any]:
    """One decision as ``nerve attend --follow --json`` prints it: where it is (chain seq,
    source event), what it is about and why it went as it did."""
    reason = reason_of(decision)
    return {
        "chain_seq": decision.get("chain_seq"),
        "source_event": decision.get("source_event"),
        "outcome": reason.outcome,
        "probe": reason.probe,
        "cause": reason.cause,
        "delivery": reason.delivery,
        "words": reason.words(),
    }


def decision_line(decision: Mapping[str, Any]) -> str:
    """One decision in one line: ``surface value:cpu.busy_permille: <cause> — <reason>``."""
    reason = reason_of(decision)
    return f"{reason.outcome} {reason.probe}: {reason.cause} — {reason.words()}"


def reason_of(decision: Mapping[str, Any]) -> Reason:
    """The reason of one stored ``attention.decision`` payload (as ``nerve audit held``,
    ``ws.audit.decisions()`` and MCP read it)."""
    hl = decision.get("highlight")
    hl = hl if isinstance(hl, Mapping) else {}
    outcome = str(decision.get("outcome") or "")
    reading, baseline = _int(hl.get("value_milli")), _int(hl.get("baseline_milli"))
    return Reason(
        outcome=outcome,
        rule=_RULES.get(outcome, "unknown"),
        probe=str(decision.get("probe") or hl.get("probe") or "?"),
        value_milli=_int(decision.get("value_milli")),
        cost_milli=_int(decision.get("cost_milli")),
        budget_before_uj=_int(decision.get("budget_before_uj")),
        charged_uj=_int(decision.get("charged_uj")),
        budget_after_uj=_int(decision.get("budget_after_uj")),
        reading=reading,
        baseline=baseline,
        sigma=_int(hl.get("sigma_milli")),
        direction=_direction(_int(hl.get("direction")), reading, baseline),
        kind=str(hl.get("kind") or ""),
        rate_per_h=_int(hl.get("rate_per_h")),
        eta_s=_int(hl.get("eta_s")),
        cause=cause_of(decision),
        failed=_held(hl.get("held")),
        delivery=_text(decision.get("delivery")),
    )


def _held(value: object) -> Mapping[str, Any] | None:
    return dict(value) if isinstance(value, Mapping) and "check" in value else None


def _text(value: object) -> str | None:
    return value if isinstance(value, str) and value else None


def _int(value: object) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def _direction(stored: int | None, reading: int | None, baseline: int | None) -> int:
    """The fire's direction as stored, else the side of its baseline the reading is on."""
    if stored:
        return 1 if stored > 0 else -1
    if reading is None or baseline is None or reading == baseline:
        return 0
    return 1 if reading > baseline else -1


# -- rendering -------------------------------------------------------------------------------


def thousandths(milli: int | None) -> str:
    """Thousandths as a decimal: 542 -> 0.542, 1000 -> 1."""
    if milli is None:
        return "?"
    return f"{milli / 1000:.3f}".rstrip("0").rstrip(".")


def _mj(uj: int | None) -> str:
    """Microjoules in millijoules: 250000 -> 250 mJ."""
    if uj is None:
        return "? mJ"
    return f"{uj / 1000:,.1f}".removesuffix(".0") + " mJ"


def _name(r: Reason) -> str:
    return r.probe.removeprefix(_VALUE_PREFIX)


def _reading(r: Reason, value: int | None) -> str:
    """A reading in its name's unit (a value probe), else a decimal of thousandths."""
    if value is None:
        return "?"
    if not r.probe.startswith(_VALUE_PREFIX):
        return thousandths(value)
    key = _name(r).split(":", 1)[0]
    for ending, divisor, unit in _UNITS:
        if key.endswith(ending):
            shown = f"{value / divisor:,.1f}".removesuffix(".0") if divisor > 1 else f"{value:,}"
            return shown + unit
    return f"{value:,}"


def _moved(r: Reason) -> str:
    way = {1: "rose", -1: "fell"}.get(r.direction, "moved")
    return f"{_name(r)} {way} to {_reading(r, r.reading)} from a baseline of " + _reading(
        r, r.baseline
    )


def _surfaced(r: Reason) -> str:
    return (
        f"surfaced: its value {thousandths(r.value_milli)} beat the interruption cost "
        f"{thousandths(r.cost_milli)} plus the margin, and the attention budget paid "
        f"{_mj(r.charged_uj)} ({_mj(r.budget_before_uj)} → {_mj(r.budget_after_uj)})"
    )


def _value(r: Reason) -> str:
    v, c = r.value_milli, r.cost_milli
    if v is not None and c is not None and v > c:
        return (
            f"held, not worth an interruption: its value {thousandths(v)} beat the interruption "
            f"cost {thousandths(c)} by only {thousandths(v - c)}, not by more than the margin"
        )
    return (
        f"held, not worth an interruption: its value {thousandths(v)} did not beat the "
        f"interruption cost {thousandths(c)}"
    )


def _budget(r: Reason) -> str:
    return (
        f"held for the budget: worth an interruption (its value {thousandths(r.value_milli)} beat "
        f"the interruption cost {thousandths(r.cost_milli)} plus the margin), but the attention "
        f"budget held only {_mj(r.budget_before_uj)}, less than the price of a surfacing"
    )


def _against(r: Reason) -> str:
    wanted = {1: "a fall", -1: "a rise"}.get(r.direction, "the other direction")
    return f"held, the harmless direction: {_moved(r)}, and only {wanted} matters for it"


def _transient(r: Reason) -> str:
    if r.failed is not None:
        said = _HELD.get(str(r.failed["check"]))
        if said is not None:
            return "held as passing: " + said(r, r.failed)
    if _fell_back(r):
        return (
            f"held as passing: it did not last, {_name(r)} was back to "
            f"{_reading(r, r.reading)} (baseline {_reading(r, r.baseline)}, spread "
            f"{_reading(r, r.sigma)}) before the excursion could be confirmed"
        )
    return (
        f"held as passing: it was not confirmed, at {_reading(r, r.reading)} (baseline "
        f"{_reading(r, r.baseline)}) {_name(r)} had fallen back short of its bar, stayed "
        "under its floor, stopped growing or was explained by a parallel job or a download"
    )


def _after(held: Mapping[str, Any]) -> str:
    """The seconds a pending fire lasted, in words: "within 40 s", "within 2 min"."""
    seconds = _int(held.get("after_s"))
    if seconds is None:
        return "before it was confirmed"
    return f"within {seconds} s" if seconds < 120 else f"within {seconds // 60} min"


def _held_fell_back(r: Reason, held: Mapping[str, Any]) -> str:
    bar, way = _int(held.get("bar")), {1: "above", -1: "below"}.get(r.direction, "from")
    line = None if bar is None or r.baseline is None else r.baseline + r.direction * bar
    return (
        f"{_name(r)} fell back to {_reading(r, r.reading)} {_after(held)} (it had to stay "
        f"{way} {_reading(r, line)}, baseline {_reading(r, r.baseline)})"
    )


def _held_stopped_growing(r: Reason, held: Mapping[str, Any]) -> str:
    return (
        f"{_name(r)} stopped growing: at {_reading(r, r.reading)} {_after(held)}, not "
        f"{_reading(r, _int(held.get('need')))} past the {_reading(r, _int(held.get('fired_at')))}"
        f" it fired at (baseline {_reading(r, r.baseline)})"
    )


def _held_under_floor(r: Reason, held: Mapping[str, Any]) -> str:
    return (
        f"{_name(r)} stayed under its floor: {_reading(r, r.reading)} {_after(held)}, "
        f"below {_reading(r, _int(held.get('floor')))} (baseline {_reading(r, r.baseline)})"
    )


def _held_parallel_job(r: Reason, held: Mapping[str, Any]) -> str:
    busy, top = _int(held.get("busy_permille")), _int(held.get("top_permille"))
    cores = _int(held.get("cores_milli"))
    used = "?" if busy is None or cores is None else thousandths(busy * cores // 1000)
    return (
        f"explained by a parallel job: processes adding up to {used} cores, none past one "
        f"(the busiest at {thousandths(top)} of a core; the machine {thousandths(busy)} busy of at "
        f"least {thousandths(cores)} cores)"
    )


def _held_download(r: Reason, held: Mapping[str, Any]) -> str:
    down = _int(held.get("down_kib_per_s"))
    shown = "?" if down is None else f"{down:,} KiB/s"
    return f"explained by a download: the network bringing data in at {shown}"


_HELD = {
    "fell_back": _held_fell_back,
    "stopped_growing": _held_stopped_growing,
    "under_floor": _held_under_floor,
    "parallel_job": _held_parallel_job,
    "download": _held_download,
}


def _fell_back(r: Reason) -> bool:
    """Whether the ending reading was within the fire's spread of its baseline (the rule's
    bar is at least that spread, so the excursion plainly did not hold)."""
    if r.reading is None or r.baseline is None or r.sigma is None or not r.direction:
        return False
    return r.direction * (r.reading - r.baseline) < max(r.sigma, 1)


def _unknown(r: Reason) -> str:
    return f"{r.outcome or 'no outcome'}: not an outcome this version of nerve knows"


_WORDS = {
    "surfaced": _surfaced,
    "value": _value,
    "budget": _budget,
    "direction": _against,
    "transient": _transient,
}
