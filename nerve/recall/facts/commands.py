"""Shell commands: which failed, which were slowest, which ran in a folder, what was run."""

from __future__ import annotations

import os
import re
from typing import Any

from nerve.events import SourceClass
from nerve.recall.facts.ask import Ask, Row, answer, never, nothing
from nerve.recall.tier0 import Tier0Answer

# no shell event at all, as in a fresh checkout's `nerve dev`: say where commands come from
NO_HOOK = (
    "shell commands: the shell hook records them (`nerve setup`, or `nerve shell-hook --help`)"
)

__all__ = [
    "FOLDER",
    "RELATIVE",
    "cmd",
    "commands_in",
    "exit_note",
    "failed_commands",
    "listed_commands",
    "slowest_commands",
    "subpath",
    "within",
]


def _hooked(ask: Ask) -> list[Row]:
    return [r for r in ask.rows(SourceClass.SHELL) if isinstance(r.data.get("exit"), int)]


def cmd(row: Row) -> str:
    text = row.data.get("command")
    return " ".join(str(text).split())[:120] if isinstance(text, str) else row.line


def _seconds(ms: Any) -> str:
    return f"{ms / 1000:.1f} s" if isinstance(ms, int) else "? s"


def failed_commands(ask: Ask) -> Tier0Answer:
    if not ask.ever(SourceClass.SHELL):
        return never("failed_commands", NO_HOOK)
    rows = _hooked(ask)
    if not rows and not _any_hooked(ask):
        return Tier0Answer(
            "failed_commands",
            "No exit statuses are recorded: only the shell history is read. "
            "Run `nerve setup` (or see `nerve shell-hook --help`) to record them.",
            (),
        )
    failed = [r for r in reversed(rows) if r.data["exit"] != 0]
    if not failed:
        return nothing(ask, "failed_commands", "command failed")
    used = [
        (r, f"{ask.when(r.t)}  {cmd(r)}  → exit {r.data['exit']} in {r.data.get('cwd', '?')}")
        for r in failed
    ]
    return answer(
        "failed_commands", f"{len(failed)} command(s) failed {ask.scope()}, newest first:", used
    )


def _any_hooked(ask: Ask) -> bool:
    sql = (
        "SELECT 1 FROM events WHERE kind = 'observation' AND source = ? "
        "AND json_extract_string(data, '$.format') = 'hook' LIMIT 1"
    )
    return ask.conn.execute(sql, [int(SourceClass.SHELL)]).fetchone() is not None


def slowest_commands(ask: Ask) -> Tier0Answer:
    if not ask.ever(SourceClass.SHELL):
        return never("slowest_commands", NO_HOOK)
    rows = [r for r in _hooked(ask) if isinstance(r.data.get("duration_ms"), int)]
    if not rows:
        return nothing(ask, "slowest_commands", "timed commands (from the shell hook)")
    rows.sort(key=lambda r: (-r.data["duration_ms"], -r.t))
    used = [(r, f"{_seconds(r.data['duration_ms'])}  {cmd(r)}  ({ask.when(r.t)})") for r in rows]
    return answer("slowest_commands", f"Slowest commands {ask.scope()}:", used)


FOLDER = re.compile(r"\b(?:in|under|inside)\s+((?:~|\.{1,2})?/[^\s?!,;]*|~)")


RELATIVE = re.compile(
    r"\b(?:in|under|inside)\s+(?!the\b|last\b|past\b|each\b|which\b|my\b|\d)((?:~|\.{1,2})?/?[\w.-]+(?:/[\w.-]*)*)"
)


def _folder(text: str) -> str | None:
    match = FOLDER.search(text)
    if match is None:
        return None
    return os.path.normpath(os.path.expanduser(match[1])).rstrip("/") or "/"


def _home_tail(text: str) -> str | None:
    """The part after ``~/`` of the folder named, if it was named from a home: the home the
    shell hook recorded may not be this process's."""
    match = FOLDER.search(text)
    if match is None or not match[1].startswith("~/"):
        return None
    return os.path.normpath(match[1][2:]).strip("/") or None


def _under(cwd: str, folder: str, tail: str | None) -> bool:
    """Whether ``cwd`` is ``folder`` or below it; with a home tail, any home's such folder."""
    if within(cwd, folder):
        return True
    return tail is not None and (cwd.endswith("/" + tail) or f"/{tail}/" in cwd)


def subpath(text: str) -> str | None:
    """The folder a question about files names (``in src``, ``under ./docs``), or None."""
    match = RELATIVE.search(text)
    return None if match is None else os.path.normpath(match[1]).removeprefix("./")


def within(path: str, folder: str) -> bool:
    return path == folder or path.startswith(folder.rstrip("/") + "/")


def commands_in(ask: Ask) -> Tier0Answer | None:
    folder = _folder(ask.text)
    if folder is None:
        return None
    if not ask.ever(SourceClass.SHELL):
        return never("commands_in", NO_HOOK)
    tail = _home_tail(ask.text)
    inside = [r for r in reversed(_hooked(ask)) if _under(str(r.data.get("cwd", "")), folder, tail)]
    if not inside:
        return nothing(ask, "commands_in", f"commands run in {folder} (or below it)")
    used = [
        (r, f"{ask.when(r.t)}  {cmd(r)}  (exit {r.data['exit']}, {r.data['cwd']})") for r in inside
    ]
    return answer("commands_in", f"Commands run in {folder} {ask.scope()}, newest first:", used)


def listed_commands(ask: Ask) -> Tier0Answer:
    if not ask.ever(SourceClass.SHELL):
        return never("commands", NO_HOOK)
    rows = list(reversed(ask.rows(SourceClass.SHELL)))
    if not rows:
        return nothing(ask, "commands", "commands")
    used = [(r, f"{ask.when(r.t)}  {cmd(r)}{exit_note(r)}") for r in rows]
    return answer("commands", f"{len(rows)} command(s) {ask.scope()}, newest first:", used)


def exit_note(row: Row) -> str:
    code = row.data.get("exit")
    return f"  → exit {code}" if isinstance(code, int) and code != 0 else ""
