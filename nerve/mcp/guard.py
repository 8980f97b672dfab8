"""What may leave through ``nerve mcp``: the privacy rules on every result, and budgets.

**Privacy.** Capture already redacted what the rules of the day matched; rules added since,
and text a query derives, are screened again on the way out with the same detector pack and
rules (:mod:`nerve.privacy`):

- an *event* (``recent``, ``search``, ``ask``'s citations) goes through the rules that apply
  to its source, kind and subject, as at capture: a drop rule or exclusion that matches
  withholds it, redaction replaces what matches in its line and payload;
- any other *value* (a query's cells, an answer's text) has every string redacted by the
  detectors and every regex rule, whatever their scope, since a cell has no source; a string
  a drop rule's regex matches is withheld whole.

An erased event (a payload removed by ``nerve forget``) is shown as erased, never as text.

**Budgets.** ``mcp.max_rows`` and ``mcp.max_bytes`` bound each call and each session
(:class:`Budgets`); a tool fits its items into what is left (:func:`fit`), and a session
that has spent either budget is refused.
"""

from __future__ import annotations

import json
import re
import threading
from collections import OrderedDict
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from nerve.errors import AccessRefused
from nerve.events import decode_payload
from nerve.mcp.settings import McpConfig
from nerve.privacy.policy import Policy
from nerve.privacy.scan import Counts, Pass, Redactor, detector_pass
from nerve.privacy.settings import PrivacyConfig

if TYPE_CHECKING:
    import pyarrow as pa

__all__ = ["Allowance", "Budgets", "Screen", "Shown", "fit", "json_size"]

ERASED = "[erased]"
_SCREENED = ("source", "kind", "subject", "line", "payload")
_MAX_SESSIONS = 1024


def withheld(rule: str) -> str:
    return f"[withheld:{rule}]"


@dataclass(frozen=True)
class Shown:
    """An event's line and payload as they may leave (``None``: withheld by ``rule``)."""

    line: str
    data: Any
    rule: str | None = None


class Screen:
    """The ``privacy:`` rules, compiled once, applied to what a tool returns; counts what
    it withheld and redacted."""

    def __init__(self, config: PrivacyConfig) -> None:
        self.policy = Policy(config)
        rules = config.rules
        redact = [r for r in rules if r.action == "redact"]
        drop = [r for r in rules if r.action == "drop"]
        self.redactor = Redactor(
            {*config.active_detectors, *(r.detector for r in redact if r.detector)},
            [Pass(r.label, re.compile(r.regex)) for r in redact if r.regex],
        )
        self.drops = [Pass(r.label, re.compile(r.regex)) for r in drop if r.regex]
        self.drops += [detector_pass(r.detector) for r in drop if r.detector]
        self.withheld = 0
        self.redacted = 0

    def rows(self, table: pa.Table) -> pa.Table:
        """Stored rows as they may leave: those a drop rule or exclusion withholds taken
        out, the others' line and payload redacted by the rules for their source, kind and
        subject. The query sandbox and ``ask`` read only these, so no SQL over them (a
        transform, a hex of the payload) can bring back what the rules hold back."""
        import pyarrow as pa

        columns = [table.column(n).to_pylist() for n in _SCREENED]
        keep: list[bool] = []
        lines: list[str | None] = []
        payloads: list[bytes | None] = []
        for source, kind, subject, line, payload in zip(*columns, strict=True):
            shown = self._row(source, kind, subject, line, payload)
            keep.append(shown is not None)
            if shown is not None:
                lines.append(shown[0])
                payloads.append(shown[1])
        kept = table.filter(pa.array(keep, pa.bool_())) if not all(keep) else table
        at = kept.schema.get_field_index
        kept = kept.set_column(at("line"), "line", pa.array(lines, kept.schema.field("line").type))
        kind = kept.schema.field("payload").type
        return kept.set_column(at("payload"), "payload", pa.array(payloads, kind))

    def _row(
        self, source: int, kind: str, subject: str, line: str | None, payload: bytes | None
    ) -> tuple[str | None, bytes | None] | None:
        if line is None:  # erased: nothing of its text is stored
            return line, payload
        verdict = self.policy.plan(int(source), kind, subject).verdict(line, payload or b"")
        if verdict.dropped_by is not None:
            self.withheld += 1
            return None
        if verdict.fired:
            self.redacted += 1
        return verdict.line, (verdict.payload if payload is not None else None)

    def event(self, source: int, kind: str, subject: str, line: str, payload: bytes) -> Shown:
        """An event as the rules for its source, kind and subject let it leave."""
        verdict = self.policy.plan(source, kind, subject).verdict(line, payload)
        if verdict.dropped_by is not None:
            self.withheld += 1
            return Shown(withheld(verdict.dropped_by), None, verdict.dropped_by)
        if verdict.fired:
            self.redacted += 1
        return Shown(verdict.line, decode_payload(verdict.payload) if verdict.payload else None)

    def value(self, value: Any) -> Any:
        """Any JSON value with each string screened (see the module docstring)."""
        counts: Counts = {}
        out = self.redactor.value(self._drop_strings(value), counts)
        self.redacted += bool(counts)
        return out

    def text(self, text: str) -> str:
        out = self.value(text)
        return out if isinstance(out, str) else text

    def _drop_strings(self, value: Any) -> Any:
        if isinstance(value, str):
            rule = next((step.name for step in self.drops if step.found(value)), None)
            if rule is None:
                return value
            self.withheld += 1
            return withheld(rule)
        if isinstance(value, list):
            return [self._drop_strings(v) for v in value]
        if isinstance(value, dict):
            return {k: self._drop_strings(v) for k, v in value.items()}
        return value


