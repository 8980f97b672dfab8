"""A sweep of everything under data/ of an encrypted workspace after a real daemon ran senses,
a workflow with gate and write checks, a shell spool and a SIGKILL: a marker planted in event
content is found in no file, in no common encoding. With the key, the run's outputs read back."""

from __future__ import annotations

import base64
import json
import os
import signal
from fnmatch import fnmatch
from pathlib import Path

import pytest

from tests.conftest import run_cli
from tests.daemon_util import write_sense
from tests.helpers.workflows import Flows, check_manifest, wait, write_workflow

pytestmark = pytest.mark.filterwarnings("ignore::pytest.PytestUnraisableExceptionWarning")

CORE = "qv7-sweep-marker-41e9c"  # ASCII, so it also survives as a file name or a shell line
MARKER = CORE + '-ü"é'  # what a JSON writer escapes (\u00fc, \", \u00e9)

SENSE = f"""
from nerve import Observation, Result
initial_state = {{"seen": ""}}
def compute(state):
    print({MARKER!r})
    return Result(
        state={{"seen": {MARKER!r}}},
        observations=[Observation(source="endpoint", line={MARKER!r}, payload={{"m": {MARKER!r}}})],
    )
"""

WORKFLOW = """
from nerve.flow import END, RoleResult, Start

checks = ["quotes-it"]

def scribe(start, messages, ctx):
    (ctx.output_dir / "notes.md").write_text(f"# Notes\\n{start.prompt}\\n", encoding="utf-8")
    (ctx.output_dir / "deep").mkdir(exist_ok=True)
    (ctx.output_dir / "deep" / "raw.json").write_text(
        __import__("json").dumps({"prompt": start.prompt}), encoding="utf-8"
    )
    return RoleResult("wrote notes", {"outputs": ["notes.md"]})

def reader(start, messages, ctx):
    text = (ctx.output_dir / "notes.md").read_text(encoding="utf-8")
    return RoleResult("read " + str(len(text)), {})

roles = {"scribe": scribe, "reader": reader}

def moderator(context, round, max_rounds):
    if isinstance(context, Start):
        return "scribe"
    return {"scribe": "reader", "reader": END}[context.message.role]
"""

# a check that fails quoting the file it read: its findings hold the marker
QUOTES = """
import json, sys
path = sys.argv[sys.argv.index("--output-path") + 1] if "--output-path" in sys.argv else None
path = path or sys.argv[sys.argv.index("--file-path") + 1]
text = open(path, encoding="utf-8").read()
print(json.dumps({"pass": False, "findings": ["it says: " + text], "findings_count": 1}))
"""

NERVE_YAML = """\
senses:
  leaky:
    interval: 300ms
  shell:
    interval: 300ms
    options:
      files: []
      spool: {spool}
  files:
    interval: 300ms
    grace_period: 100ms
    options:
      paths: ["notes"]
log:
  encryption:
    key: file
  seal_max_events: 6
workflows:
  sweep:
    max_rounds: 4
"""


def _forms(marker: str, core: str) -> dict[str, bytes]:
    """The marker as files commonly hold it."""
    forms = {
        "utf-8": core.encode(),
        "utf-16-le": core.encode("utf-16-le"),
        "utf-16-be": core.encode("utf-16-be"),
        "json": json.dumps(marker)[1:-1].encode(),
        "json-utf8": json.dumps(marker, ensure_ascii=False)[1:-1].encode(),
        "hex": core.encode().hex().encode(),
    }
    for shift in range(3):  # base64 of the marker at each alignment, its stable middle
        encoded = base64.b64encode(b"x" * shift + core.encode())
        forms[f"base64+{shift}"] = encoded[4 : len(encoded) - 4]
    return forms


def _found(folder: Path) -> list[str]:
    forms = _forms(MARKER, CORE)
    hits = []
    for path in sorted(folder.rglob("*")):
        rel = str(path.relative_to(folder))
        if CORE in rel:
            hits.append(f"{rel}: in the name")
        if path.is_symlink() or not path.is_file():
            continue
        data = path.read_bytes()
        hits += [f"{rel}: {name}" for name, form in forms.items() if form in data]
    return hits


# what docs/encryption.md says stays readable without the key (names matched from data/)
READABLE = (  # an archive is a log of its own: it has these too
    "*log/manifest.jsonl",
    "*log/keyring.json",
    "*log/LOCK",
    "keys/chain-*.key",
    "nerve.pid",
    "nerve.run.json",
    "*.lock",
)


def _readable(folder: Path) -> list[str]:
    """Files under ``folder`` that are neither encrypted nor on docs/encryption.md's list."""
    found = []
    for path in sorted(p for p in folder.rglob("*") if p.is_file() and not p.is_symlink()):
        rel, data = path.relative_to(folder), path.read_bytes()
        if data[:5] in (b"NENC\x01", b"NENC\x02") or any(fnmatch(str(rel), g) for g in READABLE):
            continue
        if rel.name == "daemon.log" and all(
            line.startswith(b"nenc:") for line in data.splitlines()
        ):
            continue
        if fnmatch(str(rel), "*log/wal/*.wal") and (
            len(data) <= 16 or (data[:4] == b"NWAL" and b"NENC\x01" in data)
        ):
            continue  # a header alone (a new generation), or frames whose bodies are encrypted
        found.append(str(rel))
    return found


