"""Catch-up time of a device that missed another's events, against copying the same sealed
bytes (``shutil.copytree``) as the floor, over a real nats-server on loopback.

    python bench/sync_bench.py --events 20000

A first cut (issue 45): events are generated as one batch, not yet at the footprint bench's
rates; the daemon's send overhead as CPU share is not measured yet.
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from nerve.sync import ops
from tests.helpers.natsd import nats
from tests.sync.conftest import Place, device, emit, group_of


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--events", type=int, default=20000)
    args = parser.parse_args()
    folder = Path(tempfile.mkdtemp(prefix="sync-bench-"))
    try:
        with nats(folder / "nats") as servers:
            place = Place("nats", ("--nats", servers[0].url), servers[0].store)
            a, b = device(folder, "alpha"), device(folder, "beta")
            group_of(place, a, b)
            emit(a, args.events, "an event with a line of ordinary length for the bench")
            with a.open_log() as log:
                log.seal()
            start = time.monotonic()
            sent = ops.now(a).sent
            send_s = time.monotonic() - start
            start = time.monotonic()
            got = ops.now(b).received
            catch_s = time.monotonic() - start
            start = time.monotonic()
            shutil.copytree(a.log_root, folder / "copy")
            copy_s = time.monotonic() - start
            in_sync = ops.status(b).in_sync
        checks = {"all_sent": sent == args.events, "all_received": got == args.events}
        checks["in_sync"] = in_sync
        result = {
            "events": args.events,
            "send_s": round(send_s, 3),
            "catch_up_s": round(catch_s, 3),
            "copy_floor_s": round(copy_s, 4),
            "checks": checks,
            "failed_checks": [k for k, v in checks.items() if not v],
        }
        print("RESULT " + json.dumps(result, sort_keys=True))
    finally:
        shutil.rmtree(folder, ignore_errors=True)


if __name__ == "__main__":
    main()
