"""Shell commands with their outcome, from the shell hook's spool; else from history files.

Source class ``shell``, trust ``Inferred``: the spool and the history files are byte streams
any program of the user's can write, and we parse them; no OS API vouches for them (Sense
v0.1 §2). One observation per command.

**The spool** (``nerve shell-hook bash|zsh|fish``; the line format is in
:mod:`nerve.shellhook`) gives each command its exit status, duration, working directory,
shell session and start time: ``{"command", "format": "hook", "exit", "duration_ms", "cwd",
"session", "shell", "timestamp", "elapsed_s", "readings": {"exit_status", "duration_ms",
"failure_streak"}}`` (``failure_streak``: failures in a row in that session, this one
included). The spool is read from its start when first seen (it holds only the hook's
lines), so commands run while the daemon was down are read when it is back. A fully read
spool past ``spool_max_bytes`` is renamed to ``<spool>.1``; the hook then starts a new one,
and any line a shell wrote to the old file meanwhile is read from it at the next compute.
A renamed spool whose last line is still being written is kept until that line is
complete (or unchanged for a compute: a shell killed mid-write). A spool found shorter than
where reading stopped, or rewritten before it (``tail``, a hash of the bytes before the
offset), is read from its start: it holds only the hook's lines. Lines of another version or
with a field out of range are refused: ``note`` names the first, ``refused`` counts them all
(both in the sense's state, ``nerve sense state shell``). Once the spool has had a line from a
shell, that shell's history file is no longer read (the hook has its commands, with more
detail).

**History files** are the fallback for shells without the hook:
``{"command", "format", "timestamp", "elapsed_s", "file"}``.

Per file, state keeps ``{inode, offset, tail, status, note}``: ``offset`` is the end of the
last complete record read and ``tail`` a hash of the bytes just before it. Only bytes past
``offset`` are read, at most ``max_read_bytes`` and ``max_per_compute`` commands at a time
(the rest wait for the next compute; nothing is skipped). A file seen for the first time is
started at its end (old history is not replayed); a file that was missing and then appears
is read from its start. When a file is replaced (new inode), truncated or rewritten in place
(``tail`` no longer matches), reading resumes at its new end and ``note`` says why: reading
from the start would replay the whole retained history as if it were new.

Formats: zsh extended history (``: 1700000000:5;cmd``, multi-line with ``\\``-newline,
metafied bytes decoded), bash with ``HISTTIMEFORMAT`` (``#1700000000`` before a command) and
plain one-command-per-line. Only regular files are read (a symlink to one is fine); anything
else is skipped with a note. Secrets in commands (tokens, ``password=…``, passwords in URLs)
are replaced before they reach the log by nerve's privacy rules, which apply to every sense
(``privacy:`` in nerve.yaml; ``nerve privacy test "CMD"`` shows what they do).

Options: ``files`` (default ``~/.bash_history``, ``~/.zsh_history`` and ``$HISTFILE``),
``max_per_compute`` (50), ``max_read_bytes`` (262144), ``spool`` (default
``$NERVE_SHELL_SPOOL``, else ``$XDG_STATE_HOME/nerve/shell.spool``), ``spool_max_bytes``
(1048576). The former ``redact`` option is now
``privacy.rules`` in nerve.yaml; giving it is an error that says so.
"""

from __future__ import annotations

import hashlib
import os
import re
import stat
import time
from collections.abc import Iterator
from typing import Any, NamedTuple

from nerve.contract import Observation, Result, SenseContext
from nerve.events import SourceClass, Trust
from nerve.privacy.cut import shorten
from nerve.shellhook import SpoolRecord, default_spool, parse_spool_line

initial_state: dict[str, Any] = {"files": {}, "commands": 0}

