"""One randomised partition run of ``nerve sync``, Jepsen-style (issue 45, point 4).

A seed decides everything: how many devices, their clock skews (within the HLC's allowed
offset: every pair closer than ``max_clock_offset``) and a schedule of steps, run one after
another:

- ``emit d N``: N events on device d (through its daemon; straight into its log while the
  daemon is down), each id noted once acknowledged; one emit in ten is of thousands, more
  than a batch (``nerve.sync.engine.BATCH_EVENTS``);
- ``blobs d N``: the same with 1.2 kB of random hex in each payload (a batch's box past
  NATS's 1 MiB ``max_payload`` if it were not split);
- ``link d MODE``: device d's proxies to every server ``ok``, ``refuse``, ``stall`` or ``drop``;
- ``cut d BYTES``: d's connections cut after BYTES more bytes (0: now);
- ``server i ACTION``: server i killed (SIGKILL) or paused (SIGSTOP), or brought back;
- ``crash d MS``: d's daemon SIGKILLed MS ms later (right after an emit: mid-send on the
  emitter, mid-import on the others), ``restart d`` starts it again;
- ``replay N``: N stored boxes delivered again, late (repeats and reorders);
- ``sleep MS``.

Then everything heals (links ok, servers back, daemons started) and the run waits, bounded,
until every device holds the same shared digest. The checks: every device's ``nerve sync
status --json`` says ``in_sync`` with one digest, every acknowledged event is held exactly
once by every device, ``nerve replay --verify`` passes on every device and every peer log
verifies. A failed run's report holds its seed, schedule and each device's history.
"""

from __future__ import annotations

import contextlib
import json
import random
import time
from collections import Counter
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import AbstractContextManager, ExitStack
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tests.helpers.faultproxy import proxies
from tests.helpers.partition import Device, Place, join_group, new_device

SKEW_MS = 200  # each device within ±200 ms: any two within 400 ms < the 500 ms allowed
LINK_MODES = ("ok", "refuse", "stall", "drop")

PlaceFactory = Callable[[Path, int], AbstractContextManager[Place]]


@dataclass(frozen=True)
class Step:
    """One step of a schedule: what, on which device or server, with what value."""

    kind: str
    target: int = 0
    value: int | str = 0

    def __str__(self) -> str:
        on_device = ("emit", "blobs", "link", "cut", "crash", "restart")
        who = f"d{self.target}" if self.kind in on_device else ""
        who = f"n{self.target}" if self.kind == "server" else who
        return " ".join(str(p) for p in (self.kind, who, self.value) if p != "")


@dataclass
class RunReport:
    """What one run did and found: ``problems`` empty when every check held."""

    seed: int
    devices: int
    schedule: list[Step]
    problems: list[str] = field(default_factory=list)
    seconds: float = 0.0
    converge_s: float | None = None
    acked: int = 0
    kills: int = 0
    failed_rounds: int = 0
    history: str = ""

    @property
    def passed(self) -> bool:
        return not self.problems

    def text(self) -> str:
        """The seed, schedule, problems and per-device history, for a failed run."""
        lines = [f"seed {self.seed}: {self.devices} devices, {len(self.schedule)} steps"]
        lines += [f"  {i:3d} {s}" for i, s in enumerate(self.schedule)]
        lines += [f"problem: {p}" for p in self.problems]
        return "\n".join([*lines, self.history])


def schedule(rng: random.Random, devices: int, place: Place, steps: int) -> list[Step]:
    """A random schedule of ``steps`` steps (the crashed daemons' restarts come later in it,
    or at the heal)."""
    out: list[Step] = []
    down: set[int] = set()
    servers = len(place.ports)
    while len(out) < steps:
        roll, d = rng.random(), rng.randrange(devices)
        if roll < 0.35:
            big = rng.random() < 0.1  # more than a batch: kills land mid-import too
            kind = "blobs" if big and rng.random() < 0.5 else "emit"
            out.append(Step(kind, d, rng.randint(1500, 4500) if big else rng.randint(1, 25)))
            if rng.random() < 0.25 and not down:
                victim = d if rng.random() < 0.5 else rng.randrange(devices)
                out.append(Step("crash", victim, rng.randint(0, 900)))
                down.add(victim)
        elif roll < 0.5:
            out.append(Step("link", d, rng.choice(LINK_MODES)))
        elif roll < 0.57:
            out.append(Step("cut", d, rng.choice([0, 200, 2000, 20000])))
        elif roll < 0.67:
            out.append(Step("server", rng.randrange(servers), rng.choice(place.faults)))
        elif roll < 0.74 and down:
            back = min(down)
            down.discard(back)
            out.append(Step("restart", back))
        elif roll < 0.8:
            out.append(Step("replay", 0, rng.randint(1, 4)))
        else:
            out.append(Step("sleep", 0, rng.randint(100, 1500)))
    return out


