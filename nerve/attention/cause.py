"""What a decision is about, in words: what happened and where.

Two halves. :class:`Witness` runs beside the attender: it reads the facts of each
observation's payload (a port and the process holding it, the busiest processes, a disk's
size, a command and its failure streak) and keeps the few the next decision may need (the
newest listening port opened, the busiest process by CPU and by memory, recent readings for a
rate). When a highlight is decided, :meth:`Witness.facts` gives the facts of that decision,
stored in the decision's ``cause`` field. :func:`cause_of` turns a stored decision into one
line ("a new listening port 8080 on 127.0.0.1, opened by python3 [4242]", "/ fills in ~3 h at
80 MiB/5 min"); :func:`nerve.attention.reason.reason_of` carries it, so the notification,
``audit show``, the UI's decision page and MCP ``highlights`` say the same words.

The facts are not compared by ``attend --recompute`` and not sealed by the chain: they say what
the observations held, and the gate never reads them. They start afresh when the daemon
starts (a rate needs two readings seen since).
"""

from __future__ import annotations

import json
import re
from collections import deque
from collections.abc import Mapping
from typing import Any

_VALUE_PREFIX = "value:"  # nerve.attention.values.VALUE_PREFIX, without its import
_RATE = "per_min"  # nerve.attention.values.RATE: a sense's observations in the last minute
_SERIES = 16  # readings kept per memory/disk series, for its rate
_MIB = 1024 * 1024
_NS_PER_S = 1_000_000_000
_KEYS = ("event", "port", "address", "pid", "name", "user", "command", "exit", "path",
         "domain", "provenance", "total_bytes", "free_bytes", "available_bytes")  # fmt: skip
_SCALAR = (str, int, float)  # a tuple, not ``str | int | float``: built once, not per key
_TOPS = (("cpu", "top_cpu"), ("memory", "top_memory"))  # what a fact of a busiest process is
_BY_MEMORY = ("used_mib", "top_rss_bytes")  # readings whose cause is the largest process
_HINTS = re.compile(rb'"(?:readings|event|provenance|command)"')


def payload_json(payload: bytes | None) -> dict[str, Any] | None:
    """A stored payload as a JSON object, when it may hold readings or facts; else None."""
    if not payload or payload[:1] != b"{" or _HINTS.search(payload) is None:
        return None
    try:
        value = json.loads(payload.decode("utf-8"))
    except ValueError:  # UnicodeDecodeError is one
        return None
    return value if isinstance(value, dict) else None


def facts_of(payload: Mapping[str, Any] | None) -> dict[str, Any]:
    """The facts of one observation's payload a cause may name."""
    if not payload:
        return {}
    out = {k: payload[k] for k in _KEYS if k in payload and isinstance(payload[k], _SCALAR)}
    if isinstance(out.get("command"), str):
        out["command"] = out["command"][:120]
    readings = payload.get("readings")
    if isinstance(readings, dict) and isinstance(readings.get("failure_streak"), int):
        out["failure_streak"] = readings["failure_streak"]
    for key in ("cpu", "memory"):
        head = _head(payload.get(key))
        if head is not None:
            out[f"top_{key}"] = head
    return out


def _head(rows: Any) -> dict[str, Any] | None:
    """The first process of a ``top`` list: name, pid and its share or size."""
    if not isinstance(rows, list) or not rows or not isinstance(rows[0], dict):
        return None
    keep = ("name", "pid", "cpu_permille", "rss_bytes")
    return {k: rows[0][k] for k in keep if isinstance(rows[0].get(k), (str, int))}


def is_estimate(facts: Mapping[str, Any]) -> bool:
    """An estimate of energy (the power sense's ``Estimator``): nerve's arithmetic on CPU
    time, not an observation of the world; attention does not attend to it."""
    return facts.get("provenance") == "Estimator"


class Witness:
    """The facts recent observations held, for the causes of the next decisions."""

    def __init__(self) -> None:
        self.top: dict[str, dict[str, Any]] = {}  # "cpu" / "memory" -> busiest process
        self.port: dict[str, Any] | None = None  # the newest port opened
        self.sizes: dict[str, dict[str, Any]] = {}  # sense -> its last payload's sizes
        self.series: dict[str, deque[tuple[int, int]]] = {}

    def see(
        self, subject: str, facts: Mapping[str, Any], readings: Mapping[str, int], t_ns: int
    ) -> None:
        """Take in one observation (in order)."""
        if facts:  # most observations hold none
            for key, name in _TOPS:
                if name in facts:
                    self.top[key] = facts[name]
            if facts.get("event") == "port_opened":
                self.port = dict(facts)
            if "total_bytes" in facts:
                self.sizes[subject] = dict(facts)
        for name, value in readings.items():
            if name == "used_mib" or name.startswith("free_mib:"):
                kept = self.series.setdefault(f"{subject}.{name}", deque(maxlen=_SERIES))
                kept.append((t_ns, value))

    def facts(self, subject: str, facts: Mapping[str, Any], probe: str) -> dict[str, Any]:
        """The facts of a decision on ``probe`` raised by an observation of ``subject``."""
        out: dict[str, Any] = {"sense": subject, **facts}
        reading = probe.removeprefix(_VALUE_PREFIX).split(".", 1)[-1]
        if reading == "listening_ports" and self.port is not None:
            out["opened"] = self.port
        if subject in ("cpu", "processes") and "cpu" in self.top and reading not in _BY_MEMORY:
            out["busiest"] = self.top["cpu"]
        if reading in _BY_MEMORY and "memory" in self.top:
            out["largest"] = self.top["memory"]
        series = self.series.get(f"{subject}.{reading}")
        if series is not None and len(series) >= 2:
            (t0, v0), (t1, v1) = series[0], series[-1]
            if t1 > t0:
                out["rate_mib_per_h"] = (v1 - v0) * 3600 * _NS_PER_S // (t1 - t0)
                out["reading_mib"] = v1
        return out


