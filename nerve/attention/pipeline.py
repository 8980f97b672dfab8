"""The attention pipeline: observer → detector → gate, as one deterministic object.

:class:`AttentionConfig` is the ``attention:`` section of ``nerve.yaml``::

    attention:
      window: 64                 # observer recency window (observations)
      detector:                  # see DetectorParams
        alpha_num: 1             # EMA weight alpha = 1/8
        alpha_den: 8
        k_milli: 3000            # fire above mean + 3.0 sigma
        floor_milli: 500         # never fire below 0.5
        min_sigma_milli: 50      # sigma is at least 0.05
        debounce: 8              # readings of a probe muted after it fires
        warmup: 8                # readings of a probe that only build its baseline
      gate:                      # see GateConfig
        uncertainty_discount_milli: 500
        displacement_per_engagement_milli: 600
        interference_milli: 300
        margin_milli: 50
        surface_cost_uj: 250000  # 0.25 J per surfacing
        budget_capacity_uj: 1000000
        refill_uj_per_s: 5000
        surface_modality: visual
      values:                    # value probes, see ValueParams (nerve.attention.values)
        k_milli: 5000            # fire beyond 5 typical errors of the best prediction
        peak_ratio_milli: 1500   # ... and 1.5 times the largest recent surprise
        debounce: 12
        warmup: 16

Every key is optional; unknown keys are rejected.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Annotated, Any

from pydantic import BaseModel, ConfigDict, Field

from nerve.attention.detector import Detector, DetectorParams, Highlight
from nerve.attention.gate import Decision, Gate, GateConfig, UserContext
from nerve.attention.observer import DEFAULT_WINDOW, Observer
from nerve.attention.values import ValueDetector, ValueParams
from nerve.errors import EventError

SNAPSHOT_VERSION = 1
EVENT_ID_SIZE = 32


class AttentionConfig(BaseModel):
    """``window`` (64), ``detector`` (:class:`DetectorParams`), ``gate`` (:class:`GateConfig`),
    ``values`` (:class:`ValueParams`).

    Every default is listed in the module docstring.
    """

    model_config = ConfigDict(extra="forbid", frozen=True, strict=True)

    window: Annotated[int, Field(ge=1, le=1_000_000)] = DEFAULT_WINDOW
    detector: DetectorParams = Field(default_factory=DetectorParams)
    gate: GateConfig = Field(default_factory=GateConfig)
    values: ValueParams = Field(default_factory=ValueParams)


class Attention:
    """Feeds each observed event through observer, detector and gate.

    Deterministic in its inputs: the same calls in the same order give the same highlights,
    decisions and snapshots on any machine.
    """

    def __init__(self, config: AttentionConfig | None = None) -> None:
        self.config = config or AttentionConfig()
        self.observer = Observer(self.config.window)
        self.detector = Detector(self.config.detector)
        self.gate = Gate(self.config.gate)
        self.values = ValueDetector(self.config.values)

    def observe(
        self,
        event_id: bytes,
        source: int,
        trust: int,
        hlc_physical_ns: int,
        ctx: UserContext,
        subject: str = "",
        readings: Mapping[str, int] | None = None,
    ) -> list[tuple[Highlight, Decision]]:
        """Project one event; gate every highlight it raises (salience, novelty, uncertainty,
        then each of its ``readings`` by name as the value probe of ``subject``, its sense).

        ``event_id`` is the 32-byte id of the observed event; the caller seals it with each
        decision (see :meth:`nerve.chain.ChainWriter.append_decision`).
        """
        if not isinstance(event_id, bytes) or len(event_id) != EVENT_ID_SIZE:
            raise EventError(f"event_id must be {EVENT_ID_SIZE} bytes, got {event_id!r}")
        projection = self.observer.observe(source, trust)
        highlights = self.detector.observe(projection)
        if readings or subject:
            highlights += self.values.observe(
                subject, readings or {}, projection.seq, hlc_physical_ns
            )
        return [(h, self.gate.decide(h, ctx, hlc_physical_ns)) for h in highlights]

    def snapshot(self) -> dict[str, Any]:
        """All state as plain JSON values."""
        return {
            "v": SNAPSHOT_VERSION,
            "observer": self.observer.snapshot(),
            "detector": self.detector.snapshot(),
            "gate": self.gate.snapshot(),
            "values": self.values.snapshot(),
        }

    def restore(self, snapshot: Mapping[str, Any]) -> None:
        """Replace all state with ``snapshot``; raises ``EventError`` if it is malformed."""
        if snapshot.get("v") != SNAPSHOT_VERSION:
            raise EventError(f"attention snapshot version {snapshot.get('v')!r} is not 1")
        parts = [snapshot.get(k) for k in ("observer", "detector", "gate")]
        if not all(isinstance(p, Mapping) for p in parts):
            raise EventError("attention snapshot needs observer, detector and gate maps")
        fresh = Attention(self.config)
        fresh.observer.restore(snapshot["observer"])
        fresh.detector.restore(snapshot["detector"])
        fresh.gate.restore(snapshot["gate"])
        values = snapshot.get("values")  # absent in snapshots taken before value probes
        if values is not None:
            if not isinstance(values, Mapping):
                raise EventError("attention snapshot: values must be a map")
            fresh.values.restore(values)
        self.observer, self.detector, self.gate = fresh.observer, fresh.detector, fresh.gate
        self.values = fresh.values
