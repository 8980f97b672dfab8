"""The built-in senses, run against this machine (and fake powercap trees written to tmp_path).

Each sense is loaded by file path, as nerve loads any sense, and its ``compute`` is called
directly with a real :class:`SenseContext`. Every result must pass the kernel's own
``normalise_result`` and keep state that survives a JSON round trip unchanged.
"""

from __future__ import annotations

import importlib.util
import json
import os
import re
import shutil
import socket
import subprocess
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from types import ModuleType, SimpleNamespace
from typing import Any, NamedTuple

import psutil
import pytest

from nerve.contract import Observation, Result, SenseContext, normalise_result
from nerve.events import SourceClass, Trust

SENSES_DIR = Path(__file__).resolve().parents[2] / "senses"
BUILTINS = ["cpu", "memory", "disk", "files", "processes", "network", "shell", "power", "focus"]
_LOADED: dict[str, ModuleType] = {}


def load(name: str) -> ModuleType:
    """Load ``senses/<name>/sense.py`` once per test session, as a long-lived worker would.

    The module is named by its path in the repository (``senses.shell.sense``), as an import
    would name it, so tools that follow code by module name (the mutation bench's mutmut)
    know it for the file it is.
    """
    if name not in _LOADED:
        path = SENSES_DIR / name / "sense.py"
        spec = importlib.util.spec_from_file_location(f"senses.{name}.sense", path)
        assert spec is not None and spec.loader is not None
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        _LOADED[name] = module
    return _LOADED[name]


def run(name: str, state: Any, workspace: Path, **options: Any) -> Result:
    """One compute, checked against the contract; returns the result."""
    result = load(name).compute(state, SenseContext(name, workspace, options))
    assert isinstance(result, Result)
    assert json.loads(json.dumps(result.state)) == result.state
    normalise_result(result, state)
    for obs in result.observations:
        assert isinstance(obs, Observation)
        assert obs.line and "\n" not in obs.line and len(obs.line) <= 200
        assert isinstance(obs.valid_time_ns, int)
        json.dumps(obs.payload, allow_nan=False)
    return result


def initial(name: str) -> Any:
    return json.loads(json.dumps(load(name).initial_state))


def payloads(result: Result) -> list[dict[str, Any]]:
    return [dict(obs.payload) for obs in result.observations]


def burn_cpu(seconds: float) -> None:
    end = time.perf_counter() + seconds
    while time.perf_counter() < end:
        pass


def poll(step: Callable[[], bool], timeout: float = 3.0) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if step():
            return True
        time.sleep(0.05)
    return False


# --- every sense --------------------------------------------------------------------------


@pytest.mark.parametrize("name", BUILTINS)
def test_each_builtin_exports_the_contract(name: str) -> None:
    module = load(name)
    assert json.loads(json.dumps(module.initial_state)) == module.initial_state
    assert callable(module.compute)


@pytest.mark.parametrize(
    ("name", "options"),
    [
        ("cpu", {"per_cpu": "yes"}),
        ("memory", {"warn_percent": 150}),
        ("disk", {"paths": "/"}),
        ("files", {"max_per_compute": 0}),
        ("processes", {"notable": "python"}),
        ("network", {"nics": "lo"}),
        ("shell", {"files": [""]}),
        ("power", {"estimate_watts_per_core": -1}),
        ("focus", {"idle_s": 0}),
    ],
)
def test_a_bad_option_is_a_clear_error(name: str, options: dict[str, Any], tmp_path: Path) -> None:
    key = next(iter(options))
    with pytest.raises(ValueError, match=rf"senses\.{name}\.options\.{key}"):
        load(name).compute(initial(name), SenseContext(name, tmp_path, options))


# --- cpu, memory, disk, network -------------------------------------------------------------


# Each sense's Sense v0.1 class: what it reads (senses/README.md says why).
CLASSES = {
    "cpu": SourceClass.ENDPOINT,
    "memory": SourceClass.ENDPOINT,
    "disk": SourceClass.ENDPOINT,
    "power": SourceClass.THERMAL_POWER,
    "processes": SourceClass.PROCESS_TREE,
    "network": SourceClass.NETWORK,
    "files": SourceClass.FILE_CHANGE,
    "shell": SourceClass.SHELL,
    "focus": SourceClass.APP_FOCUS,
}


def test_the_readme_tables_name_each_senses_class() -> None:
    text = (SENSES_DIR / "README.md").read_text()
    for name in BUILTINS:
        rows = re.findall(rf"^\| `{name}` \| `([a-z_]+)` \|", text, flags=re.MULTILINE)
        assert rows == [CLASSES[name].name.lower()] * 2, name  # both tables agree
        code = (SENSES_DIR / name / "sense.py").read_text()
        assert f"SourceClass.{CLASSES[name].name}" in code, name


def test_cpu_reports_load_every_compute(tmp_path: Path) -> None:
    first = run("cpu", initial("cpu"), tmp_path, keyframe_s=0)
    result = run("cpu", first.state, tmp_path, per_cpu=True, keyframe_s=0)
    (obs,) = result.observations
    assert (obs.source, obs.trust) == (SourceClass.ENDPOINT, Trust.FIRST_PARTY)
    p = obs.payload
    assert 0.0 <= p["percent"] <= 100.0
    assert p["cores_logical"] >= 1 and len(p["per_cpu"]) == p["cores_logical"]
    assert p["load1"] is None or p["load1"] >= 0.0
    assert obs.line.startswith(f"cpu {p['percent']:.1f}%")
    assert result.state == first.state == {"note": result.state["note"]}  # nothing to store


