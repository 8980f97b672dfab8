"""The workflow pieces that need no daemon: rebuilding runs, threads, answers, definitions,
role results, output paths and the output checks themselves (with real check scripts)."""

from __future__ import annotations

import asyncio
import io
import json
import re
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest

from nerve.checks.catalog import runnable
from nerve.checks.manifest import parse_manifest
from nerve.errors import WorkflowError
from nerve.flow import END, START, Message, Question, RoleResult
from nerve.flow.client import interactive_refusal
from nerve.flow.definition import find_workflow, load_definition, safe_output
from nerve.flow.history import rebuild, thread_page
from nerve.flow.human import match_choice
from nerve.flow.judge import declared_outputs, evaluate
from nerve.flow.worker import _Refused, normalise_role_result
from nerve.log.drafts import Draft
from tests.helpers.workflows import write_checks


def test_rebuild_follows_the_events_to_the_next_step() -> None:
    start = {"run": "w-1", "workflow": "w", "prompt": "p", "max_rounds": 4}
    msg = {"role": "a", "content": "x", "meta": {"k": 1}, "round": 1}
    events = [
        ("workflow.status", {"status": "started", "workflow": "w", "request": {"prompt": "p"}}),
        ("workflow.started", start),
        ("workflow.decision", {"next": "a"}),
        ("workflow.message", msg),
        ("workflow.decision", {"next": "b"}),
        ("workflow.question", {"role": "b", "question": "q?", "options": ["x"]}),
        ("workflow.status", {"status": "waiting"}),
    ]
    record = rebuild("w-1", events)
    assert (record.status, record.next_role, record.round) == ("waiting", "b", 1)
    assert record.question is not None and record.start is not None
    assert record.start.max_rounds == 4 and record.request == {"prompt": "p"}
    answered = rebuild("w-1", [*events, ("workflow.answer", {"role": "b", "choice": "x"})])
    assert answered.question is None and answered.answer == {"role": "b", "choice": "x"}
    said = rebuild("w-1", [*events, ("workflow.message", {**msg, "role": "b", "round": 2})])
    assert said.next_role is None and said.answer is None and said.round == 2


def test_thread_pages_newest_rounds_within_a_budget() -> None:
    rounds = [(Message(f"r{i}", "x" * 50, {}, i), "t") for i in range(1, 6)]
    page = thread_page(rounds, before=None, budget=150)
    assert page.rounds == [4, 5] and page.older_before == 4
    older = thread_page(rounds, before=4, budget=150)
    assert older.rounds == [2, 3] and older.older_before == 2
    assert thread_page(rounds, before=None, budget=1).rounds == [5]  # always one round
    assert thread_page(rounds, before=2, budget=None).older_before is None
    assert "[#1 r1] t\n---\n---\n" in thread_page(rounds, before=2, budget=None).blocks[0]


def test_answers_match_an_option_by_text_or_number() -> None:
    options = ["Yes", "no"]
    assert match_choice("Yes", options) == "Yes"
    assert match_choice("2", options) == "no"
    assert match_choice("yes", options) == "Yes"
    assert match_choice("anything", []) == "anything"
    with pytest.raises(WorkflowError, match=r"1\. Yes, 2\. no"):
        match_choice("3", options)
    with pytest.raises(WorkflowError, match="empty"):
        match_choice(" ", [])


