"""What-if on a month of history: ``nerve attend --replay --with FILE --since 7d`` over 30 days
of a workstation's log, beside the floor of the same work done by hand.

    .venv/bin/python bench/whatif_bench.py [--days 30] [--cadence 10] [--quick]

The log is the multi-day attention bench's workstation (``attention_days_bench.Days``, seed
101: every sampled sense one row per ``--cadence`` seconds, shell, files, focus and incidents
as they happen; at 10 s that is about 0.5 observations a second, above the footprint bench's
rate of stored observations), imported into a real workspace with its own stamps and sealed,
then attended once with the daemon's default settings (``attend --replay``: the decisions the
what-if compares against are signed records in the log, as a daemon leaves them).

Timed, in one run:

- **what-if**: ``ws.audit.what_if(FILE, since_ns=end - 7 days)`` — the library call behind
  the CLI: the whole log's observations read from the segments, attended again under FILE's
  settings (``rules.confirm_s: 0`` laid over the defaults), and the last 7 days' decisions
  compared with the recorded ones;
- **floor**: the same observations read by one DuckDB query and attended by a bare
  ``Attender`` (no comparison, no decisions read): what any replay must do at least.

Each is given in wall seconds and in the CPU seconds the process spent (``process_time``):
on a machine shared with other work the wall time says as much about the load as the code.

Goal (issue 40): the 30-day replay in ≤ 30 s. Checks: the default settings laid over
themselves change nothing, FILE's change is seen (some decision differs), and the log's files
are byte-identical after the what-if. ``--quick``: one day. The last stdout line is
``RESULT {json}``.
"""

from __future__ import annotations

import hashlib
import json
import sys
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE.parent))

from attention_days_bench import Days  # noqa: E402
from benchkit import finish, new_parser, say, sized, workdir  # noqa: E402

import nerve  # noqa: E402
from nerve.attention.service import Attender, read_observations  # noqa: E402
from nerve.attention.settings import AttentionConfig  # noqa: E402
from nerve.clock import Hlc  # noqa: E402
from nerve.events import Event, Trust  # noqa: E402
from nerve.query import connect  # noqa: E402
from nerve.workspace import WorkspaceDir, init_workspace  # noqa: E402

NS = 1_000_000_000
WEEK_NS = 7 * 86_400 * NS
CHUNK = 100_000
CHANGE = "attention:\n  rules:\n    confirm_s: 0\n"


def build(root: Path, days: int, cadence: int) -> tuple[int, int]:
    """A workspace at ``root`` holding the generated days; (observations, end_ns)."""
    rows = Days(days, cadence, 101).build()
    init_workspace(root)
    (root / "nerve.yaml").write_text(
        "log:\n  durability: os\n  seal_max_events: 500000\n", encoding="utf-8"
    )
    folder = WorkspaceDir.at(root)
    events, logical, prev = [], 0, None
    for r in rows:
        logical = logical + 1 if r.t == prev else 0
        prev = r.t
        events.append(Event(hlc=Hlc(r.t, logical), node="bench", kind="observation",
                            subject=r.sense, source=r.source, trust=Trust.FIRST_PARTY,
                            payload=json.dumps(r.payload, sort_keys=True).encode(),
                            line=r.line))  # fmt: skip
    with folder.open_log() as log:
        for start in range(0, len(events), CHUNK):
            log.import_events(events[start : start + CHUNK])
        log.seal()
    return len(events), rows[-1].t


def tree_digest(root: Path) -> str:
    h = hashlib.sha256()
    for path in sorted(p for p in root.rglob("*") if p.is_file()):
        h.update(str(path.relative_to(root)).encode() + b"\0" + path.read_bytes())
    return h.hexdigest()


def floor(log_root: Path) -> tuple[float, float]:
    """Seconds (wall, CPU) to read every observation with one query and attend to them,
    nothing more."""
    started, cpu = time.perf_counter(), time.process_time()
    observations = read_observations(connect(log_root))
    Attender(AttentionConfig(), None).observe(observations)
    return time.perf_counter() - started, time.process_time() - cpu


def run(days: int, cadence: int) -> dict[str, Any]:
    with workdir("nerve-whatif-") as tmp:
        root = tmp / "ws"
        started = time.perf_counter()
        observed, end_ns = build(root, days, cadence)
        say(f"{observed:,} observations over {days} days built in "
            f"{time.perf_counter() - started:.0f} s; attending once with the defaults")  # fmt: skip
        ws = nerve.open(root)
        attended = ws.audit.attend()
        change, same = tmp / "change.yaml", tmp / "same.yaml"
        change.write_text(CHANGE)
        own = AttentionConfig().rules.confirm_s  # the default, said again
        same.write_text(f"attention:\n  rules:\n    confirm_s: {own}\n")
        before = tree_digest(root / "data")
        since = end_ns - WEEK_NS
        started, cpu = time.perf_counter(), time.process_time()
        result = ws.audit.what_if(change, since_ns=since)
        seconds, cpu_s = time.perf_counter() - started, time.process_time() - cpu
        unchanged = ws.audit.what_if(same, since_ns=since)
        floor_s, floor_cpu_s = floor(WorkspaceDir.at(root).log_root)
        written = tree_digest(root / "data") != before
    return {
        "days": days,
        "cadence_s": cadence,
        "observations": observed,
        "decisions_recorded": attended.decisions,
        "window": "the last 7 days",
        "recorded": {"surfaced": result.recorded[0], "held": result.recorded[1]},
        "would": {"surfaced": result.would[0], "held": result.would[1]},
        "changes": len(result.changes),
        "what_if_s": round(seconds, 2),
        "what_if_cpu_s": round(cpu_s, 2),
        "floor_s": round(floor_s, 2),
        "floor_cpu_s": round(floor_cpu_s, 2),
        "ratio_to_floor": round(seconds / floor_s, 2) if floor_s else None,
        "goal_s": 30,
        "checks": {
            "same_settings_change_nothing": unchanged.same,
            "a_change_is_seen": bool(result.changes),
            "nothing_written": not written,
        },
        "goals": {"within_30_s": seconds <= 30 if days >= 30 else None},
    }


def main(argv: list[str] | None = None) -> int:
    parser = new_parser(__doc__)
    parser.add_argument("--days", type=int)
    parser.add_argument("--cadence", type=int)
    parser.add_argument("--quick", action="store_true", help="one day")
    args = sized(parser.parse_args(argv), {"days": 1, "cadence": 10},
                 {"days": 30, "cadence": 10})  # fmt: skip
    result = run(args.days, args.cadence)
    print(f"what-if over {args.days} days ({result['observations']:,} observations, "
          f"compared over {result['window']}): {result['what_if_s']} s "
          f"({result['what_if_cpu_s']} s CPU); floor (one query + a bare attender) "
          f"{result['floor_s']} s ({result['floor_cpu_s']} s CPU); ratio "
          f"{result['ratio_to_floor']}; goal <= 30 s")  # fmt: skip
    print(f"recorded {result['recorded']}, would {result['would']}, "
          f"{result['changes']} decisions differ")  # fmt: skip
    return finish(result)


if __name__ == "__main__":
    raise SystemExit(main())