# -- words --------------------------------------------------------------------------------


def cause_of(decision: Mapping[str, Any]) -> str:
    """What a stored decision is about, in one line: what happened and where."""
    facts = decision.get("cause")
    facts = facts if isinstance(facts, Mapping) else {}
    probe = str(decision.get("probe") or "?")
    line = str(decision.get("source_line") or "")
    reading = probe.removeprefix(_VALUE_PREFIX).split(".", 1)[-1]
    for say in (_port, _command, _cpu, _largest, _memory, _disk):
        words = say(facts, reading)
        if words:
            return words
    sense = facts.get("sense")
    return f"{sense}: {line}" if sense and line else line or probe


def _who(proc: Any) -> str:
    if not isinstance(proc, Mapping) or not proc.get("name"):
        return "an unknown process"
    pid = proc.get("pid")
    return f"{proc['name']} [{pid}]" if pid is not None else str(proc["name"])


def _port(facts: Mapping[str, Any], reading: str) -> str | None:
    sock = facts if facts.get("event") == "port_opened" else facts.get("opened")
    if reading != "listening_ports" and sock is not facts:
        return None
    if not isinstance(sock, Mapping) or sock.get("port") is None:
        return None
    where = f" on {sock['address']}" if sock.get("address") else ""
    return f"a new listening port {sock['port']}{where}, opened by {_who(sock)}"


def _command(facts: Mapping[str, Any], reading: str) -> str | None:
    command = facts.get("command")
    if not isinstance(command, str) or facts.get("sense") != "shell":
        return None
    status = facts.get("exit")
    if not isinstance(status, int) or status == 0:
        return f"the command `{command}`"
    streak = facts.get("failure_streak")
    times = f", {streak} times in a row" if isinstance(streak, int) and streak > 1 else ""
    return f"`{command}` failed (exit {status}){times}"


def _about_cpu(sense: Any, reading: str) -> bool:
    """Whether a reading is about how busy the CPU is: the cpu sense's, but its own rate of
    observations, and the processes sense's busiest share (not its starts and exits a
    minute, nor the largest process's memory)."""
    if sense == "cpu":
        return reading != _RATE
    return sense == "processes" and reading == "top_cpu_permille"


def _cpu(facts: Mapping[str, Any], reading: str) -> str | None:
    busiest = facts.get("busiest")
    if not _about_cpu(facts.get("sense"), reading):
        return None  # nor is a memory reading or a count of processes the busiest's doing
    if not isinstance(busiest, Mapping):
        return None
    share = busiest.get("cpu_permille")
    of_core = f" uses {share / 10:.0f} % of a core" if isinstance(share, int) else " is busiest"
    return f"CPU: {_who(busiest)}{of_core}"


def _largest(facts: Mapping[str, Any], reading: str) -> str | None:
    """The process holding the most memory, for a decision on that reading."""
    largest = facts.get("largest")
    if reading != "top_rss_bytes" or not isinstance(largest, Mapping):
        return None
    size = largest.get("rss_bytes")
    held = f" holds {size // _MIB} MiB" if isinstance(size, int) else " holds the most"
    return f"memory: {_who(largest)}{held}"


def _memory(facts: Mapping[str, Any], reading: str) -> str | None:
    if reading != "used_mib" or facts.get("sense") != "memory":
        return None
    largest = facts.get("largest")
    who = f"; {_who(largest)} holds the most" if isinstance(largest, Mapping) else ""
    rate, now = facts.get("rate_mib_per_h"), facts.get("reading_mib")
    if not isinstance(rate, int) or rate <= 0 or not isinstance(now, int):
        return f"memory in use changed{who}"
    total = facts.get("total_bytes")
    full = ""
    if isinstance(total, int) and total // _MIB > now:
        full = f", full in ~{_span((total // _MIB - now) * 3600 / rate)}"
    return f"memory in use grows {_per_5min(rate)}{who}{full}"


def _disk(facts: Mapping[str, Any], reading: str) -> str | None:
    if not reading.startswith("free_mib:"):
        return None
    path = facts.get("path") or reading.removeprefix("free_mib:")
    rate, free = facts.get("rate_mib_per_h"), facts.get("reading_mib")
    if not isinstance(rate, int) or rate >= 0 or not isinstance(free, int):
        return f"free space on {path} changed"
    return f"{path} fills in ~{_span(free * 3600 / -rate)} at {_per_5min(-rate)}"


def _per_5min(mib_per_h: int) -> str:
    """A rate in MiB an hour shown per 5 minutes: ``80 MiB/5 min``."""
    per = mib_per_h / 12
    return (f"{per:,.0f}" if per >= 10 else f"{per:.1f}".removesuffix(".0")) + " MiB/5 min"


def _span(seconds: float) -> str:
    """``45 min``, ``3 h``, ``2 d``."""
    if seconds < 3600:
        return f"{max(1, round(seconds / 60))} min"
    if seconds < 2 * 86_400:
        return f"{round(seconds / 3600)} h"
    return f"{round(seconds / 86_400)} d"
