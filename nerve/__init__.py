"""nerve: an ambient-context daemon over one append-only, content-addressed event log.

``nerve.open()`` is the front door: a :class:`Workspace` that emits, runs SQL, replays and
asks, and holds every other operation the CLI has in nouns (``ws.events``, ``ws.log``,
``ws.privacy``, ``ws.audit``, ``ws.sense(name)``, ``ws.run(id)``, ... :data:`nerve.api.NOUNS`
lists them). The other names are what a sense author returns (``Observation``, ``Result``,
...) and the errors every call may raise (``NerveError`` and its tree, drawn in
``nerve.errors``).

Words, one meaning each, as the code uses them now (where code gives a word a second
meaning, the entry says which and names the rename that will remove it):

host
    A machine of a fleet, the one that ships its sealed segments (``ws.fleet.host()``,
    ``nerve fleet status``). What a part is given by its owner is its *needs*, a protocol
    (``ExtensionNeeds``, ``GroupNeeds``, ``RunNeeds``, ``FlowNeeds``, ``AttentionNeeds``).
machine
    The computer nerve runs on, as the built-in senses read it: :mod:`nerve.machine` holds
    their cheap reads of it (``/proc``, netlink), where psutil would scan (was
    ``nerve.host``; ``probes`` is kept for an attention detector's probe).
gate
    The attention gate (:mod:`nerve.attention.gate`): whether a highlight surfaces or is
    held (``hold:value``, ``hold:budget``), paid from the attention budget. A workflow
    run's checks, fired on its outputs when it ends and holding the run when a blocking one
    fails, are its *output checks* (:mod:`nerve.flow.judge`); a check manifest's
    ``fire_on: gate`` and ``nerve workflow override``'s prompt keep the word, as written in
    users' files and read at their terminals.
check
    A program a manifest declares, fired on one file for a verdict (:mod:`nerve.checks`,
    ``nerve check``, ``ws.runs.checks()``, ``ws.runs.fire_check()``). Working every
    attention decision out again and comparing is *recompute* (``nerve attend --recompute``,
    ``ws.audit.recompute()``, a :class:`~nerve.attention.service.Recomputed`; ``--check`` is
    kept as its hidden old name). Proving stored bytes is *verify* (``nerve replay
    --verify``, ``nerve audit verify``), never check.
guard
    Not a word of the surface. In code: :mod:`nerve.ui.guard`, the layer every request of
    ``nerve ui`` passes (Host, Origin, login, CSRF). What may leave through ``nerve mcp``
    and ``nerve ui`` is the privacy screen's (:mod:`nerve.privacy.screen`); how much may
    leave through ``nerve mcp`` is its budgets' (:mod:`nerve.mcp.budgets`).
sealed
    A segment is sealed when the unsealed tail (the WAL) is written as an immutable
    Parquet segment (``ws.log.seal()``, ``nerve seal``). Also: the *sealed surfacing chain*
    (``nerve audit``), where each attention decision is signed into a link, and an *epoch
    seal* (:mod:`nerve.seal`, ``nerve audit seal-setup``), a signed note over the log's and
    the chain's heads. Files kept unreadable at rest are *encrypted*, never sealed
    (:mod:`nerve.log.crypt`, ``Cipher.encrypt_file``; :mod:`nerve.encdir`, the folders
    workflow roles and checks write; :mod:`nerve.encfs`, how DuckDB reads encrypted segments).
audit
    ``nerve audit`` and ``ws.audit``: the attention decisions and the signed chain they
    are written to (verify, held, show, why, export, the epoch seals), and ``nerve audit
    access``, the ``agent.access`` events the MCP *recorder* (:mod:`nerve.mcp.recorder`)
    writes, one for each call of an agent.
snapshot
    The log as it is at one instant, read without the writer's lock
    (``ws.log.snapshot()``, :class:`nerve.log.reader.Snapshot`). Also: the fleet table's
    Iceberg snapshots, one per ship (Iceberg's own word, kept), and the stored kind
    ``attention.snapshot`` with its setting ``attention.snapshot_every`` (the attender's
    state; a stored name, kept: CONTRIBUTING.md §6). The dev view's figures at one instant
    are a *frame* (:class:`nerve.runtime.frame.Frame`).
transport
    How a command reaches the log (:mod:`nerve.transport`): ``Direct``, this process as
    the log's single writer, or ``ThroughDaemon``, over its socket, chosen by ``connect``.
    Also, not yet renamed: :mod:`nerve.sync.transport`, how a sync group's boxes travel
    (NATS, S3; ``ws.sync.init(name, transport)``), to become ``Bus`` (its modules are
    already ``natsbus`` and ``s3bus``).
settings, config
    *config* is nerve.yaml as read and validated: :class:`~nerve.config.models.NerveConfig`
    and its sections (``ws.settings.config``). *settings* is ``ws.settings``, the noun over
    that file (its path, config, validation, categories, tokens), and ``nerve_settings``,
    what the projections read of it (``ws.settings.views()``). Every section's model is a
    ``*Config`` (``AttentionConfig``, ``PrivacyConfig``, ``FleetConfig`` from
    ``ws.fleet.config()`` ...); their modules keep the name ``settings.py``. The attention
    pipeline's own part of its section is a ``PipelineConfig``, and ``attention.rules`` is a
    ``ValueRulesConfig`` (a privacy rule is a ``RuleConfig``).
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
