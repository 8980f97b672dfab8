"""`nerve tail -f` against a fast appender: can the follower keep up?

    .venv/bin/python bench/follow_bench.py [--seconds 20] [--batch 1000] [--rate 0]
                                           [--seal-max-events 100000] [--durability fsync]
                                           [--quick] [--keep]

A temporary workspace; a follower process (``nerve tail -f --json -n 0 --kind observation``,
stdout piped into this bench) starts first. Then an appender process opens the log as its
only writer and appends ``observation`` events (payload ``{"i": n}``) with
``EventLog.append_columns`` in batches of ``--batch``, as fast as it can (or at ``--rate``
events/s), for ``--seconds``; the log seals inline every ``--seal-max-events`` events, so the
follower also crosses seals. The bench counts the follower's lines as they arrive and reports:

* **appended/s**: events the appender made durable, over its own window;
* **followed/s**: lines the follower printed during that same window, over the window;
* **behind**: appended minus followed when the appender stopped;
* **catch-up**: seconds after the appender stopped until the follower had printed every
  event (or ``--catch-up-timeout``, then reported as missing).

It checks that the follower printed each event exactly once, in order (every line's payload
counter is the line's index), and ends with one line ``RESULT {json}``; progress goes to
stderr. The workspace is removed at the end unless ``--keep``.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any, TextIO

from nerve.log.fields import EventFields

sys.path.insert(0, str(Path(__file__).resolve().parent))

from benchkit import failed_checks, finish, load_avg_1m, new_parser, say

QUICK = {"seconds": 5.0}
DEFAULTS = {"seconds": 20.0}
FOLLOWER_START_S = 2.0


# -- the appender (runs in its own process) ----------------------------------------------


def append_for(root: Path, seconds: float, batch: int, rate: float) -> dict[str, Any]:
    """Append batches for ``seconds``; the count and the window, as the appender saw them."""
    from nerve.events import SourceClass, Trust
    from nerve.workspace import WorkspaceDir

    ws = WorkspaceDir.at(root)
    appended = 0
    with ws.open_log() as log:
        started = time.monotonic()
        while (now := time.monotonic()) - started < seconds:
            if rate and appended > rate * (now - started):
                time.sleep(min(0.01, appended / rate - (now - started)))
                continue
            payloads = [b'{"i":%d}' % i for i in range(appended, appended + batch)]
            log.append_columns(
                EventFields(
                    kind=["observation"] * batch,
                    subject=["bench"] * batch,
                    source=[int(SourceClass.ENDPOINT)] * batch,
                    trust=[int(Trust.UNTRUSTED)] * batch,
                    valid_time_ns=[None] * batch,
                    payload=payloads,
                    line=[f"event {i}" for i in range(appended, appended + batch)],
                )
            )
            appended += batch
        ended = time.monotonic()
    return {"appended": appended, "started": started, "ended": ended}


# -- the follower's output ----------------------------------------------------------------


@dataclass
class Counter:
    """Counts the follower's lines as they arrive and checks their order."""

    lines: int = 0
    misordered: int = 0
    first_bad: str = ""
    marks: list[tuple[float, int]] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def read(self, stream: IO[bytes]) -> None:
        for raw in stream:
            if self.lines % 97 == 0:
                self._check(raw)
            with self.lock:
                self.lines += 1
                if self.lines % 10_000 == 0:
                    self.marks.append((time.monotonic(), self.lines))

    def _check(self, raw: bytes) -> None:
        row = json.loads(raw)
        if row.get("payload", {}).get("i") != self.lines:
            self.misordered += 1
            self.first_bad = self.first_bad or raw.decode()[:200]

    def count(self) -> int:
        with self.lock:
            return self.lines


# -- one run ------------------------------------------------------------------------------


def make_workspace(root: Path, seal_max_events: int, durability: str) -> None:
    from nerve.workspace import init_workspace

    init_workspace(root)
    (root / "nerve.yaml").write_text(
        f"log:\n  seal_max_events: {seal_max_events}\n  durability: {durability}\n"
    )


