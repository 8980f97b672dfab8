"""Workflow runs and gate checks through the front door: read from the log, asked of the
daemon (``nerve workflow …``, ``nerve check …``)."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any, TextIO

if TYPE_CHECKING:
    import duckdb

    from nerve.checks.manifest import CheckManifest
    from nerve.query import QueryResult
    from nerve.workspace import WorkspaceDir

__all__ = ["RunOps"]


class RunOps:
    """What reads and steers workflow runs and checks: mixed into :class:`nerve.door.core.Core`."""

    _dir: WorkspaceDir

    if TYPE_CHECKING:

        def connection(self) -> duckdb.DuckDBPyConnection: ...

        def _writable(self) -> WorkspaceDir: ...

    def _run_table(
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
            self.connection(),
            include_all=include_all,
            since_ns=since_ns,
            workflow=workflow,
            limit=limit,
            offset=offset,
        )
        return QueryResult(columns, rows)

    def _run_row(self, run: str) -> dict[str, Any]:
        """One run's row of ``workflow_runs`` (status, workflow, times, ...)."""
        from nerve.flow.history import run_row

        return run_row(self.connection(), run)

    def _run_events(self, run: str) -> list[dict[str, Any]]:
        """Every event of one run, oldest first (``hlc`` parts, ``ts``, ``kind``, ``line``,
        ``data``), as ``nerve workflow inspect`` lists them."""
        from nerve.flow.history import run_events

        return run_events(self.connection(), run)

    def _run_outputs(self, run: str) -> list[str]:
        """The files a run's folder keeps (outputs, and gate findings under ``.checks/``),
        relative to it; names are readable without the key."""
        from nerve.sealeddir import kept_names

        return kept_names(self._run_path(run))

    def _run_output(self, run: str, name: str) -> bytes:
        """One kept file of a run, decrypted in an encrypted workspace (``KeyMissing``
        without the key; ``UsageError`` for a name the run does not keep)."""
        from nerve.errors import UsageError
        from nerve.flow.definition import safe_output
        from nerve.sealeddir import read_kept

        rel = safe_output(name)
        if rel not in self._run_outputs(run):
            raise UsageError(
                f"run {run!r} keeps no file {name!r} (see `nerve workflow outputs {run}`)"
            )
        return read_kept(self._dir.data, f"runs/{run}/{rel}")

    def _run_path(self, run: str) -> Path:
        from nerve.errors import UsageError

        if not run or "/" in run or run.startswith("."):
            raise UsageError(f"run id {run!r} is not one nerve makes")
        return self._dir.data / "runs" / run

    def _answer_run(self, run: str, choice: str, *, by: str | None = None) -> dict[str, Any]:
        """Answer a waiting run's question through the daemon, as ``by`` (default: this
        process's user); the run resumes."""
        from nerve.flow import client

        return client.answer(self._writable(), run, choice, by)

    def _recheck_run(self, run: str) -> dict[str, Any]:
        """Fire a held run's gate checks again through the daemon (its answer: ``status``)."""
        from nerve.flow import client

        return client.recheck(self._writable(), run)

    def _override_run(
        self, run: str, reason: str, *, stdin: TextIO = sys.stdin, stdout: TextIO = sys.stdout
    ) -> dict[str, Any]:
        """Complete a held run despite its blocking checks: a recorded decision of a person
        at an interactive terminal (``WorkflowError`` elsewhere)."""
        from nerve.flow import client

        return client.override(self._writable(), run, reason, stdin=stdin, stdout=stdout)

    def _override_confirmed(self, run: str, reason: str, *, where: str) -> dict[str, Any]:
        """Complete a held run by a person's decision confirmed elsewhere than a terminal
        (``where`` says where: ``nerve ui`` asks on its page), recorded as an override."""
        from nerve.flow import client

        return client.override_confirmed(self._writable(), run, reason, where=where)

    def _override_refusal(
        self, *, stdin: TextIO = sys.stdin, stdout: TextIO = sys.stdout
    ) -> str | None:
        """Why this process may not override a gate (inside a workflow, or not at an
        interactive terminal); None when it may."""
        from nerve.flow import client

        return client.interactive_refusal(stdin, stdout)

    def _checks(self, errors: list[str] | None = None) -> dict[str, CheckManifest]:
        """Every check manifest (built-in ones first, then the workspace's); with ``errors``
        a list, a bad manifest is left out and its error appended there."""
        from nerve.flow import client

        return client.checks(self._dir, errors)

    def _fire_check(
        self, check_id: str, path: str, *, run: str = "manual", stage: str = "manual"
    ) -> tuple[dict[str, Any], bool]:
        """Fire a check on a workspace file: through the daemon (recorded) when it runs,
        else here (not recorded). The verdict, and whether it was recorded."""
        from nerve.flow import client

        return client.fire_check(self._dir, check_id, path, run, stage)