class Runner:
    """Performs steps on a run's devices and servers."""

    def __init__(self, devices: list[Device], place: Place, rng: random.Random) -> None:
        from nerve.sync.ops import load_group

        self.devices, self.place, self.rng = devices, place, rng
        self.group = load_group(devices[0].ws)

    def perform(self, step: Step) -> None:
        device = self.devices[step.target]
        if step.kind in ("emit", "blobs"):
            blob = 600 if step.kind == "blobs" else 0
            device.emit(int(step.value), f"{device.name} {self.rng.getrandbits(32):08x}", blob)
        elif step.kind == "link":
            for link in device.links:
                link.set(str(step.value))
        elif step.kind == "cut":
            for link in device.links:
                link.cut(int(step.value))
        elif step.kind == "server":
            self.place.fault(step.target, str(step.value))
        elif step.kind == "crash":
            time.sleep(int(step.value) / 1000)
            device.kill()
        elif step.kind == "restart" and device.proc is None:
            device.start()
        elif step.kind == "replay":
            self.place.replay(self.group, int(step.value), self.rng)
        elif step.kind == "sleep":
            time.sleep(int(step.value) / 1000)

    def heal(self) -> None:
        for device in self.devices:
            for link in device.links:
                link.set("ok")
        self.place.heal()
        down = [d for d in self.devices if d.proc is None]
        _each(Device.start, down)


def run(
    seed: int,
    folder: Path,
    place_of: PlaceFactory,
    *,
    devices: tuple[int, int] = (3, 5),
    steps: int = 40,
    heal_s: float = 120.0,
) -> RunReport:
    """One run (see the module docstring); a step or check that raises is a problem of the
    run, reported with the rest."""
    rng = random.Random(seed)
    report = RunReport(seed, rng.randint(*devices), [])
    started = time.monotonic()
    spaces: list[Device] = []
    try:
        _run(report, rng, spaces, folder, place_of, steps, heal_s)
    except Exception as exc:
        report.problems.append(f"the run raised {exc!r}")
    if report.problems:
        report.history = history(spaces)
    report.seconds = time.monotonic() - started
    return report


def _run(
    report: RunReport,
    rng: random.Random,
    spaces: list[Device],
    folder: Path,
    place_of: PlaceFactory,
    steps: int,
    heal_s: float,
) -> None:
    """The run's body: its devices are put in ``spaces`` as they are made."""
    count = report.devices
    with ExitStack() as stack:
        place = stack.enter_context(place_of(folder, report.seed))
        links = stack.enter_context(proxies())
        skews = [rng.randint(-SKEW_MS, SKEW_MS) for _ in range(count)]
        spaces += [new_device(folder, i, skews[i], place, links) for i in range(count)]
        report.schedule = schedule(rng, count, place, steps)
        stack.callback(_each, Device.stop, spaces)
        join_group(spaces, place)
        _each(Device.start, spaces)
        runner = Runner(spaces, place, rng)
        for step in report.schedule:
            runner.perform(step)
        runner.heal()
        report.converge_s = converge(spaces, heal_s)
        report.acked = sum(len(d.acked) for d in spaces)
        report.kills = sum(d.kills for d in spaces)
        report.failed_rounds = sum(d.failed_rounds() for d in spaces)
        if report.converge_s is None:
            report.problems.append(f"no common shared digest within {heal_s:.0f} s")
        tries = 1 if report.converge_s is None else 20
        report.problems += check_status(spaces, tries) + check_ids(spaces)
        _each(Device.stop, spaces)
        report.problems += check_verify(spaces)


def _each(work: Callable[[Device], object], devices: list[Device]) -> None:
    """``work`` on every device side by side (daemons start in parallel)."""
    if devices:
        with ThreadPoolExecutor(len(devices)) as pool:
            list(pool.map(work, devices))


def digests(devices: list[Device]) -> list[tuple[str, int]]:
    """Each device's shared digest and event count, computed from its logs here."""
    from nerve.sync.ops import engine_for, load_group

    out = []
    for device in devices:
        found = engine_for(device.ws, load_group(device.ws)).digest()
        out.append((found.digest, found.events))
    return out


def converge(devices: list[Device], bound_s: float) -> float | None:
    """Seconds until every device holds the same shared digest over at least every
    acknowledged event; None if that did not happen within ``bound_s``."""
    started = time.monotonic()
    acked = sum(len(d.acked) for d in devices)
    while time.monotonic() - started < bound_s:
        with contextlib.suppress(Exception):  # a log read mid-seal: look again
            found = set(digests(devices))
            if len(found) == 1 and next(iter(found))[1] >= acked:
                return round(time.monotonic() - started, 2)
        time.sleep(0.5)
    return None


