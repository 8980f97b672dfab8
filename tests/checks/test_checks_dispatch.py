"""Firing checks: real check scripts, real subprocesses, real files."""

from __future__ import annotations

import json
import os
import sys
import time
from pathlib import Path

import blake3
import pytest

from nerve.checks.dispatch import Verdict, fingerprint, fire, resolve_inside
from nerve.checks.manifest import CheckManifest, parse_manifest
from nerve.errors import CheckError

# Every script gets: --stage <stage> <--output-path|--file-path> <path>, with cwd = the workspace.
PRELUDE = """\
import json, os, subprocess, sys, time
args = dict(zip(sys.argv[1::2], sys.argv[2::2]))
target = args.get("--output-path") or args.get("--file-path")
def say(**fields):
    print(json.dumps(fields))
"""

PASS = 'say(**{"pass": True, "findings": [], "findings_count": 0})'
FAIL_ON_TODO = """\
text = open(target).read()
todo = [n for n, line in enumerate(text.splitlines(), 1) if "TODO" in line]
say(**{"pass": not todo, "findings": [f"line {n}: TODO" for n in todo]})
"""


@pytest.fixture
def root(tmp_path: Path) -> Path:
    workspace = tmp_path / "ws"
    (workspace / "docs").mkdir(parents=True)
    (workspace / "docs" / "a.md").write_text("# A\n", encoding="utf-8")
    (workspace / "docs" / "b.md").write_text("# B\n", encoding="utf-8")
    return workspace


def check(root: Path, name: str, script: str, more: str = "") -> CheckManifest:
    """A real manifest in the workspace whose command runs ``script`` with this Python."""
    tools = root / "tools"
    tools.mkdir(exist_ok=True)
    (tools / f"{name}.py").write_text(PRELUDE + script + "\n", encoding="utf-8")
    command = json.dumps([sys.executable, str(tools / f"{name}.py")])
    manifest = (
        f"---\nid: {name}\nkind: deterministic\ncommand: {command}\n"
        f"default_severity: blocking\ndescription: test check\n{more}---\n"
    )
    folder = root / "workflows" / "checks"
    folder.mkdir(parents=True, exist_ok=True)
    (folder / f"{name}.md").write_text(manifest, encoding="utf-8")
    return parse_manifest(folder / f"{name}.md")


def fire_on(root: Path, manifest: CheckManifest, path: str = "docs/a.md", **kw: object) -> Verdict:
    return fire(manifest, path=Path(path), root=root, run="run-1", **kw)  # type: ignore[arg-type]


# verdicts


def test_clean_pass(root: Path) -> None:
    script = PASS + "\nopen('seen.json', 'w').write(json.dumps([sys.argv[1:], sys.stdin.read()]))"
    verdict = fire_on(root, check(root, "ok", script))
    assert (verdict.result, verdict.note, verdict.exit_code) == ("passed", None, 0)
    assert verdict.clean and not verdict.blocks("blocking")
    assert (verdict.check_id, verdict.run, verdict.path) == ("ok", "run-1", "docs/a.md")
    assert verdict.fingerprint == blake3.blake3(b"# A\n").hexdigest()
    assert verdict.detail_path is None and len(verdict.fire_id) == 8
    argv, stdin = json.loads((root / "seen.json").read_text())  # ran in the workspace root
    assert argv == ["--stage", "manual", "--output-path", "docs/a.md"] and stdin == ""


def test_file_path_flag_from_input_schema(root: Path) -> None:
    script = PASS + "\nopen('seen.json', 'w').write(json.dumps(sys.argv[1:]))"
    fire_on(root, check(root, "code", script, "input_schema: {file_path: string}\n"))
    assert json.loads((root / "seen.json").read_text())[2] == "--file-path"


def test_failure_writes_a_detail_file(root: Path) -> None:
    (root / "docs" / "a.md").write_text("# A\nTODO one\nTODO two\n", encoding="utf-8")
    verdict = fire_on(root, check(root, "todo", FAIL_ON_TODO))
    assert (verdict.result, verdict.note) == ("failed", None)
    assert verdict.findings == ["line 2: TODO", "line 3: TODO"] and verdict.findings_count == 2
    assert verdict.blocks("blocking") and not verdict.blocks("advisory")
    assert verdict.detail_path == f".nerve-checks/todo-{verdict.fire_id}.md"
    report = (root / verdict.detail_path).read_text()
    assert "## Findings" in report
    block = report.split("```json\n", 1)[1].split("\n```", 1)[0]
    assert json.loads(block)["findings"] == ["line 2: TODO", "line 3: TODO"]


