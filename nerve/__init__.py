"""nerve: an ambient-context daemon over one append-only, content-addressed event log.

``nerve.open()`` is the front door: a :class:`Workspace` that emits, runs SQL, replays and
asks, and holds every other operation the CLI has in nouns (``ws.events``, ``ws.log``,
``ws.privacy``, ``ws.audit``, ``ws.sense(name)``, ``ws.run(id)``, ... :data:`nerve.api.NOUNS`
lists them). The other names are what a sense author returns (``Observation``, ``Result``,
...) and the errors every call may raise (``NerveError`` and its tree, drawn in
``nerve.errors``).
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from nerve.version import __version__ as __version__

if TYPE_CHECKING:
    from nerve.api import Workspace as Workspace
    from nerve.api import open as open
    from nerve.clock import Hlc as Hlc
    from nerve.clock import HybridClock as HybridClock
    from nerve.config.issues import InvalidConfig as InvalidConfig
    from nerve.contract import Observation as Observation
    from nerve.contract import Result as Result
    from nerve.contract import SenseContext as SenseContext
    from nerve.contract import Skip as Skip
    from nerve.contract import WorkflowTrigger as WorkflowTrigger
    from nerve.door.core import Status as Status
    from nerve.door.named import Decision as Decision
    from nerve.errors import AccessRefused as AccessRefused
    from nerve.errors import ChainError as ChainError
    from nerve.errors import CheckError as CheckError
    from nerve.errors import ClockError as ClockError
    from nerve.errors import ConfigError as ConfigError
    from nerve.errors import DaemonError as DaemonError
    from nerve.errors import EventError as EventError
    from nerve.errors import LogCorrupt as LogCorrupt
    from nerve.errors import LogDamageWarning as LogDamageWarning
    from nerve.errors import LogError as LogError
    from nerve.errors import NerveError as NerveError
    from nerve.errors import OrderError as OrderError
    from nerve.errors import PrivacyError as PrivacyError
    from nerve.errors import SealDeferred as SealDeferred
    from nerve.errors import SenseError as SenseError
    from nerve.errors import TrustError as TrustError
    from nerve.errors import UnsafePath as UnsafePath
    from nerve.errors import UsageError as UsageError
    from nerve.errors import WorkflowError as WorkflowError
    from nerve.errors import WriterLocked as WriterLocked
    from nerve.events import Event as Event
    from nerve.events import SourceClass as SourceClass
    from nerve.events import Trust as Trust
    from nerve.fleet.head import HeadError as HeadError
    from nerve.fleet.warehouse import FleetError as FleetError
    from nerve.log.verify import VerifyReport as VerifyReport
    from nerve.recall import FallbackError as FallbackError
    from nerve.runtime.queries import QueryError as QueryError

# Public name -> the module that defines it: the one table ``__all__`` is made from. Loaded on
# first use, so the CLI's start-up (which imports ``nerve.cli``, hence this package) pays only
# for what a command uses.
_HOME = {
    "AccessRefused": "nerve.errors",
    "ChainError": "nerve.errors",
    "CheckError": "nerve.errors",
    "ClockError": "nerve.errors",
    "ConfigError": "nerve.errors",
    "DaemonError": "nerve.errors",
    "Decision": "nerve.door.named",
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
    "Status": "nerve.door.core",
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

__all__ = list(_HOME)  # _HOME is kept sorted


def __getattr__(name: str) -> Any:
    if name not in _HOME:
        raise AttributeError(f"module 'nerve' has no attribute {name!r}")
    value = getattr(importlib.import_module(_HOME[name]), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    """The public names, loaded or not (``dir(nerve)`` and completion show them all)."""
    return sorted({*__all__, "__version__"})
