"""nerve: an ambient-context daemon over one append-only, content-addressed event log."""

from nerve.clock import Hlc, HybridClock
from nerve.contract import Observation, Result, SenseContext, WorkflowTrigger
from nerve.errors import NerveError
from nerve.events import Event, SourceClass, Trust

__all__ = [
    "Event",
    "Hlc",
    "HybridClock",
    "NerveError",
    "Observation",
    "Result",
    "SenseContext",
    "SourceClass",
    "Trust",
    "WorkflowTrigger",
]

__version__ = "0.1.0"
