"""What a round asks of the transport and the logs: nothing but a fetch while nothing is new
(no log read, no publish, no status put, the peers' statuses looked at every
``LOOK_EVERY_ROUNDS`` rounds while all held what was sent), and everything again as soon as
an event is new."""

from __future__ import annotations

import asyncio
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

from pytest import MonkeyPatch

from nerve.clock import Hlc
from nerve.sync.engine import LOOK_EVERY_ROUNDS, Engine
from nerve.sync.group import Group, Transport
from nerve.sync.ops import engine_for
from nerve.sync.transport import Delivery
from tests.sync.conftest import device, emit


class _Counted:
    """A transport in memory that counts its calls (no peers: every fetch is empty)."""

    def __init__(self) -> None:
        self.calls: Counter[str] = Counter()
        self.status: dict[str, bytes] = {}

    async def publish(self, sender: str, batch_id: str, last: Hlc, blob: bytes) -> None:
        self.calls["publish"] += 1

    async def fetch(self, positions: dict[str, Hlc], limit: int) -> list[Delivery]:
        self.calls["fetch"] += 1
        return []

    async def put_status(self, sender: str, blob: bytes) -> None:
        self.calls["put_status"] += 1
        self.status[sender] = blob

    async def statuses(self) -> list[bytes]:
        self.calls["statuses"] += 1
        return list(self.status.values())

    async def listen(self, bell: Callable[[], None]) -> bool:
        return False

    @property
    def listening(self) -> bool:
        return False

    async def close(self) -> None:
        return


def _counting(real: Any, name: str, calls: list[str]) -> Any:
    def counted(*args: Any, **kwargs: Any) -> Any:
        calls.append(name)
        return real(*args, **kwargs)

    return counted


def _rounds(engine: Engine, bus: _Counted, count: int) -> Counter[str]:
    before = Counter(bus.calls)

    async def run() -> None:
        for _ in range(count):
            await engine.round(bus)

    asyncio.run(run())
    return bus.calls - before


def test_a_round_with_nothing_new_only_fetches(tmp_path: Path, monkeypatch: MonkeyPatch) -> None:
    from nerve.log import reader

    ws = device(tmp_path, "alpha")
    emit(ws, 3, "first")
    group = Group.new("g", Transport("nats", "nats://x"), "d")
    group.save(ws.data / "sync")
    engine = engine_for(ws, group)
    bus = _Counted()
    first = _rounds(engine, bus, 1)
    assert first["publish"] == 1 and first["put_status"] == 1 and first["statuses"] == 1
    read: list[str] = []
    for name in ("snapshot", "table_since"):
        real = getattr(reader, name)
        monkeypatch.setattr(reader, name, _counting(real, name, read))
    idle = _rounds(engine, bus, 2 * LOOK_EVERY_ROUNDS)
    assert idle == Counter({"fetch": 2 * LOOK_EVERY_ROUNDS, "statuses": 2})
    assert read == []  # no log was read either
    emit(ws, 1, "second")
    again = _rounds(engine, bus, 1)
    assert again["publish"] == 1 and again["put_status"] == 1
    assert engine.digest().events == 4


def test_a_backlog_is_screened_and_published_a_chunk_at_a_time(
    tmp_path: Path, monkeypatch: MonkeyPatch
) -> None:
    from nerve.sync import engine as engine_module

    ws = device(tmp_path, "alpha")
    emit(ws, 30, "backlog")
    group = Group.new("g", Transport("nats", "nats://x"), "d")
    group.save(ws.data / "sync")
    monkeypatch.setattr(engine_module, "SEND_ROWS", 7)
    engine = engine_for(ws, group)
    bus = _Counted()
    assert _rounds(engine, bus, 1)["publish"] == 5  # 7 + 7 + 7 + 7 + 2 rows
    result = asyncio.run(engine.round(bus))
    assert result.sent == 0 and engine.digest().events == 30


def test_the_sent_mark_is_stored_at_most_every_few_seconds_and_at_flush(tmp_path: Path) -> None:
    import json

    ws = device(tmp_path, "alpha")
    emit(ws, 2, "first")
    group = Group.new("g", Transport("nats", "nats://x"), "d")
    group.save(ws.data / "sync")
    engine = engine_for(ws, group)
    path = ws.data / "sync" / "state.json"
    _rounds(engine, _Counted(), 1)
    first = json.loads(path.read_bytes())["sent"]
    assert first != [0, 0]  # the first mark is stored at once
    emit(ws, 1, "second")
    _rounds(engine, _Counted(), 1)
    assert json.loads(path.read_bytes())["sent"] == first  # moved, not stored yet
    engine.flush()
    assert json.loads(path.read_bytes())["sent"] > first