_ZSH_HEAD = re.compile(rb": \d+:\d+;")
_ZSH_RECORD = re.compile(rb": (\d+):(\d+);(.*)", re.S)
_BASH_STAMP = re.compile(rb"#(\d{1,12})")
_META = re.compile(rb"\x83(.)", re.S)
_TAIL_BYTES = 64
_LINE_CHARS = 120
_MAX_STAMP_S = (2**63 - 1) // 1_000_000_000  # valid_time_ns is a signed 64-bit integer


class _Options(NamedTuple):
    files: list[str]
    max_per_compute: int
    max_read_bytes: int
    spool: str
    spool_max_bytes: int


_MAX_SESSIONS = 64
_HISTORY_OF = {"bash": "bash_history", "zsh": "zsh_history", "fish": "fish_history"}


def compute(state: dict[str, Any], ctx: SenseContext) -> Result:
    opts = _options(ctx)
    spool, records = _read_spool(opts, state.get("spool"))
    hooked = sorted({*_strings(state.get("hooked")), *(r.shell for r in records)})
    streaks = dict(state.get("streaks") or {})
    observations = [_hook_observation(r, streaks) for r in records]
    previous = state.get("files")
    previous = previous if isinstance(previous, dict) else {}
    files: dict[str, Any] = {}
    for path in opts.files:
        if _hooked_history(path, hooked):
            files[path] = _keep(previous.get(path), "skipped: the shell hook records these")
            continue
        budget = opts.max_per_compute - len(observations)
        files[path], found = _scan(path, previous.get(path), budget, opts.max_read_bytes)
        observations += [_observation(r, path) for r in found]
    commands = int(state.get("commands") or 0) + len(observations)
    new_state = {"files": files, "commands": commands, "spool": spool}
    if hooked:
        new_state |= {"hooked": hooked, "streaks": _bounded_streaks(streaks)}
    return Result(state=new_state, observations=observations)


def _strings(value: Any) -> list[str]:
    return [v for v in value if isinstance(v, str)] if isinstance(value, list) else []


def _hooked_history(path: str, hooked: list[str]) -> bool:
    name = os.path.basename(path).lstrip(".")
    return any(_HISTORY_OF.get(shell) == name for shell in hooked)


def _bounded_streaks(streaks: dict[str, Any]) -> dict[str, Any]:
    """The newest sessions' streaks (dicts keep insertion order; a session moves to the end)."""
    return dict(list(streaks.items())[-_MAX_SESSIONS:])


# -- the hook's spool ---------------------------------------------------------------------


def _read_spool(opts: _Options, entry: Any) -> tuple[dict[str, Any], list[SpoolRecord]]:
    """New records from a renamed spool's tail, then the spool; the spool's new state."""
    entry = dict(entry) if isinstance(entry, dict) else {}
    refused = _count(entry.get("refused"))
    rotated, records, bad = _drain_rotated(opts, entry.pop("rotated", None))
    try:
        fd = os.open(opts.spool, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_NOCTTY", 0))
    except FileNotFoundError:
        new = {"inode": None, "offset": 0, "note": "no spool yet (no hook has written)"}
        return _kept(new, rotated, refused + bad), records
    except OSError as exc:
        return {**entry, "note": f"unreadable: {exc.strerror or exc}"}, records
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            return {**entry, "note": "skipped: the spool is not a regular file"}, records
        offset = _spool_resume(fd, info, entry)
        budget = opts.max_per_compute - len(records)
        found, offset, note, more = _spool_lines(
            fd, offset, info.st_size, budget, opts.max_read_bytes
        )
        tail = _tail(fd, offset)
    finally:
        os.close(fd)
    new = {"inode": info.st_ino, "offset": offset, "tail": tail, "note": note}
    if offset == info.st_size and offset >= opts.spool_max_bytes and rotated is None:
        new = _rotate(opts.spool, new)
    return _kept(new, rotated, refused + bad + more), records + found


def _count(value: Any) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) else 0


def _kept(new: dict[str, Any], rotated: Any, refused: int) -> dict[str, Any]:
    """The spool's state with the renamed spool still to finish and the refused-line count."""
    if rotated is not None:
        new = {**new, "rotated": rotated}
    return {**new, "refused": refused}


