"""AI-DLC sensor manifests (seed 002) used unchanged: naming, location, --stage, verdicts.

A seed-shaped ``.claude/sensors/`` folder (manifests named ``aidlc-<id>.md``, scripts that
parse their arguments strictly, as AI-DLC's workers do) is copied into a workspace and run
through a real daemon's gate.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from nerve.checks.catalog import catalog, check_dirs, lookup, runnable
from nerve.checks.dispatch import fire
from nerve.errors import CheckError
from nerve.flow import client
from nerve.resources import bundled
from nerve.workspace import WorkspaceDir, init_workspace
from tests.conftest import run_cli
from tests.helpers.workflows import COMMON, Flows, running, write_workflow

# A worker as strict as AI-DLC's: exactly --stage and one path flag, anything else is refused
# (argparse exits 2, which nerve records as a script error).
STRICT = """\
import argparse, json, os, sys
from pathlib import Path
parser = argparse.ArgumentParser()
parser.add_argument("--stage", required=True)
where = parser.add_mutually_exclusive_group(required=True)
where.add_argument("--output-path")
where.add_argument("--file-path")
args = parser.parse_args()
seen = Path(".claude/seen")
seen.mkdir(exist_ok=True)
record = {"argv": sys.argv[1:], "run": os.environ.get("NERVE_RUN")}
(seen / (NAME + "-" + args.stage)).write_text(json.dumps(record))
target = args.output_path or args.file_path
"""

SCRIPTS = {
    "required-sections": """
headings = [l for l in open(target).read().splitlines() if l.startswith("## ")]
print(json.dumps({"pass": len(headings) >= 2, "h2_count": len(headings),
                  "headings": headings, "findings_count": int(len(headings) < 2)}))
""",
    "word-count": """
print(json.dumps({"pass": False, "findings": ["too short"], "findings_count": 1}))
""",
    "linter": """
print(json.dumps({"pass": True, "findings": [], "findings_count": 0}))
""",
}

MANIFESTS = {
    "required-sections": """---
id: required-sections
kind: deterministic
command: python3 .claude/tools/aidlc-sensor-required-sections.py
default_severity: blocking
fire_on: gate
description: Checks at the gate that stage output contains the required H2 headings
category: document-shape
matches: "**/report.md"
input_schema:
  output_path: string
  stage_slug: string
output_schema:
  pass: boolean
  h2_count: integer
  headings: string[]
timeout_seconds: 300
cool_new_field: tolerated
---

# required-sections sensor

At least two H2 headings.
""",
    "word-count": """---
id: word-count
kind: deterministic
command: python3 .claude/tools/aidlc-sensor-word-count.py
default_severity: advisory
fire_on: gate
description: Advisory evidence about length
matches: ""
---
""",
    "linter": """---
id: linter
kind: deterministic
command: python3 .claude/tools/aidlc-sensor-linter.py
default_severity: advisory
description: Wraps the project's linter
category: code-quality
matches: "**/*.{ts,js}"
timeout_seconds: 1200
---
""",
}

AUTHOR = """
def author(start, messages, ctx):
    body = "# R\\n## One\\n## Two\\n" if start.prompt == "good" else "# R\\n## One\\n"
    (ctx.output_dir / "report.md").write_text(body)
    return RoleResult("wrote report.md", {"outputs": ["report.md"]})

roles = {"author": author}

def moderator(context, round, max_rounds):
    return "author" if isinstance(context, Start) else END
