"""Tier 0 over a period: everyday questions answered by reading the log's senses in a time range.

Where :mod:`nerve.recall.tier0` answers from the envelope (a dozen spans), these intents read
every observation of one source in the question's period (:func:`nerve.tail.when.find_period`:
"in the last 5 minutes", "yesterday", "since 9", "at 15:00"; the whole log when it names
none) and cite the events they used. An event's time is its ``valid_time_ns`` (when the datum
was true: a command's start) or else its HLC time.

=====================  ===========================================  ===========================
intent                 e.g.                                         read from
=====================  ===========================================  ===========================
``failed_commands``    which commands failed today?                 ``shell``, ``exit`` ≠ 0
``slowest_commands``   slowest commands this week                   ``shell``, ``duration_ms``
``commands_in``        what did I run in ~/src/x?                   ``shell``, ``cwd``
``commands``           what did I run since 9?                      ``shell``
``top_cpu``            what used the most CPU in the last hour?     ``processes`` top samples
``top_memory``         what is using memory now?                    ``processes`` top samples
``doing``              what was I doing at 15:00?                   ``app_focus``
``time_per_app``       time per app today                           ``app_focus``
``files_changed``      which files changed in the last 10 minutes?  ``file_change``
``new_processes``      new processes since 9                        ``processes`` starts
``ports``              which ports were opened today?               ``network`` port events
``cpu_usage``          what did cpu do in the last hour?            ``cpu``
``memory_usage``       what is the memory usage?                    ``memory``
``happened``           what happened in the last 10 minutes?        every observation
=====================  ===========================================  ===========================

An intent whose source has never reported in the log says so (answered: it is a fact about
the log); a question none fits returns None, for the envelope's Tier 0 and then the fallback.
"""

from __future__ import annotations

import os
import re
from collections import Counter, defaultdict
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime, tzinfo
from typing import Any

import duckdb

from nerve.events import SourceClass, decode_payload
from nerve.recall.tier0 import Tier0Answer
from nerve.tail.when import Period, find_period

__all__ = ["FACTS", "answer_facts"]

_MAX_ROWS = 50_000
_LIST_MAX = 8
_AROUND_NS = 5 * 60 * 10**9  # "at 15:00": commands and files within five minutes of it
_MIB = 1024**2


@dataclass(frozen=True)
class _Row:
    id: str
    t: int
    subject: str
    line: str
    data: dict[str, Any]


@dataclass(frozen=True)
class _Ask:
    """A question with its period (None: the whole log) and what renders need."""

    conn: duckdb.DuckDBPyConnection
    text: str
    period: Period | None
    now_ns: int
    tz: tzinfo | None

    def rows(
        self, source: int, subject: str | None = None, period: Period | None = None
    ) -> list[_Row]:
        """Observations of ``source`` in the period, oldest first (the newest ``_MAX_ROWS``)."""
        span = period if period is not None else self.period
        where = ["kind = 'observation'", "source = ?"]
        args: list[Any] = [int(source)]
        if subject is not None:
            where.append("subject = ?")
            args.append(subject)
        if span is not None:
            where.append("coalesce(valid_time_ns, physical_ns) BETWEEN ? AND ?")
            args += [span.start_ns, span.end_ns]
        sql = (
            "SELECT id, coalesce(valid_time_ns, physical_ns) AS t, subject, line, payload "
            f"FROM events WHERE {' AND '.join(where)} ORDER BY t DESC, logical DESC "
            f"LIMIT {_MAX_ROWS}"
        )
        out = [_row(r) for r in self.conn.execute(sql, args).fetchall()]
        return out[::-1]

    def ever(self, source: int, subject: str | None = None) -> bool:
        sql = "SELECT 1 FROM events WHERE kind = 'observation' AND source = ?"
        args: list[Any] = [int(source)]
        if subject is not None:
            sql, args = sql + " AND subject = ?", [*args, subject]
        return self.conn.execute(sql + " LIMIT 1", args).fetchone() is not None

    def when(self, ns: int) -> str:
        moment = _local(ns, self.tz)
        if moment.date() == _local(self.now_ns, self.tz).date():
            return moment.strftime("%H:%M:%S")
        return moment.strftime("%Y-%m-%d %H:%M")

    def scope(self) -> str:
        if self.period is None:
            return "in the whole log"
        if self.period.point:
            return f"at {self.when(self.period.start_ns)}"
        return (
            f"{_label(self.period.label)} ({self.when(self.period.start_ns)} to "
            f"{self.when(self.period.end_ns)})"
        )