def _workspace(tmp_path: Path, *, encrypt: bool) -> tuple[Path, dict[str, str]]:
    key, ws = tmp_path / "K", tmp_path / "ws"
    run_cli("init", *(["--encrypt", "--key-file", str(key)] if encrypt else []), str(ws))
    spool = tmp_path / "shell.spool"  # outside data/, where the hook keeps it
    spool.write_text(f"nerve1\tbash\t1.1\t1700000000.0\t1700000001.0\t0\t/tmp\techo {MARKER}\n")
    text = NERVE_YAML.format(spool=spool)
    if not encrypt:
        text = text.replace("  encryption:\n    key: file\n", "")
    (ws / "nerve.yaml").write_text(text)
    write_sense(ws, "leaky", SENSE)
    write_workflow(ws, "sweep", WORKFLOW)
    (ws / "checks_bin").mkdir()
    (ws / "checks_bin" / "quotes-it.py").write_text(QUOTES)
    (ws / "checks_bin" / "quotes-write.py").write_text(QUOTES)
    checks = ws / "workflows" / "checks"
    checks.mkdir(parents=True)
    gate = check_manifest(
        "quotes-it", severity="blocking", fire_on="gate", matches="**", timeout=30
    )
    write = check_manifest(
        "quotes-write", severity="advisory", fire_on="write", matches="notes/**", timeout=30
    )
    (checks / "quotes-it.md").write_text(gate)
    (checks / "quotes-write.md").write_text(write)
    (ws / "notes").mkdir()
    return ws, ({"NERVE_KEY_FILE": str(key)} if encrypt else {})


def _run_everything(ws: Path) -> None:
    """A daemon: senses, a file change with a write check, a held workflow run, daemon logs;
    then SIGKILL, so what a crash leaves is swept too."""
    daemon = Flows(ws)
    daemon.start()
    try:
        (ws / "notes" / "todo.txt").write_text(f"remember {MARKER}\n", encoding="utf-8")
        run = daemon.trigger("sweep", prompt=MARKER)["run"]
        daemon.wait_status(run, "held", timeout=60)
        kinds = {"sense.state", "check.verdict", "observation"}
        wait(lambda: kinds <= {e["kind"] for e in daemon.events()}, timeout=60)
        wait(lambda: _write_check_ran(daemon), timeout=60)
        assert CORE in run_cli("-w", str(ws), "daemon", "logs", "-n", "400").stdout
    finally:
        os.kill(daemon.pid(), signal.SIGKILL)
    assert list((ws / "data" / "runs").rglob("notes.md"))


def _write_check_ran(daemon: Flows) -> bool:
    return any(e["data"].get("check") == "quotes-write" for e in daemon.events("check.verdict"))


def test_no_file_under_data_holds_the_marker_in_any_common_encoding(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    ws, env = _workspace(tmp_path, encrypt=True)
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    _run_everything(ws)
    assert _found(ws / "data") == []
    assert _readable(ws / "data") == []
    w = ("-w", str(ws))
    _read_back_with_the_key(w)

    # with the daemon gone: a manual fire (its findings kept here), an archive, two exports
    fire = ("check", "fire", "quotes-write", "--path", "notes/todo.txt", "--json")
    fired = json.loads(run_cli(*w, *fire, check=False).stdout)
    assert fired["result"] == "failed" and fired["recorded"] is False, fired
    assert fired["detail_path"].startswith("data/checks/quotes-write-"), fired
    run_cli(*w, "archive", "--before", "0s", "--to", str(ws / "data" / "archive"))
    for export in (
        ("audit", "export", "--out", str(ws / "data" / "bundle.json")),
        ("export", "--duckdb", str(ws / "data" / "x.duckdb"), "--copy", "--plaintext"),
    ):
        refused = run_cli(*w, *export, check=False)
        assert refused.returncode == 2 and "may not go under" in refused.stderr, refused.stderr
    assert _found(ws / "data") == []
    assert _readable(ws / "data") == []

    monkeypatch.delenv("NERVE_KEY_FILE")
    run = next(p.name for p in (ws / "data" / "runs").iterdir())
    refused = run_cli(*w, "workflow", "outputs", run, "notes.md", check=False)
    assert refused.returncode == 1 and refused.stderr.startswith("KeyMissing: ")
    assert len(refused.stderr.strip().splitlines()) <= 2 and "Traceback" not in refused.stderr


def _read_back_with_the_key(w: tuple[str, str]) -> None:
    run = json.loads(run_cli(*w, "workflow", "list", "--all", "--json").stdout.splitlines()[0])
    listed = run_cli(*w, "workflow", "outputs", run["run"]).stdout
    assert "notes.md" in listed and "deep/raw.json" in listed and ".checks/" in listed
    inspected = run_cli(*w, "workflow", "inspect", run["run"]).stdout
    assert "outputs:" in inspected and "notes.md" in inspected
    shown = run_cli(*w, "workflow", "outputs", run["run"], "notes.md").stdout
    assert shown == f"# Notes\n{MARKER}\n"


def test_the_sweep_finds_the_marker_in_a_plain_workspace(tmp_path: Path) -> None:
    """The same run on a plain workspace: the sweep does find the marker, in the run folder,
    the check details and the daemon log (so the search above can fail)."""
    ws, _ = _workspace(tmp_path, encrypt=False)
    _run_everything(ws)
    hits = _found(ws / "data")
    assert any(h.startswith("runs/") for h in hits), hits
    assert any(h.startswith("checks/") for h in hits), hits
    assert any(h.startswith("daemon.log") for h in hits), hits


def test_the_forms_searched_are_the_ones_a_writer_produces() -> None:
    blob = json.dumps({"m": MARKER}).encode()
    forms = _forms(MARKER, CORE)
    assert forms["json"] in blob and forms["utf-8"] in blob
    assert forms["utf-16-le"] in MARKER.encode("utf-16-le")
    for shift in range(3):
        assert forms[f"base64+{shift}"] in base64.b64encode(b"y" * shift + MARKER.encode())
