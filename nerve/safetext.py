"""Log text made safe to show: on a terminal, in a spreadsheet.

Window titles, commands, file names and sense errors are stored as they came, control
characters and all. Written to a terminal as they are, they drive it: an OSC sequence sets
the title or (OSC 52) the clipboard, a CSI clears the screen or moves the cursor over a line,
``\\r`` or a bidi override hides text. :func:`shown` turns every such character into a
visible escape, as ``systemctl status`` and Python's ``repr`` write them: ``\\x1b``, ``\\x07``,
``\\r``, ``\\x9b``, ``\\u202e``. Once its introducer is escaped, the rest of a sequence is
plain text, so a reader sees what was attempted and the terminal does nothing. Backslashes
are left as they are (a Windows path stays readable): ``--json`` is the exact form.

:func:`csv_cell` keeps a spreadsheet from running a cell as a formula; :func:`csv_writer`
quotes a cell holding ``\\r`` (Python's writer quotes only the line end's characters).
"""

from __future__ import annotations

import csv
import re
from typing import Any, TextIO

# C0 controls (tab and newline decided by the caller), DEL, C1 controls, the Arabic letter
# mark, left-to-right / right-to-left marks, line and paragraph separators, bidi embeddings,
# overrides and isolates, and lone surrogates (no terminal can be given them).
_CONTROLS = "\x00-\x08\x0b-\x1f\x7f-\x9f\u061c\u200e\u200f\u2028-\u202e\u2066-\u2069"
_UNSAFE = re.compile(f"[{_CONTROLS}\ud800-\udfff]")
_UNSAFE_OR_BREAK = re.compile(f"[\t\n{_CONTROLS}\ud800-\udfff]")
_NAMED = {"\t": "\\t", "\n": "\\n", "\r": "\\r"}
FORMULA_STARTS = ("=", "+", "-", "@", "\t", "\r")


def _escape(match: re.Match[str]) -> str:
    char = match.group()
    if char in _NAMED:
        return _NAMED[char]
    code = ord(char)
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


def shown(text: str, *, breaks: bool = True) -> str:
    """``text`` with every control character, bidi control and lone surrogate written as a
    visible escape (``\\x1b``, ``\\u202e``); tabs and newlines kept when ``breaks`` (a
    multi-line answer), escaped too when not (one line of a listing)."""
    pattern = _UNSAFE if breaks else _UNSAFE_OR_BREAK
    return pattern.sub(_escape, text) if pattern.search(text) else text


def is_shown(text: str, *, breaks: bool = True) -> bool:
    """Whether ``text`` is already safe to write to a terminal as it is."""
    return (_UNSAFE if breaks else _UNSAFE_OR_BREAK).search(text) is None


def csv_cell(text: str) -> str:
    """A text cell a spreadsheet will not run: one starting ``=``, ``+``, ``-``, ``@``, a tab
    or ``\\r`` gets a leading ``'`` (as OWASP advises); any other text is kept exact."""
    return "'" + text if text.startswith(FORMULA_STARTS) else text


class _NewlineRows:
    """A file the CSV writer writes whole rows to: each row's ``\\r\\n`` ends as ``\\n``."""

    def __init__(self, out: TextIO) -> None:
        self.out = out

    def write(self, row: str) -> int:
        return self.out.write(row[:-2] + "\n")


def csv_writer(out: TextIO) -> Any:
    """A CSV writer whose rows end ``\\n`` and that quotes every cell holding ``\\r`` or
    ``\\n``, so a reader sees the cell whole (told ``\\n``, Python's writer leaves a
    ``\\r`` bare)."""
    return csv.writer(_NewlineRows(out), lineterminator="\r\n")