def test_memory_reports_percent_and_bytes(tmp_path: Path) -> None:
    (obs,) = run("memory", initial("memory"), tmp_path, keyframe_s=0).observations
    p = obs.payload
    assert (obs.source, obs.trust) == (SourceClass.ENDPOINT, Trust.FIRST_PARTY)
    assert 0.0 <= p["percent"] <= 100.0
    assert 0 < p["used_bytes"] <= p["total_bytes"]
    assert p["swap_percent"] is None or 0.0 <= p["swap_percent"] <= 100.0
    assert p["pressure"] is False or p["percent"] >= 90
    (flagged,) = run("memory", initial("memory"), tmp_path, warn_percent=0).observations
    assert flagged.payload["pressure"] is True and flagged.line.endswith("PRESSURE")


def test_disk_reports_usage_pressure_and_io_rates(tmp_path: Path) -> None:
    first = run(
        "disk", initial("disk"), tmp_path, paths=["/", "no/such/dir"], warn_percent=0, keyframe_s=0
    )
    (usage,) = payloads(first)
    assert usage["path"] == "/" and 0.0 <= usage["percent"] <= 100.0
    assert {(o.source, o.trust) for o in first.observations} == {
        (SourceClass.ENDPOINT, Trust.FIRST_PARTY)
    }
    assert usage["pressure"] is True
    assert first.state["notes"]["no/such/dir"].startswith("unreadable")
    (tmp_path / "blob").write_bytes(os.urandom(4096))
    time.sleep(0.05)
    second = run("disk", first.state, tmp_path, keyframe_s=0)
    assert second.observations[0].payload["pressure"] is False or usage["percent"] >= 90
    if "io" in second.state["notes"]:
        pytest.skip(f"this host has no disk counters: {second.state['notes']['io']}")
    io = second.observations[-1].payload
    assert io["interval_ms"] >= 40
    assert all(io[f"{k}_per_s"] >= 0 for k in ("read_bytes", "write_bytes", "read_count"))


def test_network_baseline_then_rates(tmp_path: Path) -> None:
    first = run("network", initial("network"), tmp_path, per_nic=True, keyframe_s=0)
    assert not first.observations and first.state["note"].startswith("baseline")
    time.sleep(0.05)
    second = run("network", first.state, tmp_path, per_nic=True, keyframe_s=0)
    assert {o.source for o in second.observations} == {SourceClass.NETWORK}
    assert {o.trust for o in second.observations} == {Trust.FIRST_PARTY}
    total = second.observations[0].payload
    assert total["nic"] == "all" and total["interval_ms"] >= 40
    assert all(v >= 0 for k, v in total.items() if k.endswith("_per_s"))
    assert {p["nic"] for p in payloads(second)[1:]} == set(second.state["nics"])


