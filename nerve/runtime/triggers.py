"""Workflow triggers a sense returns or a client sends: known, well formed, recorded.

A sense's trigger becomes a ``workflow.requested`` event (with its run's ``max_rounds``), or
a ``workflow.rejected`` one naming what is wrong; the compute counts either way.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from nerve.config.models import NerveConfig
from nerve.contract import WorkflowTrigger
from nerve.log.drafts import Draft


def known_workflow(root: Path, config: NerveConfig, name: str) -> bool:
    """Declared under ``workflows:``, or a folder in the workspace's or nerve's workflows."""
    if name in config.workflows:
        return True
    from nerve.resources import bundled

    return any((d / name).is_dir() for d in (root / "workflows", bundled("workflows")))


def requested(
    root: Path, config: NerveConfig, sense: str, raw: Any
) -> tuple[WorkflowTrigger | None, list[Draft]]:
    """A sense's trigger checked: ``(trigger, [workflow.requested])``, or
    ``(None, [workflow.rejected])``; ``(None, [])`` when it asked for none."""
    if raw is None:
        return None, []
    error = raw.get("invalid") if isinstance(raw, dict) else None
    trigger: WorkflowTrigger | None = None
    if error is None:
        trigger = WorkflowTrigger.parse(raw)
        if not known_workflow(root, config, trigger.name):
            error = (
                f"unknown workflow {trigger.name!r} "
                f"(declare it under workflows: or add workflows/{trigger.name}/)"
            )
    if error is not None:
        line = f"{sense}: workflow trigger rejected: {error}"
        payload = {"sense": sense, "error": error, "trigger": raw}
        return None, [Draft.control("workflow.rejected", sense, line, payload)]
    assert trigger is not None
    return trigger, [
        Draft.control(
            "workflow.requested",
            trigger.name,
            f"{sense} requested workflow {trigger.name}",
            run_payload(trigger, config, sense=sense),
        )
    ]


def run_payload(
    trigger: WorkflowTrigger, config: NerveConfig, *, sense: str | None, source: str | None = None
) -> dict[str, Any]:
    """A ``workflow.requested`` payload: the trigger, its rounds, who asked."""
    rounds = trigger.max_rounds or config.max_rounds
    payload = {**trigger.to_json(), "max_rounds": rounds, "sense": sense}
    if source is not None:
        payload["source"] = source
    return payload
