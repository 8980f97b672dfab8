"""One bad input must not silence a real daemon: junk on a worker's protocol, a sense's
detached children, hostile nerve.yaml edits, and staged batches past their bound."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import psutil
import pytest

from nerve.config import InvalidConfig, load_yaml
from nerve.errors import DaemonError, UsageError
from nerve.runtime import staging
from nerve.runtime.staging import Stages
from nerve.workspace import init_workspace
from tests.conftest import run_cli
from tests.daemon_util import COUNTER, Daemon, started, write_sense

DETACHERS = """
CHILD = (
    "import os,sys,time; os.setsid(); "
    "open(sys.argv[1],'w').write(str(os.getpid())); time.sleep(600)"
)
ORPHAN = (
    "import os,sys,time\\n"
    "if os.fork() == 0:\\n"
    "    os.setsid()\\n"
    "    open(sys.argv[1],'w').write(str(os.getpid()))\\n"
    "    time.sleep(600)\\n"
)
"""

# A sense that starts two long-lived descendants which leave its session (one a child that
# calls setsid(), one a grandchild whose parent exits), then writes junk on the worker's
# protocol descriptor, found as the one pipe that is neither stdin nor stderr.
HOSTILE = (
    """
import os, pathlib, subprocess, sys
initial_state = {"n": 0}
PROBE = pathlib.Path.cwd() / "probe"
"""
    + DETACHERS
    + """
def _junk():
    mine = {os.readlink(f"/proc/self/fd/{fd}") for fd in (0, 2)}
    for fd in os.listdir("/proc/self/fd"):
        try:
            target = os.readlink(f"/proc/self/fd/{fd}")
        except OSError:
            continue
        if target.startswith("pipe:") and target not in mine:
            os.write(int(fd), b"this is not the protocol\\n")

def compute(state):
    PROBE.mkdir(exist_ok=True)
    gen = "b" if (PROBE / "junked").exists() else "a"
    if not (PROBE / f"{gen}-spawned").exists():
        (PROBE / f"{gen}-spawned").touch()
        subprocess.Popen([sys.executable, "-c", CHILD, str(PROBE / f"{gen}-child")])
        subprocess.Popen([sys.executable, "-c", ORPHAN, str(PROBE / f"{gen}-orphan")]).wait()
    elif gen == "a" and (PROBE / "a-child").exists() and (PROBE / "a-orphan").exists():
        (PROBE / "junked").touch()
        _junk()
    return {"state": {"n": state["n"] + 1}}
"""
)
CONFIG = """
senses:
  counter: {group: a, interval: 200ms}
  hostile: {group: s, interval: 200ms}
"""


@pytest.fixture
def daemon(tmp_path: Path) -> Daemon:
    ws = init_workspace(tmp_path / "ws")
    write_sense(ws.root, "counter", COUNTER)
    write_sense(ws.root, "hostile", HOSTILE)
    (ws.root / "nerve.yaml").write_text(CONFIG)
    return Daemon(ws.root)


def _pids(d: Daemon, gen: str) -> list[int] | None:
    files = [d.root / "probe" / f"{gen}-{what}" for what in ("child", "orphan")]
    texts = [f.read_text() if f.exists() else "" for f in files]
    return [int(t) for t in texts] if all(texts) else None


def _alive(pid: int) -> bool:
    try:
        return psutil.Process(pid).status() != psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return False


def _all_ended(pids: list[int]) -> bool:
    return not any(_alive(p) for p in pids)


def test_junk_on_the_protocol_restarts_the_group_and_ends_its_descendants(
    daemon: Daemon,
) -> None:
    with started(daemon.root):
        first = daemon.wait_for(
            lambda: _pids(daemon, "a"), timeout=90, what="the first descendants"
        )
        error = daemon.wait_for(
            lambda: [
                e
                for e in daemon.events("sense.error", "hostile")
                if e["data"]["kind"] == "protocol"
            ],
            timeout=90,
            what="a protocol error",
        )[0]["data"]
        assert "this is not the protocol" in error["error"]
        daemon.wait_for(
            lambda: daemon.events("sense.restart", "s"), timeout=90, what="a restart of s"
        )
        # the group's old descendants were ended with its worker, setsid() or not
        daemon.wait_for(lambda: _all_ended(first), timeout=90, what="the old descendants to end")
        assert not _zombies_of(daemon.pid(), first)  # reaped, not left to the daemon
        # the sense computes again after its restart
        restart_ns = daemon.events("sense.restart", "s")[0]["physical_ns"]
        daemon.wait_for(
            lambda: [
                e for e in daemon.events("sense.state", "hostile") if e["physical_ns"] > restart_ns
            ],
            timeout=90,
            what="a compute after the restart",
        )
        second = daemon.wait_for(
            lambda: _pids(daemon, "b"), timeout=90, what="the second descendants"
        )
        assert all(_alive(p) for p in second)
    # `nerve daemon stop` ends them too
    deadline = time.monotonic() + 20
    while not _all_ended(second) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert _all_ended(second), "a sense's detached descendants outlived the daemon"


# A sense that, once, starts a child that calls setsid() and a grandchild whose parent
# exits, and writes its worker's pid; the test then kills that worker from outside.
SPAWNER = (
    """
