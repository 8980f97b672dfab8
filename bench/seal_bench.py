"""Epoch seals: the CPU share of sealing at the default epoch, beside raw Ed25519 signing.

    .venv/bin/python bench/seal_bench.py [--events N] [--seals S] [--bits B] [--quick]

A workspace holding N events in segments of ``--segment-events`` (100k; as
``tests/helpers/biglog.py`` builds them)
is set up for sealing with a horizon of 2^B epochs (the default, 16, is what ``nerve audit
seal-setup`` makes). Then S epochs are sealed one by one, as the daemon's loop does at the
start of each epoch: the log's heads read (the manifest, then the surfacing chain's links
from the segments), the note signed and appended with an fsync, the state moved on and
overwritten with an fsync. Each seal's CPU time (``time.process_time``) and wall time are
measured; the CPU share is the CPU time per seal over the default epoch (15 min). The peer
is one raw Ed25519 signature (PyNaCl) over a note-sized message: the least any signed seal
can cost. Also reported: the set-up's time (every epoch's public key made once), opening a
sealer (the key tree rebuilt from the stored keys, once per daemon start) and
``verify --seed`` over the S seals.

Checks: every epoch sealed, ``verify --seed`` passes, and the goal: sealing takes ≤ 0.1% of
a core at the default epoch. The last stdout line is ``RESULT {json}``; progress goes to
stderr; the exit status is 1 when a check fails.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path
from typing import Any

from nacl.signing import SigningKey

from nerve.runtime.sealing import heads_now
from nerve.seal import SealDir, Sealer, read_log, setup, verify

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from tests.helpers.biglog import build_log

sys.path.insert(0, str(Path(__file__).resolve().parent))

from benchkit import finish, new_parser, say, sized, workdir

DEFAULT_EPOCH_S = 900
GOAL_SHARE = 0.001  # 0.1% of a core
QUICK = {"events": 20_000, "seals": 10, "bits": 10}
DEFAULTS = {"events": 1_000_000, "seals": 40, "bits": 16}


def parse(argv: list[str] | None) -> argparse.Namespace:
    p = new_parser(__doc__)
    p.add_argument("--events", type=int)
    p.add_argument("--seals", type=int)
    p.add_argument("--segment-events", type=int, default=100_000, help="events per segment")
    p.add_argument("--bits", type=int)
    p.add_argument("--quick", action="store_true")
    return sized(p.parse_args(argv), QUICK, DEFAULTS)


def timed(work: Any) -> tuple[Any, float, float]:
    """``work()``'s value, CPU seconds and wall seconds."""
    cpu, wall = time.process_time(), time.perf_counter()
    value = work()
    return value, time.process_time() - cpu, time.perf_counter() - wall


def raw_sign_s(rounds: int = 2000) -> float:
    """CPU seconds per Ed25519 signature over a note-sized (~450 bytes) message."""
    key, message = SigningKey.generate(), b"n" * 450
    cpu = time.process_time()
    for _ in range(rounds):
        key.sign(message)
    return (time.process_time() - cpu) / rounds


def run(args: argparse.Namespace, folder: Path) -> dict[str, Any]:
    say(f"building a log of {args.events:,} events")
    ws = build_log(folder / "ws", args.events, seal_every=args.segment_events)
    seals = ws.data / "seals"
    start_ns = time.time_ns() - (args.seals + 1) * DEFAULT_EPOCH_S * 1_000_000_000
    say(f"set-up with a horizon of 2^{args.bits} epochs")
    seed, _, setup_s = timed(lambda: setup(seals, DEFAULT_EPOCH_S, bits=args.bits, now_ns=start_ns))
    sealer, open_cpu, _ = timed(lambda: Sealer(seals, lambda: heads_now(ws.log_root)))
    cpus, walls, sealed = [], [], []
    for epoch in range(args.seals):
        at = seed.starts_ns(epoch) + 1_000_000_000
        done, cpu, wall = timed(lambda at=at: sealer.seal_due(at))
        sealed += done
        cpus.append(cpu)
        walls.append(wall)
    report, verify_cpu, _ = timed(
        lambda: verify(
            seed, SealDir(seals).notes(), read_log(ws.log_root), seed.starts_ns(args.seals - 1) + 2
        )
    )
    per_seal = statistics.median(cpus)
    sign_s = raw_sign_s()
    share = per_seal / DEFAULT_EPOCH_S
    return {
        "events": args.events,
        "segment_events": args.segment_events,
        "seals": args.seals,
        "bits": args.bits,
        "epoch_s": DEFAULT_EPOCH_S,
        "setup_s": round(setup_s, 3),
        "open_cpu_s": round(open_cpu, 4),
        "seal_cpu_ms_median": round(per_seal * 1000, 3),
        "seal_cpu_ms_max": round(max(cpus) * 1000, 3),
        "seal_wall_ms_median": round(statistics.median(walls) * 1000, 3),
        "seal_cpu_share_pct": round(share * 100, 6),
        "peer_ed25519_sign_ms": round(sign_s * 1000, 4),
        "peer_cpu_share_pct": round(sign_s / DEFAULT_EPOCH_S * 100, 8),
        "verify_cpu_s": round(verify_cpu, 4),
        "checks": {
            "every_epoch_sealed": sealed == list(range(args.seals)),
            "verify_seed_ok": report.ok and report.epochs == args.seals,
            "share_within_goal": share <= GOAL_SHARE,
        },
    }


def main(argv: list[str] | None = None) -> int:
    args = parse(argv)
    with workdir("seal-bench-") as folder:
        result = run(args, folder)
    for key in ("seal_cpu_ms_median", "seal_cpu_share_pct", "peer_ed25519_sign_ms", "setup_s"):
        print(f"{key}: {result[key]}")
    return finish(result)


if __name__ == "__main__":
    sys.exit(main())
