"""``nerve tail``: the newest events, in local time, one line each; ``-f`` appends new ones."""

import re
import sys
import textwrap
from collections.abc import Callable
from typing import TYPE_CHECKING, Annotated, Any

import typer

from nerve.cli.output import (
    DEFAULT_LIMIT,
    GAP,
    LIMIT_HELP,
    console,
    fit_cell,
    flat,
    is_terminal,
    more_rows,
    plural,
    terminal_width,
)
from nerve.cli.pager import page
from nerve.cli.state import door as _door
from nerve.clock import Hlc
from nerve.errors import UsageError
from nerve.runtime.latest import fit_latest
from nerve.safetext import csv_cell, csv_writer

if TYPE_CHECKING:
    from nerve.tail import TextFilter

DEFAULT_COUNT = 20  # the newest shown when neither -n nor a time window is given
COUNT_ALL = 2**62  # "count every older match" for the note under a terminal's rows


def tail_cmd(
    n: Annotated[
        int | None,
        typer.Option(
            "-n",
            min=0,
            help=f"How many of the newest events (default {DEFAULT_COUNT}; a --since/--until "
            "window: all of it).",
            show_default=False,
        ),
    ] = None,
    all_: Annotated[bool, typer.Option("--all", help="Every event.")] = False,
    follow_: Annotated[
        bool, typer.Option("-f", "--follow", help="Keep printing new events.")
    ] = False,
    kind: Annotated[
        list[str] | None, typer.Option("--kind", help="Only this kind (repeatable).")
    ] = None,
    source: Annotated[
        list[str] | None,
        typer.Option("--source", help="Only this source class, or nerve (repeatable)."),
    ] = None,
    all_kinds: Annotated[
        bool, typer.Option("--all-kinds", help="Show bookkeeping too (sense.state, signal, …).")
    ] = False,
    since: Annotated[
        str | None,
        typer.Option("--since", help="From 10m / 2h / 3d ago, an ISO-8601 time or an HLC stamp."),
    ] = None,
    until: Annotated[
        str | None, typer.Option("--until", help="Up to a time (same forms as --since).")
    ] = None,
    utc: Annotated[bool, typer.Option("--utc", help="Times in UTC, not local time.")] = False,
    hlc: Annotated[bool, typer.Option("--hlc", help="Show each event's HLC stamp too.")] = False,
    limit: Annotated[int | None, typer.Option("--limit", min=0, help=LIMIT_HELP)] = None,
    sense: Annotated[
        list[str] | None, typer.Option("--sense", help="Only this sense's events (repeatable).")
    ] = None,
    grep: Annotated[
        str | None, typer.Option("--grep", help="Only events whose line holds TEXT (any case).")
    ] = None,
    as_json: Annotated[
        bool, typer.Option("--json", help="Whole events as JSON lines (what `import` reads).")
    ] = False,
    as_csv: Annotated[bool, typer.Option("--csv", help="CSV, with a header line.")] = False,
    all_devices: Annotated[
        bool,
        typer.Option(
            "--all-devices",
            help="Every synced device's events too, merged, each with its device.",
        ),
    ] = False,
    device: Annotated[
        str | None,
        typer.Option("--device", help="Only this device's events (implies --all-devices)."),
    ] = None,
) -> None:
    """Print the newest events; --json prints exactly what `nerve import` reads."""
    ws = _door()
    lower, upper = _instant("--since", since), _instant("--until", until, end=True)
    if follow_ and upper is not None:
        raise typer.BadParameter("cannot be used with -f", param_hint="'--until'")
    if as_json and as_csv:
        raise UsageError("give --json or --csv, not both")
    devices = all_devices or device is not None
    filt = _filter(
        kind or [], source or [], all_kinds=all_kinds or as_json, senses=sense, grep=grep
    )
    for message in ws.events.warnings(filt):
        typer.echo(f"warning: {message}", err=True)
    terminal = not (as_json or as_csv) and is_terminal()
    windowed = lower is not None or upper is not None
    count = tail_count(n, every=all_, windowed=windowed)
    cap = (DEFAULT_LIMIT if terminal else 0) if limit is None else limit
    shown = cap if cap and (count is None or count > cap) else count
    older = 0 if shown == count or not terminal or filt.narrows else count_older(count, cap)
    cut = windowed and n is not None and not all_  # -n may leave part of the window out
    asked = COUNT_ALL if cut else older
    if devices:
        tail = ws.events.read_devices(
            count=shown, filt=filt, since=lower, until=upper, device=device
        )
    else:
        tail = ws.events.read(count=shown, filt=filt, since=lower, until=upper, count_older=asked)
    by_cap = min(tail.older, older)  # what the terminal's --limit hid of the -n asked for
    if cut and tail.older > by_cap:
        _left_out(tail.older - by_cap)
    if terminal and not follow_:
        page()
    fmt = "json" if as_json else "csv" if as_csv else ""
    write = _writer(fmt, terminal, utc=utc, hlc=hlc, devices=devices)
    write(tail.batch)
    if terminal and not len(tail.batch):
        _nothing(lower, upper, utc=utc)
    if terminal and by_cap:
        more_rows(by_cap, "use --limit 0 or --json for all")
    if follow_:
        more = (
            ws.events.follow_devices(filt, tail.cursors, device)
            if devices
            else ws.events.follow(filt, tail.newest)
        )
        for batch in more:
            write(batch)


