"""`nerve sync` without daemons, once per transport (a real nats-server and a real SeaweedFS):
devices converge to one shared digest, keep-local events never leave, the transport holds
ciphertext only, a late device receives the whole shared history, and a transport that
drops, repeats, reorders or corrupts boxes costs only rounds."""

from __future__ import annotations

import asyncio
import random
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from nerve.clock import Hlc
from nerve.sync.connect import open_transport
from nerve.sync.engine import BATCH_EVENTS, Engine
from nerve.sync.group import SyncError
from nerve.sync.ops import engine_for, load_group
from nerve.sync.transport import Delivery, Transport
from nerve.workspace import WorkspaceDir
from tests.sync.conftest import Place, all_verify, cli, device, emit, group_of, status

MARKER = "okapi-marker-51c9"


def _rounds(*spaces: WorkspaceDir, times: int = 2) -> None:
    for _ in range(times):
        for ws in spaces:
            cli(ws, "sync", "now")


def _digests(*spaces: WorkspaceDir) -> set[str]:
    return {d["digest"] for ws in spaces for d in status(ws)["devices"]}  # type: ignore[union-attr]


def test_devices_converge_and_the_transport_holds_ciphertext_only(
    tmp_path: Path, place: Place
) -> None:
    a, b = device(tmp_path, "alpha"), device(tmp_path, "beta")
    group_of(place, a, b)
    emit(a, 3, f"{MARKER} from alpha")
    emit(b, 2, "from beta")
    _rounds(a, b)
    stored = b"".join(p.read_bytes() for p in place.stored.rglob("*") if p.is_file())
    assert stored, "the transport stored nothing"
    for plain in (MARKER, "alpha", "beta"):
        assert plain.encode() not in stored
    found = status(a)
    assert found["in_sync"] is True and found == status(b)
    assert [(d["node"], d["events"], d["behind"]) for d in found["devices"]] == [  # type: ignore[union-attr]
        ("alpha", 5, 0),
        ("beta", 5, 0),
    ]
    assert all_verify(a) and all_verify(b)


def test_keep_local_events_never_leave_and_stay_out_of_the_shared_digest(
    tmp_path: Path, place: Place
) -> None:
    keep = "  keep_local:\n    sources: [shell]\n    senses: [diary]\n"
    a, b = device(tmp_path, "alpha", keep), device(tmp_path, "beta")
    group_of(place, a, b)
    emit(a, 2, f"{MARKER} shell", source="shell")
    emit(a, 1, f"{MARKER} diary", source="endpoint", subject="diary")
    emit(a, 2, "shared", source="endpoint")
    _rounds(a, b)
    assert sorted(_peer_lines(b)) == ["shared 0", "shared 1"]
    held = b"".join(p.read_bytes() for p in (b.data / "sync").rglob("*") if p.is_file())
    assert MARKER.encode() not in held
    found = status(b)
    assert found["in_sync"] is True and len(_digests(a, b)) == 1
    assert {d["events"] for d in found["devices"]} == {2}  # type: ignore[union-attr]


def test_a_late_device_receives_the_whole_shared_history(tmp_path: Path, place: Place) -> None:
    a, b = device(tmp_path, "alpha"), device(tmp_path, "beta")
    group_of(place, a)
    backlog = 2 * BATCH_EVENTS + 500  # three batches
    emit(a, backlog, "old")
    _rounds(a, times=1)
    code = _code(a)
    cli(b, "sync", "join", code, "--device", "beta")
    _rounds(b, a, times=1)
    assert len(_peer_lines(b)) == backlog
    assert status(b)["in_sync"] is True


def test_a_backlog_too_big_for_one_box_goes_in_smaller_batches(
    tmp_path: Path, place: Place
) -> None:
    # 2,000 events of 1.2 kB of random hex each: one batch would seal to ~1.4 MB, past NATS's
    # default max_payload (1 MiB), and the device would never send again (found by the
    # partition suite's big emits)
    a, b = device(tmp_path, "alpha"), device(tmp_path, "beta")
    group_of(place, a, b)
    rng = random.Random(45)
    drafts = [_blob_draft(rng, i) for i in range(2000)]
    with a.open_log() as log:
        log.append_drafts(drafts)
    _rounds(a, b, times=1)
    assert len(_peer_lines(b)) == 2000
    assert status(b)["in_sync"] is True


def _blob_draft(rng: random.Random, i: int) -> Any:
    from nerve.log.drafts import Draft

    return Draft.of("observation", line=f"blob {i}", payload={"blob": rng.randbytes(600).hex()})