def test_clean_pass_prunes_only_that_checks_reports_for_that_file(root: Path) -> None:
    manifest = check(root, "todo", FAIL_ON_TODO)
    (root / "docs" / "a.md").write_text("TODO\n", encoding="utf-8")
    (root / "docs" / "b.md").write_text("TODO\n", encoding="utf-8")
    first = fire_on(root, manifest, "docs/a.md")
    again = fire_on(root, manifest, "docs/a.md")
    other = fire_on(root, manifest, "docs/b.md")
    assert first.detail_path and again.detail_path and other.detail_path
    assert len({first.detail_path, again.detail_path, other.detail_path}) == 3

    (root / "docs" / "b.md").write_text("fixed\n", encoding="utf-8")
    assert fire_on(root, manifest, "docs/b.md").clean
    assert not (root / other.detail_path).exists()
    assert (root / first.detail_path).exists() and (root / again.detail_path).exists()

    (root / "docs" / "a.md").write_text("fixed\n", encoding="utf-8")
    assert fire_on(root, manifest, "docs/a.md").clean
    assert not (root / first.detail_path).exists() and not (root / again.detail_path).exists()
    assert json.loads((root / ".nerve-checks" / "index.json").read_text()) == {}


def test_noted_pass_keeps_earlier_reports(root: Path) -> None:
    (root / "docs" / "a.md").write_text("TODO\n", encoding="utf-8")
    failed = fire_on(root, check(root, "todo", FAIL_ON_TODO))
    broken = check(root, "todo", "sys.exit(3)")  # same id, now a script error
    assert fire_on(root, broken).note == "script-error"
    assert failed.detail_path and (root / failed.detail_path).exists()


def test_custom_detail_dir(root: Path, tmp_path: Path) -> None:
    (root / "docs" / "a.md").write_text("TODO\n", encoding="utf-8")
    verdict = fire_on(root, check(root, "todo", FAIL_ON_TODO), detail_dir=Path("reports"))
    assert verdict.detail_path and verdict.detail_path.startswith("reports/todo-")
    outside = tmp_path / "elsewhere"
    verdict = fire_on(root, check(root, "todo", FAIL_ON_TODO), detail_dir=outside)
    assert verdict.detail_path and Path(verdict.detail_path).parent == outside


@pytest.mark.parametrize(
    ("script", "note", "exit_code"),
    [
        ("sys.exit(127)", "tool-unavailable", 127),
        (PASS + "\nsys.exit(3)", "script-error", 3),
        ("print('hello'); print('not json {')", "script-error", 0),
        ("say(ok=True)", "script-error", 0),
        ("say(**{'pass': 'true'})", "script-error", 0),
        ("print('[1, 2]')", "script-error", 0),
        ("print('{\"pass\": NaN}')", "script-error", 0),
        ("raise SystemExit('boom')", "script-error", 1),
    ],
)
def test_noted_passes(root: Path, script: str, note: str, exit_code: int) -> None:
    verdict = fire_on(root, check(root, "odd", script))
    assert (verdict.result, verdict.note, verdict.exit_code) == ("passed", note, exit_code)
    assert not verdict.clean and verdict.blocks("blocking")
    assert verdict.detail_path is None


def test_last_json_object_line_wins(root: Path) -> None:
    script = "print('progress...'); say(**{'pass': False}); say(**{'pass': True}); print('')"
    verdict = fire_on(root, check(root, "chatty", script))
    assert verdict.clean


def test_stderr_tail_is_kept(root: Path) -> None:
    script = "sys.stderr.write('x' * 5000 + 'END'); sys.exit(2)"
    verdict = fire_on(root, check(root, "loud", script))
    assert len(verdict.stderr_tail) == 2000 and verdict.stderr_tail.endswith("END")


def test_timeout_kills_the_whole_process_group(root: Path) -> None:
    script = """\
child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(30)"])
open("pids", "w").write(f"{os.getpid()} {child.pid}")
time.sleep(30)
"""
    manifest = check(root, "slow", script, "timeout_seconds: 1\n")
    started = time.monotonic()
    verdict = fire_on(root, manifest)
    assert time.monotonic() - started < 5
    assert (verdict.result, verdict.note, verdict.exit_code) == ("passed", "timeout", None)
    assert verdict.duration_ms >= 1000
    for pid in map(int, (root / "pids").read_text().split()):
        assert _gone(pid), f"process {pid} outlived its check"


def _gone(pid: int) -> bool:
    # A killed orphan may linger as a zombie until its new parent reaps it; it is not running.
    deadline = time.monotonic() + 3
    while time.monotonic() < deadline:
        try:
            state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
        except (FileNotFoundError, ProcessLookupError):
            return True
        if state in {"Z", "X"}:
            return True
        time.sleep(0.02)
    return False


def test_timeout_override(root: Path) -> None:
    manifest = check(root, "slow", "time.sleep(30)")
    started = time.monotonic()
    assert fire_on(root, manifest, timeout_s=0.3).note == "timeout"
    assert time.monotonic() - started < 3


