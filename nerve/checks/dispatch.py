"""Firing a check: run its command on one file and turn what it says into a verdict.

The command gets the manifest's argv plus ``--stage <stage> --output-path <path>`` (or
``--file-path``), as AI-DLC's dispatcher appends them, runs in the workspace root with no
shell and no stdin, and prints one JSON line with a boolean ``pass`` (plus ``findings`` and
``findings_count``), exiting 0 either way. nerve's own context is in its environment:
``NERVE_RUN`` (the run id), ``NERVE_STAGE`` and ``NERVE_FIRE_ID``.

The time limit is the manifest's ``timeout_seconds`` (or the caller's override), capped by
``AIDLC_SENSOR_TIMEOUT_MS`` in the environment when that is set.

Anything that evaluated nothing is recorded as a *noted* pass, never as a clean one:

    exit 127, or the program is missing   → note ``tool-unavailable``
    other non-zero exit, no boolean pass  → note ``script-error``
    the time limit ran out                → note ``timeout`` (the whole process group is killed)
    the program could not be started      → note ``spawn-failed``
    the file changed while it was checked → note ``changed-during-check``

A failure writes its findings to ``<detail_dir>/<check-id>-<fire-id>.md``; a later clean pass
of the same check on the same file removes those reports (``index.json`` remembers which
report belongs to which check and file).
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import signal
import subprocess
import tempfile
import time
from collections.abc import Callable, Iterator, Mapping
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import Any, Literal

import blake3

from nerve.canonical import canonical_json_text
from nerve.checks.manifest import CheckManifest
from nerve.errors import CheckError

__all__ = ["DETAIL_DIR", "TIMEOUT_ENV", "Verdict", "fingerprint", "fire", "resolve_inside"]

DETAIL_DIR = ".nerve-checks"
_STDERR_TAIL = 2000
_INDEX = "index.json"
# After the group is killed its pipes should close at once; a process that escaped the group
# (its own session) could hold them open, so reading stops after this long.
_DRAIN_SECONDS = 2.0

Note = Literal[
    "tool-unavailable", "script-error", "timeout", "spawn-failed", "changed-during-check"
]


@dataclass(frozen=True, slots=True)
class Verdict:
    """What one fire of one check on one file concluded."""

    check_id: str
    run: str
    path: str
    result: Literal["passed", "failed"]
    note: Note | None
    findings: Any
    findings_count: int
    exit_code: int | None
    duration_ms: int
    stderr_tail: str
    fingerprint: str
    detail_path: str | None
    fire_id: str = ""
    stage: str = ""

    @property
    def clean(self) -> bool:
        """A verified pass: the check evaluated the file and found nothing."""
        return self.result == "passed" and self.note is None

    def blocks(self, severity: str) -> bool:
        """Whether this verdict holds a run bound to the check at ``severity``."""
        return severity == "blocking" and not self.clean

    def to_dict(self) -> dict[str, Any]:
        """The verdict as plain JSON-ready data (for ``check.verdict`` events and the CLI).

        AI-DLC's verdict field names (``fire_id``, ``sensor_id``, ``stage``,
        ``output_path``, ``result``, ``detail_path``, ``note``) are all present, beside
        nerve's own (``check_id`` and ``path`` say the same as ``sensor_id`` and
        ``output_path``).
        """
        return {**asdict(self), "sensor_id": self.check_id, "output_path": self.path}

    def to_json(self) -> str:
        """The verdict as canonical JSON text."""
        return canonical_json_text(self.to_dict())


@dataclass(frozen=True, slots=True)
class _Outcome:
    exit_code: int | None
    stdout: str
    stderr: str
    failure: Note | None = None


@dataclass(frozen=True, slots=True)
class _Judgement:
    result: Literal["passed", "failed"]
    note: Note | None
    report: dict[str, Any] | None = field(default=None)


def resolve_inside(root: Path, path: Path | str) -> Path:
    """``path`` (relative to ``root``, or absolute) resolved, symlinks followed.

    Raises ``CheckError`` when the result lies outside ``root``: a ``..`` or a symlink cannot
    point a check at files beyond the workspace.
    """
    base = Path(root).resolve()
    given = Path(path)
    try:
        resolved = (given if given.is_absolute() else base / given).resolve(strict=False)
    except (OSError, RuntimeError, ValueError) as exc:
        raise CheckError(f"cannot resolve check path {str(path)!r}: {exc}") from None
    if not resolved.is_relative_to(base):
        raise CheckError(
            f"check path {str(path)!r} resolves to {resolved}, outside the workspace {base}"
        )
    return resolved


def fingerprint(path: Path) -> str:
    """blake3 hex of the file's bytes; ``""`` for a folder, a missing or unreadable file."""
    hasher = blake3.blake3()
    try:
        with path.open("rb") as stream:
            for chunk in iter(lambda: stream.read(1 << 20), b""):
                hasher.update(chunk)
    except OSError:
        return ""
    return str(hasher.hexdigest())


