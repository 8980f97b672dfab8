"""The CLI and ``nerve mcp`` reach the log and the daemon only through ``nerve.open``.

An import-graph check in the style of ``tests/test_style.py``: every import of a command
module (``nerve/cli/``) or an MCP module (``nerve/mcp/``), function-level ones included, is
held against the modules that open the log, the socket or the daemon. "Daemon or log" is
decided in one place (``nerve.transport.connect``), under the front door; a command or a
tool that imported those internals would decide it again.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[2] / "nerve"
CLIENTS = sorted([*PACKAGE.glob("cli/*.py"), *PACKAGE.glob("mcp/*.py")])

EVERYTHING: frozenset[str] = frozenset({"*"})

# Module -> the names that reach the log or the daemon ("*": the whole module).
INTERNALS: dict[str, frozenset[str]] = {
    "nerve.transport": EVERYTHING,  # the socket, and connect() itself
    "nerve.runtime.ipc": EVERYTHING,
    "nerve.runtime.daemon": EVERYTHING,
    "nerve.dev.attach": EVERYTHING,
    "nerve.logops": EVERYTHING,
    "nerve.log.store": EVERYTHING,  # the single writer
    "nerve.log.reader": EVERYTHING,  # snapshots of the log's files
    "nerve.query": frozenset({"connect", "run_query", "stream_query"}),
    "nerve.flow.client": EVERYTHING,
    "nerve.tail": frozenset({"read_tail", "follow", "follow_tables", "name_warnings"}),
    "nerve.tail.follow": EVERYTHING,
    "nerve.fleet.ship": EVERYTHING,
    "nerve.fleet.query": EVERYTHING,
    "nerve.fleet.verify": EVERYTHING,
    "nerve.fleet.status": EVERYTHING,
    "nerve.fleet.maintain": EVERYTHING,
    "nerve.fleet.warehouse": EVERYTHING,
    "nerve.privacy.forget": frozenset({"apply", "dry_run"}),
    "nerve.privacy.archive": frozenset({"apply"}),
    "nerve.privacy.ops": frozenset({"pause", "resume"}),
}

# Names of those modules that only parse what a person typed: no log, no socket.
PARSERS: dict[str, frozenset[str]] = {
    "nerve.logops": frozenset({"check_cid", "parse_payload_arg"}),
    "nerve.flow.client": frozenset({"payload_fields"}),
}

# Modules allowed more, and why. The daemon's own commands run the server in this process
# (`nerve daemon run`, `nerve dev`), follow its log file and draw the dev view of a running
# one: they are the daemon, not a client of it.
EXCEPTIONS: dict[str, frozenset[str]] = {
    "cli/daemon_cmds.py": frozenset({"nerve.runtime.daemon", "nerve.dev.attach"}),
}

# Methods of the workspace folder that open the log itself.
OPENERS = frozenset({"open_log", "connect"})


def _imported(tree: ast.AST) -> list[tuple[str, str]]:
    """``(module, name)`` for every import; ``from nerve import transport`` counts as
    the module ``nerve.transport``."""
    found: list[tuple[str, str]] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found += [(alias.name, "*") for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            for alias in node.names:
                sub = f"{node.module}.{alias.name}"
                found.append((sub, "*") if sub in INTERNALS else (node.module, alias.name))
    return found


def _opened(tree: ast.AST) -> list[str]:
    """Calls of ``x.open_log(...)`` or ``x.connect(...)`` on anything but the duckdb module
    (an in-memory database of its own is not the log)."""
    calls = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
            owner = node.func.value
            if node.func.attr in OPENERS and not (
                isinstance(owner, ast.Name) and owner.id == "duckdb"
            ):
                calls.append(f"line {node.lineno}: .{node.func.attr}()")
    return calls


def violations(source: str, relative: str) -> list[str]:
    """What a module imports or calls that reaches the log or the daemon without the door."""
    tree = ast.parse(source)
    allowed = EXCEPTIONS.get(relative, frozenset())
    bad = []
    for module, name in _imported(tree):
        names = INTERNALS.get(module)
        if names is None or module in allowed or name in PARSERS.get(module, frozenset()):
            continue
        if names is EVERYTHING or name in names or name == "*":
            bad.append(f"imports {module}" + ("" if name == "*" else f".{name}"))
    return sorted(bad) + _opened(tree)


@pytest.mark.parametrize("path", CLIENTS, ids=lambda p: str(p.relative_to(PACKAGE)))
def test_cli_and_mcp_modules_reach_the_log_only_through_the_front_door(path: Path) -> None:
    relative = str(path.relative_to(PACKAGE))
    assert violations(path.read_text(encoding="utf-8"), relative) == []


def test_the_check_sees_each_way_of_reaching_the_internals() -> None:
    """The check fails on what it is meant to catch, in each form it takes, and lets
    through what it should (a parser of arguments, a helper of the same package, duckdb's
    own in-memory database)."""
    source = "\n".join(
        [
            "from nerve import transport",
            "import nerve.log.store",
            "from nerve.logops import emit, check_cid",
            "from nerve.tail import format_times",
            "def f(ws):",
            "    from nerve.tail import read_tail",
            "    return ws.connect()",
            "import duckdb",
            "conn = duckdb.connect()",
        ]
    )
    assert violations(source, "cli/fake_cmds.py") == [
        "imports nerve.log.store",
        "imports nerve.logops.emit",
        "imports nerve.tail.read_tail",
        "imports nerve.transport",
        "line 7: .connect()",
    ]
    daemon_side = "from nerve.runtime import daemon\nfrom nerve import transport"
    assert violations(daemon_side, "cli/daemon_cmds.py") == ["imports nerve.transport"]


def test_every_exception_is_still_needed() -> None:
    """An exception nobody uses any more is removed, so the list says only what is true."""
    for relative, modules in EXCEPTIONS.items():
        tree = ast.parse((PACKAGE / relative).read_text(encoding="utf-8"))
        used = {module for module, _ in _imported(tree)}
        assert modules <= used, f"{relative}: {sorted(modules - used)} no longer imported"
