"""Encryption at rest, through the real CLI: an encrypted workspace works with its key, is
refused (writing nothing) with another, verifies without one, and replays to the digest a
plain copy of the same events has."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import run_cli
from tests.helpers.crypt import SECRETS, files_under, leaks

pytestmark = pytest.mark.filterwarnings("ignore::pytest.PytestUnraisableExceptionWarning")


def _emit_secrets(ws: Path, env: dict[str, str]) -> None:
    run_cli("-w", str(ws), "emit", "-s", "shell", "--line", SECRETS[0], env=env)
    payload = json.dumps({"ref": SECRETS[1], "note": SECRETS[2]})
    run_cli("-w", str(ws), "emit", "-s", "shell", "--subject", SECRETS[3], "-p", payload, env=env)


def test_done_when(tmp_path: Path) -> None:
    key, ws = tmp_path / "K", tmp_path / "ws"
    made = run_cli("init", "--encrypt", "--key-file", str(key), str(ws))
    assert "encrypted workspace" in made.stdout
    assert "encryption:" in (ws / "nerve.yaml").read_text()
    assert os.stat(key).st_mode & 0o777 == 0o600
    env = {"NERVE_KEY_FILE": str(key)}
    _emit_secrets(ws, env)
    assert "sealed 2 events" in run_cli("-w", str(ws), "seal", env=env).stdout
    run_cli("-w", str(ws), "emit", "-s", "shell", "--line", SECRETS[4], env=env)
    rows = run_cli(
        "-w", str(ws), "query", "SELECT line FROM events ORDER BY physical_ns", "--json", env=env
    )
    assert [json.loads(r)["line"] for r in rows.stdout.splitlines()] == [SECRETS[0], "", SECRETS[4]]
    tail = run_cli("-w", str(ws), "tail", "--all", "--json", env=env).stdout
    assert SECRETS[1] in tail and len(tail.splitlines()) == 3
    digest = json.loads(run_cli("-w", str(ws), "replay", "--json", env=env).stdout)["digest"]
    assert leaks(ws / "data") == []

    other = tmp_path / "K2"
    run_cli("key", "new", str(other))
    before = files_under(ws / "data")
    refused = run_cli(
        "-w",
        str(ws),
        "emit",
        "-s",
        "shell",
        "--line",
        "x",
        env={"NERVE_KEY_FILE": str(other)},
        check=False,
    )
    assert refused.returncode == 1
    assert refused.stderr.startswith("WrongKey: ") and "nothing was written" in refused.stderr
    assert "Traceback" not in refused.stderr
    assert files_under(ws / "data") == before

    keyless = run_cli("-w", str(ws), "replay", "--verify", "--json")
    report = json.loads(keyless.stdout)
    assert keyless.returncode == 0 and report["ok"] is True and report["keyless"] is True
    with_key = json.loads(run_cli("-w", str(ws), "replay", "--verify", "--json", env=env).stdout)
    assert with_key["ok"] is True and with_key["digest"] == digest

    plain = tmp_path / "plain"
    run_cli("init", str(plain))
    (tmp_path / "events.jsonl").write_text(tail)
    run_cli("-w", str(plain), "import", str(tmp_path / "events.jsonl"))
    again = json.loads(run_cli("-w", str(plain), "replay", "--json").stdout)["digest"]
    assert again == digest


def test_reads_without_the_key_are_refused_in_one_line(tmp_path: Path) -> None:
    key, ws = tmp_path / "K", tmp_path / "ws"
    run_cli("init", "--encrypt", "--key-file", str(key), str(ws))
    _emit_secrets(ws, {"NERVE_KEY_FILE": str(key)})
    for args in (("query", "SELECT 1"), ("tail", "--all"), ("replay",), ("emit", "-s", "shell")):
        out = run_cli("-w", str(ws), *args, check=False)
        assert out.returncode == 1, args
        assert out.stderr.startswith("KeyMissing: ") and "Traceback" not in out.stderr, args


LEAKY = f"""
from nerve import Observation, Result
initial_state = {{"note": "", "n": 0}}
_calls = [0]
def compute(state):
    n = state["n"] + 1
    _calls[0] += 1
    print({SECRETS[0]!r})  # a sense's print() goes to the daemon log
    if _calls[0] % 3 == 0:
        raise RuntimeError({SECRETS[3]!r})  # a sense.error, and a daemon log warning
    return Result(
        state={{"note": {SECRETS[2]!r}, "n": n}},
        observations=[Observation(source="endpoint", line={SECRETS[4]!r} + f" {{n}}")],
    )
