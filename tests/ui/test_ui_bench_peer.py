"""ui_bench's peer: a built web UI given with ``--aw-webui DIR`` is checked before anything
starts, and a real aw-server process serves it from a copy of its own package, leaving the
installed package as it was. The build here is a stand-in the test writes (an index.html and
the script it names), not aw-webui."""

from __future__ import annotations

import importlib.util
import sys
import urllib.request
from pathlib import Path
from types import ModuleType

import pytest

BENCH = Path(__file__).resolve().parents[2] / "bench" / "ui_bench.py"
INDEX = '<!doctype html><script defer src="/js/index.0a1b.js"></script><div id="app"></div>'


@pytest.fixture(scope="module")
def bench() -> ModuleType:
    spec = importlib.util.spec_from_file_location("bench_ui_bench_peer", BENCH)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


def _build(root: Path, script: bool = True) -> Path:
    (root / "js").mkdir(parents=True)
    (root / "index.html").write_text(INDEX)
    if script:
        (root / "js" / "index.0a1b.js").write_text("document.title = 'built';\n")
    return root


def test_a_folder_that_is_not_a_build_is_refused_in_one_line(
    bench: ModuleType, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    cases = {
        tmp_path / "empty": "no index.html",
        _build(tmp_path / "half", script=False): "names js/index.0a1b.js, which is not there",
    }
    (tmp_path / "empty").mkdir()
    for folder, said in cases.items():
        with pytest.raises(SystemExit) as exited:
            bench.parse_args(["--aw-webui", str(folder)])
        assert exited.value.code == 2
        last = capsys.readouterr().err.strip().splitlines()[-1]
        assert said in last and str(folder) in last, last
    assert bench.webui_problem(_build(tmp_path / "whole")) is None


@pytest.mark.skipif(importlib.util.find_spec("aw_server") is None, reason="aw-server not installed")
def test_aw_server_serves_the_given_build_from_a_copy_of_its_package(
    bench: ModuleType, tmp_path: Path
) -> None:
    build = _build(tmp_path / "build")
    spec = importlib.util.find_spec("aw_server")
    assert spec is not None and spec.submodule_search_locations is not None
    shipped = Path(next(iter(spec.submodule_search_locations))) / "static" / "index.html"
    before = shipped.read_bytes()
    proc, base = bench.start_aw(tmp_path / "aw", build)
    try:
        assert urllib.request.urlopen(base + "/", timeout=30).read() == INDEX.encode()
        script = urllib.request.urlopen(base + "/js/index.0a1b.js", timeout=30).read()
        assert script == b"document.title = 'built';\n"
        assert bench._serves_build(base, build) is True
    finally:
        proc.terminate()
        proc.wait(timeout=20)
    assert shipped.read_bytes() == before  # the installed package still serves its own
