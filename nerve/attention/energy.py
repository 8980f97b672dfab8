"""Honest energy figures (Sense v0.1 §7).

Every metered figure is a pair of integer microjoules: ``estimated_uj`` (always present) and
``measured_uj`` (present only from a live hardware counter), tagged with a
:class:`Provenance`. The honesty invariant, enforced on construction:

- ``HW_SHUNT`` requires ``measured_uj``;
- ``ESTIMATOR`` and ``MODEL_BASED`` forbid it (a measurement comes only from live hardware).

A figure is never promoted: nothing here turns an estimate into a measurement. A
deterministic answer costs :meth:`Energy.zero`, an honest zero estimate.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import IntEnum
from typing import Any

from nerve.errors import EventError


class Provenance(IntEnum):
    """How a figure was obtained; the integer codes are stable and stored in sealed links."""

    HW_SHUNT = 0
    MODEL_BASED = 1
    ESTIMATOR = 2

    @property
    def label(self) -> str:
        """The Sense v0.1 name: ``HwShunt``, ``ModelBased`` or ``Estimator``."""
        return _LABELS[self]


_LABELS = {
    Provenance.HW_SHUNT: "HwShunt",
    Provenance.MODEL_BASED: "ModelBased",
    Provenance.ESTIMATOR: "Estimator",
}


def _check_uj(name: str, value: object) -> None:
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise EventError(f"energy {name} must be a non-negative integer of µJ, got {value!r}")


@dataclass(frozen=True, slots=True)
class Energy:
    """An integer-microjoule figure with its provenance; see the module docstring."""

    estimated_uj: int
    measured_uj: int | None
    provenance: Provenance

    def __post_init__(self) -> None:
        _check_uj("estimated_uj", self.estimated_uj)
        if self.measured_uj is not None:
            _check_uj("measured_uj", self.measured_uj)
        provenance = Provenance(self.provenance)
        object.__setattr__(self, "provenance", provenance)
        if provenance is Provenance.HW_SHUNT and self.measured_uj is None:
            raise EventError("energy: HwShunt provenance requires measured_uj")
        if provenance is not Provenance.HW_SHUNT and self.measured_uj is not None:
            raise EventError(f"energy: {provenance.label} provenance forbids measured_uj")

    @classmethod
    def estimate(cls, uj: int) -> Energy:
        """An ``Estimator`` figure of ``uj`` microjoules."""
        return cls(uj, None, Provenance.ESTIMATOR)

    @classmethod
    def zero(cls) -> Energy:
        """The honest zero estimate a deterministic answer or a hold costs."""
        return cls(0, None, Provenance.ESTIMATOR)

    @classmethod
    def model_based(cls, uj: int) -> Energy:
        """A figure from a power model (never a measurement)."""
        return cls(uj, None, Provenance.MODEL_BASED)

    @classmethod
    def measured(cls, uj: int, estimated_uj: int) -> Energy:
        """A ``HwShunt`` reading; only for a counter shown live for the domain it claims."""
        return cls(estimated_uj, uj, Provenance.HW_SHUNT)

    def to_cbor_map(self) -> dict[str, int]:
        """``{"estimated_uj", "provenance"[, "measured_uj"]}`` as text → int, for det-CBOR."""
        out = {"estimated_uj": self.estimated_uj, "provenance": int(self.provenance)}
        if self.measured_uj is not None:
            out["measured_uj"] = self.measured_uj
        return out

    @classmethod
    def from_cbor_map(cls, data: dict[str, Any]) -> Energy:
        """Inverse of :meth:`to_cbor_map`; raises ``EventError`` on a bad map."""
        extra = set(data) - {"estimated_uj", "provenance", "measured_uj"}
        if extra or "estimated_uj" not in data or "provenance" not in data:
            raise EventError(f"energy map has wrong keys: {sorted(data)}")
        try:
            provenance = Provenance(data["provenance"])
        except ValueError:
            raise EventError(f"energy provenance code {data['provenance']!r} is not 0..2") from None
        return cls(data["estimated_uj"], data.get("measured_uj"), provenance)

    def to_json(self) -> dict[str, Any]:
        """A JSON form with the provenance by name."""
        return {
            "estimated_uj": self.estimated_uj,
            "measured_uj": self.measured_uj,
            "provenance": self.provenance.label,
        }
