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

Here, what every command shares; the commands on the log are in ``nerve.commands.log``,
those the running daemon answers in ``nerve.commands.daemon``, and the whole set, by socket
name, in ``nerve.commands.table``.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any, ClassVar, Literal, Protocol, TypeVar, dataclass_transform

from nerve.errors import DaemonError, NerveError, UsageError

if TYPE_CHECKING:
    from nerve.config.models import NerveConfig
    from nerve.events import ErasedEvent, Event
    from nerve.log.drafts import Draft
    from nerve.log.store import EventLog
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


# -- what every command has ------------------------------------------------------------


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


def keyed(key: str | None) -> Json:
    """An idempotency key as a command's field, when there is one."""
    return {} if key is None else {"key": key}


class Done(Record):
    """A command that answers nothing but that it was done."""

    def to_json(self) -> Json:
        return {}

    @classmethod
    def from_json(cls, obj: Json) -> Done:
        return cls()


class Reply(Record):
    """A daemon's answer given as it came (a sense listing, health figures, a run's
    status): the fields of its reply but ``ok``."""

    fields: Json

    def to_json(self) -> Json:
        return dict(self.fields)

    @classmethod
    def from_json(cls, obj: Json) -> Reply:
        return cls({k: v for k, v in obj.items() if k != "ok"})
