"""Judging a run: the checks fired on its outputs, and advisory checks on file changes.

**Output checks** (``fire_on: gate``). When the moderator ends a run, every declared output
(the workflow's ``outputs`` plus each role's ``meta["outputs"]``, relative to the run folder
``data/runs/<run>/``) is resolved inside that folder: an absolute path, a ``..`` or a symlink
that leads out is refused and never shown to a check. The outputs are fingerprinted, then each
imported output check fires on each output its glob matches (one ``check.fired`` and one
``check.verdict`` event per fire), then the fingerprints are taken again. The run passes only
if no blocking binding returned anything but a clean pass, no path was refused and no output
changed; otherwise :func:`evaluate` returns the reasons and the run is ``held``. Advisory
verdicts are recorded and never block. A failure's findings go to
``data/runs/<run>/.checks/<check>-<fire>.md``; a later clean pass on the same output removes it.

In an encrypted workspace a run folder and ``data/checks/`` are :class:`EncryptedDir` pairs:
roles and checks work on plain files in memory, ``data/`` keeps them encrypted
(:mod:`nerve.encdir`).

**Write** (``fire_on: write``). Each committed ``file_change`` observation of this node whose
path matches a write check's glob fires that check (advisory only, at most a few at a time,
in threads so the kernel's loop never waits); details go to ``data/checks/``.
"""

from __future__ import annotations

import asyncio
import dataclasses
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import Any

import pyarrow as pa

from nerve.checks.catalog import runnable
from nerve.checks.dispatch import Verdict, fingerprint, fire, resolve_inside
from nerve.checks.manifest import CheckManifest, matches_path
from nerve.encdir import EncryptedDir
from nerve.errors import CheckError, LogError, WorkflowError, report
from nerve.events import SourceClass, decode_payload
from nerve.flow.contract import Message
from nerve.flow.definition import safe_output
from nerve.flow.record import CHECK_FIRED, CHECK_VERDICT, Emit, draft
from nerve.log.drafts import Draft

RUNS_DIR = Path("data") / "runs"
WRITE_DETAIL_DIR = Path("data") / "checks"
WRITE_PARALLEL = 4


def run_dir(root: Path, run: str) -> Path:
    """Where a run's outputs are kept (encrypted, in an encrypted workspace)."""
    return root / RUNS_DIR / run


def run_folder(root: Path, run: str) -> EncryptedDir:
    """A run's kept folder and the folder its roles write in (the same one when plain)."""
    rel = (RUNS_DIR / run).relative_to("data").as_posix()
    return EncryptedDir.under(root / RUNS_DIR.parent, rel)


def write_details(root: Path) -> EncryptedDir:
    """``data/checks/``, where write and manual fires keep their findings."""
    return EncryptedDir.under(root / RUNS_DIR.parent, WRITE_DETAIL_DIR.name)


def declared_outputs(static: Iterable[str], messages: Iterable[Message]) -> list[str]:
    """The workflow's own outputs, then each role's ``meta["outputs"]``, each once."""
    found = list(static)
    for message in messages:
        raw = message.meta.get("outputs") or []
        found += [o for o in raw if isinstance(o, str)] if isinstance(raw, list) else []
    return list(dict.fromkeys(found))


def _target(run: str, work: Path, output: str) -> tuple[str, Path]:
    """The output's workspace-relative name and the file a check reads;
    ``WorkflowError``/``CheckError`` if it escapes the run's folder."""
    safe_output(output)
    source = resolve_inside(work, output)
    return (RUNS_DIR / run / source.relative_to(work.resolve())).as_posix(), source


async def evaluate(
    emit: Emit,
    *,
    root: Path,
    run: str,
    workflow: str,
    outputs: Sequence[str],
    manifests: Sequence[CheckManifest],
    autonomous: bool = False,
) -> list[dict[str, Any]]:
    """Fire ``manifests`` on ``outputs``; the reasons the run is held (empty: it passes).

    In an autonomous run (no person will read the checks' advisory evidence) only blocking
    checks fire, as AI-DLC's gate (its word) does under autonomy.
    """
    if autonomous:
        manifests = [m for m in manifests if m.default_severity == "blocking"]
    root = root.resolve()
    folder = run_folder(root, run)
    await asyncio.to_thread(folder.enter)
    try:
        return await _evaluate(emit, root, run, workflow, outputs, manifests, folder)
    finally:
        await asyncio.to_thread(folder.leave)


