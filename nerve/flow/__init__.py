"""Workflows: roles and a moderator, run by the daemon in a worker process per workflow.

Role authors import what they need from here (``from nerve.flow import END, RoleResult``);
``nerve.flow.utils`` holds helpers for them (``run_argv``, ``extract``). The engine that runs
workflows inside the daemon lives in ``nerve.flow.engine``; see ``workflows/README.md``.
"""

from nerve.flow.contract import (
    END,
    START,
    Answer,
    Message,
    Moderator,
    ModeratorContext,
    Question,
    Role,
    RoleContext,
    RoleResult,
    Start,
    StartFrame,
    Step,
)

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
