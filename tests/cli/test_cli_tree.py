"""The command tree loads one group at a time, and converts plain option values itself."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Annotated, Any

import pytest
import typer

from nerve.cli.commands import COMMANDS
from nerve.cli.tree import _Listed, quick_values, table_of_modules
from nerve.workspace import init_workspace

LIGHT = ("pydantic", "asyncio", "duckdb", "pyarrow", "numpy")


def test_the_table_is_what_the_command_modules_register() -> None:
    actual = table_of_modules()
    pasted = "\n".join(f"    {k!r}: {v!r}," for k, v in actual.items())
    assert actual == COMMANDS, f"nerve/cli/commands.py should say:\n{{\n{pasted}\n}}"
    assert list(COMMANDS) == list(actual)  # help lists them in this order


@pytest.mark.parametrize("limit", [20, 45, 73, 200])
def test_help_shortens_each_command_as_the_command_itself_would(limit: int) -> None:
    holder = typer.Typer(rich_markup_mode=None)
    for module in dict.fromkeys(module for module, _ in COMMANDS.values()):
        __import__(f"nerve.cli.{module}", fromlist=["register"]).register(holder)
    real = typer.main.get_group(holder).commands
    for name, (_, text) in COMMANDS.items():
        assert _Listed(text).get_short_help_str(limit) == real[name].get_short_help_str(limit)


def _modules_after(argv: list[str], cwd: Path) -> tuple[int, list[str]]:
    """Run ``nerve ARGV`` in a fresh interpreter; its exit code and every module it loaded."""
    code = (
        "import json, sys\n"
        "from nerve.cli.main import run\n"
        "try:\n    run(sys.argv[1:])\nexcept SystemExit as exc:\n    code = exc.code or 0\n"
        "else:\n    code = 0\n"
        "sys.stderr.write('\\nMODULES ' + json.dumps([code, sorted(sys.modules)]) + '\\n')\n"
    )
    proc = subprocess.run(
        [sys.executable, "-c", code, *argv],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=120,
        env={"NERVE_WORKSPACE": "", "PATH": "/usr/bin:/bin", "NO_COLOR": "1"},
    )
    line = proc.stderr.rsplit("MODULES ", 1)[-1]
    code_, modules = json.loads(line)
    return int(code_), modules


def _commands_loaded(modules: list[str]) -> list[str]:
    return sorted(m.rsplit(".", 1)[1] for m in modules if m.endswith("_cmds"))


def test_help_imports_no_command_module(tmp_path: Path) -> None:
    code, modules = _modules_after(["--help"], tmp_path)
    assert code == 0
    assert _commands_loaded(modules) == []
    assert [m for m in LIGHT if m in modules] == []


def test_a_command_imports_its_own_group_only(tmp_path: Path) -> None:
    """`nerve status` with no daemon: daemon_cmds alone, and nothing heavy (typer's option
    conversion would have loaded pydantic, the socket client asyncio)."""
    ws = init_workspace(tmp_path / "ws")
    code, modules = _modules_after(["status"], ws.root)
    assert code == 3  # not running
    assert _commands_loaded(modules) == ["daemon_cmds"]
    assert [m for m in LIGHT if m in modules] == []
    code, modules = _modules_after(["-w", str(ws.root), "audit", "verify", "--json"], tmp_path)
    assert _commands_loaded(modules) == ["attend_cmds", "seal_cmds"]  # seal_cmds: audit's seals


# -- option values ------------------------------------------------------------------------


def _app() -> typer.Typer:
    app = typer.Typer()

    @app.command()
    def cmd(
        text: Annotated[str, typer.Option("--text")] = "d",
        maybe: Annotated[str | None, typer.Option("--maybe")] = None,
        number: Annotated[int, typer.Option("--number")] = 0,
        bounded: Annotated[int, typer.Option("--bounded", min=0, max=9)] = 1,
        many: Annotated[list[str] | None, typer.Option("--many")] = None,
        path: Annotated[Path | None, typer.Option("--path")] = None,
        flag: Annotated[bool, typer.Option("--flag")] = False,
    ) -> dict[str, Any]:
        return {"text": text, "maybe": maybe, "number": number, "bounded": bounded}
        # the rest come back through the context below

    return app


def _parse(argv: list[str], *, quick: bool) -> Any:
    """The values a fresh command parses from ``argv``, or the usage error's text."""
    cmd = typer.main.get_command(_app())
    if quick:
        quick_values(cmd)
    try:
        ctx = cmd.make_context("cmd", list(argv))
    except typer.BadParameter as exc:
        return f"error: {exc.format_message()}"
    except Exception as exc:  # click's UsageError family, as a person would see it
        return f"error: {type(exc).__name__}: {exc}"
    return dict(ctx.params)


CASES = [
    [],
    ["--text", "x", "--maybe", "a\udcffb"],
    ["--text", "", "--number", "007"],
    ["--number", "12", "--bounded", "3"],
    ["--number", "-3"],
    ["--number", " 4 "],
    ["--number", "1_000"],
    ["--number", "abc"],
    ["--number", "9" * 19],
    ["--bounded", "12"],
    ["--many", "a", "--many", "b"],
    ["--path", "some/where", "--flag"],
]


@pytest.mark.parametrize("argv", CASES, ids=lambda a: " ".join(a) or "defaults")
def test_quick_values_are_what_typer_itself_would_give(argv: list[str]) -> None:
    assert _parse(argv, quick=True) == _parse(argv, quick=False)


def test_plain_values_never_build_typer_s_adapter() -> None:
    """The quick path is taken (so the test above compares two paths, not one): after a
    plain parse every option still holds the quick converter, none an adapter typer built."""
    cmd = typer.main.get_command(_app())
    quick_values(cmd)
    cmd.make_context("cmd", ["--text", "x", "--number", "12", "--many", "a", "--flag"])
    kinds = {p.name: type(p._runtime_param).__name__ for p in cmd.params}
    assert kinds.pop("bounded") == "AdapterRuntimeParam"  # a bound: typer checks it
    assert set(kinds.values()) == {"Quick"}, kinds
    cmd.make_context("cmd", ["--number", "-3"])  # a sign: typer's own converter, built now
    assert type(next(p for p in cmd.params if p.name == "number")._runtime_param).__name__ != (
        "Quick"
    )
