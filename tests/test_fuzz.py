"""The fuzz targets of ``bench/fuzz/``: every input the fuzzer once crashed on, saved under
``tests/data/fuzz/<target>/``, replays through the same target function and now gets a result
or a ``NerveError`` naming its place; and each target runs under atheris for about a second,
so the harness cannot rot."""

from __future__ import annotations

import importlib
import importlib.util
import sys
from pathlib import Path
from types import ModuleType

import pytest

ROOT = Path(__file__).resolve().parent.parent
BENCH = ROOT / "bench"
SAVED = Path(__file__).resolve().parent / "data" / "fuzz"


def _fuzz() -> ModuleType:
    """The ``bench/fuzz`` package (the bench folder on the path, as the bench has it)."""
    if str(BENCH) not in sys.path:
        sys.path.insert(0, str(BENCH))
    return importlib.import_module("fuzz")


def _bench() -> ModuleType:
    if "bench_fuzz_bench" in sys.modules:
        return sys.modules["bench_fuzz_bench"]
    spec = importlib.util.spec_from_file_location("bench_fuzz_bench", BENCH / "fuzz_bench.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules["bench_fuzz_bench"] = module
    spec.loader.exec_module(module)
    return module


def _saved() -> list[Path]:
    return sorted(path for path in SAVED.glob("*/*") if path.is_file())


def test_the_bench_and_the_package_name_the_same_targets() -> None:
    assert _bench().TARGETS == _fuzz().TARGETS
    assert {path.parent.name for path in _saved()} <= set(_fuzz().TARGETS)


@pytest.mark.parametrize("path", _saved(), ids=lambda p: f"{p.parent.name}/{p.name}")
def test_a_saved_crash_input_now_gets_a_result_or_a_placed_refusal(path: Path) -> None:
    _fuzz().load(path.parent.name).TestOneInput(path.read_bytes())


@pytest.mark.parametrize("name", ["spool", "wire", "wal", "segment", "request", "config"])
def test_every_seed_passes_its_target(name: str) -> None:
    target = _fuzz().load(name)
    for seed in target.seeds():
        target.TestOneInput(seed)


def test_a_refusal_without_its_place_is_a_crash() -> None:
    from nerve.errors import LogCorrupt

    fuzz = _fuzz()
    with pytest.raises(fuzz.Unplaced, match="names none of"):
        fuzz.placed(LogCorrupt("bad bytes"), "/the/segment.parquet")
    with pytest.raises(fuzz.Unplaced, match="not 1 line"):
        fuzz.placed(LogCorrupt("/the/segment.parquet: bad\nbytes"), "/the/segment.parquet")
    fuzz.placed(LogCorrupt("/the/segment.parquet: bad bytes"), "/the/segment.parquet")


@pytest.mark.fuzz
@pytest.mark.parametrize(
    "name",
    [
        "spool",
        "wire",
        "wal",
        "segment",
        "request",
        "config",
    ],
)
def test_each_target_fuzzes_for_a_second_without_a_crash(name: str, tmp_path: Path) -> None:
    pytest.importorskip("atheris")
    # 20 s per input: a real hang still fails; a slow input on a loaded CI runner does not
    tally = _bench().fuzz_target(name, 1, tmp_path, restarts=0, timeout=20.0)
    assert tally.execs > 0 and tally.runs == 1
    assert tally.crashes == [], [path.read_bytes()[:200] for path in tally.crashes]
