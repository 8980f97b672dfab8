"""ruff and mypy run as part of the suite; imports point one way (STYLE.md §1)."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import nerve

ROOT = Path(__file__).resolve().parent.parent
PACKAGE = ROOT / "nerve"

# A module may import only from layers at or below its own.
LAYERS = [
    {"errors", "clock", "canonical", "resources", "fsio"},
    {"events", "contract"},
    {"log"},
    {"query", "config", "conformance", "chain", "attention", "checks", "privacy", "sensedata"}
    | {"recall.core", "recall.tier0", "mcp.settings", "fleet.settings"},
    {"workspace"},
    {"runtime", "flow", "logops", "recall", "export", "tail", "privacy.ops", "mcp", "fleet"}
    | {"privacy.forget", "privacy.archive", "privacy.selection"},
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
    """``nerve.recall.core.x`` -> ``recall.core``: the part of a path LAYERS can name."""
    parts = dotted.split(".")[1:3]
    return ".".join(parts)


def _imports(path: Path) -> set[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    found = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module and node.module.startswith("nerve."):
            found.add(_name(node.module))
        elif isinstance(node, ast.Import):
            found |= {_name(a.name) for a in node.names if a.name.startswith("nerve.")}
    return found


def test_dependencies_point_one_way() -> None:
    bad = []
    for path in PACKAGE.rglob("*.py"):
        rel = path.relative_to(PACKAGE)
        parts = [p.removesuffix(".py") for p in rel.parts[:2] if p != "__init__.py"]
        own = ".".join(parts)
        if own in ("", "__init__"):
            continue
        for target in _imports(path):
            if _layer(target) > _layer(own):
                bad.append(f"{rel} imports nerve.{target}")
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
