"""Which events a forget takes: a selection from flags or a request, or the retention limits.

Different selectors combine with AND; repeated ones (``--source shell --source network``)
with OR. A selection names its events by payload address, source, kind, text in the line
or payload, and a time range. A text match leaves nerve's bookkeeping (``ask.question``
and the rest of :data:`nerve.events.BOOKKEEPING_KINDS`) out unless a ``--kind`` names one or
``--all-kinds`` is given; ``payload.erased`` and the other records nerve needs to verify
and resume itself are never taken (:data:`nerve.log.erasure.PROTECTED_KINDS`).

Times are durations back from now (``30d``, ``12h``), ISO times (``2024-05-01``,
``2024-05-01T09:00:00+02:00``; local time when no zone is given) or HLC stamps
(``1714550400000000000.3``, or whole nanoseconds).
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from nerve.clock import Hlc, bound
from nerve.config.models import RetentionConfig
from nerve.durations import format_duration, parse_duration
from nerve.errors import ConfigError, EventError, UsageError
from nerve.events import BOOKKEEPING_KINDS, check_kind, parse_source, source_name

if TYPE_CHECKING:
    import pyarrow as pa

    Predicate = Callable[[pa.Table], Any]

_HLC = re.compile(r"(\d{10,20})(?:\.(\d{1,10}))?")
_DURATION = re.compile(r"\d+(?:\.\d+)?\s*(?:ms|s|m|h|d)")
_WHEN_HINT = (
    "give a duration back from now (30d, 12h), an ISO time (2024-05-01), an HLC stamp "
    "or a time in words (yesterday, this morning, 14:00), as `tail --since` takes"
)


def parse_when(text: str, now_ns: int, flag: str) -> Hlc:
    """A point in time: ``now - duration``, an HLC stamp, else what ``tail --since`` reads
    (an ISO time, a time of day, words such as ``yesterday``: the start of the period)."""
    from nerve.tail.when import parse_instant

    value = text.strip()
    if _DURATION.fullmatch(value):
        try:
            return bound(now_ns - parse_duration(value) * 10**6)
        except ConfigError as exc:
            raise UsageError(f"{flag} {text!r}: {exc}", hint=_WHEN_HINT) from None
    stamp = _HLC.fullmatch(value)
    if stamp is not None:
        return bound(int(stamp.group(1)), int(stamp.group(2) or 0))
    try:
        return parse_instant(value, now_ns=now_ns)
    except UsageError:
        raise UsageError(f"{flag} {text!r} is not a time", hint=_WHEN_HINT) from None


@dataclass(frozen=True)
class Selection:
    """Events to forget; empty fields select nothing by that field."""

    cids: tuple[str, ...] = ()
    sources: tuple[int, ...] = ()
    kinds: tuple[str, ...] = ()
    match: str | None = None
    before: Hlc | None = None
    after: Hlc | None = None
    hidden: tuple[str, ...] = ()  # kinds never taken (bookkeeping, for a text match)

    @classmethod
    def of(
        cls,
        *,
        cids: Sequence[str] = (),
        sources: Sequence[str] = (),
        kinds: Sequence[str] = (),
        match: str | None = None,
        before: str | None = None,
        after: str | None = None,
        all_kinds: bool = False,
        now_ns: int,
    ) -> Selection:
        """From command-line flags; a bad value names its flag. ``--match`` without a
        ``--kind`` leaves bookkeeping out unless ``all_kinds``."""
        chosen = cls(
            tuple(_cid(c) for c in cids),
            tuple(_flag("--source", parse_source, s) for s in sources),
            tuple(_flag("--kind", check_kind, k) for k in kinds),
            match,
            None if before is None else parse_when(before, now_ns, "--before"),
            None if after is None else parse_when(after, now_ns, "--after"),
            _hidden(match, kinds, all_kinds=all_kinds),
        )
        if match is not None and not match:
            raise UsageError("--match must not be empty (it would match every event)")
        _refuse_protected(chosen.kinds)
        if chosen.empty:
            raise UsageError(
                "say what to forget: --cid, --source, --kind, --match, --before or --after",
                hint="e.g. nerve forget --source shell --before 30d --dry-run",
            )
        return chosen

    @property
    def empty(self) -> bool:
        return not (self.cids or self.sources or self.kinds or self.match or self.window)

    @property
    def window(self) -> bool:
        return self.before is not None or self.after is not None

    def to_json(self) -> dict[str, Any]:
        """The request form (the daemon rebuilds the selection from it)."""
        return {
            "cids": list(self.cids),
            "sources": [source_name(s) for s in self.sources],
            "kinds": list(self.kinds),
            "match": self.match,
            "before": None if self.before is None else list(self.before),
            "after": None if self.after is None else list(self.after),
            "hidden": list(self.hidden),
        }

    @classmethod
    def from_json(cls, obj: Any) -> Selection:
        """From a request; a bad field is a :class:`UsageError` naming it."""
        if not isinstance(obj, dict):
            raise UsageError("request field 'selection' must be an object", field="selection")
        try:
            chosen = cls(
                tuple(_cid(c) for c in obj.get("cids") or ()),
                tuple(parse_source(s) for s in obj.get("sources") or ()),
                tuple(check_kind(k) for k in obj.get("kinds") or ()),
                obj.get("match") or None,
                _stamp(obj.get("before")),
                _stamp(obj.get("after")),
                tuple(check_kind(k) for k in obj.get("hidden") or ()),
            )
        except (EventError, TypeError, ValueError) as exc:
            raise UsageError(f"request field 'selection': {exc}", field="selection") from None
        if chosen.empty:
            raise UsageError("the selection names no events", field="selection")
        return chosen

    def recorded(self) -> dict[str, Any]:
        """What the ``payload.erased`` event keeps of the selection. ``--match`` text is
        never kept, nor any hash of it (``match_text``: there was one): it is often the very
        secret being forgotten, and a hash of a short one is found by hashing each guess."""
        out = self.to_json()
        if out.pop("match") is not None:
            out["match_text"] = True
        return {k: v for k, v in out.items() if v}

    def describe(self) -> str:
        parts = [f"source {source_name(s)}" for s in self.sources]
        parts += [f"kind {k}" for k in self.kinds]
        parts += [f"payload {c[:12]}" for c in self.cids]
        if self.match is not None:
            parts.append("matching text")
        if self.before is not None:
            parts.append(f"before {self.before}")
        if self.after is not None:
            parts.append(f"after {self.after}")
        return ", ".join(parts)

    def predicate(self) -> Predicate:
        return lambda table: _pick(self, table)


def _pick(sel: Selection, table: pa.Table) -> Any:
    import pyarrow as pa
    import pyarrow.compute as pc

    terms: list[Any] = []
    if sel.cids:
        wanted = pa.array([bytes.fromhex(c) for c in sel.cids], pa.binary(32))
        terms.append(pc.is_in(table.column("payload_cid"), wanted))
    if sel.sources:
        terms.append(pc.is_in(table.column("source"), pa.array(sel.sources, pa.int64())))
    if sel.kinds:
        terms.append(pc.is_in(table.column("kind"), pa.array(sel.kinds, pa.string())))
    if sel.before is not None:
        terms.append(_stamp_cmp(table, sel.before, pc.less))
    if sel.after is not None:
        terms.append(_stamp_cmp(table, sel.after, pc.greater))
    if sel.match is not None:
        terms.append(_matching(table, sel.match))
    if sel.hidden:
        terms.append(pc.invert(pc.is_in(table.column("kind"), pa.array(sel.hidden, pa.string()))))
    mask = terms[0]
    for term in terms[1:]:
        mask = pc.and_kleene(mask, term)
    return mask


def _hidden(match: str | None, kinds: Sequence[str], *, all_kinds: bool) -> tuple[str, ...]:
    """The kinds a selection leaves out: bookkeeping, for a text match naming no kind."""
    if match is None or kinds or all_kinds:
        return ()
    return tuple(sorted(BOOKKEEPING_KINDS))


def _stamp_cmp(table: pa.Table, stamp: Hlc, beyond: Any) -> Any:
    import pyarrow.compute as pc

    phys, logi = table.column("physical_ns"), table.column("logical")
    return pc.or_(
        beyond(phys, stamp.physical_ns),
        pc.and_(pc.equal(phys, stamp.physical_ns), beyond(logi, stamp.logical)),
    )


def _matching(table: pa.Table, text: str) -> Any:
    """The text in the line, or in the payload as UTF-8 or as it reads inside JSON."""
    import pyarrow.compute as pc

    found = pc.match_substring(table.column("line"), text)
    if "payload" in table.column_names:
        for form in dict.fromkeys([text, json.dumps(text, ensure_ascii=False)[1:-1]]):
            found = pc.or_kleene(found, pc.match_substring(table.column("payload"), form))
    return found


def retention_predicate(cfg: RetentionConfig, now_ns: int) -> Predicate:
    """Events older than their limit: the kind's, else the source's, else the default."""
    return lambda table: _expired(cfg, now_ns, table)


def _expired(cfg: RetentionConfig, now_ns: int, table: pa.Table) -> Any:
    import numpy as np
    import pyarrow as pa
    import pyarrow.compute as pc

    never = np.iinfo(np.int64).min
    cuts = np.full(table.num_rows, never if cfg.default is None else now_ns - cfg.default * 10**6)
    for name, ms in cfg.sources.items():
        hit = pc.equal(table.column("source"), parse_source(name))
        cuts[np.asarray(hit.to_numpy(zero_copy_only=False), dtype=bool)] = now_ns - ms * 10**6
    for kind, ms in cfg.kinds.items():
        hit = pc.equal(table.column("kind"), kind)
        cuts[np.asarray(hit.to_numpy(zero_copy_only=False), dtype=bool)] = now_ns - ms * 10**6
    return pa.array(table.column("physical_ns").to_numpy() < cuts)


def retention_recorded(cfg: RetentionConfig, now_ns: int) -> dict[str, Any]:
    """What a retention erasure records as its selection: the limits and the time applied."""
    limits: dict[str, Any] = {"now_ns": now_ns}
    if cfg.default is not None:
        limits["default"] = format_duration(cfg.default)
    if cfg.sources:
        limits["sources"] = {k: format_duration(v) for k, v in sorted(cfg.sources.items())}
    if cfg.kinds:
        limits["kinds"] = {k: format_duration(v) for k, v in sorted(cfg.kinds.items())}
    return {"retention": limits}


def _refuse_protected(kinds: Sequence[str]) -> None:
    from nerve.log.erasure import PROTECTED_KINDS

    kept = sorted(set(kinds) & PROTECTED_KINDS)
    if kept:
        raise UsageError(
            f"--kind {kept[0]}: these records are never erased (nerve needs them to verify "
            "and resume itself)",
            hint="never erased: " + ", ".join(sorted(PROTECTED_KINDS)),
        )


def _cid(text: Any) -> str:
    value = str(text).strip().lower()
    if len(value) != 64 or any(c not in "0123456789abcdef" for c in value):
        raise UsageError(f"--cid {text!r} is not a 64-hex-digit payload address", field="cids")
    return value


def _flag(flag: str, parse: Callable[[str], Any], value: str) -> Any:
    try:
        return parse(value)
    except EventError as exc:
        raise UsageError(f"{flag} {value!r}: {exc}") from None


def _stamp(value: Any) -> Hlc | None:
    if value is None:
        return None
    if not (isinstance(value, list) and len(value) == 2 and all(type(v) is int for v in value)):
        raise ValueError(f"a time must be [physical_ns, logical], got {value!r}")
    return Hlc(*value)