def _label(label: str) -> str:
    return (
        label
        if label.startswith(("since", "before", "after", "until", "between"))
        else (f"in {label}" if label.startswith("the ") else label)
    )


def _local(ns: int, tz: tzinfo | None) -> datetime:
    moment = datetime.fromtimestamp(ns / 10**9, tz)
    return moment if tz is not None else moment.astimezone()


def _row(raw: tuple[Any, ...]) -> _Row:
    eid, t, subject, line, payload = raw
    data = decode_payload(bytes(payload)) if payload is not None else None
    return _Row(
        bytes(eid).hex(),
        int(t),
        str(subject),
        str(line or ""),
        data if isinstance(data, dict) else {},
    )


def _listing(title: str, lines: list[str]) -> str:
    return title + "\n" + "\n".join(f"- {line}" for line in lines)


def _never(intent: str, what: str) -> Tier0Answer:
    return Tier0Answer(intent, f"Nothing in this log records {what}.", ())


def _none(ask: _Ask, intent: str, what: str) -> Tier0Answer:
    return Tier0Answer(intent, f"No {what} {ask.scope()}.", ())


def _answer(intent: str, title: str, used: list[tuple[_Row, str]]) -> Tier0Answer:
    shown = used[:_LIST_MAX]
    more = f" ({len(used) - len(shown)} more not shown)" if len(used) > len(shown) else ""
    text = _listing(title + more, [line for _, line in shown])
    return Tier0Answer(intent, text, tuple(dict.fromkeys(r.id for r, _ in shown)))


# -- commands ----------------------------------------------------------------------------------


def _hooked(ask: _Ask) -> list[_Row]:
    return [r for r in ask.rows(SourceClass.SHELL) if isinstance(r.data.get("exit"), int)]


def _cmd(row: _Row) -> str:
    text = row.data.get("command")
    return " ".join(str(text).split())[:120] if isinstance(text, str) else row.line


def _seconds(ms: Any) -> str:
    return f"{ms / 1000:.1f} s" if isinstance(ms, int) else "? s"


def _failed_commands(ask: _Ask) -> Tier0Answer:
    if not ask.ever(SourceClass.SHELL):
        return _never("failed_commands", "shell commands")
    rows = _hooked(ask)
    if not rows and not _any_hooked(ask):
        return Tier0Answer(
            "failed_commands",
            "No exit statuses are recorded: only the shell history is read. "
            'Add the shell hook (eval "$(nerve shell-hook bash)") to record them.',
            (),
        )
    failed = [r for r in reversed(rows) if r.data["exit"] != 0]
    if not failed:
        return _none(ask, "failed_commands", "command failed")
    used = [
        (r, f"{ask.when(r.t)}  {_cmd(r)}  → exit {r.data['exit']} in {r.data.get('cwd', '?')}")
        for r in failed
    ]
    return _answer(
        "failed_commands", f"{len(failed)} command(s) failed {ask.scope()}, newest first:", used
    )


def _any_hooked(ask: _Ask) -> bool:
    sql = (
        "SELECT 1 FROM events WHERE kind = 'observation' AND source = ? "
        "AND json_extract_string(data, '$.format') = 'hook' LIMIT 1"
    )
    return ask.conn.execute(sql, [int(SourceClass.SHELL)]).fetchone() is not None


def _slowest_commands(ask: _Ask) -> Tier0Answer:
    if not ask.ever(SourceClass.SHELL):
        return _never("slowest_commands", "shell commands")
    rows = [r for r in _hooked(ask) if isinstance(r.data.get("duration_ms"), int)]
    if not rows:
        return _none(ask, "slowest_commands", "timed commands (from the shell hook)")
    rows.sort(key=lambda r: (-r.data["duration_ms"], -r.t))
    used = [(r, f"{_seconds(r.data['duration_ms'])}  {_cmd(r)}  ({ask.when(r.t)})") for r in rows]
    return _answer("slowest_commands", f"Slowest commands {ask.scope()}:", used)