def tail_count(n: int | None, *, every: bool, windowed: bool) -> int | None:
    """How many of the newest to show (None: all): ``-n``, else all of a --since/--until
    window (as journalctl prints one), else the newest :data:`DEFAULT_COUNT`."""
    if every or (n is None and windowed):
        return None
    return DEFAULT_COUNT if n is None else n


def _left_out(count: int) -> None:
    """On stderr: the older events of the window that -n did not show."""
    typer.echo(
        f"note: -n left out {plural(count, 'older event')} of the window (drop -n for all)",
        err=True,
    )


def _nothing(lower: Hlc | None, upper: Hlc | None, *, utc: bool) -> None:
    """On stderr, for a person at a terminal: that no event matched, in what window (one
    that ends before it starts, as ``--since "this morning"`` does before 05:00, says so)."""
    from nerve.tail import format_times

    said = ""
    for word, bound in (("from", lower), ("until", upper)):
        if bound is not None:
            said += f" {word} {format_times([bound.physical_ns], utc=utc, short=True)[0]}"
    if lower is not None and upper is not None and upper.physical_ns < lower.physical_ns:
        said += " (the window ends before it starts)"
    text = f"note: no event matches{said}"
    typer.echo(textwrap.fill(text, terminal_width(sys.stderr), subsequent_indent="  "), err=True)


def count_older(count: int | None, cap: int) -> int:
    return COUNT_ALL if count is None else count - cap


def _instant(flag: str, text: str | None, *, end: bool = False) -> Hlc | None:
    from nerve.tail import parse_instant

    try:
        return parse_instant(text, end=end) if text is not None else None
    except UsageError as exc:
        raise typer.BadParameter(str(exc), param_hint=f"'{flag}'") from None


def _filter(
    kinds: list[str],
    sources: list[str],
    *,
    all_kinds: bool,
    senses: list[str] | None,
    grep: str | None,
) -> "TextFilter":
    """--json is the export form (`import` reads it): it keeps every kind, as it always did."""
    from nerve.tail import tail_filter

    try:
        return tail_filter(kinds, sources, all_kinds=all_kinds, senses=senses, grep=grep or "")
    except UsageError as exc:
        raise typer.BadParameter(str(exc), param_hint="'--source'") from None


