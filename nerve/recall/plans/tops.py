"""The processes sense's top samples over a window, folded per process in DuckDB: a 30-day
log holds hundreds of thousands of samples, which Python need not decode one by one."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from nerve.events import SourceClass
from nerve.recall.plans.log import WHOLE, Reader
from nerve.recall.plans.memo import by_segment
from nerve.recall.plans.window import Window

__all__ = ["Folded", "folded_tops"]

_T = "coalesce(valid_time_ns, physical_ns)"


def _parts(parts: tuple[str, ...]) -> str:
    return " UNION ALL ".join(
        f"SELECT id, t, '{part}' AS part, unnest(from_json(json_extract(data, '$.{part}'), "
        f"'[\"JSON\"]')) AS e FROM tops"
        for part in parts
    )


_SQL = """
WITH tops AS (
    SELECT id, {t} AS t, data FROM {rows}
    WHERE kind = 'observation' AND source = ? AND json_extract_string(data, '$.event') = 'top'
), entries AS ({parts}), flat AS (
    SELECT id, t, part, TRY_CAST(e->>'pid' AS BIGINT) AS pid,
        coalesce(TRY_CAST(e->>'start_time' AS BIGINT), 0) AS st, e->>'name' AS name,
        e->>'cmdline' AS cmdline, e->>'user' AS usr,
        coalesce(TRY_CAST(e->>'rss_bytes' AS BIGINT), 0) AS rss,
        coalesce(TRY_CAST(e->>'cpu_permille' AS BIGINT), 0) AS cpu
    FROM entries
)
SELECT pid, st, min(name), min(cmdline), min(usr),
    max(rss), arg_max(id, (rss, -t)), arg_max(t, (rss, -t)),
    max(cpu), arg_max(id, (cpu, -t)), arg_max(t, (cpu, -t)),
    count(DISTINCT id) FILTER (WHERE part <> 'memory'),
    coalesce(sum(cpu) FILTER (WHERE part <> 'memory'), 0), min(t), max(t), arg_min(id, t)
FROM flat WHERE pid IS NOT NULL GROUP BY pid, st ORDER BY pid, st
"""


@dataclass(frozen=True)
class Folded:
    """One process's samples in the window: who it is, its peaks (with the sample that holds
    each: id hex and time), its CPU samples and their sum, its first and last sample."""

    pid: int
    start: int
    name: str
    cmdline: str
    user: str
    peak_rss: int
    rss_at: tuple[str, int]
    peak_cpu: int
    cpu_at: tuple[str, int]
    samples: int
    cpu_sum: int
    first_t: int
    last_t: int
    first_id: str


def _folded(row: tuple[Any, ...]) -> Folded:
    pid, st, name, cmd, user, rss, rss_id, rss_t, cpu, cpu_id, cpu_t, n, total, lo, hi, first = row
    return Folded(
        int(pid), int(st), str(name or "?"), str(cmd or ""), str(user or ""), int(rss),
        (bytes(rss_id).hex(), int(rss_t)), int(cpu), (bytes(cpu_id).hex(), int(cpu_t)),
        int(n), int(total), int(lo), int(hi), bytes(first).hex(),
    )  # fmt: skip


def folded_tops(
    reader: Reader, window: Window | None, parts: tuple[str, ...] = ("cpu", "memory", "over")
) -> list[Folded]:
    """Every process on a top sample's ``parts`` lists in ``window`` (None: the whole log),
    folded."""
    events, args = reader.events(window or WHOLE, [int(SourceClass.PROCESS_TREE)])
    sql = _SQL.format(t=_T, rows=events, parts=_parts(parts))
    each: dict[tuple[int, int], tuple[Any, ...]] = {}
    within = None if window is None else (window.start_ns, window.end_ns)
    for part in by_segment(reader.conn, sql, args, within=within):  # each segment folded once
        for row in part:
            key = (row[0], row[1])
            each[key] = _merged(each[key], row) if key in each else row
    return [_folded(each[key]) for key in sorted(each)]


def _merged(a: tuple[Any, ...], b: tuple[Any, ...]) -> tuple[Any, ...]:
    """One process's folds of two parts of the log, as one fold of both (see ``_SQL``)."""
    rss = max(a[5:8], b[5:8], key=lambda r: (r[0], -r[2]))
    cpu = max(a[8:11], b[8:11], key=lambda r: (r[0], -r[2]))
    first = min((a[13], a[15]), (b[13], b[15]), key=lambda r: r[0])
    return (
        *a[:2], *(min((x for x in (a[i], b[i]) if x is not None), default=None) for i in (2, 3, 4)),
        *rss, *cpu, a[11] + b[11], a[12] + b[12], first[0], max(a[14], b[14]), first[1],
    )  # fmt: skip
