"""ruff and mypy run as part of the suite; imports point one way (CONTRIBUTING.md §1)."""

from __future__ import annotations

import ast
import importlib
import inspect
import re
import subprocess
import sys
from pathlib import Path

import pytest

import nerve

ROOT = Path(__file__).resolve().parent.parent
PACKAGE = ROOT / "nerve"

# A module may import only from layers at or below its own.
LAYERS = [
    {"errors", "clock", "canonical", "resources", "fsio", "durations", "version", "safetext"}
    | {"userdirs", "pkcs11token"},
    {"events", "contract", "shellhook"},
    {"categories"},
    {"log"},
    {"query", "config", "conformance", "chain", "attention", "checks", "privacy", "sensedata"}
    | {"seal"}
    | {"recall.core", "recall.tier0", "mcp.settings", "fleet.settings", "sync.settings"}
    | {"encfs", "encdir"},
    {"workspace"},
    {
        "runtime",
        "commands",
        "transport",
        "flow",
        "logops",
        "recall",
        "export",
        "tail",
        "privacy.ops",
        "fleet",
        "tokens",
    }
    | {"setup", "sync"}
    | {"privacy.forget", "privacy.archive", "privacy.selection"},
    {"api", "door", "dev"},
    {"mcp"},
    {"ui"},
    {"cli", "__main__"},
]


def _layer(module: str) -> int:
    """A module's layer: its own entry (``recall.core``), else its package's (``recall``)."""
    for name in (module, module.split(".", maxsplit=1)[0]):
        for index, names in enumerate(LAYERS):
            if name in names:
                return index
    raise AssertionError(f"module nerve.{module} has no layer in tests/test_style.py")


def _name(dotted: str) -> str:
    """``nerve.recall.core.x`` -> ``recall.core``: the part of a path LAYERS can name
    (``nerve`` itself, the package's face, is the front door's layer: ``api``)."""
    parts = dotted.split(".")[1:3]
    return ".".join(parts) or "api"


def _imports(code: str, package: str, modules: set[str]) -> set[str]:
    """What LAYERS calls the nerve modules ``code`` imports, in any form: ``import nerve.x``,
    ``from nerve.x import y``, ``from nerve import x``, relative, in a function or not."""
    found = set()
    for node in ast.walk(ast.parse(code)):
        if isinstance(node, ast.Import | ast.ImportFrom):
            found |= {_name(t) for t in _targets(node, package, modules)}
    return found


def _layer_breaches() -> list[str]:
    modules = set(_modules())
    bad = []
    for path in PACKAGE.rglob("*.py"):
        rel = path.relative_to(PACKAGE)
        parts = [p.removesuffix(".py") for p in rel.parts[:2] if p != "__init__.py"]
        own = ".".join(parts)
        if own in ("", "__init__"):
            continue
        package = ".".join(path.relative_to(ROOT).parts[:-1])
        text = path.read_text(encoding="utf-8")
        for target in sorted(_imports(text, package, modules)):
            if _layer(target) > _layer(own):
                bad.append(f"{rel} imports nerve.{target}")
    return bad


def test_dependencies_point_one_way() -> None:
    assert _layer_breaches() == []


@pytest.mark.parametrize(
    ("code", "package", "expected"),
    [
        ("from nerve.log.store import EventLog", "nerve.query", {"log.store"}),
        ("import nerve.log.store", "nerve.query", {"log.store"}),
        ("from nerve import fsio", "nerve.log", {"fsio"}),
        ("from nerve import tokens, fsio", "nerve.ui", {"tokens", "fsio"}),
        ("from nerve.log import store", "nerve.query", {"log.store"}),
        ("from . import store", "nerve.log", {"log.store"}),
        ("from ..events import Event", "nerve.log", {"events"}),
        ("def f():\n    from nerve import api\n", "nerve.log", {"api"}),
        ("import nerve", "nerve.log", {"api"}),
        ("from nerve import __version__", "nerve.log", {"api"}),
        ("import duckdb", "nerve.log", set()),
    ],
)
def test_the_layer_check_sees_every_import_form(
    code: str, package: str, expected: set[str]
) -> None:
    assert _imports(code, package, set(_modules())) == expected


