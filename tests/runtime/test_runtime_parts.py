"""The kernel's parts, each imported and run on its own: the committer over a real log, a
group's worker process answering a batch, sensing storing a batch before memory moves,
and the kernel itself in this process."""

from __future__ import annotations

import asyncio
import time
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

from nerve.log.drafts import Draft
from nerve.privacy.policy import Policy
from nerve.query import connect
from nerve.runtime.committer import Columns, Committer
from nerve.runtime.groups import GroupWorker, Job, Reply, SenseSpec
from nerve.runtime.kernel import Kernel
from nerve.runtime.results import SenseStats
from nerve.runtime.sensing import Sensing
from nerve.runtime.skips import Skips
from nerve.workspace import WorkspaceDir

COUNTER = """
import nerve

initial_state = {"n": 0}


def compute(state):
    return nerve.Result(state={"n": state["n"] + 1})
"""


def _workspace(root: Path, yaml: str = "senses: {}\n") -> WorkspaceDir:
    (root / "data").mkdir(parents=True)
    (root / "nerve.yaml").write_text(yaml)
    return WorkspaceDir.at(root)


async def _until_async(check: Any, timeout_s: float = 30.0) -> None:
    deadline = time.monotonic() + timeout_s
    while not check():
        assert time.monotonic() < deadline, "timed out"
        await asyncio.sleep(0.02)


def test_the_committer_stores_drafts_and_columns_in_one_commit(tmp_path: Path) -> None:
    log = _workspace(tmp_path).open_log()
    seen: list[int] = []

    async def run() -> tuple[pa.Table, pa.Table]:
        committer = Committer(log)
        committer.listeners.append(lambda table: seen.append(table.num_rows))
        committer.start()
        columns = Columns()
        columns.record("sense.state", "a", "a: state updated", b'{"n":1}')
        columns.record("sense.state", "b", "b: state updated", b'{"n":2}')
        drafts = [Draft.of("observation", source=3, line="ls")]
        both = await asyncio.gather(committer.append(drafts), committer.append_columns(columns))
        await committer.stop()
        return both

    try:
        one, two = asyncio.run(run())
    finally:
        log.close()
    assert one.column("line").to_pylist() == ["ls"]
    assert two.column("subject").to_pylist() == ["a", "b"]
    assert seen == [3]  # one commit for both callers


class Needs:
    """What a group needs of its owner, keeping what it is handed."""

    def __init__(self) -> None:
        self.batches: list[list[Reply]] = []
        self.loaded: dict[str, Any] = {}

    def state_json(self, sense: str) -> bytes:
        return b'{"n":41}'

    async def on_results(self, replies: list[Reply]) -> None:
        self.batches.append(replies)

    async def on_failure(self, job: Job, kind: str, message: str) -> None:
        raise AssertionError(f"{job.sense}: {kind}: {message}")

    async def on_restart(self, group: str, reason: str, pid: int | None) -> None:
        raise AssertionError(reason)

    async def on_loaded(self, group: str, loaded: dict[str, Any]) -> None:
        self.loaded = loaded


def test_a_group_hands_a_batch_of_replies_to_its_owner_at_once(tmp_path: Path) -> None:
    sense = tmp_path / "senses" / "counter" / "sense.py"
    sense.parent.mkdir(parents=True)
    sense.write_text(COUNTER)
    names = [f"s{i}" for i in range(10)]
    specs = {n: SenseSpec(n, str(sense), {}, timeout_ms=30_000) for n in names}
    needs = Needs()

    async def run() -> None:
        worker = GroupWorker("g", specs, tmp_path, needs)
        for name in names:  # queued before the worker runs: sent in one write
            worker.enqueue(Job(name, "interval", 0))
        await worker.start()
        await _until_async(lambda: sum(len(b) for b in needs.batches) == len(names))
        await worker.stop()

    asyncio.run(run())
    assert all(info["ok"] for info in needs.loaded.values())
    assert len(needs.batches) == 1  # one batch: one commit, not ten
    replies = needs.batches[0]
    assert [r.job.sense for r in replies] == names
    assert [r.body.get("state_jcs") for r in replies] == ['{"n":42}'] * 10, replies[0].body


class Store:
    """The writer, as the senses see it; ``fail`` makes the next append fail."""

    def __init__(self) -> None:
        self.stored: list[tuple[str, str]] = []
        self.fail = False

    async def append_columns(self, columns: Columns) -> pa.Table:
        if self.fail:
            raise OSError("disk full")
        self.stored += list(zip(columns.kind, columns.subject, strict=True))
        return pa.table({})

    async def append(self, drafts: list[Draft]) -> pa.Table:
        self.stored += [(d.kind, d.subject) for d in drafts]
        return pa.table({})

    async def record(self, kind: str, subject: str, line: str, payload: Any) -> pa.Table:
        self.stored.append((kind, subject))
        return pa.table({})


class Rules:
    privacy = Policy()


