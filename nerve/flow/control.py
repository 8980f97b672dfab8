"""Socket requests for workflows and checks (registered with ``nerve.runtime.control``).

    {"type": "workflow-answer", "run": R, "choice": C, "by": WHO}
    {"type": "workflow-recheck", "run": R}
    {"type": "workflow-override", "run": R, "reason": TEXT, "interactive": true,
     "by": WHO, "tty": "/dev/pts/3"}
    {"type": "workflow-status"}
    {"type": "check-fire", "check": ID, "path": P, "run": R}

An override is refused unless the request says it comes from an interactive terminal; the
socket is private to its owner, and ``nerve workflow override`` only says so when stdin and
stdout are terminals outside any workflow.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from nerve.errors import WorkflowError
from nerve.runtime.control import handles

if TYPE_CHECKING:
    from nerve.flow.engine import WorkflowEngine
    from nerve.runtime.kernel import Kernel


def _engine(kernel: Kernel) -> WorkflowEngine:
    from nerve.flow.engine import WorkflowEngine

    for ext in kernel.extensions:
        if isinstance(ext, WorkflowEngine):
            return ext
    raise WorkflowError("the workflow engine is not loaded in this daemon")


def _text(request: dict[str, Any], key: str, default: str | None = None) -> str:
    value = request.get(key, default)
    if not isinstance(value, str) or not value.strip():
        raise WorkflowError(f"request field {key!r} must be a non-empty string")
    return value


@handles("workflow-answer")
async def _answer(kernel: Kernel, request: dict[str, Any]) -> dict[str, Any]:
    by = _text(request, "by", "cli")
    reply = await _engine(kernel).answer(_text(request, "run"), _text(request, "choice"), by)
    return {"ok": True, **reply}


@handles("workflow-recheck")
async def _recheck(kernel: Kernel, request: dict[str, Any]) -> dict[str, Any]:
    return {"ok": True, **await _engine(kernel).recheck(_text(request, "run"))}


@handles("workflow-override")
async def _override(kernel: Kernel, request: dict[str, Any]) -> dict[str, Any]:
    if request.get("interactive") is not True:
        raise WorkflowError(
            "an override must come from a person at an interactive terminal",
            hint="run `nerve workflow override RUN --reason TEXT` in a terminal",
        )
    tty = request.get("tty")
    reply = await _engine(kernel).override(
        _text(request, "run"),
        reason=_text(request, "reason"),
        by=_text(request, "by", "unknown"),
        tty=tty if isinstance(tty, str) else None,
    )
    return {"ok": True, **reply}


@handles("workflow-status")
async def _status(kernel: Kernel, request: dict[str, Any]) -> dict[str, Any]:
    return {"ok": True, "workflows": _engine(kernel).status()}


@handles("check-fire")
async def _check_fire(kernel: Kernel, request: dict[str, Any]) -> dict[str, Any]:
    run = request.get("run") or "manual"
    stage = request.get("stage") or "manual"
    verdict = await _engine(kernel).fire_check(
        _text(request, "check"), _text(request, "path"), str(run), str(stage)
    )
    return {"ok": True, "verdict": verdict.to_dict()}
