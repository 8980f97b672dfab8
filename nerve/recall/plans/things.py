"""Plans about things: what happened, what a person was doing, commands, processes and
windows, each answered by reading the window's rows (:class:`~nerve.recall.plans.log.Reader`).
"""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass

from nerve.events import SourceClass
from nerve.recall.plans.log import _SHOWN, Found, Reader, Row, plain_source
from nerve.recall.plans.parse import Plan, Subject
from nerve.recall.plans.tops import folded_tops
from nerve.recall.plans.window import NS, Window
from nerve.recall.plans.words import app_hit, hits, stem, tokens

__all__ = [
    "Away",
    "Spell",
    "activity",
    "anything",
    "away",
    "away_spells",
    "command_runs",
    "commands",
    "ended",
    "files",
    "folders",
    "processes",
    "run_line",
    "running_at",
    "size",
    "spells",
    "top_process",
    "windows",
]

_MIB = 1024**2
_BACKGROUND = re.compile(r"&\s*$|nohup|setsid|disown")
"""A command sent to the background: the hook records it at once, while its process runs on."""
_DAY = 86_400 * NS
_AROUND = 120 * NS
"""A window wider than this around a moment ("around 19:31:30") asks for that moment."""
_FIRST = {SourceClass.SHELL, SourceClass.APP_FOCUS, SourceClass.FILE_CHANGE}


def _words_in(name: str | None, *texts: str) -> bool:
    """Whether every word of ``name`` is in the texts (case aside)."""
    if not name:
        return True
    hay = " ".join(texts).lower()
    return all(word in hay for word in name.lower().split())


def _rank(row: Row) -> int:
    """How soon a person would name the row: commands, windows and files first (0), then
    ports opened or closed and processes started or exited (1), then readings (2)."""
    if row.source in _FIRST:
        return 0
    if row.source == SourceClass.NETWORK and row.line.startswith("port "):
        return 1
    if row.source == SourceClass.PROCESS_TREE and row.data.get("event") in ("started", "exited"):
        return 1
    return 2


def _missing(reader: Reader, window: Window | None, what: str) -> Found:
    """Nothing of ``what`` in the window, and why when the log can tell."""
    if window is not None and reader.paused(window):
        why = " Capture was paused then."
    elif window is not None and not reader.rows(window, where="TRUE"):
        why = " Nothing at all was recorded then (was the daemon running?)."
    else:
        why = ""
    return Found(f"No {what} {reader.scope(window)}.{why}")


# -- what happened, what was I doing -------------------------------------------------------


def anything(reader: Reader, plan: Plan) -> Found:
    """Every observation in the window: counts in plain words, notable ones first (and first
    of all the commands that ran on into it from before)."""
    rows = reader.rows(plan.window)
    going = _ongoing(reader, plan.window) if plan.window is not None else []
    if not rows and going:  # "at 19:26:30": nothing new, but a command ran on, or you were away
        title = f"Nothing new was recorded {reader.scope(plan.window)}; going on then:"
        return reader.listing(title, going, plan.window)
    if not rows:
        return _missing(reader, plan.window, "events")
    counts = Counter(plain_source(r) for r in rows)
    said = ", ".join(f"{n} {name}" for name, n in sorted(counts.items(), key=lambda c: -c[1]))
    point = plan.window.point_ns if plan.window else None
    if point is not None:  # "around 19:26": the nearest of each rank first, said in time order
        near = sorted(rows, key=lambda r: (_rank(r), abs(r.t - point)))
        kept = sorted(near[:_SHOWN], key=lambda r: r.t)
        ordered = kept + near[_SHOWN:]
    else:
        ordered = sorted(rows, key=_rank)  # stable: in time order within a rank
    lines = [(r, f"{reader.when(r.t)}  {r.line}") for r in ordered]
    lines[:0] = going  # what started before and went on into it comes first
    scope = reader.scope(plan.window)
    title = f"{scope[:1].upper()}{scope[1:]}: {len(rows)} events ({said}). Notable first:"
    return reader.listing(title, lines, plan.window)


def _ongoing(reader: Reader, window: Window) -> list[tuple[Row, str]]:
    """The commands and the time away that began before the window and went on into it."""
    start = window.start_ns
    lines = [(r, f"running from {run_line(reader, r)}")
             for r in _commands_over(reader, window) if r.t < start]  # fmt: skip
    lines += [(gone.row, text) for gone, text in _away_over(reader, window) if gone.start < start]
    return lines


def _away_over(reader: Reader, window: Window) -> list[tuple[Away, str]]:
    """The times away that overlap the window, each said from its start to its end."""
    wide = Window(window.start_ns - _DAY, window.end_ns, "")
    start, end = window.start_ns, window.end_ns
    over = [gone for gone in away_spells(reader, wide)
            if gone.start < end and (gone.ongoing or gone.end > start)]  # fmt: skip
    return [(gone, f"away from {reader.when(gone.start)} to "
                   f"{'now' if gone.ongoing else reader.when(gone.end)} (no input)")
            for gone in over]  # fmt: skip


_SHOWN_DOING = 20
"""How many of the things a person did an answer shows."""


def activity(reader: Reader, plan: Plan) -> Found:
    """Windows in focus, commands, file changes and time away in the window, in order (with
    none of those, the processes that started or exited)."""
    window = plan.window
    assert window is not None
    lines: list[tuple[int, Row, str]] = []
    for spell in spells(reader, window):
        lines.append((spell.start, spell.row, f"{reader.when(spell.start)}  in {spell.name()}"))
    for row in _commands_over(reader, window):
        lines.append((row.t, row, f"{reader.when(row.t)}  ran {_command_line(row)}"))
    for row in reader.rows(window, source=SourceClass.FILE_CHANGE):
        change = f"{row.data.get('change', 'changed')} {row.data.get('path', '?')}"
        lines.append((row.t, row, f"{reader.when(row.t)}  file {change}"))
    for gone in away_spells(reader, window):
        back = "now" if gone.ongoing else reader.when(gone.end)
        lines.append((gone.start, gone.row, f"{reader.when(gone.start)}  away until {back}"))
    if not lines:  # nothing the person did: the processes that came and went
        for row in reader.rows(window, source=SourceClass.PROCESS_TREE):
            if row.data.get("event") in ("started", "exited"):
                lines.append((row.t, row, f"{reader.when(row.t)}  {row.line}"))
    if not lines:
        return _missing(reader, window, "recorded activity")
    lines.sort(key=lambda item: item[0])
    if window.point_ns is not None:  # "around 19:29": the nearest, said in time order
        point = window.point_ns
        near = sorted(lines, key=lambda item: (abs(item[0] - point), item[0]))
        lines = sorted(near[:_SHOWN_DOING], key=lambda item: item[0]) + near[_SHOWN_DOING:]
    title = f"What you were doing {reader.scope(window)}, in order:"
    return reader.listing(title, [(r, text) for _, r, text in lines], window, shown=_SHOWN_DOING)


# -- commands --------------------------------------------------------------------------------


def _command_of(row: Row) -> str:
    text = row.data.get("command")
    return " ".join(text.split()) if isinstance(text, str) else row.line.removeprefix("$ ")