async def _evaluate(
    emit: Emit,
    root: Path,
    run: str,
    workflow: str,
    outputs: Sequence[str],
    manifests: Sequence[CheckManifest],
    folder: EncryptedDir,
) -> list[dict[str, Any]]:
    reasons: list[dict[str, Any]] = []
    targets: list[tuple[str, Path]] = []
    for output in outputs:
        try:
            targets.append(_target(run, folder.work, output))
        except (WorkflowError, CheckError) as exc:
            reasons.append({"output": output, "reason": "path-refused", "detail": str(exc)})
    before = {rel: fingerprint(source) for rel, source in targets}
    recorder = _Recorder(emit)
    where = _Where(root, folder, folder.work / ".checks" if folder.encrypted else None)
    try:
        for rel, source in targets:
            for manifest in manifests:
                if matches_path(manifest, rel):
                    verdict = await _fire(recorder, where, run, workflow, manifest, rel, source)
                    if verdict.blocks(manifest.default_severity):
                        reasons.append(_blocking(verdict))
    finally:
        await recorder.flush()
    for rel, source in targets:
        if fingerprint(source) != before[rel]:
            reasons.append({"output": rel, "reason": "changed", "detail": "bytes changed"})
    return reasons


@dataclasses.dataclass(frozen=True)
class _Where:
    """Where a fire's check runs and keeps its findings: ``details`` (a working folder in
    memory, for an encrypted pair) or the default for its mode (plain)."""

    root: Path
    kept: EncryptedDir | None = None
    details: Path | None = None

    def shown(self, verdict: Verdict) -> Verdict:
        return verdict if self.kept is None else kept_verdict(self.root, self.kept, verdict)


def kept_verdict(root: Path, kept: EncryptedDir, verdict: Verdict) -> Verdict:
    """A finding written in a working folder is named by its encrypted copy's path."""
    if not kept.encrypted or verdict.detail_path is None:
        return verdict
    try:
        inside = Path(verdict.detail_path).relative_to(kept.work)
        shown = (kept.stored / inside).relative_to(root)
    except ValueError:
        return verdict
    return dataclasses.replace(verdict, detail_path=shown.as_posix())


def _blocking(verdict: Verdict) -> dict[str, Any]:
    return {
        "check": verdict.check_id,
        "path": verdict.path,
        "reason": verdict.note or verdict.result,
        "result": verdict.result,
        "note": verdict.note,
        "findings_count": verdict.findings_count,
        "detail_path": verdict.detail_path,
    }


class _Recorder:
    """Appends events in order without waiting for each commit; ``flush`` waits for all.

    A run's ``check.fired`` / ``check.verdict`` events are committed while the next check
    runs. The committer keeps submission order, and :func:`evaluate` flushes before it returns, so
    every verdict is durable before the run's status that depends on it is appended.
    """

    def __init__(self, emit: Emit) -> None:
        self.emit = emit
        self.pending: list[asyncio.Future[Any]] = []

    def append(self, drafts: Sequence[Draft]) -> None:
        self.pending.append(asyncio.ensure_future(self.emit(drafts)))

    async def flush(self) -> None:
        pending, self.pending = self.pending, []
        await asyncio.gather(*pending)


async def _fire(
    recorder: _Recorder,
    where: _Where,
    run: str,
    workflow: str | None,
    manifest: CheckManifest,
    rel: str,
    source: Path | None = None,
    mode: str = "gate",
    stage: str | None = None,
) -> Verdict:
    root = where.root
    subject = run if mode == "gate" else rel
    common = {
        "run": run,
        "workflow": workflow,
        "check": manifest.id,
        "path": rel,
        "fire_on": mode,
        "severity": manifest.default_severity,
    }
    recorder.append([draft(CHECK_FIRED, subject, f"check {manifest.id} fired on {rel}", common)])
    details = where.details or (
        (RUNS_DIR / run / ".checks") if mode == "gate" else WRITE_DETAIL_DIR
    )
    stage = stage or (workflow if mode == "gate" and workflow else mode)
    verdict = await asyncio.to_thread(
        fire,
        runnable(manifest),
        path=Path(rel),
        root=root,
        run=run,
        stage=stage,
        detail_dir=details,
        source=source if where.kept is not None and where.kept.encrypted else None,
    )
    verdict = where.shown(verdict)
    blocks = mode == "gate" and verdict.blocks(manifest.default_severity)
    payload = {**verdict.to_dict(), **common, "blocks": blocks}
    note = f" ({verdict.note})" if verdict.note else ""
    line = f"check {manifest.id} on {rel}: {verdict.result}{note}"
    recorder.append([draft(CHECK_VERDICT, subject, line, payload)])
    return verdict