def _modules() -> dict[str, Path]:
    """Every module of the package by dotted name (a package by its ``__init__``)."""
    found = {}
    for path in PACKAGE.rglob("*.py"):
        parts = path.relative_to(ROOT).with_suffix("").parts
        found[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = path
    return found


def _targets(node: ast.Import | ast.ImportFrom, package: str, modules: set[str]) -> set[str]:
    """The nerve modules one import statement loads: ``from a import b`` loads ``a.b`` when
    that is a module, else ``a`` (relative imports resolved against ``package``)."""
    if isinstance(node, ast.Import):
        names = [alias.name for alias in node.names]
    else:
        base = node.module or ""
        if node.level:
            parts = package.split(".")[: len(package.split(".")) - node.level + 1]
            base = ".".join([*parts, *([base] if base else [])])
        names = [f"{base}.{a.name}" if f"{base}.{a.name}" in modules else base for a in node.names]
    found = set()
    for dotted in names:
        name = dotted
        while name and name not in modules:
            name = name.rpartition(".")[0]
        if name.startswith("nerve"):
            found.add(name)
    return found


def import_graph() -> dict[str, set[str]]:
    """Module -> the nerve modules it imports anywhere: at the top, inside a function, or
    only for type checking (each is a dependency a reader has to follow)."""
    modules = _modules()
    graph = {}
    for name, path in modules.items():
        package = name if path.name == "__init__.py" else name.rpartition(".")[0]
        tree = ast.parse(path.read_text(encoding="utf-8"))
        edges: set[str] = set()
        for node in ast.walk(tree):
            if isinstance(node, ast.Import | ast.ImportFrom):
                edges |= _targets(node, package, set(modules))
        graph[name] = edges - {name}
    return graph


def circles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan, iteratively)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    found = []
    for root in sorted(graph):
        if root in index:
            continue
        work = [(root, iter(sorted(graph[root])))]
        index[root] = low[root] = len(index)
        stack.append(root)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = len(index)
                    stack.append(child)
                    work.append((child, iter(sorted(graph[child]))))
                elif child in stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                component = []
                while True:
                    member = stack.pop()
                    component.append(member)
                    if member == node:
                        break
                if len(component) > 1:
                    found.append(sorted(component))
    return found


def test_no_import_circles() -> None:
    """CONTRIBUTING.md §2: not even small ones, not even behind a function or TYPE_CHECKING."""
    assert circles(import_graph()) == []


def test_the_circle_finder_finds_circles() -> None:
    graph = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}, "e": {"e"} - {"e"}}
    assert circles(graph) == [["a", "b", "c"]]
    tree = ast.parse("def f():\n    if TYPE_CHECKING:\n        from nerve.log import store\n")
    node = next(n for n in ast.walk(tree) if isinstance(n, ast.ImportFrom))
    assert _targets(node, "nerve.runtime", {"nerve.log", "nerve.log.store"}) == {"nerve.log.store"}


def test_chain_never_imports_attention() -> None:
    """The chain seals what attention decides; what it records is its own (chain.records)."""
    graph = import_graph()
    bad = sorted(
        f"{m} imports {t}"
        for m, targets in graph.items()
        if m.startswith("nerve.chain")
        for t in targets
        if t.startswith("nerve.attention")
    )
    assert bad == []


def _ours(node: ast.ImportFrom) -> bool:
    return not node.level and (node.module or "").startswith("nerve.")


def _borrowed(node: ast.ImportFrom) -> list[str]:
    """Names ``node`` takes from a module that only imported them (a package's face, such
    as ``nerve`` or ``nerve.flow``, may list what its modules define)."""
    module = importlib.import_module(str(node.module))
    if hasattr(module, "__path__"):
        return []
    found = []
    for alias in node.names:
        value = getattr(module, alias.name, None)
        home = getattr(value, "__module__", None) or ""
        defined = inspect.isclass(value) or inspect.isfunction(value)
        if defined and home.startswith("nerve") and home != node.module:
            found.append(f"{alias.name} from {node.module} (its home is {home})")
    return found


def test_each_name_has_one_home() -> None:
    """A class or function is imported from the module that defines it, never through
    another module that happens to import it (CONTRIBUTING.md §4)."""
    bad = []
    for folder in ("nerve", "tests", "bench", "conformance", "senses", "workflows"):
        for path in sorted((ROOT / folder).rglob("*.py")):
            tree = ast.parse(path.read_text(encoding="utf-8"))
            for node in ast.walk(tree):
                if isinstance(node, ast.ImportFrom) and _ours(node):
                    rel = path.relative_to(ROOT)
                    bad += [f"{rel}:{node.lineno}: {b}" for b in _borrowed(node)]
    assert bad == []


def test_public_surface_is_listed() -> None:
    for name in nerve.__all__:
        assert hasattr(nerve, name), name


def test_ruff() -> None:
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "ruff",
            "check",
            "nerve",
            "tests",
            "senses",
            "workflows",
            "conformance",
            "bench",
        ],
        cwd=ROOT,
        capture_output=True,
        text=True,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr


def test_mypy() -> None:
    proc = subprocess.run([sys.executable, "-m", "mypy"], cwd=ROOT, capture_output=True, text=True)
    assert proc.returncode == 0, proc.stdout + proc.stderr