def fire(
    manifest: CheckManifest,
    *,
    path: Path,
    root: Path,
    run: str,
    stage: str = "manual",
    timeout_s: float | None = None,
    env: Mapping[str, str] | None = None,
    detail_dir: Path | None = None,
    now_ns: Callable[[], int] = time.time_ns,
    source: Path | None = None,
) -> Verdict:
    """Run ``manifest``'s check on ``path`` inside ``root`` and return its verdict.

    The check is told ``--stage <stage>``; ``run`` goes to its environment as
    ``NERVE_RUN``. ``path`` and a relative ``detail_dir`` are taken relative to ``root``;
    ``timeout_s`` overrides the manifest's ``timeout_seconds``; ``env`` replaces the inherited
    environment. ``source`` is the file the check reads when ``path`` names an encrypted copy (an
    encrypted workspace's run output, worked on in memory); ``path`` stays its name in the
    verdict. Raises ``CheckError`` only for a caller's mistake (a path outside ``root``,
    no such root, a bad ``AIDLC_SENSOR_TIMEOUT_MS``); whatever the check itself does ends in
    a verdict.
    """
    base = _workspace(root)
    if source is None:
        target = resolve_inside(base, path)
        relpath = shown = target.relative_to(base).as_posix()
    else:
        target, relpath, shown = source, Path(path).as_posix(), str(source)
    argv = [*manifest.command, "--stage", stage, manifest.path_flag, shown]
    environ = dict(os.environ if env is None else env)
    timeout = _time_limit(manifest.timeout_seconds if timeout_s is None else timeout_s, environ)
    fire_id = _fire_id(run, relpath, now_ns())
    environ |= {"NERVE_RUN": run, "NERVE_STAGE": stage, "NERVE_FIRE_ID": fire_id}
    before = fingerprint(target)
    started = time.monotonic_ns()
    outcome = _execute(argv, base, timeout, environ)
    elapsed_ms = (time.monotonic_ns() - started) // 1_000_000
    judgement = _judge(outcome, changed=fingerprint(target) != before)
    verdict = _verdict(
        manifest.id,
        run,
        relpath,
        before=before,
        outcome=outcome,
        judgement=judgement,
        elapsed_ms=elapsed_ms,
    )
    verdict = replace(verdict, fire_id=fire_id, stage=stage)
    detail = _keep_details(verdict, judgement.report, base / (detail_dir or DETAIL_DIR))
    return verdict if detail is None else _with_detail(verdict, detail, base)


def _verdict(
    check_id: str,
    run: str,
    relpath: str,
    *,
    before: str,
    outcome: _Outcome,
    judgement: _Judgement,
    elapsed_ms: int,
) -> Verdict:
    findings, count = _findings(judgement.report)
    return Verdict(
        check_id=check_id,
        run=run,
        path=relpath,
        result=judgement.result,
        note=judgement.note,
        findings=findings,
        findings_count=count,
        exit_code=outcome.exit_code,
        duration_ms=elapsed_ms,
        stderr_tail=outcome.stderr[-_STDERR_TAIL:],
        fingerprint=before,
        detail_path=None,
    )


TIMEOUT_ENV = "AIDLC_SENSOR_TIMEOUT_MS"


def _time_limit(seconds: float, environ: Mapping[str, str]) -> float:
    """The fire's limit: ``seconds``, capped by ``AIDLC_SENSOR_TIMEOUT_MS`` when set."""
    raw = environ.get(TIMEOUT_ENV, "").strip()
    if not raw:
        return seconds
    if not raw.isdigit() or int(raw) == 0:
        raise CheckError(
            f"{TIMEOUT_ENV}={raw!r}: must be a positive whole number of milliseconds",
            field=TIMEOUT_ENV,
        )
    return min(seconds, int(raw) / 1000)


def _fire_id(run: str, relpath: str, now: int) -> str:
    return str(blake3.blake3(f"{run}\0{relpath}\0{now}".encode()).hexdigest())[:8]


def _workspace(root: Path) -> Path:
    base = Path(root).resolve()
    if not base.is_dir():
        raise CheckError(f"workspace root {str(root)!r} is not a folder")
    return base


# running the command


def _execute(argv: list[str], cwd: Path, timeout: float, env: Mapping[str, str] | None) -> _Outcome:
    try:
        process = subprocess.Popen(
            argv,
            cwd=cwd,
            env=None if env is None else dict(env),
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            start_new_session=True,  # its own process group, so a timeout kills its children too
        )
    except FileNotFoundError as exc:
        return _Outcome(None, "", str(exc), "tool-unavailable")
    except OSError as exc:
        return _Outcome(None, "", str(exc), "spawn-failed")
    with _reaped(process):
        try:
            stdout, stderr = process.communicate(timeout=timeout)
        except subprocess.TimeoutExpired:
            _kill_group(process)
            stdout, stderr = _drain(process)
            return _Outcome(None, _text(stdout), _text(stderr), "timeout")
    return _Outcome(process.returncode, _text(stdout), _text(stderr))


