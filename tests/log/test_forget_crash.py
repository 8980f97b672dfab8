"""SIGKILL a real forget at random instants: afterwards either the old or the new segment
set is live (never neither, never a mix), every event is there once in order, verify is
clean, and the next forget finishes the work."""

from __future__ import annotations

import collections
import random
import shutil
import signal
import time
from collections.abc import Callable
from pathlib import Path

import pyarrow.compute as pc

from nerve.log.drafts import Draft
from nerve.log.erasure import ERASED_KIND
from nerve.log.manifest import read_manifest
from nerve.log.reader import replay_digest, snapshot, table_since
from nerve.log.store import EventLog
from nerve.log.verify import verify
from tests.helpers import forget_writer, forked

KILLS = 14
STEPS = ("scan", "event", "record", "drop")  # what the helper announces, in order
SHELL = 5


def _template(root: Path) -> None:
    with EventLog(root, node="t", seal_max_events=10**9) as log:
        for s in range(8):
            log.append_drafts(
                [
                    Draft.of(source=SHELL if i % 4 == 0 else 1, line=f"{s}/{i}", payload=[s, i])
                    for i in range(2500)
                ]
            )
            log.seal()
        log.append_drafts([Draft.of(source=SHELL, line="in the tail", payload={})])


def _timed_forget(root: Path) -> float:
    """Seconds the helper takes from opening the log to the end of its forget, measured on
    the helper itself."""
    writer = forked.start(forget_writer.main, root)
    out = writer.read_until(b"#ready\n", 60)
    started = time.monotonic()
    if b"#done\n" not in out:
        writer.read_until(b"#done\n", 60)
    took = time.monotonic() - started
    writer.kill()
    return took


def _kill_at(root: Path, delay: float) -> str:
    """Run the helper, kill it ``delay`` s after it opened the log; the step it was in."""
    writer = forked.start(forget_writer.main, root)
    out = writer.read_until(b"#ready\n", 60)
    time.sleep(delay)
    code, rest, err = writer.kill()
    # 255: the fork server could not report the status (a kill racing it under load); a
    # writer that failed on its own says so on stderr, which must then be empty
    assert code == -signal.SIGKILL or (code == 255 and not err), err.decode()[-2000:]
    steps = [x for x in (out + rest).decode().split("\n") if x.startswith("#")]
    return steps[-1][1:] if steps else "ready"


def _check_after_kill(root: Path, before: list[bytes], template: set[str]) -> None:
    with EventLog(root, node="restart"):
        pass  # a writer opens after the kill, as a restarted daemon would (and may seal)
    old = template | _tail_seal(root, template)
    state = read_manifest(root / "manifest.jsonl")
    live = set(state.live)
    rewrites = [r for r in state.records if r["op"] == "rewrite"]
    if rewrites:  # the swap happened: the new set, whole
        (rec,) = rewrites
        assert set(rec["remove"]) <= old
        assert live == (old - set(rec["remove"])) | {a["segment"] for a in rec["add"]}
    else:  # it did not: the old set, whole
        assert live == old
    for name in live:
        assert (root / "segments" / f"{name}.parquet").exists()
    table = table_since(snapshot(root))
    ids = table.column("id").to_pylist()
    assert ids[: len(before)] == before  # every event once, in order
    erased = table.filter(pc.is_null(table.column("line")))
    assert set(erased.column("source").to_pylist()) <= {SHELL}  # only what was asked for
    report = verify(root)
    assert report.ok, report.problems


def test_sigkill_during_forget_leaves_old_or_new_set_and_verify_clean(tmp_path: Path) -> None:
    template = tmp_path / "template"
    _template(template)
    before = table_since(snapshot(template)).column("id").to_pylist()
    digest = replay_digest(template).digest
    shutil.copytree(template, tmp_path / "timed")
    span = _timed_forget(tmp_path / "timed") * 1.15  # a few kills land after it is done
    rng = random.Random(10)
    steps: collections.Counter[str] = collections.Counter()

    def kill_and_check(name: str, kill: Callable[[Path], str]) -> None:
        root = tmp_path / name
        shutil.copytree(template, root)
        steps[kill(root)] += 1
        _check_after_kill(root, before, set(read_manifest(template / "manifest.jsonl").live))
        with EventLog(root, node="again", retire_grace_ns=0) as log:  # finish the job
            log.erase(lambda t: pc.equal(t.column("source"), SHELL), reason="again", selection={})
        table = table_since(snapshot(root))
        shell = table.filter(pc.equal(table.column("source"), SHELL))
        assert shell.column("line").null_count == shell.num_rows == 5001
        kinds = table.column("kind").to_pylist()
        assert 1 <= kinds.count(ERASED_KIND) <= 2
        report = verify(root)
        assert report.ok and not report.warnings, report.warnings
        assert replay_digest(root).checkpoints[0].digest == digest
        shutil.rmtree(root)

    for round_no in range(KILLS):
        # a random instant in this round's slice of the forget: spread over all of it
        delay = span * (round_no + rng.random()) / KILLS
        kill_and_check(f"round{round_no}", lambda root, d=delay: _kill_at(root, d))  # type: ignore[misc]
    # A loaded machine can bunch the timed kills into one or two steps: every step the
    # random instants missed is also killed the moment it begins.
    for step in STEPS:
        if not steps[step]:
            kill_and_check(f"at-{step}", lambda root, s=step: _kill_on(root, s))  # type: ignore[misc]
    assert set(STEPS) <= set(steps), steps


def _kill_on(root: Path, step: str) -> str:
    """Run the helper and kill it as soon as it announces ``step``; the step it was in."""
    writer = forked.start(forget_writer.main, root)
    marker = f"#{step}\n".encode()
    out = writer.read_until(marker, 60)
    writer.kill()
    assert marker in out, out.decode()
    return step


def _tail_seal(root: Path, old: set[str]) -> set[str]:
    """The segment sealing the tail added: the forget's first step, or the restarted
    writer finishing that seal when the kill cut it short."""
    state = read_manifest(root / "manifest.jsonl")
    return {a["segment"] for r in state.records if r["op"] == "seal" for a in r["add"]} - old