def test_cli_commands_do_not_import_main() -> None:
    """Shared CLI state lives in ``nerve.cli.state``; ``main`` imports the commands, not back."""
    bad = [
        path.name
        for path in (PACKAGE / "cli").glob("*.py")
        if path.name != "main.py" and "nerve.cli.main" in path.read_text(encoding="utf-8")
    ]
    assert bad == []


def test_cli_command_modules_keep_annotations_as_objects() -> None:
    """typer reads every command's signature at start-up; string annotations (the
    ``__future__`` import) cost an ``eval`` each, a third of ``nerve --help``."""
    lazy = [
        path.name
        for path in (PACKAGE / "cli").glob("*.py")
        if "from __future__ import annotations" in path.read_text(encoding="utf-8")
        and "typer.Option" in path.read_text(encoding="utf-8")
    ]
    assert lazy == []


# The front door's clients: they reach a workspace only through ``nerve.open``.
_CLIENTS = ("cli", "mcp", "ui", "dev")
_BEHIND_THE_DOOR = {"nerve.workspace", "nerve.transport", "nerve.runtime.ipc"}


def _front_door_breaches(text: str, package: str, modules: set[str]) -> list[str]:
    """What one module's source does around the front door: import the folder, the
    daemon's client (the transport) or its socket; open the log or a folder's DuckDB."""
    found = set()
    for node in ast.walk(ast.parse(text)):
        if isinstance(node, ast.Import | ast.ImportFrom):
            found |= _targets(node, package, modules) & _BEHIND_THE_DOOR
    found |= {".open_log("} if ".open_log(" in text else set()
    # a DuckDB of its own (duckdb.connect()) is fine; a folder's .connect() opens the log
    found |= {".connect()"} if re.search(r"(?<!duckdb)\.connect\(\)", text) else set()
    return sorted(found)


def test_clients_reach_the_workspace_through_the_front_door() -> None:
    """No module of the CLI, ``nerve mcp``, ``nerve ui`` or ``nerve dev`` imports the
    workspace folder, opens the log or talks to the daemon itself: the rule "through the
    daemon when one runs, else the log" lives in one place (``nerve.transport.connect``),
    under ``nerve.open``."""
    modules = set(_modules())
    bad = []
    for client in _CLIENTS:
        for path in sorted((PACKAGE / client).rglob("*.py")):
            text = path.read_text(encoding="utf-8")
            package = ".".join(path.relative_to(ROOT).parts[:-1])
            rel = path.relative_to(PACKAGE)
            bad += [f"{rel}: {b}" for b in _front_door_breaches(text, package, modules)]
    assert bad == []


@pytest.mark.parametrize(
    ("code", "expected"),
    [
        ("from nerve.workspace import WorkspaceDir", ["nerve.workspace"]),
        ("from nerve import workspace", ["nerve.workspace"]),
        ("from ..workspace import init_workspace", ["nerve.workspace"]),
        ("from nerve import transport", ["nerve.transport"]),
        ("import nerve.runtime.ipc", ["nerve.runtime.ipc"]),
        ("def f(ws):\n    return ws.connect()", [".connect()"]),
        ("def f(ws):\n    return ws.open_log()", [".open_log("]),
        ("import duckdb\nconn = duckdb.connect()", []),
        ("from nerve.api import Workspace", []),
    ],
)
def test_the_front_door_check_sees_each_way_around_it(code: str, expected: list[str]) -> None:
    """Each breach the check above looks for is found, however the import is written."""
    assert _front_door_breaches(code, "nerve.cli", set(_modules())) == expected


def test_whether_a_daemon_runs_is_asked_in_one_place() -> None:
    """One ``running()``, in the daemon's client half; no copies of it elsewhere."""
    found = sorted(
        str(path.relative_to(PACKAGE))
        for path in PACKAGE.rglob("*.py")
        if re.search(r"def \w*running\(", path.read_text(encoding="utf-8"))
    )
    assert found == ["transport.py"]


def test_cited_habits_are_in_contributing() -> None:
    """Code and tests cite the habits of CONTRIBUTING.md by number; each cited one is there,
    and nothing cites a style guide the repository does not hold."""
    guide = (ROOT / "CONTRIBUTING.md").read_text(encoding="utf-8")
    habits = {int(n) for n in re.findall(r"^ {0,4}(\d+)\. ", guide, re.MULTILINE)}
    cited, stray = set(), []
    for folder in ("nerve", "tests", "conformance", "bench"):
        for path in sorted((ROOT / folder).rglob("*.py")):
            text = path.read_text(encoding="utf-8")
            cited |= {int(n) for n in re.findall(r"CONTRIBUTING\.md §(\d+)", text)}
            stray += [str(path.relative_to(ROOT))] if re.search(r"STYLE(?:\.md)? §", text) else []
    assert stray == [] and cited and cited <= habits