_FOLDER = re.compile(r"\b(?:in|under|inside)\s+((?:~|\.{1,2})?/[^\s?!,;]*|~)")
_RELATIVE = re.compile(
    r"\b(?:in|under|inside)\s+(?!the\b|last\b|past\b|each\b|which\b|my\b|\d)((?:~|\.{1,2})?/?[\w.-]+(?:/[\w.-]*)*)"
)


def _folder(text: str) -> str | None:
    match = _FOLDER.search(text)
    if match is None:
        return None
    return os.path.normpath(os.path.expanduser(match[1])).rstrip("/") or "/"


def _subpath(text: str) -> str | None:
    """The folder a question about files names (``in src``, ``under ./docs``), or None."""
    match = _RELATIVE.search(text)
    return None if match is None else os.path.normpath(match[1]).removeprefix("./")


def _within(path: str, folder: str) -> bool:
    return path == folder or path.startswith(folder.rstrip("/") + "/")


def _commands_in(ask: _Ask) -> Tier0Answer | None:
    folder = _folder(ask.text)
    if folder is None:
        return None
    if not ask.ever(SourceClass.SHELL):
        return _never("commands_in", "shell commands")
    inside = [
        r for r in reversed(_hooked(ask))
        if (cwd := str(r.data.get("cwd", ""))) == folder or cwd.startswith(folder.rstrip("/") + "/")
    ]  # fmt: skip
    if not inside:
        return _none(ask, "commands_in", f"commands run in {folder} (or below it)")
    used = [
        (r, f"{ask.when(r.t)}  {_cmd(r)}  (exit {r.data['exit']}, {r.data['cwd']})") for r in inside
    ]
    return _answer("commands_in", f"Commands run in {folder} {ask.scope()}, newest first:", used)


def _commands(ask: _Ask) -> Tier0Answer:
    if not ask.ever(SourceClass.SHELL):
        return _never("commands", "shell commands")
    rows = list(reversed(ask.rows(SourceClass.SHELL)))
    if not rows:
        return _none(ask, "commands", "commands")
    used = [(r, f"{ask.when(r.t)}  {_cmd(r)}{_exit(r)}") for r in rows]
    return _answer("commands", f"{len(rows)} command(s) {ask.scope()}, newest first:", used)


def _exit(row: _Row) -> str:
    code = row.data.get("exit")
    return f"  → exit {code}" if isinstance(code, int) and code != 0 else ""


# -- processes ---------------------------------------------------------------------------------


def _tops(ask: _Ask) -> list[_Row]:
    return [r for r in ask.rows(SourceClass.PROCESS_TREE) if r.data.get("event") == "top"]


def _described(rows: list[_Row]) -> dict[tuple[Any, Any], dict[str, Any]]:
    """Per process, the newest top entry carrying its command line and user (a top sends
    them once per ``top_every_s``, not in every sample)."""
    about: dict[tuple[Any, Any], dict[str, Any]] = {}
    for row in rows:
        for kind in ("cpu", "memory", "over"):
            for entry in row.data.get(kind) or []:
                if isinstance(entry, dict) and "cmdline" in entry:
                    about[(entry.get("pid"), entry.get("start_time"))] = entry
    return about


def _near(ask: _Ask) -> list[_Row]:
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


def _top_cpu(ask: _Ask) -> Tier0Answer:
    if not _tops_ever(ask):
        return _no_tops("top_cpu", "CPU")
    rows = _tops(ask)
    if ask.period is not None and ask.period.point:
        rows = _latest(ask, rows)
    if not rows:
        return _none(ask, "top_cpu", "process samples")
    total: dict[tuple[Any, Any], int] = defaultdict(int)
    peak: dict[tuple[Any, Any], int] = defaultdict(int)
    last: dict[tuple[Any, Any], tuple[_Row, dict[str, Any]]] = {}
    weights = _stands(ask, rows)
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
    return _answer("top_cpu", title, used)


