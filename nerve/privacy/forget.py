"""``nerve forget``: erase payloads and lines, verifiably (see :mod:`nerve.log.erasure`).

With a daemon running the request goes through its socket (the daemon is the single
writer); otherwise this process opens the log as its writer. ``--dry-run`` only reads.
Retention (``log.retention``) is a forget with reason ``retention`` and the limits as its
selection; the daemon applies it every ``log.retention.every``.
"""

from __future__ import annotations

import collections
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from nerve.config.models import RetentionConfig
from nerve.errors import UsageError
from nerve.events import source_name
from nerve.privacy.selection import (
    Selection,
    retention_predicate,
    retention_recorded,
)

if TYPE_CHECKING:
    from nerve.log.erasure import Plan
    from nerve.log.store import EventLog
    from nerve.workspace import WorkspaceDir

RETENTION = "retention"
MAX_REASON = 200


@dataclass
class ForgetResult:
    """What a forget erased (or, dry, would erase), per segment and per source."""

    dry_run: bool
    reason: str
    erased: int = 0
    already: int = 0  # matched, erased before
    protected: int = 0  # matched, of a kind never erased
    segments: list[dict[str, Any]] = field(default_factory=list)
    sources: dict[str, int] = field(default_factory=dict)
    erasures: list[str] = field(default_factory=list)  # the payload.erased ids

    @classmethod
    def of(cls, plan: Plan, *, dry_run: bool, reason: str) -> ForgetResult:
        sources: collections.Counter[str] = collections.Counter()
        segments = []
        for found in plan.found:
            named = {source_name(s): n for s, n in sorted(found.sources.items())}
            sources.update(named)
            segments.append({"segment": found.name, "events": found.count, "sources": named})
        return cls(
            dry_run,
            reason,
            plan.count,
            plan.already,
            plan.protected,
            segments,
            dict(sorted(sources.items())),
            list(plan.erasures),
        )

    def to_json(self) -> dict[str, Any]:
        return {
            "dry_run": self.dry_run,
            "reason": self.reason,
            "erased": self.erased,
            "already_erased": self.already,
            "protected": self.protected,
            "segments": self.segments,
            "sources": self.sources,
            "erasures": self.erasures,
        }

    @classmethod
    def from_json(cls, obj: dict[str, Any]) -> ForgetResult:
        return cls(
            bool(obj["dry_run"]),
            str(obj["reason"]),
            int(obj["erased"]),
            int(obj["already_erased"]),
            int(obj["protected"]),
            list(obj["segments"]),
            dict(obj["sources"]),
            list(obj["erasures"]),
        )


@dataclass(frozen=True)
class Request:
    """One forget: a selection (or the retention limits) and why."""

    selection: Selection | None
    reason: str

    def to_json(self) -> dict[str, Any]:
        if self.selection is None:
            return {"retention": True}
        return {"selection": self.selection.to_json(), "reason": self.reason}

    @classmethod
    def from_json(cls, obj: dict[str, Any]) -> Request:
        if obj.get("retention") is True:
            return cls(None, RETENTION)
        return cls(Selection.from_json(obj.get("selection")), check_reason(obj.get("reason")))


def request_of(
    *,
    cids: Iterable[str] = (),
    sources: Iterable[str] = (),
    kinds: Iterable[str] = (),
    match: str | None = None,
    before: str | None = None,
    after: str | None = None,
    reason: str = "user",
    retention: bool = False,
    all_kinds: bool = False,
    now_ns: int | None = None,
) -> Request:
    """The request ``nerve forget`` makes of its selectors (``retention``: nerve.yaml's limits;
    ``all_kinds``: a text match takes nerve's bookkeeping too)."""
    cids, sources, kinds = tuple(cids), tuple(sources), tuple(kinds)
    picked = any([cids, sources, kinds, match is not None, before, after])
    if retention and picked:
        raise UsageError("--retention applies nerve.yaml's limits: give it without selectors")
    if retention:
        return Request(None, "retention")
    chosen = Selection.of(
        cids=cids,
        sources=sources,
        kinds=kinds,
        match=match,
        before=before,
        after=after,
        all_kinds=all_kinds,
        now_ns=time.time_ns() if now_ns is None else now_ns,
    )
    return Request(chosen, check_reason(reason))


def check_reason(value: Any) -> str:
    if not isinstance(value, str) or not value.strip() or len(value) > MAX_REASON:
        raise UsageError(
            f"--reason must be 1..{MAX_REASON} characters of text (got {value!r})",
            field="reason",
        )
    return value.strip()


def _chosen(
    request: Request, retention: RetentionConfig, now_ns: int
) -> tuple[Callable[[Any], Any], dict[str, Any]]:
    """The predicate and what the erasure records as its selection."""
    if request.selection is not None:
        return request.selection.predicate(), request.selection.recorded()
    if not retention.active:
        raise UsageError(
            "no retention is configured",
            hint="set log.retention in nerve.yaml, e.g. `default: 90d` and `sources: {shell: 7d}`",
        )
    return retention_predicate(retention, now_ns), retention_recorded(retention, now_ns)


def apply(
    log: EventLog, request: Request, retention: RetentionConfig, *, now_ns: int | None = None
) -> ForgetResult:
    """Carry out a forget with the log's writer in hand (the daemon's, or this process's)."""
    predicate, recorded = _chosen(request, retention, now_ns or time.time_ns())
    plan = log.erase(predicate, reason=request.reason, selection=recorded)
    return ForgetResult.of(plan, dry_run=False, reason=request.reason)


def dry_run(ws: WorkspaceDir, request: Request, *, now_ns: int | None = None) -> ForgetResult:
    """What a forget would erase now, from a read snapshot (sealed segments and the tail)."""
    from nerve.log import erasure
    from nerve.log.reader import snapshot

    predicate, _ = _chosen(request, ws.log_config().retention, now_ns or time.time_ns())
    snap = snapshot(ws.log_root)
    needs_payload = request.selection is not None and request.selection.match is not None
    plan = erasure.rewrite(
        snap.paths.segments,
        zip(snap.segments, snap.files, strict=True),
        predicate,
        columns=None if needs_payload else erasure.NO_PAYLOAD,
        write=False,
    )
    found = erasure.select(None, snap.tail, predicate, plan)
    if found is not None:
        plan.found.append(found)
    return ForgetResult.of(plan, dry_run=True, reason=request.reason)