import os, pathlib, subprocess, sys
initial_state = {"n": 0}
PROBE = pathlib.Path.cwd() / "probe"
"""
    + DETACHERS
    + """
def compute(state):
    PROBE.mkdir(exist_ok=True)
    if not (PROBE / "spawned").exists():
        (PROBE / "spawned").touch()
        subprocess.Popen([sys.executable, "-c", CHILD, str(PROBE / "k-child")])
        subprocess.Popen([sys.executable, "-c", ORPHAN, str(PROBE / "k-orphan")]).wait()
        (PROBE / "worker").write_text(str(os.getpid()))
    return {"state": {"n": state["n"] + 1}}
"""
)


def test_a_killed_worker_s_detached_descendants_are_ended(tmp_path: Path) -> None:
    ws = init_workspace(tmp_path / "ws")
    write_sense(ws.root, "spawner", SPAWNER)
    (ws.root / "nerve.yaml").write_text("senses:\n  spawner: {group: s, interval: 200ms}\n")
    d = Daemon(ws.root)
    with started(d.root):
        left = d.wait_for(lambda: _pids(d, "k"), timeout=90, what="the descendants")
        worker = int(d.wait_for(lambda: _text(d.root / "probe" / "worker"), what="the worker"))
        assert all(_alive(p) for p in left)
        os.kill(worker, signal.SIGKILL)  # the worker cannot end its own tree now
        try:
            d.wait_for(lambda: d.events("sense.restart", "s"), timeout=90, what="a restart")
            d.wait_for(lambda: _all_ended(left), timeout=60, what="the descendants to end")
            assert not _zombies_of(d.pid(), left)  # ended and reaped, not left as zombies
        finally:
            for pid in filter(_alive, left):  # a failed run leaves no sleepers behind
                os.kill(pid, signal.SIGKILL)


def _zombies_of(parent: int, pids: list[int]) -> list[int]:
    out = []
    for pid in pids:
        try:
            if psutil.Process(pid).ppid() == parent:
                out.append(pid)
        except psutil.NoSuchProcess:
            continue
    return out


def _text(path: Path) -> str:
    return path.read_text() if path.exists() else ""


def _rejections(d: Daemon) -> list[str]:
    return [e["data"]["error"] for e in d.events("config.rejected")]


def test_hostile_config_edits_are_rejected_and_later_edits_still_apply(daemon: Daemon) -> None:
    config = daemon.root / "nerve.yaml"
    with started(daemon.root):
        config.write_text(CONFIG + "daemon:\n  max_request_bytes: " + "9" * 5000 + "\n")
        errors = daemon.wait_for(
            lambda: _rejections(daemon), timeout=90, what="the long integer rejected"
        )
        assert "nerve.yaml:6:" in errors[0] and "integer of 5,000 digits" in errors[0]
        config.write_text(CONFIG + _bomb())
        daemon.wait_for(lambda: len(_rejections(daemon)) >= 2, timeout=90, what="the bomb rejected")
        assert "expands too many aliases" in _rejections(daemon)[1]
        assert daemon.request({"type": "status"})["ok"]
        fresh = "  fresh: {group: a, path: senses/counter, interval: 100ms}\n"
        config.write_text(CONFIG + fresh)
        daemon.wait_for(
            lambda: daemon.events("sense.state", "fresh"), timeout=90, what="the valid edit"
        )


# A real daemon whose reload parse waits at its start for a gate the test opens, and marks
# its end: with the parse on the loop, nothing would answer until the gate opened.
HELD_PARSE = """
import pathlib, sys, time
from nerve.runtime import daemon, reload
from nerve.workspace import WorkspaceDir

root = pathlib.Path(sys.argv[1])
gate = root / "gate"
real = reload.load_config

