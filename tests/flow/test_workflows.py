"""Workflows in a real daemon with real worker processes: runs, limits, errors, questions."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from nerve.errors import WorkflowError
from nerve.flow.history import list_runs, run_row
from nerve.workspace import WorkspaceDir, init_workspace
from tests.conftest import run_cli
from tests.daemon_util import write_sense
from tests.helpers.workflows import (
    ASK,
    BOOM,
    GHOST,
    LOOP,
    TRIO,
    Flows,
    open_gate,
    running,
    traces,
    write_workflow,
)

CONFIG = """
senses:
  asker: {interval: 1h, grace_period: 1h}
workflows:
  trio: {concurrency: 2}
  solo: {concurrency: 1, overflow: drop, path: workflows/trio}
  line: {concurrency: 1, overflow: queue, max_queue: 1, path: workflows/trio}
  one: {concurrency: 1, overlap: buffer_one, path: workflows/trio}
  cancels: {concurrency: 1, overlap: cancel_other, path: workflows/trio}
  every: {concurrency: 1, overlap: allow_all, path: workflows/trio}
  loop: {max_rounds: 3}
  ghost: {}
  boom: {}
  ask: {}
"""
ASKER = """
initial_state = {"n": 0}
def compute(state):
    return {"state": {"n": state["n"] + 1}, "workflow": "trio|5|from a sense"}