def start_follower(root: Path) -> subprocess.Popen[bytes]:
    args = ["tail", "-f", "--json", "-n", "0", "--kind", "observation"]
    return subprocess.Popen(
        [sys.executable, "-m", "nerve", "--workspace", str(root), *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env={**os.environ, "NO_COLOR": "1"},
        cwd=root,  # not the repository: `python -m` would import the nerve next to it first
    )


def run_appender(root: Path, args: argparse.Namespace) -> dict[str, Any]:
    cmd = [
        sys.executable,
        __file__,
        "--append",
        str(root),
        "--seconds",
        str(args.seconds),
        "--batch",
        str(args.batch),
        "--rate",
        str(args.rate),
    ]
    out = subprocess.run(cmd, capture_output=True, text=True, check=True).stdout
    result: dict[str, Any] = json.loads(out.strip().splitlines()[-1])
    return result


def measure(root: Path, args: argparse.Namespace) -> dict[str, Any]:
    follower = start_follower(root)
    counter = Counter()
    assert follower.stdout is not None
    reader = threading.Thread(target=counter.read, args=(follower.stdout,), daemon=True)
    reader.start()
    try:
        time.sleep(FOLLOWER_START_S)  # the follower's start-up is not what is measured
        say(f"appending for {args.seconds:.0f} s in batches of {args.batch}")
        app = run_appender(root, args)
        at_end = counter.count()
        say(f"appended {app['appended']:,}; the follower had printed {at_end:,}")
        deadline = time.monotonic() + args.catch_up_timeout
        while counter.count() < app["appended"] and time.monotonic() < deadline:
            if follower.poll() is not None:
                break
            time.sleep(0.05)
        done = time.monotonic()
        followed = counter.count()
    finally:
        follower.terminate()
        follower.wait(timeout=30)
        reader.join(timeout=5)
    window = app["ended"] - app["started"]
    caught_up = followed >= app["appended"]
    return {
        "appended": app["appended"],
        "window_s": round(window, 3),
        "appended_per_s": round(app["appended"] / window),
        "followed_in_window": at_end,
        "followed_per_s": round(at_end / window),
        "behind_at_end": app["appended"] - at_end,
        "followed_total": followed,
        "catch_up_s": round(done - app["ended"], 3) if caught_up else None,
        "missing": max(0, app["appended"] - followed),
        "extra": max(0, followed - app["appended"]),
        "misordered_samples": counter.misordered,
        "first_bad": counter.first_bad,
        "follower_stderr": (follower.stderr.read().decode()[-500:] if follower.stderr else ""),
    }


def render(result: dict[str, Any], out: TextIO) -> None:
    rows = [
        ("appended", f"{result['appended']:,} in {result['window_s']} s"),
        ("appended/s", f"{result['appended_per_s']:,}"),
        ("followed/s (same window)", f"{result['followed_per_s']:,}"),
        ("behind when the appender stopped", f"{result['behind_at_end']:,}"),
        (
            "catch-up after it stopped",
            f"{result['catch_up_s']} s" if result["catch_up_s"] is not None else "never",
        ),
        (
            "missing / extra / misordered",
            "{missing} / {extra} / {misordered_samples}".format(**result),
        ),
    ]
    width = max(len(name) for name, _ in rows)
    for name, value in rows:
        print(f"{name:<{width}}  {value}", file=out)


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = new_parser(__doc__)
    parser.add_argument("--seconds", type=float)
    parser.add_argument("--batch", type=int, default=1000)
    parser.add_argument("--rate", type=float, default=0.0, help="events/s; 0 = as fast as it can")
    parser.add_argument("--seal-max-events", type=int, default=100_000)
    parser.add_argument("--durability", choices=["fsync", "os"], default="fsync")
    parser.add_argument("--catch-up-timeout", type=float, default=120.0)
    parser.add_argument("--quick", action="store_true", help="a 5 s run")
    parser.add_argument("--keep", action="store_true", help="keep the temporary workspace")
    parser.add_argument("--append", metavar="WORKSPACE", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.seconds is None:
        args.seconds = (QUICK if args.quick else DEFAULTS)["seconds"]
    return args


def main(argv: Sequence[str] | None = None, out: TextIO = sys.stdout) -> int:
    args = parse_args(argv)
    if args.append:
        print(json.dumps(append_for(Path(args.append), args.seconds, args.batch, args.rate)))
        return 0
    root = Path(tempfile.mkdtemp(prefix="nerve-follow-")) / "ws"
    try:
        make_workspace(root, args.seal_max_events, args.durability)
        result = measure(root, args)
    finally:
        if args.keep:
            say(f"kept {root}")
        else:
            shutil.rmtree(root.parent, ignore_errors=True)
    result["load_avg_1m"] = load_avg_1m()
    result["seconds"] = args.seconds
    result["checks"] = {
        "every_event_followed": result["missing"] == 0,
        "nothing_twice": result["extra"] == 0,
        "in_order": result["misordered_samples"] == 0,
    }
    result["failed_checks"] = failed_checks(result["checks"])
    render(result, out)
    return finish(result, out)


if __name__ == "__main__":
    sys.exit(main())
