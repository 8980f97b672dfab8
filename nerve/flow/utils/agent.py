"""What a role needs to run an agent in the workspace (seed 001's workflow-utils):
``readNerveYaml`` → :func:`read_nerve_yaml`, ``nerveAgentContext`` → :data:`AGENT_CONTEXT`,
``nerveCommandEnv`` → :func:`command_env`, ``cursorAgent`` → :func:`run_agent` with
:data:`CURSOR_AGENT`.

    WorkflowError (nerve.errors)
    └── NerveYamlError  read_nerve_yaml: "PATH_TRAVERSAL" or "READ_FAILED" (its ``code``)
"""

from __future__ import annotations

import os
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Literal

from nerve.errors import WorkflowError
from nerve.flow.utils.run import (
    DEFAULT_MAX_OUTPUT_BYTES,
    DEFAULT_TIMEOUT_S,
    checked_argv,
    run_argv,
)

__all__ = [
    "AGENT_CONTEXT",
    "CURSOR_AGENT",
    "NerveYamlError",
    "command_env",
    "read_nerve_yaml",
    "run_agent",
]


class NerveYamlError(WorkflowError):
    """Raised by read_nerve_yaml; ``code`` is "PATH_TRAVERSAL" (nerve.yaml leads out of the
    workspace) or "READ_FAILED" (missing, unreadable, not UTF-8), as seed 001 names them."""

    def __init__(self, message: str, *, code: Literal["PATH_TRAVERSAL", "READ_FAILED"]) -> None:
        super().__init__(message)
        self.code = code


def read_nerve_yaml(root: Path) -> str:
    """The text of ``<root>/nerve.yaml``; refused when it resolves outside ``root`` (a
    symlink leading out). Raises NerveYamlError."""
    base = Path(root).resolve()
    target = (base / "nerve.yaml").resolve()
    if not target.is_relative_to(base):
        message = f"{base / 'nerve.yaml'} resolves to {target}, outside the workspace {base}"
        raise NerveYamlError(message, code="PATH_TRAVERSAL")
    try:
        return target.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise NerveYamlError(f"cannot read {target}: {exc}", code="READ_FAILED") from None


AGENT_CONTEXT = """\
You are working in a nerve workspace. nerve is an ambient-context daemon: senses (Python
`compute(state)` functions under senses/<name>/) observe the world and record events in one
append-only log; nerve.yaml schedules them (interval, on: other senses' signals, throttle)
and declares workflows (workflows/<name>/workflow.py: roles and a moderator). The `nerve`
CLI reads and drives it: `nerve tail`, `nerve query SQL`, `nerve sense list|schema|query`,
`nerve workflow list|inspect`, `nerve validate`. Keep paths and commands consistent with
this workspace's nerve.yaml and its senses folder."""
"""What an agent a workflow runs should know about nerve (seed 001's nerveAgentContext)."""


def command_env(extra: Mapping[str, str] | None = None) -> dict[str, str]:
    """The environment for commands a role runs: this process's, with the folder of the
    Python nerve runs on first on ``PATH`` (so ``nerve`` and ``python`` are this install's),
    then ``extra`` laid over it (seed 001's nerveCommandEnv)."""
    env = dict(os.environ)
    folder = str(Path(sys.executable).parent)
    parts = [p for p in env.get("PATH", "").split(os.pathsep) if p and p != folder]
    env["PATH"] = os.pathsep.join([folder, *parts])
    return env | dict(extra or {})


CURSOR_AGENT: tuple[str, ...] = (
    "cursor-agent",
    "-p",
    "{prompt}",
    "--model",
    "auto",
    "--output-format",
    "text",
    "--trust",
    "--force",
)
"""Seed 001's cursorAgent call, for run_agent (append "--mode=plan" or "--mode=ask")."""


def run_agent(
    argv: Sequence[str],
    prompt: str,
    *,
    cwd: Path | None = None,
    context: str | None = AGENT_CONTEXT,
    env: Mapping[str, str] | None = None,
    timeout_s: float = DEFAULT_TIMEOUT_S,
    max_output_bytes: int = DEFAULT_MAX_OUTPUT_BYTES,
) -> str:
    """Run an agent CLI on ``prompt`` and return what it printed (trailing space removed).

    The prompt, after ``context`` and a blank line when ``context`` is given, is one argv
    item: it replaces an item that is exactly ``{prompt}``, else it is appended. The agent
    runs with :func:`command_env` (``env`` over it), never through a shell, and is killed
    with everything it started at ``timeout_s`` (300 s). Raises CommandFailed: kind
    "spawn_failed", "exit" (non-zero) or "timeout", its ``result`` holding the output.
    """
    text = prompt if context is None else f"{context}\n\n{prompt}"
    args = checked_argv(argv)
    placed = [text if arg == "{prompt}" else arg for arg in args]
    if "{prompt}" not in args:
        placed.append(text)
    result = run_argv(
        placed,
        timeout_s=timeout_s,
        env=command_env(env),
        inherit_env=False,
        cwd=cwd,
        max_output_bytes=max_output_bytes,
    ).check()
    return result.stdout.rstrip()
