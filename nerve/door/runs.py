"""Workflow runs and their checks through the front door: read from the log, asked of the
daemon (``ws.runs`` and ``ws.run(id)``; ``nerve workflow …``, ``nerve check …``)."""

from __future__ import annotations

import sys
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, TextIO

from nerve.door.nouns import Noun

if TYPE_CHECKING:
    from nerve.checks.manifest import CheckManifest
    from nerve.door.core import Core
    from nerve.flow.history import RunRecord
    from nerve.query import QueryResult

__all__ = [
    "Answered",
    "Fired",
    "Overridden",
    "Rechecked",
    "Requested",
    "Run",
    "RunEvent",
    "RunRow",
    "Runs",
]


@dataclass(frozen=True)
class RunRow:
    """One run's row of the ``workflow_runs`` projection, as ``nerve workflow inspect``
    prints it: status and why, rounds, the request (prompt, dry run, where it came from),
    and when it was requested and last changed."""

    run: str
    workflow: str
    status: str
    reason: str | None
    rounds: int | None
    max_rounds: int | None
    prompt: str | None
    dry_run: bool | None
    source: str | None
    sense: str | None
    requested_at: Any  # times as DuckDB gives them (datetimes)
    updated_at: Any

    def to_json(self) -> dict[str, Any]:
        return {name: getattr(self, name) for name in self.__dataclass_fields__}


@dataclass(frozen=True)
class RunEvent:
    """One event of a workflow run as ``nerve workflow inspect`` lists it: its HLC parts,
    time, kind, line and payload (``data``)."""

    physical_ns: int
    logical: int
    ts: Any  # the time as DuckDB gives it (a datetime)
    kind: str
    line: str
    data: Any

    def to_json(self) -> dict[str, Any]:
        return {
            "physical_ns": self.physical_ns,
            "logical": self.logical,
            "ts": self.ts,
            "kind": self.kind,
            "line": self.line,
            "data": self.data,
        }


@dataclass(frozen=True)
class Requested:
    """The daemon's answer to a run request (``ws.runs.trigger``): the workflow, the run it
    started (None when no engine runs workflows, or for a key used before) and its status
    (``""`` without an engine). The other fields depend on the status, so ``fields`` keeps
    the whole answer: ``earlier_run`` when ``deduped``, ``decision`` for a dry run, ``reason``
    or ``error`` when refused."""

    workflow: str
    run: str | None
    status: str
    fields: Mapping[str, Any]

    @classmethod
    def of(cls, fields: Mapping[str, Any]) -> Requested:
        run = fields.get("run")
        status = str(fields.get("status") or "")
        return cls(str(fields.get("workflow", "")), run and str(run), status, dict(fields))

    def to_json(self) -> dict[str, Any]:
        return dict(self.fields)


@dataclass(frozen=True)
class Answered:
    """A waiting run answered (``ws.run(id).answer``): the option chosen, the run's status."""

    run: str
    choice: str
    status: str

    def to_json(self) -> dict[str, Any]:
        return {"run": self.run, "choice": self.choice, "status": self.status}


@dataclass(frozen=True)
class Rechecked:
    """A held run's output checks, fired again (``ws.run(id).recheck``): ``completed`` or
    ``held``."""

    run: str
    status: str

    def to_json(self) -> dict[str, Any]:
        return {"run": self.run, "status": self.status}


@dataclass(frozen=True)
class Overridden:
    """A held run completed by a person's decision (``ws.run(id).override``): its status
    and the blocking checks overridden."""

    run: str
    status: str
    checks: list[str]

    def to_json(self) -> dict[str, Any]:
        return {"run": self.run, "status": self.status, "checks": list(self.checks)}


@dataclass(frozen=True)
class Fired:
    """One fire of a check on a file (``ws.runs.fire_check``): the verdict, whose fields
    are those of :meth:`nerve.checks.dispatch.Verdict.to_dict` (AI-DLC's names beside
    nerve's), and whether the daemon recorded it in the log."""

    verdict: Mapping[str, Any]
    recorded: bool

    @property
    def failed(self) -> bool:
        """Whether the check found problems (``nerve check fire`` exits 1)."""
        return self.verdict.get("result") == "failed"

    def to_json(self) -> dict[str, Any]:
        return {**self.verdict, "recorded": self.recorded}


