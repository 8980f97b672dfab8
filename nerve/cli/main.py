"""The ``nerve`` command: global options, command groups, and error translation."""

from __future__ import annotations

import sys
import warnings
from pathlib import Path
from typing import Annotated

import typer

from nerve.cli.state import STATE
from nerve.errors import DISK_ERRNOS, LogError, NerveError, os_error_text

app = typer.Typer(
    name="nerve",
    help="An ambient-context daemon over one append-only, content-addressed event log.",
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    add_completion=False,
    context_settings={"help_option_names": ["-h", "--help"]},
)


@app.callback()
def _main(
    workspace: Annotated[
        Path | None,
        typer.Option(
            "--workspace",
            "-w",
            help="Workspace folder (default: the current folder).",
            envvar="NERVE_WORKSPACE",
        ),
    ] = None,
) -> None:
    STATE.workspace_arg = workspace


def _register() -> None:
    from nerve.cli import (
        ask_cmds,
        attend_cmds,
        check_cmds,
        daemon_cmds,
        export_cmds,
        log_cmds,
        sense_cmds,
        workflow_cmds,
    )

    log_cmds.register(app)
    daemon_cmds.register(app)
    sense_cmds.register(app)
    attend_cmds.register(app)
    ask_cmds.register(app)
    workflow_cmds.register(app)
    check_cmds.register(app)
    export_cmds.register(app)


def fail(exc: NerveError) -> None:
    """``ErrorName: message`` on stderr, the hint below it, exit 1."""
    sys.stderr.write(f"{type(exc).__name__}: {exc}\n")
    if exc.hint:
        sys.stderr.write(f"hint: {exc.hint}\n")
    raise SystemExit(1)


def _show_warning(
    message: Warning | str, category: type[Warning], *args: object, **kwargs: object
) -> None:
    """Warnings a user should see, as one line: ``warning: message``."""
    sys.stderr.write(f"warning: {message}\n")


def run() -> None:
    _register()
    warnings.showwarning = _show_warning
    try:
        app()
    except NerveError as exc:
        fail(exc)
    except BrokenPipeError:
        sys.stderr.close()
        raise SystemExit(0) from None
    except OSError as exc:  # the system said no (disk full, read-only, no permission)
        if exc.errno in DISK_ERRNOS:  # what nerve writes is the log
            fail(LogError(os_error_text(exc), hint="free some space or fix the disk, then retry"))
        sys.stderr.write(f"{type(exc).__name__}: {os_error_text(exc)}\n")
        raise SystemExit(1) from None
    except KeyboardInterrupt:
        raise SystemExit(130) from None