_STANDS_MAX_NS = 300 * 10**9  # the sense sends a busy top at least every top_every_s


def _stands(ask: _Ask, rows: list[_Row]) -> list[int]:
    """How long each top sample stands for, in ns: until the next one (the sense sends a top
    when it changed), at most ``_STANDS_MAX_NS``; the last until the period's end or now."""
    end = min(ask.period.end_ns, ask.now_ns) if ask.period is not None else ask.now_ns
    nexts = [r.t for r in rows[1:]] + [max(end, rows[-1].t)]
    return [max(1, min(n - r.t, _STANDS_MAX_NS)) for r, n in zip(rows, nexts, strict=True)]


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


def _tops_ever(ask: _Ask) -> bool:
    sql = (
        "SELECT 1 FROM events WHERE kind = 'observation' AND source = ? "
        "AND json_extract_string(data, '$.event') = 'top' LIMIT 1"
    )
    return ask.conn.execute(sql, [int(SourceClass.PROCESS_TREE)]).fetchone() is not None


def _latest(ask: _Ask, rows: list[_Row], memory: bool = False) -> list[_Row]:
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


def _top_memory(ask: _Ask) -> Tier0Answer:
    if not _tops_ever(ask):
        return _no_tops("top_memory", "memory")
    rows = _tops(ask) if ask.period is not None and not ask.period.point else []
    if not rows:
        rows = _latest(ask, [], memory=True)
        if not rows:
            return _none(ask, "top_memory", "process samples")
        row = rows[0]
        about = _described(_near(ask))
        used = [
            (row, f"{_who(_full(about, e))}: {int(e.get('rss_bytes') or 0) // _MIB} MiB")
            for e in row.data.get("memory", [])
        ]
        return _answer("top_memory", f"Largest resident memory at {ask.when(row.t)}:", used)
    peak: dict[tuple[Any, Any], tuple[int, _Row, dict[str, Any]]] = {}
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
    return _answer("top_memory", f"Most memory {ask.scope()}, from {len(rows)} samples:", used)


def _new_processes(ask: _Ask) -> Tier0Answer:
    if not ask.ever(SourceClass.PROCESS_TREE):
        return _never("new_processes", "processes")
    sampled = list(reversed(ask.rows(SourceClass.PROCESS_TREE)))
    rows = [r for r in sampled if r.data.get("event") == "started"]
    brief = _brief_counts([r for r in sampled if r.data.get("event") == "brief"])
    if not rows and not brief:
        return _none(ask, "new_processes", "notable process started")
    used = [(r, f"{ask.when(r.t)}  {_who(r.data)} ({r.data.get('why', '?')})") for r in rows]
    if brief:
        first, counts = brief
        names = ", ".join(f"{name} ×{n}" for name, n in counts.most_common(6))
        used.append((first, f"and short-lived ones, counted but not listed: {names}"))
    return _answer(
        "new_processes",
        f"{len(rows)} notable process(es) started {ask.scope()}, newest first:",
        used,
    )


def _brief_counts(rows: list[_Row]) -> tuple[_Row, Counter[str]] | None:
    """The newest ``brief`` row and the short-lived processes they count together, by name."""
    counts: Counter[str] = Counter()
    for row in rows:
        raw = row.data.get("counts")
        if isinstance(raw, dict):
            counts.update({str(k): v for k, v in raw.items() if isinstance(v, int)})
    return (rows[0], counts) if rows and counts else None


# -- ports ---------------------------------------------------------------------------------------

_PORT_EVENTS = ("port_opened", "port_closed")