"""
STAGED = COMMON + 'checks = ["required-sections", "word-count"]\n' + AUTHOR
AUTONOMOUS = STAGED + "\nautonomous = True\n"


def seed_sensors(root: Path) -> None:
    """Copy a seed-shaped .claude/sensors/ (and its tools) into ``root``, unchanged."""
    sensors, tools = root / ".claude" / "sensors", root / ".claude" / "tools"
    sensors.mkdir(parents=True, exist_ok=True)
    tools.mkdir(parents=True, exist_ok=True)
    for check_id, text in MANIFESTS.items():
        (sensors / f"aidlc-{check_id}.md").write_text(text)
        script = f"NAME = {check_id!r}\n" + STRICT + SCRIPTS[check_id]
        (tools / f"aidlc-sensor-{check_id}.py").write_text(script)
    (sensors / "notes.md").write_text("not a manifest: no aidlc- prefix\n")


def _catalog(root: Path, errors: list[str] | None = None) -> dict[str, object]:
    return dict(catalog(check_dirs(root, bundled("workflows")), errors))


# loading


def test_seed_manifests_load_with_their_naming_and_location(tmp_path: Path) -> None:
    seed_sensors(tmp_path)
    found = client.checks(WorkspaceDir(tmp_path))
    assert {"required-sections", "word-count", "linter"} <= set(found)
    assert "notes" not in found  # only aidlc-<id>.md files are manifests there
    sections = found["required-sections"]
    assert sections.extra == {"cool_new_field": "tolerated"}
    assert sections.path_flag == "--output-path"
    # no input_schema keys: the seed's shipped routing gives linter --file-path
    assert found["linter"].path_flag == "--file-path"
    assert found["word-count"].matches is None  # matches: "" is an omitted glob


def test_an_id_that_does_not_match_the_aidlc_stem_is_refused(tmp_path: Path) -> None:
    seed_sensors(tmp_path)
    path = tmp_path / ".claude" / "sensors" / "aidlc-linter.md"
    path.write_text(MANIFESTS["linter"].replace("id: linter", "id: lint"))
    with pytest.raises(CheckError) as caught:
        _catalog(tmp_path)
    message = str(caught.value)
    assert f"{path}:2:" in message
    assert "must equal the file name stem without 'aidlc-' ('linter')" in message


def test_an_id_defined_in_both_places_names_both_files(tmp_path: Path) -> None:
    seed_sensors(tmp_path)
    checks = tmp_path / "workflows" / "checks"
    checks.mkdir(parents=True)
    (checks / "linter.md").write_text(MANIFESTS["linter"])
    first, second = checks / "linter.md", tmp_path / ".claude" / "sensors" / "aidlc-linter.md"
    with pytest.raises(CheckError) as caught:
        _catalog(tmp_path)
    assert str(caught.value) == f"{second}: check id 'linter' is already defined by {first}"
    errors: list[str] = []
    kept = _catalog(tmp_path, errors)
    assert errors == [str(caught.value)]
    assert kept["linter"].path == str(first)  # type: ignore[attr-defined]


def test_check_list_reports_a_bad_manifest_and_lists_the_rest(tmp_path: Path) -> None:
    ws = init_workspace(tmp_path / "ws")
    seed_sensors(ws.root)
    bad = ws.root / ".claude" / "sensors" / "aidlc-broken.md"
    bad.write_text("---\nid: broken\nkind: llm\n---\n")
    listed = run_cli("--workspace", str(ws.root), "check", "list", "--json", check=False)
    assert listed.returncode == 0
    ids = {json.loads(line)["id"] for line in listed.stdout.splitlines()}
    assert {"required-sections", "word-count", "linter"} <= ids and "broken" not in ids
    assert f"warning: {bad}:3:" in listed.stderr and "kind 'llm' is not supported" in listed.stderr
    strict = run_cli("--workspace", str(ws.root), "check", "list", "--strict", check=False)
    assert strict.returncode == 1 and f"error: {bad}:3:" in strict.stderr
    assert "required-sections" in strict.stdout


# firing


def test_a_fire_passes_stage_and_keeps_the_run_in_the_environment(tmp_path: Path) -> None:
    seed_sensors(tmp_path)
    (tmp_path / "docs").mkdir()
    (tmp_path / "docs" / "report.md").write_text("# R\n## A\n## B\n")
    manifest = runnable(lookup(client.checks(WorkspaceDir(tmp_path)), "required-sections"))
    verdict = fire(manifest, path=Path("docs/report.md"), root=tmp_path, run="r1", stage="review")
    assert verdict.clean
    seen = json.loads((tmp_path / ".claude" / "seen" / "required-sections-review").read_text())
    assert seen == {"argv": ["--stage", "review", "--output-path", "docs/report.md"], "run": "r1"}
    shown = verdict.to_dict()
    seed_fields = {"fire_id", "sensor_id", "stage", "output_path", "result", "detail_path", "note"}
    assert seed_fields <= set(shown)
    assert (shown["sensor_id"], shown["stage"], shown["output_path"]) == (
        "required-sections",
        "review",
        "docs/report.md",
    )
    assert shown["fire_id"] == verdict.fire_id and len(verdict.fire_id) == 8


def test_the_environment_caps_the_time_limit(tmp_path: Path) -> None:
    seed_sensors(tmp_path)
    tools = tmp_path / ".claude" / "tools" / "aidlc-sensor-linter.py"
    tools.write_text("import time\ntime.sleep(30)\n")
    (tmp_path / "a.ts").write_text("let x = 1\n")
    manifest = runnable(lookup(client.checks(WorkspaceDir(tmp_path)), "linter"))
    assert manifest.timeout_seconds == 1200
    env = {"PATH": "/usr/bin:/bin", "AIDLC_SENSOR_TIMEOUT_MS": "300"}
    verdict = fire(manifest, path=Path("a.ts"), root=tmp_path, run="r", env=env)
    assert (verdict.result, verdict.note) == ("passed", "timeout")
    with pytest.raises(CheckError, match="AIDLC_SENSOR_TIMEOUT_MS='soon': must be a positive"):
        env = {"AIDLC_SENSOR_TIMEOUT_MS": "soon"}
        fire(manifest, path=Path("a.ts"), root=tmp_path, run="r", env=env)


# through a gate, in a daemon


@pytest.fixture(scope="module")
def flows(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Flows]:
    ws = init_workspace(tmp_path_factory.mktemp("aidlc") / "ws")
    seed_sensors(ws.root)
    write_workflow(ws.root, "staged", STAGED)
    write_workflow(ws.root, "unattended", AUTONOMOUS)
    (ws.root / "nerve.yaml").write_text("senses: {}\nworkflows:\n  staged: {}\n  unattended: {}\n")
    with running(ws.root) as daemon:
        yield daemon


def test_seed_sensors_run_through_a_gate_unchanged(flows: Flows) -> None:
    run = flows.trigger("staged", prompt="bad")["run"]
    assert flows.wait_status(run, "held", "completed") == "held"
    verdicts = {e["data"]["sensor_id"]: e["data"] for e in flows.events("check.verdict", run)}
    sections, words = verdicts["required-sections"], verdicts["word-count"]
    assert (sections["result"], sections["note"], sections["blocks"]) == ("failed", None, True)
    assert (words["result"], words["note"], words["blocks"]) == ("failed", None, False)
    output = f"data/runs/{run}/report.md"
    assert (sections["stage"], sections["output_path"], sections["run"]) == ("staged", output, run)
    assert (flows.root / sections["detail_path"]).is_file()
    seen = json.loads((flows.root / ".claude" / "seen" / "required-sections-staged").read_text())
    assert seen == {"argv": ["--stage", "staged", "--output-path", output], "run": run}
    good = flows.trigger("staged", prompt="good")["run"]
    assert flows.wait_status(good, "held", "completed") == "completed"


def test_an_autonomous_run_fires_only_blocking_checks(flows: Flows) -> None:
    run = flows.trigger("unattended", prompt="bad")["run"]
    assert flows.wait_status(run, "held", "completed") == "held"
    fired = [e["data"]["check"] for e in flows.events("check.fired", run)]
    assert fired == ["required-sections"]
    # a person asking for a recheck reads the advisory evidence too
    (flows.root / "data" / "runs" / run / "report.md").write_text("# R\n## One\n## Two\n")
    flows.request({"type": "workflow-recheck", "run": run})
    flows.wait_status(run, "completed")
    fired = [e["data"]["check"] for e in flows.events("check.fired", run)]
    assert sorted(fired) == ["required-sections", "required-sections", "word-count"]


def test_check_fire_json_has_the_seed_fields(flows: Flows) -> None:
    (flows.root / "src").mkdir(exist_ok=True)
    (flows.root / "src" / "a.ts").write_text("let x = 1\n")
    args = ["check", "fire", "linter", "--path", "src/a.ts", "--stage", "ci", "--json"]
    shown = json.loads(run_cli("--workspace", str(flows.root), *args).stdout)
    assert shown["recorded"] is True
    assert (shown["sensor_id"], shown["stage"], shown["output_path"], shown["result"]) == (
        "linter",
        "ci",
        "src/a.ts",
        "passed",
    )
    seen = json.loads((flows.root / ".claude" / "seen" / "linter-ci").read_text())
    assert seen["argv"] == ["--stage", "ci", "--file-path", "src/a.ts"]