"""

NERVE_YAML = """\
senses:
  leaky:
    interval: 200ms
log:
  encryption:
    key: file
  seal_max_events: 8
"""


def test_nothing_readable_in_data_after_a_killed_daemon(tmp_path: Path) -> None:
    """Known lines, payloads, sense state, sense errors and daemon log lines: none of them,
    nor a 12-character piece of one, in any file under data/ after a run ending in
    SIGKILL, then an archive and an export attempt."""
    import signal

    from tests.daemon_util import write_sense

    key, ws = tmp_path / "K", tmp_path / "ws"
    run_cli("init", "--encrypt", "--key-file", str(key), str(ws))
    (ws / "nerve.yaml").write_text(NERVE_YAML)
    write_sense(ws, "leaky", LEAKY)
    env = {"NERVE_KEY_FILE": str(key)}
    w = ("-w", str(ws))
    run_cli(*w, "daemon", "start", env=env, timeout=90)
    pid = int((ws / "data" / "nerve.pid").read_text())
    try:
        payload = json.dumps({"ref": SECRETS[1]})
        for _ in range(3):
            run_cli(*w, "emit", "-s", "shell", "--line", SECRETS[0], "-p", payload, env=env)
        _wait(ws, env, "SELECT count(*) FROM events WHERE kind = 'sense.error'")
        _wait(ws, env, "SELECT count(*) FROM events WHERE kind = 'sense.state'", at_least=4)
        _wait(ws, env, f"SELECT count(*) FROM events WHERE line LIKE '{SECRETS[4]}%'", 10)
        logs = run_cli(*w, "logs", "-n", "200", env=env).stdout
        assert SECRETS[0] in logs and SECRETS[3] in logs  # readable with the key
    finally:
        os.kill(pid, signal.SIGKILL)
        _gone(pid)  # its writer's lock goes with the process, not with the signal
    assert list((ws / "data" / "log" / "segments").iterdir())  # seals happened
    assert leaks(ws / "data") == []

    run_cli(*w, "archive", "--before", "0s", "--to", str(ws / "data" / "archive"), env=env)
    refused = run_cli(*w, "export", "--duckdb", str(ws / "data" / "x.duckdb"), env=env, check=False)
    assert refused.returncode == 2 and "encrypted" in refused.stderr
    inside = run_cli(
        *w,
        "export",
        "--duckdb",
        str(ws / "data" / "x.duckdb"),
        "--copy",
        "--plaintext",
        env=env,
        check=False,
    )
    assert inside.returncode == 2 and "may not go under" in inside.stderr
    assert leaks(ws / "data") == []
    report = json.loads(run_cli(*w, "replay", "--verify", "--json", env=env).stdout)
    assert report["ok"], report["problems"]


def _gone(pid: int) -> None:
    """Wait until the killed process ``pid`` has ended (a zombie has: its files are closed)."""
    import time

    import psutil

    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        try:
            if psutil.Process(pid).status() == psutil.STATUS_ZOMBIE:
                return
        except psutil.NoSuchProcess:
            return
        time.sleep(0.05)
    raise AssertionError(f"pid {pid} still running 30 s after SIGKILL")


def _wait(ws: Path, env: dict[str, str], sql: str, at_least: int = 1) -> None:
    import time

    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        out = run_cli("-w", str(ws), "query", sql, "--csv", env=env).stdout.splitlines()
        if int(out[-1]) >= at_least:
            return
        time.sleep(0.2)
    raise AssertionError(f"timed out waiting for {sql}")


def test_the_leak_search_finds_a_plain_workspace_out(tmp_path: Path) -> None:
    """The search the tests above rely on does find what a plain workspace keeps."""
    ws = tmp_path / "ws"
    run_cli("init", str(ws))
    _emit_secrets(ws, {})
    assert leaks(ws / "data")
    run_cli("-w", str(ws), "seal")
    assert any("segments" in hit for hit in leaks(ws / "data"))


def test_a_truncated_or_short_key_file_is_a_clear_error(tmp_path: Path) -> None:
    key, ws = tmp_path / "K", tmp_path / "ws"
    run_cli("init", "--encrypt", "--key-file", str(key), str(ws))
    cut = tmp_path / "cut"
    cut.write_bytes(key.read_bytes()[:40])
    os.chmod(cut, 0o600)
    short = tmp_path / "short"
    short.write_bytes(b"0123456789")
    os.chmod(short, 0o600)
    for bad, said in (
        (cut, "truncated"),
        (short, "holds 10 bytes"),
        (tmp_path / "gone", "cannot read"),
    ):
        out = run_cli(
            "-w", str(ws), "emit", "-s", "shell", env={"NERVE_KEY_FILE": str(bad)}, check=False
        )
        assert out.returncode == 1 and out.stderr.startswith("KeyFileError: "), out.stderr
        assert said in out.stderr and "Traceback" not in out.stderr


def test_passphrase_then_rotation_to_a_key_file_rewrites_no_segment(tmp_path: Path) -> None:
    ws, w = tmp_path / "ws", ("-w", str(tmp_path / "ws"))
    run_cli("init", "--encrypt", "--passphrase", str(ws), input="correct horse\n")
    assert "key: passphrase" in (ws / "nerve.yaml").read_text()
    env = {"NERVE_PASSPHRASE": "correct horse"}
    _emit_secrets(ws, env)
    run_cli(*w, "seal", env=env)
    wrong = run_cli(*w, "tail", "--all", env={"NERVE_PASSPHRASE": "wrong horse"}, check=False)
    assert wrong.returncode == 1 and wrong.stderr.startswith("WrongKey: ")
    segments = files_under(ws / "data" / "log" / "segments")
    digest = json.loads(run_cli(*w, "replay", "--json", env=env).stdout)["digest"]

    key = tmp_path / "new.key"
    run_cli(*w, "key", "rotate", "--key-file", str(key), env=env)
    assert "key: file" in (ws / "nerve.yaml").read_text()
    assert files_under(ws / "data" / "log" / "segments") == segments
    old = run_cli(*w, "tail", "--all", env=env, check=False)
    assert old.returncode == 1 and old.stderr.startswith("WrongKey: ")
    new = {"NERVE_KEY_FILE": str(key)}
    assert json.loads(run_cli(*w, "replay", "--json", env=new).stdout)["digest"] == digest
    assert json.loads(run_cli(*w, "replay", "--verify", "--json", env=new).stdout)["ok"]


def test_a_rotation_killed_midway_leaves_the_old_key_working(tmp_path: Path) -> None:
    """SIGKILL between writing the new keyring and putting it in place: the old one stands."""
    import signal
    import subprocess
    import sys
    import time

    key, ws = tmp_path / "K", tmp_path / "ws"
    run_cli("init", "--encrypt", "--key-file", str(key), str(ws))
    _emit_secrets(ws, {"NERVE_KEY_FILE": str(key)})
    marker = tmp_path / "at-rename"
    child = f"""