def _spool_resume(fd: int, info: os.stat_result, entry: dict[str, Any]) -> int:
    """Where to read from: the last offset, or 0 for a new spool or one truncated since (a
    spool holds only the hook's lines, so a shrunk one is read whole, even grown again)."""
    offset = int(entry.get("offset") or 0)
    if entry.get("inode") != info.st_ino or offset > info.st_size:
        return 0
    if "tail" in entry and _tail(fd, offset) != entry["tail"]:
        return 0
    return offset


def _spool_lines(
    fd: int, offset: int, size: int, budget: int, max_read: int
) -> tuple[list[SpoolRecord], int, str | None, int]:
    """Complete lines from ``offset`` (at most ``budget``); bad lines refused and counted.

    A line still being written (no newline yet) is left for the next read.
    """
    data = os.pread(fd, min(size - offset, max_read), offset)
    records: list[SpoolRecord] = []
    bad: list[str] = []
    pos = 0
    while len(records) < budget and (end := data.find(b"\n", pos)) >= 0:
        line = os.fsdecode(data[pos:end])
        try:
            records.append(parse_spool_line(line))
        except ValueError as exc:
            bad.append(f"byte {offset + pos}: {exc}")
        pos = end + 1
    if pos == 0 and len(data) == max_read:
        pos, bad = len(data), [*bad, f"skipped {len(data)} bytes holding no complete line"]
    note = f"{len(bad)} bad spool line(s) refused; first at {bad[0]}" if bad else None
    return records, offset + pos, note, len(bad)


def _rotate(path: str, entry: dict[str, Any]) -> dict[str, Any]:
    try:
        os.replace(path, path + ".1")
    except OSError as exc:
        return {**entry, "note": f"could not rename the full spool: {exc.strerror or exc}"}
    rotated = {"inode": entry["inode"], "offset": entry["offset"]}
    return {"inode": None, "offset": 0, "note": entry.get("note"), "rotated": rotated}


def _drain_rotated(opts: _Options, rotated: Any) -> tuple[Any, list[SpoolRecord], int]:
    """Lines a shell appended to the spool after it was read and renamed, and how many were
    refused; the renamed spool is dropped once read to its end. A last line still being
    written keeps it one more compute (it is read once complete; no longer if it stays cut)."""
    if not isinstance(rotated, dict):
        return None, [], 0
    old = opts.spool + ".1"
    try:
        fd = os.open(old, os.O_RDONLY)
    except OSError:
        return None, [], 0
    try:
        info = os.fstat(fd)
        if info.st_ino != rotated.get("inode"):
            return None, [], 0
        offset = int(rotated.get("offset") or 0)
        found, offset, _, bad = _spool_lines(fd, offset, info.st_size, 10**6, info.st_size + 1)
    finally:
        os.close(fd)
    if offset < info.st_size and info.st_size != rotated.get("size"):
        return {"inode": info.st_ino, "offset": offset, "size": info.st_size}, found, bad
    os.unlink(old)
    return None, found, bad


def _hook_observation(record: SpoolRecord, streaks: dict[str, Any]) -> Observation:
    record = record._replace(command=_readable(record.command), cwd=_readable(record.cwd))
    streak = int(streaks.pop(record.session, 0) or 0) + 1 if record.exit != 0 else 0
    streaks[record.session] = streak
    payload = {
        "command": record.command,
        "format": "hook",
        "exit": record.exit,
        "duration_ms": record.duration_ms,
        "cwd": record.cwd,
        "session": record.session,
        "shell": record.shell,
        "timestamp": record.start_ns // 1_000_000_000,
        "elapsed_s": record.duration_ms // 1000,
        "readings": {
            "exit_status": record.exit,
            "duration_ms": record.duration_ms,
            "failure_streak": streak,
        },
    }
    line = _line(record.command)
    if record.exit != 0:  # the "…" gives way to the exit status
        kept = max(_LINE_CHARS, len(line.removesuffix("…")) - 2)
        line = f"{line[: kept + 2]} [exit {record.exit}]"
    return Observation(
        source=SourceClass.SHELL,
        line=line,
        payload=payload,
        trust=Trust.INFERRED,
        valid_time_ns=record.start_ns,
    )