def held(path):
    (gate / "parsing").touch()
    deadline = time.monotonic() + 120
    while not (gate / "open").exists() and time.monotonic() < deadline:
        time.sleep(0.02)
    try:
        return real(path)
    finally:
        (gate / "parsed").touch()

reload.load_config = held
daemon.run_foreground(WorkspaceDir.at(root), echo=sys.stderr)
"""


def test_the_loop_answers_while_a_hostile_config_is_parsed(daemon: Daemon) -> None:
    gate = daemon.root / "gate"
    gate.mkdir()
    with (daemon.root / "data").joinpath("held.log").open("wb") as err:
        proc = subprocess.Popen(
            [sys.executable, "-c", HELD_PARSE, str(daemon.root)], stdout=err, stderr=err
        )
    try:
        daemon.wait_for(lambda: _answers(daemon), timeout=90, what="the daemon to answer")
        (daemon.root / "nerve.yaml").write_text(CONFIG + _bomb())
        daemon.wait_for((gate / "parsing").exists, timeout=90, what="the reload's parse")
        # ordering, not a clock: the status answers while the parse has not ended
        assert daemon.request({"type": "status"})["ok"]
        assert not (gate / "parsed").exists() and not _rejections(daemon)
        (gate / "open").touch()
        daemon.wait_for(lambda: _rejections(daemon), timeout=90, what="the bomb rejected")
        assert "expands too many aliases" in _rejections(daemon)[0]
        assert (gate / "parsed").exists()
    finally:
        (gate / "open").touch()
        daemon.stop()
        proc.wait(timeout=60)


def _answers(d: Daemon) -> bool:
    try:
        return bool(d.request({"type": "status"})["ok"])
    except DaemonError:
        return False


def _bomb(merges: int = 200, keys: int = 2000) -> str:
    body = "".join(f"  k{i}: {i}\n" for i in range(keys))
    return "x-base: &b\n" + body + "".join(f"x-m{i}:\n  <<: *b\n" for i in range(merges))


@pytest.mark.parametrize(
    ("text", "message"),
    [
        (_bomb(), "expands too many aliases"),
        # nested aliases (a "billion laughs"): each level ten times the last
        (
            "a: &a [x, x, x, x, x, x, x, x, x, x]\n"
            + "".join(
                f"{chr(98 + i)}: &{chr(98 + i)} [{', '.join(['*' + chr(97 + i)] * 10)}]\n"
                for i in range(6)
            ),
            "expands too many aliases",
        ),
        ("a: " + "x" * (2 << 20) + "\n", "characters; at most"),
        ("a: [" + "1" * 4301 + "]\n", "integer of 4,301 digits"),
        ("a: -" + "1_" * 3000 + "1\n", "digits; at most"),
    ],
    ids=["merges", "nested-aliases", "oversized", "long-integer", "signed-underscored"],
)
def test_yaml_limits_fail_fast_with_a_located_error(text: str, message: str) -> None:
    with pytest.raises(InvalidConfig) as caught:
        load_yaml(text, "nerve.yaml")
    assert message in str(caught.value)
    assert str(caught.value).startswith("nerve.yaml")


def test_validate_names_the_long_integer(tmp_path: Path) -> None:
    ws = init_workspace(tmp_path / "ws")
    (ws.root / "nerve.yaml").write_text("daemon:\n  max_request_bytes: " + "7" * 5000 + "\n")
    proc = run_cli("--workspace", str(ws.root), "validate", check=False)
    assert proc.returncode == 1
    assert "Traceback" not in proc.stderr + proc.stdout
    assert "nerve.yaml:2:22: integer of 5,000 digits" in proc.stderr + proc.stdout


def test_staged_events_are_bounded_across_stages(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(staging, "MAX_STAGED", 10)
    stages = Stages()
    for stage in ("s1", "s2"):
        stages.add(stage, "emit", [object()] * 5, more=True)
    with pytest.raises(UsageError, match="all open stages together"):
        stages.add("s3", "emit", [object()], more=True)
    assert stages.count("s3") == 0 and stages.count("s1") == 5


def test_open_stages_are_bounded() -> None:
    stages = Stages()
    for n in range(staging.MAX_STAGES):
        stages.add(f"s{n}", "emit", [object()], more=True)
    with pytest.raises(UsageError, match="staged batches are already open"):
        stages.add("one-more", "emit", [object()], more=True)
    assert stages.add("s0", "emit", [object()], more=False)  # an open one can still finish