def _command_line(row: Row) -> str:
    code, ms = row.data.get("exit"), row.data.get("duration_ms")
    notes = []
    if isinstance(code, int):
        notes.append(f"exit {code}")  # 0 as plainly as a failure's code
    if isinstance(ms, int):
        notes.append(f"{ms / 1000:.1f} s" if ms < 60_000 else length(ms * 1_000_000))
    return f"`{_command_of(row)}`" + (f" ({', '.join(notes)})" if notes else "")


def run_line(reader: Reader, row: Row) -> str:
    """A command's start and line; one that ran a minute or more says when it ended too."""
    ms = row.data.get("duration_ms")
    until = f" to {reader.when(_ended(row))}" if isinstance(ms, int) and ms >= 60_000 else ""
    return f"{reader.when(row.t)}{until}  {_command_line(row)}"


def _ended(row: Row) -> int:
    ms = row.data.get("duration_ms")
    return row.t + (ms * 1_000_000 if isinstance(ms, int) and ms > 0 else 0)


def _commands_over(
    reader: Reader, window: Window | None, name: str | None = None, status: str | None = None
) -> list[Row]:
    """Commands that ran during the window (started in it, or started before and still ran);
    with a name that is a program, every command it starts ("make": make build, make test);
    with another name, those its words hit most (:func:`~nerve.recall.plans.words.hits`); with a
    status, those that ended so."""
    wide = window if window is None else Window(window.start_ns - _DAY, window.end_ns, "")
    words = (name or "").lower().split()
    text = "lower(coalesce(json_extract_string(data, '$.command'), line))"
    where = " OR ".join([f"contains({text}, ?)" for _ in words]) or "TRUE"
    args = [stem(w) if len(stem(w)) >= 3 else w for w in words]
    rows = reader.rows(wide, source=SourceClass.SHELL, where=f"({where})", args=args)
    if window is not None:
        rows = [r for r in rows if r.t >= window.start_ns or _ended(r) >= window.start_ns]
    if window is not None and status is not None:  # it ended so in the window, or started in it
        rows = [r for r in rows if r.t >= window.start_ns or _ended(r) < window.end_ns]
    ended_so = [r for r in rows if status is None or _failed(r) == (status == "failed")]
    if not words:
        return ended_so
    said = [(_command_of(r), r) for r in rows]
    program = [(text, r) for text, r in said if text.split()[:1] == words]
    if len(words) == 1 and program:  # "make": every command it starts (make build, make test)
        keep = {r.id for r in ended_so}
        return [r for _, r in program if r.id in keep]
    score = {text: hits(words, text) for text in dict.fromkeys(text for text, _ in said)}
    best = max(score.values(), default=0)
    fits = {_command_of(r) for r in ended_so}  # a command with runs that ended as asked
    chosen = [(text, r) for text, r in said if score[text] and score[text] == best]
    chosen = [(text, r) for text, r in chosen if text in fits]
    runs = Counter(text for text, _ in chosen)
    most = max(runs.values(), default=0)  # a tie: the one run most, then the runs that ended so
    keep = {r.id for r in ended_so}
    return [r for text, r in chosen if runs[text] == most and r.id in keep]


def command_runs(reader: Reader, name: str) -> list[Row]:
    """The runs of the command ``name``'s words hit best, over the whole log, oldest first."""
    return _commands_over(reader, None, name)


def ended(row: Row) -> int:
    """When a command ended: its start plus the duration the shell hook recorded."""
    return _ended(row)


def _failed(row: Row) -> bool:
    code = row.data.get("exit")
    return isinstance(code, int) and code != 0


def commands(reader: Reader, plan: Plan) -> Found | None:
    """Commands: listed, counted, their exit status, whether one finished, first or last."""
    name, window, status = plan.subject.name, plan.window, plan.subject.status
    if plan.measure in ("before", "after") and plan.anchor is not None:
        return _command_order(reader, plan, plan.anchor)
    whole = window is None or (window.point_ns is not None and window.point_ns >= reader.now_ns)
    if (
        not name
        and status is None
        and plan.measure in ("exit", "running", "duration", "last")
        and whole
    ):
        return None  # "what was my last command?": the intents
    if not name and status is None and plan.measure == "list" and window is None:
        return None  # "what did I run?": the intents list the newest
    if not reader.ever(SourceClass.SHELL) and plan.measure != "running":
        return Found("No shell commands are in this log: the shell hook is not installed "
                     "(`nerve shell install`).", answered=False)  # fmt: skip
    rows = _commands_over(reader, window, name, status)
    if plan.subject.nth == "first":
        rows = rows[:1]
    if plan.measure == "running":
        return _finished(reader, plan, rows)
    if not rows:
        return _no_thing(reader, plan, _said(plan.subject, "commands"))
    if plan.measure == "count":  # those started in the window, not those still running
        started = [r for r in rows if window is None or r.t >= window.start_ns]
        return _counted(reader, plan, started, "command")
    if plan.measure == "duration":
        return _command_time(reader, plan, rows)
    return _command_list(reader, plan, rows)


def anchor_run(reader: Reader, window: Window | None, anchor: Subject) -> Row | None:
    """The run of the anchor command an order question means: of those that ended as it says
    (failed, ok), the first when it says so, else the newest."""
    runs = _commands_over(reader, window, anchor.name, anchor.status)
    if not runs:
        return None
    return runs[0] if anchor.nth == "first" else runs[-1]


_THEN_MAX = 5
"""How many more commands an answer of what came after one names."""


def _command_order(reader: Reader, plan: Plan, anchor: Subject) -> Found:
    """The command run just before (or after) the anchor command's run; after it, the few
    that followed too."""
    every = _commands_over(reader, plan.window)
    mark = anchor_run(reader, plan.window, anchor)
    at = [i for i, r in enumerate(every) if mark is not None and r.id == mark.id]
    if not at:
        return _no_thing(reader, Plan(plan.question, plan.window, anchor, "list"),
                         _said(anchor, "commands"))  # fmt: skip
    i = at[-1]
    if plan.subject.status is not None:  # "did anything fail after the build passed?"
        return _ended_so_around(reader, plan, every, i)
    j = i - 1 if plan.measure == "before" else i + 1
    if not 0 <= j < len(every):
        return Found(f"No command is recorded {plan.measure} {_command_line(every[i])} "
                     f"({reader.when(every[i].t)}).", (every[i].id,))  # fmt: skip
    text = (f"{plan.measure.capitalize()} {_command_line(every[i])} "
            f"({reader.when(every[i].t)}), you ran {_command_line(every[j])} at "
            f"{reader.when(every[j].t)}.")  # fmt: skip
    just = re.search(r"\b(?:right|just|immediately|directly) after\b|\bnext\b", plan.question)
    later = every[j + 1 : j + 1 + _THEN_MAX] if plan.measure == "after" and not just else []
    if later:  # "what did I run after make test?": what came next, and next
        said = ", ".join(f"{_command_line(r)} at {reader.when(r.t)}" for r in later)
        more = len(every) - (j + 1 + len(later))
        text += f" Then {said}" + (f", and {more} more." if more > 0 else ".")
    return Found(text, (every[j].id, every[i].id, *(r.id for r in later)))


