"""Days on a workstation, slow incidents among them: does attention surface them in time and
hold the life of the machine?

    .venv/bin/python bench/attention_days_bench.py [--days D] [--cadence 10,60,300]
                                                  [--seeds 101,102,103] [--quick]

Its own generator: ``--days`` days (default 3) from a Sunday 00:00 UTC of a workstation with
8 cores and 16 GiB, one row per ``--cadence`` seconds of each sampled sense — ``cpu``
(``busy_permille`` of the machine), ``memory`` (``used_mib``), ``disk`` (``free_mib:/``),
``network`` (``down_kib_per_s``, ``up_kib_per_s``, ``listening_ports``), ``processes``
(``top_cpu_permille``: the busiest process, 1000 a core) — and ``shell``, ``files``, ``focus``
and short-lived-process rows as things happen. Every row goes, as stored payload bytes,
through :func:`nerve.attention.service.readings_from_bytes` and
:class:`nerve.attention.service.Attender` with the daemon's default ``attention:`` settings.

**Background** (never an incident): workdays (Monday on, 09:00–18:00: apps opened in the
morning and closed at night, typing, file saves, focus changes), compile bursts of 20 s to
3 minutes (all cores, memory up and back, build output on disk), a nightly cron job at 03:00
(10 minutes of a core, a log rotated), a weekly backup on Sunday 01:00 (90 minutes uploading),
downloads of 1–8 minutes (the disk falls by what came in), a reboot on the third day at 07:30
(3 minutes without rows, memory back to its boot level), the counters' own noise.

**Incidents** (labelled onsets, none overlapping, spread over the days after a warm-up
of 6 hours): a memory leak of 15–40 MiB per 5 minutes for 6–10 hours, a disk filling at
40–90 MiB per 5 minutes for 3–6 hours, a single-threaded runaway (one core of the eight for
2–4 hours), a multi-threaded CPU hog for 30–90 minutes, a crash loop, a new listening port,
a command failing again and again.

**Scoring.** An incident is caught when a decision of a sense it disturbs (``SENSES``) is
surfaced by its deadline: a fast incident within 2 minutes of its onset (at a cadence
slower than a minute, within two rows: the first row after the onset can only be confirmed
by the next; ``recall_strict`` holds the plain 2 minutes), a slow drift (leak, fill) within
30 minutes or before 10% of its headroom is gone, whichever comes first. A surfacing of such
a sense from the onset to 2 minutes after the end is the incident's (after the deadline it is
``late``: no hit, not false); any other surfacing is false. **precision** is incidents
surfaced (at all) over those plus false surfacings; **interruptions_per_2h** is false
surfacings per 2 hours outside every incident. Goals (checks): recall ≥ 0.9, precision ≥ 0.8,
≤ 1 interruption per 2 background hours at every cadence, on the worst seed; and
``replay_identical``. The tuning split is seeds 1–3 (``--seeds 1,2,3``): any constant is chosen
there; the figures reported are the default seeds 101–103, generated apart. ``--quick`` (one
day at one cadence, 60 s) checks only the replay and that some incident is caught.
``--false`` lists, on stderr, every false surfacing with its sense, rule (the fire's kind) and
the background activity it falls in (``Days.background``), then their count by class. The last
stdout line is ``RESULT {json}``; exit status 1 when a check fails.

Figures (2026-12-07, the daemon's default settings, held-out seeds 101–103, worst seed,
load 17–30 on a shared 2-core machine): recall / precision / interruptions per 2 background
hours 1.0 / 1.0 / 0 at 10 s rows, 1.0 / 0.818 / 0.104 at 1 min, 0.889 / 0.900 / 0.053 at
5 min (before a runaway alone at its start was told from a build: 0.889 / 0.889 / 0.053 at
5 min). Recall at 5-minute rows misses the goal by one incident (seed 103's leak, +67 min;
bench/README.md).
"""

from __future__ import annotations

import argparse
import json
import random
import sys
import time
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TextIO

import blake3

from nerve.attention.service import Attender, Obs, readings_from_bytes
from nerve.attention.settings import AttentionConfig
from nerve.events import SourceClass, Trust

sys.path.insert(0, str(Path(__file__).resolve().parent))

from benchkit import finish, new_parser

