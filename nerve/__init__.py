"""nerve: an ambient-context daemon over one append-only, content-addressed event log.

``nerve.open()`` is the front door: a :class:`Workspace` with every operation the CLI has
(emit, events, sql, replay, forget, audit, status, ...). The other names are what a sense
author returns (``Observation``, ``Result``, ...) and the errors every call may raise
(``NerveError`` and its tree, drawn in ``nerve.errors``).
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from nerve.version import __version__ as __version__

if TYPE_CHECKING:
    from nerve.api import Status, Workspace
    from nerve.api import open as open
    from nerve.clock import Hlc, HybridClock
    from nerve.config.issues import InvalidConfig
    from nerve.contract import Observation, Result, SenseContext, Skip, WorkflowTrigger
    from nerve.errors import (
        AccessRefused,
        ChainError,
        CheckError,
        ClockError,
        ConfigError,
        DaemonError,
        EventError,
        LogCorrupt,
        LogDamageWarning,
        LogError,
        NerveError,
        OrderError,
        PrivacyError,
        SealDeferred,
        SenseError,
        TrustError,
        UnsafePath,
        UsageError,
        WorkflowError,
        WriterLocked,
    )
    from nerve.events import Event, SourceClass, Trust
    from nerve.fleet.head import HeadError
    from nerve.fleet.warehouse import FleetError
    from nerve.log.verify import VerifyReport
    from nerve.recall import FallbackError
    from nerve.runtime.queries import QueryError

# Public name -> the module that defines it. Loaded on first use, so the CLI's start-up (which
# imports ``nerve.cli``, hence this package) pays only for what a command uses.
_HOME = {
    "AccessRefused": "nerve.errors",
    "ChainError": "nerve.errors",
    "CheckError": "nerve.errors",
    "ClockError": "nerve.errors",
    "ConfigError": "nerve.errors",
    "DaemonError": "nerve.errors",
    "Event": "nerve.events",
    "EventError": "nerve.errors",
    "FallbackError": "nerve.recall",
    "FleetError": "nerve.fleet.warehouse",
    "HeadError": "nerve.fleet.head",
    "Hlc": "nerve.clock",
    "HybridClock": "nerve.clock",
    "InvalidConfig": "nerve.config.issues",
    "LogCorrupt": "nerve.errors",
    "LogDamageWarning": "nerve.errors",
    "LogError": "nerve.errors",
    "NerveError": "nerve.errors",
    "Observation": "nerve.contract",
    "OrderError": "nerve.errors",
    "PrivacyError": "nerve.errors",
    "QueryError": "nerve.runtime.queries",
    "Result": "nerve.contract",
    "SealDeferred": "nerve.errors",
    "SenseContext": "nerve.contract",
    "SenseError": "nerve.errors",
    "Skip": "nerve.contract",
    "SourceClass": "nerve.events",
    "Status": "nerve.api",
    "Trust": "nerve.events",
    "TrustError": "nerve.errors",
    "UnsafePath": "nerve.errors",
    "UsageError": "nerve.errors",
    "VerifyReport": "nerve.log.verify",
    "WorkflowError": "nerve.errors",
    "WorkflowTrigger": "nerve.contract",
    "Workspace": "nerve.api",
    "WriterLocked": "nerve.errors",
    "open": "nerve.api",
}

__all__ = [
    "AccessRefused",
    "ChainError",
    "CheckError",
    "ClockError",
    "ConfigError",
    "DaemonError",
    "Event",
    "EventError",
    "FallbackError",
    "FleetError",
    "HeadError",
    "Hlc",
    "HybridClock",
    "InvalidConfig",
    "LogCorrupt",
    "LogDamageWarning",
    "LogError",
    "NerveError",
    "Observation",
    "OrderError",
    "PrivacyError",
    "QueryError",
    "Result",
    "SealDeferred",
    "SenseContext",
    "SenseError",
    "Skip",
    "SourceClass",
    "Status",
    "Trust",
    "TrustError",
    "UnsafePath",
    "UsageError",
    "VerifyReport",
    "WorkflowError",
    "WorkflowTrigger",
    "Workspace",
    "WriterLocked",
    "open",
]


def __getattr__(name: str) -> Any:
    if name not in _HOME:
        raise AttributeError(f"module 'nerve' has no attribute {name!r}")
    value = getattr(importlib.import_module(_HOME[name]), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    """The public names, loaded or not (``dir(nerve)`` and completion show them all)."""
    return sorted({*__all__, "__version__"})
