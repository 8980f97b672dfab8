"""What a sealed decision link records, as the chain sees it: the outcomes a decision may
have, and the shapes of the highlight and the decision it seals.

Here so that the chain needs nothing from ``nerve.attention``: attention's ``Highlight``
and ``Decision`` fit these protocols, and its gate takes its outcomes from here.
"""

from __future__ import annotations

from typing import Literal, Protocol

__all__ = ["OUTCOMES", "RULE_OUTCOMES", "SEALABLE", "Outcome", "SealedDecision", "SealedHighlight"]

Outcome = Literal["surface", "hold:value", "hold:budget", "hold:direction", "hold:transient"]
# The budget gate's outcomes; the gate rules for value probes add theirs.
OUTCOMES: tuple[Outcome, ...] = ("surface", "hold:value", "hold:budget")
RULE_OUTCOMES: tuple[Outcome, ...] = ("hold:direction", "hold:transient")
SEALABLE: tuple[Outcome, ...] = OUTCOMES + RULE_OUTCOMES


class _Measured(Protocol):
    def to_cbor_map(self) -> dict[str, int]: ...


class SealedHighlight(Protocol):
    """The detector fire a decision answers."""

    @property
    def probe(self) -> str: ...

    def to_cbor_map(self) -> dict[str, int | str]: ...


class SealedDecision(Protocol):
    """The gate's decision, its figures and the energy it cost."""

    @property
    def outcome(self) -> Outcome: ...
    @property
    def value_milli(self) -> int: ...
    @property
    def cost_milli(self) -> int: ...
    @property
    def charged_uj(self) -> int: ...
    @property
    def budget_after_uj(self) -> int: ...
    @property
    def energy(self) -> _Measured: ...