def _ports(ask: _Ask) -> Tier0Answer:
    """Listening ports opened (or, when the question says so, closed) in the period."""
    if not _ports_ever(ask):
        return _never("ports", "listening ports (the network sense reports them)")
    if re.search(_any("open", "listening", "listens?"), ask.text) and not re.search(
        _any("opened", "closed", "close", "stopped", "new"), ask.text
    ):
        return _ports_open(ask)
    event = (
        "port_closed" if re.search(_any("closed", "close", "stopped"), ask.text) else "port_opened"
    )
    rows = [r for r in reversed(ask.rows(SourceClass.NETWORK)) if r.data.get("event") == event]
    verb = event.removeprefix("port_")
    if not rows:
        return _none(ask, "ports", f"listening port {verb}")
    used = [(r, f"{ask.when(r.t)}  {_socket(r.data)} {verb} {_holder(r.data)}") for r in rows]
    return _answer(
        "ports", f"{len(rows)} listening port(s) {verb} {ask.scope()}, newest first:", used
    )


def _ports_open(ask: _Ask) -> Tier0Answer:
    """The sockets whose latest event up to the period's end (or now) is an opening."""
    until = ask.period.end_ns if ask.period is not None else ask.now_ns
    latest: dict[tuple[Any, Any], _Row] = {}
    for row in ask.rows(SourceClass.NETWORK, period=Period(0, until, "")):
        if row.data.get("event") in _PORT_EVENTS:
            latest[(row.data.get("address"), row.data.get("port"))] = row
    still = [r for r in reversed(latest.values()) if r.data["event"] == "port_opened"]
    at = ask.when(until)
    if not still:
        text = f"No port opened since the network sense began is still listening at {at}."
        return Tier0Answer("ports", text, ())
    used = [(r, f"{_socket(r.data)} {_holder(r.data)}, since {ask.when(r.t)}") for r in still]
    title = (
        f"Listening at {at}, of the ports opened since the network sense began "
        "(those listening before it are not known):"
    )
    return _answer("ports", title, used)


def _ports_ever(ask: _Ask) -> bool:
    sql = (
        "SELECT 1 FROM events WHERE kind = 'observation' AND source = ? "
        "AND json_extract_string(data, '$.event') IN ('port_opened', 'port_closed') LIMIT 1"
    )
    return ask.conn.execute(sql, [int(SourceClass.NETWORK)]).fetchone() is not None


def _socket(data: dict[str, Any]) -> str:
    ip = str(data.get("address") or "?")
    return f"{data.get('proto', 'tcp')} {f'[{ip}]' if ':' in ip else ip}:{data.get('port', '?')}"


def _holder(data: dict[str, Any]) -> str:
    if not data.get("name"):
        return "(by a process the host did not name)"
    user = f", user {data['user']}" if data.get("user") else ""
    return f"by {data['name']} [{data.get('pid', '?')}]{user}"


# -- focus ---------------------------------------------------------------------------------------


def _spells(ask: _Ask, period: Period | None) -> list[tuple[_Row, int, int]]:
    """Each focus (its row) with the part of the period it lasted: ``(row, start, end)``.

    A focus lasts until the next focus or ``away``; ``back`` resumes the focus it left.
    """
    span = period or Period(0, ask.now_ns, "")
    rows = ask.rows(SourceClass.APP_FOCUS, period=Period(0, span.end_ns, ""))
    spells: list[tuple[_Row, int, int]] = []
    current: _Row | None = None
    since: int | None = None
    for row in rows:
        event = row.data.get("event")
        if event in ("focus", "away") and current is not None and since is not None:
            _clip(spells, current, since, row.t, span)
        if event == "focus":
            current, since = row, row.t
        elif event == "away":
            since = None
        elif event == "back":
            since = row.t
    if current is not None and since is not None:
        _clip(spells, current, since, min(span.end_ns, ask.now_ns), span)
    return spells


def _clip(
    spells: list[tuple[_Row, int, int]], row: _Row, since: int, until: int, span: Period
) -> None:
    start, end = max(since, span.start_ns), min(until, span.end_ns)
    if end > start or (span.point and since <= span.start_ns <= until):
        spells.append((row, start, end))


def _app(row: _Row) -> str:
    return str(row.data.get("app") or "(no window)")


