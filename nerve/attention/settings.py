"""The ``attention:`` section of nerve.yaml, and the user context it derives.

Defaults behave sensibly on a desktop and on a headless server:

    attention:
      enabled: true
      window: 64 / detector: {...} / gate: {...} / values: {...}  # see nerve.attention.pipeline
      rules:                          # gate rules for value probes (nerve.attention.rules)
        direction: true               # a fire against its reading's direction of concern is held
        confirm_s: 60                 # a value fire surfaces once it held this long (0: at once)
        confirm_max_s: 600            # ... or is held as transient after this long
        confirmed_milli: 1000         # a confirmed excursion's value to the gate (at least)
        concerns: {}                  # "sense.reading": up | down | both, over the built-in table
        floors: {}                    # "sense.reading": least reading confirmed, over FLOORS
        persist: {}                   # "sense.reading": seconds an excursion must last (PERSIST)
        explain: true                 # a parallel job or a download explains what it moves
        crossings: true               # a reading crossing its floor from below is pending
        drift_hold_s: 300             # a drift fires once it has held this long
        reading_novelty: false        # a reading line (a sampled sense's) can fire novelty
      context:
        engagement_sources: [shell, app_focus, accessibility, file_change]
        engagement_window: 60s        # engagement = events of those sources in this window
        engagement_per_event_milli: 100   # ×100 each, capped at 1000: 10 in a minute = fully busy
        visual_sources: [app_focus, accessibility]
        modality_window: 30s          # "visual" while such an event is this recent, else "none"
      chain:
        checkpoint_every: 64          # a signed checkpoint after this many links
        checkpoint_interval: 5m       # and on this timer, even when idle (daemon only)
      notify:
        command: []                   # argv run for each surfaced highlight (no shell)
        desktop: auto                 # notify when a notification service answers (auto/on/off)
        quiet: ""                     # quiet hours, local time ("22:00-07:00"): decided, not sent
        dnd: false                    # do not disturb: every surfacing decided, none sent
      snapshot_every: 1000            # an attention.snapshot event every N observations

On a headless server nothing reports app focus, so the modality stays ``none`` and only shell
and file activity count as engagement; on a desktop an app-focus sense makes the user's
visual attention expensive to interrupt. The budget refills at ``gate.refill_uj_per_s``.
"""

from __future__ import annotations

import re
from bisect import bisect_right
from collections import deque
from collections.abc import Callable, Mapping, Sequence
from typing import Annotated, Any, Literal

from pydantic import AfterValidator, BaseModel, ConfigDict, Field, ValidationError

from nerve.attention.detector import DetectorParams
from nerve.attention.gate import GateConfig, UserContext
from nerve.attention.observer import DEFAULT_WINDOW
from nerve.attention.pipeline import PipelineConfig
from nerve.attention.rules import ValueRulesConfig
from nerve.attention.values import ValueParams
from nerve.durations import Duration
from nerve.errors import ConfigError, NerveError
from nerve.events import parse_source

NS_PER_MS = 1_000_000


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


def _source_names(names: list[str]) -> list[str]:
    for name in names:
        try:
            parse_source(name)
        except NerveError as exc:
            raise ValueError(str(exc)) from None
    return names


SourceNames = Annotated[list[str], AfterValidator(_source_names)]


class ContextConfig(_Model):
    engagement_sources: SourceNames = Field(
        default_factory=lambda: ["shell", "app_focus", "accessibility", "file_change"]
    )
    engagement_window: Duration = 60_000
    engagement_per_event_milli: Annotated[int, Field(ge=1, le=1000)] = 100
    visual_sources: SourceNames = Field(default_factory=lambda: ["app_focus", "accessibility"])
    modality_window: Duration = 30_000


class ChainConfig(_Model):
    checkpoint_every: Annotated[int, Field(ge=0)] = 64
    checkpoint_interval: Duration = 300_000


def _quiet_hours(text: str) -> str:
    """``""`` or ``HH:MM-HH:MM`` (local time; the end may be past midnight)."""
    if text and quiet_span(text) is None:
        raise ValueError(f"quiet hours must read HH:MM-HH:MM (as 22:00-07:00), got {text!r}")
    return text


def quiet_span(text: str) -> tuple[int, int] | None:
    """Quiet hours as (first, end) minutes after midnight; None when ``text`` is not one."""
    match = re.fullmatch(r"([01]\d|2[0-3]):([0-5]\d)-([01]\d|2[0-3]):([0-5]\d)", text.strip())
    if match is None:
        return None
    h1, m1, h2, m2 = (int(g) for g in match.groups())
    return h1 * 60 + m1, h2 * 60 + m2


