"""The one privacy screen every reader's surface calls: what may leave, row by row.

``nerve ui`` (its pages, SQL box and JSON twins), ``nerve mcp`` (its tools and sandbox) and
an agent's ``ask`` read the log only through a :class:`Screen`. Capture already redacted
what the rules of the day matched; rules added since, and text a query derives, are screened
again on the way out with the same detector pack and rules (:mod:`nerve.privacy.policy`):

- an *event* goes through the rules that apply to its source, kind and subject, as at
  capture: a drop rule or exclusion that matches withholds it, redaction replaces what
  matches in its line and payload (:meth:`Screen.rows` for stored rows, :meth:`Screen.event`
  for one event);
- any other *value* (a query's cells, an answer's text) has every string redacted by the
  detectors and every regex rule, whatever their scope, since a cell has no source; a string
  a drop rule's regex matches is withheld whole (:meth:`Screen.value`).

**Addresses of screened rows.** A row's ``payload_cid`` is blake3 of its stored payload, and
its ``id`` is blake3 over every field, that payload address and the line among them. Shown
next to a redacted line, either is an oracle: hash each guess of the hidden text (a 4-digit
code takes under a second) until one matches. So a row the rules change leaves with both
replaced by keyed hashes (:meth:`Screen.shown_id`, :meth:`Screen.shown_cid`): blake3 keyed by
a secret of the reading process, never stored nor shown. Within that process they are stable,
so a page's permalink, a citation or ``WHERE id = …`` over the screened rows finds the row
again; they match no stored id, and a later process shows other ones. A row the rules leave
as it is keeps its stored id (its text is shown whole: its id tells nothing more).

nerve's own records (every kind but a sense's ``observation``) name events by id (a decision
its observation, an answer its citations);
a stored id named there is as much an oracle, and that record's own id hashes it. So a record
of nerve's that names a screened row's id names it keyed instead, and is a screened row itself
(``hidden``: the stored ids, hex, of the rows screened elsewhere, such as another segment).

An erased event (a payload removed by ``nerve forget``) is shown as erased, never as text,
and with keyed addresses: its stored id hashes the erased line with fields that are all
shown, so it would check each guess of the line.
"""

from __future__ import annotations

import re
import secrets
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import blake3

from nerve.events import cid, decode_payload
from nerve.privacy.policy import Policy
from nerve.privacy.scan import Counts, Pass, Redactor, detector_pass
from nerve.privacy.settings import PrivacyConfig

if TYPE_CHECKING:
    from collections.abc import Collection

    import pyarrow as pa

__all__ = ["ERASED", "Screen", "Shown", "named_ids", "withheld"]

ERASED = "[erased]"
_SCREENED = ("source", "kind", "subject", "line", "payload")
_PROCESS_KEY = secrets.token_bytes(32)  # this process's: screened addresses are keyed by it
_ID_TAG = b"nerve.screened.id.v1"
_CID_TAG = b"nerve.screened.cid.v1"
_ID_TEXT = re.compile(rb"[0-9a-f]{64}")  # an id in JSON: 64 hex digits
_ID_CBOR = re.compile(rb"\x58\x20(.{32})", re.DOTALL)  # in CBOR (a chain link): a 32-byte string
OBSERVATION = "observation"  # what a sense reports: it names no event


def named_ids(kind: str, payload: bytes | None) -> set[str]:
    """The event ids (hex) a record of nerve's own (any kind but a sense's ``observation``:
    a decision, a chain link, an answer, a run) names in its payload, as JSON or CBOR."""
    if kind == OBSERVATION or not payload:
        return set()
    found = {m.decode() for m in _ID_TEXT.findall(payload)}
    return found | {m.hex() for m in _ID_CBOR.findall(payload)}


def withheld(rule: str) -> str:
    """What stands for text the rule ``rule`` withholds."""
    return f"[withheld:{rule}]"


@dataclass(frozen=True)
class Shown:
    """An event's line and payload as they may leave (``None``: withheld by ``rule``);
    ``changed``: the rules withheld or redacted something (its id must be keyed)."""

    line: str
    data: Any
    rule: str | None = None
    changed: bool = False
    subject: str = ""  # a withheld row's is its rule's marker too: what it named is withheld