def _readable(text: str) -> str:
    """Text for the log: a byte that is not UTF-8 (exact in the spool) becomes U+FFFD."""
    return text.encode("utf-8", "surrogateescape").decode("utf-8", "replace")


def parse_history(data: bytes, limit: int) -> tuple[list[dict[str, Any]], int]:
    """Up to ``limit`` complete commands from ``data`` and how many bytes they span.

    A bash ``#timestamp`` line is consumed only with the command after it; an unfinished
    last line (no newline yet, or a zsh record still continuing) is left for the next read.
    """
    records: list[dict[str, Any]] = []
    consumed, stamp = 0, None
    for end, raw in _logical_lines(data):
        if len(records) >= limit:
            break
        if match := _BASH_STAMP.fullmatch(raw):
            stamp = int(match[1])
            continue
        record = _record(raw, stamp)
        if record["command"].strip():
            records.append(record)
        consumed, stamp = end, None
    return records, consumed


def _logical_lines(data: bytes) -> Iterator[tuple[int, bytes]]:
    """``(end offset, record bytes)`` per complete record; zsh records span ``\\``-newlines."""
    pos = 0
    while (end := data.find(b"\n", pos)) >= 0:
        if _ZSH_HEAD.match(data, pos):
            while data[end - 1 : end] == b"\\":
                end = data.find(b"\n", end + 1)
                if end < 0:
                    return
        yield end + 1, data[pos:end].removesuffix(b"\r")
        pos = end + 1


def _record(raw: bytes, stamp: int | None) -> dict[str, Any]:
    if match := _ZSH_RECORD.fullmatch(raw):
        command = _META.sub(lambda m: bytes((m[1][0] ^ 0x20,)), match[3]).replace(b"\\\n", b"\n")
        return {
            "command": command.decode("utf-8", "replace"),
            "format": "zsh-extended",
            "timestamp": int(match[1]),
            "elapsed_s": int(match[2]),
        }
    fmt = "plain" if stamp is None else "bash-timestamped"
    return {
        "command": raw.decode("utf-8", "replace"),
        "format": fmt,
        "timestamp": stamp,
        "elapsed_s": None,
    }


def _options(ctx: SenseContext) -> _Options:
    files = ctx.options.get("files", _default_files())
    if not isinstance(files, list | tuple) or not all(isinstance(f, str) and f for f in files):
        raise ValueError(f"senses.{ctx.name}.options.files must be a list of paths, got {files!r}")
    if "redact" in ctx.options:
        raise ValueError(
            f"senses.{ctx.name}.options.redact is gone: secrets are redacted for every sense by "
            "the privacy rules; move these regexes to privacy.rules in nerve.yaml"
        )
    expanded = [os.path.abspath(os.path.expanduser(f)) for f in files]
    return _Options(
        files=list(dict.fromkeys(expanded)),
        max_per_compute=_positive(ctx, "max_per_compute", 50),
        max_read_bytes=_positive(ctx, "max_read_bytes", 256 * 1024),
        spool=_spool_option(ctx),
        spool_max_bytes=_positive(ctx, "spool_max_bytes", 1024 * 1024),
    )


def _spool_option(ctx: SenseContext) -> str:
    spool = ctx.options.get("spool")
    if spool is None:
        return str(default_spool())
    if not isinstance(spool, str) or not spool:
        raise ValueError(f"senses.{ctx.name}.options.spool must be a path, got {spool!r}")
    return os.path.abspath(os.path.expanduser(spool))


def _default_files() -> list[str]:
    files = ["~/.bash_history", "~/.zsh_history"]
    histfile = os.environ.get("HISTFILE")
    return [*files, histfile] if histfile else files


