"""The extensions every daemon runs, named here once (no discovery by import or by name)."""

from __future__ import annotations

from nerve.attention.notify import Notices
from nerve.attention.service import AttentionService
from nerve.flow.engine import WorkflowEngine
from nerve.runtime.extensions import Extension
from nerve.runtime.feed import ViewFeed
from nerve.runtime.retention import Retention
from nerve.runtime.shipper import FleetShipping


def built_in(feed: ViewFeed, notices: Notices) -> list[Extension]:
    """Attention first: a workflow a sense asks for sees the decisions of the same commit.
    ``feed`` and ``notices`` are the kernel's: the dev view and ``status`` read them."""
    return [AttentionService(notices), WorkflowEngine(), FleetShipping(), Retention(), feed]
