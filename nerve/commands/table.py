"""The whole command set, by the name each goes by on the socket."""

from __future__ import annotations

from typing import Any

from nerve.commands import Command, version_of
from nerve.commands.daemon import (
    AnswerRun,
    FireCheck,
    Follow,
    GetStatus,
    ListSenses,
    Override,
    RecheckRun,
    Reload,
    RotateKey,
    RunsStatus,
    Stop,
    SyncRound,
    TriggerRun,
    TriggerSense,
)
from nerve.commands.log import Archive, Compact, Emit, Forget, Import, Pause, Resume, Seal
from nerve.errors import UsageError

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
# commands answered by a stream rather than one reply: the socket's ``streams``
STREAMS: tuple[type[Command], ...] = (Follow,)
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