def _ended_so_around(reader: Reader, plan: Plan, every: list[Row], i: int) -> Found:
    """Whether any command before (or after) the anchor's run ``every[i]`` ended as asked
    (failed, ok), and which: a yes-or-no question, not a list of what ran next."""
    side = every[:i] if plan.measure == "before" else every[i + 1 :]
    failed = plan.subject.status == "failed"
    so = [r for r in side if _failed(r) == failed]
    what = "failed" if failed else "succeeded"
    mark = f"{plan.measure} {_command_line(every[i])} ({reader.when(every[i].t)})"
    if not so:
        text = (f"No: no command {what} {mark}; {len(side)} ran {plan.measure} it, none "
                f"{what}.")  # fmt: skip
        return Found(text, (every[i].id, *(r.id for r in side[:_THEN_MAX])))
    said = ", ".join(f"{_command_line(r)} at {reader.when(r.t)}" for r in so[:_THEN_MAX])
    more = len(so) - _THEN_MAX
    text = (f"Yes: {len(so)} command{'s' * (len(so) != 1)} {what} {mark}: {said}"
            + (f", and {more} more." if more > 0 else "."))  # fmt: skip
    return Found(text, (every[i].id, *(r.id for r in so[:_THEN_MAX])))


def _said(subject: Subject, what: str) -> str:
    """``commands``, ``failed commands`` or ``successful commands``."""
    return {"failed": f"failed {what}", "ok": f"successful {what}"}.get(subject.status or "", what)


def _command_time(reader: Reader, plan: Plan, rows: list[Row]) -> Found:
    """How long the named commands ran, each and in all (from the hook's durations)."""
    total = sum(ms for r in rows if isinstance(ms := r.data.get("duration_ms"), int))
    lines = [(r, f"{reader.when(r.t)} to {reader.when(_ended(r))}  {_command_line(r)}")
             for r in rows[::-1]]  # fmt: skip
    what = f"`{plan.subject.name}`" if plan.subject.name else "Commands"
    said = f"{total / 1000:.1f} s"
    if total >= 60_000:
        said = f"{length(total * 1_000_000)} ({total // 1000} s)"
    head = (
        f"{what} ran for {said} in all "
        f"{reader.scope(plan.window)}, {len(rows)} run{'s' * (len(rows) != 1)}, newest first:"
    )
    return reader.listing(head, lines, plan.window)


def _command_list(reader: Reader, plan: Plan, rows: list[Row]) -> Found:
    day = plan.window is not None and not plan.window.clock and plan.measure == "list"
    if plan.measure in ("exit", "last", "when") or day:
        rows = rows[::-1]  # newest first (over a day: what the person did last, first)
    lines = [(r, run_line(reader, r)) for r in rows]
    kind = _said(plan.subject, "commands")
    what = f"`{plan.subject.name}`" if plan.subject.name else kind[:1].upper() + kind[1:]
    if plan.subject.name and plan.subject.status:
        what = f"{what} ({'failed' if plan.subject.status == 'failed' else 'successful'} runs)"
    if plan.measure == "exit":
        newest = rows[0]
        code = newest.data.get("exit")
        which = "first" if plan.subject.nth == "first" else "last"
        head = f"{what} {which} ran at {reader.when(newest.t)}, exit status not recorded"
        if isinstance(code, int):
            said = "it succeeded" if code == 0 else "it failed"
            head = f"{what} {which} exited {code} ({reader.when(newest.t)}), so {said}"
        return reader.listing(f"{head}; every run {reader.scope(plan.window)}:", lines, None)
    if plan.measure == "first" and plan.window is not None:  # the first run started in it
        started = [(r, line) for r, line in zip(rows, lines, strict=True)
                   if r.t >= plan.window.start_ns]  # fmt: skip
        lines = [line for _, line in started] or lines
    if plan.measure in ("first", "last"):
        lines = lines[:1]
        title = f"{what} that ran {reader.scope(plan.window)}, the {plan.measure} one:"
        return reader.listing(title, lines, plan.window)
    running = _running_then(reader, plan.window) if plan.window and plan.window.point_ns else []
    runs = f" ({len(rows)} runs)" if len(rows) > 1 else ""
    title = f"{what} that ran {reader.scope(plan.window)}{runs}{', newest first' if day else ''}:"
    found = reader.listing(title, lines + running, plan.window)
    return found


def _running_then(reader: Reader, window: Window) -> list[tuple[Row, str]]:
    """Processes the processes sense saw busy or large during the window."""
    procs = _processes(reader, window)
    return [(p.row, f"running then: {p.who()}") for p in procs.values()][:6]


def _started_by(reader: Reader, row: Row) -> tuple[Row, Row | None] | None:
    """The process a command started (a process start within two seconds of the command's
    whose name or command line its words hit) and that process's exit, if one is recorded."""
    lo, hi = row.t - 2 * NS, _ended(row) + 2 * NS
    words = [w for w in tokens(_command_of(row)) if len(w) >= 3 and not w.startswith("-")]
    started = "json_extract_string(data, '$.event') = 'started'"
    for proc in reader.rows(Window(lo, hi, ""), source=SourceClass.PROCESS_TREE, where=started):
        said = f"{proc.data.get('name', '')} {proc.data.get('cmdline', '')}"
        if words and hits(words, said) >= min(2, len(words)):
            pid = proc.data.get("pid")
            ended = "json_extract_string(data, '$.event') = 'exited'"
            exits = reader.rows(None, source=SourceClass.PROCESS_TREE, where=ended)
            exited = [r for r in exits if r.data.get("pid") == pid and r.t >= proc.t]
            return proc, (exited[0] if exited else None)
    return None


def running_at(reader: Reader, plan: Plan) -> Found:
    """What was running in the window (commands that ran through it, and the processes the
    processes sense saw busy or large), or with none named, which of the person's commands
    still run now (a process a command started, with no exit recorded)."""
    window = plan.window
    if window is None or window.point_ns == reader.now_ns:
        return _still_going(reader)
    rows = _commands_over(reader, window)
    if window.point_ns is not None:  # "around 19:26": those running at that moment first
        point = window.point_ns
        rows = sorted(rows, key=lambda r: (not r.t <= point <= _ended(r), r.t))
    lines = [(r, f"{reader.when(r.t)} to {reader.when(_ended(r))}  {_command_line(r)}")
             for r in rows]  # fmt: skip
    lines += _running_then(reader, window)
    lines += [(gone.row, text) for gone, text in _away_over(reader, window)]
    if not lines:
        return _missing(reader, window, "commands or process samples")
    title = f"Running {reader.scope(window)}: commands, then processes seen busy or large:"
    return reader.listing(title, lines, window)


def _still_going(reader: Reader) -> Found:
    lines = []
    background = f"regexp_matches(json_extract_string(data, '$.command'), '{_BACKGROUND.pattern}')"
    for row in reader.rows(None, source=SourceClass.SHELL, where=background):
        found = _started_by(reader, row)  # a command in the foreground ended when recorded
        if found is not None and found[1] is None:
            proc = found[0]
            lines.append((proc, f"{_command_line(row)}, run at {reader.when(row.t)}: "
                                f"{proc.data.get('name', '?')} [{proc.data.get('pid', '?')}] "
                                "has no exit recorded"))  # fmt: skip
    if not lines:
        return Found("None of your commands is still running: each ended, and no process one "
                     "started is left without an exit.")  # fmt: skip
    return reader.listing("Still running, from your commands:", lines[::-1], None)


