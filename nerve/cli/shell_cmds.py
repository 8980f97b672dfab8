"""`nerve shell-hook bash|zsh|fish`: print the snippet that records each command as it ends.

The snippet only appends to a spool file (see :mod:`nerve.shellhook`); the ``shell`` sense
reads it. ``nerve setup`` installs it as a static file; ``--help`` says how by hand.
"""

from typing import Annotated

import typer


def shell_hook_cmd(
    shell: Annotated[str, typer.Argument(help="bash, zsh or fish.")],
) -> None:
    """Print the shell hook for SHELL.

    `nerve setup` installs it for you. By hand, write it to a file once and source that file
    at the end of the start-up file, so no new shell runs Python: `nerve shell-hook bash >
    ~/.nerve-hook.bash`, then `[ -r ~/.nerve-hook.bash ] && . ~/.nerve-hook.bash` in
    ~/.bashrc (zsh alike; fish: `test -r F; and source F` in config.fish). Write it again
    after upgrading nerve.
    """
    from nerve.shellhook import hook

    typer.echo(hook(shell), nl=False)


def register(app: typer.Typer) -> None:
    app.command("shell-hook", rich_help_panel="Advanced")(shell_hook_cmd)
