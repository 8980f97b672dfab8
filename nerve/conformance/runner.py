"""Running the vectors: each file by the checker its ``vector`` key names."""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from nerve.conformance import attention, log, recall, seal
from nerve.resources import bundled

__all__ = ["CHECKERS", "Checker", "VectorResult", "run_all", "run_file"]


@dataclass(frozen=True)
class VectorResult:
    vector: str
    file: str
    ok: bool
    detail: str

    def to_json(self) -> dict[str, Any]:
        return {"vector": self.vector, "file": self.file, "ok": self.ok, "detail": self.detail}


Checker = Callable[[dict[str, Any]], tuple[bool, str]]
CHECKERS: dict[str, Checker] = {
    **log.CHECKERS,
    **recall.CHECKERS,
    **attention.CHECKERS,  # C3, C3V and C5
    **seal.CHECKERS,  # S1
}
"""Each published vector's checker, by the name in its ``vector`` key."""


def run_file(path: Path) -> VectorResult:
    try:
        vec = json.loads(path.read_text(encoding="utf-8"))
        name = str(vec["vector"])
    except (OSError, ValueError, KeyError, TypeError) as exc:
        return VectorResult("?", path.name, False, f"unreadable vector: {exc}")
    check = CHECKERS.get(name)
    if check is None:
        return VectorResult(name, path.name, False, f"no checker for vector {name}")
    try:
        ok, detail = check(vec)
    except KeyError as exc:
        ok, detail = False, f"missing field {exc} (a vector {name} needs it)"
    except Exception as exc:  # a vector that crashes the checker is a failure, not a crash
        ok, detail = False, f"{type(exc).__name__}: {exc}"
    return VectorResult(name, path.name, ok, detail)


def run_all(folder: Path | None = None) -> list[VectorResult]:
    """Check every ``*.json`` vector in ``folder`` (default: the shipped ``conformance/v1``),
    each by the checker its ``vector`` key names; any folder laid out the same way works,
    such as another implementation's vectors. ``UsageError`` if it holds none."""
    from nerve.errors import UsageError

    folder = folder or bundled("conformance") / "v1"
    if not folder.is_dir():
        raise UsageError(f"{folder} is not a folder of conformance vectors")
    files = sorted(folder.glob("*.json"))
    if not files:
        raise UsageError(
            f"{folder} holds no *.json vectors",
            hint="a folder laid out like conformance/v1: one JSON file per vector, each with "
            f"a 'vector' key ({', '.join(sorted(CHECKERS))})",
        )
    return [run_file(p) for p in files]
