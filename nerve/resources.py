"""Where nerve's bundled files live: the source tree when run from it, else the wheel."""

from __future__ import annotations

from pathlib import Path

_PACKAGE = Path(__file__).resolve().parent


def bundled(name: str) -> Path:
    """``projections``, ``senses``, ``workflows``, ``conformance`` or ``nerve.yaml``."""
    source_tree = _PACKAGE.parent / name
    if (_PACKAGE.parent / "pyproject.toml").exists() and source_tree.exists():
        return source_tree
    return _PACKAGE / "_bundled" / name