def _doing(ask: _Ask) -> Tier0Answer:
    focus_ever = ask.ever(SourceClass.APP_FOCUS)
    period = ask.period or Period(ask.now_ns - 3600 * 10**9, ask.now_ns, "the last hour")
    spells = _spells(ask, period) if focus_ever else []
    near = (
        period
        if not period.point
        else Period(period.start_ns - _AROUND_NS, period.end_ns + _AROUND_NS, "")
    )
    commands = [r for r in ask.rows(SourceClass.SHELL, period=near)]
    files = [r for r in ask.rows(SourceClass.FILE_CHANGE, period=near)]
    if not spells and not commands and not files:
        if not focus_ever:
            what = "the focused window (the focus sense needs an X display)"
            return _never("doing", f"{what}, nor commands or file changes then")
        return _none(ask, "doing", "recorded activity")
    lines: list[tuple[_Row, str]] = []
    for row, start, end in reversed(spells):
        title = str(row.data.get("title") or "")
        lasted = f", {(end - start) // 10**9} s" if end > start else ""
        lines.append(
            (row, f"{ask.when(start)}  {_app(row)}{': ' + title if title else ''}{lasted}")
        )
    lines += [(r, f"{ask.when(r.t)}  $ {_cmd(r)}{_exit(r)}") for r in reversed(commands[-3:])]
    lines += [
        (r, f"{ask.when(r.t)}  file {r.data.get('change', 'changed')} {r.data.get('path', '?')}")
        for r in reversed(files[-3:])
    ]
    scope = ask.scope() if ask.period is not None else "in the last hour"
    title = f"What you were doing {scope}: windows in focus, newest first"
    return _answer(
        "doing", title + (", then commands and files:" if commands or files else ":"), lines
    )


def _time_per_app(ask: _Ask) -> Tier0Answer:
    if not ask.ever(SourceClass.APP_FOCUS):
        return _never("time_per_app", "the focused window (the focus sense needs an X display)")
    spells = _spells(ask, ask.period)
    totals: Counter[str] = Counter()
    cite: dict[str, _Row] = {}
    for row, start, end in spells:
        totals[_app(row)] += end - start
        cite.setdefault(_app(row), row)
    if not totals:
        return _none(ask, "time_per_app", "time in focus")
    used = [
        (cite[a], f"{a}: {_duration(ns)}")
        for a, ns in sorted(totals.items(), key=lambda kv: (-kv[1], kv[0]))
    ]
    return _answer("time_per_app", f"Time per app {ask.scope()} (time away not counted):", used)


def _duration(ns: int) -> str:
    seconds = ns // 10**9
    hours, rest = divmod(seconds, 3600)
    return f"{hours} h {rest // 60} min" if hours else f"{rest // 60} min {rest % 60} s"


# -- files, machine, everything --------------------------------------------------------------------


def _files_changed(ask: _Ask) -> Tier0Answer:
    if not ask.ever(SourceClass.FILE_CHANGE):
        return _never("files_changed", "file changes")
    seen: dict[str, tuple[_Row, str]] = {}
    folder = _subpath(ask.text)
    for row in reversed(ask.rows(SourceClass.FILE_CHANGE)):
        path = row.data.get("path")
        if folder is not None and not (isinstance(path, str) and _within(path, folder)):
            continue
        if isinstance(path, str) and path not in seen:
            seen[path] = (row, f"{path} ({row.data.get('change', 'changed')}, {ask.when(row.t)})")
    where = f" in {folder}" if folder is not None else ""
    if not seen:
        return _none(ask, "files_changed", f"file changes{where}")
    title = f"{len(seen)} file(s) changed{where} {ask.scope()}, newest first:"
    return _answer("files_changed", title, list(seen.values()))


