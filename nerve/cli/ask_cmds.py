"""`nerve ask`: answer a question from the log through the synthesis cascade.

Exit codes: 0 answered; 3 unanswered (Tier 0 could not answer and no fallback is configured:
the plain message is still printed, so scripts can tell the two apart); 1 for an error (a
failing fallback, a bad ``recall:`` section); 2 for usage.
"""

from typing import Annotated

import typer

from nerve.cli.output import emit_json
from nerve.safetext import shown

EXIT_UNANSWERED = 3


def ask_cmd(
    question: Annotated[str, typer.Argument(help="The question, in plain words.")],
    as_json: Annotated[
        bool, typer.Option("--json", help="The whole result: envelope, digest, energy.")
    ] = False,
    k: Annotated[
        int | None, typer.Option("--k", min=1, help="Envelope slots (default 12).")
    ] = None,
    no_record: Annotated[
        bool, typer.Option("--no-record", help="Do not append ask.* events to the log.")
    ] = False,
) -> None:
    """Answer QUESTION from the log: deterministic recall first, the fallback only if needed.

    Exits 3 when nothing could answer (no fallback configured), so scripts can tell.
    """
    from nerve.cli.state import door

    result = door().ask(question, k=k, record=not no_record)
    if as_json:
        emit_json(result.to_json())
    else:
        typer.echo(shown(result.text))  # it quotes the log's lines
    if not result.answered:
        raise typer.Exit(EXIT_UNANSWERED)


def register(app: typer.Typer) -> None:
    app.command("ask")(ask_cmd)