S = 1_000_000_000
MIN, HOUR, DAY = 60 * S, 3600 * S, 86_400 * S
T0 = 1_767_484_800 * S  # 2026-01-04 00:00 UTC, a Sunday
FAST_WITHIN, SLOW_WITHIN = 2 * MIN, 30 * MIN
WARMUP = 6 * HOUR
CORES, TOTAL_MIB = 8, 16_384
GOALS = {"recall": 0.9, "precision": 0.8, "interruptions_per_2h": 1.0}
SLOW = ("memory_leak", "disk_filling")
FAST = ("runaway", "cpu_hog", "crash_loop", "new_port", "failing_command")
SENSES = {"memory_leak": ("memory",), "disk_filling": ("disk",),
          "runaway": ("processes", "cpu"), "cpu_hog": ("cpu", "processes"),
          "crash_loop": ("processes",), "new_port": ("network",),
          "failing_command": ("shell",)}  # fmt: skip
DEFAULT_SEEDS = (101, 102, 103)


@dataclass
class Incident:
    kind: str
    start: int
    end: int
    rate: float = 0.0  # MiB per 5 minutes (a leak, a fill)
    headroom: float = 0.0  # MiB at the onset


@dataclass
class Row:
    t: int
    sense: str
    source: int
    line: str
    payload: dict[str, Any]


