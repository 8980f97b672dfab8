"""`nerve shell-hook bash|zsh|fish`: print the snippet that records each command as it ends.

The snippet only appends to a spool file (see :mod:`nerve.shellhook`); the ``shell`` sense
reads it. Install with the one line ``--help`` shows, at the end of the shell's start-up file.
"""

from typing import Annotated

import typer


def shell_hook_cmd(
    shell: Annotated[str, typer.Argument(help="bash, zsh or fish.")],
) -> None:
    """Print the shell hook for SHELL.

    Add it at the end of the start-up file: `eval "$(nerve shell-hook bash)"` in ~/.bashrc,
    `eval "$(nerve shell-hook zsh)"` in ~/.zshrc, `nerve shell-hook fish | source` in
    ~/.config/fish/config.fish.
    """
    from nerve.shellhook import hook

    typer.echo(hook(shell), nl=False)


def register(app: typer.Typer) -> None:
    app.command("shell-hook", rich_help_panel="Advanced")(shell_hook_cmd)