async def _fire_now(
    emit: Emit,
    root: Path,
    run: str,
    manifest: CheckManifest,
    rel: str,
    mode: str,
    stage: str | None = None,
) -> Verdict:
    recorder = _Recorder(emit)
    kept = write_details(root)
    details = await asyncio.to_thread(kept.enter)
    try:
        where = _Where(root, kept, details if kept.encrypted else None)
        return await _fire(recorder, where, run, None, manifest, rel, None, mode, stage)
    finally:
        try:
            await recorder.flush()
        finally:
            await asyncio.to_thread(kept.leave)


async def fire_one(
    emit: Emit, *, root: Path, manifest: CheckManifest, path: str, run: str, stage: str = "manual"
) -> Verdict:
    """One recorded fire of one check on one workspace file (``nerve check fire``)."""
    rel = resolve_inside(root, path).relative_to(root.resolve()).as_posix()
    return await _fire_now(emit, root.resolve(), run, manifest, rel, "manual", stage)


class WriteChecks:
    """Fires ``fire_on: write`` checks on committed file-change observations (advisory)."""

    def __init__(self, emit: Emit, root: Path, node: str) -> None:
        self.emit = emit
        self.root = root.resolve()
        self.node = node
        self.manifests: list[CheckManifest] = []
        self._limit = asyncio.Semaphore(WRITE_PARALLEL)
        self._pending: set[tuple[str, str]] = set()
        self._tasks: set[asyncio.Task[None]] = set()

    def load(self, manifests: Iterable[CheckManifest]) -> None:
        self.manifests = [m for m in manifests if m.fire_on == "write"]

    def listener(self) -> Callable[[pa.Table], None]:
        def on_commit(table: pa.Table) -> None:
            if self.manifests:
                for path in _changed_paths(table, self.node):
                    self._schedule(path)

        return on_commit

    def _schedule(self, path: str) -> None:
        for manifest in self.manifests:
            key = (manifest.id, path)
            if key not in self._pending and matches_path(manifest, path):
                self._pending.add(key)
                task = asyncio.get_running_loop().create_task(self._run(manifest, path))
                self._tasks.add(task)
                task.add_done_callback(self._tasks.discard)

    async def _run(self, manifest: CheckManifest, path: str) -> None:
        try:
            async with self._limit:
                if (self.root / path).is_file():
                    await _fire_now(self.emit, self.root, "write", manifest, path, "write")
        except (CheckError, OSError):
            pass  # the file went away or moved out of reach: nothing to check
        except LogError as exc:  # an encrypted workspace with nowhere in memory to work
            report(f"write check {manifest.id} on {path} did not fire: {exc}")
        finally:
            self._pending.discard((manifest.id, path))

    async def close(self) -> None:
        for task in list(self._tasks):
            task.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)


def _changed_paths(table: pa.Table, node: str) -> list[str]:
    """Paths of this node's added or modified files in a committed batch."""
    kinds = table.column("kind").to_pylist()
    sources = table.column("source").to_pylist()
    nodes = table.column("node").to_pylist()
    found = []
    for i, kind in enumerate(kinds):
        if kind == "observation" and sources[i] == SourceClass.FILE_CHANGE and nodes[i] == node:
            data = _json(table.column("payload")[i].as_py())
            if isinstance(data, dict) and data.get("change") in ("added", "modified"):
                path = data.get("path")
                if isinstance(path, str) and path:
                    found.append(path)
    return found


def _json(raw: bytes | None) -> Any:
    return decode_payload(raw) if raw else None
