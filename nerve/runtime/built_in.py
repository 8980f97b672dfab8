"""The extensions every daemon runs, named here once (no discovery by import or by name)."""

from __future__ import annotations

from nerve.attention.notify import Notices
from nerve.attention.service import AttentionService
from nerve.flow.engine import WorkflowEngine
from nerve.runtime.extensions import Extension
from nerve.runtime.feed import ViewFeed
from nerve.runtime.retention import Retention
from nerve.runtime.sealing import Sealing
from nerve.runtime.shipper import FleetShipping
from nerve.runtime.syncer import SyncLoop


def built_in(feed: ViewFeed, notices: Notices, sealing: Sealing) -> list[Extension]:
    """Attention first: a workflow a sense asks for sees the decisions of the same commit.
    ``feed``, ``notices`` and ``sealing`` are the kernel's: the dev view and ``status`` read
    them."""
    return [
        AttentionService(notices),
        WorkflowEngine(),
        FleetShipping(),
        SyncLoop(),
        Retention(),
        sealing,
        feed,
    ]
