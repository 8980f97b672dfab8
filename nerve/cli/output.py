"""Shared output: JSON lines, CSV, and tables — styled only on a terminal, bounded there.

Results arrive in chunks (a DuckDB record batch, or one list of rows) and are written as
they come: JSON keeps the columns' order, a terminal shows at most ``limit`` rows and says on
stderr how many it left out, pipes get every row.

Log text is shown safe (:mod:`nerve.safetext`): tables and tab-separated lines write control
characters as visible escapes (a pipe into ``less -R`` is still a terminal); ``--json`` and
``--csv`` keep the data exact, but a CSV text cell a spreadsheet would run as a formula gets
a leading ``'``.
"""

from __future__ import annotations

import json
import os
import shutil
import sys
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol, TextIO

from nerve.canonical import jsonable
from nerve.cli.pager import PAGING, page
from nerve.safetext import csv_cell, csv_writer, shown

if TYPE_CHECKING:  # rich's console is loaded when something is drawn, not at start-up
    from rich.console import Console

UNWRAPPED = 1 << 14  # rich's width when not on a terminal: piped text is never wrapped
DEFAULT_LIMIT = 100
FOR_ALL = "use --limit 0, --csv or --json for all"
GAP = "  "
MIN_WIDTH = 6
SAMPLE_ROWS = 1000  # rows that size a terminal table's columns
LIMIT_HELP = (
    f"At most this many rows, piped or not (0: all). Unset: {DEFAULT_LIMIT} on a terminal, "
    "every row when piped."
)


def console(file: TextIO | None = None) -> Console:
    """A console that styles only on a terminal, honours ``NO_COLOR``, and wraps nothing
    when piped or writing to a file."""
    from rich.console import Console

    out = file or sys.stdout
    return Console(
        file=out,
        no_color=bool(os.environ.get("NO_COLOR")),
        highlight=False,
        soft_wrap=False,
        width=terminal_width(out) if is_terminal(out) else UNWRAPPED,
    )


def is_terminal(file: TextIO | None = None) -> bool:
    out = file or sys.stdout
    return bool(getattr(out, "isatty", lambda: False)())


def terminal_width(file: TextIO | None = None) -> int:
    """The columns of the terminal ``file`` is on; where it says none (0 columns, as a pty
    nobody sized or a serial console does) or is no terminal, ``COLUMNS`` or 80."""
    out = file or sys.stdout
    try:
        columns = os.get_terminal_size(out.fileno()).columns
    except (OSError, ValueError, AttributeError):
        columns = 0
    return columns or shutil.get_terminal_size().columns


def plural(count: int, noun: str) -> str:
    """``1 event``, ``2 events``."""
    return f"{count} {noun}{'' if count == 1 else 's'}"