@contextlib.contextmanager
def _reaped(process: subprocess.Popen[bytes]) -> Iterator[None]:
    # Whatever interrupts us (Ctrl-C, an error), no check outlives its fire.
    try:
        yield
    finally:
        if process.poll() is None:
            _kill_group(process)
            process.wait()


def _kill_group(process: subprocess.Popen[bytes]) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(process.pid, signal.SIGKILL)


def _drain(process: subprocess.Popen[bytes]) -> tuple[bytes, bytes]:
    try:
        return process.communicate(timeout=_DRAIN_SECONDS)
    except subprocess.TimeoutExpired:
        process.kill()
        for stream in (process.stdout, process.stderr):
            if stream is not None:
                stream.close()
        process.wait()
        return b"", b""


def _text(data: bytes | None) -> str:
    return (data or b"").decode("utf-8", errors="replace")


# reading what it said


def _judge(outcome: _Outcome, *, changed: bool) -> _Judgement:
    judgement = _judge_output(outcome)
    if changed and judgement.note is None:
        # The verdict is about bytes that are gone; the file must be checked again.
        return _Judgement(judgement.result, "changed-during-check", judgement.report)
    return judgement


def _judge_output(outcome: _Outcome) -> _Judgement:
    if outcome.failure is not None:
        return _Judgement("passed", outcome.failure)
    if outcome.exit_code == 127:
        return _Judgement("passed", "tool-unavailable")
    report = _last_json_object(outcome.stdout)
    if outcome.exit_code != 0 or report is None or not isinstance(report.get("pass"), bool):
        return _Judgement("passed", "script-error", report)
    return _Judgement("passed" if report["pass"] else "failed", None, report)


def _last_json_object(stdout: str) -> dict[str, Any] | None:
    for line in reversed(stdout.splitlines()):
        if line.strip():
            try:
                value = json.loads(line, parse_constant=_refuse_constant)
            except ValueError:
                continue
            if isinstance(value, dict):
                return value
    return None


def _refuse_constant(name: str) -> Any:
    raise ValueError(f"{name} is not JSON")  # NaN and Infinity cannot be stored canonically


def _findings(report: dict[str, Any] | None) -> tuple[Any, int]:
    findings = [] if report is None else report.get("findings", [])
    count = None if report is None else report.get("findings_count")
    if isinstance(count, int) and not isinstance(count, bool) and count >= 0:
        return findings, count
    return findings, len(findings) if isinstance(findings, list) else 0


# detail reports


def _keep_details(verdict: Verdict, report: dict[str, Any] | None, folder: Path) -> Path | None:
    """Write the report of a failure, or prune old reports after a clean pass."""
    if verdict.result == "failed":
        return _write_detail(verdict, report, folder)
    if verdict.clean and folder.is_dir():
        _prune(folder, verdict.check_id, verdict.path)
    return None


def _write_detail(verdict: Verdict, report: dict[str, Any] | None, folder: Path) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    target = folder / f"{verdict.check_id}-{verdict.fire_id}.md"
    _atomic_write(target, _detail_text(verdict, report))
    with _locked_index(folder) as index:
        index[target.name] = {"check_id": verdict.check_id, "path": verdict.path}
    return target


def _detail_text(verdict: Verdict, report: dict[str, Any] | None) -> str:
    shown = json.dumps(report, indent=2, sort_keys=True, ensure_ascii=False)
    return (
        f"# {verdict.check_id} failed on {verdict.path}\n\n"
        f"- run: `{verdict.run}`\n- fire: `{verdict.fire_id}`\n"
        f"- findings: {verdict.findings_count}\n\n"
        f"## Findings\n\n```json\n{shown}\n```\n"
    )


def _prune(folder: Path, check_id: str, relpath: str) -> None:
    with _locked_index(folder) as index:
        for name, owner in list(index.items()):
            if owner == {"check_id": check_id, "path": relpath}:
                (folder / name).unlink(missing_ok=True)
                del index[name]


@contextlib.contextmanager
def _locked_index(folder: Path) -> Iterator[dict[str, Any]]:
    """The report index, read and written back under a lock (checks may fire in parallel)."""
    with (folder / f"{_INDEX}.lock").open("a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        index = _read_index(folder / _INDEX)
        yield index
        _atomic_write(folder / _INDEX, json.dumps(index, indent=2, sort_keys=True) + "\n")


def _read_index(path: Path) -> dict[str, Any]:
    try:
        index = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}  # no index yet, or a damaged one: its reports stay on disk, just unpruned
    return index if isinstance(index, dict) else {}


def _atomic_write(path: Path, text: str) -> None:
    handle, temp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(handle, "w", encoding="utf-8") as stream:
            stream.write(text)
            stream.flush()
            os.fsync(stream.fileno())
        os.replace(temp, path)
    except BaseException:
        Path(temp).unlink(missing_ok=True)
        raise


def _with_detail(verdict: Verdict, detail: Path, base: Path) -> Verdict:
    shown = detail.relative_to(base).as_posix() if detail.is_relative_to(base) else str(detail)
    return replace(verdict, detail_path=shown)
