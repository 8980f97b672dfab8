"""Catch-up time of a device that missed a week of another's events, against copying the same
sealed bytes (``shutil.copytree``; no rsync on this machine) as the floor, over a real
nats-server on loopback; what sending costs a device at that rate, as a share of a core; and
how soon a new event shows the same digest on both devices.

    .venv/bin/python bench/sync_bench.py                    # a week at the footprint rate
    .venv/bin/python bench/sync_bench.py --scale 10         # a heavy device: 10x
    .venv/bin/python bench/sync_bench.py --events 20000     # a given count

A week at the footprint bench's rate is 0.646 events/s x 7 x 86,400 = 390,701 events (goal:
caught up in <= 30 s; the CPU time of the round is printed beside its wall time, since this
machine is shared). The send share: the daemon's schedule (:class:`nerve.sync.pace.Pace`,
``sync.interval`` 2 s, the transport's bell heard) run over ``--seconds`` of simulated time
with an event every 1 / rate seconds, each round the schedule calls for taken for real by the
engine on the device that is in sync, its CPU time (``time.process_time``) summed over the
simulated time (goal <= 0.1% of a core); the other device takes a round after each that sent,
as its bell brings it (not counted). The latency: two more devices with real daemons, an
event emitted through one daemon, then ``sync status`` on the other polled until both show the
same digest over it (issue 45: "within seconds").
"""

from __future__ import annotations

import asyncio
import contextlib
import shutil
import sys
import time
from collections.abc import Iterator
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from nerve.sync import ops
from nerve.sync.connect import open_transport
from nerve.sync.pace import Pace
from nerve.workspace import WorkspaceDir
from tests.daemon_util import Daemon
from tests.helpers.natsd import nats
from tests.sync.conftest import Place, cli, device, emit, group_of

sys.path.insert(0, str(Path(__file__).resolve().parent))

from benchkit import finish, new_parser, say, workdir

RATE = 0.646  # events/s, the footprint bench's
WEEK_S = 7 * 86400
INTERVAL_S = 2.0  # sync.interval's default
LINE = "an event with a line of ordinary length for the bench"


def send_share(ws: WorkspaceDir, peer: WorkspaceDir, seconds: float) -> dict[str, float]:
    """CPU of the rounds the daemon's pace calls for on ``ws`` over ``seconds`` of simulated
    time with an event every ``1 / RATE`` seconds, as a share of a core (after one round not
    counted: the daemon keeps its engine across rounds). ``peer``'s engine takes a round after
    each that sent, not counted, as its bell would bring."""
    engine = ops.engine_for(ws, ops.load_group(ws))
    other = ops.engine_for(peer, ops.load_group(peer))

    async def measure() -> tuple[float, int, int]:
        bus = await open_transport(engine.group, engine.me)
        peer_bus = await open_transport(other.group, other.me)
        await bus.listen(lambda: None)  # only the peer publishes on the bell: it never rings
        spent, rounds, fetches = 0.0, 0, 0
        try:
            await engine.round(bus)  # the daemon's engine lives across rounds: warm it first
            await other.round(peer_bus)
            pace, event_at = Pace(INTERVAL_S, 0.0), 1 / RATE
            pace.listening = bus.listening
            pace.begin(0.0)
            pace.done(0.0, False, engine.even, engine.settled)
            while pace.due() < seconds:
                if event_at <= pace.due():
                    emit(ws, 1, LINE)
                    pace.committed(event_at)
                    event_at += 1 / RATE
                    continue
                now = pace.due()
                fetch = pace.begin(now)
                start = time.process_time()
                result = await engine.round(bus, fetch)
                spent += time.process_time() - start
                rounds, fetches = rounds + 1, fetches + fetch
                if result.sent:
                    await other.round(peer_bus)
                pace.done(now, result.received > 0, engine.even, engine.settled)
        finally:
            await bus.close()
            await peer_bus.close()
        return spent, rounds, fetches

    cpu, rounds, fetches = asyncio.run(measure())
    return {
        "paced_rounds": rounds,
        "paced_fetches": fetches,
        "cpu_ms_per_round": round(cpu / max(rounds, 1) * 1000, 2),
        "core_share_pct": round(cpu / seconds * 100, 3),
    }