@dataclass
class Days:
    """The generated days: background and incidents, as rows."""

    days: int
    cadence: int
    seed: int
    rows: list[Row] = field(default_factory=list)
    incidents: list[Incident] = field(default_factory=list)

    def __post_init__(self) -> None:
        self.rng = random.Random(self.seed)
        self.end = T0 + self.days * DAY
        self.reboot = T0 + 2 * DAY + 7 * HOUR + 30 * MIN if self.days > 2 else None
        self.incidents = self._plan()
        # Background events, drawn once so every sense sees the same ones.
        self.compiles = self._bursts(20 * MIN, 20, 180)
        self.downloads = self._bursts(3 * HOUR, 60, 480)
        self.apps = self._apps()

    # -- planning --------------------------------------------------------------------------

    def _plan(self) -> list[Incident]:
        rng, kinds = self.rng, list(SLOW * 2 + FAST)
        rng.shuffle(kinds)
        lengths = {"memory_leak": (6 * HOUR, 10 * HOUR), "disk_filling": (3 * HOUR, 6 * HOUR),
                   "runaway": (2 * HOUR, 4 * HOUR), "cpu_hog": (30 * MIN, 90 * MIN),
                   "crash_loop": (8 * MIN, 15 * MIN), "new_port": (HOUR, 3 * HOUR),
                   "failing_command": (2 * MIN, 3 * MIN)}  # fmt: skip
        span = self.end - T0 - WARMUP
        need = sum(sum(lengths[k]) // 2 for k in kinds)
        gap = max(30 * MIN, (span - need) // (len(kinds) + 1))
        t, out = T0 + WARMUP, []
        for kind in kinds:
            t += rng.randrange(gap // 2, gap)
            lo, hi = lengths[kind]
            length = rng.randrange(lo, hi)
            if t + length > self.end - HOUR:
                break
            rate = rng.uniform(15, 40) if kind == "memory_leak" else rng.uniform(40, 90)
            out.append(Incident(kind, t, t + length, rate if kind in SLOW else 0.0))
            t += length
        return out

    def _bursts(self, every: int, lo_s: int, hi_s: int) -> list[tuple[int, int]]:
        """(start, end) of work-hour events about every ``every`` ns, ``lo_s``..``hi_s`` long."""
        out, t = [], T0
        while t < self.end:
            t += int(self.rng.expovariate(1 / every))
            if self.working(t):
                out.append((t, t + self.rng.randrange(lo_s, hi_s) * S))
        return out

    def _apps(self) -> list[tuple[int, int]]:
        """(time, MiB) of apps opened and closed: opened in the morning, closed at night."""
        out = []
        for d in range(self.days):
            day = T0 + d * DAY
            if not self.workday(day):
                continue
            for _ in range(self.rng.randint(3, 6)):
                size = self.rng.randrange(150, 700)
                out.append((day + 9 * HOUR + self.rng.randrange(0, 40 * MIN), size))
                out.append((day + 18 * HOUR + self.rng.randrange(0, 60 * MIN), -size))
        return sorted(out)

    def workday(self, t: int) -> bool:
        return (t - T0) // DAY % 7 != 0 and (t - T0) // DAY % 7 != 6  # not Sunday, Saturday

    def working(self, t: int) -> bool:
        return self.workday(t) and 9 <= (t - T0) // HOUR % 24 < 18

    def background(self, t: int) -> str:
        """The background activity a time falls in (or up to 3 minutes after), for the
        ``--false`` breakdown: ``reboot``, ``backup``, ``nightly``, ``compile``,
        ``download``, ``workday-start``, ``workday-end``, ``disk-clean``, else ``noise``."""
        after, of_day = 3 * MIN, (t - T0) % DAY
        found = [
            name
            for name, hit in (
                ("reboot", self.reboot is not None and 0 <= t - self.reboot < 10 * MIN),
                ("backup", self._backup(t) or self._backup(t - after)),
                ("nightly", self._cron(t) or self._cron(t - after)),
                ("compile", any(a <= t < b + after for a, b in self.compiles)),
                ("download", any(a <= t < b + after for a, b in self.downloads)),
                ("workday-start", self.workday(t) and 9 * HOUR <= of_day < 9 * HOUR + 45 * MIN),
                ("workday-end", self.workday(t) and 18 * HOUR <= of_day < 19 * HOUR + 5 * MIN),
                ("disk-clean", of_day < 10 * MIN and (t - T0) // DAY % 2 == 1),
            )
            if hit
        ]
        return "+".join(found) or "noise"

    def during(self, kind: str, t: int) -> Incident | None:
        return next((i for i in self.incidents if i.kind == kind and i.start <= t < i.end), None)

    def down(self, t: int) -> bool:
        return self.reboot is not None and self.reboot <= t < self.reboot + 3 * MIN

    def add(self, t: int, sense: str, source: SourceClass, line: str, **payload: Any) -> None:
        if not self.down(t):
            self.rows.append(Row(t, sense, int(source), line, payload))

    def ticks(self) -> range:
        return range(T0 + self.rng.randrange(self.cadence) * S, self.end, self.cadence * S)

    def build(self) -> list[Row]:
        for make in (self.cpu, self.memory, self.disk, self.network, self.processes,
                     self.shell, self.crash_loops, self.files):  # fmt: skip
            make()
        self.rows.sort(key=lambda r: (r.t, r.sense))
        return self.rows

    # -- the senses --------------------------------------------------------------------------

    def _in(self, spans: list[tuple[int, int]], t: int) -> tuple[int, int] | None:
        return next((s for s in spans if s[0] <= t < s[1]), None)

    def _cron(self, t: int) -> bool:
        return 3 * HOUR <= (t - T0) % DAY < 3 * HOUR + 10 * MIN

    def _backup(self, t: int) -> bool:
        return (t - T0) // DAY % 7 == 0 and HOUR <= (t - T0) % DAY < HOUR + 90 * MIN

    def _top_cpu(self, t: int) -> int:
        """The busiest process, in permille of a core."""
        top = self.rng.gauss(150, 40) if self.working(t) else self.rng.gauss(30, 10)
        if self._in(self.compiles, t):
            top = self.rng.uniform(900, 1000)  # a compiler, one core
        if self._cron(t) or self._backup(t):
            top = max(top, self.rng.uniform(400, 700))
        if self.during("runaway", t):
            top = self.rng.uniform(985, 1000)
        if self.during("cpu_hog", t):
            top = self.rng.uniform(4500, 6000)  # six threads
        return max(0, round(top))

    def cpu(self) -> None:
        for t in self.ticks():
            busy = self.rng.gauss(110, 25) if self.working(t) else self.rng.gauss(20, 5)
            if self._in(self.compiles, t):
                busy = self.rng.uniform(600, 950)
            if self._cron(t) or self._backup(t):
                busy += self.rng.uniform(80, 140)
            if self.reboot is not None and 0 <= t - self.reboot - 3 * MIN < 2 * MIN:
                busy += 400  # the boot
            if self.during("runaway", t):
                busy += 1000 / CORES
            if self.during("cpu_hog", t):
                busy += self.rng.uniform(600, 750)
            permille = min(1000, max(0, round(busy)))
            self.add(t, "cpu", SourceClass.ENDPOINT, f"cpu {permille / 10:.1f}%",
                     readings={"busy_permille": permille})  # fmt: skip

    def memory(self) -> None:
        noise, base = 0.0, 4200.0
        for t in self.ticks():
            noise = 0.8 * noise + self.rng.gauss(0, 6)
            apps = sum(m for at, m in self.apps if at <= t)
            if self.reboot is not None and t >= self.reboot:
                apps = sum(m for at, m in self.apps if self.reboot <= at <= t)
            used = base + apps + noise
            burst = self._in(self.compiles, t)
            if burst:
                used += 1200 * min(1.0, (t - burst[0]) / (burst[1] - burst[0]) * 2)
            inc = self.during("memory_leak", t)
            if inc is not None:
                used += inc.rate * (t - inc.start) / (5 * MIN)
                inc.headroom = inc.headroom or TOTAL_MIB - used
            mib = round(used)
            self.add(t, "memory", SourceClass.ENDPOINT, f"memory {mib} MiB used",
                     readings={"used_mib": mib})  # fmt: skip

    def disk(self) -> None:
        free, last = 81_920.0, T0
        for t in self.ticks():
            dt = (t - last) / S
            last = t
            free -= abs(self.rng.gauss(0, 1.5)) * dt / 60  # logs, caches
            if self._in(self.compiles, t):
                free -= self.rng.uniform(5, 20) * dt / 60  # build output
            if (t - T0) % DAY < self.cadence * S and (t - T0) // DAY % 2:
                free += self.rng.uniform(300, 1500)  # a clean, a rotated log
            got = self._in(self.downloads, t)
            if got is not None:
                free -= self.rng.uniform(5, 40) * dt  # MiB a second
            inc = self.during("disk_filling", t)
            fill = 0.0  # at the end the runaway file is deleted: the space comes back
            if inc is not None:
                fill = inc.rate * (t - inc.start) / (5 * MIN)
                inc.headroom = inc.headroom or free
            mib = round(free - fill)
            self.add(t, "disk", SourceClass.ENDPOINT, f"disk / {mib} MiB free",
                     path="/", readings={"free_mib:/": mib})  # fmt: skip

    def network(self) -> None:
        ports = 14
        for t in self.ticks():
            down, up = self.rng.randint(0, 4), self.rng.randint(0, 2)
            if self.working(t) and self.rng.random() < 0.2:
                down += round(self.rng.lognormvariate(4, 1.2))  # pages, mail
            if self._in(self.downloads, t):
                down = round(self.rng.uniform(5, 40) * 1024)
            if self._backup(t):
                up = round(self.rng.uniform(5, 20) * 1024)
            listening = ports + (1 if self.during("new_port", t) else 0)
            self.add(t, "network", SourceClass.NETWORK,
                     f"net all down {down} KiB/s up {up} KiB/s", nic="all",
                     readings={"down_kib_per_s": down, "up_kib_per_s": up, "errors": 0,
                               "listening_ports": listening})  # fmt: skip

    def processes(self) -> None:
        for t in self.ticks():
            top = self._top_cpu(t)
            self.add(t, "processes", SourceClass.PROCESS_TREE, f"top process {top / 10:.0f}%",
                     readings={"top_cpu_permille": top})  # fmt: skip

    def crash_loops(self) -> None:
        """Short-lived processes, counted as the sense counts them: at once, then a minute
        later, or sooner once one name went three times."""
        for inc in (i for i in self.incidents if i.kind == "crash_loop"):
            exits = [t + S for t in range(inc.start, inc.end, 4 * S)]
            sent, counted = None, 0
            for t in range(inc.start, inc.end + MIN, 5 * S):
                counted += sum(1 for e in exits if t - 5 * S < e <= t)
                if counted and (sent is None or t - sent >= MIN or counted >= 3):
                    self.add(t, "processes", SourceClass.PROCESS_TREE,
                             f"short-lived processes: worker x{counted}", event="brief",
                             readings={"brief_exits": counted})  # fmt: skip
                    sent, counted = t, 0

    def shell(self) -> None:
        t = T0
        while t < self.end:
            t += self.rng.randrange(20, 300 if self.working(t) else 7200) * S
            failed = self.rng.random() < 0.12  # a typo, put right by the next command
            self.add(t, "shell", SourceClass.SHELL, f"git status exit {int(failed)}",
                     readings={"failure_streak": int(failed)})  # fmt: skip
        for inc in (i for i in self.incidents if i.kind == "failing_command"):
            for k, at in enumerate(range(inc.start, inc.end, 15 * S)):
                self.add(at, "shell", SourceClass.SHELL, "make test exit 2",
                         readings={"failure_streak": k + 1})  # fmt: skip

    def files(self) -> None:
        for t in range(T0, self.end, 45 * S):
            if self.working(t) and self.rng.random() < 0.4:
                self.add(t, "files", SourceClass.FILE_CHANGE, "modified src/a.py")
            if self.working(t) and self.rng.random() < 0.5:
                self.add(t + S, "focus", SourceClass.APP_FOCUS, "focus editor")


def observations(rows: list[Row]) -> list[Obs]:
    """The rows as stored observations (rows at one time: logical 0, 1, …)."""
    out, logical, prev = [], 0, None
    for i, r in enumerate(rows):
        logical = logical + 1 if r.t == prev else 0
        prev = r.t
        stored = json.dumps(r.payload, sort_keys=True).encode()
        eid = blake3.blake3(f"days#{i}".encode()).digest()
        out.append(Obs(eid, r.source, int(Trust.FIRST_PARTY), r.t, logical, r.line, r.sense,
                       readings_from_bytes(stored)))  # fmt: skip
    return out


def attend(obs: list[Obs], settings: AttentionConfig) -> list[dict[str, Any]]:
    att = Attender(settings, None)
    att.observe(obs)
    return att.decisions


def deadline(inc: Incident, cadence: int, strict: bool = False) -> int:
    """When an incident must have surfaced by (see the module docstring)."""
    if inc.kind in SLOW:
        tenth = inc.headroom / 10 / max(inc.rate, 1e-9) * 5 * MIN
        return inc.start + min(SLOW_WITHIN, int(tenth))
    return inc.start + (FAST_WITHIN if strict else max(FAST_WITHIN, 2 * cadence * S))


def score(obs: list[Obs], decisions: list[dict[str, Any]], days: Days) -> dict[str, Any]:
    when = {o.id.hex(): (o.physical_ns, o.subject) for o in obs}
    surfaced = [(*when[d["source_event"]], d) for d in decisions if d["outcome"] == "surface"]
    incidents = days.incidents

    def incident_of(t: int, sense: str) -> Incident | None:
        return next((i for i in incidents if sense in SENSES[i.kind]
                     and i.start <= t <= i.end + FAST_WITHIN), None)  # fmt: skip

    first: dict[int, int] = {}
    false = []
    for t, sense, d in surfaced:
        inc = incident_of(t, sense)
        if inc is None:
            false.append((t, d))
        else:
            first.setdefault(id(inc), t)
    hits = {id(i): id(i) in first and first[id(i)] <= deadline(i, days.cadence) for i in incidents}
    strict = {
        id(i): id(i) in first and first[id(i)] <= deadline(i, days.cadence, True) for i in incidents
    }
    covered = sum(i.end + FAST_WITHIN - i.start for i in incidents)
    background_h = (days.end - T0 - covered) / HOUR
    counted = len(first) + len(false)
    return {
        "observations": len(obs),
        "surfaced": len(surfaced),
        "incidents": len(incidents),
        "recall": sum(hits.values()) / len(incidents),
        "recall_strict": sum(strict.values()) / len(incidents),
        "precision": len(first) / counted if counted else 0.0,
        "interruptions_per_2h": 2 * len(false) / background_h,
        "by_incident": [
            f"{i.kind}@{(i.start - T0) / HOUR:.1f}h: "
            + (f"+{(first[id(i)] - i.start) / MIN:.1f} min" if id(i) in first else "missed")
            + (f" (deadline +{(deadline(i, days.cadence) - i.start) / MIN:.0f} min)")
            for i in incidents
        ],
        "false_surfaced": [
            f"{(t - T0) / HOUR:.2f}h {d['probe']} {d['highlight'].get('kind', '')} "
            f"[{days.background(t)}]: {d['source_line']}"
            for t, d in false
        ],
        "false_by_class": _classes(false, days),
    }


def _classes(false: list[tuple[int, dict[str, Any]]], days: Days) -> dict[str, int]:
    """False surfacings counted by sense, rule (the fire's kind) and background activity."""
    counts = Counter(
        f"{d['probe'].removeprefix('value:')} {d['highlight'].get('kind') or 'score'} "
        f"@ {days.background(t)}"
        for t, d in false
    )
    return dict(sorted(counts.items(), key=lambda kv: (-kv[1], kv[0])))


def run_once(days: int, cadence: int, seed: int, settings: AttentionConfig) -> dict[str, Any]:
    gen = Days(days, cadence, seed)
    obs = observations(gen.build())
    started = time.perf_counter()
    decisions = attend(obs, settings)
    figures = score(obs, decisions, gen)
    figures["seconds"] = round(time.perf_counter() - started, 1)
    return figures


def _shown(figures: dict[str, Any]) -> dict[str, Any]:
    """A run's figures as the RESULT line gives them: floats rounded, the first 12 false
    surfacings (``--false`` prints them all)."""
    out = {n: round(v, 3) if isinstance(v, float) else v for n, v in figures.items()}
    return {**out, "false_surfaced": figures["false_surfaced"][:12]}


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = new_parser(__doc__)
    parser.add_argument("--days", type=int, default=None, help="days generated (3)")
    parser.add_argument("--cadence", default=None, help="row cadences in seconds (10,60,300)")
    parser.add_argument("--seeds", default=None, help="seeds, a run each (101,102,103)")
    parser.add_argument("--quick", action="store_true", help="one day, 60 s rows, one seed")
    parser.add_argument("--rules", default="{}", help="an experiment: attention.rules")
    parser.add_argument(
        "--false", action="store_true", help="list each false surfacing and count them by class"
    )
    args = parser.parse_args(argv)
    args.days = args.days or (1 if args.quick else 3)
    args.cadence = [
        int(c) for c in (args.cadence or ("60" if args.quick else "10,60,300")).split(",")
    ]
    seeds = args.seeds or ("101" if args.quick else ",".join(map(str, DEFAULT_SEEDS)))
    args.seeds = [int(s) for s in seeds.split(",")]
    return args


def _print_false(figures: dict[str, Any]) -> None:
    """Each false surfacing of a run, then their count by class, on stderr."""
    for line in figures["false_surfaced"]:
        print(f"  false: {line}", file=sys.stderr)
    for name, count in figures["false_by_class"].items():
        print(f"  {count:4d}  {name}", file=sys.stderr)


def _worst(runs: list[dict[str, Any]]) -> dict[str, float]:
    return {
        "recall": min(r["recall"] for r in runs),
        "recall_strict": min(r["recall_strict"] for r in runs),
        "precision": min(r["precision"] for r in runs),
        "interruptions_per_2h": max(r["interruptions_per_2h"] for r in runs),
    }


def run(args: argparse.Namespace) -> dict[str, Any]:
    rules = json.loads(args.rules)
    settings = AttentionConfig.model_validate({"rules": rules} if rules else {})
    per: dict[str, dict[str, Any]] = {}
    for cadence in args.cadence:
        for seed in args.seeds:
            figures = run_once(args.days, cadence, seed, settings)
            per[f"{cadence}s/{seed}"] = figures
            line = ", ".join(f"{k} {figures[k]:.3f}" for k in _worst([figures]))
            print(f"cadence {cadence} s seed {seed}: {line} ({figures['seconds']} s)",
                  file=sys.stderr)  # fmt: skip
            if args.false:
                _print_false(figures)
    worst = {str(c): _worst([v for k, v in per.items() if k.startswith(f"{c}s/")])
             for c in args.cadence}  # fmt: skip
    again = run_once(args.days, args.cadence[0], args.seeds[0], settings)
    first = per[f"{args.cadence[0]}s/{args.seeds[0]}"]
    same = {k: v for k, v in again.items() if k != "seconds"}
    checks: dict[str, bool] = {
        "replay_identical": same == {k: v for k, v in first.items() if k != "seconds"}
    }
    met = {
        c: {
            "recall": w["recall"] >= GOALS["recall"],
            "precision": w["precision"] >= GOALS["precision"],
            "interruptions_per_2h": w["interruptions_per_2h"] <= GOALS["interruptions_per_2h"],
        }
        for c, w in worst.items()
    }
    if args.quick:
        checks["recall_above_zero"] = all(w["recall"] > 0 for w in worst.values())
    else:
        for goal in GOALS:
            checks[goal] = all(m[goal] for m in met.values())
    rounded = {c: {k: round(v, 3) for k, v in w.items()} for c, w in worst.items()}
    return {
        "days": args.days,
        "cadence": args.cadence,
        "seeds": args.seeds,
        "settings": rules or "the daemon's default attention settings",
        "worst": rounded,
        "goals_met": met,
        "runs": {k: _shown(f) for k, f in per.items()},
        "checks": checks,
        "failed_checks": [k for k, v in checks.items() if not v],
    }


def main(argv: Sequence[str] | None = None, out: TextIO = sys.stdout) -> int:
    return finish(run(parse_args(argv)), out)


if __name__ == "__main__":
    sys.exit(main())