class Screen:
    """The ``privacy:`` rules, compiled once, applied to what a reader is shown; counts what
    it withheld and redacted. ``key`` keys screened rows' addresses (default: a random key
    of this process; see the module docstring)."""

    def __init__(self, config: PrivacyConfig, *, key: bytes | None = None) -> None:
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
        self._key = _PROCESS_KEY if key is None else blake3.blake3(key).digest()
        self.withheld = 0
        self.redacted = 0

    def shown_id(self, event_id: bytes) -> bytes:
        """The id a screened row is shown with: keyed, so no guess of its text checks."""
        return blake3.blake3(_ID_TAG + bytes(event_id), key=self._key).digest()

    def shown_cid(self, payload_cid: bytes) -> bytes:
        """The payload address a screened row is shown with (keyed, as :meth:`shown_id`)."""
        return blake3.blake3(_CID_TAG + bytes(payload_cid), key=self._key).digest()

    def rows(self, table: pa.Table, hidden: Collection[str] = ()) -> pa.Table:
        """Stored rows as they may leave: those a drop rule or exclusion withholds taken
        out, the others' line and payload redacted by the rules for their source, kind and
        subject, and a screened row's ``id`` and ``payload_cid`` keyed (as a stored id it or
        ``hidden`` screens, where a record of nerve's names one). Every surface reads only
        these, so no SQL over them (a transform, a hex of the payload, a hash of a guess)
        can bring back what the rules hold back."""
        import pyarrow as pa

        names = (*_SCREENED, "id", "payload_cid")
        rows = list(zip(*(table.column(n).to_pylist() for n in names), strict=True))
        shown = [self._row(*row[:5]) for row in rows]
        screened = {
            bytes(r[5]).hex() for r, s in zip(rows, shown, strict=True) if s is None or s[2]
        }
        screened |= set(hidden)
        out: dict[str, list[Any]] = {
            "line": [], "payload": [], "id": [], "payload_cid": [], "subject": []
        }  # fmt: skip
        for row, one in zip(rows, shown, strict=True):
            if one is None:
                continue
            line, payload, changed = one
            renamed = self._renamed(row[1], payload, screened)
            subject = self.text(row[2]) if row[2] else row[2]
            changed = changed or renamed != payload or subject != row[2]
            out["subject"].append(subject)
            out["line"].append(line)
            out["payload"].append(renamed)
            if not changed:
                out["id"].append(row[5])
                out["payload_cid"].append(row[6])
                continue
            stored = row[6] if row[6] is not None else cid(bytes(row[4] or b""))
            out["id"].append(self.shown_id(row[5]))
            out["payload_cid"].append(self.shown_cid(stored))
        keep = [one is not None for one in shown]
        kept = table.filter(pa.array(keep, pa.bool_())) if not all(keep) else table
        for name, values in out.items():
            at = kept.schema.get_field_index(name)
            kept = kept.set_column(at, name, pa.array(values, kept.schema.field(name).type))
        return kept

    def changes(self, source: int, kind: str, subject: str, line: str, payload: bytes) -> bool:
        """Whether the rules withhold or redact this event (nothing counted)."""
        plan = self.policy.plan(int(source), kind, subject)
        return plan.verdict(line, payload, subject).changed

    def _renamed(self, kind: str, payload: bytes | None, screened: Collection[str]) -> Any:
        """``payload`` with each screened row's id it names keyed (a record of nerve's)."""
        if not screened or payload is None or not named_ids(kind, payload) & set(screened):
            return payload

        def as_text(found: re.Match[bytes]) -> bytes:
            text = found.group().decode()
            return (
                self.shown_id(bytes.fromhex(text)).hex().encode()
                if text in screened
                else found.group()
            )

        def as_bytes(found: re.Match[bytes]) -> bytes:
            raw = found.group(1)
            return b"\x58\x20" + self.shown_id(raw) if raw.hex() in screened else found.group()

        return _ID_CBOR.sub(as_bytes, _ID_TEXT.sub(as_text, payload))

    def _row(
        self, source: int, kind: str, subject: str, line: str | None, payload: bytes | None
    ) -> tuple[str | None, bytes | None, bool] | None:
        """A row's line, payload and whether the rules changed it; None: withheld."""
        if line is None:  # erased: its stored id (and address) would check a guess of it
            return line, payload, True
        plan = self.policy.plan(int(source), kind, subject)
        verdict = plan.verdict(line, payload or b"", subject)
        if verdict.dropped_by is not None:
            self.withheld += 1
            return None
        if verdict.fired:
            self.redacted += 1
        shown = verdict.payload if payload is not None else None
        return verdict.line, shown, bool(verdict.fired)

    def event(
        self,
        source: int,
        kind: str,
        subject: str,
        line: str,
        payload: bytes,
        hidden: Collection[str] = (),
    ) -> Shown:
        """An event as the rules for its source, kind and subject let it leave; ``hidden``:
        stored ids (hex) of screened rows it may name (see the module docstring)."""
        verdict = self.policy.plan(source, kind, subject).verdict(line, payload, subject)
        if verdict.dropped_by is not None:
            self.withheld += 1
            marker = withheld(verdict.dropped_by)
            return Shown(marker, None, verdict.dropped_by, changed=True, subject=marker)
        if verdict.fired:
            self.redacted += 1
        renamed = self._renamed(kind, verdict.payload, hidden)
        data = decode_payload(renamed) if renamed else None
        shown = self.text(subject)
        changed = bool(verdict.fired) or renamed != verdict.payload or shown != subject
        return Shown(verdict.line, data, changed=changed, subject=shown)

    def value(self, value: Any) -> Any:
        """Any JSON value with each string screened (see the module docstring)."""
        counts: Counts = {}
        out = self.redactor.value(self._drop_strings(value), counts)
        self.redacted += bool(counts)
        return out

    def text(self, text: str) -> str:
        """One string screened as :meth:`value` screens each string."""
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
            return {self._drop_strings(k): self._drop_strings(v) for k, v in value.items()}
        return value
