"""The attention pipeline: observer → detector → gate, as one deterministic object.

:class:`PipelineConfig` is the pipeline's part of the ``attention:`` section of ``nerve.yaml``
(:class:`nerve.attention.settings.AttentionConfig`, the whole section, gives it)::

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
        range_bins: 32           # values never seen: a record, or a bin of the range unvisited
        novel_quiet_s: 3600      # ... at most once an hour a probe; 0 bins turn it off

Every key is optional; unknown keys are rejected.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Mapping, Sequence
from typing import Annotated, Any

from pydantic import BaseModel, ConfigDict, Field

from nerve.attention.detector import Detector, DetectorParams, Highlight
from nerve.attention.gate import Decision, Gate, GateConfig, UserContext
from nerve.attention.observer import DEFAULT_WINDOW, Observer
from nerve.attention.rules import Action, Rules, ValueRulesConfig
from nerve.attention.values import ValueDetector, ValueParams
from nerve.errors import EventError

SNAPSHOT_VERSION = 1
EVENT_ID_SIZE = 32
BATCH_MIN = 64  # below this, numpy's fixed cost per call outweighs what it saves
_NO_READINGS: Mapping[str, int] = {}


class PipelineConfig(BaseModel):
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

    def __init__(
        self, config: PipelineConfig | None = None, rules: ValueRulesConfig | None = None
    ) -> None:
        self.config = config or PipelineConfig()
        self.observer = Observer(self.config.window)
        self.detector = Detector(self.config.detector)
        self.gate = Gate(self.config.gate)
        self.values = ValueDetector(self.config.values)
        # The gate rules for value probes (``attention.rules``); none: every fire is gated.
        self.rules_config = rules
        self.rules = Rules(rules) if rules is not None else None

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
        highlights = [h for h in self.detector.observe(projection) if self._novel(h, readings)]
        if readings or subject:
            fires = self.values.observe(subject, readings or {}, projection.seq, hlc_physical_ns)
            highlights += fires
            if self.rules is not None:
                acts = self._ruled(highlights, projection.seq, hlc_physical_ns)
                return [(h, self._decide(h, a, ctx, hlc_physical_ns)) for h, a in acts]
        return [(h, self.gate.decide(h, ctx, hlc_physical_ns)) for h in highlights]

    def _novel(self, h: Highlight, readings: Mapping[str, int] | None) -> bool:
        """Whether ``h`` stands: not a novelty fire of an observation that carries readings
        (unless ``attention.rules.reading_novelty``): a sampled sense's reading line (the
        network's idle hum after a stretch of other sources) is no new source, and what is
        new in its readings is the value probes' to judge."""
        rules = self.rules_config
        if h.probe != "novelty" or not readings or rules is None:
            return True
        return rules.reading_novelty

    def _ruled(
        self, fires: list[Highlight], seq: int, now_ns: int
    ) -> list[tuple[Highlight, Action]]:
        assert self.rules is not None
        values = self.values
        expected = functools.partial(values.expected, now_ns=now_ns)
        return self.rules.apply(values.latest, fires, seq, now_ns, values.level, expected)

    def _decide(self, h: Highlight, action: Action, ctx: UserContext, now_ns: int) -> Decision:
        if action == "decide":
            return self.gate.decide(h, ctx, now_ns)
        if action == "confirmed":
            assert self.rules_config is not None
            return self.gate.decide(h, ctx, now_ns, self.rules_config.confirmed_milli)
        return self.gate.hold(h, ctx, now_ns, action)

    def observe_batch(
        self,
        ids: Sequence[bytes],
        sources: Sequence[int],
        trusts: Sequence[int],
        times: Sequence[int],
        context: Callable[[int], UserContext],
        subjects: Sequence[str] | None = None,
        readings: Sequence[Mapping[str, int] | None] | None = None,
    ) -> list[tuple[int, Highlight, Decision]]:
        """:meth:`observe` for each observation of a batch, in order, with the same
        highlights, decisions and state afterwards, bit for bit; each result is
        ``(position in the batch, highlight, decision)``. ``context(i)`` is the user context
        at observation ``i``; ``subjects`` and ``readings`` default to none.

        The observer and the detector run over the whole batch at once
        (:mod:`nerve.attention.batch`); a small batch, or one the checked integer ranges do
        not cover, goes one observation at a time.
        """
        from nerve.attention import batch

        n = len(ids)
        subjects = subjects if subjects is not None else [""] * n
        readings = readings if readings is not None else [None] * n
        if n < BATCH_MIN or not (
            batch.valid_inputs(ids, sources, trusts) and batch.fits(self.observer, self.detector, n)
        ):
            return self._one_by_one(ids, sources, trusts, times, context, subjects, readings)
        first = self.observer.seen
        ratios = batch.observer_batch(self.observer, sources, trusts)
        fired: list[tuple[int, int, Highlight, Action]] = [
            (i, k, h, "decide")
            for i, k, h in batch.detector_batch(self.detector, ratios, first)
            if self._novel(h, readings[i])
        ]
        fired += self._value_fires(first, times, subjects, readings)
        fired.sort(key=lambda f: (f[0], f[1]))
        decide = self._decide
        return [(i, h, decide(h, a, context(i), times[i])) for i, _, h, a in fired]

    def _value_fires(
        self,
        first: int,
        times: Sequence[int],
        subjects: Sequence[str],
        readings: Sequence[Mapping[str, int] | None],
    ) -> list[tuple[int, int, Highlight, Action]]:
        """Value-probe fires as ``(position, order, highlight, action)``, in the order
        :meth:`observe` raises them: pending fires the observation resolves first (negative
        orders), then the detector's three probes (0..2), then the value fires (3 + k).

        The value probes step through the batch probe by probe
        (:func:`nerve.attention.batch.value_batch`), or one observation at a time when that
        cannot be done exactly; the rules then go through it an observation at a time."""
        from nerve.attention import batch

        todo = [i for i, (s, v) in enumerate(zip(subjects, readings, strict=True)) if v or s]
        found = batch.value_batch(
            self.values,
            [subjects[i] for i in todo],
            [readings[i] or _NO_READINGS for i in todo],
            [first + i for i in todo],
            [times[i] for i in todo],
        )
        out: list[tuple[int, int, Highlight, Action]] = []
        level: Callable[[str], int | None]
        expected: Callable[[str], int | None]
        ruled = self._ruled_batch
        for j, i in enumerate(todo):
            if found is None:
                readings_i = readings[i] or _NO_READINGS
                fires = self.values.observe(subjects[i], readings_i, first + i, times[i])
                latest, level = self.values.latest, self.values.level
                expected = functools.partial(self.values.expected, now_ns=times[i])
            else:
                fires, latest, level = found.fires.get(j, []), found.latest[j], found.level(j)
                expected = found.expected(j)
            decided = ruled(i, first + i, times[i], fires, latest, (level, expected))
            if decided:
                out += decided
        return out

    def _ruled_batch(
        self,
        i: int,
        seq: int,
        now_ns: int,
        fires: list[Highlight],
        latest: Mapping[str, int],
        bases: tuple[Callable[[str], int | None], Callable[[str], int | None]],
    ) -> list[tuple[int, int, Highlight, Action]]:
        """Observation ``i``'s value fires through the gate rules, as
        ``(position, order, highlight, action)``; ``bases``: a probe's level and what it
        expects (see :meth:`Rules.apply`)."""
        rules = self.rules
        if rules is None:
            return [(i, 3 + k, h, "decide") for k, h in enumerate(fires)]
        done = rules.resolve(latest, seq, now_ns, fires)
        decided = rules.sort(fires, now_ns) if fires else []
        drifts = rules.drifts(latest, seq, now_ns)
        rules.watch(latest, seq, now_ns, *bases)
        if not (done or decided or drifts):  # most observations: nothing to decide
            return []
        out: list[tuple[int, int, Highlight, Action]] = [
            (i, k - len(done), h, a) for k, (h, a) in enumerate(done)
        ]
        out += [(i, 3 + k, h, a) for k, (h, a) in enumerate(decided)]
        out += [(i, 3 + len(fires) + k, h, a) for k, (h, a) in enumerate(drifts)]
        return out

    def _one_by_one(
        self,
        ids: Sequence[bytes],
        sources: Sequence[int],
        trusts: Sequence[int],
        times: Sequence[int],
        context: Callable[[int], UserContext],
        subjects: Sequence[str],
        readings: Sequence[Mapping[str, int] | None],
    ) -> list[tuple[int, Highlight, Decision]]:
        out = []
        for i, event_id in enumerate(ids):
            t = times[i]
            for h, d in self.observe(
                event_id, sources[i], trusts[i], t, context(i), subjects[i], readings[i]
            ):
                out.append((i, h, d))
        return out

    def snapshot(self) -> dict[str, Any]:
        """All state as plain JSON values."""
        return {
            "v": SNAPSHOT_VERSION,
            "observer": self.observer.snapshot(),
            "detector": self.detector.snapshot(),
            "gate": self.gate.snapshot(),
            "values": self.values.snapshot(),
            **({"rules": self.rules.snapshot()} if self.rules is not None else {}),
        }

    def restore(self, snapshot: Mapping[str, Any]) -> None:
        """Replace all state with ``snapshot``; raises ``EventError`` if it is malformed."""
        if snapshot.get("v") != SNAPSHOT_VERSION:
            raise EventError(f"attention snapshot version {snapshot.get('v')!r} is not 1")
        parts = [snapshot.get(k) for k in ("observer", "detector", "gate")]
        if not all(isinstance(p, Mapping) for p in parts):
            raise EventError("attention snapshot needs observer, detector and gate maps")
        fresh = Attention(self.config, self.rules_config)
        fresh.observer.restore(snapshot["observer"])
        fresh.detector.restore(snapshot["detector"])
        fresh.gate.restore(snapshot["gate"])
        values = snapshot.get("values")  # absent in snapshots taken before value probes
        if values is not None:
            if not isinstance(values, Mapping):
                raise EventError("attention snapshot: values must be a map")
            fresh.values.restore(values)
        pending = snapshot.get("rules")  # absent before the gate rules, or with them off
        if fresh.rules is not None and pending is not None:
            if not isinstance(pending, Mapping):
                raise EventError("attention snapshot: rules must be a map")
            fresh.rules.restore(pending)
        self.observer, self.detector, self.gate = fresh.observer, fresh.detector, fresh.gate
        self.values, self.rules = fresh.values, fresh.rules
