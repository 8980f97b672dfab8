"""Energy used since the previous compute, in integer microjoules, graded honestly; and battery.

Source class ``thermal_power``, trust ``FirstParty``. From the second compute on, one
observation per CPU package RAPL zone (``<powercap_root>/intel-rapl:N``; sub-zones such as
``core`` are inside their package and are not added again), or one for the domain ``cpu``
when no zone can be used::

    {"domain", "provenance", "estimated_uj", "measured_uj" (HwShunt only), "reason", "interval_ms"}

Sense v0.1 §7: a counter is graded ``HwShunt`` only while it is demonstrably live. Here that
means: in the last ``live_window`` (5) samples it advanced at least ``live_min_advances`` (4)
times, the samples cover at least ``live_min_ms`` (300) ms, and the CPUs did at least
``live_min_busy_ms`` (10) ms of work meanwhile; and the interval graded is one in which it
advanced (a counter that stood still over an interval measured nothing, whatever the window
says, so that interval is never ``HwShunt`` with 0 µJ). Otherwise the figure comes from the
estimator (CPU busy time since the previous compute x ``estimate_watts_per_core``), provenance
``Estimator``, no ``measured_uj``, and ``reason`` says why. ``estimated_uj`` is always
present; a package's share of the estimate is the CPU estimate split evenly over packages.
Wraparound is undone with ``max_energy_range_uj``; a counter that goes backwards without a
known range is a reset, which counts as "did not advance".

Where no zone can be used, the estimate is a function of CPU busy time alone: it is sent
only when its mean power moved by a tenth (at least 1 W) since the one last sent, or
``keyframe_s`` passed; the intervals held meanwhile are added to the next one sent, so the
observations still cover every interval and their energies add up to the whole.

Battery, when the host has one: ``{"percent", "plugged", "secs_left"}``.

Options: ``powercap_root`` (default ``/sys/class/powercap``), ``estimate_watts_per_core``
(10), ``live_window`` (5), ``live_min_advances`` (4), ``live_min_ms`` (300),
``live_min_busy_ms`` (10), ``keyframe_s`` (300; 0 sends every estimate).
"""

from __future__ import annotations

import os
import re
import time
from pathlib import Path
from typing import Any, NamedTuple

import psutil

from nerve.contract import Observation, Result, SenseContext
from nerve.events import SourceClass, Trust
from nerve.machine.deadband import Band, keyframe_ns

initial_state: dict[str, Any] = {
    "boot": None,
    "t_ns": None,
    "busy_us": None,
    "zones": {},
    "reason": None,
    "battery": None,
    "sent": None,
    "held": None,
}
# The counters to take the next difference from: stored every 10 min and at stop, not on
# every compute (a daemon that did not stop cleanly starts a new baseline).
state_records = "checkpoints"

DEFAULT_POWERCAP_ROOT = "/sys/class/powercap"
_PACKAGE_ZONE = re.compile(r"intel-rapl:\d+")
_BUSY_FIELDS = ("user", "nice", "system", "irq", "softirq")  # not idle, iowait, steal, guest
_ESTIMATE_BAND = Band(1000, 0.1)  # mW
_KEYFRAME_S = 300


class _Options(NamedTuple):
    root: Path
    watts_per_core: float
    window: int
    min_advances: int
    min_ms: int
    min_busy_ms: int
    keyframe_ns: int


class _Interval(NamedTuple):
    ms: int
    busy_ms: int
    estimated_uj: int


def compute(state: dict[str, Any], ctx: SenseContext) -> Result:
    opts = _options(ctx)
    now, busy_us, boot = time.monotonic_ns(), _cpu_busy_us(), round(float(psutil.boot_time()))
    interval = _interval(state, now, busy_us, boot, opts)
    zones, reason = _sample_zones(opts, state.get("zones") if interval else None, interval)
    sent, held = None, None  # a new baseline (or counters in use) starts afresh
    if interval is not None and not zones:
        interval, sent, held = _estimate_news(interval, state, now, opts)
    observations = _energy_observations(zones, reason, interval)
    battery, battery_note = _battery()
    if battery is not None:
        observations.append(_battery_observation(battery))
    new_state = {"boot": boot, "t_ns": now, "busy_us": busy_us, "zones": zones,
                 "reason": reason, "battery": battery or battery_note,
                 "sent": sent, "held": held}  # fmt: skip
    return Result(state=new_state, observations=observations)