def test_network_traffic_leaves_loopback_out(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The machine talking to itself over lo is no network traffic: 10 MB more through lo
    and none through eth0 is nothing down and nothing up."""
    moved = {"lo": 0}

    def nic(bytes_each_way: int) -> SimpleNamespace:
        return SimpleNamespace(bytes_sent=bytes_each_way, bytes_recv=bytes_each_way,
                               packets_sent=10, packets_recv=10, errin=0, errout=0)  # fmt: skip

    def counters(pernic: bool = False) -> dict[str, SimpleNamespace]:
        assert pernic  # the sum over all would count lo
        return {"lo": nic(moved["lo"]), "eth0": nic(5000)}

    def stats() -> dict[str, SimpleNamespace]:
        flags = {"lo": "up,loopback,running", "eth0": "up,broadcast,running"}
        return {name: SimpleNamespace(flags=f) for name, f in flags.items()}

    monkeypatch.setattr(psutil, "net_io_counters", counters)
    monkeypatch.setattr(psutil, "net_if_stats", stats)
    first = run("network", initial("network"), tmp_path, keyframe_s=0)
    moved["lo"] = 10_000_000
    time.sleep(0.05)
    total = payloads(run("network", first.state, tmp_path, keyframe_s=0))[0]
    assert total["nic"] == "all" and total["bytes_recv_per_s"] == total["bytes_sent_per_s"] == 0


def test_network_reports_ports_opened_and_closed_with_their_process(tmp_path: Path) -> None:
    def ours(result: Result, port: int) -> list[dict[str, Any]]:
        return [p for p in payloads(result) if p.get("port") == port and "event" in p]

    first = run("network", initial("network"), tmp_path, port_min_life_s=0)
    assert not [p for p in payloads(first) if "event" in p]  # a baseline, ports included
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        sock.listen()
        port = sock.getsockname()[1]
        second = run("network", first.state, tmp_path, port_min_life_s=0)
        [opened] = ours(second, port)
        assert opened["event"] == "port_opened" and opened["address"] == "127.0.0.1"
        assert opened["pid"] == os.getpid() and opened["name"] == psutil.Process().name()
        line = next(o.line for o in second.observations if o.payload.get("port") == port)
        assert line == f"port 127.0.0.1:{port} opened by {opened['name']} [{os.getpid()}]"
        assert second.observations[0].payload["readings"]["listening_ports"] >= 1
        assert not ours(run("network", second.state, tmp_path), port)  # reported once
    third = run("network", second.state, tmp_path)
    [closed] = ours(third, port)
    assert closed["event"] == "port_closed" and closed["pid"] == os.getpid()
    assert f"127.0.0.1:{port}" not in third.state["ports"]


def test_network_reports_a_port_once_it_lasted_and_never_a_brief_one(tmp_path: Path) -> None:
    def ours(result: Result, port: int) -> list[str]:
        return [p["event"] for p in payloads(result) if p.get("port") == port and "event" in p]

    state = run("network", initial("network"), tmp_path, port_min_life_s=1).state
    with socket.socket() as brief, socket.socket() as lasting:
        for sock in (brief, lasting):
            sock.bind(("127.0.0.1", 0))
            sock.listen()
        ports = brief.getsockname()[1], lasting.getsockname()[1]
        seen = run("network", state, tmp_path, port_min_life_s=1)
        assert not ours(seen, ports[0]) and not ours(seen, ports[1])  # too young yet
        brief.close()
        first_seen = seen.state["ports"][f"127.0.0.1:{ports[1]}"]["since"]
        assert poll(lambda: time.time() - first_seen >= 1.0, timeout=10)
        later = run("network", seen.state, tmp_path, port_min_life_s=1)
    assert not ours(later, ports[0])  # it came and went: neither opened nor closed
    assert ours(later, ports[1]) == ["port_opened"]
    [opened] = [o for o in later.observations if o.payload.get("port") == ports[1]]
    assert opened.valid_time_ns == int(first_seen * 1e9)  # when it was first seen listening
    assert ours(run("network", later.state, tmp_path, port_min_life_s=1), ports[1]) == [
        "port_closed"
    ]


# --- files ----------------------------------------------------------------------------------


@pytest.fixture
def files_sense() -> Iterator[ModuleType]:
    module = load("files")
    yield module
    module.stop_watchers()


def _watch_until(workspace: Path, state: Any, want: dict[str, str], **options: Any) -> Any:
    """Compute until every ``path: change`` in ``want`` was observed; return (state, seen)."""
    seen: dict[str, str] = {}

    def step() -> bool:
        nonlocal state
        result = run("files", state, workspace, **options)
        state = result.state
        seen.update((p["path"], p["change"]) for p in payloads(result) if "path" in p)
        return all(seen.get(path) == change for path, change in want.items())

    assert poll(step), f"wanted {want}, saw {seen}"
    return state, seen


def _ready_state(workspace: Path, **options: Any) -> Any:
    state = initial("files")

    def step() -> bool:
        nonlocal state
        state = run("files", state, workspace, **options).state
        return bool(state["ready"])

    assert poll(step), state
    return state


def test_files_sees_real_writes_relative_and_filtered(
    files_sense: ModuleType, tmp_path: Path
) -> None:
    state = _ready_state(tmp_path)
    assert state["watching"] == ["."] and state["error"] is None
    (tmp_path / "notes.txt").write_text("one")
    (tmp_path / "src").mkdir()
    (tmp_path / "src" / "app.py").write_text("print()")
    (tmp_path / "data").mkdir()
    (tmp_path / "data" / "wal.bin").write_bytes(b"x")
    (tmp_path / "pkg" / "__pycache__").mkdir(parents=True)
    (tmp_path / "pkg" / "__pycache__" / "m.pyc").write_bytes(b"x")
    (tmp_path / "gone.txt").write_text("brief")
    (tmp_path / "gone.txt").unlink()
    state, seen = _watch_until(tmp_path, state, {"notes.txt": "added", "src/app.py": "added"})
    assert not {p for p in seen if p.startswith(("data", "pkg", "gone"))}, seen
    (tmp_path / "notes.txt").write_text("two")
    (tmp_path / "src" / "app.py").unlink()
    _watch_until(tmp_path, state, {"notes.txt": "modified", "src/app.py": "deleted"})


def test_files_caps_observations_with_a_summary(files_sense: ModuleType, tmp_path: Path) -> None:
    state = _ready_state(tmp_path, max_per_compute=2, debounce_ms=50)
    for i in range(5):
        (tmp_path / f"f{i}.txt").write_text(str(i))
    time.sleep(0.4)
    result = run("files", state, tmp_path, max_per_compute=2, debounce_ms=50)
    listed = [p for p in payloads(result) if "path" in p]
    summary = [p for p in payloads(result) if "omitted" in p]
    assert len(listed) == 2
    assert summary and summary[0]["total"] == 5 and summary[0]["by_change"] == {"added": 3}


def test_files_records_missing_paths(files_sense: ModuleType, tmp_path: Path) -> None:
    result = run("files", initial("files"), tmp_path, paths=["absent"])
    assert result.state["missing"] == ["absent"] and result.state["watching"] == []


@pytest.mark.parametrize(
    ("changes", "expected"),
    [
        ([("added", "a")], {"a": "added"}),
        ([("added", "a"), ("modified", "a")], {"a": "added"}),
        ([("added", "a"), ("deleted", "a")], {}),
        ([("modified", "a"), ("deleted", "a")], {"a": "deleted"}),
        ([("deleted", "a"), ("added", "a")], {"a": "modified"}),
        ([("modified", "a"), ("modified", "a")], {"a": "modified"}),
        ([("added", "a"), ("deleted", "a"), ("added", "a")], {"a": "added"}),
        ([("modified", "b"), ("added", "a")], {"b": "modified", "a": "added"}),
        ([], {}),
    ],
)
def test_coalesce(changes: list[tuple[str, str]], expected: dict[str, str]) -> None:
    result = load("files").coalesce(changes)
    assert result == expected and list(result) == list(expected)


def test_coalesce_rejects_an_unknown_change() -> None:
    with pytest.raises(ValueError, match="renamed"):
        load("files").coalesce([("renamed", "a")])


@pytest.mark.parametrize(
    ("glob", "matches", "misses"),
    [
        ("data/**", ["data", "data/a/b.parquet"], ["database", "x/data/a"]),
        ("**/__pycache__/**", ["__pycache__/m.pyc", "a/b/__pycache__/m.pyc"], ["a/__pycache__x"]),
        ("*.log", ["a.log", "deep/er/a.log"], ["a.logs", "a.log.txt"]),
        ("/build", ["build", "build/out"], ["src/build"]),
        ("src/*.py", ["src/a.py"], ["src/sub/a.py", "a.py"]),
    ],
)
def test_ignore_globs(glob: str, matches: list[str], misses: list[str]) -> None:
    rx = load("files").glob_regex(glob)
    assert [bool(rx.fullmatch(m)) for m in matches] == [True] * len(matches)
    assert [bool(rx.fullmatch(m)) for m in misses] == [False] * len(misses)


# --- processes -------------------------------------------------------------------------------


@pytest.mark.skipif(shutil.which("sleep") is None, reason="no sleep binary")
def test_processes_started_then_exited(tmp_path: Path) -> None:
    opts = {"notable": ["sleep"], "min_life_s": 0}  # every notable process at once
    baseline = run("processes", initial("processes"), tmp_path, **opts)
    assert not baseline.observations and baseline.state["note"].startswith("baseline")
    proc = subprocess.Popen(["sleep", "30"])
    try:
        started = run("processes", baseline.state, tmp_path, **opts)
    finally:
        proc.kill()
        proc.wait()
    mine = [o for o in started.observations if o.payload.get("pid") == proc.pid]
    assert [(o.payload["event"], o.payload["name"]) for o in mine] == [("started", "sleep")]
    assert mine[0].payload["cmdline"] == "sleep 30" and mine[0].payload["why"] == "name"
    assert (mine[0].source, mine[0].trust) == (SourceClass.PROCESS_TREE, Trust.FIRST_PARTY)
    exited = run("processes", started.state, tmp_path, **opts)
    gone = [o.payload for o in exited.observations if o.payload.get("pid") == proc.pid]
    assert gone == [
        {
            "pid": proc.pid,
            "name": "sleep",
            "event": "exited",
            "cmdline": "sleep 30",
            "user": mine[0].payload["user"],
            "start_time": mine[0].payload["start_time"],
        }
    ]


@pytest.mark.skipif(shutil.which("sleep") is None, reason="no sleep binary")
def test_processes_baseline_is_silent_but_remembers_notable(tmp_path: Path) -> None:
    proc = subprocess.Popen(["sleep", "30"])
    try:
        baseline = run("processes", initial("processes"), tmp_path, notable=["sleep"], min_life_s=0)
        again = run("processes", baseline.state, tmp_path, notable=["sleep"], min_life_s=0)
    finally:
        proc.kill()
        proc.wait()
    assert str(proc.pid) in baseline.state["notable"]
    assert not [o for o in again.observations if o.payload.get("pid") == proc.pid]
    after = run("processes", again.state, tmp_path, notable=["sleep"], min_life_s=0)
    assert [o.payload["event"] for o in after.observations if o.payload.get("pid") == proc.pid] == [
        "exited"
    ]


@pytest.mark.skipif(shutil.which("sleep") is None, reason="no sleep binary")
def test_processes_short_lived_are_counted_and_the_rest_reported_once_they_lasted(
    tmp_path: Path,
) -> None:
    # a name of its own: other tests' sleeps may come and go meanwhile
    binary = tmp_path / "zzbrief"
    shutil.copy(shutil.which("sleep") or "sleep", binary)
    opts = {"notable": ["zzbrief"], "min_life_s": 1}
    state = run("processes", initial("processes"), tmp_path, **opts).state
    brief = subprocess.Popen([binary, "30"])
    lasting = subprocess.Popen([binary, "30"])
    try:
        seen = run("processes", state, tmp_path, **opts)
        assert not [
            o for o in seen.observations if o.payload.get("pid") in (brief.pid, lasting.pid)
        ]
        assert {str(brief.pid), str(lasting.pid)} <= set(seen.state["pending"])
        brief.kill()
        brief.wait()
        born = psutil.Process(lasting.pid).create_time()
        assert poll(lambda: time.time() - born >= 1.0, timeout=10)
        after = run("processes", seen.state, tmp_path, **opts)
    finally:
        for proc in (brief, lasting):
            proc.kill()
            proc.wait()
    events = {(o.payload.get("event"), o.payload.get("pid")) for o in after.observations}
    assert ("started", lasting.pid) in events  # it lasted: reported, at its start
    assert not {e for e in events if e[1] == brief.pid}  # it did not: neither start nor exit
    [started] = [o for o in after.observations if o.payload.get("pid") == lasting.pid]
    assert started.valid_time_ns == int(born * 1e9)
    [summary] = [o for o in after.observations if o.payload.get("event") == "brief"]
    assert summary.payload["counts"] == {"zzbrief": 1}
    assert summary.payload["readings"] == {"brief_exits": 1}
    assert summary.line == "short-lived processes: zzbrief ×1"
    assert after.state["brief"]["counts"] == {}  # sent: the next waits brief_every_s
    sense = load("processes")
    opts_ = sense._options(SenseContext("processes", tmp_path, opts))
    waiting = sense._Brief.of(after.state["brief"])
    waiting.count("zzbrief")
    assert waiting.flush(time.time_ns(), opts_) is None  # one more: it waits brief_every_s
    waiting.count("zzbrief")
    waiting.count("zzbrief")
    # three of one name: a loop, sent at once, but no sooner than half of brief_every_s
    # after the last brief (a machine running test suites loops at every compute)
    assert waiting.flush(time.time_ns(), opts_) is None
    looped = waiting.flush(time.time_ns() + opts_.brief_every_ns // 2, opts_)
    assert looped is not None and looped.payload["counts"] == {"zzbrief": 3}
    gone = run("processes", after.state, tmp_path, **opts)
    assert [
        o.payload["event"] for o in gone.observations if o.payload.get("pid") == lasting.pid
    ] == ["exited"]


@pytest.mark.skipif(shutil.which("sleep") is None, reason="no sleep binary")
def test_processes_the_default_reports_a_start_at_the_next_compute(tmp_path: Path) -> None:
    """min_life_s unset: first seen, a notable process is pending; the next compute that
    still sees it reports its start (one interval of life, not 30 s)."""
    opts = {"notable": ["sleep"]}
    baseline = run("processes", initial("processes"), tmp_path, **opts)
    proc = subprocess.Popen(["sleep", "30"])
    try:
        seen = run("processes", baseline.state, tmp_path, **opts)
        again = run("processes", seen.state, tmp_path, **opts)
    finally:
        proc.kill()
        proc.wait()

    def mine(result: Result) -> list[str]:
        return [o.payload["event"] for o in result.observations if o.payload.get("pid") == proc.pid]

    assert mine(seen) == [] and str(proc.pid) in seen.state["pending"]
    assert mine(again) == ["started"]


@pytest.mark.skipif(shutil.which("sleep") is None, reason="no sleep binary")
def test_processes_the_notable_cap_never_reports_a_start_twice(tmp_path: Path) -> None:
    """Over max_notable, the processes the cap lets go are remembered again, not reported."""
    procs = [subprocess.Popen(["sleep", "30"]) for _ in range(3)]
    opts = {"notable": ["sleep"], "max_notable": 1, "min_life_s": 0}
    try:
        state = run("processes", initial("processes"), tmp_path, **opts).state
        events = []
        for _ in range(3):
            result = run("processes", state, tmp_path, **opts)
            state = result.state
            events += [o.payload for o in result.observations if o.payload.get("name") == "sleep"]
    finally:
        for proc in procs:
            proc.kill()
            proc.wait()
    ours = {p.pid for p in procs}
    assert [e for e in events if e["event"] == "started" and e["pid"] in ours] == []


def test_processes_state_is_bounded(tmp_path: Path) -> None:
    # Quiet options on both computes: a notable process exiting in between is not the point.
    quiet = {"notable": ["no-such-name"], "cpu_percent": 10_000, "rss_mb": 10**9}
    result = run("processes", initial("processes"), tmp_path, max_tracked=3, **quiet)
    assert len(result.state["known"]) == 3 and result.state["cutoff"] > 0
    again = run("processes", result.state, tmp_path, max_tracked=3, **quiet)
    events = [o.payload["event"] for o in again.observations]
    assert "started" not in events  # older processes past the cap are not "started"


# --- shell -----------------------------------------------------------------------------------


def _shell(state: Any, workspace: Path, *files: Path, **options: Any) -> Result:
    return run("shell", state, workspace, files=[str(f) for f in files], **options)


def _commands(result: Result) -> list[str]:
    return [p["command"] for p in payloads(result)]


def _append(path: Path, data: bytes) -> None:
    with path.open("ab") as handle:
        handle.write(data)


def test_shell_reads_only_new_commands(tmp_path: Path) -> None:
    bash, zsh = tmp_path / "bash_history", tmp_path / "zsh_history"
    bash.write_text("old-bash\n")
    zsh.write_bytes(b": 1690000000:0;old-zsh\n")
    first = _shell(initial("shell"), tmp_path, bash, zsh)
    assert not first.observations
    assert first.state["files"][str(bash)]["note"].startswith("first seen")
    _append(bash, b"#1700000000\ngit status\nls -la\n")
    _append(zsh, b": 1700000001:2;make test\n: 1700000002:0;echo one\\\necho two\n")
    second = _shell(first.state, tmp_path, bash, zsh)
    assert _commands(second) == ["git status", "ls -la", "make test", "echo one\necho two"]
    assert {(o.source, o.trust) for o in second.observations} == {
        (SourceClass.SHELL, Trust.INFERRED)
    }
    git, ls, make, _ = payloads(second)
    assert (git["format"], git["timestamp"], ls["timestamp"]) == (
        "bash-timestamped",
        1700000000,
        None,
    )
    assert second.observations[0].valid_time_ns == 1700000000 * 10**9
    assert (make["format"], make["elapsed_s"]) == ("zsh-extended", 2)
    assert second.observations[3].line == "$ echo one…"
    assert not _shell(second.state, tmp_path, bash, zsh).observations
    assert second.state["commands"] == 4


def test_shell_waits_for_a_complete_line(tmp_path: Path) -> None:
    hist = tmp_path / "h"
    hist.write_text("")
    state = _shell(initial("shell"), tmp_path, hist).state
    _append(hist, b"#1700000000\npart")
    partial = _shell(state, tmp_path, hist)
    assert not partial.observations
    _append(hist, b"ly done\n: 1700000001:0;for x in a\\\n")
    done = _shell(partial.state, tmp_path, hist)
    assert payloads(done) == [
        {"command": "partly done", "format": "bash-timestamped", "timestamp": 1700000000,
         "elapsed_s": None, "file": str(hist)},
    ]  # fmt: skip


def test_shell_truncation_rotation_and_rewrite_resume_at_the_end(tmp_path: Path) -> None:
    hist = tmp_path / "h"
    hist.write_text("a\nb\nc\n")
    state = _shell(initial("shell"), tmp_path, hist).state
    hist.write_text("x\n")
    truncated = _shell(state, tmp_path, hist)
    assert not truncated.observations
    assert truncated.state["files"][str(hist)]["note"].startswith("truncated")
    hist.write_text("rewritten\nand longer than before\n")
    rewritten = _shell(truncated.state, tmp_path, hist)
    assert not rewritten.observations
    assert rewritten.state["files"][str(hist)]["note"].startswith("rewritten in place")
    (tmp_path / "new").write_text("rotated\n")
    os.replace(tmp_path / "new", hist)
    rotated = _shell(rewritten.state, tmp_path, hist)
    assert not rotated.observations
    assert rotated.state["files"][str(hist)]["note"].startswith("replaced (new inode)")
    _append(hist, b"after\n")
    assert _commands(_shell(rotated.state, tmp_path, hist)) == ["after"]


def test_shell_missing_then_created_reads_from_the_start(tmp_path: Path) -> None:
    hist, folder = tmp_path / "later", tmp_path / "folder"
    folder.mkdir()
    first = _shell(initial("shell"), tmp_path, hist, folder)
    assert first.state["files"][str(hist)]["status"] == "missing"
    assert first.state["files"][str(folder)]["status"] == "skipped: not a regular file"
    hist.write_text("first ever\n")
    assert _commands(_shell(first.state, tmp_path, hist, folder)) == ["first ever"]


def test_shell_caps_per_compute_without_losing_commands(tmp_path: Path) -> None:
    hist = tmp_path / "h"
    hist.write_text("")
    state = _shell(initial("shell"), tmp_path, hist).state
    _append(hist, b"".join(b"cmd%d\n" % i for i in range(5)))
    seen: list[str] = []
    for expected in (2, 2, 1, 0):
        result = _shell(state, tmp_path, hist, max_per_compute=2)
        assert len(result.observations) == expected
        seen += _commands(result)
        state = result.state
    assert seen == [f"cmd{i}" for i in range(5)]


def test_shell_history_lines_plain_and_timestamped_from_an_empty_first_line() -> None:
    data = b"\nls\n#1700000000\nmake\n#1700000001\n"
    records, consumed = load("shell").parse_history(data, 10)
    assert records == [
        {"command": "ls", "format": "plain", "timestamp": None, "elapsed_s": None},
        {"command": "make", "format": "bash-timestamped", "timestamp": 1700000000,
         "elapsed_s": None},
    ]  # fmt: skip
    assert consumed == len(b"\nls\n#1700000000\nmake\n")  # a stamp waits for its command


def test_shell_leaves_secrets_to_the_privacy_rules_and_decodes_zsh_meta(tmp_path: Path) -> None:
    """The sense reports commands as typed; the kernel's privacy rules redact them before
    the WAL (tests/privacy/test_privacy_capture.py), so the sense's old mask is gone."""
    hist = tmp_path / "h"
    hist.write_text("")
    state = _shell(initial("shell"), tmp_path, hist).state
    _append(hist, b"export API_TOKEN=abc123\ncurl https://bob:hunter2@example.com\n")
    _append(hist, b": 1700000003:0;echo \xc4\x83\xa3\n")  # zsh metafies the 0x83 of "\u0103"
    result = _shell(state, tmp_path, hist)
    assert _commands(result) == [
        "export API_TOKEN=abc123", "curl https://bob:hunter2@example.com", "echo \u0103"
    ]  # fmt: skip
    assert all("redacted" not in p for p in payloads(result))


def test_shell_redact_option_points_to_the_privacy_rules(tmp_path: Path) -> None:
    hist = tmp_path / "h"
    hist.write_text("")
    with pytest.raises(ValueError, match=r"options\.redact is gone.*privacy\.rules"):
        _shell(initial("shell"), tmp_path, hist, redact=[r"x"])


# --- power -----------------------------------------------------------------------------------


def _zone(root: Path, energy: int | str, max_uj: int | None = 2**32, index: int = 0) -> Path:
    zone = root / f"intel-rapl:{index}"
    zone.mkdir(parents=True, exist_ok=True)
    (zone / "name").write_text(f"package-{index}\n")
    (zone / "energy_uj").write_text(f"{energy}\n")
    if max_uj is not None:
        (zone / "max_energy_range_uj").write_text(f"{max_uj}\n")
    sub = root / f"intel-rapl:{index}:0"  # a sub-zone: inside its package, never added again
    sub.mkdir(exist_ok=True)
    (sub / "name").write_text("core\n")
    (sub / "energy_uj").write_text("5\n")
    return zone


def _power_series(root: Path, readings: list[int], burn: float = 0.0, **options: Any) -> Result:
    """Baseline, then one compute per further reading; returns the last result."""
    result = run("power", initial("power"), root, powercap_root=str(root), **options)
    assert not result.observations  # no interval yet
    for reading in readings[1:]:
        burn_cpu(burn)
        (root / "intel-rapl:0" / "energy_uj").write_text(f"{reading}\n")
        result = run("power", result.state, root, powercap_root=str(root), **options)
    return result


def test_power_live_counter_is_a_hardware_reading(tmp_path: Path) -> None:
    _zone(tmp_path, 1_000_000)
    psys = tmp_path / "intel-rapl:1"  # platform-wide: more than the CPU, so never read
    psys.mkdir()
    (psys / "name").write_text("psys\n")
    (psys / "energy_uj").write_text("7\n")
    readings = [1_000_000 + i * 250_000 for i in range(7)]
    result = _power_series(tmp_path, readings, burn=0.07)
    (obs,) = result.observations
    p = obs.payload
    assert (obs.source, obs.trust) == (SourceClass.THERMAL_POWER, Trust.FIRST_PARTY)
    assert p["provenance"] == "HwShunt" and p["measured_uj"] == 250_000
    assert p["domain"] == "package-0" and p["reason"].startswith(
        "counter live: advanced in 5 of last 5"
    )
    assert isinstance(p["estimated_uj"], int) and p["estimated_uj"] > 0
    assert isinstance(p["measured_uj"], int)


def test_power_interval_without_an_advance_is_never_hwshunt(tmp_path: Path) -> None:
    """4 of the last 5 samples advanced (a live window), but not the last one: the CPUs
    worked through it, so 0 µJ is no measurement and the estimator grades it."""
    _zone(tmp_path, 0)
    readings = [0, 100_000, 200_000, 300_000, 400_000, 500_000, 500_000]
    (obs,) = _power_series(tmp_path, readings, burn=0.07).observations
    p = obs.payload
    assert p["provenance"] == "Estimator" and "measured_uj" not in p
    assert p["reason"].startswith("counter not live: did not advance this interval while the CPUs")
    assert p["reason"].endswith("(advanced in 4 of last 5 samples)")
    assert p["estimated_uj"] > 0
    (again,) = _power_series(tmp_path, [*readings, 600_000], burn=0.07).observations
    assert again.payload["provenance"] == "HwShunt" and again.payload["measured_uj"] == 100_000


def test_power_live_counter_survives_wraparound(tmp_path: Path) -> None:
    _zone(tmp_path, 0, max_uj=1_000_000)
    readings = [0, 200_000, 400_000, 600_000, 800_000, 999_000, 100_000]
    (obs,) = _power_series(tmp_path, readings, burn=0.07).observations
    assert obs.payload["provenance"] == "HwShunt"
    assert obs.payload["measured_uj"] == 1_000_000 - 999_000 + 100_000


def test_power_frozen_counter_falls_back_to_the_estimator(tmp_path: Path) -> None:
    _zone(tmp_path, 42)
    (obs,) = _power_series(tmp_path, [42] * 6, burn=0.07).observations
    p = obs.payload
    assert p["provenance"] == "Estimator" and "measured_uj" not in p
    assert p["reason"] == "counter not live: advanced in 0 of last 5 samples"
    assert isinstance(p["estimated_uj"], int) and p["estimated_uj"] >= 0


def test_power_counter_in_lumps_is_not_live(tmp_path: Path) -> None:
    _zone(tmp_path, 0)
    (obs,) = _power_series(tmp_path, [0, 0, 0, 5_000_000, 5_000_000, 5_000_000]).observations
    assert obs.payload["reason"] == "counter not live: advanced in 1 of last 5 samples"
    assert obs.payload["provenance"] == "Estimator"


def test_power_needs_enough_samples_before_trusting_a_counter(tmp_path: Path) -> None:
    _zone(tmp_path, 0)
    (obs,) = _power_series(tmp_path, [0, 100, 200], burn=0.07).observations
    assert obs.payload["reason"] == "counter not live: advanced in 2 of last 2 samples, needs 5"
    assert "measured_uj" not in obs.payload


def test_power_reset_without_a_range_is_not_a_reading(tmp_path: Path) -> None:
    _zone(tmp_path, 900, max_uj=None)
    (obs,) = _power_series(tmp_path, [900, 100]).observations
    assert obs.payload["reason"].endswith("(reset)") and obs.payload["provenance"] == "Estimator"


def _garbage(zone: Path) -> None:
    (zone / "energy_uj").write_text("n/a\n")


def _directory(zone: Path) -> None:
    (zone / "energy_uj").unlink()
    (zone / "energy_uj").mkdir()


@pytest.mark.parametrize(
    ("make_unreadable", "reason"),
    [
        (_garbage, "counter unreadable: not an integer"),
        (_directory, "counter unreadable: Is a directory"),
    ],
)
def test_power_unreadable_counter_is_estimated_with_a_reason(
    tmp_path: Path, make_unreadable: Callable[[Path], Any], reason: str
) -> None:
    zone = _zone(tmp_path, 10)
    first = run("power", initial("power"), tmp_path, powercap_root=str(tmp_path))
    make_unreadable(zone)
    (obs,) = run("power", first.state, tmp_path, powercap_root=str(tmp_path)).observations
    assert obs.payload["reason"] == reason and obs.payload["provenance"] == "Estimator"
    assert "measured_uj" not in obs.payload


@pytest.mark.skipif(hasattr(os, "geteuid") and os.geteuid() == 0, reason="root reads any file")
def test_power_permission_denied_is_a_reason(tmp_path: Path) -> None:
    zone = _zone(tmp_path, 10)
    (zone / "energy_uj").chmod(0)
    first = run("power", initial("power"), tmp_path, powercap_root=str(tmp_path))
    (obs,) = run("power", first.state, tmp_path, powercap_root=str(tmp_path)).observations
    assert obs.payload["reason"] == "counter unreadable: permission denied"


def test_power_without_powercap_estimates_the_cpu(tmp_path: Path) -> None:
    root = tmp_path / "absent"
    wall_before = time.monotonic_ns()
    first = run("power", initial("power"), tmp_path, powercap_root=str(root))
    cpu_before = time.process_time()
    burn_cpu(0.03)
    burnt_us = (time.process_time() - cpu_before) * 1e6
    result = run("power", first.state, tmp_path, powercap_root=str(root), estimate_watts_per_core=3)
    wall_us = (time.monotonic_ns() - wall_before) / 1000
    # The estimate is the CPUs' busy time between the two computes (the sense keeps its
    # readings in its state) times the watts per core: 3 W for 1 µs is 3 µJ.
    busy_us = result.state["busy_us"] - first.state["busy_us"]
    interval_ms = (result.state["t_ns"] - first.state["t_ns"]) // 1_000_000
    assert payloads(result)[0] == {
        "domain": "cpu",
        "provenance": "Estimator",
        "estimated_uj": round(busy_us * 3),
        "reason": "no powercap counter",
        "interval_ms": interval_ms,
    }
    # Those readings are real: the 30 ms burnt here is in the busy time (less a 10 ms
    # clock tick), and no more CPU time passed than every core for the whole wall time.
    assert burnt_us - 20_000 <= busy_us <= wall_us * (os.cpu_count() or 1) + 20_000
    assert 30 <= interval_ms <= wall_us / 1000


class _FakeBattery(NamedTuple):
    percent: float
    secsleft: int
    power_plugged: bool | None


def test_power_reports_the_battery_psutil_sees(tmp_path: Path) -> None:
    result = run("power", initial("power"), tmp_path, powercap_root=str(tmp_path / "absent"))
    if psutil.sensors_battery() is None:  # this machine: no battery, and no observation
        assert result.state["battery"] == "no battery" and not result.observations
    else:
        assert result.state["battery"] == result.observations[-1].payload


@pytest.mark.parametrize(
    ("battery", "payload", "line"),
    [
        (
            _FakeBattery(41.26, 5400, False),
            {"percent": 41.3, "plugged": False, "secs_left": 5400},
            "battery 41% on battery (1h30m left)",
        ),
        (
            _FakeBattery(100.0, -2, True),  # psutil's POWER_TIME_UNLIMITED
            {"percent": 100.0, "plugged": True, "secs_left": None},
            "battery 100% plugged in",
        ),
    ],
)
def test_power_battery_payload_and_line(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    battery: _FakeBattery,
    payload: dict[str, Any],
    line: str,
) -> None:
    # No battery can be plugged into this machine, so psutil's reading is faked here.
    monkeypatch.setattr(psutil, "sensors_battery", lambda: battery)
    result = run("power", initial("power"), tmp_path, powercap_root=str(tmp_path / "absent"))
    (obs,) = result.observations  # the first compute: no energy interval yet, the battery
    assert (obs.source, obs.trust, obs.line, obs.payload) == (
        SourceClass.THERMAL_POWER,
        Trust.FIRST_PARTY,
        line,
        payload,
    )
    assert result.state["battery"] == payload


def test_power_estimate_is_held_while_it_stays_and_summed_into_the_next(tmp_path: Path) -> None:
    root, opts = tmp_path / "absent", {"estimate_watts_per_core": 0}
    first = run("power", initial("power"), tmp_path, powercap_root=str(root), **opts)
    second = run("power", first.state, tmp_path, powercap_root=str(root), **opts)
    (sent,) = payloads(second)
    # the same mean power (0 W) within the keyframe: nothing new to store
    third = run("power", second.state, tmp_path, powercap_root=str(root), **opts)
    assert payloads(third) == []
    fourth = run("power", third.state, tmp_path, powercap_root=str(root), keyframe_s=0, **opts)
    (summed,) = payloads(fourth)
    spans = [(b.state["t_ns"] - a.state["t_ns"]) // 1_000_000 for a, b in
             [(second, third), (third, fourth)]]  # fmt: skip
    assert summed["interval_ms"] == sum(spans) and summed["estimated_uj"] == 0
    assert sent["interval_ms"] == (second.state["t_ns"] - first.state["t_ns"]) // 1_000_000