def test_drops_repeats_reorders_and_corruption_cost_only_rounds(
    tmp_path: Path, place: Place
) -> None:
    spaces = [device(tmp_path, n) for n in ("alpha", "beta", "gamma")]
    group_of(place, *spaces)
    engines = [engine_for(ws, load_group(ws)) for ws in spaces]
    rng = random.Random(45)
    for step in range(4):
        for ws in spaces:
            emit(ws, rng.randrange(1, 30), f"step {step}")
        asyncio.run(_faulty_rounds(engines, rng, rounds=3))
    for _ in range(10):  # healed: plain rounds until every device holds the same
        asyncio.run(_faulty_rounds(engines, None, rounds=1))
        if len({e.digest().digest for e in engines}) == 1:
            break
    digests = {(d.digest, d.events) for d in (e.digest() for e in engines)}
    assert len(digests) == 1, digests
    total = sum(len(_own(ws)) for ws in spaces)
    assert digests.pop()[1] == total  # nothing lost, nothing twice
    assert all(all_verify(ws) for ws in spaces)


async def _faulty_rounds(engines: list[Engine], rng: random.Random | None, rounds: int) -> None:
    for _ in range(rounds):
        for engine in engines:
            bus = await open_transport(engine.group, engine.me)
            try:
                await engine.round(_Faulty(bus, rng) if rng else bus)
            except SyncError:
                pass  # as the daemon does: the next round tries again
            finally:
                await bus.close()


class _Faulty:
    """A transport that drops, repeats, reorders and corrupts what passes (``rng``)."""

    def __init__(self, inner: Transport, rng: random.Random) -> None:
        self.inner, self.rng = inner, rng

    async def publish(self, sender: str, batch_id: str, last: Hlc, blob: bytes) -> None:
        roll = self.rng.random()
        if roll < 0.15:
            raise _lost()  # lost before it was stored: the round fails, the mark stays
        if roll < 0.25:
            blob = _corrupt(blob, self.rng)  # stored damaged: only a resend repairs it
        await self.inner.publish(sender, batch_id, last, blob)
        if self.rng.random() < 0.2:
            await self.inner.publish(sender, batch_id, last, blob)  # repeated

    async def fetch(self, positions: dict[str, Hlc], limit: int) -> list[Delivery]:
        got = await self.inner.fetch(positions, limit)
        out = []
        for each in got:
            roll = self.rng.random()
            if roll < 0.1:
                continue  # dropped in transit (acked: the sender's resend covers it)
            item = Delivery(_corrupt(each.blob, self.rng), each.done) if roll < 0.2 else each
            out.append(item)
            if self.rng.random() < 0.15:
                out.append(item)  # delivered twice
        self.rng.shuffle(out)
        return out

    async def put_status(self, sender: str, blob: bytes) -> None:
        await self.inner.put_status(sender, blob)

    async def statuses(self) -> list[bytes]:
        return await self.inner.statuses()

    async def listen(self, bell: Callable[[], None]) -> bool:
        return await self.inner.listen(bell)

    @property
    def listening(self) -> bool:
        return self.inner.listening

    async def close(self) -> None:
        await self.inner.close()


def _lost() -> Exception:
    return SyncError("injected: publish lost")


def _corrupt(blob: bytes, rng: random.Random) -> bytes:
    at = rng.randrange(len(blob))
    return blob[:at] + bytes([blob[at] ^ 0x5A]) + blob[at + 1 :]


def _own(ws: WorkspaceDir) -> list[Any]:
    from nerve.log.reader import snapshot, table_since

    nodes = table_since(snapshot(ws.log_root), columns=["node"]).column("node").to_pylist()
    return [n for n in nodes if n == ws.node]


def _peer_lines(ws: WorkspaceDir) -> list[str]:
    from nerve.log.reader import snapshot, table_since

    lines: list[str] = []
    for root in (ws.data / "sync").glob("peers/*/log"):
        lines += table_since(snapshot(root), columns=["line"]).column("line").to_pylist()
    return lines


def _code(ws: WorkspaceDir) -> str:
    return load_group(ws).code()


def test_a_damaged_join_code_is_refused_and_the_key_file_is_private(
    tmp_path: Path, place: Place
) -> None:
    a, b = device(tmp_path, "alpha"), device(tmp_path, "beta")
    group_of(place, a)
    assert (a.data / "sync" / "group.key").stat().st_mode & 0o777 == 0o600
    code = _code(a)
    from tests.conftest import run_cli

    bad = run_cli("--workspace", str(b.root), "sync", "join", code[:-6], check=False)
    assert bad.returncode == 1 and bad.stderr.startswith("SyncError: join code is damaged")
    again = run_cli("--workspace", str(a.root), "sync", "join", code, check=False)
    assert again.returncode == 1 and "already in a sync group" in again.stderr
    assert cli(a, "sync", "leave").startswith("left sync group 'home'")
    assert not (a.data / "sync" / "group.key").exists()


def test_status_without_a_group_names_the_fix(tmp_path: Path) -> None:
    from tests.conftest import run_cli

    a = device(tmp_path, "alpha")
    out = run_cli("--workspace", str(a.root), "sync", "status", check=False)
    assert out.returncode == 1 and "in no sync group" in out.stderr
    assert "nerve sync init --nats URL" in out.stderr
    if pytest:  # a usage mistake exits 2
        both = run_cli("--workspace", str(a.root), "sync", "init", check=False)
        assert both.returncode == 2
