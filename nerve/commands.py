"""Every operation that writes a workspace's log or asks its daemon, as one typed command.

A command is a frozen value with a ``TYPE`` (its name on the socket), ``to_json`` and
``from_json`` (the socket's form, versioned ``"v": 1``; junk is refused with an error naming
the field), and one ``apply`` that runs inside the log's single writer, whichever process
that is: this one (``nerve.transport.Direct``) or the daemon (``nerve.runtime.control``).
``apply`` sees the writer as a :class:`Side`; privacy rules and attestations are checked
there, once. ``WHERE`` says where a command can run: ``either``, or ``daemon`` only (it
needs the running senses, workflows, attention or sync; the daemon's kernel or one of its
extensions answers it, and an operation that has a way without a daemon gives it as the
``log`` half of ``Transport.either``).

A command's result is typed too, with ``to_json``/``from_json``: the fields of the
daemon's reply, so the socket's replies keep their shape.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any, ClassVar, Literal, Protocol, TypeVar, dataclass_transform

from nerve.clock import Hlc
from nerve.errors import DaemonError, NerveError, UsageError

if TYPE_CHECKING:
    from nerve.config.models import NerveConfig
    from nerve.events import ErasedEvent, Event
    from nerve.log.drafts import Draft
    from nerve.log.manifest import SegmentInfo
    from nerve.log.store import EventLog
    from nerve.privacy.archive import ArchiveResult
    from nerve.privacy.forget import ForgetResult, Request
    from nerve.privacy.pause import PauseState
    from nerve.privacy.policy import Policy

VERSION = 1
Where = Literal["either", "daemon"]
T = TypeVar("T")
Json = dict[str, Any]


class Side(Protocol):
    """The log's single writer as a command sees it: this process over the open log, or the
    daemon over its committer and senses."""

    @property
    def config(self) -> NerveConfig: ...

    @property
    def policy(self) -> Policy: ...

    def append(self, drafts: list[Draft], key: str | None) -> tuple[list[Json], bool]:
        """Store drafts as they are (already screened); the stored rows in wire form, and
        whether ``key`` was used before (nothing new stored)."""
        ...

    def import_events(self, events: list[Event | ErasedEvent], key: str | None) -> tuple[int, bool]:
        """Import whole events (already screened); how many, and whether ``key`` replayed."""
        ...

    def with_log(self, work: Callable[[EventLog], T]) -> T:
        """Run ``work`` with the log, every append before it stored first."""
        ...

    def pause(self, for_ms: int | None) -> PauseState: ...

    def resume(self) -> PauseState | None: ...


def no_daemon() -> DaemonError:
    return DaemonError(
        "the daemon is not running", hint="start it with `nerve start` or `nerve dev`"
    )


# -- fields ------------------------------------------------------------------------------


def version_of(obj: Any) -> Json:
    """``obj`` as a command's JSON object; ``UsageError`` for junk or another version (a
    request without ``v`` is read as version 1, as clients before the field sent it)."""
    if not isinstance(obj, dict):
        raise UsageError("a command must be a JSON object")
    if obj.get("v", VERSION) != VERSION:
        raise UsageError(f"command field 'v' must be {VERSION} (got {obj['v']!r})", field="v")
    return obj


def text(obj: Json, key: str, default: str | None = None) -> str:
    """A field that must be a string with something in it (``default`` when absent)."""
    value = obj.get(key, default)
    if not isinstance(value, str) or not value.strip():
        raise UsageError(f"request field {key!r} must be a non-empty string", field=key)
    return value


def items(obj: Json, key: str) -> list[Any]:
    value = obj.get(key)
    if not isinstance(value, list):
        raise UsageError(f"request field {key!r} must be a list", field=key)
    return value


def count(obj: Json, key: str, default: int | None) -> int | None:
    value = obj.get(key, default)
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise UsageError(f"request field {key!r} must be a positive integer", field=key)
    return value


def key_of(obj: Json) -> str | None:
    """The optional idempotency key of an emit or import (see nerve.log.batchkeys)."""
    key = obj.get("key")
    if key is not None and not isinstance(key, str):
        raise UsageError("request field 'key' must be a string", field="key")
    return key


def flag(obj: Json, key: str) -> bool:
    value = obj.get(key, False)
    if not isinstance(value, bool):
        raise UsageError(f"request field {key!r} must be true or false", field=key)
    return value


def parse_each(objects: list[Any], parse: Callable[[Any], Any], first: int = 0) -> list[Any]:
    """``parse`` every object of a request; an error names the event (1-based, counting
    ``first`` events sent before this request) and the field."""
    out = []
    for index, obj in enumerate(objects, start=first):
        try:
            out.append(parse(obj))
        except NerveError as exc:
            where = f"events[{index}]" + (f".{exc.field}" if exc.field else "")
            raise exc.located(f"event {index + 1}", field=where) from None
    return out


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


# -- records -----------------------------------------------------------------------------


@dataclass_transform()
class Record:
    """A frozen value with named fields, declared as annotations (a default as the class
    attribute): what ``@dataclass(frozen=True)`` makes, without generating code for each of
    the many classes here when a command line starts."""

    __slots__ = ()
    FIELDS: ClassVar[tuple[str, ...]] = ()

    def __init_subclass__(cls) -> None:
        own = vars(cls).get("__annotations__", {})
        cls.FIELDS = (*cls.FIELDS, *(n for n, t in own.items() if "ClassVar" not in str(t)))

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        if len(args) > len(self.FIELDS) or set(kwargs) - set(self.FIELDS[len(args) :]):
            raise TypeError(f"{type(self).__name__} takes fields {self.FIELDS}")
        given = {**dict(zip(self.FIELDS, args, strict=False)), **kwargs}
        for name in self.FIELDS:
            if name not in given and not hasattr(type(self), name):
                raise TypeError(f"{type(self).__name__} needs field {name!r}")
            object.__setattr__(self, name, given.get(name, getattr(type(self), name, None)))

    def __setattr__(self, name: str, value: Any) -> None:
        raise AttributeError(f"{type(self).__name__} is frozen: {name!r} cannot change")

    def _values(self) -> tuple[Any, ...]:
        return tuple(getattr(self, name) for name in self.FIELDS)

    def __eq__(self, other: object) -> bool:
        return (
            isinstance(other, Record)
            and type(other) is type(self)
            and self._values() == other._values()
        )

    def __hash__(self) -> int:
        return hash((type(self), self._values()))

    def __repr__(self) -> str:
        shown = ", ".join(f"{name}={getattr(self, name)!r}" for name in self.FIELDS)
        return f"{type(self).__name__}({shown})"


# -- results -----------------------------------------------------------------------------


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


class Done(Record):
    """A command that answers nothing but that it was done."""

    def to_json(self) -> Json:
        return {}

    @classmethod
    def from_json(cls, obj: Json) -> Done:
        return cls()


class Health(Record):
    """Whether a daemon runs, and its health figures when one does (pid, uptime_s, events,
    senses, ...)."""

    running: bool
    figures: Json = {}  # noqa: RUF012  (a record is frozen, and nothing edits the figures)

    def to_json(self) -> Json:
        return {"status": self.figures}

    @classmethod
    def from_json(cls, obj: Json) -> Health:
        return cls(True, dict(obj["status"]))


class Senses(Record):
    """Every sense, one row each (its configuration, and the daemon's figures when one runs)."""

    senses: list[Json]

    def to_json(self) -> Json:
        return {"senses": self.senses}

    @classmethod
    def from_json(cls, obj: Json) -> Senses:
        return cls(list(obj["senses"]))


class Reply(Record):
    """A daemon's answer given as it came (a sense listing, health figures, a run's
    status): the fields of its reply but ``ok``."""

    fields: Json

    def to_json(self) -> Json:
        return dict(self.fields)

    @classmethod
    def from_json(cls, obj: Json) -> Reply:
        return cls({k: v for k, v in obj.items() if k != "ok"})


# -- commands ----------------------------------------------------------------------------


class Command(Record):
    """What every command has: its socket name, where it runs, its result's type."""

    TYPE: ClassVar[str]
    WHERE: ClassVar[Where] = "either"
    RESULT: ClassVar[Any]

    def fields(self) -> Json:
        """The command's own fields on the socket (beside ``v`` and ``type``)."""
        return {}

    def to_json(self) -> Json:
        return {"v": VERSION, "type": self.TYPE, **self.fields()}

    def apply(self, side: Side) -> Any:
        """Run the command in the log's single writer (only a command that can run there)."""
        raise self.absent()

    def absent(self) -> NerveError:
        """The error for this command when no daemon runs and it needs one."""
        return no_daemon()

    def result_of(self, reply: Json) -> Any:
        return self.RESULT.from_json(reply)


class Emit(Command):
    """Store drafts as one group commit, all or nothing; with ``key``, once per key."""

    TYPE: ClassVar[str] = "emit"
    RESULT: ClassVar[Any] = Emitted
    drafts: tuple[Draft, ...]
    key: str | None = None

    def fields(self) -> Json:
        return {"events": [draft_to_json(d) for d in self.drafts], **_keyed(self.key)}

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

        return {"events": [event_to_json(e) for e in self.events], **_keyed(self.key)}

    @classmethod
    def from_json(cls, obj: Any) -> Import:
        obj = version_of(obj)
        return cls(tuple(parse_events(items(obj, "events"))), key_of(obj))

    def apply(self, side: Side) -> Imported:
        from nerve.events import Event
        from nerve.log.attest import check_batch

        whole = [e for e in self.events if isinstance(e, Event)]  # an erased one holds no text
        check_batch(whole, side.config.attestation.keys)
        side.policy.screen(whole)  # ids bind payloads: refuse, never edit
        return Imported(*side.import_events(list(self.events), self.key))


def _keyed(key: str | None) -> Json:
    return {} if key is None else {"key": key}


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


class GetStatus(Command):
    """Whether a daemon runs, and its health figures."""

    TYPE: ClassVar[str] = "status"
    RESULT: ClassVar[Any] = Health

    @classmethod
    def from_json(cls, obj: Any) -> GetStatus:
        version_of(obj)
        return cls()

    def apply(self, side: Side) -> Health:
        return Health(False)  # answered here: no daemon runs


class ListSenses(Command):
    """Every sense: the running daemon's figures for each, else nerve.yaml's."""

    TYPE: ClassVar[str] = "list-senses"
    RESULT: ClassVar[Any] = Senses

    @classmethod
    def from_json(cls, obj: Any) -> ListSenses:
        version_of(obj)
        return cls()

    def apply(self, side: Side) -> Senses:
        from nerve.runtime.senses import sense_rows

        return Senses(sense_rows(side.config))


class TriggerSense(Command):
    """Compute one sense now."""

    TYPE: ClassVar[str] = "trigger-sense"
    WHERE: ClassVar[Where] = "daemon"
    RESULT: ClassVar[Any] = Done
    sense: str

    def fields(self) -> Json:
        return {"sense": self.sense}

    @classmethod
    def from_json(cls, obj: Any) -> TriggerSense:
        return cls(text(version_of(obj), "sense"))

    def absent(self) -> NerveError:
        return UsageError(
            "the daemon is not running", hint="start it with `nerve start` or `nerve dev`"
        )


class Reload(Command):
    """Read nerve.yaml again and apply it (refused, and recorded, when it does not validate)."""

    TYPE: ClassVar[str] = "reload"
    WHERE: ClassVar[Where] = "daemon"
    RESULT: ClassVar[Any] = Done

    @classmethod
    def from_json(cls, obj: Any) -> Reload:
        version_of(obj)
        return cls()


class Stop(Command):
    """Stop the daemon."""

    TYPE: ClassVar[str] = "stop"
    WHERE: ClassVar[Where] = "daemon"
    RESULT: ClassVar[Any] = Done

    @classmethod
    def from_json(cls, obj: Any) -> Stop:
        version_of(obj)
        return cls()


class TriggerRun(Command):
    """Start a run of a workflow; with a ``key`` used before, the earlier run is named."""

    TYPE: ClassVar[str] = "trigger-workflow"
    WHERE: ClassVar[Where] = "daemon"
    RESULT: ClassVar[Any] = Reply
    workflow: str
    prompt: str = ""
    max_rounds: int | None = None
    dry_run: bool = False
    key: str | None = None

    def fields(self) -> Json:
        out = {"workflow": self.workflow, "prompt": self.prompt, "max_rounds": self.max_rounds}
        return {**out, "dry_run": self.dry_run, **_keyed(self.key)}

    @classmethod
    def from_json(cls, obj: Any) -> TriggerRun:
        from nerve.contract import WorkflowTrigger

        obj = version_of(obj)
        raw = {"name": text(obj, "workflow"), "prompt": obj.get("prompt", "")}
        raw["max_rounds"] = obj.get("max_rounds", obj.get("maxRounds"))
        raw |= {"dry_run": obj.get("dry_run", False), "key": obj.get("key")}
        t = WorkflowTrigger.parse(raw)
        return cls(t.name, t.prompt, t.max_rounds, t.dry_run, t.key)


class AnswerRun(Command):
    """Answer a waiting run's question, as ``by``."""

    TYPE: ClassVar[str] = "workflow-answer"
    WHERE: ClassVar[Where] = "daemon"
    RESULT: ClassVar[Any] = Reply
    run: str
    choice: str
    by: str

    def fields(self) -> Json:
        return {"run": self.run, "choice": self.choice, "by": self.by}

    @classmethod
    def from_json(cls, obj: Any) -> AnswerRun:
        obj = version_of(obj)
        return cls(text(obj, "run"), text(obj, "choice"), text(obj, "by", "cli"))


class RecheckRun(Command):
    """Run a run's checks again."""

    TYPE: ClassVar[str] = "workflow-recheck"
    WHERE: ClassVar[Where] = "daemon"
    RESULT: ClassVar[Any] = Reply
    run: str

    def fields(self) -> Json:
        return {"run": self.run}

    @classmethod
    def from_json(cls, obj: Any) -> RecheckRun:
        return cls(text(version_of(obj), "run"))


class Override(Command):
    """Let a held run pass its gate, for ``reason``, by a person at terminal ``tty``."""

    TYPE: ClassVar[str] = "workflow-override"
    WHERE: ClassVar[Where] = "daemon"
    RESULT: ClassVar[Any] = Reply
    run: str
    reason: str
    by: str
    tty: str | None = None
    interactive: bool = False

    def fields(self) -> Json:
        out = {"run": self.run, "reason": self.reason, "by": self.by, "tty": self.tty}
        return {**out, "interactive": self.interactive}

    @classmethod
    def from_json(cls, obj: Any) -> Override:
        obj = version_of(obj)
        tty = obj.get("tty")
        return cls(
            text(obj, "run"),
            text(obj, "reason"),
            text(obj, "by", "unknown"),
            tty if isinstance(tty, str) else None,
            obj.get("interactive") is True,
        )


class RunsStatus(Command):
    """The workflow engine's runs in progress."""

    TYPE: ClassVar[str] = "workflow-status"
    WHERE: ClassVar[Where] = "daemon"
    RESULT: ClassVar[Any] = Reply

    @classmethod
    def from_json(cls, obj: Any) -> RunsStatus:
        version_of(obj)
        return cls()


class FireCheck(Command):
    """Fire one check on a workspace file, recorded in the log as part of ``run``."""

    TYPE: ClassVar[str] = "check-fire"
    WHERE: ClassVar[Where] = "daemon"
    RESULT: ClassVar[Any] = Reply
    check: str
    path: str
    run: str = "manual"
    stage: str = "manual"

    def fields(self) -> Json:
        return {"check": self.check, "path": self.path, "run": self.run, "stage": self.stage}

    @classmethod
    def from_json(cls, obj: Any) -> FireCheck:
        obj = version_of(obj)
        run, stage = obj.get("run") or "manual", obj.get("stage") or "manual"
        return cls(text(obj, "check"), text(obj, "path"), str(run), str(stage))


class RotateKey(Command):
    """Move the surfacing chain to a new signing key."""

    TYPE: ClassVar[str] = "rotate-key"
    WHERE: ClassVar[Where] = "daemon"
    RESULT: ClassVar[Any] = Reply

    @classmethod
    def from_json(cls, obj: Any) -> RotateKey:
        version_of(obj)
        return cls()


class SyncRound(Command):
    """One sync round now: send, receive, announce."""

    TYPE: ClassVar[str] = "sync"
    WHERE: ClassVar[Where] = "daemon"
    RESULT: ClassVar[Any] = Reply

    @classmethod
    def from_json(cls, obj: Any) -> SyncRound:
        version_of(obj)
        return cls()


COMMANDS: tuple[type[Command], ...] = (
    Emit,
    Import,
    Seal,
    Compact,
    Pause,
    Resume,
    Forget,
    Archive,
    GetStatus,
    ListSenses,
    TriggerSense,
    Reload,
    Stop,
    TriggerRun,
    AnswerRun,
    RecheckRun,
    Override,
    RunsStatus,
    FireCheck,
    RotateKey,
    SyncRound,
)
BY_TYPE: dict[str, type[Command]] = {c.TYPE: c for c in COMMANDS}


def command_of(obj: Any) -> Command:
    """The command a socket request carries; ``UsageError`` naming the field at fault."""
    obj = version_of(obj)
    cls = BY_TYPE.get(obj.get("type"))
    if cls is None:
        known = ", ".join(sorted(BY_TYPE))
        raise UsageError(f"unknown request type {obj.get('type')!r} (known: {known})", field="type")
    made: Command = cls.from_json(obj)  # type: ignore[attr-defined]
    return made
