"""The attention-budget gate (Sense v0.1 §5).

A highlight surfaces only when its value beats the interruption cost plus a margin AND the
joule budget can pay the surfacing's price. In order, :meth:`Gate.decide`:

1. refills the budget for the HLC physical time elapsed since the last decision
   (``refill_uj_per_s`` per second, in integer nanoseconds, remainders carried, capped at
   ``budget_capacity_uj``; time that goes backwards refills nothing);
2. value test: ``value = score_milli`` (× ``uncertainty_discount_milli / 1000`` for an
   ``uncertainty`` highlight); ``cost = engagement × displacement / 1000`` plus
   ``interference_milli`` if the surfacing modality is the user's active one. Unless
   ``value > cost + margin_milli`` the outcome is ``hold:value`` and nothing is charged;
3. budget test: if the budget is below ``surface_cost_uj`` the outcome is ``hold:budget``;
4. otherwise ``surface``, and the price is debited. The budget never goes negative.

All figures are integers; divisions round half-up.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from nerve.attention.detector import Highlight
from nerve.attention.energy import Energy
from nerve.attention.observer import round_div
from nerve.errors import EventError

if TYPE_CHECKING:  # only a name: the chain package loads its crypto when imported
    from nerve.chain.records import Outcome

Modality = Literal["visual", "audio", "none"]
SNAPSHOT_VERSION = 1
_NS_PER_S = 1_000_000_000


class GateConfig(BaseModel):
    """Gate tuning, all integers (thousandths, microjoules).

    - ``uncertainty_discount_milli`` (500): an uncertainty highlight's value is halved.
    - ``displacement_per_engagement_milli`` (600): a fully engaged user (1000) costs 0.6.
    - ``interference_milli`` (300): added when the surfacing modality is the active one.
    - ``margin_milli`` (50): value must beat cost by more than 0.05.
    - ``surface_cost_uj`` (250_000): one surfacing costs 0.25 J.
    - ``budget_capacity_uj`` (1_000_000): the budget holds at most 1 J (it starts full).
    - ``refill_uj_per_s`` (5_000): the budget refills 5 mJ per second (one surfacing / 50 s).
    - ``surface_modality`` ("visual"): the modality a surfacing occupies.
    """

    model_config = ConfigDict(extra="forbid", frozen=True, strict=True)

    uncertainty_discount_milli: Annotated[int, Field(ge=0, le=1000)] = 500
    displacement_per_engagement_milli: Annotated[int, Field(ge=0)] = 600
    interference_milli: Annotated[int, Field(ge=0)] = 300
    margin_milli: Annotated[int, Field(ge=0)] = 50
    surface_cost_uj: Annotated[int, Field(ge=0)] = 250_000
    budget_capacity_uj: Annotated[int, Field(ge=0)] = 1_000_000
    refill_uj_per_s: Annotated[int, Field(ge=0)] = 5_000
    surface_modality: Literal["visual", "audio"] = "visual"


@dataclass(frozen=True, slots=True)
class UserContext:
    """What the user is doing: engagement (0..1000) and the modality they are using."""

    engagement_milli: int = 0
    active_modality: Modality = "none"

    def __post_init__(self) -> None:
        e = self.engagement_milli
        if isinstance(e, bool) or not isinstance(e, int) or not 0 <= e <= 1000:
            raise EventError(f"engagement_milli {e!r} must be an integer 0..1000")
        if self.active_modality not in ("visual", "audio", "none"):
            raise EventError(f"active_modality {self.active_modality!r} is not visual/audio/none")


@dataclass(frozen=True, slots=True)
class Decision:
    """One gate decision. ``budget_before_uj`` is after the refill, before any charge."""

    outcome: Outcome
    value_milli: int
    cost_milli: int
    charged_uj: int
    budget_before_uj: int
    budget_after_uj: int
    energy: Energy

    @property
    def surfaced(self) -> bool:
        return self.outcome == "surface"


class Gate:
    """Scores highlights against interruption cost and a refilling joule budget."""

    def __init__(self, config: GateConfig | None = None) -> None:
        self.config = config or GateConfig()
        self._budget = self.config.budget_capacity_uj
        self._last_ns: int | None = None
        self._carry = 0  # refill remainder, in µJ·ns / s units below one µJ

    @property
    def budget_uj(self) -> int:
        return self._budget

    def refill(self, now_ns: int) -> None:
        """Add the refill for the time since the last call (the first call only sets the time)."""
        last = self._last_ns
        if last is not None and now_ns <= last:
            return
        self._last_ns = now_ns
        if last is None:
            return
        earned = (now_ns - last) * self.config.refill_uj_per_s + self._carry
        gained, self._carry = divmod(earned, _NS_PER_S)
        self._budget += gained
        if self._budget >= self.config.budget_capacity_uj:
            self._budget, self._carry = self.config.budget_capacity_uj, 0

    def value_of(self, highlight: Highlight) -> int:
        """The highlight's value in thousandths: its score, discounted if it is uncertainty."""
        if highlight.probe == "uncertainty":
            return round_div(highlight.score_milli * self.config.uncertainty_discount_milli, 1000)
        return highlight.score_milli

    def cost_of(self, ctx: UserContext) -> int:
        """Interruption cost in thousandths: displacement plus interference."""
        c = self.config
        cost = round_div(ctx.engagement_milli * c.displacement_per_engagement_milli, 1000)
        return cost + (c.interference_milli if ctx.active_modality == c.surface_modality else 0)

    def decide(
        self, highlight: Highlight, ctx: UserContext, now_ns: int, at_least_milli: int = 0
    ) -> Decision:
        """Refill, then value test, then budget test; debit only on ``surface``. The value is
        at least ``at_least_milli`` (a confirmed excursion's worth, see
        :mod:`nerve.attention.rules`)."""
        self.refill(now_ns)
        value = max(self.value_of(highlight), at_least_milli)
        cost, before = self.cost_of(ctx), self._budget
        price = self.config.surface_cost_uj
        if value <= cost + self.config.margin_milli:
            outcome: Outcome = "hold:value"
        elif before < price:
            outcome = "hold:budget"
        else:
            outcome = "surface"
            self._budget -= price
        charged = price if outcome == "surface" else 0
        energy = Energy.estimate(charged) if charged else Energy.zero()
        return Decision(outcome, value, cost, charged, before, self._budget, energy)

    def hold(
        self, highlight: Highlight, ctx: UserContext, now_ns: int, outcome: Outcome
    ) -> Decision:
        """A decision a gate rule took (``hold:direction``, ``hold:transient``): refill, give
        the figures, charge nothing."""
        self.refill(now_ns)
        value, cost, budget = self.value_of(highlight), self.cost_of(ctx), self._budget
        return Decision(outcome, value, cost, 0, budget, budget, Energy.zero())

    def snapshot(self) -> dict[str, Any]:
        """Plain JSON state: budget, last refill time and the refill remainder."""
        return {
            "v": SNAPSHOT_VERSION,
            "budget_uj": self._budget,
            "last_ns": self._last_ns,
            "carry": self._carry,
        }

    def restore(self, snapshot: Mapping[str, Any]) -> None:
        """Replace state with ``snapshot``; raises ``EventError`` if it is malformed."""
        if snapshot.get("v") != SNAPSHOT_VERSION:
            raise EventError(f"gate snapshot version {snapshot.get('v')!r} is not 1")
        last = snapshot.get("last_ns")
        budget, carry = _uint(snapshot, "budget_uj"), _uint(snapshot, "carry")
        self._budget = min(budget, self.config.budget_capacity_uj)
        self._last_ns = None if last is None else _uint(snapshot, "last_ns")
        self._carry = carry % _NS_PER_S


def _uint(snapshot: Mapping[str, Any], key: str) -> int:
    value = snapshot.get(key)
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise EventError(f"gate snapshot: {key} must be an integer >= 0, got {value!r}")
    return value
