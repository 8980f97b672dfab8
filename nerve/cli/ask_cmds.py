"""`nerve ask`: answer a question from the log through the synthesis cascade.

Exit codes: 0 answered; 3 unanswered (Tier 0 could not answer and no fallback is configured:
the plain message is still printed, so scripts can tell the two apart); 1 for an error (a
failing fallback, a bad ``recall:`` section); 2 for usage.
"""

import shutil
import sys
import textwrap
from datetime import tzinfo
from typing import Annotated

import typer

from nerve.cli.output import emit_json
from nerve.errors import UsageError
from nerve.safetext import shown

EXIT_UNANSWERED = 3


def _zone(name: str | None) -> tzinfo | None:
    """``--tz``: an IANA zone name; UsageError naming it when unknown."""
    if name is None:
        return None
    from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

    try:
        return ZoneInfo(name)
    except (ZoneInfoNotFoundError, ValueError) as exc:
        raise UsageError(f"--tz {name!r} is not a time zone", hint="--tz Europe/Berlin") from exc


def _now(text: str | None, tz: tzinfo | None) -> int | None:
    """``--now``: a time as ``nerve tail --since`` reads it (ISO-8601, ``10m`` ago …)."""
    if text is None:
        return None
    from nerve.tail.when import parse_instant

    return parse_instant(text, tz=tz).physical_ns


def wrapped(text: str, width: int) -> str:
    """``text`` wrapped at word boundaries to ``width``; a list item's lines hang under it."""
    out = []
    for line in text.splitlines():
        hang = "  " if line.startswith("- ") else ""
        out += textwrap.wrap(line, width, subsequent_indent=hang, break_long_words=False,
                             break_on_hyphens=False) or [""]  # fmt: skip
    return "\n".join(out)


def ask_cmd(
    question: Annotated[
        str | None,
        typer.Argument(
            metavar="QUESTION", help="The question, in plain words.", show_default=False
        ),
    ] = None,
    as_json: Annotated[
        bool, typer.Option("--json", help="The whole result: envelope, digest, energy.")
    ] = False,
    k: Annotated[
        int | None, typer.Option("--k", min=1, help="Envelope slots (default 12).")
    ] = None,
    no_record: Annotated[
        bool, typer.Option("--no-record", help="Do not append ask.* events to the log.")
    ] = False,
    now: Annotated[
        str | None,
        typer.Option("--now", help="Ask as if it were then (ISO-8601 time; for replays)."),
    ] = None,
    zone: Annotated[
        str | None, typer.Option("--tz", help="The local time zone (default: this machine's).")
    ] = None,
) -> None:
    """Answer QUESTION from the log: deterministic recall first, the fallback only if needed.

    Exits 3 when nothing could answer (no fallback configured), so scripts can tell.
    """
    from nerve.cli.state import door

    if question is None:
        raise _no_question()
    tz = _zone(zone)
    result = door().ask(question, k=k, record=not no_record, now_ns=_now(now, tz), tz=tz)
    if as_json:
        emit_json(result.to_json())
    else:
        text = shown(result.text)  # it quotes the log's lines
        if sys.stdout.isatty():
            text = wrapped(text, shutil.get_terminal_size().columns)
        typer.echo(text)
    if not result.answered:
        raise typer.Exit(EXIT_UNANSWERED)


EXAMPLES = (
    "which commands failed today?",
    "what was I doing at 15:00?",
    "what used the most CPU in the last 5 minutes?",
)


def _no_question() -> UsageError:
    """What ``ask`` does and three questions to copy, for a person who typed it bare."""
    tried = "".join(f'\n  nerve ask "{example}"' for example in EXAMPLES)
    return UsageError(
        "ask needs a question; it answers from the log and cites the events",
        hint=f"ask as you would a colleague, for example:{tried}",
    )


def register(app: typer.Typer) -> None:
    app.command("ask", rich_help_panel="Everyday")(ask_cmd)