class Runs(Noun):
    """Workflow runs and their checks (``ws.runs``); one run by id is ``ws.run(id)``."""

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
    ) -> Requested:
        """Ask the running daemon to start a run of workflow ``name``; its answer (``run``,
        ``status``; ``status: deduped`` with the ``earlier_run`` for a ``key`` used before)."""
        reply = self._ws._trigger_workflow(
            name, prompt=prompt, max_rounds=max_rounds, dry_run=dry_run, key=key
        )
        return Requested.of(reply)

    def checks(self, errors: list[str] | None = None) -> dict[str, CheckManifest]:
        """Every check manifest by id (built-in ones first, then the workspace's); with
        ``errors`` a list, a bad manifest is left out and its error appended there. A dict by
        design: a mapping keyed by check id, each value a typed manifest."""
        from nerve.flow import client

        return client.checks(self._dir, errors)

    def fire_check(
        self, check_id: str, path: str, *, run: str = "manual", stage: str = "manual"
    ) -> Fired:
        """Fire a check on a workspace file: through the daemon (recorded) when it runs,
        else here (not recorded). The verdict, and whether it was recorded."""
        from nerve.flow import client

        return Fired(*client.fire_check(self._dir, check_id, path, run, stage))

    def override_refusal(
        self, *, stdin: TextIO = sys.stdin, stdout: TextIO = sys.stdout
    ) -> str | None:
        """Why this process may not override a held run (inside a workflow, or not at an
        interactive terminal); None when it may."""
        from nerve.flow import client

        return client.interactive_refusal(stdin, stdout)


class Run(Noun):
    """One workflow run by id (``ws.run(id)``): as the log tells it, its events and kept
    files, and what a person does to it (answer its question, recheck or override its checks)."""

    def __init__(self, ws: Core, id: str) -> None:
        super().__init__(ws)
        self.id = id  # the run's id

    def __repr__(self) -> str:
        return f"{self._ws!r}.run({self.id!r})"

    def record(self) -> RunRecord:
        """The run as the log tells it (``nerve workflow inspect RUN``)."""
        return self._ws._run(self.id)

    def row(self) -> RunRow:
        """The run's row of ``workflow_runs`` (status, workflow, times, ...)."""
        from nerve.flow.history import run_row

        return RunRow(**run_row(self._ws.connection(), self.id))

    def events(self) -> list[RunEvent]:
        """Every event of the run, oldest first (``hlc`` parts, ``ts``, ``kind``, ``line``,
        ``data``), as ``nerve workflow inspect`` lists them."""
        from nerve.flow.history import run_events

        return [RunEvent(**row) for row in run_events(self._ws.connection(), self.id)]

    def outputs(self) -> list[str]:
        """The files the run's folder keeps (outputs, and its checks' findings under ``.checks/``),
        relative to it; names are readable without the key."""
        from nerve.encdir import kept_names

        return kept_names(self._path())

    def output(self, name: str) -> bytes:
        """One kept file of the run, decrypted in an encrypted workspace (``KeyMissing``
        without the key; ``UsageError`` for a name the run does not keep)."""
        from nerve.encdir import read_kept
        from nerve.errors import UsageError
        from nerve.flow.definition import safe_output

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

    def answer(self, choice: str, *, by: str | None = None) -> Answered:
        """Answer the run's waiting question through the daemon, as ``by`` (default: this
        process's user); the run resumes."""
        from nerve.flow import client

        reply = client.answer(self._writable(), self.id, choice, by)
        return Answered(reply["run"], reply["choice"], reply["status"])

    def recheck(self) -> Rechecked:
        """Fire the held run's output checks again through the daemon (its answer: ``status``)."""
        from nerve.flow import client

        reply = client.recheck(self._writable(), self.id)
        return Rechecked(reply["run"], reply["status"])

    def override(
        self, reason: str, *, stdin: TextIO = sys.stdin, stdout: TextIO = sys.stdout
    ) -> Overridden:
        """Complete the held run despite its blocking checks: a recorded decision of a person
        at an interactive terminal (``WorkflowError`` elsewhere)."""
        from nerve.flow import client

        reply = client.override(self._writable(), self.id, reason, stdin=stdin, stdout=stdout)
        return Overridden(reply["run"], reply["status"], list(reply["checks"]))

    def override_confirmed(self, reason: str, *, where: str) -> Overridden:
        """Complete the held run by a person's decision confirmed elsewhere than a terminal
        (``where`` says where: ``nerve ui`` asks on its page), recorded as an override."""
        from nerve.flow import client

        reply = client.override_confirmed(self._writable(), self.id, reason, where=where)
        return Overridden(reply["run"], reply["status"], list(reply["checks"]))