"""


@pytest.fixture(scope="module")
def flows(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Flows]:
    ws = init_workspace(tmp_path_factory.mktemp("flows") / "ws")
    for name, code in (
        ("trio", TRIO),
        ("loop", LOOP),
        ("ghost", GHOST),
        ("boom", BOOM),
        ("ask", ASK),
    ):
        write_workflow(ws.root, name, code)
    write_sense(ws.root, "asker", ASKER)
    (ws.root / "nerve.yaml").write_text(CONFIG)
    with running(ws.root) as daemon:
        yield daemon


def cli(flows: Flows, *args: str, check: bool = True) -> str:
    return run_cli("--workspace", str(flows.root), *args, check=check).stdout


def test_three_roles_run_to_completion(flows: Flows) -> None:
    reply = flows.trigger("trio", prompt="a garden")
    run = reply["run"]
    assert reply["status"] == "started" and run.startswith("trio-")
    flows.wait_status(run, "completed")
    assert flows.statuses(run) == ["started", "completed"]
    said = flows.messages(run)
    assert [(m["round"], m["role"]) for m in said] == [(1, "plan"), (2, "build"), (3, "check")]
    assert said[0]["content"] == "plan for a garden" and said[1]["meta"] == {"built": True}
    assert said[2]["content"] == "checked 2 messages"
    decisions = [
        (d["data"]["after"], d["data"]["next"]) for d in flows.events("workflow.decision", run)
    ]
    assert decisions == [
        (None, "plan"),
        ("plan", "build"),
        ("build", "check"),
        ("check", "__end__"),
    ]
    start = flows.events("workflow.started", run)[0]["data"]
    assert (start["prompt"], start["max_rounds"], start["source"]) == ("a garden", 100, "ipc")
    assert (flows.root / "data" / "runs" / run).is_dir()
    # reads come from the log
    listed = [
        json.loads(line) for line in cli(flows, "workflow", "list", "--all", "--json").splitlines()
    ]
    row = next(r for r in listed if r["run"] == run)
    assert (row["status"], row["rounds"], row["workflow"]) == ("completed", 3, "trio")
    _, active = list_runs(WorkspaceDir(flows.root).connect())
    assert run not in {row[0] for row in active}  # finished runs need --all
    inspected = json.loads(cli(flows, "workflow", "inspect", run, "--json"))
    assert inspected["run"]["status"] == "completed" and len(inspected["events"]) == 10
    thread = run_cli("--workspace", str(flows.root), "workflow", "thread", run, "--budget", "60")
    assert "[#3 check]" in thread.stdout and "[#1 plan]" not in thread.stdout
    assert "--before 3 --budget 60" in thread.stderr


def test_max_rounds_unknown_role_and_a_role_that_throws(flows: Flows) -> None:
    capped = flows.trigger("loop")["run"]
    assert flows.wait_status(capped, "failed") == "failed"
    status = flows.events("workflow.status", capped)[-1]["data"]
    assert status["reason"].startswith("max_rounds: 3")
    assert [m["round"] for m in flows.messages(capped)] == [1, 2, 3]
    wider = flows.trigger("loop", max_rounds=5)["run"]
    flows.wait_status(wider, "failed")
    assert len(flows.messages(wider)) == 5
    ghost = flows.trigger("ghost")["run"]
    flows.wait_status(ghost, "failed")
    assert "unknown role 'nobody'" in flows.events("workflow.status", ghost)[-1]["data"]["reason"]
    assert flows.events("workflow.decision", ghost)[-1]["data"]["next"] == "nobody"
    boom = flows.trigger("boom")["run"]
    flows.wait_status(boom, "failed")
    failed = flows.events("workflow.status", boom)[-1]["data"]
    assert failed["reason"] == "role 'boom': ValueError: the role blew up"
    assert "raise ValueError" in failed["traceback"]
    assert [m["role"] for m in flows.messages(boom)] == ["fine"]
    # the worker survived the exception and serves the next run
    again = flows.trigger("trio", prompt="after boom")["run"]
    flows.wait_status(again, "completed")


def test_drop_overflow(flows: Flows) -> None:
    first = flows.trigger("solo", prompt="slow-solo")["run"]
    flows.wait_for(lambda: flows.messages(first), what="the first role")
    second = flows.trigger("solo", prompt="x")
    assert second["status"] == "dropped"
    reason = flows.events("workflow.status", second["run"])[-1]["data"]["reason"]
    assert "overlap: skip" in reason  # `overflow: drop` is the old spelling of `overlap: skip`
    open_gate(flows.root, "slow-solo")
    flows.wait_status(first, "completed")
    assert flows.trigger("solo", prompt="y")["status"] == "started"  # the slot is free again


def test_queue_overflow_evicts_the_oldest_queued_run(flows: Flows) -> None:
    first = flows.trigger("line", prompt="slow-line")["run"]
    second = flows.trigger("line", prompt="second")
    third = flows.trigger("line", prompt="third")
    assert (second["status"], third["status"]) == ("queued", "queued")
    assert flows.statuses(second["run"]) == ["queued", "dropped"]
    evicted = flows.events("workflow.status", second["run"])[-1]["data"]["reason"]
    assert "max_queue: 1" in evicted and third["run"] in evicted
    open_gate(flows.root, "slow-line")
    flows.wait_status(first, "completed")
    flows.wait_status(third["run"], "completed")
    assert flows.statuses(third["run"]) == ["queued", "started", "completed"]


def test_overlap_buffer_one_keeps_one_waiting_and_drops_the_rest(flows: Flows) -> None:
    first = flows.trigger("one", prompt="slow-one")["run"]
    second, third = flows.trigger("one", prompt="b"), flows.trigger("one", prompt="c")
    assert (second["status"], third["status"]) == ("queued", "dropped")
    reason = flows.events("workflow.status", third["run"])[-1]["data"]["reason"]
    assert reason == "a run is already buffered (overlap: buffer_one)"
    open_gate(flows.root, "slow-one")
    flows.wait_status(first, "completed")
    flows.wait_status(second["run"], "completed")


def test_overlap_cancel_other_interrupts_the_running_run_for_the_new_one(flows: Flows) -> None:
    first = flows.trigger("cancels", prompt="slow-cancels")["run"]
    flows.wait_for(lambda: flows.messages(first), what="the first role")
    second = flows.trigger("cancels", prompt="newer")
    assert second["status"] == "started"
    flows.wait_status(second["run"], "completed")
    assert flows.statuses(first) == ["started", "interrupted"]
    cancelled = flows.events("workflow.status", first)[-1]["data"]
    assert cancelled["cancelled_by"] == second["run"]
    assert cancelled["reason"] == f"cancelled for {second['run']} (overlap: cancel_other)"
    open_gate(flows.root, "slow-cancels")  # the abandoned role's thread may finish now


def test_overlap_allow_all_starts_past_the_concurrency(flows: Flows) -> None:
    runs = [flows.trigger("every", prompt=f"slow-every-{i}") for i in range(3)]
    assert [r["status"] for r in runs] == ["started"] * 3
    for i, r in enumerate(runs):
        open_gate(flows.root, f"slow-every-{i}")
        flows.wait_status(r["run"], "completed")


def test_validate_hints_at_the_old_overflow_spelling(flows: Flows) -> None:
    out = run_cli("--workspace", str(flows.root), "validate", "--json")
    hints = json.loads(out.stdout)["hints"]
    assert any(
        "workflows.solo.overflow: 'overflow: drop' is the old spelling of 'overlap: skip'" in h
        for h in hints
    )
    assert any(h.startswith(str(flows.root / "nerve.yaml") + ":") for h in hints)


def test_a_question_is_answered_and_the_run_resumes(flows: Flows) -> None:
    run = flows.trigger("ask")["run"]
    flows.wait_status(run, "waiting")
    question = flows.events("workflow.question", run)[0]["data"]
    assert (question["question"], question["options"], question["role"]) == (
        "Ship it?",
        ["yes", "no"],
        "decide",
    )
    _, rows = list_runs(WorkspaceDir(flows.root).connect(), workflow="ask")
    assert [(r[0], r[2]) for r in rows] == [(run, "waiting")]
    bad = run_cli("--workspace", str(flows.root), "workflow", "answer", run, "maybe", check=False)
    assert bad.returncode == 1 and "WorkflowError: 'maybe' is not one of the options" in bad.stderr
    assert "answered 'no'" in cli(flows, "workflow", "answer", run, "2")
    flows.wait_status(run, "completed")
    answer = flows.events("workflow.answer", run)[0]["data"]
    assert (answer["choice"], answer["role"]) == ("no", "decide")
    assert flows.messages(run)[0]["content"] == "answer was no"
    assert flows.statuses(run) == ["started", "waiting", "started", "completed"]
    assert len(traces(flows.root, "decide")) == 2


def test_dry_run_records_only_the_first_decision(flows: Flows) -> None:
    out = cli(flows, "workflow", "trigger", "trio", "--dry-run", "--prompt", "p", "--json")
    reply = json.loads(out)
    assert (reply["status"], reply["decision"]) == ("completed", "plan")
    run = reply["run"]
    assert flows.messages(run) == []
    assert [d["data"]["next"] for d in flows.events("workflow.decision", run)] == ["plan"]
    assert flows.events("workflow.status", run)[-1]["data"]["dry_run"] is True
    requested = [
        e for e in flows.events("workflow.requested", "trio") if e["data"].get("run") == run
    ]
    assert requested and requested[0]["data"]["dry_run"] is True


def test_trigger_takes_the_seeds_payload(flows: Flows) -> None:
    payload = '{"prompt": "from the payload", "maxRounds": 7, "dryRun": true}'
    reply = json.loads(cli(flows, "workflow", "trigger", "trio", "--payload", payload, "--json"))
    requested = [
        e["data"]
        for e in flows.events("workflow.requested", "trio")
        if e["data"].get("run") == reply["run"]
    ]
    assert (requested[0]["prompt"], requested[0]["max_rounds"]) == ("from the payload", 7)
    assert requested[0]["dry_run"] is True and reply["status"] == "completed"
    refused = {
        "{not json": "--payload is not JSON",
        "[1]": "--payload must be a JSON object",
        '{"promt": "x"}': "--payload has unknown keys: promt (known: prompt, maxRounds,",
        '{"maxRounds": "many"}': "--payload: max_rounds 'many' must be an integer",
    }
    for text, message in refused.items():
        proc = run_cli(
            "--workspace",
            str(flows.root),
            "workflow",
            "trigger",
            "trio",
            "--payload",
            text,
            check=False,
        )
        assert proc.returncode == 2 and message in proc.stderr, proc.stderr
    both = run_cli(
        "--workspace",
        str(flows.root),
        "workflow",
        "trigger",
        "trio",
        "--prompt",
        "a",
        "--payload",
        '{"prompt": "b"}',
        check=False,
    )
    assert both.returncode == 2 and "prompt given both as a flag and in --payload" in both.stderr


def test_a_sense_starts_a_run(flows: Flows) -> None:
    flows.request({"type": "trigger-sense", "sense": "asker"})
    found = flows.wait_for(
        lambda: [e for e in flows.events("workflow.started") if e["data"]["source"] == "sense"],
        what="a run started by the sense",
    )
    start = found[0]["data"]
    assert (start["sense"], start["prompt"], start["max_rounds"]) == ("asker", "from a sense", 5)
    flows.wait_status(start["run"], "completed")


def test_writes_need_the_daemon_and_unknown_names_are_refused(flows: Flows) -> None:
    proc = run_cli("--workspace", str(flows.root), "workflow", "trigger", "nope", check=False)
    assert proc.returncode == 1 and "unknown workflow 'nope'" in proc.stderr
    with pytest.raises(WorkflowError, match="no workflow run 'nope-1'"):
        run_row(WorkspaceDir(flows.root).connect(), "nope-1")


def _encryption(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[bytes, dict[str, Any]]:
    from nerve.log import crypt

    key = tmp_path / "K"
    crypt.new_key_file(key)
    monkeypatch.setenv(crypt.ENV_KEY_FILE, str(key))
    return crypt.kek_from_file(key), crypt.file_source()


@pytest.mark.parametrize("encrypted", [False, True], ids=["plain", "encrypted"])
def test_the_bundled_digest_runs_end_to_end_in_the_default_workspace(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, encrypted: bool
) -> None:
    """In an encrypted workspace too: its roles and its gate check work on plain files, and
    the report is kept encrypted, read back through the front door with the key."""
    import nerve
    from nerve.log import crypt

    key = _encryption(tmp_path, monkeypatch) if encrypted else None
    ws = init_workspace(tmp_path / "default", encrypt=key)
    proc = run_cli("--workspace", str(ws.root), "workflow", "trigger", "digest", check=False)
    assert proc.returncode == 1
    assert "DaemonError: the daemon is not running" in proc.stderr and "nerve start" in proc.stderr
    with running(ws.root) as daemon:
        run = daemon.trigger("digest", prompt="5")["run"]
        assert daemon.wait_status(run, "completed", "held", "failed") == "completed"
        kept = ws.root / "data" / "runs" / run / "report.md"
        report = nerve.open(ws.root).run(run).output("report.md").decode()
        assert crypt.encrypted_file(kept) is encrypted
        assert (report.encode() == kept.read_bytes()) is not encrypted
        assert "## Summary" in report and "## Activity" in report and "## Senses" in report
        assert [m["role"] for m in daemon.messages(run)] == ["collect", "write", "review"]
        verdict = daemon.events("check.verdict", run)[0]["data"]
        assert (verdict["check"], verdict["result"], verdict["note"]) == (
            "report-shape",
            "passed",
            None,
        )


BROKEN = {
    "syntax": "def roles(:\n",
    "noroles": "def moderator(c, r, m):\n    return 'x'\n",
    "badrole": "roles = {'a': 42}\ndef moderator(c, r, m):\n    return 'a'\n",
    "nomod": "roles = {'a': lambda s, m: 'x'}\n",
    "unknowncheck": "checks = ['no-such-check']\nroles = {'a': lambda s, m: 'x'}\n"
    "def moderator(c, r, m):\n    return 'a'\n",
}


def test_bad_definitions_are_reported_by_validate_and_at_load(tmp_path: Path) -> None:
    ws = init_workspace(tmp_path / "bad")
    for name, code in BROKEN.items():
        write_workflow(ws.root, name, code)
    proc = run_cli("--workspace", str(ws.root), "validate", check=False)
    assert proc.returncode == 1
    err = proc.stderr
    assert "syntax/workflow.py: cannot import: SyntaxError" in err
    assert "workflow 'noroles': export roles" in err
    assert "role 'a' is not callable" in err
    assert "workflow 'nomod': export moderator(context, round, max_rounds)" in err
    assert "imports unknown check(s) no-such-check" in err
    (ws.root / "nerve.yaml").write_text("senses: {}\nworkflows:\n  unknowncheck: {}\n")
    with running(ws.root) as daemon:
        error = daemon.wait_for(lambda: daemon.events("workflow.error", "unknowncheck"))
        assert "no-such-check" in error[0]["data"]["error"]
        reply = daemon.trigger("unknowncheck")
        assert reply["status"] == "failed" and "no-such-check" in reply["error"]
        reply = daemon.trigger("syntax")
        daemon.wait_status(reply["run"], "failed")
        reason = daemon.events("workflow.status", reply["run"])[-1]["data"]["reason"]
        assert "SyntaxError" in reason


def test_replay_verifies_after_all_that(flows: Flows) -> None:
    proc = run_cli("--workspace", str(flows.root), "replay", "--verify", "--json")
    assert '"ok":true' in proc.stdout


def test_trigger_says_where_outputs_land_and_list_shows_the_last_hour(flows: Flows) -> None:
    said = cli(flows, "workflow", "trigger", "trio", "--prompt", "a shed").splitlines()
    run = said[0].split(":")[0]
    assert said[1] == f"outputs  {flows.root / 'data' / 'runs' / run}"
    assert said[2] == f"follow   nerve workflow inspect {run}"
    flows.wait_status(run, "completed")
    recent = [json.loads(x)["run"] for x in cli(flows, "workflow", "list", "--json").splitlines()]
    assert run in recent  # finished, but requested within the hour
    none = cli(flows, "workflow", "list", "--since", "0s", "--json").splitlines()
    assert run not in {json.loads(x)["run"] for x in none}
    bad = run_cli(
        "--workspace", str(flows.root), "workflow", "list", "--since", "soon", check=False
    )
    assert bad.returncode == 2 and bad.stderr.startswith("UsageError: --since: invalid duration")
