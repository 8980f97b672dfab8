"""What-if on your own history: the log's observations attended again under other
``attention:`` settings, beside the decisions the log holds (``nerve attend --replay --with
FILE [--since 7d]``).

Nothing is written and nothing is signed: the replay runs the daemon's deterministic core
(:class:`nerve.attention.service.Attender`, no keyring) over every stored observation from the
first — the detector's baselines need the history before the window — and compares, in the
window only, each decision it makes with the one recorded for the same observation and probe.
Under the settings the daemon ran with, nothing differs (that is ``attend --recompute``).

``FILE`` is a nerve.yaml, or a file holding only its ``attention:`` section; what it sets is
laid over the workspace's own ``attention:`` settings, so ``attention: {rules: {confirm_s: 0}}``
asks about that one change. A mistake in it is reported with its file, line and field, as
``nerve validate`` reports one in nerve.yaml.
"""

from __future__ import annotations

import contextlib
import json
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from nerve.attention.reason import decision_line
from nerve.attention.service import Attender, Obs, read_observations
from nerve.attention.settings import AttentionConfig
from nerve.errors import UsageError

__all__ = ["Change", "WhatIf", "settings_from", "what_if"]

DECISION = "attention.decision"


@dataclass(frozen=True)
class Change:
    """One observation and probe decided otherwise: ``recorded`` and ``would`` are outcomes
    (``surface``, ``hold:value``, …; None: no decision), ``line`` the decision in words (the
    would-be one; the recorded one when the other settings make none)."""

    at_ns: int
    probe: str
    source_event: str
    recorded: str | None
    would: str | None
    line: str

    def to_json(self) -> dict[str, Any]:
        return {
            "at_ns": self.at_ns,
            "probe": self.probe,
            "source_event": self.source_event,
            "recorded": self.recorded,
            "would": self.would,
            "line": self.line,
        }


@dataclass(frozen=True)
class WhatIf:
    """Decisions in the window (observations at or after ``since_ns``): as recorded and as
    the other settings would make them, and every one that differs, oldest first."""

    since_ns: int
    replayed: int  # observations attended again, from the first
    recorded: tuple[int, int]  # (surfaced, held) in the window, as the log holds them
    would: tuple[int, int]  # (surfaced, held) in the window, under the other settings
    changes: tuple[Change, ...]

    @property
    def same(self) -> bool:
        return not self.changes

    def to_json(self) -> dict[str, Any]:
        return {
            "since_ns": self.since_ns,
            "replayed": self.replayed,
            "recorded": {"surfaced": self.recorded[0], "held": self.recorded[1]},
            "would": {"surfaced": self.would[0], "held": self.would[1]},
            "changes": [c.to_json() for c in self.changes],
        }


def settings_from(path: Path, base: AttentionConfig) -> AttentionConfig:
    """``base`` with the ``attention:`` section of the YAML file at ``path`` laid over it."""
    from nerve.config import parse_config
    from nerve.config.yamlmap import load_yaml

    try:
        text = Path(path).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        reason = getattr(exc, "strerror", None) or exc
        raise UsageError(f"{path}: cannot read: {reason}") from None
    parse_config(text, str(path))  # every mistake named by file, line and field
    data = load_yaml(text, str(path)).data
    section = data.get("attention") if isinstance(data, dict) else None
    if not isinstance(section, dict) or not section:
        raise UsageError(
            f"{path}: no attention: settings to try",
            hint="e.g. a file holding `attention: {rules: {confirm_s: 0}}`",
        )
    merged = _laid_over(base.model_dump(), section)
    return AttentionConfig.model_validate(merged)


def _laid_over(base: Mapping[str, Any], top: Mapping[str, Any]) -> dict[str, Any]:
    out = dict(base)
    for key, value in top.items():
        under = out.get(key)
        both = isinstance(under, Mapping) and isinstance(value, Mapping)
        out[key] = _laid_over(under, value) if both else value  # type: ignore[arg-type]
    return out


def what_if(conn: Any, settings: AttentionConfig, since_ns: int = 0) -> WhatIf:
    """Attend to every observation ``conn``'s ``events`` holds under ``settings`` (no key,
    no write) and compare the window's decisions with the recorded ones."""
    observations = read_observations(conn)
    att = Attender(settings, None)
    att.observe(observations)
    decided = _recorded(conn)
    at = _times_of(observations, [*att.decisions, *decided])
    would = _in_window(att.decisions, at, since_ns)
    recorded = _in_window(decided, at, since_ns)
    changes = []
    for key in sorted(would.keys() | recorded.keys(), key=lambda k: (at.get(k[0], 0), k)):
        old, new = recorded.get(key), would.get(key)
        old_outcome = _outcome(old)
        new_outcome = _outcome(new)
        if old_outcome != new_outcome:
            shown = new if new is not None else old
            assert shown is not None
            line = decision_line(shown)
            changes.append(Change(at[key[0]], key[1], key[0], old_outcome, new_outcome, line))
    return WhatIf(
        since_ns=since_ns,
        replayed=len(observations),
        recorded=_tally(recorded.values()),
        would=_tally(would.values()),
        changes=tuple(changes),
    )


def _recorded(conn: Any) -> list[dict[str, Any]]:
    rows = conn.execute(
        f"SELECT payload FROM events WHERE kind = '{DECISION}' ORDER BY physical_ns, logical"
    ).fetchall()
    return [json.loads(bytes(raw)) for (raw,) in rows]


def _times_of(observations: list[Obs], decisions: list[dict[str, Any]]) -> dict[str, int]:
    """The time of each observation a decision is about, by its id in hex."""
    wanted = set()
    for d in decisions:
        with contextlib.suppress(TypeError, ValueError):
            wanted.add(bytes.fromhex(str(d.get("source_event") or "")))
    return {obs.id.hex(): obs.physical_ns for obs in observations if obs.id in wanted}


def _in_window(
    decisions: list[dict[str, Any]], at: Mapping[str, int], since_ns: int
) -> dict[tuple[str, str], dict[str, Any]]:
    out = {}
    for d in decisions:
        event = str(d.get("source_event") or "")
        if at.get(event, -1) >= since_ns:
            out[(event, str(d.get("probe") or ""))] = d
    return out


def _outcome(decision: Mapping[str, Any] | None) -> str | None:
    return None if decision is None else str(decision.get("outcome") or "")


def _tally(decisions: Any) -> tuple[int, int]:
    outcomes = [_outcome(d) for d in decisions]
    surfaced = sum(1 for o in outcomes if o == "surface")
    return surfaced, len(outcomes) - surfaced
