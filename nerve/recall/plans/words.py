"""Words that name a thing the log knows: :class:`Known` holds the words of the commands the
shell hook recorded (and the folders they ran in), so a question naming ``make test``,
``false``, ``curl`` or the memory ``grower`` (``memgrow.py``) is read as being about those
commands without a word like "run".

A question word *hits* a thing when one of the thing's words contains it, or its stem
(:func:`stem`: ``hogged`` → ``hog``, ``grower`` → ``grow``), of three letters or more.
"""

from __future__ import annotations

import re

import duckdb

from nerve.events import SourceClass
from nerve.recall.plans.log import Reader
from nerve.recall.plans.memo import by_segment
from nerve.recall.plans.tops import folded_tops

__all__ = ["APP_KINDS", "Known", "app_hit", "app_kind", "hits", "known_of", "stem", "tokens"]

_LIMIT = 2_000
_SUFFIXES = ("ing", "ers", "er", "ed", "es", "s")


APP_KINDS = {
    "editor": ("vim", "nvim", "emacs", "code", "gedit", "nano", "kate", "sublime", "idea",
               "pycharm", "zed", "helix"),
    "terminal": ("xterm", "terminal", "konsole", "alacritty", "kitty", "wezterm", "tilix",
                 "urxvt", "foot", "iterm"),
    "browser": ("firefox", "chrome", "chromium", "safari", "brave", "edge", "opera", "vivaldi"),
}  # fmt: skip
"""Words a person says for a kind of app, and the apps (lower case) that are one."""
_KIND_WORDS = {"browsing": "browser"}
"""Other words for a kind of app."""


def app_hit(word: str, app: str) -> bool:
    """Whether ``word`` names the app: its name holds it, or the word is a kind the app is
    (``editor`` and Vim)."""
    app = app.lower()
    return any(name in app for name in APP_KINDS.get(app_kind(word) or "", ()))


def app_kind(word: str) -> str | None:
    """The kind of app ``word`` names ("editors", "browsing": browser), or None."""
    word = _KIND_WORDS.get(word, word)
    return word if word in APP_KINDS else word[:-1] if word[:-1] in APP_KINDS else None


def stem(word: str) -> str:
    """The word without a common English ending (``hogged`` → ``hog``), kept at three letters
    or more."""
    for suffix in _SUFFIXES:
        if word.endswith(suffix) and len(word) - len(suffix) >= 3:
            base = word[: -len(suffix)]
            if len(base) > 3 and base[-1] == base[-2]:
                base = base[:-1]  # hogg → hog
            return base
    return word


def tokens(text: str) -> list[str]:
    """A thing's words, lower case: each whitespace part, and a path's last part with and
    without its extension (``./tools/cpuhog.py`` gives ``cpuhog.py`` and ``cpuhog``)."""
    out: list[str] = []
    for part in text.lower().split():
        out.append(part)
        base = part.rstrip("/").rsplit("/", 1)[-1]
        if base and base != part:
            out.append(base)
        if "." in base.strip("."):
            out.append(base.strip(".").split(".", 1)[0])
    return [t for t in out if t]


def hits(words: list[str], text: str) -> int:
    """How many of ``words`` hit ``text``'s words (see the module)."""
    mine = tokens(text)
    return sum(1 for w in words if _hit(w, mine))


_COMMON = frozenset(
    ["log", "logs", "code", "codes", "page", "pages", "home", "new", "file", "files", "window",
     "windows", "tab", "tabs", "time", "times", "day", "thing", "things", "list", "data", "out",
     "output", "input", "event", "events", "status", "result", "results", "error", "errors",
     "name", "names", "start", "end", "top", "up", "run", "runs", "ran", "open", "get", "got",
     "set", "all", "any", "one", "main", "view", "help", "info", "line", "lines", "text", "word",
     "words", "number", "value", "values", "work", "working", "site", "web", "the", "and", "with",
     "from", "for", "what", "which", "when", "where", "who", "how", "why", "long", "much", "many",
     "did", "does", "was", "were", "front", "back", "used", "use", "last", "first", "earliest",
     "latest", "total", "before", "after", "during", "while", "then", "there", "here"]
)  # fmt: skip
"""Common English words and question words: one of these names a recorded thing only as a whole
word of it ("make *test*"), never as a part ("codes" is not curl's ``%{http_code}``), and alone
it names no window ("the earliest thing in the *log*" is not a window titled "… event log")."""


def _hit(word: str, mine: list[str]) -> bool:
    if (len(word) < 3 and not word.startswith("-")) or word in _COMMON:
        return word in mine or stem(word) in mine
    root = stem(word)
    return any(word in t or (len(root) >= 3 and root in t) for t in mine)