class Gate:
    paused = False

    def describe(self) -> str:
        return "running"

    def screen(self, sense: str, observations: list[Draft]) -> list[Draft]:
        return observations


def _sensing(store: Store) -> tuple[Sensing, list[str]]:
    skips = Skips(lambda sense, line, payload: None)
    workflows: list[str] = []

    async def on_workflow(trigger: Any, sense: str) -> None:
        workflows.append(sense)

    senses = Sensing(Path("."), Rules(), Gate(), skips, lambda s, raw: (None, []), on_workflow)
    senses._store = store  # started without a scheduler: no loop needed for what is tested
    senses.stats["a"] = SenseStats("g")
    senses.results.memory.set("a", {"n": 0})
    return senses, workflows


def test_memory_moves_only_once_a_batch_is_stored() -> None:
    store = Store()
    senses, _ = _sensing(store)
    reply = Reply(Job("a", "interval", 0), 0, {"ok": True, "state": {"n": 1}, "signal": True})
    heard: list[str] = []
    senses.bus.subscribe("a", heard.append)
    store.fail = True
    with pytest.raises(OSError, match="disk full"):
        asyncio.run(senses.on_results([reply]))
    assert senses.state_json("a") == b'{"n":0}' and senses.stats["a"].computes == 0
    assert heard == []  # nothing signalled that was not stored
    store.fail = False
    asyncio.run(senses.on_results([reply]))
    assert senses.state_json("a") == b'{"n":1}' and senses.stats["a"].computes == 1
    assert store.stored == [("sense.state", "a"), ("signal", "a")]
    assert heard == ["a"]


def test_a_failed_compute_is_counted_and_stored_as_a_sense_error() -> None:
    store = Store()
    senses, _ = _sensing(store)
    reply = Reply(Job("a", "interval", 0), 0, {"ok": False, "error_kind": "timeout", "error": "x"})
    asyncio.run(senses.on_results([reply]))
    assert store.stored == [("sense.error", "a")]
    assert senses.stats["a"].errors == 1 and senses.stats["a"].last_error == "timeout: x"


def test_the_kernel_runs_a_sense_in_this_process_and_stops_cleanly(tmp_path: Path) -> None:
    sense = tmp_path / "senses" / "counter" / "sense.py"
    sense.parent.mkdir(parents=True)
    sense.write_text(COUNTER)
    yaml = "senses:\n  counter:\n    interval: 50ms\n"
    ws = _workspace(tmp_path, yaml)

    async def run() -> dict[str, Any]:
        kernel = Kernel(ws, with_ipc=False, watch=False)
        await kernel.start()
        try:
            await _until_async(lambda: kernel.stats["counter"].computes >= 3)
            return kernel.health()
        finally:
            await kernel.stop()

    health = asyncio.run(run())
    assert health["senses"] == 1 and health["sense_results"][0]["computes"] >= 3
    assert set(health["groups"]) == {"counter"}
    conn = connect(ws.log_root)
    try:
        rows = conn.execute(
            "select kind, count(*) from events group by kind order by kind"
        ).fetchall()
    finally:
        conn.close()
    counts = dict(rows)
    assert counts["daemon.started"] == 1 and counts["daemon.stopped"] == 1
    assert counts["sense.state"] >= 3


def test_a_drain_waits_for_what_was_queued_not_for_what_comes_after(tmp_path: Path) -> None:
    log = _workspace(tmp_path).open_log()

    async def run() -> int:
        committer = Committer(log)
        committer.start()
        stop = asyncio.Event()

        async def produce() -> None:  # a busy daemon: a commit always waiting
            while not stop.is_set():
                await committer.append([Draft.of("observation", source=3, line="x")])

        producers = [asyncio.create_task(produce()) for _ in range(3)]
        first = committer.append([Draft.of("observation", source=3, line="first")])
        stored = asyncio.ensure_future(first)
        await asyncio.wait_for(committer.drain(), 30)  # returns although appends go on
        assert stored.done()
        stop.set()
        await asyncio.gather(*producers)
        await committer.stop()
        return committer.commits

    try:
        assert asyncio.run(run()) >= 1
    finally:
        log.close()


def test_the_daemon_freezes_its_start_up_heap_once_the_kernel_is_ready() -> None:
    """What start-up built is frozen (a full collection then walks only what came after),
    and not before the kernel is ready: the warm-up's garbage is collected first."""
    import gc
    from types import SimpleNamespace

    from nerve.runtime.daemon import _settled

    seen: dict[str, int] = {}

    async def main() -> None:
        seen["before"] = gc.get_freeze_count()
        kernel.ready.set()
        for _ in range(3):  # the settling task runs at the next turns of the loop
            await asyncio.sleep(0)
        seen["after"] = gc.get_freeze_count()

    gc.unfreeze()
    kernel: Any = SimpleNamespace(ready=asyncio.Event())
    try:
        asyncio.run(_settled(kernel, main()))
    finally:
        gc.unfreeze()  # this test process goes on collecting as before
    assert seen["before"] == 0 < seen["after"]