def _finished(reader: Reader, plan: Plan, rows: list[Row]) -> Found:
    """Did it finish? The hook records a command when it ends (one sent to the background
    ends at once: then the process it started tells); else the process record."""
    if rows:
        row = rows[-1]
        found = _started_by(reader, row) if _BACKGROUND.search(_command_of(row)) else None
        if found is not None and found[1] is None:
            proc = found[0]
            return Found(f"`{_command_of(row)}` (run at {reader.when(row.t)}) is still running: "
                         f"its process {proc.data.get('name', '?')} [{proc.data.get('pid', '?')}] "
                         "has no exit recorded.", (row.id, proc.id))  # fmt: skip
        text = f"`{_command_of(row)}` finished at {reader.when(_ended(row))}"
        code = row.data.get("exit")
        text += f" with exit {code}" if isinstance(code, int) else ""
        text += "; it is not running now."
        return Found(text, (row.id,))
    return _process_state(reader, plan.subject, plan.window)


_DISTINCT = re.compile(r"\b(distinct|unique|different)\b")


def _counted(reader: Reader, plan: Plan, rows: list[Row], what: str) -> Found:
    named, how = (
        plan.subject.name,
        {"failed": "failed ", "ok": "successful "}.get(plan.subject.status or "", ""),
    )
    text = f"{len(rows)} {how}runs of `{named}`" if named else f"{len(rows)} {how}{what}s"
    if what == "command" and _DISTINCT.search(plan.question.lower()):
        said = dict.fromkeys(_command_of(r) for r in rows)  # "how many *distinct* commands?"
        text = f"{len(said)} distinct {how}{what}s ({len(rows)} runs)"
    text += f" {reader.scope(plan.window)}"
    lines = [(r, run_line(reader, r)) for r in rows[::-1]]
    return reader.listing(text + ", newest first:", lines, plan.window)


def _no_thing(reader: Reader, plan: Plan, what: str) -> Found:
    """The subject matched nothing: say what was understood and ask."""
    if not plan.subject.name:
        return _missing(reader, plan.window, what)
    one = "process" if what == "processes" else what[:-1]
    return Found(
        f"I read this as a question about {what} matching `{plan.subject.name}` "
        f"{reader.scope(plan.window)}, and none is recorded. Which {one} did you mean "
        "(its name as it ran), or which time?",
        answered=False,
    )


# -- processes -------------------------------------------------------------------------------


@dataclass
class _Proc:
    """One process (pid, start time) as the log saw it: its peaks and where they were."""

    pid: int
    name: str
    cmdline: str
    row: Row
    user: str = ""
    peak_rss: int = 0
    rss_row: Row | None = None
    peak_cpu: int = 0
    cpu_row: Row | None = None
    samples: int = 0
    cpu_sum: int = 0
    first_t: int = 0
    last_t: int = 0

    def who(self) -> str:
        cmd = " ".join(self.cmdline.split())[:60]
        user = f" ({self.user})" if self.user else ""
        return f"{self.name} [{self.pid}]{user}" + (f" `{cmd}`" if cmd and cmd != self.name else "")


def _see(procs: dict[tuple[int, int], _Proc], row: Row, entry: dict[str, object]) -> None:
    pid, start = entry.get("pid"), entry.get("start_time")
    if not isinstance(pid, int):
        return
    key = (pid, start if isinstance(start, int) else 0)
    proc = procs.setdefault(key, _Proc(pid, str(entry.get("name") or "?"), "", row, first_t=row.t))
    if isinstance(entry.get("cmdline"), str) and not proc.cmdline:
        proc.cmdline = str(entry["cmdline"])
    if isinstance(entry.get("user"), str) and not proc.user:
        proc.user = str(entry["user"])
    rss, cpu = entry.get("rss_bytes"), entry.get("cpu_permille")
    if isinstance(rss, int) and rss > proc.peak_rss:
        proc.peak_rss, proc.rss_row = rss, row
    if isinstance(cpu, int) and row.data.get("event") == "top":
        proc.samples, proc.cpu_sum = proc.samples + 1, proc.cpu_sum + cpu
        if cpu > proc.peak_cpu:
            proc.peak_cpu, proc.cpu_row = cpu, row
    proc.last_t = row.t


def _processes(
    reader: Reader, window: Window | None, part: str | None = None
) -> dict[tuple[int, int], _Proc]:
    """Every process the window's process records name, with its peaks; at a moment ("at
    07:44", "5 minutes ago"), the samples of its window, or if it holds none ("now") the newest
    top sample of the ten minutes up to it with a ``part`` list (the memory list is sent only
    when it moved)."""
    parts = (part, "over") if part else ("cpu", "memory", "over")
    if window is None or window.point_ns is None:
        return _processes_folded(reader, window, parts)
    rows = reader.rows(_before(window), source=SourceClass.PROCESS_TREE)
    procs: dict[tuple[int, int], _Proc] = {}
    _describe(procs, rows)
    held = _processes_folded(reader, window, parts)  # "at 07:44": the minute's samples
    if any(p.samples or p.peak_rss for p in held.values()):
        for key, proc in held.items():
            known = procs.get(key)
            proc.cmdline = proc.cmdline or (known.cmdline if known else "")
            proc.user = proc.user or (known.user if known else "")
        return held
    if rows:
        rows = [r for r in rows if r.data.get("event") == "top" and r.data.get(part or "cpu")][-1:]
    _read_procs(procs, rows)
    return {k: p for k, p in procs.items() if p.samples or p.peak_rss or not rows}


def _processes_folded(
    reader: Reader, window: Window | None, parts: tuple[str, ...]
) -> dict[tuple[int, int], _Proc]:
    """The window's processes from their top samples folded in DuckDB
    (:mod:`~nerve.recall.plans.tops`), and from their started / exited records."""
    procs: dict[tuple[int, int], _Proc] = {}
    for f in folded_tops(reader, window, parts):
        row = _cited(f.first_id, f.first_t)
        proc = _Proc(f.pid, f.name, f.cmdline, row, f.user, first_t=f.first_t, last_t=f.last_t)
        if f.peak_rss:
            proc.peak_rss, proc.rss_row = f.peak_rss, _cited(*f.rss_at)
        if f.samples:
            proc.peak_cpu, proc.cpu_row = f.peak_cpu, _cited(*f.cpu_at)
            proc.samples, proc.cpu_sum = f.samples, f.cpu_sum
        procs[(f.pid, f.start)] = proc
    events = "json_extract_string(data, '$.event') IN ('started', 'exited')"
    for row in reader.rows(window, source=SourceClass.PROCESS_TREE, where=events):
        _see(procs, row, row.data)
    return procs


def _cited(eid: str, t: int) -> Row:
    """A sample the answer cites, by id and time (its payload was read in DuckDB)."""
    return Row(eid, t, "observation", int(SourceClass.PROCESS_TREE), "processes", "", {})