import sys, time
from pathlib import Path
from typing import Any
from nerve import fsio
from nerve.cli.main import run
real = fsio.rename
def paused(src, dst, *, site):
    if site == "keyring.write":
        Path({str(marker)!r}).write_text("x")
        time.sleep(60)
    real(src, dst, site=site)
fsio.rename = paused
run(["-w", {str(ws)!r}, "key", "rotate", "--key-file", {str(tmp_path / "new.key")!r}])
"""
    env = {**os.environ, "NERVE_KEY_FILE": str(key)}
    proc = subprocess.Popen([sys.executable, "-c", child], env=env)
    deadline = time.monotonic() + 60
    while not marker.exists() and time.monotonic() < deadline and proc.poll() is None:
        time.sleep(0.05)
    assert marker.exists()
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()
    tail = run_cli("-w", str(ws), "tail", "--all", "--json", env={"NERVE_KEY_FILE": str(key)})
    assert SECRETS[0] in tail.stdout
    moved = run_cli(
        "-w",
        str(ws),
        "tail",
        "--all",
        env={"NERVE_KEY_FILE": str(tmp_path / "new.key")},
        check=False,
    )
    assert moved.stderr.startswith("WrongKey: ")


def test_fleet_ship_refuses_an_encrypted_workspace(tmp_path: Path) -> None:
    key, ws = tmp_path / "K", tmp_path / "ws"
    run_cli("init", "--encrypt", "--key-file", str(key), str(ws))
    env = {"NERVE_KEY_FILE": str(key)}
    _emit_secrets(ws, env)
    run_cli("-w", str(ws), "seal", env=env)
    before = files_under(ws / "data")
    out = run_cli("-w", str(ws), "fleet", "ship", env=env, check=False)
    assert out.returncode == 1 and out.stderr.startswith("FleetError: "), out.stderr
    assert "encrypted at rest" in out.stderr and "nothing was shipped" in out.stderr
    assert files_under(ws / "data") == before


def test_mcp_sql_ui_data_and_a_plaintext_export_read_an_encrypted_log(tmp_path: Path) -> None:
    """The other readers of the log (the MCP sandbox, the web UI's connection, a decrypted
    export asked for as such) work with the key, like `nerve query`."""
    import duckdb

    from nerve.api import open as nerve_open
    from nerve.mcp.sandbox import open_sandbox
    from nerve.ui.rows import connect as ui_connect

    key, ws = tmp_path / "K", tmp_path / "ws"
    run_cli("init", "--encrypt", "--key-file", str(key), str(ws))
    env = {"NERVE_KEY_FILE": str(key)}
    _emit_secrets(ws, env)
    run_cli("-w", str(ws), "seal", env=env)
    os.environ["NERVE_KEY_FILE"] = str(key)
    try:
        door = nerve_open(ws, read_only=True)
        assert door.sql("SELECT count(*) FROM events").fetchall() == [(2,)]
        sandbox = open_sandbox(door)
        assert sandbox.execute("SELECT max(line) FROM events").fetchone() == (SECRETS[0],)
        ui = ui_connect(door, _no_screen())
        assert ui.execute("SELECT count(*) FROM events").fetchone() == (2,)
        out = tmp_path / "plain.duckdb"
        run_cli("-w", str(ws), "export", "--duckdb", str(out), "--copy", "--plaintext", env=env)
    finally:
        del os.environ["NERVE_KEY_FILE"]
        from nerve.log.crypt import forget_keys

        forget_keys()
    lines = duckdb.connect(str(out)).execute("SELECT line FROM events ORDER BY 1").fetchall()
    assert lines == [("",), (SECRETS[0],)]


def _no_screen() -> Any:
    """The privacy rules of an empty ``privacy:`` section (the built-in detectors only)."""
    from nerve.privacy.screen import Screen
    from nerve.privacy.settings import PrivacyConfig

    return Screen(PrivacyConfig())


def test_the_daemon_unlocks_at_start_and_a_wrong_key_starts_nothing(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    run_cli("init", "--encrypt", "--passphrase", str(ws), input="a long passphrase\n")
    before = files_under(ws / "data")
    for env, error in (({}, "KeyMissing: "), ({"NERVE_PASSPHRASE": "not it"}, "WrongKey: ")):
        out = run_cli("-w", str(ws), "start", env=env, check=False, timeout=90)
        assert out.returncode == 1 and out.stderr.startswith(error), out.stderr
        assert not (ws / "data" / "nerve.pid").exists()
    assert files_under(ws / "data") == before
    (ws / "nerve.yaml").write_text("senses: {}\nlog:\n  encryption:\n    key: passphrase\n")
    env = {"NERVE_PASSPHRASE": "a long passphrase"}
    run_cli("-w", str(ws), "start", env=env, timeout=90)
    pid = int((ws / "data" / "nerve.pid").read_text())
    run_cli("-w", str(ws), "emit", "-s", "shell", "-l", SECRETS[0], env=env)
    locked = run_cli("-w", str(ws), "lock", env=env, timeout=90)
    assert locked.stdout.strip() == "locked: the daemon stopped"
    assert not _alive(pid)
    assert leaks(ws / "data") == []


def _alive(pid: int) -> bool:
    import psutil

    try:
        return psutil.Process(pid).status() != psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return False


def _systemd_creds_works() -> bool:
    import shutil
    import subprocess

    tool = shutil.which("systemd-creds")
    if tool is None:
        return False
    args = [tool, "encrypt", "--name=nerve-probe", "-", "-"]
    done = subprocess.run(args, input=b"probe", capture_output=True, timeout=60, check=False)
    return done.returncode == 0


def test_a_key_kept_by_systemd_creds_unlocks_without_a_key_file(tmp_path: Path) -> None:
    if not _systemd_creds_works():
        pytest.skip("systemd-creds cannot encrypt here (not installed, or not root)")
    ws = tmp_path / "ws"
    run_cli("init", "--encrypt", "--systemd-creds", str(ws))
    assert "key: systemd-creds" in (ws / "nerve.yaml").read_text()
    _emit_secrets(ws, {})
    assert SECRETS[0] in run_cli("-w", str(ws), "tail", "--all", "--json").stdout
    assert leaks(ws / "data") == []
    (ws / "data" / "log" / "kek.cred").write_bytes(b"not a credential")
    out = run_cli("-w", str(ws), "tail", "--all", check=False)
    assert out.returncode == 1 and out.stderr.startswith("KeyMissing: systemd-creds decrypt")


def test_forget_and_compact_on_an_encrypted_log_verify_with_and_without_the_key(
    tmp_path: Path,
) -> None:
    key, ws = tmp_path / "K", tmp_path / "ws"
    run_cli("init", "--encrypt", "--key-file", str(key), str(ws))
    env, w = {"NERVE_KEY_FILE": str(key)}, ("-w", str(ws))
    _emit_secrets(ws, env)
    run_cli(*w, "seal", env=env)
    run_cli(*w, "emit", "-s", "shell", "--line", SECRETS[4], env=env)
    run_cli(*w, "seal", env=env)
    digest = json.loads(run_cli(*w, "replay", "--json", env=env).stdout)["digest"]
    run_cli(*w, "compact", env=env)
    run_cli(*w, "forget", "--match", SECRETS[4][:20], "--reason", "test", env=env)
    report = json.loads(run_cli(*w, "replay", "--verify", "--json", env=env).stdout)
    assert report["ok"], report["problems"]
    assert report["checkpoints"][0]["digest"] == digest  # the digest before the erasure
    erased = run_cli(*w, "query", "SELECT count(*) FROM events WHERE erased", "--csv", env=env)
    assert erased.stdout.splitlines()[-1] == "1"
    keyless = json.loads(run_cli(*w, "replay", "--verify", "--json").stdout)
    assert keyless["ok"] and keyless["keyless"]
    assert leaks(ws / "data") == []


def test_a_lost_keyring_is_refused_not_written_over_in_plaintext(tmp_path: Path) -> None:
    key, ws = tmp_path / "K", tmp_path / "ws"
    run_cli("init", "--encrypt", "--key-file", str(key), str(ws))
    env = {"NERVE_KEY_FILE": str(key)}
    run_cli("-w", str(ws), "emit", "-s", "shell", "-l", SECRETS[0], env=env)
    (ws / "data" / "log" / "keyring.json").unlink()
    before = files_under(ws / "data")
    out = run_cli("-w", str(ws), "emit", "-s", "shell", "-l", SECRETS[1], env=env, check=False)
    assert out.returncode == 2 and "refusing to write plaintext" in out.stderr
    assert files_under(ws / "data") == before


def test_a_keyless_verify_names_a_segment_the_manifest_does_not_list(tmp_path: Path) -> None:
    key, ws = tmp_path / "K", tmp_path / "ws"
    run_cli("init", "--encrypt", "--key-file", str(key), str(ws))
    env = {"NERVE_KEY_FILE": str(key)}
    _emit_secrets(ws, env)
    run_cli("-w", str(ws), "seal", env=env)
    folder = ws / "data" / "log" / "segments"
    (folder / f"{'ab' * 32}.parquet").write_bytes(next(folder.iterdir()).read_bytes())
    report = json.loads(run_cli("-w", str(ws), "replay", "--verify", "--json").stdout)
    assert report["keyless"] and report["ok"]
    assert [w["file"] for w in report["warnings"]] == [f"data/log/segments/{'ab' * 32}.parquet"]
    tampered = folder / next(p.name for p in folder.iterdir() if not p.name.startswith("abab"))
    data = bytearray(tampered.read_bytes())
    data[100] ^= 1
    tampered.write_bytes(bytes(data))
    broken = run_cli("-w", str(ws), "replay", "--verify", "--json", check=False)
    assert broken.returncode == 1
    assert "do not match its address" in json.loads(broken.stdout)["problems"][0]["message"]
