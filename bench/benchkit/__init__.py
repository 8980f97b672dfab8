"""What every bench shares: its sizes, its progress lines, its temporary folder, and how it
ends (the load average, ``RESULT {json}`` as the last stdout line, a line on stderr per failed
check, exit status 1 when one failed).

A bench puts its own folder on ``sys.path`` and imports this package:

    sys.path.insert(0, str(Path(__file__).resolve().parent))
    from benchkit import finish, new_parser, say, sized
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import shutil
import sys
import tempfile
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any, TextIO

__all__ = ["failed_checks", "finish", "load_avg_1m", "new_parser", "say", "sized", "workdir"]


def say(text: str) -> None:
    """A progress line on stderr (stdout holds only the figures and the RESULT line)."""
    print(f"[bench] {text}", file=sys.stderr, flush=True)


def new_parser(doc: str | None) -> argparse.ArgumentParser:
    """An argument parser described by the first paragraph of the bench's docstring."""
    return argparse.ArgumentParser(description=(doc or "").split("\n\n")[0])


def sized(
    args: argparse.Namespace, quick: Mapping[str, Any], full: Mapping[str, Any]
) -> argparse.Namespace:
    """Fill each size the caller did not give from ``quick`` (with ``--quick``) or ``full``:
    a flag given always wins over ``--quick``'s choice."""
    for key, value in (quick if args.quick else full).items():
        if getattr(args, key) is None:
            setattr(args, key, value)
    return args


def load_avg_1m() -> float:
    return round(os.getloadavg()[0], 2)


def failed_checks(checks: Mapping[str, Any]) -> list[str]:
    """The checks that did not hold, in their order."""
    return [name for name, ok in checks.items() if not ok]


@contextlib.contextmanager
def workdir(prefix: str, *, keep: bool = False) -> Iterator[Path]:
    """A temporary folder, removed on the way out unless ``keep`` (then its path is said)."""
    path = Path(tempfile.mkdtemp(prefix=prefix))
    try:
        yield path
    finally:
        if keep:
            say(f"kept {path}")
        else:
            shutil.rmtree(path, ignore_errors=True)


def finish(result: dict[str, Any], out: TextIO | None = None) -> int:
    """Print ``RESULT {json}`` (with the load average and the failed checks, unless the bench
    set them), name each failed check on stderr; return the exit status: 1 if one failed."""
    result.setdefault("load_avg_1m", load_avg_1m())
    failed = result.setdefault("failed_checks", failed_checks(result.get("checks", {})))
    print("RESULT " + json.dumps(result, sort_keys=True), file=out or sys.stdout)
    for name in failed:
        print(f"check failed: {name}", file=sys.stderr, flush=True)
    return 1 if failed else 0
