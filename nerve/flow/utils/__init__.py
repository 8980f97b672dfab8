"""Helpers for workflow role authors (seed 001's workflow-utils), one module per job:

- :mod:`~nerve.flow.utils.run`: run a command safely (``spawnSafe`` → :func:`run_argv`);
- :mod:`~nerve.flow.utils.agent`: the workspace for agents and commands (``readNerveYaml`` →
  :func:`read_nerve_yaml`, ``nerveAgentContext`` → :data:`AGENT_CONTEXT`,
  ``nerveCommandEnv`` → :func:`command_env`, ``cursorAgent`` → :func:`run_agent` with
  :data:`CURSOR_AGENT`);
- :mod:`~nerve.flow.utils.extract`: typed data from an LLM (``llmExtract`` → :func:`extract`).

    WorkflowError (nerve.errors)
    ├── ArgvError       run_argv got a str, bytes, empty argv or a non-str item (a TypeError too)
    ├── CommandFailed   a command could not start (kind "spawn_failed"), exited non-zero ("exit")
    │                   or ran past its timeout ("timeout")
    ├── NerveYamlError  read_nerve_yaml: "PATH_TRAVERSAL" or "READ_FAILED" (its ``code``)
    └── ExtractError    an extraction call failed (see its kinds)

Role authors import from here: ``from nerve.flow.utils import run_argv, extract``.
"""

from nerve.flow.utils.agent import (
    AGENT_CONTEXT,
    CURSOR_AGENT,
    NerveYamlError,
    command_env,
    read_nerve_yaml,
    run_agent,
)
from nerve.flow.utils.extract import ExtractError, ExtractErrorKind, extract, tool_name
from nerve.flow.utils.run import (
    DEFAULT_MAX_OUTPUT_BYTES,
    DEFAULT_TIMEOUT_S,
    ArgvError,
    CommandFailed,
    CommandFailureKind,
    CommandResult,
    run_argv,
)

__all__ = [
    "AGENT_CONTEXT",
    "CURSOR_AGENT",
    "DEFAULT_MAX_OUTPUT_BYTES",
    "DEFAULT_TIMEOUT_S",
    "ArgvError",
    "CommandFailed",
    "CommandFailureKind",
    "CommandResult",
    "ExtractError",
    "ExtractErrorKind",
    "NerveYamlError",
    "command_env",
    "extract",
    "read_nerve_yaml",
    "run_agent",
    "run_argv",
    "tool_name",
]