def json_size(value: Any) -> int:
    """Bytes of ``value`` as compact UTF-8 JSON: what a budget counts."""
    text = json.dumps(value, ensure_ascii=False, separators=(",", ":"), default=str)
    return len(text.encode("utf-8", "surrogatepass"))


@dataclass(frozen=True)
class Allowance:
    """Rows and bytes one call may still return."""

    rows: int
    bytes: int


def fit(items: Sequence[Any], allowance: Allowance, overhead: int = 256) -> tuple[list[Any], bool]:
    """The leading ``items`` that fit the allowance (``overhead`` bytes kept for the rest of
    the result), and whether any were left out."""
    kept: list[Any] = []
    room = allowance.bytes - overhead
    for item in items[: allowance.rows]:
        room -= json_size(item) + 1
        if room < 0:
            break
        kept.append(item)
    return kept, len(kept) < len(items)


@dataclass
class _Spent:
    rows: int = 0
    bytes: int = 0


class Budgets:
    """Per-call and per-session budgets, shared by every session of one server."""

    def __init__(self, config: McpConfig) -> None:
        self.config = config
        self._spent: OrderedDict[str, _Spent] = OrderedDict()
        self._lock = threading.Lock()

    def allowance(self, session: str) -> Allowance:
        """What the next call of ``session`` may return; :class:`AccessRefused` when the
        session has spent its rows or bytes."""
        rows, size = self.config.max_rows, self.config.max_bytes
        with self._lock:
            spent = self._spent.get(session, _Spent())
        left_rows, left_bytes = rows.session - spent.rows, size.session - spent.bytes
        if left_rows <= 0 or left_bytes <= 0:
            raise AccessRefused(
                f"this session has had its {rows.session:,} rows / {size.session:,} bytes "
                f"(mcp.max_rows.session / mcp.max_bytes.session): {spent.rows:,} rows and "
                f"{spent.bytes:,} bytes so far",
                hint="start a new session, or raise the budgets under mcp: in nerve.yaml",
            )
        return Allowance(min(rows.call, left_rows), min(size.call, left_bytes))

    def charge(self, session: str, rows: int, size: int) -> None:
        with self._lock:
            spent = self._spent.pop(session, None) or _Spent()
            spent.rows += rows
            spent.bytes += size
            self._spent[session] = spent  # newest last: the oldest is forgotten first
            while len(self._spent) > _MAX_SESSIONS:
                self._spent.popitem(last=False)

    def spent(self, session: str) -> tuple[int, int]:
        with self._lock:
            spent = self._spent.get(session, _Spent())
        return spent.rows, spent.bytes
