"""The commands that write the log: emit, import, seal, compact, pause, resume, forget,
archive, and their typed results. Each ``apply`` runs in the log's single writer."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, ClassVar, cast

from nerve.clock import Hlc
from nerve.commands import (
    Command,
    Json,
    Record,
    Side,
    count,
    items,
    key_of,
    keyed,
    parse_each,
    text,
    version_of,
)
from nerve.errors import UsageError

if TYPE_CHECKING:
    from nerve.events import ErasedEvent, Event
    from nerve.log.drafts import Draft
    from nerve.log.manifest import SegmentInfo
    from nerve.privacy.archive import ArchiveResult
    from nerve.privacy.forget import ForgetResult, Request
    from nerve.privacy.pause import PauseState


def parse_drafts(objects: list[Any], first: int = 0) -> list[Draft]:
    """Request objects as drafts; an error names the event (``first`` events before)."""
    from nerve.log.attest import drafts_of_object

    parsed = parse_each(objects, drafts_of_object, first)  # an attestation adds a draft
    return [draft for drafts in parsed for draft in drafts]


def parse_events(objects: list[Any], first: int = 0) -> list[Event | ErasedEvent]:
    """Request objects as events of a copied log to import; an error names the event."""
    from nerve.log.wire import stored_event_from_json

    return parse_each(objects, stored_event_from_json, first)


def draft_to_json(draft: Draft) -> Json:
    """A draft in the wire form an emit request carries."""
    from nerve.log.wire import row_to_json

    row = {"physical_ns": 0, "logical": 0, "node": "-", "payload_cid": b"", "id": b""}
    row |= {"kind": draft.kind, "subject": draft.subject, "source": draft.source}
    row |= {"trust": draft.trust, "valid_time_ns": draft.valid_time_ns, "line": draft.line}
    wire = row_to_json({**row, "payload": draft.payload})
    for key in ("hlc", "node", "payload_cid", "id"):
        wire.pop(key)
    return wire


# -- results ---------------------------------------------------------------------------


class Emitted(Record):
    """The events an emit stored, and whether its key was used before (``replayed``: the
    first batch's events, nothing stored now)."""

    events: list[Event]
    replayed: bool = False

    def to_json(self) -> Json:
        from nerve.log.wire import event_to_json

        return {"events": [event_to_json(e) for e in self.events], "replayed": self.replayed}

    @classmethod
    def from_json(cls, obj: Json) -> Emitted:
        from nerve.log.wire import event_from_json

        events = [event_from_json(e) for e in obj["events"]]
        return cls(events, obj.get("replayed") is True)


class Imported(Record):
    """How many events an import stored, and whether its key was used before."""

    imported: int
    replayed: bool = False

    def to_json(self) -> Json:
        return {"imported": self.imported, "replayed": self.replayed}

    @classmethod
    def from_json(cls, obj: Json) -> Imported:
        return cls(int(obj["imported"]), obj.get("replayed") is True)


class Sealed(Record):
    """The segment a seal wrote, or None when the tail was empty."""

    segment: SegmentInfo | None

    def to_json(self) -> Json:
        return {"sealed": self.segment.to_json() if self.segment else None}

    @classmethod
    def from_json(cls, obj: Json) -> Sealed:
        from nerve.log.manifest import SegmentInfo

        sealed = obj.get("sealed")
        return cls(SegmentInfo.from_json(sealed) if sealed else None)


class Compacted(Record):
    """What a compaction did: segments replaced, segments written, rows in them."""

    merged: int
    written: int
    rows: int

    def to_json(self) -> Json:
        return {"merged": self.merged, "written": self.written, "rows": self.rows}

    @classmethod
    def from_json(cls, obj: Json) -> Compacted:
        return cls(int(obj["merged"]), int(obj["written"]), int(obj["rows"]))


class Paused(Record):
    """The pause a pause began."""

    capture: PauseState

    def to_json(self) -> Json:
        return {"capture": self.capture.to_json()}

    @classmethod
    def from_json(cls, obj: Json) -> Paused:
        from nerve.privacy.pause import PauseState

        return cls(PauseState.from_json(obj["capture"]))


class Resumed(Record):
    """The pause a resume ended, or None when capture was not paused."""

    ended: PauseState | None

    def to_json(self) -> Json:
        return {"ended": self.ended.to_json() if self.ended else None}

    @classmethod
    def from_json(cls, obj: Json) -> Resumed:
        from nerve.privacy.pause import PauseState

        ended = obj.get("ended")
        return cls(PauseState.from_json(ended) if ended else None)


class Forgotten(Record):
    """What a forget erased."""

    result: ForgetResult

    def to_json(self) -> Json:
        return {"result": self.result.to_json()}

    @classmethod
    def from_json(cls, obj: Json) -> Forgotten:
        from nerve.privacy.forget import ForgetResult

        return cls(ForgetResult.from_json(obj["result"]))


class Archived(Record):
    """What an archive moved."""

    result: ArchiveResult

    def to_json(self) -> Json:
        return {"result": self.result.to_json()}

    @classmethod
    def from_json(cls, obj: Json) -> Archived:
        from nerve.privacy.archive import ArchiveResult

        return cls(ArchiveResult(**obj["result"]))


# -- commands --------------------------------------------------------------------------


class Emit(Command):
    """Store drafts as one group commit, all or nothing; with ``key``, once per key."""

    TYPE: ClassVar[str] = "emit"
    RESULT: ClassVar[Any] = Emitted
    drafts: tuple[Draft, ...]
    key: str | None = None

    def fields(self) -> Json:
        return {"events": [draft_to_json(d) for d in self.drafts], **keyed(self.key)}

    @classmethod
    def from_json(cls, obj: Any) -> Emit:
        obj = version_of(obj)
        return cls(tuple(parse_drafts(items(obj, "events"))), key_of(obj))

    def apply(self, side: Side) -> Emitted:
        from nerve.log.attest import check_batch
        from nerve.log.wire import event_from_json

        drafts = side.policy.capture_all(self.drafts)  # may redact or drop
        check_batch(drafts, side.config.attestation.keys)  # what is stored was vouched for
        rows, replayed = side.append(drafts, self.key)
        return Emitted([event_from_json(r) for r in rows], replayed)


class Import(Command):
    """Import whole events of another log, all or nothing; with ``key``, once per key."""

    TYPE: ClassVar[str] = "import"
    RESULT: ClassVar[Any] = Imported
    events: tuple[Event | ErasedEvent, ...]
    key: str | None = None

    def fields(self) -> Json:
        from nerve.log.wire import event_to_json

        return {"events": [event_to_json(e) for e in self.events], **keyed(self.key)}

    @classmethod
    def from_json(cls, obj: Any) -> Import:
        obj = version_of(obj)
        return cls(tuple(parse_events(items(obj, "events"))), key_of(obj))

    def apply(self, side: Side) -> Imported:
        from nerve.events import Event
        from nerve.log.attest import check_batch

        # the one check of an import, wherever it runs: its attestations, then the privacy
        # rules (ids bind payloads: refuse, never edit); an erased event holds no text
        numbers = [i for i, e in enumerate(self.events) if isinstance(e, Event)]
        whole = [cast(Event, self.events[i]) for i in numbers]
        check_batch(whole, side.config.attestation.keys, numbers)
        side.policy.screen(whole, numbers)
        return Imported(*side.import_events(list(self.events), self.key))


class Seal(Command):
    """Seal the log's tail into a segment now."""

    TYPE: ClassVar[str] = "seal"
    RESULT: ClassVar[Any] = Sealed

    @classmethod
    def from_json(cls, obj: Any) -> Seal:
        version_of(obj)
        return cls()

    def apply(self, side: Side) -> Sealed:
        return Sealed(side.with_log(lambda log: log.seal()))


class Compact(Command):
    """Merge small segments into ones of about ``target_rows`` rows."""

    TYPE: ClassVar[str] = "compact"
    RESULT: ClassVar[Any] = Compacted
    target_rows: int = 1_000_000

    def fields(self) -> Json:
        return {"target_rows": self.target_rows}

    @classmethod
    def from_json(cls, obj: Any) -> Compact:
        return cls(count(version_of(obj), "target_rows", 1_000_000) or 1_000_000)

    def apply(self, side: Side) -> Compacted:
        done = side.with_log(lambda log: log.compact(target_rows=self.target_rows))
        return Compacted(done.merged, done.written, done.rows)


class Pause(Command):
    """Stop the senses, for ``for_ms`` milliseconds or until a resume."""

    TYPE: ClassVar[str] = "pause"
    RESULT: ClassVar[Any] = Paused
    for_ms: int | None = None

    def fields(self) -> Json:
        return {"for_ms": self.for_ms}

    @classmethod
    def from_json(cls, obj: Any) -> Pause:
        return cls(count(version_of(obj), "for_ms", None))

    def apply(self, side: Side) -> Paused:
        return Paused(side.pause(self.for_ms))


class Resume(Command):
    """Start the senses again."""

    TYPE: ClassVar[str] = "resume"
    RESULT: ClassVar[Any] = Resumed

    @classmethod
    def from_json(cls, obj: Any) -> Resume:
        version_of(obj)
        return cls()

    def apply(self, side: Side) -> Resumed:
        return Resumed(side.resume())


class Forget(Command):
    """Erase the events a selection names (or those past the retention limits)."""

    TYPE: ClassVar[str] = "forget"
    RESULT: ClassVar[Any] = Forgotten
    request: Request

    def fields(self) -> Json:
        return self.request.to_json()

    @classmethod
    def from_json(cls, obj: Any) -> Forget:
        from nerve.privacy.forget import Request

        return cls(Request.from_json(version_of(obj)))

    def apply(self, side: Side) -> Forgotten:
        from nerve.privacy.forget import apply

        retention = side.config.log.retention
        return Forgotten(side.with_log(lambda log: apply(log, self.request, retention)))


class Archive(Command):
    """Move whole segments older than ``before`` into the folder ``to``."""

    TYPE: ClassVar[str] = "archive"
    RESULT: ClassVar[Any] = Archived
    before: Hlc
    to: str
    vacuum: bool = False

    def fields(self) -> Json:
        return {"before": list(self.before), "to": self.to, "vacuum": self.vacuum}

    @classmethod
    def from_json(cls, obj: Any) -> Archive:
        obj = version_of(obj)
        before = obj.get("before")
        if not (
            isinstance(before, list) and len(before) == 2 and all(type(v) is int for v in before)
        ):
            message = "request field 'before' must be [physical_ns, logical]"
            raise UsageError(message, field="before")
        return cls(Hlc(*before), text(obj, "to"), obj.get("vacuum") is True)

    def apply(self, side: Side) -> Archived:
        from pathlib import Path

        from nerve.privacy.archive import apply

        to = Path(self.to)
        return Archived(side.with_log(lambda log: apply(log, self.before, to, vacuum=self.vacuum)))