def _estimate_news(
    interval: _Interval, state: dict[str, Any], now: int, opts: _Options
) -> tuple[_Interval | None, Any, list[int] | None]:
    """The estimate to send (None: held), the last sent ``{at_ns, mw}`` and the held span.

    Held intervals are summed into the next one sent, so no energy goes unreported."""
    held, sent = state.get("held"), state.get("sent")
    if isinstance(held, list) and len(held) == 3 and all(isinstance(v, int) for v in held):
        span = _Interval(*(a + b for a, b in zip(interval, held, strict=True)))
    else:
        span = interval
    mw = interval.estimated_uj // max(interval.ms, 1)
    due = (
        not isinstance(sent, dict)
        or not isinstance(sent.get("at_ns"), int)
        or not isinstance(sent.get("mw"), int)
        or now - sent["at_ns"] >= opts.keyframe_ns
        or _ESTIMATE_BAND.moved(sent["mw"], mw)
    )
    if due:
        return span, {"at_ns": now, "mw": mw}, None
    return None, sent, list(span)


def _options(ctx: SenseContext) -> _Options:
    root = ctx.options.get("powercap_root", DEFAULT_POWERCAP_ROOT)
    if not isinstance(root, str) or not root:
        raise ValueError(f"senses.{ctx.name}.options.powercap_root must be a path, got {root!r}")
    return _Options(
        root=Path(root),
        watts_per_core=_number(ctx, "estimate_watts_per_core", 10),
        window=max(1, int(_number(ctx, "live_window", 5))),
        min_advances=int(_number(ctx, "live_min_advances", 4)),
        min_ms=int(_number(ctx, "live_min_ms", 300)),
        min_busy_ms=int(_number(ctx, "live_min_busy_ms", 10)),
        keyframe_ns=keyframe_ns(ctx.options, ctx.name, _KEYFRAME_S),
    )


def _number(ctx: SenseContext, key: str, default: float) -> float:
    value = ctx.options.get(key, default)
    if isinstance(value, bool) or not isinstance(value, int | float) or value < 0:
        raise ValueError(f"senses.{ctx.name}.options.{key} must be a number >= 0, got {value!r}")
    return float(value)


def _cpu_busy_us() -> int:
    """Microseconds all CPUs together spent doing work since boot."""
    times = psutil.cpu_times()
    return round(sum(float(getattr(times, name, 0.0)) for name in _BUSY_FIELDS) * 1_000_000)


