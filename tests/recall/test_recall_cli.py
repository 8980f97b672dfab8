"""`nerve ask` through the real CLI in a subprocess."""

from __future__ import annotations

import json
import sys
from pathlib import Path

from nerve.workspace import WorkspaceDir
from tests.conftest import run_cli
from tests.daemon_util import Daemon
from tests.recall.test_recall import activity, seed


def _ask(ws: WorkspaceDir, *args: str, check: bool = True) -> tuple[int, str, str]:
    proc = run_cli("--workspace", str(ws.root), "ask", *args, check=check)
    return proc.returncode, proc.stdout, proc.stderr


def test_a_recall_question_prints_the_answer(workspace: WorkspaceDir) -> None:
    seed(workspace, activity())
    code, out, _ = _ask(workspace, "what was my last command?")
    assert code == 0
    assert out == "Your last command (2023-11-14 22:13:24Z): pytest -q\n"


def test_json_carries_the_envelope_digest_and_energy(workspace: WorkspaceDir) -> None:
    seed(workspace, activity())
    _, out, _ = _ask(workspace, "which files changed?", "--json", "--k", "4", "--no-record")
    result = json.loads(out)
    assert result["tier"] == 0 and result["model_call"] is False and result["answered"]
    assert result["energy"] == {"estimated_uj": 0, "measured_uj": None, "provenance": "Estimator"}
    assert result["intent"] == "recent_files" and result["recorded"] == []
    assert len(result["envelope"]["spans"]) == 4 and result["envelope"]["k"] == 4
    assert len(result["envelope_digest"]) == 64
    again = json.loads(_ask(workspace, "which files changed?", "--json", "--k", "4")[1])
    assert again["envelope_digest"] == result["envelope_digest"]
    assert len(again["recorded"]) == 2


def test_unanswered_exits_3_with_the_plain_message(workspace: WorkspaceDir) -> None:
    seed(workspace, activity())
    code, out, err = _ask(workspace, "why is everything so slow?", check=False)
    assert code == 3 and err == ""
    assert "no language model is set up" in out


def test_an_escalated_answer_through_a_command(workspace: WorkspaceDir, tmp_path: Path) -> None:
    seed(workspace, activity())
    answer = tmp_path / "answer.py"
    answer.write_text("import json, sys; print('slow: ' + json.load(sys.stdin)['query'])\n")
    workspace.config_path.write_text(
        f"recall:\n  fallback: {{kind: command, argv: ['{sys.executable}', '{answer}']}}\n"
    )
    code, out, _ = _ask(workspace, "why is everything so slow?")
    assert (code, out) == (0, "slow: why is everything so slow?\n")


def test_a_failing_fallback_is_an_error_on_stderr(workspace: WorkspaceDir, tmp_path: Path) -> None:
    seed(workspace, activity())
    workspace.config_path.write_text(
        f"recall:\n  fallback: {{kind: command, argv: ['{tmp_path / 'missing'}']}}\n"
    )
    code, out, err = _ask(workspace, "why is everything so slow?", check=False)
    assert code == 1 and out == ""
    assert err.startswith("FallbackError: could not start")
    tail = run_cli("--workspace", str(workspace.root), "tail", "--json", "-n", "2").stdout
    assert [json.loads(line)["kind"] for line in tail.splitlines()] == [
        "ask.question",
        "ask.error",
    ]


def test_usage_errors(workspace: WorkspaceDir) -> None:
    code, _, err = _ask(workspace, "  ", check=False)
    assert code == 2 and err.startswith("UsageError: the question is empty")
    code, _, err = _ask(workspace, "hi", "--k", "0", check=False)
    assert code == 2


def test_a_bare_ask_says_what_it_does_with_three_questions_to_copy(
    workspace: WorkspaceDir,
) -> None:
    code, out, err = _ask(workspace, check=False)
    first, *rest = err.splitlines()
    assert code == 2 and out == "" and len(first) <= 80
    assert first == "UsageError: ask needs a question; it answers from the log and cites the events"
    assert rest[0] == "hint: ask as you would a colleague, for example:"
    assert [line.split('"')[0] for line in rest[1:]] == ["  nerve ask "] * 3


def test_with_a_daemon_running_the_answer_is_recorded_through_it(workspace: WorkspaceDir) -> None:
    seed(workspace, activity())
    workspace.config_path.write_text("log:\n  durability: os\n")  # no senses: a quiet daemon
    daemon = Daemon(workspace.root)
    daemon.start()
    try:
        _, out, _ = _ask(workspace, "what did I run?", "--json")
        recorded = json.loads(out)["recorded"]
        answers = daemon.events("ask.answer")
        assert [row["id"].hex() for row in answers] == recorded[1:]
        assert answers[0]["data"]["answer"].startswith("Your last command")
    finally:
        daemon.stop()