def _describe(procs: dict[tuple[int, int], _Proc], rows: list[Row]) -> None:
    """Names, users and command lines from ``rows`` (a top sends them once in a while)."""
    _read_procs(procs, rows)
    for proc in procs.values():
        proc.peak_rss, proc.rss_row, proc.peak_cpu, proc.cpu_row = 0, None, 0, None
        proc.samples = proc.cpu_sum = 0


def _read_procs(procs: dict[tuple[int, int], _Proc], rows: list[Row]) -> None:
    for row in rows:
        if row.data.get("event") == "top":
            for part in ("cpu", "memory", "over"):
                for entry in row.data.get(part) or []:
                    if isinstance(entry, dict):
                        _see(procs, row, entry)
        elif row.data.get("event") in ("started", "exited"):
            _see(procs, row, row.data)


def _tops_ever(reader: Reader) -> bool:
    sql = (
        "SELECT 1 FROM events WHERE kind = 'observation' AND source = ? "
        "AND json_extract_string(data, '$.event') = 'top' LIMIT 1"
    )
    return reader.conn.execute(sql, [int(SourceClass.PROCESS_TREE)]).fetchone() is not None


def _before(window: Window | None) -> Window | None:
    if window is None or window.point_ns is None:
        return window
    return Window(window.end_ns - 600 * NS, window.end_ns, window.label, window.point_ns)


def _matching(procs: dict[tuple[int, int], _Proc], subject: Subject) -> list[_Proc]:
    found = [
        p
        for p in procs.values()
        if (subject.pid is None or p.pid == subject.pid)
        and _words_in(subject.name, p.name, p.cmdline)
    ]
    return sorted(found, key=lambda p: (p.first_t, p.pid))


def processes(reader: Reader, plan: Plan) -> Found | None:
    """Processes: which used the most, how much one used, whether it still runs."""
    subject = plan.subject
    if plan.measure == "running":
        return _process_state(reader, subject, plan.window)
    if not reader.ever(SourceClass.PROCESS_TREE):
        return Found("No process records are in this log (the processes sense has not run).",
                     answered=False)  # fmt: skip
    anyone = not subject.name and subject.pid is None
    if plan.measure not in ("most", "peak", "average") and anyone:
        return None  # "which processes started today?": the intents
    moment = plan.window is not None and plan.window.point_ns is not None
    weighed = anyone and subject.reading == "cpu" and not moment
    if weighed or not _tops_ever(reader):
        return None  # the intents weigh each CPU sample by how long it stood; say when tops come
    if subject.reading is None and plan.measure in ("list", "when", "first", "last"):
        return _identity(reader, plan)  # "what was pid 16845?", "what was the pid of yes?"
    memory = subject.reading != "cpu"
    seen = _matching(_processes(reader, plan.window, "memory" if memory else "cpu"), subject)
    procs = [p for p in seen if (p.rss_row if memory else p.cpu_row) is not None]
    if not procs and not subject.name:
        return Found(f"No process samples {reader.scope(plan.window)}.")
    if not procs and seen:  # seen, never among the busiest: no figure to give
        return Found(f"I read this as a question about processes matching `{subject.name}` "
                     f"{reader.scope(plan.window)}: {len(seen)} ran, but none was ever among "
                     f"the sampled top {'memory' if memory else 'CPU'} users, so I have no "
                     "figure for it. Which process did you mean, or which time?",
                     answered=False)  # fmt: skip
    if not procs:
        return _no_thing(reader, plan, "processes")
    procs.sort(key=lambda p: -(p.peak_rss if memory else p.peak_cpu))
    return _process_peaks(reader, plan, procs, memory)


def _identity(reader: Reader, plan: Plan) -> Found:
    """Which process a pid or a name was: its name, pid, user and command line, when the
    processes sense saw it, and its peaks."""
    procs = _matching(_processes(reader, plan.window), plan.subject)
    if not procs:
        return _no_thing(reader, plan, "processes")
    lines = []
    for p in procs:
        peaks = [f"peak {p.peak_cpu / 10:.1f}% of a core" if p.cpu_row else "",
                 f"peak {size(p.peak_rss)} resident" if p.rss_row else ""]  # fmt: skip
        said = "".join(f", {x}" for x in peaks if x)
        seen = f"seen from {reader.when(p.first_t)} to {reader.when(p.last_t)}"
        lines.append((p.row, f"{p.who()}: {seen}{said}"))
    what = f"pid {plan.subject.pid}" if plan.subject.pid is not None else f"`{plan.subject.name}`"
    title = f"Processes matching {what} {reader.scope(plan.window)}, from the processes sense:"
    return reader.listing(title, lines, plan.window, shown=8)


def _process_peaks(reader: Reader, plan: Plan, procs: list[_Proc], memory: bool) -> Found:
    lines = []
    for p in procs:
        if memory and p.rss_row is not None:
            lines.append((p.rss_row, f"{p.who()}: peak {size(p.peak_rss)} resident at "
                                     f"{reader.when(p.rss_row.t)}"))  # fmt: skip
        elif not memory and p.cpu_row is not None:
            average = p.cpu_sum / max(p.samples, 1) / 10
            lines.append((p.cpu_row, f"{p.who()}: peak {p.peak_cpu / 10:.1f}% of a core at "
                                     f"{reader.when(p.cpu_row.t)}, {average:.1f}% on average "
                                     f"over {p.samples} samples"))  # fmt: skip
    what = "memory (resident, peak)" if memory else "CPU (peak)"
    if not lines:
        return Found(f"No process samples {reader.scope(plan.window)}.")
    if plan.subject.name and plan.window is not None and plan.window.point_ns is not None:
        lines = [(row, line + _nearest(reader, plan.window, p, memory))
                 for (row, line), p in zip(lines, procs, strict=False)]  # fmt: skip
    top = "Most " if plan.measure == "most" or not plan.subject.name else ""
    title = f"{top}{what} {reader.scope(plan.window)}, from the processes sense's samples:"
    title = title[:1].upper() + title[1:]
    return reader.listing(title, lines, plan.window, shown=8)


def _nearest(reader: Reader, window: Window, proc: _Proc, memory: bool) -> str:
    """The process's sample nearest the moment the question named ("7 minutes ago"), said
    as "; at 19:26:55: 903 MiB" ("" when the window holds none)."""
    point, part = window.point_ns or window.start_ns, "memory" if memory else "cpu"
    found = []
    for row in reader.rows(window, source=SourceClass.PROCESS_TREE):
        entries = row.data.get(part) if row.data.get("event") == "top" else None
        for entry in entries if isinstance(entries, list) else []:
            value = (
                entry.get("rss_bytes" if memory else "cpu_permille")
                if isinstance(entry, dict)
                else None
            )
            if isinstance(value, int) and entry.get("pid") == proc.pid:
                found.append((abs(row.t - point), row.t, value))
    if not found:
        return ""
    _, t, value = min(found)
    return f"; at {reader.when(t)}: {size(value) if memory else f'{value / 10:.1f}% of a core'}"


def size(n: int) -> str:
    """Bytes in plain words: ``1511 MiB (1.5 GiB)`` from a gibibyte on, else ``423 MiB``."""
    mib = f"{n // _MIB} MiB"
    return f"{mib} ({n / 1024**3:.1f} GiB)" if n >= 1024**3 else mib


