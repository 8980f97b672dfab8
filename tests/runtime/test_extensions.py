"""The kernel's plain extensions on their own: the dev view's feed and retention."""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
from types import SimpleNamespace
from typing import Any

import pyarrow as pa
import pytest

from nerve.config.models import RetentionConfig
from nerve.runtime.feed import ViewFeed
from nerve.runtime.retention import retention_loop


def _commit(*rows: tuple[str, Any]) -> pa.Table:
    payloads = [v if isinstance(v, bytes) else json.dumps(v).encode() for _, v in rows]
    return pa.table({"kind": [k for k, _ in rows], "payload": payloads})


def test_the_feed_shows_decisions_and_agent_calls_from_commits(
    caplog: pytest.LogCaptureFixture,
) -> None:
    feed = ViewFeed()
    decision = {"outcome": "surface", "probe": "value:cpu.busy_permille", "source_line": "cpu 97%"}
    held = {**decision, "outcome": "hold:transient", "source_line": "cpu 60%"}
    call = {"client": {"name": "claude"}, "tool": "query", "outcome": "ok", "rows": 3}
    with caplog.at_level(logging.INFO):
        feed.on_commit(_commit(("observation", {"x": 1}), ("attention.decision", decision)))
        feed.on_commit(_commit(("agent.access", call), ("attention.decision", held)))
    assert [(h.outcome, h.line) for h in feed.highlights] == [
        ("surface", "cpu 97%"), ("hold:transient", "cpu 60%"),
    ]  # fmt: skip
    assert "surfaced value:cpu.busy_permille: cpu 97%" in caplog.text
    assert "cpu 60%" not in caplog.text  # a held decision is shown, not announced
    assert feed.agents.to_json() == {"calls": 1, "refused": 0}
    assert feed.agents.recent[0].client == "claude"


def test_the_feed_skips_what_is_not_a_decision() -> None:
    feed = ViewFeed()
    feed.on_commit(_commit(("attention.decision", b"\xff junk"), ("attention.decision", [1])))
    feed.on_commit(_commit(("attention.decision", {"outcome": "surface"})))  # fields missing
    assert not feed.highlights


class _Writer:
    def __init__(self, failures: int) -> None:
        self.failures, self.calls = failures, 0

    async def with_log(self, work: Any) -> object:
        self.calls += 1
        if self.calls <= self.failures:
            raise OSError(5, "Input/output error")
        return None


def _host(retention: RetentionConfig, writer: _Writer) -> Any:
    return SimpleNamespace(config=SimpleNamespace(log=SimpleNamespace(retention=retention)),
                           writer=writer)  # fmt: skip


async def _run_for(host: Any, seconds: float) -> None:
    task = asyncio.create_task(retention_loop(host, delay_s=0))
    await asyncio.sleep(seconds)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task


def test_a_failed_retention_pass_is_reported_and_tried_again(
    caplog: pytest.LogCaptureFixture,
) -> None:
    writer = _Writer(failures=1)
    retention = RetentionConfig(default=60_000, every=10)
    with caplog.at_level(logging.WARNING):
        asyncio.run(_run_for(_host(retention, writer), 0.2))
    assert "retention failed, will retry" in caplog.text and "Input/output error" in caplog.text
    assert writer.calls >= 2  # the next pass ran


def test_retention_off_never_touches_the_log() -> None:
    writer = _Writer(failures=0)
    asyncio.run(_run_for(_host(RetentionConfig(every=10), writer), 0.1))
    assert writer.calls == 0


def test_a_loop_stops_even_when_its_wake_up_lands_with_the_cancel() -> None:
    """3.11's wait_for swallows a cancel that arrives as the awaited event is set: the sync
    loop then ran on and the daemon never finished stopping."""
    from nerve.runtime.extensions import Loop

    async def scenario() -> None:
        wake = asyncio.Event()
        laps = 0

        async def work() -> None:
            nonlocal laps
            while True:
                laps += 1
                wake.clear()
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(wake.wait(), 60)

        loop = Loop()
        loop.spawn(work(), "wakes")
        await asyncio.sleep(0.05)
        wake.set()  # the wake-up and the stop in the same turn of the event loop
        stopping = asyncio.ensure_future(loop.stop(None))
        done, _ = await asyncio.wait({stopping}, timeout=5)
        assert done, "the loop did not stop"
        assert loop._task is not None and loop._task.done()

    asyncio.run(scenario())
