"""Asking the running daemon to act on workflows and checks (the CLI's library side).

Writes go through the daemon, the log's only writer; a refusal comes back as the error class
the daemon raised (``WorkflowError``, ``CheckError``), and no daemon is a ``DaemonError`` with
the command that starts one. ``fire_check`` is the exception: with no daemon it fires the
check here and records nothing.
"""

from __future__ import annotations

import getpass
import json
import os
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any, TextIO

from nerve.checks.catalog import catalog, check_dirs, lookup, runnable
from nerve.checks.dispatch import fire
from nerve.checks.manifest import CheckManifest
from nerve.commands import Command, Reply
from nerve.commands.daemon import AnswerRun, FireCheck, Override, RecheckRun, TriggerRun
from nerve.contract import WorkflowTrigger
from nerve.errors import UsageError, WorkflowError
from nerve.flow.judge import WRITE_DETAIL_DIR, kept_verdict, write_details
from nerve.resources import bundled
from nerve.transport import connect
from nerve.workspace import WorkspaceDir

__all__ = [
    "answer",
    "checks",
    "fire_check",
    "interactive_refusal",
    "override",
    "override_confirmed",
    "payload_fields",
    "recheck",
    "trigger",
]


def _call(ws: WorkspaceDir, command: Command, timeout: float = 120) -> dict[str, Any]:
    """The daemon's answer to a workflow command (``DaemonError`` when none runs)."""
    reply: Reply = connect(ws).do(command, timeout=timeout)
    return reply.fields


def trigger(
    ws: WorkspaceDir,
    name: str,
    *,
    prompt: str = "",
    max_rounds: int | None = None,
    dry_run: bool = False,
    key: str | None = None,
) -> dict[str, Any]:
    """Start a run; the daemon's answer (``workflow``, ``run``, ``status``, ...); with a
    ``key`` already used, ``status: deduped`` and the ``earlier_run``."""
    return _call(ws, TriggerRun(name, prompt, max_rounds, dry_run, key))


_PAYLOAD_KEYS = {
    "prompt": "prompt",
    "maxRounds": "max_rounds",
    "max_rounds": "max_rounds",
    "dryRun": "dry_run",
    "dry_run": "dry_run",
}


def payload_fields(text: str) -> dict[str, Any]:
    """The trigger fields of seed 001's ``--payload`` JSON (``prompt``, ``maxRounds``, and
    nerve's ``dryRun``; snake_case also read), checked; ``UsageError`` names what is wrong."""
    try:
        value = json.loads(text)
    except ValueError as exc:
        raise UsageError(f"--payload is not JSON: {exc}", field="payload") from None
    if not isinstance(value, dict):
        raise UsageError("--payload must be a JSON object", field="payload")
    unknown = sorted(set(value) - set(_PAYLOAD_KEYS))
    if unknown:
        known = ", ".join(_PAYLOAD_KEYS)
        raise UsageError(
            f"--payload has unknown keys: {', '.join(unknown)} (known: {known})", field="payload"
        )
    fields = {_PAYLOAD_KEYS[key]: item for key, item in value.items()}
    try:
        WorkflowTrigger.parse({"name": "payload", **fields})
    except WorkflowError as exc:
        raise UsageError(f"--payload: {exc}", field="payload") from None
    return fields


def answer(ws: WorkspaceDir, run: str, choice: str, by: str | None = None) -> dict[str, Any]:
    """Answer a waiting run's question, as ``by`` (default: this process's user)."""
    return _call(ws, AnswerRun(run, choice, by or _who()))


def recheck(ws: WorkspaceDir, run: str) -> dict[str, Any]:
    return _call(ws, RecheckRun(run), timeout=3600)


def interactive_refusal(
    stdin: TextIO, stdout: TextIO, environ: Mapping[str, str] = os.environ
) -> str | None:
    """Why this process may not override a held run (None: a person at a terminal may)."""
    if environ.get("NERVE_WORKFLOW"):
        return f"refused inside workflow {environ['NERVE_WORKFLOW']!r}: a role cannot override"
    if not (_isatty(stdin) and _isatty(stdout)):
        return "an override needs a person at an interactive terminal (stdin and stdout)"
    return None


def _isatty(stream: TextIO) -> bool:
    return bool(getattr(stream, "isatty", lambda: False)())


def override(
    ws: WorkspaceDir,
    run: str,
    reason: str,
    *,
    stdin: TextIO = sys.stdin,
    stdout: TextIO = sys.stdout,
    environ: Mapping[str, str] = os.environ,
) -> dict[str, Any]:
    """Complete a held run by a person's decision; refused unless at an interactive terminal."""
    refusal = interactive_refusal(stdin, stdout, environ)
    if refusal is not None:
        raise WorkflowError(
            refusal, hint=f"fix the outputs and run `nerve workflow recheck {run}` instead"
        )
    return _call(ws, Override(run, reason, _who(), _tty(stdin), interactive=True))


def override_confirmed(ws: WorkspaceDir, run: str, reason: str, *, where: str) -> dict[str, Any]:
    """Complete a held run by a person's decision made elsewhere than a terminal: ``where``
    says where it was confirmed (``nerve ui`` asks on its page, behind its login and CSRF
    check), recorded in the override event's ``tty`` as a terminal's device is."""
    if os.environ.get("NERVE_WORKFLOW"):
        raise WorkflowError(
            f"refused inside workflow {os.environ['NERVE_WORKFLOW']!r}: a role cannot override"
        )
    return _call(ws, Override(run, reason, _who(), where, interactive=True))


def _who() -> str:
    try:
        return getpass.getuser()
    except (KeyError, OSError):
        return f"uid {os.getuid()}"


def _tty(stream: TextIO) -> str | None:
    try:
        return os.ttyname(stream.fileno())
    except (OSError, ValueError, AttributeError):
        return None


def checks(ws: WorkspaceDir, errors: list[str] | None = None) -> dict[str, CheckManifest]:
    """Every check manifest of the workspace (built-in ones first, then its own).

    With ``errors`` a list, a bad manifest is left out and its error appended there.
    """
    return catalog(check_dirs(ws.root, bundled("workflows")), errors)


def fire_check(
    ws: WorkspaceDir, check_id: str, path: str, run: str, stage: str = "manual"
) -> tuple[dict[str, Any], bool]:
    """Fire a check on a workspace file: through the daemon (recorded) when it runs, else here.

    Returns the verdict and whether it was recorded in the log.
    """

    def direct() -> tuple[dict[str, Any], bool]:
        manifest = runnable(lookup(checks(ws), check_id))
        kept = write_details(ws.root)
        with kept.working() as work:
            verdict = fire(
                manifest,
                path=Path(path),
                root=ws.root,
                run=run,
                stage=stage,
                detail_dir=work if kept.encrypted else WRITE_DETAIL_DIR,
            )
        return kept_verdict(ws.root, kept, verdict).to_dict(), False

    def read(reply: Reply) -> tuple[dict[str, Any], bool]:
        return dict(reply.fields["verdict"]), True

    return connect(ws).either(FireCheck(check_id, path, run, stage), log=direct, read=read)