class _Tty(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_only_a_terminal_outside_any_workflow_may_override() -> None:
    assert interactive_refusal(_Tty(), _Tty(), {}) is None
    assert "interactive terminal" in str(interactive_refusal(io.StringIO(), _Tty(), {}))
    assert "interactive terminal" in str(interactive_refusal(_Tty(), io.StringIO(), {}))
    refusal = interactive_refusal(_Tty(), _Tty(), {"NERVE_WORKFLOW": "digest"})
    assert refusal is not None and "inside workflow 'digest'" in refusal


def _module(tmp_path: Path, code: str) -> Path:
    path = tmp_path / "w" / "workflow.py"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(code)
    return path


GOOD = """
checks = ["a-check"]
outputs = ["out/report.md"]
role_timeout = 5
def two(start, messages): return "x"
def three(start, messages, ctx): return "y"
roles = {"two": two, "three": three}
def moderator(context, round, max_rounds): return "two"
"""


def test_definitions_load_and_say_what_is_wrong(tmp_path: Path) -> None:
    loaded = load_definition("w", _module(tmp_path, GOOD))
    assert loaded.takes_ctx == {"three"} and loaded.checks == ("a-check",)
    assert loaded.summary() == {
        "roles": ["three", "two"],
        "checks": ["a-check"],
        "outputs": ["out/report.md"],
        "role_timeout": 5.0,
        "autonomous": False,
    }
    bad = {
        "roles = []\ndef moderator(c, r, m): pass": "export roles, a non-empty dict",
        "roles = {'__end__': print}\ndef moderator(c, r, m): pass": "'__end__' is not allowed",
        "roles = {'a': lambda: 1}\ndef moderator(c, r, m): pass": "must take (start, messages",
        "roles = {'a': lambda s, m: 1}\ndef moderator(c): pass": "export moderator(",
        "roles = {'a': lambda s, m: 1}\ndef moderator(c, r, m): pass\nautonomous = 1": (
            "autonomous must be True or False, got 1"
        ),
        "roles = {'a': lambda s, m: 1}\ndef moderator(c, r, m): pass\noutputs = ['../x']": "../x",
        "roles = {'a': lambda s, m: 1}\ndef moderator(c, r, m): pass\nchecks = 'x'": "list of str",
        "roles = {'a': lambda s, m: 1}\ndef moderator(c, r, m): pass\nrole_timeout = -1": "posit",
        "raise RuntimeError('at import')": "cannot import: RuntimeError: at import",
    }
    for code, message in bad.items():
        with pytest.raises(WorkflowError, match=re.escape(message)):
            load_definition("w", _module(tmp_path, code))
    with pytest.raises(WorkflowError, match=r"no workflows/ghost/workflow\.py"):
        find_workflow("ghost", [tmp_path], root=tmp_path)
    with pytest.raises(WorkflowError, match="holds check manifests"):
        find_workflow("checks", [tmp_path], root=tmp_path)


def test_role_results_are_normalised_or_refused() -> None:
    assert normalise_role_result("hi", "r") == {"content": "hi", "meta": {}}
    assert normalise_role_result(RoleResult("a", {"n": 1}), "r") == {
        "content": "a",
        "meta": {"n": 1},
    }
    ask = normalise_role_result({"ask": {"question": "q?", "options": ["a"]}}, "r")
    assert ask == {"ask": {"question": "q?", "options": ["a"]}}
    assert normalise_role_result(Question("q?"), "r") == {"ask": {"question": "q?", "options": []}}
    for bad, message in (
        (42, "returned int"),
        ({"content": 1}, "content of type int"),
        ({"content": "x", "meta": {"v": object()}}, "not JSON-serialisable"),
        ({"content": "x", "meta": {"outputs": "a.md"}}, "outputs"),
        ({"content": "x", "extra": 1}, "returned dict"),
        (Question(""), "without a question"),
    ):
        with pytest.raises(_Refused, match=message):
            normalise_role_result(bad, "r")


def test_outputs_are_declared_once_and_must_stay_relative() -> None:
    messages = [Message("a", "", {"outputs": ["b.md", "a.md"]}, 1), Message("b", "", {}, 2)]
    assert declared_outputs(["a.md"], messages) == ["a.md", "b.md"]
    assert safe_output("sub/x.md") == "sub/x.md"
    for bad in ("/etc/passwd", "../x", "a/../../x", "", "a\\b"):
        with pytest.raises(WorkflowError):
            safe_output(bad)


def test_python_commands_use_this_interpreter_and_find_their_own_scripts(tmp_path: Path) -> None:
    home = tmp_path / "home"
    write_checks(
        home, {"no-tool": {"severity": "advisory", "fire_on": "gate", "matches": "*", "timeout": 5}}
    )
    manifest_path = home / "workflows" / "checks" / "no-tool.md"
    text = manifest_path.read_text().replace(json.dumps(sys.executable), '"python"', 1)
    manifest_path.write_text(text)
    ready = runnable(parse_manifest(manifest_path))
    assert ready.command == (sys.executable, str(home / "checks_bin" / "no-tool.py"))


class _Log:
    def __init__(self) -> None:
        self.drafts: list[Draft] = []

    async def __call__(self, drafts: Sequence[Draft]) -> None:
        self.drafts += drafts

    def kinds(self) -> list[str]:
        return [d.kind for d in self.drafts]


def _gate(root: Path, outputs: list[str], checks: list[str]) -> tuple[list[dict[str, Any]], _Log]:
    manifests = [parse_manifest(root / "workflows" / "checks" / f"{c}.md") for c in checks]
    log = _Log()
    reasons = asyncio.run(
        evaluate(log, root=root, run="w-1", workflow="w", outputs=outputs, manifests=manifests)
    )
    return reasons, log


def test_the_gate_refuses_escapes_and_blocks_only_on_blocking_checks(tmp_path: Path) -> None:
    root = tmp_path / "ws"
    spec = {"fire_on": "gate", "matches": "**/*.md", "timeout": 10}
    write_checks(
        root,
        {
            "sections": {**spec, "severity": "blocking"},
            "always-fail": {**spec, "severity": "advisory"},
        },
    )
    folder = root / "data" / "runs" / "w-1"
    folder.mkdir(parents=True)
    (folder / "good.md").write_text("## Summary\n## Details\n")
    (folder / "bad.md").write_text("## Summary\n")
    (root / "elsewhere.md").write_text("## Summary\n## Details\n")
    (folder / "link.md").symlink_to(root / "elsewhere.md")
    (folder / "inside.md").symlink_to(folder / "good.md")
    reasons, log = _gate(root, ["good.md", "inside.md"], ["sections", "always-fail"])
    assert reasons == [] and log.kinds() == ["check.fired", "check.verdict"] * 4
    outputs = ["bad.md", "link.md", "../../../elsewhere.md", str(root / "elsewhere.md")]
    reasons, log = _gate(root, outputs, ["sections"])
    assert [r["reason"] for r in reasons] == ["path-refused"] * 3 + ["failed"]
    assert [r.get("output") for r in reasons[:3]] == outputs[1:]
    assert log.kinds() == ["check.fired", "check.verdict"]  # only bad.md was ever checked
    assert reasons[3]["check"] == "sections" and reasons[3]["detail_path"].startswith(
        "data/runs/w-1/.checks/sections-"
    )


@pytest.mark.parametrize("name", [END, START])
def test_end_and_start_are_names_no_role_can_take(tmp_path: Path, name: str) -> None:
    code = f"roles = {{{name!r}: lambda s, m: 'x', 'a': lambda s, m: 'y'}}\n" + (
        "def moderator(c, r, m): return 'a'\n"
    )
    with pytest.raises(WorkflowError, match=re.escape(f"role name {name!r} is not allowed")):
        load_definition("w", _module(tmp_path, code))


def test_a_moderator_returning_end_leaves_no_role_due() -> None:
    start = {"run": "w-1", "workflow": "w", "prompt": "p", "max_rounds": 4}
    events = [
        ("workflow.started", start),
        ("workflow.decision", {"next": "a"}),
        ("workflow.message", {"role": "a", "content": "x", "meta": {}, "round": 1}),
        ("workflow.decision", {"next": END}),
    ]
    record = rebuild("w-1", events)
    assert (record.next_role, record.round) == (END, 1)
    assert END == "__end__"  # stored in workflow.decision events: it must never change


def test_the_readme_example_is_a_valid_workflow(tmp_path: Path) -> None:
    readme = (Path(__file__).resolve().parents[2] / "workflows" / "README.md").read_text()
    code = readme.split("```python\n", 1)[1].split("```", 1)[0]
    loaded = load_definition("example", _module(tmp_path, code))
    assert sorted(loaded.roles) == ["draft", "review"] and loaded.takes_ctx == {"draft", "review"}


def test_a_worker_whose_kernel_is_gone_before_it_loads_exits(tmp_path: Path) -> None:
    """The daemon stopped while a worker started (a service manager's stop): the answer to
    its load meets a broken pipe, and the worker exits instead of waiting forever."""
    import subprocess

    root = Path(__file__).resolve().parents[2]
    proc = subprocess.Popen(
        [sys.executable, "-m", "nerve.flow.worker"],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, cwd=tmp_path,
    )  # fmt: skip
    assert proc.stdin is not None and proc.stdout is not None
    proc.stdout.close()  # the kernel is gone: nobody reads the answer
    path = root / "workflows" / "digest" / "workflow.py"
    load = {"op": "load", "workflow": "digest", "path": str(path), "workspace": str(tmp_path)}
    proc.stdin.write(json.dumps(load).encode() + b"\n")
    proc.stdin.close()
    try:
        assert proc.wait(timeout=20) == 0
    finally:
        proc.kill()
