"""Workflow runs and gate checks through the front door: read from the log, asked of the
daemon (``ws.runs`` and ``ws.run(id)``; ``nerve workflow …``, ``nerve check …``)."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any, TextIO

from nerve.door.nouns import Noun

if TYPE_CHECKING:
    from nerve.checks.manifest import CheckManifest
    from nerve.door.core import Core
    from nerve.flow.history import RunRecord
    from nerve.query import QueryResult

__all__ = ["Run", "Runs"]


class Runs(Noun):
    """Workflow runs and gate checks (``ws.runs``); one run by id is ``ws.run(id)``."""

    def table(
        self,
        *,
        include_all: bool = False,
        since_ns: int | None = None,
        workflow: str | None = None,
        limit: int = 20,
        offset: int = 0,
    ) -> QueryResult:
        """Runs, newest request first (``nerve workflow list``): unfinished ones and those
        requested at or after ``since_ns`` (wall ns), or every one with ``include_all``."""
        from nerve.flow.history import list_runs
        from nerve.query import QueryResult

        columns, rows = list_runs(
            self._ws.connection(),
            include_all=include_all,
            since_ns=since_ns,
            workflow=workflow,
            limit=limit,
            offset=offset,
        )
        return QueryResult(columns, rows)

    def trigger(
        self,
        name: str,
        *,
        prompt: str = "",
        max_rounds: int | None = None,
        dry_run: bool = False,
        key: str | None = None,
    ) -> dict[str, Any]:
        """Ask the running daemon to start a run of workflow ``name``; its answer (``run``,
        ``status``; ``status: deduped`` with the ``earlier_run`` for a ``key`` used before)."""
        return self._ws._trigger_workflow(
            name, prompt=prompt, max_rounds=max_rounds, dry_run=dry_run, key=key
        )

    def checks(self, errors: list[str] | None = None) -> dict[str, CheckManifest]:
        """Every check manifest (built-in ones first, then the workspace's); with ``errors``
        a list, a bad manifest is left out and its error appended there."""
        from nerve.flow import client

        return client.checks(self._dir, errors)

    def fire_check(
        self, check_id: str, path: str, *, run: str = "manual", stage: str = "manual"
    ) -> tuple[dict[str, Any], bool]:
        """Fire a check on a workspace file: through the daemon (recorded) when it runs,
        else here (not recorded). The verdict, and whether it was recorded."""
        from nerve.flow import client

        return client.fire_check(self._dir, check_id, path, run, stage)

    def override_refusal(
        self, *, stdin: TextIO = sys.stdin, stdout: TextIO = sys.stdout
    ) -> str | None:
        """Why this process may not override a gate (inside a workflow, or not at an
        interactive terminal); None when it may."""
        from nerve.flow import client

        return client.interactive_refusal(stdin, stdout)


class Run(Noun):
    """One workflow run by id (``ws.run(id)``): as the log tells it, its events and kept
    files, and what a person does to it (answer its question, recheck or override its gate)."""

    def __init__(self, ws: Core, id: str) -> None:
        super().__init__(ws)
        self.id = id  # the run's id

    def __repr__(self) -> str:
        return f"{self._ws!r}.run({self.id!r})"

    def record(self) -> RunRecord:
        """The run as the log tells it (``nerve workflow inspect RUN``)."""
        return self._ws._run(self.id)

    def row(self) -> dict[str, Any]:
        """The run's row of ``workflow_runs`` (status, workflow, times, ...)."""
        from nerve.flow.history import run_row

        return run_row(self._ws.connection(), self.id)

    def events(self) -> list[dict[str, Any]]:
        """Every event of the run, oldest first (``hlc`` parts, ``ts``, ``kind``, ``line``,
        ``data``), as ``nerve workflow inspect`` lists them."""
        from nerve.flow.history import run_events

        return run_events(self._ws.connection(), self.id)

    def outputs(self) -> list[str]:
        """The files the run's folder keeps (outputs, and gate findings under ``.checks/``),
        relative to it; names are readable without the key."""
        from nerve.sealeddir import kept_names

        return kept_names(self._path())

    def output(self, name: str) -> bytes:
        """One kept file of the run, decrypted in an encrypted workspace (``KeyMissing``
        without the key; ``UsageError`` for a name the run does not keep)."""
        from nerve.errors import UsageError
        from nerve.flow.definition import safe_output
        from nerve.sealeddir import read_kept

        run, rel = self.id, safe_output(name)
        if rel not in self.outputs():
            raise UsageError(
                f"run {run!r} keeps no file {name!r} (see `nerve workflow outputs {run}`)"
            )
        return read_kept(self._dir.data, f"runs/{run}/{rel}")

    def _path(self) -> Path:
        from nerve.errors import UsageError

        run = self.id
        if not run or "/" in run or run.startswith("."):
            raise UsageError(f"run id {run!r} is not one nerve makes")
        return self._dir.data / "runs" / run

    def answer(self, choice: str, *, by: str | None = None) -> dict[str, Any]:
        """Answer the run's waiting question through the daemon, as ``by`` (default: this
        process's user); the run resumes."""
        from nerve.flow import client

        return client.answer(self._writable(), self.id, choice, by)

    def recheck(self) -> dict[str, Any]:
        """Fire the held run's gate checks again through the daemon (its answer: ``status``)."""
        from nerve.flow import client

        return client.recheck(self._writable(), self.id)

    def override(
        self, reason: str, *, stdin: TextIO = sys.stdin, stdout: TextIO = sys.stdout
    ) -> dict[str, Any]:
        """Complete the held run despite its blocking checks: a recorded decision of a person
        at an interactive terminal (``WorkflowError`` elsewhere)."""
        from nerve.flow import client

        return client.override(self._writable(), self.id, reason, stdin=stdin, stdout=stdout)

    def override_confirmed(self, reason: str, *, where: str) -> dict[str, Any]:
        """Complete the held run by a person's decision confirmed elsewhere than a terminal
        (``where`` says where: ``nerve ui`` asks on its page), recorded as an override."""
        from nerve.flow import client

        return client.override_confirmed(self._writable(), self.id, reason, where=where)
