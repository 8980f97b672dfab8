"""nerve: an ambient-context daemon over one append-only, content-addressed event log."""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from nerve.clock import Hlc, HybridClock
    from nerve.contract import Observation, Result, SenseContext, Skip, WorkflowTrigger
    from nerve.errors import NerveError
    from nerve.events import Event, SourceClass, Trust

# Public name -> the module that defines it. Loaded on first use, so the CLI's start-up (which
# imports ``nerve.cli``, hence this package) pays only for what a command uses.
_HOME = {
    "Event": "nerve.events",
    "Hlc": "nerve.clock",
    "HybridClock": "nerve.clock",
    "NerveError": "nerve.errors",
    "Observation": "nerve.contract",
    "Result": "nerve.contract",
    "SenseContext": "nerve.contract",
    "Skip": "nerve.contract",
    "SourceClass": "nerve.events",
    "Trust": "nerve.events",
    "WorkflowTrigger": "nerve.contract",
}

__all__ = [
    "Event",
    "Hlc",
    "HybridClock",
    "NerveError",
    "Observation",
    "Result",
    "SenseContext",
    "Skip",
    "SourceClass",
    "Trust",
    "WorkflowTrigger",
]

__version__ = "0.1.0"


def __getattr__(name: str) -> Any:
    if name not in _HOME:
        raise AttributeError(f"module 'nerve' has no attribute {name!r}")
    value = getattr(importlib.import_module(_HOME[name]), name)
    globals()[name] = value
    return value