class NotifyConfig(_Model):
    command: list[str] = Field(default_factory=list)
    desktop: Literal["auto", "on", "off"] = "auto"
    quiet: Annotated[str, AfterValidator(_quiet_hours)] = ""
    dnd: bool = False


class AttentionConfig(_Model):
    enabled: bool = True
    window: Annotated[int, Field(ge=1, le=1_000_000)] = DEFAULT_WINDOW
    detector: DetectorParams = Field(default_factory=DetectorParams)
    gate: GateConfig = Field(default_factory=GateConfig)
    values: ValueParams = Field(default_factory=ValueParams)
    rules: ValueRulesConfig = Field(default_factory=ValueRulesConfig)
    context: ContextConfig = Field(default_factory=ContextConfig)
    chain: ChainConfig = Field(default_factory=ChainConfig)
    notify: NotifyConfig = Field(default_factory=NotifyConfig)
    snapshot_every: Annotated[int, Field(ge=1)] = 1000

    def pipeline(self) -> PipelineConfig:
        return PipelineConfig(
            window=self.window, detector=self.detector, gate=self.gate, values=self.values
        )


MODELS = (
    AttentionConfig,
    ContextConfig,
    ChainConfig,
    NotifyConfig,
    DetectorParams,
    GateConfig,
    ValueParams,
    ValueRulesConfig,
)


def parse_attention(raw: Mapping[str, Any] | None) -> AttentionConfig:
    """Validate an ``attention:`` mapping given as data (nerve.yaml's is checked as it loads:
    ``NerveConfig.attention``); errors name ``attention.<path>``."""
    try:
        return AttentionConfig.model_validate(dict(raw or {}))
    except ValidationError as exc:
        problems = "; ".join(
            "attention." + ".".join(str(p) for p in e["loc"]) + f": {e['msg']}"
            for e in exc.errors()
        )
        raise ConfigError(problems) from None


class ContextTracker:
    """Engagement and active modality, derived from the observation stream itself."""

    def __init__(self, settings: ContextConfig) -> None:
        self.settings = settings
        self._engaged = {parse_source(s) for s in settings.engagement_sources}
        self._visual = {parse_source(s) for s in settings.visual_sources}
        # Only the newest events that can still count matter: engagement caps at 1000.
        cap = -(-1000 // settings.engagement_per_event_milli)
        self._recent: deque[int] = deque(maxlen=cap)
        self._last_visual: int | None = None

    def update(self, source: int, physical_ns: int) -> UserContext:
        if source in self._engaged:
            self._recent.append(physical_ns)
        if source in self._visual:
            self._last_visual = physical_ns
        window = self.settings.engagement_window * NS_PER_MS
        count = sum(1 for t in self._recent if physical_ns - t <= window)
        engagement = min(1000, count * self.settings.engagement_per_event_milli)
        recent_visual = self._last_visual is not None and (
            physical_ns - self._last_visual <= self.settings.modality_window * NS_PER_MS
        )
        return UserContext(engagement, "visual" if recent_visual else "none")

    def batch(self, sources: Sequence[int], times: Sequence[int]) -> Callable[[int], UserContext]:
        """Advance past a batch of observations at once; the returned function gives the
        context :meth:`update` would have returned for observation ``i`` of the batch."""
        engaging, seen_visual = self._engaged, self._visual
        engaged = [j for j, s in enumerate(sources) if s in engaging]
        visual = [j for j, s in enumerate(sources) if s in seen_visual]
        before, last_visual = list(self._recent), self._last_visual
        stamps = before + [times[j] for j in engaged]
        cap = self._recent.maxlen or 1
        window = self.settings.engagement_window * NS_PER_MS
        per_event = self.settings.engagement_per_event_milli
        modality_window = self.settings.modality_window * NS_PER_MS

        def at(i: int) -> UserContext:
            t, upto = times[i], len(before) + bisect_right(engaged, i)
            count = sum(1 for u in stamps[max(0, upto - cap) : upto] if t - u <= window)
            seen = bisect_right(visual, i)
            last = times[visual[seen - 1]] if seen else last_visual
            recent_visual = last is not None and t - last <= modality_window
            return UserContext(min(1000, count * per_event), "visual" if recent_visual else "none")

        self._recent.extend(stamps[len(before) :][-cap:])
        if visual:
            self._last_visual = times[visual[-1]]
        return at

    def snapshot(self) -> dict[str, Any]:
        return {"recent": list(self._recent), "last_visual": self._last_visual}

    def restore(self, snap: Mapping[str, Any]) -> None:
        self._recent.clear()
        self._recent.extend(int(t) for t in snap.get("recent", []))
        last = snap.get("last_visual")
        self._last_visual = None if last is None else int(last)
