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

import re
from collections.abc import Callable
from datetime import tzinfo

import duckdb

from nerve.recall.facts.activity import doing, happened, time_per_app
from nerve.recall.facts.ask import Ask, any_of
from nerve.recall.facts.commands import (
    FOLDER,
    RELATIVE,
    commands_in,
    failed_commands,
    listed_commands,
    slowest_commands,
)
from nerve.recall.facts.files import files_changed
from nerve.recall.facts.machine import usage
from nerve.recall.facts.ports import port_events
from nerve.recall.facts.processes import new_processes, top_cpu, top_memory
from nerve.recall.tier0 import Tier0Answer
from nerve.tail.when import find_period

__all__ = ["FACTS", "answer_facts"]


def _has(*patterns: str) -> Callable[[str], bool]:
    compiled = [re.compile(p) for p in patterns]
    return lambda text: all(c.search(text) for c in compiled)


def _words(text: str) -> tuple[str, ...]:
    return tuple(text.split())


_COMMANDS = any_of("commands?", "ran", "run", "runs", "shell", "typed", "executed")
_FAILED = any_of(
    "fail", "failed", "fails", "failing", "failures?", "errors?", "errored", "non-?zero",
    "exit (codes?|status)",
)  # fmt: skip
_SLOW = any_of("slowest", "longest", "slow", "took the longest")
_CPU = any_of("cpu", "processor")
_MEMORY = any_of("memory", "ram", "rss")
_WHO = any_of(
    "most", "top", "hogs?", "hogging", "hogged", "burning", "eating", "using", "used", "uses",
    "heaviest", "busiest",
    "biggest", "largest", "which process", "what process", "processes",
)  # fmt: skip
_PER_APP = any_of(
    "time per app", "per app", "time (spent )?in each app", "time by app", "which apps?",
    "apps? did i use", r"how long .*\bin (each|which)",
)  # fmt: skip
_DOING = any_of(
    "what was i (doing|working on|up to)", "what did i do", "what was (on )?(my )?screen",
    "what was focused", "which windows?", "what windows?", "what have i been doing",
    "what am i doing",
)  # fmt: skip
_FILES = any_of("files?")
_CHANGED = any_of(
    "changed", "change", "changes", "modified", "edited", "touched", "saved", "written",
    "created", "deleted",
)  # fmt: skip
_STARTED = any_of(
    "new process(es)?", "processes (were )?started", "process(es)? started",
    "which processes started", "what started", "new programs?", "programs? started",
)  # fmt: skip
_LISTED = any_of(
    "what did i run", "what have i run", "which commands", "what commands", "commands did i",
    "commands i ran", "what did i type", r"list (?:my |the |all )?commands", "my commands",
)  # fmt: skip
_PORTS = any_of("ports?", "listening", "listens?", "sockets?")
_HAPPENED = any_of(
    "what happened", "what went on", "anything happen", "what has happened", "what's happened"
)


Render = Callable[[Ask], Tier0Answer | None]


FACTS: tuple[tuple[str, Callable[[str], bool], Render], ...] = (
    ("failed_commands", _has(_COMMANDS, _FAILED), failed_commands),
    ("slowest_commands", _has(_COMMANDS, _SLOW), slowest_commands),
    ("commands_in", _has(_COMMANDS, r"\bin\s+(~|\.{0,2}/)"), commands_in),
    ("top_cpu", _has(_CPU, _WHO), top_cpu),
    ("top_memory", _has(_MEMORY, _WHO), top_memory),
    ("time_per_app", _has(_PER_APP), time_per_app),
    ("doing", _has(_DOING), doing),
    ("files_changed", _has(_FILES, _CHANGED), files_changed),
    ("ports", _has(_PORTS), port_events),
    ("new_processes", _has(_STARTED), new_processes),
    ("cpu_usage", _has(_CPU), lambda a: usage(a, "cpu", "cpu_usage")),
    ("memory_usage", _has(_MEMORY), lambda a: usage(a, "memory", "memory_usage")),
    ("commands", _has(_LISTED), listed_commands),
    ("happened", _has(_HAPPENED), happened),
)
"""(intent, does the lower-cased question fit, render), tried in order."""


_DEFER = re.compile(any_of("held", "hold", "withheld", "surfaced", "budget", "highlights?"))
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
        took long cpu processor most top hog hogs hogging hogged burning eating using used uses
        use heaviest
        busiest biggest largest process processes program programs memory ram rss time per
        app apps application applications spent each doing working up screen focused focus
        window windows been files file changed change changes modified edited touched saved
        written created deleted new started start happened went anything happen usage much
        level load one two three five ten fifteen twenty thirty folder directory dir under
        inside there it its port ports opened open closed close stopped listening listen
        listens socket sockets owns owner owned appeared appear
        """
    )
)
"""Every word the intents here understand; a question with another one escalates."""


def _strange(text: str) -> bool:
    """Whether the question holds words no intent here understands: then escalate."""
    rest = FOLDER.sub(" ", text)
    rest = RELATIVE.sub(" ", rest) if re.search(r"\bfiles?\b", rest) else rest
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
    ask = Ask(conn, text, find_period(text, now_ns=now_ns, tz=tz), now_ns, tz)
    for _, fits, render in FACTS:
        if fits(text):
            found = render(ask)
            if found is not None:
                return found
    return None
