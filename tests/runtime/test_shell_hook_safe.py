"""The shell hook never hurts the shell: real interactive bash, zsh and fish on a pty, with the
user's strict options on, keep running, keep $?, the pipe statuses and $_, and the spool holds
each command's exact bytes (tabs, newlines, backslashes, bytes that are not UTF-8)."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

from nerve.shellhook import parse_spool_line
from tests.helpers.shellpty import Shell, shown

SHELLS = [s for s in ("bash", "zsh", "fish") if shutil.which(s)]
STRICT = {
    "bash": "set -euo pipefail; set -C",
    "zsh": "setopt err_exit nounset pipe_fail no_clobber",
    "fish": "set -g fish_trace",  # fish has no -e/-u/pipefail; its nearest option is this
}
STATUS = {"bash": "$?", "zsh": "$?", "fish": "$status"}
PIPES = {"bash": "${PIPESTATUS[*]}", "zsh": "${pipestatus[*]}", "fish": "$pipestatus"}
NOT = {"bash": "!", "zsh": "!", "fish": "not"}
# typed (Ctrl+V Tab inserts a tab; fish: Ctrl+X inserts the bytes E9 FF, a test key binding)
ODD = [
    (b": 'a\x16\tb'", b": 'a\tb'"),
    (b": 'x\ny'", b": 'x\ny'"),
    (b": 'c\\d' \\\\ e", b": 'c\\d' \\\\ e"),
]
NOT_UTF8 = {"bash": b": caf\xe9 \xff", "zsh": b": caf\xe9 \xff", "fish": b": caf\x18"}


@pytest.fixture
def shell(request: pytest.FixtureRequest, tmp_path: Path) -> Shell:
    name = request.param
    started = Shell(name, tmp_path, tmp_path / "shell.spool")
    request.addfinalizer(started.close)
    return started


def _spooled(spool: Path) -> list[bytes]:
    lines = spool.read_bytes().split(b"\n")
    assert lines[-1] == b""
    return [os.fsencode(parse_spool_line(os.fsdecode(line)).command) for line in lines[:-1]]


@pytest.mark.parametrize("shell", SHELLS, indirect=True)
def test_strict_options_leave_the_shell_alive_with_its_statuses(
    shell: Shell, tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    name = request.node.callspec.params["shell"]
    shell.type(STRICT[name])
    for _ in range(3):  # several prompts
        shell.type("true")
    shell.type(f"{NOT[name]} true")  # fails without tripping set -e
    assert shown(r"R=\[(\d+)\]", shell.type(f'echo "R=[{STATUS[name]}]"')) == "1"
    shell.type(f"{NOT[name]} false | true")
    assert shown(r"P=\[([\d ]+)\]", shell.type(f'echo "P=[{PIPES[name]}]"')) == "1 0"
    if name != "fish":  # fish has no $_
        shell.type("mkdir -p made && cd $_")
        assert shown(r"W=\[(/\S*)\]", shell.type('echo "W=[$PWD]"')) == str(tmp_path / "made")
        shell.type("echo x y >/dev/null")
        assert shown(r"U=\[(\w*)\]", shell.type('echo "U=[$_]"')) == "y"
    math = "(math 6 \\* 7)" if name == "fish" else "$((6 * 7))"
    assert shown(r"A=\[(\d+)\]", shell.type(f'echo "A=["{math}"]"')) == "42"  # still alive


@pytest.mark.parametrize("shell", SHELLS, indirect=True)
def test_the_spool_holds_each_command_s_exact_bytes(
    shell: Shell, tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    name = request.node.callspec.params["shell"]
    shell.type(STRICT[name])
    for typed, _ in ODD:
        shell.type(typed)
    shell.type(NOT_UTF8[name])
    commands = _spooled(tmp_path / "shell.spool")
    assert commands[-4:] == [*(spooled for _, spooled in ODD), b": caf\xe9 \xff"]
