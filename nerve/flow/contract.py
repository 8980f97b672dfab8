"""The workflow contract: what a role and a moderator receive and return.

A workflow is a folder ``workflows/<name>/`` holding ``workflow.py``, which exports::

    roles = {"draft": draft, "review": review}   # name -> role (sync or async)
    def moderator(context, round, max_rounds):   # -> a role name or END (sync or async)
        ...
    checks = ["report-shape"]                    # optional: check ids it imports
    outputs = ["report.md"]                      # optional: outputs every run declares
    role_timeout = 600                           # optional: seconds one role call may take

A role is ``role(start, messages)`` or ``role(start, messages, ctx)``: ``start`` is the run's
:class:`StartFrame`, ``messages`` the :class:`Message` of every earlier role (never the start
frame), ``ctx`` a :class:`RoleContext`. It returns a :class:`RoleResult`, a mapping
``{"content": str, "meta": {...}}`` or a plain ``str`` (content, empty meta); or, to ask a
person, a :class:`Question` or ``{"ask": {"question": ..., "options": [...]}}``. The run then
waits; once answered the same role is called again with ``ctx.answer`` set.

A role declares files it wrote into ``ctx.output_dir`` with ``meta={"outputs": ["a.md"]}``
(paths relative to that folder). The moderator gets ``Start(start)`` first, then
``Step(message)`` after each role, with the number of role messages so far and the run's cap.

This module is imported by the workflow worker process, so it depends on the standard library
only.
"""

from __future__ import annotations

from collections.abc import Awaitable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final, Literal, Protocol

__all__ = [
    "END",
    "START",
    "Answer",
    "Message",
    "Moderator",
    "ModeratorContext",
    "Question",
    "Role",
    "RoleContext",
    "RoleResult",
    "Start",
    "StartFrame",
    "Step",
]

START: Final = "__start__"
"""The role name of a run's start frame; never a role a moderator may pick."""

END: Final = "__end__"
"""What a moderator returns to finish a run."""


@dataclass(frozen=True, slots=True)
class StartFrame:
    """How a run was asked for: its prompt, its round cap and who asked."""

    run: str
    workflow: str
    prompt: str
    max_rounds: int
    source: str = "cli"
    sense: str | None = None
    dry_run: bool = False

    @property
    def role(self) -> str:
        return START

    @property
    def content(self) -> str:
        """The prompt, under the name every message uses for its text."""
        return self.prompt

    def to_json(self) -> dict[str, Any]:
        return {
            "run": self.run,
            "workflow": self.workflow,
            "prompt": self.prompt,
            "max_rounds": self.max_rounds,
            "source": self.source,
            "sense": self.sense,
            "dry_run": self.dry_run,
        }

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> StartFrame:
        return cls(
            run=str(data["run"]),
            workflow=str(data["workflow"]),
            prompt=str(data.get("prompt", "")),
            max_rounds=int(data["max_rounds"]),
            source=str(data.get("source", "cli")),
            sense=data.get("sense"),
            dry_run=bool(data.get("dry_run", False)),
        )


@dataclass(frozen=True, slots=True)
class Message:
    """One role's contribution to a run; ``round`` counts role messages from 1."""

    role: str
    content: str
    meta: Mapping[str, Any]
    round: int

    def to_json(self) -> dict[str, Any]:
        return {
            "role": self.role,
            "content": self.content,
            "meta": dict(self.meta),
            "round": self.round,
        }

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> Message:
        meta = dict(data.get("meta") or {})
        return cls(str(data["role"]), str(data["content"]), meta, int(data["round"]))


@dataclass(frozen=True, slots=True)
class Start:
    """Moderator context before any role has spoken."""

    start: StartFrame
    kind: Literal["start"] = "start"


@dataclass(frozen=True, slots=True)
class Step:
    """Moderator context after a role has spoken."""

    message: Message
    kind: Literal["step"] = "step"


ModeratorContext = Start | Step


@dataclass(frozen=True, slots=True)
class RoleResult:
    """What a role says: text plus JSON-ready ``meta`` (``outputs`` declares files)."""

    content: str
    meta: Mapping[str, Any] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class Question:
    """A role's question to a person; ``options`` are the answers it accepts (any if empty)."""

    question: str
    options: Sequence[str] = ()


@dataclass(frozen=True, slots=True)
class Answer:
    """A person's answer, handed to the role that asked on its next call."""

    question: str
    options: tuple[str, ...]
    choice: str


@dataclass(frozen=True, slots=True)
class RoleContext:
    """The third argument of a role that takes one."""

    run: str
    workflow: str
    role: str
    round: int
    output_dir: Path
    workspace: Path
    answer: Answer | None = None


class Role(Protocol):
    def __call__(
        self, start: StartFrame, messages: Sequence[Message], /
    ) -> RoleResult | Mapping[str, Any] | str | Question | Awaitable[Any]: ...


class Moderator(Protocol):
    def __call__(
        self, context: ModeratorContext, round: int, max_rounds: int, /
    ) -> str | Awaitable[str]: ...