def top_process(reader: Reader, window: Window | None, memory: bool) -> tuple[Row, str] | None:
    """The process that used the most memory (or CPU) in the window, said in one line."""
    procs = _processes(reader, window, "memory" if memory else "cpu").values()
    if memory:
        big = max(procs, key=lambda p: (p.peak_rss, -p.pid), default=None)
        if big is None or big.rss_row is None:
            return None
        return big.rss_row, (f"the most memory by one process: {big.who()}, peak "
                             f"{size(big.peak_rss)} at {reader.when(big.rss_row.t)}")  # fmt: skip
    busy = max(procs, key=lambda p: (p.peak_cpu, -p.pid), default=None)
    if busy is None or busy.cpu_row is None:
        return None
    return busy.cpu_row, (f"the most CPU by one process: {busy.who()}, peak "
                          f"{busy.peak_cpu / 10:.1f}% of a core at "
                          f"{reader.when(busy.cpu_row.t)}")  # fmt: skip


def peak_memory_of(reader: Reader, pid: int) -> tuple[Row, str] | None:
    """The sample where process ``pid`` used the most memory in the whole log, and that
    memory in plain words; None when no sample names it."""
    found = [p for p in _processes(reader, None, "memory").values() if p.pid == pid]
    big = max(found, key=lambda p: p.peak_rss, default=None)
    if big is None or big.rss_row is None:
        return None
    return big.rss_row, size(big.peak_rss)


def _process_state(reader: Reader, subject: Subject, window: Window | None) -> Found:
    """Whether a process named so (or with that pid) still runs, from its records."""
    procs = _matching(_processes(reader, None), subject)
    if not procs:
        said = subject.name or f"pid {subject.pid}"
        return Found(f"Nothing in this log records a command or process matching `{said}`. "
                     "Which one did you mean?", answered=False)  # fmt: skip
    proc = procs[-1]
    exits = [r for r in reader.rows(None, source=SourceClass.PROCESS_TREE,
                                    where="json_extract_string(data, '$.event') = 'exited'")
             if r.data.get("pid") == proc.pid]  # fmt: skip
    if exits:
        return Found(f"{proc.who()} exited by {reader.when(exits[-1].t)} (the processes "
                     "sense noticed then); it is not running now.", (exits[-1].id,))  # fmt: skip
    return Found(f"No exit is recorded for {proc.who()}: last seen running at "
                 f"{reader.when(proc.last_t)}.", (proc.row.id,))  # fmt: skip


# -- windows ---------------------------------------------------------------------------------


@dataclass(frozen=True)
class Spell:
    """A window in focus from ``start`` to ``end`` (its focus row)."""

    row: Row
    start: int
    end: int

    def name(self) -> str:
        app, title = str(self.row.data.get("app") or ""), str(self.row.data.get("title") or "")
        return f"{app}: {title}" if app and title else app or title or "(no window)"

    def matches(self, name: str | None) -> bool:
        """Whether every word of ``name`` is in the app or title, or names the app's kind."""
        app, title = str(self.row.data.get("app", "")), str(self.row.data.get("title", ""))
        hay = f"{app} {title}".lower()
        return all(w in hay or app_hit(w, app) for w in (name or "").lower().split())


def _focus_events(reader: Reader, lo: int, hi: int) -> list[tuple[int, str, Row | None]]:
    """The focus sense's events from ``lo`` to ``hi`` as (time, event, row), with the moments
    it saw nothing from: a daemon's stop or start and a pause (``end``), a resume (``back``);
    the same ends as :data:`nerve.categories.SPELLS_VIEW` reads."""
    from nerve.categories import ends_between

    rows = reader.rows(Window(lo, hi, ""), source=SourceClass.APP_FOCUS)
    out: list[tuple[int, str, Row | None]] = [(r.t, str(r.data.get("event")), r) for r in rows]
    out += [(t, word, None) for t, word in ends_between(reader.conn, lo, hi)]
    return sorted(out, key=lambda e: e[0])


def spells(reader: Reader, window: Window | None) -> list[Spell]:
    """Each focus in the window, clipped to it; ``away``, a daemon's stop and a pause end
    one, ``back`` and a resume resume it."""
    end = min(window.end_ns, reader.now_ns) if window else reader.now_ns
    start = window.start_ns if window else 0
    out: list[Spell] = []
    current: Row | None = None
    since: int | None = None
    for t, event, row in [*_focus_events(reader, max(0, start - _DAY), end), (end, "", None)]:
        if current is not None and since is not None and event in ("focus", "away", "end", ""):
            lo, hi = max(since, start), min(t, end)
            if hi > lo:
                out.append(Spell(current, lo, hi))
        if row is not None and event == "focus":
            current, since = row, t
        elif event in ("away", "end"):
            since = None
        elif event == "back":
            since = t
    return out


@dataclass(frozen=True)
class Away:
    """Time away from the machine: from an ``away`` (its row) to the next input."""

    row: Row
    start: int
    end: int
    ongoing: bool


def away_spells(reader: Reader, window: Window | None) -> list[Away]:
    """Each spell away in the window, clipped to it: from ``away`` to the next ``back`` or
    focus (or to a daemon's stop: nothing is known after it)."""
    end = min(window.end_ns, reader.now_ns) if window else reader.now_ns
    start = window.start_ns if window else 0
    out: list[Away] = []
    since: tuple[int, Row] | None = None
    for t, event, row in [*_focus_events(reader, max(0, start - _DAY), end), (end, "", None)]:
        if since is not None and event in ("back", "focus", "end", ""):
            lo, hi = max(since[0], start), min(t, end)
            if hi > lo:
                out.append(Away(since[1], lo, hi, ongoing=event == "" and hi >= reader.now_ns))
            since = None
        if event == "away" and row is not None:
            since = (t, row)
    return out


def folders(reader: Reader, plan: Plan) -> Found:
    """Folders worked in: where commands ran (the shell hook's working directory) and where
    files changed, the busiest first; a named folder lists what happened in it."""
    found: dict[str, list[tuple[Row, str]]] = {}
    for row in _commands_over(reader, plan.window):
        cwd = row.data.get("cwd")
        if isinstance(cwd, str) and cwd:
            found.setdefault(cwd.rstrip("/") or "/", []).append((row, f"ran {_command_line(row)}"))
    for row in reader.rows(plan.window, source=SourceClass.FILE_CHANGE):
        path = str(row.data.get("path") or "")
        if "/" in path:
            folder, base = path.rsplit("/", 1)
            change = f"{row.data.get('change', 'changed')} {base}"
            found.setdefault(folder, []).append((row, f"file {change}"))
    name = plan.subject.name
    if name:
        found = {f: rows for f, rows in found.items() if _folder_is(f, name)}
    if name and not found:
        return _ran_where(reader, plan, name)
    if not found:
        return _missing(reader, plan.window, "folder with commands or file changes")
    busiest = sorted(found.items(), key=lambda item: (-len(item[1]), item[0]))
    if name:
        rows = sorted((r for _, rs in busiest for r in rs), key=lambda item: item[0].t)
        lines = [(r, f"{reader.when(r.t)}  {text}") for r, text in rows]
        where = ", ".join(f for f, _ in busiest)
        return reader.listing(f"In {where} {reader.scope(plan.window)}:", lines, plan.window)
    lines = []
    for folder, rows in busiest:
        runs = sum(1 for _, text in rows if text.startswith("ran "))
        changes = len(rows) - runs
        said = ", ".join(
            part for part in (f"{runs} command{'s' * (runs != 1)}" if runs else "",
                              f"{changes} file change{'s' * (changes != 1)}" if changes else "")
            if part
        )  # fmt: skip
        first, last = rows[0][0].t, max(r.t for r, _ in rows)
        lines.append((rows[0][0], f"{folder}: {said}, {reader.when(first)} to {reader.when(last)}"))
    title = f"Folders worked in {reader.scope(plan.window)}, the busiest first:"
    return reader.listing(title, lines, plan.window)


