"""Processes: what used the most CPU or memory (the processes sense's top samples), and
which notable ones started."""

from __future__ import annotations

from collections import Counter, defaultdict
from typing import Any

from nerve.events import SourceClass
from nerve.recall.facts.ask import Ask, Row, answer, never, nothing, stands
from nerve.recall.tier0 import Tier0Answer
from nerve.tail.when import Period

__all__ = ["new_processes", "top_cpu", "top_memory"]


_MIB = 1024**2


def _tops(ask: Ask) -> list[Row]:
    return [r for r in ask.rows(SourceClass.PROCESS_TREE) if r.data.get("event") == "top"]


def _described(rows: list[Row]) -> dict[tuple[Any, Any], dict[str, Any]]:
    """Per process, the newest top entry carrying its command line and user (a top sends
    them once per ``top_every_s``, not in every sample)."""
    about: dict[tuple[Any, Any], dict[str, Any]] = {}
    for row in rows:
        for kind in ("cpu", "memory", "over"):
            for entry in row.data.get(kind) or []:
                if isinstance(entry, dict) and "cmdline" in entry:
                    about[(entry.get("pid"), entry.get("start_time"))] = entry
    return about


def _near(ask: Ask) -> list[Row]:
    """The top samples of the 15 minutes up to the question's point (or now)."""
    point = ask.period.start_ns if ask.period is not None else ask.now_ns
    window = Period(point - 900 * 10**9, point, "")
    return [
        r for r in ask.rows(SourceClass.PROCESS_TREE, period=window) if r.data.get("event") == "top"
    ]


def _full(about: dict[tuple[Any, Any], dict[str, Any]], entry: dict[str, Any]) -> dict[str, Any]:
    return {**about.get((entry.get("pid"), entry.get("start_time")), {}), **entry}


def _who(entry: dict[str, Any]) -> str:
    name = str(entry.get("name") or "?")
    cmd = " ".join(str(entry.get("cmdline") or "").split())[:60]
    user = f" ({entry['user']})" if entry.get("user") else ""
    return f"{name} [{entry.get('pid', '?')}]{user}" + (f" `{cmd}`" if cmd and cmd != name else "")


def top_cpu(ask: Ask) -> Tier0Answer:
    if not _tops_ever(ask):
        return _no_tops("top_cpu", "CPU")
    rows = _tops(ask)
    if ask.period is not None and ask.period.point:
        rows = _latest(ask, rows)
    if not rows:
        return nothing(ask, "top_cpu", "process samples")
    total: dict[tuple[Any, Any], int] = defaultdict(int)
    peak: dict[tuple[Any, Any], int] = defaultdict(int)
    last: dict[tuple[Any, Any], tuple[Row, dict[str, Any]]] = {}
    weights = stands(ask, rows)
    for row, weight in zip(rows, weights, strict=True):
        for entry in [*row.data.get("cpu", []), *row.data.get("over", [])]:
            key = (entry.get("pid"), entry.get("start_time"))
            share = int(entry.get("cpu_permille") or 0)
            total[key] += share * weight
            peak[key] = max(peak[key], share)
            last[key] = (row, entry)
    if not total:
        return Tier0Answer(
            "top_cpu",
            f"No process used a noticeable share of CPU {ask.scope()} ({len(rows)} samples).",
            tuple(r.id for r in rows[-1:]),
        )
    ranked = sorted(total, key=lambda k: (-total[k], str(k)))
    about = _described(_near(ask) if ask.period is not None and ask.period.point else rows)
    used = [
        (
            last[k][0],
            f"{_who(_full(about, last[k][1]))}: {total[k] / sum(weights) / 10:.1f}% of a core "
            "on average, "
            f"peak {peak[k] / 10:.1f}%",
        )
        for k in ranked
    ]
    title = f"Most CPU {ask.scope()}, from {len(rows)} samples:"
    return answer("top_cpu", title, used)


