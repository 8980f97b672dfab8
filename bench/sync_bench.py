"""Catch-up time of a device that missed a week of another's events, against copying the same
sealed bytes (``shutil.copytree``; no rsync on this machine) as the floor, over a real
nats-server on loopback; and what sending costs a device at that rate, as a share of a core.

    .venv/bin/python bench/sync_bench.py                    # a week at the footprint rate
    .venv/bin/python bench/sync_bench.py --scale 10         # a heavy device: 10x
    .venv/bin/python bench/sync_bench.py --events 20000     # a given count

A week at the footprint bench's rate is 0.646 events/s x 7 x 86,400 = 390,701 events (goal:
caught up in <= 30 s; the CPU time of the round is printed beside its wall time, since this
machine is shared). The send share: rounds of the daemon's engine every ``sync.interval``
(2 s) on the device that is in sync, each after the events the rate gives in that time, CPU
time (``time.process_time``) per round over the interval (goal <= 0.1% of a core), while
the other device takes its rounds too (not counted).
"""

from __future__ import annotations

import asyncio
import shutil
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from nerve.sync import ops
from nerve.sync.connect import open_transport
from nerve.workspace import WorkspaceDir
from tests.helpers.natsd import nats
from tests.sync.conftest import Place, device, emit, group_of

sys.path.insert(0, str(Path(__file__).resolve().parent))

from benchkit import finish, new_parser, say, workdir

RATE = 0.646  # events/s, the footprint bench's
WEEK_S = 7 * 86400
INTERVAL_S = 2.0  # sync.interval's default
LINE = "an event with a line of ordinary length for the bench"


def send_share(ws: WorkspaceDir, peer: WorkspaceDir, rounds: int) -> dict[str, float]:
    """CPU per round of the engine on ``ws`` with the events ``RATE`` gives per interval
    emitted before each round, as a share of a core at one round per interval (after one
    round not counted: the daemon keeps its engine across rounds). ``peer``'s engine takes
    a round after each, not counted, as its daemon would."""
    engine = ops.engine_for(ws, ops.load_group(ws))
    other = ops.engine_for(peer, ops.load_group(peer))
    per_round = RATE * INTERVAL_S

    async def measure() -> float:
        bus = await open_transport(engine.group, engine.me)
        peer_bus = await open_transport(other.group, other.me)
        spent, owed = 0.0, 0.0
        try:
            await engine.round(bus)  # the daemon's engine lives across rounds: warm it first
            await other.round(peer_bus)
            for _ in range(rounds):
                owed += per_round
                if owed >= 1:
                    emit(ws, int(owed), LINE)
                    owed -= int(owed)
                start = time.process_time()
                await engine.round(bus)
                spent += time.process_time() - start
                await other.round(peer_bus)
        finally:
            await bus.close()
            await peer_bus.close()
        return spent / rounds

    cpu = asyncio.run(measure())
    return {
        "cpu_ms_per_round": round(cpu * 1000, 2),
        "core_share_pct": round(cpu / INTERVAL_S * 100, 3),
    }


def main(argv: list[str] | None = None) -> int:
    parser = new_parser(__doc__)
    parser.add_argument("--events", type=int, default=None, help="default: a week at the rate")
    parser.add_argument("--scale", type=float, default=1.0, help="times the footprint rate")
    parser.add_argument("--rounds", type=int, default=10, help="rounds for the send share")
    args = parser.parse_args(argv)
    events = args.events or round(RATE * args.scale * WEEK_S)
    with workdir("sync-bench-") as folder, nats(folder / "nats") as servers:
        place = Place("nats", ("--nats", servers[0].url), servers[0].store)
        a, b = device(folder, "alpha"), device(folder, "beta")
        group_of(place, a, b)
        say(f"emitting {events:,} events")
        for start in range(0, events, 100_000):
            emit(a, min(100_000, events - start), LINE)
        with a.open_log() as log:
            log.seal()
        start, cpu = time.monotonic(), time.process_time()
        sent = ops.now(a).sent
        send_s, send_cpu = time.monotonic() - start, time.process_time() - cpu
        say(f"sent in {send_s:.1f} s ({send_cpu:.1f} CPU s)")
        start, cpu = time.monotonic(), time.process_time()
        got = ops.now(b).received
        catch_s, catch_cpu = time.monotonic() - start, time.process_time() - cpu
        say(f"caught up in {catch_s:.1f} s ({catch_cpu:.1f} CPU s)")
        start = time.monotonic()
        shutil.copytree(a.log_root, folder / "copy")
        copy_s = time.monotonic() - start
        share = send_share(a, b, args.rounds)
        ops.now(b)
        in_sync = ops.status(b).in_sync
    checks = {"all_sent": sent == events, "all_received": got == events, "in_sync": in_sync}
    print(f"{'events':<34}{events:>12,}")
    print(f"{'send (one round)':<34}{send_s:>11.1f}s")
    print(f"{'send: CPU':<34}{send_cpu:>11.1f}s")
    print(f"{'catch up (one round)':<34}{catch_s:>11.1f}s")
    print(f"{'catch up: CPU':<34}{catch_cpu:>11.1f}s")
    print(f"{'floor: copytree of the log':<34}{copy_s:>11.2f}s")
    print(f"{'send: CPU per round':<34}{share['cpu_ms_per_round']:>10.1f}ms")
    print(f"{'send: share of a core':<34}{share['core_share_pct']:>11.3f}%")
    result = {
        "events": events,
        "scale": args.scale,
        "rounds": args.rounds,
        "send_s": round(send_s, 3),
        "send_cpu_s": round(send_cpu, 3),
        "catch_up_s": round(catch_s, 3),
        "catch_up_cpu_s": round(catch_cpu, 3),
        "copy_floor_s": round(copy_s, 4),
        **share,
        "checks": checks,
    }
    return finish(result)


if __name__ == "__main__":
    raise SystemExit(main())