def check_status(devices: list[Device], tries: int = 20) -> list[str]:
    """``nerve sync status --json`` on every device: in sync, every device listed, one
    digest (status boxes trail a round, so it is asked again for a while)."""
    from tests.conftest import run_cli

    problems: list[str] = []
    for _ in range(tries):
        problems, seen = [], set()
        for device in devices:
            out = run_cli(
                "--workspace", str(device.ws.root), "sync", "status", "--json", check=False
            )
            if out.returncode:
                problems.append(f"{device.name}: sync status exited {out.returncode}: {out.stderr}")
                continue
            found = json.loads(out.stdout)
            seen |= {d["digest"] for d in found["devices"]}
            if not found["in_sync"] or len(found["devices"]) != len(devices):
                problems.append(f"{device.name}: sync status says {_said(found)}")
        if len(seen) > 1:
            problems.append(f"devices report {len(seen)} digests: {sorted(seen)}")
        if not problems:
            return []
        time.sleep(1)
    return problems


def _said(status: dict[str, Any]) -> str:
    """A status in one line: each device's events, lag and digest's head."""
    each = [
        f"{d['node']} {d['events']} ({d['behind']} behind, {d['digest'][:8]})"
        for d in status["devices"]
    ]
    return f"in_sync {status['in_sync']}: " + ", ".join(each)


def held_ids(device: Device) -> Counter[bytes]:
    """How many times each shared id is held by ``device``: its own events and its peer logs."""
    from nerve.log.reader import snapshot, table_since

    ws = device.ws
    own = table_since(snapshot(ws.log_root), columns=["id", "node"]).to_pylist()
    held = Counter(row["id"] for row in own if row["node"] == ws.node)
    for root in sorted((ws.data / "sync").glob("peers/*/log")):
        held.update(table_since(snapshot(root), columns=["id"]).column("id").to_pylist())
    return held


def check_ids(devices: list[Device]) -> list[str]:
    """Every acknowledged event is held exactly once by every device; nothing twice."""
    acked = [i for d in devices for i in d.acked]
    problems = []
    for device in devices:
        held = held_ids(device)
        missing = [i for i in acked if held[i] == 0]
        twice = [i for i, n in held.items() if n > 1]
        if missing:
            problems.append(f"{device.name}: {len(missing)} acknowledged events missing")
        if twice:
            problems.append(f"{device.name}: {len(twice)} events held more than once")
    return problems


def check_verify(devices: list[Device]) -> list[str]:
    """``nerve replay --verify`` on every device (daemons stopped) and every peer log."""
    from nerve.log.verify import verify
    from tests.conftest import run_cli

    problems = []
    for device in devices:
        out = run_cli("--workspace", str(device.ws.root), "replay", "--verify", check=False)
        if out.returncode or "verify   ok" not in out.stdout:
            problems.append(f"{device.name}: replay --verify: {out.stdout}{out.stderr}")
        for root in sorted((device.ws.data / "sync").glob("peers/*/log")):
            found = verify(root)
            if found.problems:
                problems.append(f"{device.name}: peer log {root.parent.name}: {found.problems}")
    return problems


def history(devices: list[Device]) -> str:
    """Per device: skew, kills, emits acknowledged and failed, what it holds of each node,
    its sync state, and the daemon log's last sync lines."""
    lines = []
    for device in devices:
        counts = Counter[str]()
        with contextlib.suppress(Exception):
            counts = _per_node(device)
        state = device.ws.data / "sync" / "state.json"
        lines.append(
            f"{device.name}: skew {device.skew_ms} ms, {device.kills} kills, "
            f"{len(device.acked)} acked, {device.failed_emits} emits failed, "
            f"holds {dict(sorted(counts.items()))}, "
            f"state {state.read_text() if state.exists() else '-'}"
        )
        lines += [f"    {line}" for line in device.log_tail().splitlines()]
    return "\n".join(lines)


def _per_node(device: Device) -> Counter[str]:
    from nerve.log.reader import snapshot, table_since

    ws = device.ws
    own = table_since(snapshot(ws.log_root), columns=["node"]).column("node").to_pylist()
    counts = Counter(n for n in own if n == ws.node)
    for root in (ws.data / "sync").glob("peers/*/log"):
        counts.update(table_since(snapshot(root), columns=["node"]).column("node").to_pylist())
    return counts


@contextlib.contextmanager
def s3_places(server: object) -> Iterator[PlaceFactory]:
    """Places on one SeaweedFS server, a fresh prefix per run."""
    from tests.helpers.partition import S3Place

    @contextlib.contextmanager
    def place(folder: Path, seed: int) -> Iterator[Place]:
        found = S3Place(server, f"run-{seed}-{folder.name}")
        try:
            yield found
        finally:
            found.heal()

    yield place