def latency(folder: Path, place: Place, samples: int) -> list[float]:
    """Seconds from an emit through one daemon until ``sync status`` on the other device
    shows one digest over it, for ``samples`` events a few seconds apart."""
    c, d = device(folder, "gamma"), device(folder, "delta")
    for ws in (c, d):
        (ws.root / "nerve.yaml").write_text(f"node: {ws.node}\n")  # sync.interval's default
    group_of(place, c, d)
    took: list[float] = []
    with _daemons(c, d):
        held = _held(d)
        for k in range(samples):
            cli(c, "emit", "--source", "endpoint", "--line", f"latency {k}")
            start = time.monotonic()
            while (now := _held(d)) <= held:
                time.sleep(0.1)
            took.append(round(time.monotonic() - start, 2))
            held = now
            time.sleep(3)
    return took


@contextlib.contextmanager
def _daemons(*spaces: WorkspaceDir) -> Iterator[None]:
    """A real daemon on each workspace, started and stopped one after another (the CLI runs
    in this process, and two at once would mix up its captured output)."""
    daemons = [Daemon(ws.root) for ws in spaces]
    try:
        for daemon in daemons:
            daemon.start()
        yield
    finally:
        for daemon in daemons:
            daemon.stop()


def _held(ws: WorkspaceDir) -> int:
    """The events under the one digest ``sync status`` on ``ws`` shows for every device
    (the daemons emit a few of their own), or 0 while they differ."""
    found = ops.status(ws)
    if not found.in_sync or len({d["digest"] for d in found.devices}) != 1:
        return 0
    return int(found.devices[0]["events"])


def main(argv: list[str] | None = None) -> int:
    parser = new_parser(__doc__)
    parser.add_argument("--events", type=int, default=None, help="default: a week at the rate")
    parser.add_argument("--scale", type=float, default=1.0, help="times the footprint rate")
    parser.add_argument("--seconds", type=float, default=600, help="simulated, for the share")
    parser.add_argument("--samples", type=int, default=5, help="events timed for the latency")
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
        share = send_share(a, b, args.seconds)
        ops.now(b)
        in_sync = ops.status(b).in_sync
        took = latency(folder, place, args.samples) if args.samples else [0.0]
    checks = {
        "all_sent": sent == events,
        "all_received": got == events,
        "in_sync": in_sync,
        "same_digest_within_10_s": max(took) < 10,
    }
    print(f"{'events':<34}{events:>12,}")
    print(f"{'send (one round)':<34}{send_s:>11.1f}s")
    print(f"{'send: CPU':<34}{send_cpu:>11.1f}s")
    print(f"{'catch up (one round)':<34}{catch_s:>11.1f}s")
    print(f"{'catch up: CPU':<34}{catch_cpu:>11.1f}s")
    print(f"{'floor: copytree of the log':<34}{copy_s:>11.2f}s")
    fetching = f"{share['paced_rounds']} ({share['paced_fetches']})"
    print(f"{'send: rounds (of them fetching)':<34}{fetching:>12}")
    print(f"{'send: CPU per round':<34}{share['cpu_ms_per_round']:>10.1f}ms")
    print(f"{'send: share of a core':<34}{share['core_share_pct']:>11.3f}%")
    print(f"{'same digest after (max of samples)':<34}{max(took):>11.2f}s")
    result = {
        "events": events,
        "scale": args.scale,
        "seconds": args.seconds,
        "send_s": round(send_s, 3),
        "send_cpu_s": round(send_cpu, 3),
        "catch_up_s": round(catch_s, 3),
        "catch_up_cpu_s": round(catch_cpu, 3),
        "copy_floor_s": round(copy_s, 4),
        **share,
        "latency_s": took,
        "checks": checks,
    }
    return finish(result)


if __name__ == "__main__":
    raise SystemExit(main())