def _usage(ask: _Ask, sense: str, intent: str, unit: str = "%") -> Tier0Answer:
    """The machine's CPU or memory over the period (or its latest reading)."""
    if not ask.ever(SourceClass.ENDPOINT, sense):
        return _never(intent, f"{sense} use (the {sense} sense)")
    name = "CPU" if sense == "cpu" else sense.capitalize()
    rows = ask.rows(SourceClass.ENDPOINT, sense)
    if ask.period is None or ask.period.point or not rows:
        until = ask.period.end_ns if ask.period is not None else ask.now_ns
        rows = ask.rows(SourceClass.ENDPOINT, sense, Period(0, until, ""))[-1:]
        if not rows:
            return _none(ask, intent, f"{sense} readings")
        text = f"{name} at {ask.when(rows[0].t)}: {rows[0].line}"
        return Tier0Answer(intent, text, (rows[0].id,))
    values = [_percent(r) for r in rows]
    high = max(rows, key=_percent)
    # a reading stands until the next (the senses send one when it moved, or a keyframe)
    weights = _stands(ask, rows)
    average = sum(v * w for v, w in zip(values, weights, strict=True)) / sum(weights)
    text = (
        f"{name} {ask.scope()}: average {average:.1f}{unit}, "
        f"peak {max(values):.1f}{unit} at {ask.when(high.t)}, "
        f"latest {values[-1]:.1f}{unit} ({len(values)} readings)."
    )
    return Tier0Answer(intent, text, (high.id, rows[-1].id))


def _percent(row: _Row) -> float:
    value = row.data.get("percent")
    return float(value) if isinstance(value, int | float) else 0.0


def _happened(ask: _Ask) -> Tier0Answer:
    period = ask.period or Period(ask.now_ns - 3600 * 10**9, ask.now_ns, "the last hour")
    scoped = _Ask(ask.conn, ask.text, period, ask.now_ns, ask.tz)
    sql = (
        "SELECT source_name, count(*) FROM events WHERE kind = 'observation' AND "
        "coalesce(valid_time_ns, physical_ns) BETWEEN ? AND ? GROUP BY 1 ORDER BY 2 DESC, 1"
    )
    counts = ask.conn.execute(sql, [period.start_ns, period.end_ns]).fetchall()
    if not counts:
        return _none(scoped, "happened", "observations")
    parts = ", ".join(f"{n} {s}" for s, n in counts)
    lines: list[tuple[_Row, str]] = []
    for source in (
        SourceClass.SHELL,
        SourceClass.FILE_CHANGE,
        SourceClass.APP_FOCUS,
        SourceClass.PROCESS_TREE,
    ):
        for r in reversed(scoped.rows(source)[-2:]):
            lines.append((r, f"{ask.when(r.t)}  {r.line}"))
    scope = scoped.scope()
    return _answer(
        "happened", f"{scope[:1].upper()}{scope[1:]}: {parts} observations. Among them:", lines
    )


# -- the intents -----------------------------------------------------------------------------------


def _has(*patterns: str) -> Callable[[str], bool]:
    compiled = [re.compile(p) for p in patterns]
    return lambda text: all(c.search(text) for c in compiled)


def _any(*phrases: str) -> str:
    """A regex matching any of the phrases as whole words."""
    return r"\b(" + "|".join(phrases) + r")\b"


def _words(text: str) -> tuple[str, ...]:
    return tuple(text.split())


_COMMANDS = _any("commands?", "ran", "run", "runs", "shell", "typed", "executed")
_FAILED = _any(
    "fail", "failed", "fails", "failing", "failures?", "errors?", "errored", "non-?zero",
    "exit (codes?|status)",
)  # fmt: skip
_SLOW = _any("slowest", "longest", "slow", "took the longest")
_CPU = _any("cpu", "processor")
_MEMORY = _any("memory", "ram", "rss")
_WHO = _any(
    "most", "top", "hogs?", "hogging", "using", "used", "uses", "heaviest", "busiest",
    "biggest", "largest", "which process", "what process", "processes",
)  # fmt: skip
_PER_APP = _any(
    "time per app", "per app", "time (spent )?in each app", "time by app", "which apps?",
    "apps? did i use", r"how long .*\bin (each|which)",
)  # fmt: skip
_DOING = _any(
    "what was i (doing|working on|up to)", "what did i do", "what was (on )?(my )?screen",
    "what was focused", "which windows?", "what windows?", "what have i been doing",
    "what am i doing",
)  # fmt: skip
_FILES = _any("files?")
_CHANGED = _any(
    "changed", "change", "changes", "modified", "edited", "touched", "saved", "written",
    "created", "deleted",
)  # fmt: skip
_STARTED = _any(
    "new process(es)?", "processes (were )?started", "process(es)? started",
    "which processes started", "what started", "new programs?", "programs? started",
)  # fmt: skip
_LISTED = _any(
    "what did i run", "what have i run", "which commands", "what commands", "commands did i",
    "commands i ran", "what did i type",
)  # fmt: skip
_PORTS = _any("ports?", "listening", "listens?", "sockets?")
_HAPPENED = _any(
    "what happened", "what went on", "anything happen", "what has happened", "what's happened"
)