def _folder_is(folder: str, name: str) -> bool:
    """Whether the folder is the one named: a path by its end (``project/docs``,
    ``~/work/x``: any home's), else every word among its parts."""
    if "/" in name:
        tail = name.removeprefix("~").strip("/")
        return folder.rstrip("/").endswith("/" + tail) or folder.strip("/") == tail
    return _words_in(name, *folder.split("/"))


def _ran_where(reader: Reader, plan: Plan, name: str) -> Found:
    """Where the commands ``name`` names ran (their working directories), or the question
    back when it names neither a folder nor a command."""
    rows = [r for r in _commands_over(reader, plan.window, name) if r.data.get("cwd")]
    if not rows:
        return _no_thing(reader, plan, "folders")
    where = list(dict.fromkeys(str(r.data["cwd"]) for r in rows))
    lines = [(r, f"{reader.when(r.t)}  {_command_line(r)} in {r.data['cwd']}") for r in rows[::-1]]
    title = (f"`{_command_of(rows[-1])}` ran in {', '.join(where)} {reader.scope(plan.window)} "
             f"({len(rows)} run{'s' * (len(rows) != 1)}), newest first:")  # fmt: skip
    return reader.listing(title, lines, plan.window)


def away(reader: Reader, plan: Plan) -> Found:
    """Time away from the machine (no input for the focus sense's ``idle_s``): when, and
    for how long."""
    if not reader.ever(SourceClass.APP_FOCUS):
        return Found(_NO_FOCUS, answered=False)
    spans = away_spells(reader, plan.window)
    if plan.window is not None and plan.window.clock:  # "at 19:27": the whole spell then
        wide = Window(plan.window.start_ns - _DAY, plan.window.end_ns + _DAY, "")
        spans = [a for a in away_spells(reader, wide)
                 if a.start < plan.window.end_ns and a.end > plan.window.start_ns]  # fmt: skip
    if not spans:
        return _missing(reader, plan.window, "time away (every minute had input)")
    total = sum(a.end - a.start for a in spans)
    order = spans if plan.measure == "first" else spans[::-1]
    lines = [
        (a.row, f"away from {reader.when(a.start)} to "
         f"{'now' if a.ongoing else reader.when(a.end)} ({length(a.end - a.start)}), "
         f"{'still away' if a.ongoing else 'back at ' + reader.when(a.end)}")
        for a in order
    ]  # fmt: skip
    title = (
        f"Away {len(spans)} time{'s' if len(spans) != 1 else ''} {reader.scope(plan.window)}, "
        f"{length(total)} in all ({'oldest' if plan.measure == 'first' else 'newest'} first):"
    )
    return reader.listing(title, lines, plan.window)