def dumps(value: Any) -> str:
    """Byte-stable JSON: sorted keys, no spaces, UTF-8 kept."""
    return json.dumps(jsonable(value), sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def emit_json(value: Any, file: TextIO | None = None) -> None:
    (file or sys.stdout).write(dumps(value) + "\n")


def row_json(columns: Sequence[str], row: Sequence[Any]) -> str:
    """One result row as a JSON object in the columns' order (nested values as they came)."""
    obj = {name: jsonable(value) for name, value in zip(columns, row, strict=True)}
    return json.dumps(obj, separators=(",", ":"), ensure_ascii=False)


class Chunk(Protocol):
    """Rows of a result, turned into Python values only when asked."""

    @property
    def num_rows(self) -> int: ...

    def rows(self, stop: int | None = None) -> Sequence[Sequence[Any]]: ...


@dataclass(frozen=True)
class ListChunk:
    data: Sequence[Sequence[Any]]

    @property
    def num_rows(self) -> int:
        return len(self.data)

    def rows(self, stop: int | None = None) -> Sequence[Sequence[Any]]:
        return self.data if stop is None else self.data[:stop]


def render_rows(
    columns: Sequence[str],
    rows: Sequence[Sequence[Any]],
    *,
    fmt: str,
    title: str | None = None,
    file: TextIO | None = None,
    limit: int | None = 0,
) -> int:
    """Print rows as ``json`` (one object per line), ``csv``, or a table (tab-separated
    when piped); see :func:`render_chunks`."""
    return render_chunks(columns, [ListChunk(rows)], fmt=fmt, title=title, file=file, limit=limit)


def render_chunks(
    columns: Sequence[str],
    chunks: Iterable[Chunk],
    *,
    fmt: str,
    title: str | None = None,
    file: TextIO | None = None,
    limit: int | None = None,
) -> int:
    """Write each chunk as it comes. ``limit`` rows at most, wherever they go (0: all);
    ``None`` is the default a person did not type: ``DEFAULT_LIMIT`` on a terminal's
    table, every row elsewhere. What a terminal left out is counted on stderr."""
    out = file or sys.stdout
    terminal = fmt == "table" and is_terminal(out)
    cap = (DEFAULT_LIMIT if terminal else 0) if limit is None else limit
    if not terminal:
        _write_plain(columns, _capped(chunks, cap), fmt, out)
        return 0
    if out is sys.stdout:
        page()
        out = sys.stdout
    left, layout = _terminal_table(columns, chunks, out, title, cap)
    if layout.note():
        note(_fill(layout.note() or "", terminal_width(out)))
    if left:
        more_rows(left, FOR_ALL)
    return left


def _capped(chunks: Iterable[Chunk], cap: int) -> Iterable[Sequence[Sequence[Any]]]:
    """The rows of each chunk, ``cap`` in all at most (0: every row)."""
    taken = 0
    for chunk in chunks:
        rows = chunk.rows(cap - taken if cap else None)
        taken += len(rows)
        yield rows
        if cap and taken >= cap:
            return


def _write_plain(
    columns: Sequence[str], batches: Iterable[Sequence[Sequence[Any]]], fmt: str, out: TextIO
) -> None:
    if fmt == "json":
        for rows in batches:
            out.write("".join(row_json(columns, row) + "\n" for row in rows))
    elif fmt == "csv":
        writer = csv_writer(out)
        writer.writerow([csv_cell(name) for name in columns])
        for rows in batches:
            writer.writerows([[_csv_cell(v) for v in row] for row in rows])
    else:
        out.write("\t".join(map(flat, columns)) + "\n")
        for rows in batches:
            out.write("".join("\t".join(flat(_cell(v)) for v in row) + "\n" for row in rows))


def note(text: str) -> None:
    """A line for the person, not the data: on stderr (in the pager, below the rows); what
    it quotes from the log is shown safe."""
    (PAGING.stream or sys.stderr).write(shown(text) + "\n")


def _fill(text: str, width: int) -> str:
    """A note wrapped at word boundaries to the terminal's width, its next lines indented."""
    import textwrap

    return "\n".join(
        textwrap.wrap(text, width, subsequent_indent="  ", break_long_words=False) or [text]
    )


def more_rows(count: int, how: str) -> None:
    note(f"… {count:,} more row{'s' if count != 1 else ''} ({how})")


def _terminal_table(
    columns: Sequence[str], chunks: Iterable[Chunk], out: TextIO, title: str | None, limit: int
) -> tuple[int, Layout]:
    """Aligned columns sized from the first rows (up to ``SAMPLE_ROWS``, however the result
    is chunked); rows past the limit are only counted."""
    shown, left = 0, 0
    held: list[list[str]] = []  # rows waiting for the layout
    layout: Layout | None = None
    for chunk in chunks:
        take = chunk.num_rows if not limit else max(0, min(chunk.num_rows, limit - shown))
        left += chunk.num_rows - take
        if not take:
            continue
        rows = [[flat(_cell(v)) for v in row] for row in chunk.rows(take)]
        shown += take
        if layout is None:
            held += rows
            if len(held) < SAMPLE_ROWS and (not limit or shown < limit):
                continue
            layout, rows, held = _start_table(list(columns), held, out, title), held, []
        out.write("".join(layout.line(cells) + "\n" for cells in rows))
    if layout is None:
        layout = _start_table(list(columns), held, out, title)
        out.write("".join(layout.line(cells) + "\n" for cells in held))
    out.flush()
    return left, layout


def _start_table(
    columns: list[str], rows: list[list[str]], out: TextIO, title: str | None
) -> Layout:
    columns = [flat(name) for name in columns]
    layout = Layout.fit(columns, rows, terminal_width(out))
    _header(layout, columns, out, title)
    return layout


def _header(layout: Layout, columns: list[str], out: TextIO, title: str | None) -> None:
    from rich.text import Text

    term = console(out)
    if title:
        term.print(Text(flat(title), style="bold"))
    term.print(Text(layout.line(columns).rstrip(), style="bold"))
    term.print(Text(GAP.join("─" * w for w in layout.widths), style="dim"))


_TIMES = {"time", "ts", "hlc", "physical_ns"}
_IDS = {"id", "run", "seq", "chain_seq", "source_event"}
_TEXTS = {"line", "last_line", "last", "source_line", "text", "reason", "prompt", "message"}
_TEXTS |= {"latest", "detail", "description", "error", "last_error", "why", "question", "answer"}
_KEYS = {"name", "kind", "status", "outcome", "sense", "errors"}  # before the text
_NAMES = {"subject", "source_name", "workflow", "tool", "client", "probe", "group"}
MIN_TEXT = 20  # the least a text column is cut to before other columns are left out


TEXT, NAMES = 3, 4  # the ranks of a text column and of the names placed after it


def _rank(name: str, *, first_time: bool) -> int:
    """Which columns a narrow terminal keeps first: a time, ids, the key names (kind,
    status), the text, other names; the text then takes what is left; then the rest."""
    if first_time and (name in _TIMES or name.endswith("_at")):
        return 0
    if name in _IDS or name.endswith("_id"):
        return 1
    if name in _KEYS:
        return 2
    if name in _TEXTS:
        return TEXT
    return NAMES if name in _NAMES else 5


def _ranks(columns: Sequence[str]) -> list[int]:
    ranks: list[int] = []
    for name in columns:
        ranks.append(_rank(name, first_time=0 not in ranks))
    return ranks


@dataclass(frozen=True)
class Layout:
    """Which columns a table shows, and how wide: the columns that matter are kept whole,
    a text column is cut at the terminal's edge, and the others are left out (and named)
    when they do not fit; the last column is never padded."""

    shown: list[int]
    widths: list[int]
    left_out: list[str]

    @classmethod
    def fit(
        cls, columns: list[str], rows: list[list[str]], width: int, *, keys: Sequence[str] = ()
    ) -> Layout:
        """The layout for ``width`` cells; columns named in ``keys`` are kept as the key
        names are (before the text takes its room)."""
        natural = [len(name) for name in columns]
        for cells in rows:
            natural = [max(w, _width(c)) for w, c in zip(natural, cells, strict=True)]
        ranks = [2 if name in keys else r for name, r in zip(columns, _ranks(columns), strict=True)]
        want = [min(w, MIN_TEXT) if r == TEXT else w for w, r in zip(natural, ranks, strict=True)]
        order = sorted(range(len(columns)), key=lambda i: (ranks[i], i))
        kept: dict[int, int] = {}
        _place(kept, [i for i in order if ranks[i] < TEXT], want, width)
        _place(kept, [i for i in order if ranks[i] == TEXT], want, width, least=MIN_WIDTH * 2)
        _place(kept, [i for i in order if ranks[i] == NAMES], want, width)
        for i in [i for i in order if ranks[i] == TEXT and i in kept]:  # the text takes its room
            kept[i] += min(_spare(kept, width), natural[i] - kept[i])
        _place(kept, [i for i in order if ranks[i] > NAMES], want, width)
        shown = sorted(kept)
        left_out = [name for i, name in enumerate(columns) if i not in kept]
        return cls(shown, [kept[i] for i in shown], left_out)

    def line(self, cells: Sequence[str]) -> str:
        chosen = [cells[i] for i in self.shown]
        parts = [
            c.ljust(w) if c.isascii() and len(c) <= w else fit_cell(c, w)
            for c, w in zip(chosen, self.widths, strict=True)
        ]
        parts[-1] = parts[-1].rstrip(" ")
        return GAP.join(parts)

    def note(self) -> str | None:
        """What a narrow terminal left out, for stderr, or None."""
        if not self.left_out:
            return None
        total = len(self.shown) + len(self.left_out)
        return (
            f"… {len(self.left_out)} of {total} columns left out: {', '.join(self.left_out)} "
            "(a wider terminal, --csv or --json shows them)"
        )


def _spare(kept: dict[int, int], width: int) -> int:
    return width - sum(kept.values()) - len(GAP) * max(0, len(kept) - 1)


def _place(
    kept: dict[int, int], order: list[int], want: list[int], width: int, *, least: int = 0
) -> None:
    """Keep each column, in ``order``, that fits whole in what is left, or cut to no less
    than ``least`` (0: whole only); the first column is kept even if it must be cut."""
    for i in order:
        room = _spare(kept, width) - (len(GAP) if kept else 0)
        if want[i] <= room or not kept or (least and room >= least):
            kept[i] = min(want[i], max(room, MIN_WIDTH))


def _width(text: str) -> int:
    if text.isascii():
        return len(text)
    from rich.cells import cell_len

    return cell_len(text)


def fit_cell(text: str, width: int, *, pad: bool = True) -> str:
    """``text`` cut to ``width`` cells (ending ``…`` when cut), padded unless ``pad`` is off."""
    size = _width(text)
    if size > width:
        from rich.cells import set_cell_size

        text = text[: width - 1] if text.isascii() else set_cell_size(text, width - 1)
        return text.rstrip() + "…" + (" " * (width - _width(text.rstrip()) - 1) if pad else "")
    return text + " " * (width - size) if pad else text


_FLAT = str.maketrans({"\n": "↵", "\t": " "})


def _cell(value: Any) -> str:
    if type(value) is str:  # most cells: skip the conversions below
        return value
    value = jsonable(value)
    if value is None:
        return ""
    if isinstance(value, dict | list):
        return json.dumps(value, separators=(",", ":"), ensure_ascii=False)
    return str(value)


def _csv_cell(value: Any) -> str:
    """A CSV cell: the value exact, but text that would start a formula gets a ``'``."""
    return csv_cell(value) if type(value) is str else _cell(value)


def flat(text: str) -> str:
    """One line of text, safe on a terminal: newlines shown as ``↵``, tabs as spaces, any
    other control character as a visible escape (``\\r``, ``\\x1b``)."""
    return text if text.isprintable() else shown(text.translate(_FLAT))