Render = Callable[[_Ask], Tier0Answer | None]

FACTS: tuple[tuple[str, Callable[[str], bool], Render], ...] = (
    ("failed_commands", _has(_COMMANDS, _FAILED), _failed_commands),
    ("slowest_commands", _has(_COMMANDS, _SLOW), _slowest_commands),
    ("commands_in", _has(_COMMANDS, r"\bin\s+(~|\.{0,2}/)"), _commands_in),
    ("top_cpu", _has(_CPU, _WHO), _top_cpu),
    ("top_memory", _has(_MEMORY, _WHO), _top_memory),
    ("time_per_app", _has(_PER_APP), _time_per_app),
    ("doing", _has(_DOING), _doing),
    ("files_changed", _has(_FILES, _CHANGED), _files_changed),
    ("ports", _has(_PORTS), _ports),
    ("new_processes", _has(_STARTED), _new_processes),
    ("cpu_usage", _has(_CPU), lambda a: _usage(a, "cpu", "cpu_usage")),
    ("memory_usage", _has(_MEMORY), lambda a: _usage(a, "memory", "memory_usage")),
    ("commands", _has(_LISTED), _commands),
    ("happened", _has(_HAPPENED), _happened),
)
"""(intent, does the lower-cased question fit, render), tried in order."""

_DEFER = re.compile(_any("held", "hold", "withheld", "surfaced", "budget", "highlights?"))
_KNOWN = frozenset(
    _words(
        """
        what which who when where how did do does is are was were has have had i me my you
        the an of in on at to for from by with and or any all since until till before after
        between last past this that these those ago today yesterday morning afternoon evening
        tonight night week now right currently recent recently few couple minute minutes min
        mins hour hours hr hrs day days second seconds sec secs weeks am pm noon midnight
        around during over list show tell give please so far commands command ran run runs
        shell typed executed type failed fail fails failing failure failures error errors
        errored non nonzero zero exit code codes status statuses their slowest longest slow
        took long cpu processor most top hog hogs hogging using used uses use heaviest
        busiest biggest largest process processes program programs memory ram rss time per
        app apps application applications spent each doing working up screen focused focus
        window windows been files file changed change changes modified edited touched saved
        written created deleted new started start happened went anything happen usage much
        level load one two three five ten fifteen twenty thirty folder directory dir under
        inside there it its port ports opened open closed close stopped listening listen
        listens socket sockets
        """
    )
)
"""Every word the intents here understand; a question with another one escalates."""


def _strange(text: str) -> bool:
    """Whether the question holds words no intent here understands: then escalate."""
    rest = _FOLDER.sub(" ", text)
    rest = _RELATIVE.sub(" ", rest) if re.search(r"\bfiles?\b", rest) else rest
    return any(
        w not in _KNOWN and not w.isdigit() and not re.fullmatch(r"\d+(am|pm|m|h|s|d|w)", w)
        for w in re.findall(r"[a-z0-9]{2,}", rest)
    )


def answer_facts(
    conn: duckdb.DuckDBPyConnection, question: str, *, now_ns: int, tz: tzinfo | None = None
) -> Tier0Answer | None:
    """An answer read from the log over the question's period, or None (see the module)."""
    text = " ".join(question.lower().split())
    if _DEFER.search(text) or _strange(text):
        return None  # attention's own records, or words none of these understands
    ask = _Ask(conn, text, find_period(text, now_ns=now_ns, tz=tz), now_ns, tz)
    for _, fits, render in FACTS:
        if fits(text):
            found = render(ask)
            if found is not None:
                return found
    return None