def length(ns: int) -> str:
    """A span of time in plain words, to the nearest second: "3 min 4 s", "1 h 12 min"."""
    seconds = (ns + NS // 2) // NS
    hours, rest = divmod(seconds, 3600)
    return f"{hours} h {rest // 60} min" if hours else f"{rest // 60} min {rest % 60} s"


_NO_FOCUS = (
    "No window focus is recorded in this log: the focus sense needs an X display (or macOS), "
    "and this machine's log has none."
)


def windows(reader: Reader, plan: Plan) -> Found | None:
    """Windows: time spent in one, when it was switched to, which came before or after."""
    if not reader.ever(SourceClass.APP_FOCUS):
        return Found(_NO_FOCUS, answered=False)
    all_spells = spells(reader, plan.window)
    if plan.measure in ("before", "after"):
        return _order(reader, plan, all_spells)
    if plan.measure in ("most", "peak") and not plan.subject.name:
        return _most_used(reader, plan, all_spells)
    chosen = [s for s in all_spells if s.matches(plan.subject.name)]
    if plan.measure == "count" and chosen:
        return _window_count(reader, plan, chosen)
    if not chosen and plan.window is not None and not plan.subject.name:
        return _left_in_focus(reader, plan.window)
    if not chosen:
        return _no_thing(reader, plan, "windows")
    if plan.measure == "duration":
        total = sum(s.end - s.start for s in chosen)
        lines = [(s.row, f"{reader.when(s.start)}  {s.name()}, {length(s.end - s.start)}")
                 for s in chosen]  # fmt: skip
        what = f"`{plan.subject.name}`" if plan.subject.name else "windows"
        seconds = (total + NS // 2) // NS
        title = (f"In {what} for {length(total)} {reader.scope(plan.window)} "
                 f"({len(chosen)} spells, {seconds} s):")  # fmt: skip
        return reader.listing(title, lines, plan.window)
    if plan.window is not None and plan.window.point_ns is not None:
        return _in_focus_then(reader, plan, chosen)
    clocked = plan.window is not None and plan.window.clock
    if plan.measure == "first" and clocked:  # the first switched to, not one left a moment
        chosen = [s for s in chosen if s.end - s.start >= NS] or chosen
    lines = [(s.row, f"{reader.when(s.start)}  {s.name()} (for {length(s.end - s.start)})")
             for s in (chosen[::-1] if plan.measure != "first" else chosen)]  # fmt: skip
    verb = f"Switched to `{plan.subject.name}`" if plan.subject.name else "Windows in focus"
    if plan.measure == "first" and clocked:  # "when I came back, which window first?"
        return reader.listing(f"{verb} {reader.scope(plan.window)}, the first one:",
                              lines[:1], plan.window)  # fmt: skip
    if plan.measure == "last":  # "what window was I in last?": that one
        return reader.listing(f"{verb} {reader.scope(plan.window)}, the last one:",
                              lines[:1], plan.window)  # fmt: skip
    return reader.listing(f"{verb} {reader.scope(plan.window)}, newest first:", lines, plan.window)


def _in_focus_then(reader: Reader, plan: Plan, chosen: list[Spell]) -> Found:
    """The windows in focus at a moment ("at 19:24:10"), each since its own focus; around a
    moment ("around 19:31:30"), the one in focus at it when there is one."""
    window = plan.window
    point = (
        window.point_ns
        if window is not None and window.end_ns - window.start_ns > _AROUND
        else None
    )
    held = [s for s in chosen if point is not None and s.start <= point < s.end]
    lines = [(s.row, f"{s.name()} (in focus from {reader.when(s.row.t)})")
             for s in (held or chosen)[::-1]]  # fmt: skip
    what = f"`{plan.subject.name}` windows" if plan.subject.name else "Windows"
    return reader.listing(f"{what} in focus {reader.scope(plan.window)}, newest first:", lines,
                          plan.window)  # fmt: skip


def _window_count(reader: Reader, plan: Plan, chosen: list[Spell]) -> Found:
    """How many times the named window came into focus, or how many apps had the focus."""
    apps = list(dict.fromkeys(str(s.row.data.get("app") or "(no window)") for s in chosen))
    lines = [(s.row, f"{reader.when(s.start)}  {s.name()} (for {length(s.end - s.start)})")
             for s in chosen[::-1]]  # fmt: skip
    scope = reader.scope(plan.window)
    if plan.subject.name:
        times = f"{len(chosen)} time{'s' * (len(chosen) != 1)}"
        title = f"Switched to `{plan.subject.name}` {times} {scope}, newest first:"
    else:
        title = (f"{len(apps)} app{'s' * (len(apps) != 1)} had the focus {scope} "
                 f"({', '.join(apps)}), over {len(chosen)} switches; newest first:")  # fmt: skip
    return reader.listing(title, lines, plan.window)


def _most_used(reader: Reader, plan: Plan, all_spells: list[Spell]) -> Found:
    """Time in focus per app over the window, the most first."""
    per: dict[str, tuple[int, Row]] = {}
    for spell in all_spells:
        app = str(spell.row.data.get("app") or "(no window)")
        spent, first = per.get(app, (0, spell.row))
        per[app] = (spent + spell.end - spell.start, first)
    if not per:
        return _missing(reader, plan.window, "windows in focus")
    ranked = sorted(per.items(), key=lambda item: (-item[1][0], item[0]))
    lines = [(row, f"{app}: {length(ns)}") for app, (ns, row) in ranked]
    return reader.listing(f"Time in focus per app {reader.scope(plan.window)}, the most first:",
                          lines, plan.window)  # fmt: skip


def _left_in_focus(reader: Reader, window: Window) -> Found:
    """No spell in the window: the window left in focus before it, and the time away (or the
    stop) that held it."""
    focus = "json_extract_string(data, '$.event') = 'focus'"
    before = reader.rows(Window(0, window.end_ns, ""), source=SourceClass.APP_FOCUS,
                         where=focus, limit=1)  # fmt: skip
    if not before:
        return _missing(reader, window, "windows")
    last = before[-1]
    wide = Window(window.start_ns - _DAY, window.end_ns + _DAY, "")
    away = [
        a for a in away_spells(reader, wide) if a.start < window.end_ns and a.end > window.start_ns
    ]
    said = Spell(last, last.t, last.t).name()
    if away:
        a = away[0]
        text = (f"No window had your input {reader.scope(window)}: you were away from "
                f"{reader.when(a.start)} to {'now' if a.ongoing else reader.when(a.end)}. "
                f"The window left in focus was {said} (from {reader.when(last.t)}).")  # fmt: skip
        return Found(text, (last.id, a.row.id))
    text = (f"No focus change is recorded {reader.scope(window)}; the last window in focus "
            f"before it was {said} (from {reader.when(last.t)}).")  # fmt: skip
    return Found(text, (last.id,))


def _order(reader: Reader, plan: Plan, all_spells: list[Spell]) -> Found:
    """The window in focus just before (or after) the newest spell of the anchor's window."""
    anchor = plan.anchor.name if plan.anchor else None
    marks = [i for i, s in enumerate(all_spells) if s.matches(anchor)]
    if not marks:
        return _no_thing(reader, Plan(plan.question, plan.window, Subject("window", anchor),
                                      "list"), "windows")  # fmt: skip
    i = marks[-1]
    j = i - 1 if plan.measure == "before" else i + 1
    at = all_spells[i]
    if not 0 <= j < len(all_spells):
        return Found(f"Nothing is recorded in focus {plan.measure} {at.name()} "
                     f"({reader.when(at.start)}).", (at.row.id,))  # fmt: skip
    other = all_spells[j]
    text = (f"{plan.measure.capitalize()} {at.name()} (in focus from {reader.when(at.start)}), "
            f"you were in {other.name()}, from {reader.when(other.start)} to "
            f"{reader.when(other.end)}.")  # fmt: skip
    return Found(text, (other.row.id, at.row.id))


# -- files -------------------------------------------------------------------------------------


def files(reader: Reader, plan: Plan) -> Found:
    """Files changed in the window (named ones, or those under a named folder): which, how
    many changes, the first or last change."""
    if not reader.ever(SourceClass.FILE_CHANGE):
        return Found("No file changes are in this log: the files sense watches no folder "
                     "(`senses.files.paths` in nerve.yaml).", answered=False)  # fmt: skip
    if plan.measure in ("before", "after") and plan.anchor is not None:
        return _file_order(reader, plan, plan.anchor)
    name, status = plan.subject.name, plan.subject.status
    rows = reader.rows(plan.window, source=SourceClass.FILE_CHANGE)
    if status is not None:
        rows = [r for r in rows if r.data.get("change") == status]
    if name:
        words = name.split()
        rows = [r for r in rows if hits(words, str(r.data.get("path") or "")) == len(words)]
    what = {"added": "files added", "deleted": "files deleted"}.get(status or "", "file changes")
    what += f" matching `{name}`" if name else ""
    if not rows:
        return _missing(reader, plan.window, what)
    lines = [(r, f"{reader.when(r.t)}  {r.data.get('change', 'changed')} "
                 f"{r.data.get('path', '?')}") for r in rows[::-1]]  # fmt: skip
    scope = reader.scope(plan.window)
    if plan.measure in ("first", "last"):
        pick = lines[-1:] if plan.measure == "first" else lines[:1]
        one = what.replace("file changes", "file change").replace("files ", "file ", 1)
        return reader.listing(f"The {plan.measure} {one} {scope}:", pick, plan.window)
    paths = list(dict.fromkeys(str(r.data.get("path") or "?") for r in rows[::-1]))
    head = (f"{len(rows)} {what} {scope}, to {len(paths)} file{'s' * (len(paths) != 1)} "
            f"({', '.join(paths[:8])}); newest first:")  # fmt: skip
    return reader.listing(head, lines, plan.window)


def _file_order(reader: Reader, plan: Plan, anchor: Subject) -> Found:
    """The file changed just before the anchor command's run began (or just after it ended)."""
    mark = anchor_run(reader, plan.window, anchor)
    if mark is None:
        return _no_thing(reader, Plan(plan.question, plan.window, anchor, "list"),
                         _said(anchor, "commands"))  # fmt: skip
    rows = reader.rows(plan.window, source=SourceClass.FILE_CHANGE)
    if plan.measure == "before":
        near = [r for r in rows if r.t <= mark.t][-1:]
    else:
        near = [r for r in rows if r.t >= _ended(mark)][:1]
    if not near:
        return Found(f"No file change is recorded {plan.measure} {_command_line(mark)} "
                     f"({reader.when(mark.t)}).", (mark.id,))  # fmt: skip
    r = near[0]
    return Found(f"{plan.measure.capitalize()} {_command_line(mark)} ({reader.when(mark.t)}), "
                 f"{r.data.get('path', '?')} was {r.data.get('change', 'changed')} at "
                 f"{reader.when(r.t)}.", (r.id, mark.id))  # fmt: skip