def _writer(
    fmt: str, terminal: bool, *, utc: bool, hlc: bool, devices: bool = False
) -> Callable[[Any], None]:
    """How batches are printed; ``devices``: each line names its device (after the node in
    TSV and CSV, after the time at a terminal; ``device`` in JSON)."""
    if fmt == "json":
        return lambda batch: _write_lines(batch.lines())
    if fmt == "csv":
        return _CsvLines(hlc=hlc, devices=devices).write
    if not terminal:
        return lambda batch: _write_lines(_tsv_lines(batch, utc=utc, hlc=hlc))
    return _TerminalLines(utc=utc, hlc=hlc).write


def _write_lines(lines: list[str]) -> None:
    if lines:
        sys.stdout.write("\n".join(lines) + "\n")
        sys.stdout.flush()


def _shown(batch: Any, *, utc: bool, short: bool) -> dict[str, list[Any]]:
    """The columns people read: time, stamp, source name (nerve's own as ``nerve``), …"""
    from nerve.events import display_source
    from nerve.tail import format_times

    col = batch.columns()
    names = {code: display_source(code) for code in set(col["source"])}
    return {
        **col,
        "time": format_times(col["physical_ns"], utc=utc, short=short),
        "hlc": [f"{p}.{lo}" for p, lo in zip(col["physical_ns"], col["logical"], strict=True)],
        "source": [names[code] for code in col["source"]],
    }


def _plain_fields(batch: Any, *, utc: bool, hlc: bool, keep: Callable[[str], str]) -> list[Any]:
    """time [hlc] source kind subject trust node [device] line, each a column of text
    (device when the batch names each event's)."""
    from nerve.events import trust_name

    col = _shown(batch, utc=utc, short=False)
    trusts = {code: trust_name(code) for code in set(col["trust"])}
    fields = [col["time"], *([col["hlc"]] if hlc else []), col["source"], col["kind"]]
    return [
        *fields,
        [keep(s) for s in col["subject"]],
        [trusts[t] for t in col["trust"]],
        col["node"],
        *([[keep(d) for d in col["device"]]] if "device" in col else []),
        [keep(line or "") for line in col["line"]],
    ]


def _tsv_lines(batch: Any, *, utc: bool, hlc: bool) -> list[str]:
    """One tab-separated line per event, every field shown safe (newlines as ``↵``, control
    characters escaped): a pipe often ends at a terminal."""
    if not len(batch):
        return []
    fields = _plain_fields(batch, utc=utc, hlc=hlc, keep=flat)
    return ["\t".join(map(flat, row)) for row in zip(*fields, strict=True)]


class _CsvLines:
    """CSV with a header, the columns of the piped form; times in UTC ISO 8601. Fields are
    exact, but one a spreadsheet would run as a formula gets a leading ``'``."""

    def __init__(self, *, hlc: bool, devices: bool = False) -> None:

        self.hlc = hlc
        self.writer = csv_writer(sys.stdout)
        hlc_col = ["hlc"] if hlc else []
        node = ["node", "device"] if devices else ["node"]
        names = ["time", *hlc_col, "source", "kind", "subject", "trust", *node, "line"]
        self.writer.writerow(names)

    def write(self, batch: Any) -> None:
        if len(batch):
            fields = _plain_fields(batch, utc=True, hlc=self.hlc, keep=str)
            self.writer.writerows([list(map(csv_cell, row)) for row in zip(*fields, strict=True)])
        sys.stdout.flush()


def _row_style(kind: str, subject: str) -> str | None:
    """Surfaced highlights stand out; errors are red."""
    if kind == "attention.decision" and subject == "surface":
        return "bold yellow"
    if kind.endswith(".error") or kind == "config.rejected":
        return "red"
    return None


def _safe(col: dict[str, list[Any]]) -> dict[str, list[Any]]:
    """The columns a terminal line shows, as text safe to write there (see ``flat``)."""
    names = ("time", "hlc", "device", "source", "kind", "subject", "line")
    return {
        **col,
        **{
            name: [flat("" if v is None else str(v)) for v in col[name]]
            for name in names
            if name in col
        },
    }


