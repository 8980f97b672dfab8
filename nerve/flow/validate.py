"""``nerve validate`` for workflows and checks: every problem, found before a run needs it.

Checked: every manifest in ``workflows/checks/`` parses; every workflow named in ``nerve.yaml``
or found in the workspace's ``workflows/`` loads (its module is imported here, as the worker
would) and every check it imports, from ``workflow.py`` or ``nerve.yaml``, exists.
"""

from __future__ import annotations

from pathlib import Path

from nerve.checks.catalog import catalog, check_dirs
from nerve.config.models import NerveConfig
from nerve.errors import WorkflowError
from nerve.flow.definition import NOT_WORKFLOWS, WORKFLOW_FILE, find_workflow, load_definition
from nerve.resources import bundled
from nerve.workspace import WorkspaceDir

__all__ = ["check_workflows", "workflow_names"]


def workflow_names(ws: WorkspaceDir, config: NerveConfig) -> list[str]:
    """Workflows named in ``nerve.yaml`` plus those with a folder in the workspace."""
    folder = ws.root / "workflows"
    found = set(config.workflows)
    if folder.is_dir():
        found |= {
            p.parent.name
            for p in folder.glob(f"*/{WORKFLOW_FILE}")
            if p.parent.name not in NOT_WORKFLOWS
        }
    return sorted(found)


def check_workflows(ws: WorkspaceDir, config: NerveConfig) -> list[str]:
    """Problems with workflows and check manifests, one message each (empty: all good)."""
    problems: list[str] = []
    checks = catalog(check_dirs(ws.root, bundled("workflows")), problems)
    dirs = [ws.root / "workflows", bundled("workflows")]
    for name in workflow_names(ws, config):
        cfg = config.workflows.get(name)
        try:
            path = find_workflow(name, dirs, root=ws.root, path=cfg.path if cfg else None)
            definition = load_definition(name, path)
        except WorkflowError as exc:
            problems.append(str(exc))
            continue
        imported = [*(cfg.checks if cfg else []), *definition.checks]
        unknown = sorted({c for c in imported if c not in checks})
        if unknown:
            problems.append(_unknown(path, name, unknown, list(checks)))
    return problems


def _unknown(path: Path, name: str, unknown: list[str], known: list[str]) -> str:
    return (
        f"{path}: workflow {name!r} imports unknown check(s) {', '.join(unknown)}"
        f" (known: {', '.join(known) or 'none'})"
    )