def test_command_not_found(root: Path) -> None:
    text = (
        "---\nid: ghost\nkind: deterministic\ncommand: nerve-test-no-such-tool --x\n"
        "default_severity: blocking\ndescription: d\n---\n"
    )
    (root / "ghost.md").write_text(text, encoding="utf-8")
    verdict = fire_on(root, parse_manifest(root / "ghost.md"))
    assert (verdict.result, verdict.note, verdict.exit_code) == ("passed", "tool-unavailable", None)
    assert "nerve-test-no-such-tool" in verdict.stderr_tail


def test_command_not_executable(root: Path) -> None:
    tool = root / "tool.sh"
    tool.write_text("#!/bin/sh\necho hi\n", encoding="utf-8")
    tool.chmod(0o644)
    text = (
        f"---\nid: noexec\nkind: deterministic\ncommand: {tool}\n"
        "default_severity: advisory\ndescription: d\n---\n"
    )
    (root / "noexec.md").write_text(text, encoding="utf-8")
    verdict = fire_on(root, parse_manifest(root / "noexec.md"))
    assert (verdict.result, verdict.note) == ("passed", "spawn-failed")


def test_file_changed_during_check(root: Path) -> None:
    script = "open(target, 'a').write('more\\n')\n" + PASS
    verdict = fire_on(root, check(root, "meddler", script))
    assert (verdict.result, verdict.note) == ("passed", "changed-during-check")
    assert verdict.fingerprint == blake3.blake3(b"# A\n").hexdigest()
    assert not verdict.clean and verdict.blocks("blocking")


def test_verdict_json(root: Path) -> None:
    verdict = fire_on(root, check(root, "ok", PASS))
    data = json.loads(verdict.to_json())
    assert data == verdict.to_dict()
    assert set(data) >= {"check_id", "run", "path", "result", "note", "findings", "detail_path"}
    assert verdict.to_json() == json.dumps(data, sort_keys=True, separators=(",", ":"))


def test_a_folder_can_be_checked(root: Path) -> None:
    verdict = fire_on(root, check(root, "ok", PASS), "docs")
    assert verdict.clean and verdict.fingerprint == "" and verdict.path == "docs"


# paths that would leave the workspace


def test_symlink_escape_is_refused(root: Path, tmp_path: Path) -> None:
    secret = tmp_path / "secret.txt"
    secret.write_text("keys\n", encoding="utf-8")
    (root / "docs" / "link.md").symlink_to(secret)
    manifest = check(root, "ok", PASS + "\nopen('ran', 'w')")
    with pytest.raises(CheckError, match="outside the workspace"):
        fire_on(root, manifest, "docs/link.md")
    assert not (root / "ran").exists()


def test_symlinked_folder_escape_is_refused(root: Path, tmp_path: Path) -> None:
    (tmp_path / "outside").mkdir()
    (tmp_path / "outside" / "x.md").write_text("x", encoding="utf-8")
    (root / "docs" / "out").symlink_to(tmp_path / "outside", target_is_directory=True)
    with pytest.raises(CheckError, match="outside the workspace"):
        fire_on(root, check(root, "ok", PASS), "docs/out/x.md")


def test_dotdot_escape_is_refused(root: Path) -> None:
    with pytest.raises(CheckError, match=r"'\.\./secret\.txt' resolves to .*outside"):
        fire_on(root, check(root, "ok", PASS), "../secret.txt")


def test_absolute_path_outside_is_refused(root: Path, tmp_path: Path) -> None:
    with pytest.raises(CheckError, match="outside the workspace"):
        fire_on(root, check(root, "ok", PASS), str(tmp_path / "secret.txt"))


def test_paths_that_stay_inside_are_allowed(root: Path) -> None:
    (root / "docs" / "alias.md").symlink_to(root / "docs" / "a.md")
    assert resolve_inside(root, "docs/../docs/a.md") == (root / "docs" / "a.md").resolve()
    assert resolve_inside(root, root / "docs" / "a.md") == (root / "docs" / "a.md").resolve()
    verdict = fire_on(root, check(root, "ok", PASS), "docs/alias.md")
    assert verdict.clean and verdict.path == "docs/a.md"


def test_missing_root_is_an_error(tmp_path: Path, root: Path) -> None:
    manifest = check(root, "ok", PASS)
    with pytest.raises(CheckError, match="is not a folder"):
        fire(manifest, path=Path("a.md"), root=tmp_path / "nope", run="r")


def test_fingerprint(tmp_path: Path) -> None:
    path = tmp_path / "f.bin"
    path.write_bytes(os.urandom(3 << 20))
    assert fingerprint(path) == blake3.blake3(path.read_bytes()).hexdigest()
    assert fingerprint(tmp_path) == "" and fingerprint(tmp_path / "missing") == ""