class Known:
    """The distinct commands, changed file paths and windows in focus the log holds (lower
    case, newest first, at most a few thousand of each). Given a connection, each list is
    read from the log the first time a rule asks for it (most questions need one or none)."""

    def __init__(
        self,
        commands: tuple[str, ...] | None = None,
        files: tuple[str, ...] | None = None,
        windows: tuple[str, ...] | None = None,
        conn: duckdb.DuckDBPyConnection | None = None,
    ) -> None:
        self._lists = {"commands": commands, "files": files, "windows": windows, "folders": None}
        self._conn = conn

    def _list(self, which: str) -> tuple[str, ...]:
        found = self._lists[which]
        if found is None:
            found = _read(self._conn, which) if self._conn is not None else ()
            self._lists[which] = found
        return found

    @property
    def commands(self) -> tuple[str, ...]:
        return self._list("commands")

    @property
    def files(self) -> tuple[str, ...]:
        return self._list("files")

    @property
    def windows(self) -> tuple[str, ...]:
        """Each as "app title"."""
        return self._list("windows")

    @property
    def folders(self) -> tuple[str, ...]:
        """The folders commands ran in (the shell hook's working directories)."""
        return self._list("folders")

    def folder_word(self, word: str) -> bool:
        """Whether ``word`` is the last part of a folder commands ran in (``src``, ``docs``)."""
        ends = {f.rstrip("/").rsplit("/", 1)[-1] for f in self.folders}
        return len(word) >= 2 and word in ends

    def command_words(self, words: list[str]) -> list[str]:
        """The ``words`` that hit some recorded command, in the question's order."""
        if not words:
            return []
        split = [tokens(c) for c in self.commands]
        return [w for w in words if any(_hit(w, mine) for mine in split)]

    def window_words(self, name: str) -> str:
        """The words of ``name`` that a window's app or title holds whole, in order."""
        if not name:
            return ""
        split = [set(re.findall(r"[\w.]+", w)) for w in self.windows]
        seen = [w for w in name.split() if len(w) >= 3 and any(w in s for s in split)]
        return "" if all(w in _COMMON for w in seen) else " ".join(seen)

    def heaviest(self, memory: bool) -> str | None:
        """The name of the process that used the most memory (or CPU) at its peak in the whole
        log ("the leak", "the hog"), or None when no process was sampled."""
        if self._conn is None:
            return None
        tops = folded_tops(Reader(self._conn, 0, None), None, ("memory" if memory else "cpu",))
        rank = (lambda f: (f.peak_rss, -f.pid)) if memory else (lambda f: (f.peak_cpu, -f.pid))
        top = max(tops, key=rank, default=None)
        return None if top is None else top.name.lower()

    def file_words(self, words: list[str]) -> list[str]:
        """The ``words`` that hit some changed file's path, in the question's order."""
        if not words:
            return []
        split = [tokens(f) for f in self.files]
        return [w for w in words if any(_hit(w, mine) for mine in split)]


_NAMES = {
    "commands": (SourceClass.SHELL, "json_extract_string(data, '$.command')", "TRUE"),
    "files": (SourceClass.FILE_CHANGE, "json_extract_string(data, '$.path')", "TRUE"),
    "folders": (SourceClass.SHELL, "json_extract_string(data, '$.cwd')", "TRUE"),
    "windows": (
        SourceClass.APP_FOCUS,
        "concat_ws(' ', json_extract_string(data, '$.app'), json_extract_string(data, '$.title'))",
        "json_extract_string(data, '$.event') = 'focus'",
    ),
}
"""Where each list of names lives: the source, the name as SQL, and which rows hold one."""


def _read(conn: duckdb.DuckDBPyConnection, which: str) -> tuple[str, ...]:
    """The newest names, each at its last time; read per segment (:mod:`.memo`), where a
    name among the newest of the log is among the newest of the segment holding its last
    time."""
    source, name, where = _NAMES[which]
    sql = (
        f"SELECT lower({name}) AS n, max(physical_ns) AS t FROM events "
        f"WHERE kind = 'observation' AND source = ? AND {where} AND n IS NOT NULL "
        f"GROUP BY n ORDER BY t DESC, n LIMIT {_LIMIT}"
    )
    last: dict[str, int] = {}
    for part in by_segment(conn, sql, [int(source)]):
        for n, t in part:
            last[n] = max(t, last.get(n, t))
    return tuple(sorted(last, key=lambda n: (-last[n], n))[:_LIMIT])


def known_of(conn: duckdb.DuckDBPyConnection) -> Known:
    """What the log knows by name, read when asked: the distinct commands the shell hook
    recorded, the paths the files sense saw change and the windows the focus sense saw."""
    return Known(conn=conn)