_CAPS = {"source": (6, 13), "kind": (4, 22), "subject": (4, 16)}  # widths: least, most
_DEVICE_CAPS = (6, 16)
_STYLES = {"time": "dim", "hlc": "dim", "device": "magenta", "source": "cyan"}
_NARROW_CAPS = {"kind": 14, "subject": 10}
LINE_LEAST = 28  # below this the kind column goes too (the subject names the sense)
_TAG = re.compile(r"^(?P<body>.*\S)(?P<tag> \[[^\[\]]{1,24}\])$")  # "make [exit 12]", "[pid]"


def fit_line(text: str, width: int) -> str:
    """An event's line cut to ``width`` cells: a closing tag such as ``[exit 12]`` or a
    process's ``[18288]`` is kept whole, and the middle of the text before it is cut
    (``pytest -q tests/…/test_x.py [exit 1]``); other lines are cut at the end, where a
    word ends (as the latest reading is), a line that is not ASCII by cells."""
    found = _TAG.match(text) if len(text) > width and text.isascii() else None
    if found is None or width - len(found["tag"]) < 8:
        return fit_cell(fit_latest(text, width), width, pad=False)
    body, tag = found["body"], found["tag"]
    room = width - len(tag) - 1  # one for the "…"
    front = (room * 2 + 2) // 3
    back = room - front
    return f"{body[:front]}…{body[len(body) - back :] if back else ''}{tag}"


class _TerminalLines:
    """One line per event, columns sized by the first batch and kept after it, so ``-f``
    appends lines that line up (scrollback kept); the line is cut at the terminal's edge."""

    def __init__(self, *, utc: bool, hlc: bool) -> None:
        self.utc, self.hlc = utc, hlc
        self.widths: dict[str, int] | None = None
        self.out = console()

    def write(self, batch: Any) -> None:
        from rich.text import Text

        if not len(batch):
            return
        col = _safe(_shown(batch, utc=self.utc, short=True))
        widths = self.widths = self.widths or self._fit(col)
        shown = ("time", "hlc", "device", "source", "kind", "subject")
        names = [k for k in shown if k in widths and (k != "hlc" or self.hlc)]
        for i in range(len(col["time"])):
            line = Text(no_wrap=True, overflow="ellipsis")
            for name in names:
                style = _STYLES.get(name)
                line.append(fit_cell(col[name][i], widths[name]) + GAP, style=style)
            text = fit_line(col["line"][i], widths["line"])
            line.append(text, style=_row_style(col["kind"][i], col["subject"][i]))
            self.out.print(line, soft_wrap=True)
        self.out.file.flush()

    def _fit(self, col: dict[str, list[Any]]) -> dict[str, int]:
        """Widths from the first batch. The line is what people read: when it would get
        less than half the terminal, the source column goes (the subject names the sense),
        then kind and subject are cut shorter."""
        width = terminal_width()
        widths = {"time": max(map(len, col["time"])), "hlc": max(map(len, col["hlc"]))}
        if "device" in col:
            low, high = _DEVICE_CAPS
            widths["device"] = max(low, min(high, max(len(v) for v in col["device"])))
        for name, (low, high) in _CAPS.items():
            widths[name] = max(low, min(high, max(len(v) for v in col[name])))
        if self._line(widths, width) < width // 2:
            del widths["source"]
        for name, high in _NARROW_CAPS.items():
            if self._line(widths, width) < width // 2:
                widths[name] = min(widths[name], high)
        if self._line(widths, width) < LINE_LEAST:  # a narrow terminal: the line before the kind
            del widths["kind"]
        widths["line"] = max(10, self._line(widths, width))
        return widths

    def _line(self, widths: dict[str, int], width: int) -> int:
        return width - sum(w + len(GAP) for k, w in widths.items() if k != "hlc" or self.hlc)