def _interval(
    state: dict[str, Any], now: int, busy_us: int, boot: int, opts: _Options
) -> _Interval | None:
    """The span since the previous compute, or None on the first compute or after a reboot."""
    then, busy_then = state.get("t_ns"), state.get("busy_us")
    if (
        not _same_boot(state.get("boot"), boot)
        or not isinstance(then, int)
        or not isinstance(busy_then, int)
    ):
        return None
    if now <= then or busy_us < busy_then:
        return None
    busy = busy_us - busy_then
    return _Interval((now - then) // 1_000_000, busy // 1000, round(busy * opts.watts_per_core))


def _sample_zones(
    opts: _Options, previous: Any, interval: _Interval | None
) -> tuple[dict[str, Any], str | None]:
    """Each package zone's new entry, or no zones and the reason none can be used."""
    found = _package_zones(opts.root)
    if isinstance(found, str):
        return {}, found
    previous = previous if isinstance(previous, dict) else {}
    zones = {name: _sample_zone(path, previous.get(name), interval, opts) for name, path in found}
    return zones, None


def _package_zones(root: Path) -> list[tuple[str, Path]] | str:
    """Top-level zones whose ``name`` is ``package-N``; ``psys`` and the like cover more."""
    try:
        names = sorted(n for n in os.listdir(root) if _PACKAGE_ZONE.fullmatch(n))
    except FileNotFoundError:
        return "no powercap counter"
    except OSError as exc:
        return f"no powercap counter: {root} unreadable: {exc.strerror or exc}"
    zones = [(n, root / n) for n in names if _read_domain(root / n).startswith("package")]
    return zones or "no powercap counter"


def _read_int(path: Path) -> int | str:
    """The integer in a sysfs file, or why it could not be read."""
    try:
        return int(path.read_text().strip())
    except PermissionError:
        return "permission denied"
    except FileNotFoundError:
        return "missing"
    except ValueError:
        return "not an integer"
    except OSError as exc:
        return exc.strerror or str(exc)


def _sample_zone(
    path: Path, previous: Any, interval: _Interval | None, opts: _Options
) -> dict[str, Any]:
    domain = _read_domain(path)
    energy, max_uj = _read_int(path / "energy_uj"), _read_int(path / "max_energy_range_uj")
    entry: dict[str, Any] = {"domain": domain, "last_uj": None, "max_uj": None,
                             "history": [], "delta_uj": None}  # fmt: skip
    if isinstance(energy, str):
        return {**entry, "reason": f"counter unreadable: {energy}"}
    entry.update(last_uj=energy, max_uj=max_uj if isinstance(max_uj, int) else None)
    previous = previous if isinstance(previous, dict) else {}
    if interval is None or not isinstance(previous.get("last_uj"), int):
        return {**entry, "reason": "counter not live: no previous sample"}
    delta = _delta(previous["last_uj"], energy, entry["max_uj"])
    if delta is None:
        return {**entry, "reason": "counter not live: went backwards with no known range (reset)"}
    sample = [1 if delta else 0, interval.ms, interval.busy_ms]
    history = [*previous.get("history", []), sample][-opts.window :]
    return {**entry, "history": history, "delta_uj": delta, "reason": _liveness(history, opts)}


def _read_domain(path: Path) -> str:
    try:
        return path.joinpath("name").read_text().strip() or path.name
    except OSError:
        return path.name


def _delta(previous: int, current: int, max_uj: int | None) -> int | None:
    """Microjoules between two readings, undoing one wraparound; None for a reset."""
    if current >= previous:
        return current - previous
    if max_uj is None or previous > max_uj:
        return None
    return max_uj - previous + current


def _liveness(history: list[list[int]], opts: _Options) -> str:
    """``counter live: ...`` or ``counter not live: ...`` for the samples in the window."""
    advanced = sum(s[0] for s in history)
    span_ms = sum(s[1] for s in history)
    busy_ms = sum(s[2] for s in history)
    count = f"advanced in {advanced} of last {len(history)} samples"
    if len(history) < opts.window:
        return f"counter not live: {count}, needs {opts.window}"
    if advanced < opts.min_advances:
        return f"counter not live: {count}"
    if span_ms < opts.min_ms:
        return f"counter not live: {count} over {span_ms} ms, needs {opts.min_ms} ms"
    if busy_ms < opts.min_busy_ms:
        return f"counter not live: {count} but CPUs did only {busy_ms} ms of work"
    if not history[-1][0]:  # a live window, but 0 µJ over this interval is no measurement
        return (
            f"counter not live: did not advance this interval while the CPUs did "
            f"{history[-1][2]} ms of work ({count})"
        )
    return f"counter live: {count} over {span_ms} ms"


def _energy_observations(
    zones: dict[str, Any], reason: str | None, interval: _Interval | None
) -> list[Observation]:
    if interval is None:
        return []
    if not zones:
        return [_energy_observation("cpu", interval, None, reason or "no powercap counter")]
    shares = _split(interval.estimated_uj, len(zones))
    out = []
    for share, entry in zip(shares, zones.values(), strict=True):
        live = entry["reason"].startswith("counter live")
        measured = entry["delta_uj"] if live else None
        out.append(_energy_observation(entry["domain"], interval._replace(estimated_uj=share),
                                       measured, entry["reason"]))  # fmt: skip
    return out


def _split(total: int, parts: int) -> list[int]:
    """``total`` in ``parts`` integer shares that add up to it exactly."""
    base, extra = divmod(total, parts)
    return [base + (1 if i < extra else 0) for i in range(parts)]


def _energy_observation(
    domain: str, interval: _Interval, measured_uj: int | None, reason: str
) -> Observation:
    payload: dict[str, Any] = {
        "domain": domain,
        "provenance": "Estimator" if measured_uj is None else "HwShunt",
        "estimated_uj": interval.estimated_uj,
        "reason": reason,
        "interval_ms": interval.ms,
    }
    if measured_uj is None:
        line = f"energy {domain} ~{interval.estimated_uj / 1e6:.3f} J estimated ({reason})"
    else:
        payload["measured_uj"] = measured_uj
        line = f"energy {domain} {measured_uj / 1e6:.3f} J measured (HwShunt)"
    return _observation(line, payload)


def _battery() -> tuple[dict[str, Any] | None, str | None]:
    """Battery figures, or None and why there are none."""
    try:
        battery = psutil.sensors_battery()
    except (AttributeError, NotImplementedError, OSError, RuntimeError) as exc:
        return None, f"battery unavailable: {exc}"
    if battery is None:
        return None, "no battery"
    secs = battery.secsleft
    known = isinstance(secs, int | float) and secs >= 0
    payload = {
        "percent": round(float(battery.percent), 1),
        "plugged": None if battery.power_plugged is None else bool(battery.power_plugged),
        "secs_left": int(secs) if known else None,
    }
    return payload, None


def _battery_observation(battery: dict[str, Any]) -> Observation:
    state = {True: "plugged in", False: "on battery", None: "power source unknown"}[
        battery["plugged"]
    ]
    line = f"battery {battery['percent']:.0f}% {state}"
    if battery["secs_left"] is not None:
        hours, minutes = divmod(battery["secs_left"] // 60, 60)
        line += f" ({hours}h{minutes:02d}m left)"
    return _observation(line, battery)


def _observation(line: str, payload: dict[str, Any]) -> Observation:
    return Observation(
        source=SourceClass.THERMAL_POWER,
        line=line,
        payload=payload,
        trust=Trust.FIRST_PARTY,
        valid_time_ns=time.time_ns(),
    )


def _same_boot(previous: Any, boot: int) -> bool:
    """Whether ``previous`` names this boot (boot time can jitter by a second on some hosts)."""
    return isinstance(previous, int) and abs(previous - boot) <= 2
