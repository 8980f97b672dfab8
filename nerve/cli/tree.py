"""The ``nerve`` command tree, loaded one command group at a time.

A command runs with only its own module imported: ``nerve emit`` loads ``log_cmds`` and no
other, and ``nerve --help`` loads none (it lists :data:`nerve.cli.commands.COMMANDS`, whose
names and short help ``tests/cli/test_cli_tree.py`` keeps equal to the modules'). Option values
of plain types are converted here rather than through typer's pydantic adapters, which cost
a command more than the rest of its start-up.
"""

from __future__ import annotations

import importlib
import re
from typing import Any

import typer
from typer._click import Command, Context, HelpFormatter
from typer._click import exceptions as click
from typer.core import TyperGroup

from nerve.cli.commands import COMMANDS

__all__ = ["LazyRoot", "load_all", "plain_flags", "quick_values"]


class LazyRoot(TyperGroup):
    """The root group: a command's module is imported when the command is asked for."""

    def list_commands(self, ctx: Context) -> list[str]:
        return list(COMMANDS)

    def get_command(self, ctx: Context | None, cmd_name: str) -> Command | None:
        if cmd_name not in self.commands and cmd_name in COMMANDS:
            self._load(COMMANDS[cmd_name][0])
        return self.commands.get(cmd_name)

    def _load(self, module: str) -> None:
        holder = typer.Typer(rich_markup_mode=None)
        importlib.import_module(f"nerve.cli.{module}").register(holder)
        for name, cmd in typer.main.get_group(holder).commands.items():
            plain_flags(cmd)
            quick_values(cmd)
            self.commands[name] = cmd

    def format_commands(self, ctx: Context, formatter: HelpFormatter) -> None:
        """Help lists every command from the table: nothing is imported to list them."""
        stand_ins = {name: _Listed(text) for name, (_, text) in COMMANDS.items()}
        saved, self.commands = self.commands, stand_ins  # type: ignore[assignment]
        try:
            super().format_commands(ctx, formatter)
        finally:
            self.commands = saved

    def resolve_command(
        self, ctx: Context, args: list[str]
    ) -> tuple[str | None, Command | None, list[str]]:
        try:
            return super().resolve_command(ctx, args)
        except click.UsageError as exc:  # a typo: suggest from every command, loaded or not
            if args and "Did you mean" not in exc.message:
                from difflib import get_close_matches

                matches = get_close_matches(args[0], list(COMMANDS))
                if matches:
                    names = ", ".join(f"{m!r}" for m in matches)
                    exc.message = f"{exc.message.rstrip('.')}. Did you mean {names}?"
            raise


class _Listed:
    """What help reads of a command it lists: its short help, from the table."""

    hidden = False

    def __init__(self, help_text: str) -> None:
        self.help = help_text

    def get_short_help_str(self, limit: int = 45) -> str:
        from typer._click.utils import make_default_short_help

        return make_default_short_help(self.help, limit).strip()


def load_all(root: Command) -> Command:
    """Every command group loaded (the whole tree, for tests and completion)."""
    if isinstance(root, LazyRoot):
        for name in COMMANDS:
            root.get_command(None, name)
    return root


def plain_flags(cmd: Any) -> None:
    """Help shows ``--json``, not ``--json <bool>`` (a flag takes no value), and
    ``--kind KIND``, not ``--kind <list[str]>``: the value named, argparse-style."""
    ctx = typer.Context(cmd, help_option_names=["-h", "--help"])
    for param in [*cmd.params, cmd.get_help_option(ctx)]:
        if param is None or param.metavar is not None:
            continue
        if getattr(param, "is_flag", False):
            param.metavar = ""
        elif getattr(param, "param_type_name", "") == "option" and param.name:
            param.metavar = param.name.rstrip("_").upper()
    for sub in getattr(cmd, "commands", {}).values():
        plain_flags(sub)


def quick_values(cmd: Any) -> None:
    """Give every option a converter that handles plain values itself.

    typer builds a pydantic ``TypeAdapter`` for each option it sees, even one left out, so
    ``nerve emit --line x`` imported pydantic (~60 ms). Text, lists of text, flags and plain
    digits convert here to exactly what the adapter returns; anything else (a sign, spaces,
    a bound, a path, a choice) is handed to typer's own converter, built when first needed,
    so its errors read as before. A typer without these hooks keeps its own conversion.
    """
    try:
        from typer._coercion import RuntimeParam
    except ImportError:
        return
    quick = _quick_class(RuntimeParam)
    for param in [*cmd.params, getattr(cmd, "_help_option", None)]:  # help: made by plain_flags
        desc = getattr(param, "type_descriptor", None)
        if desc is not None and getattr(param, "_runtime_param", 0) is None:
            param._runtime_param = quick(
                parameter_info=desc.parameter_info, annotation=desc.annotation
            )
    for sub in getattr(cmd, "commands", {}).values():
        quick_values(sub)


_DIGITS = re.compile(r"[0-9]{1,18}")
_QUICK: dict[type, type] = {}


def _plain(info: Any) -> bool:
    """No parser, click type or bounds: typer's adapter would only check the type."""
    return (
        info.parser is None
        and getattr(info, "click_type", None) is None
        and (info.min is None and info.max is None)
    )


def _quick_class(base: type) -> type:
    """A ``RuntimeParam`` that converts plain values itself and hands the rest to typer."""
    if base in _QUICK:
        return _QUICK[base]

    class Quick(base):  # type: ignore[misc]
        def _coerce_value(self, value: Any, param: Any, ctx: Any) -> Any:
            kind = self.annotation
            if _plain(self.parameter_info):
                if kind in (str, bool, int) and type(value) is kind:  # a default, or text
                    return value
                if kind is int and isinstance(value, str) and _DIGITS.fullmatch(value):
                    return int(value)
                if kind == list[str] and all(type(v) is str for v in value):
                    return list(value)
            from typer._coercion import build_runtime_param

            param._runtime_param = build_runtime_param(param.type_descriptor)
            return param._runtime_param._coerce_value(value, param, ctx)

    _QUICK[base] = Quick
    return Quick


GROUPS = (  # the command modules, in the order their commands are listed
    "setup_cmds",
    "log_cmds",
    "key_cmds",
    "daemon_cmds",
    "sense_cmds",
    "attend_cmds",
    "ask_cmds",
    "workflow_cmds",
    "check_cmds",
    "export_cmds",
    "privacy_log_cmds",
    "privacy_cmds",
    "mcp_cmds",
    "fleet_cmds",
    "sync_cmds",
    "shell_cmds",
    "ui_cmds",
)


def table_of_modules() -> dict[str, tuple[str, str]]:
    """What :data:`nerve.cli.commands.COMMANDS` must say, read from the modules themselves:
    each command's module and the first paragraph of its help, in the order typer lists
    them (commands first, then groups)."""
    whole = typer.Typer(rich_markup_mode=None)
    owner: dict[str, str] = {}
    for module in GROUPS:
        one = typer.Typer(rich_markup_mode=None)
        for holder in (whole, one):
            importlib.import_module(f"nerve.cli.{module}").register(holder)
        owner |= dict.fromkeys(typer.main.get_group(one).commands, module)
    built = typer.main.get_group(whole).commands
    return {name: (owner[name], _first_paragraph(cmd.help)) for name, cmd in built.items()}


def _first_paragraph(text: str | None) -> str:
    return " ".join((text or "").split("\n\n")[0].split())