def _no_tops(intent: str, what: str) -> Tier0Answer:
    # the sense's first compute is a baseline (a CPU share needs two scans): a log a few
    # seconds old has no sample yet, which is not the same as a log that never will
    return Tier0Answer(
        intent,
        f"No process samples in this log yet, so nothing says what used {what}. The processes "
        "sense sends its first sample one interval (10 s by default) after the daemon starts "
        "(`nerve start` or `nerve dev`); ask again then.",
        (),
    )


def _tops_ever(ask: Ask) -> bool:
    sql = (
        "SELECT 1 FROM events WHERE kind = 'observation' AND source = ? "
        "AND json_extract_string(data, '$.event') = 'top' LIMIT 1"
    )
    return ask.conn.execute(sql, [int(SourceClass.PROCESS_TREE)]).fetchone() is not None


def _latest(ask: Ask, rows: list[Row], memory: bool = False) -> list[Row]:
    """For "now" / "at T": the newest sample at or before the point (within 10 minutes);
    with ``memory``, the newest that carries the memory top (it is sent when it moves)."""
    point = ask.period.start_ns if ask.period is not None else ask.now_ns
    window = Period(point - 600 * 10**9, point, "")
    found = [
        r
        for r in ask.rows(SourceClass.PROCESS_TREE, period=window)
        if r.data.get("event") == "top" and (r.data.get("memory") or not memory)
    ]
    return found[-1:] if found else rows[-1:]


def top_memory(ask: Ask) -> Tier0Answer:
    if not _tops_ever(ask):
        return _no_tops("top_memory", "memory")
    rows = _tops(ask) if ask.period is not None and not ask.period.point else []
    if not rows:
        rows = _latest(ask, [], memory=True)
        if not rows:
            return nothing(ask, "top_memory", "process samples")
        row = rows[0]
        about = _described(_near(ask))
        used = [
            (row, f"{_who(_full(about, e))}: {int(e.get('rss_bytes') or 0) // _MIB} MiB")
            for e in row.data.get("memory", [])
        ]
        return answer("top_memory", f"Largest resident memory at {ask.when(row.t)}:", used)
    peak: dict[tuple[Any, Any], tuple[int, Row, dict[str, Any]]] = {}
    for row in rows:
        for entry in row.data.get("memory", []):
            key, rss = (entry.get("pid"), entry.get("start_time")), int(entry.get("rss_bytes") or 0)
            if key not in peak or rss > peak[key][0]:
                peak[key] = (rss, row, entry)
    ranked = sorted(peak.values(), key=lambda v: (-v[0], v[1].t))
    about = _described(rows)
    used = [
        (row, f"{_who(_full(about, e))}: peak {rss // _MIB} MiB ({ask.when(row.t)})")
        for rss, row, e in ranked
    ]
    return answer("top_memory", f"Most memory {ask.scope()}, from {len(rows)} samples:", used)


def new_processes(ask: Ask) -> Tier0Answer:
    if not ask.ever(SourceClass.PROCESS_TREE):
        return never("new_processes", "processes")
    sampled = list(reversed(ask.rows(SourceClass.PROCESS_TREE)))
    rows = [r for r in sampled if r.data.get("event") == "started"]
    brief = _brief_counts([r for r in sampled if r.data.get("event") == "brief"])
    if not rows and not brief:
        return nothing(ask, "new_processes", "notable process started")
    used = [(r, f"{ask.when(r.t)}  {_who(r.data)} ({r.data.get('why', '?')})") for r in rows]
    last = None
    if brief:
        first, counts = brief
        names = ", ".join(f"{name} ×{n}" for name, n in counts.most_common(6))
        last = (first, f"and short-lived ones, counted but not listed: {names}")
    return answer(
        "new_processes",
        f"{len(rows)} notable process(es) started {ask.scope()}, newest first:",
        used,
        last,
    )


def _brief_counts(rows: list[Row]) -> tuple[Row, Counter[str]] | None:
    """The newest ``brief`` row and the short-lived processes they count together, by name."""
    counts: Counter[str] = Counter()
    for row in rows:
        raw = row.data.get("counts")
        if isinstance(raw, dict):
            counts.update({str(k): v for k, v in raw.items() if isinstance(v, int)})
    return (rows[0], counts) if rows and counts else None