def _positive(ctx: SenseContext, key: str, default: int) -> int:
    value = ctx.options.get(key, default)
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise ValueError(
            f"senses.{ctx.name}.options.{key} must be a positive integer, got {value!r}"
        )
    return value


def _scan(
    path: str, entry: Any, budget: int, max_read: int
) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """The file's new state and the commands appended since ``entry`` was taken."""
    entry = entry if isinstance(entry, dict) else None
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_NOCTTY", 0))
    except FileNotFoundError:
        return _entry(
            "missing", note="no such file; it will be read from its start once it appears"
        ), []
    except OSError as exc:
        return _keep(entry, f"unreadable: {exc.strerror or exc}"), []
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            return _keep(entry, "skipped: not a regular file"), []
        return _advance(fd, info, entry, budget, max_read)
    finally:
        os.close(fd)


def _advance(
    fd: int, info: os.stat_result, entry: dict[str, Any] | None, budget: int, max_read: int
) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    offset, note = _resume_at(fd, info, entry)
    data = os.pread(fd, min(info.st_size - offset, max_read), offset)
    records, consumed = parse_history(data, budget)
    if consumed == 0 and len(data) == max_read:
        consumed, note = len(data), f"skipped {len(data)} bytes holding no complete line"
    offset += consumed
    if note is None and entry is not None:
        note = entry.get("note")
    return _entry("ok", info.st_ino, offset, _tail(fd, offset), note), records


def _resume_at(
    fd: int, info: os.stat_result, entry: dict[str, Any] | None
) -> tuple[int, str | None]:
    """Where to read from, and why when it is not where the last read stopped."""
    end = info.st_size
    if entry is None or (entry.get("inode") is None and entry.get("status") != "missing"):
        return end, "first seen: started at the end; earlier history is not replayed"
    if entry.get("inode") is None:
        return 0, "appeared after being missing: read from the start"
    offset = int(entry.get("offset") or 0)
    if entry["inode"] != info.st_ino:
        return end, "replaced (new inode): resumed at the new end"
    if end < offset:
        return end, "truncated: resumed at the new end"
    if _tail(fd, offset) != entry.get("tail"):
        return end, "rewritten in place: resumed at the new end"
    return offset, None


def _tail(fd: int, offset: int) -> str:
    start = max(0, offset - _TAIL_BYTES)
    return hashlib.sha256(os.pread(fd, offset - start, start)).hexdigest()[:32]


def _entry(
    status: str, inode: int | None = None, offset: int = 0, tail: str = "", note: str | None = None
) -> dict[str, Any]:
    return {"status": status, "inode": inode, "offset": offset, "tail": tail, "note": note}


def _keep(entry: dict[str, Any] | None, status: str) -> dict[str, Any]:
    """Keep the read position (the file may come back) but record why it was not read."""
    if entry is None:
        return _entry(status, note=status)
    return {**entry, "status": status, "note": status}


def _observation(record: dict[str, Any], path: str) -> Observation:
    command = record["command"]
    payload = {**record, "file": path}
    return Observation(
        source=SourceClass.SHELL,
        line=_line(command),
        payload=payload,
        trust=Trust.INFERRED,
        valid_time_ns=_valid_ns(record["timestamp"]),
    )


def _line(command: str) -> str:
    """``$ `` and the command's first line, shortened with ``…`` when anything was cut (never
    through a secret: see :func:`nerve.privacy.cut.shorten`)."""
    first = command.strip().partition("\n")[0]
    short = shorten(first, _LINE_CHARS)
    return f"$ {short}…" if short != command.strip() else f"$ {short}"


def _valid_ns(stamp: int | None) -> int:
    """The command's own time when the history recorded a plausible one, else now."""
    if stamp is not None and 0 < stamp < _MAX_STAMP_S:
        return stamp * 1_000_000_000
    return time.time_ns()
