"""The commands the running daemon answers (its kernel, or one of its extensions): its
status, the senses, a reload or stop, a run's trigger, answer, recheck or override, a
check's fire, a key rotation, a sync round; and their typed results."""

from __future__ import annotations

from typing import Any, ClassVar

from nerve.commands import (
    Command,
    Done,
    Json,
    Record,
    Reply,
    Side,
    Where,
    keyed,
    text,
    version_of,
)
from nerve.errors import NerveError, UsageError


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


class Joined(Record):
    """A ``follow``'s first answer: the stamp it joined at. Every event stamped after it
    follows on the connection; those up to it are in the log already."""

    joined: tuple[int, int]

    def to_json(self) -> Json:
        return {"joined": list(self.joined)}

    @classmethod
    def from_json(cls, obj: Json) -> Joined:
        physical, logical = obj["joined"]
        return cls((int(physical), int(logical)))


class Follow(Command):
    """Push every event the daemon commits from now on, kept by ``filter`` (a tail filter's
    JSON: ``kinds``, ``sources``, ``hidden``), as ``nerve tail -f`` does. A stream: its
    first answer is :class:`Joined`, then one event per line (see
    ``nerve.runtime.followers``)."""

    TYPE: ClassVar[str] = "follow"
    WHERE: ClassVar[Where] = "daemon"
    RESULT: ClassVar[Any] = Joined
    filter: Json = {}  # noqa: RUF012  (a record is frozen, and nothing edits the filter)

    def fields(self) -> Json:
        return {"filter": self.filter}

    @classmethod
    def from_json(cls, obj: Any) -> Follow:
        filt = version_of(obj).get("filter", {})
        if not isinstance(filt, dict):
            raise UsageError('request field "filter" must be an object', field="filter")
        return cls(filt)


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
        return {**out, "dry_run": self.dry_run, **keyed(self.key)}

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
